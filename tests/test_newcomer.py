"""A newcomer's path (issue 10): binaries by path, outputs of one run only,
fast size refusals, self-describing checkpoints, foreign policies refused,
single quiet logs, readable plot bands and small wording fixes."""

import logging
import os
import pathlib
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import pyspiel
import pytest

import mccfrb
from experiments import common
from mccfrb import analysis
from mccfrb import tree as tree_lib
from mccfrb.solvers import base

ROOT = pathlib.Path(__file__).resolve().parents[1]
BINARIES = sorted(p.stem for p in (ROOT / "experiments").glob("*.py")
                  if p.stem not in ("__init__", "common"))
GOOFSPIEL4 = ("goofspiel(num_cards=4,imp_info=True,points_order=random,"
              "returns_type=point_difference)")


def run_by_path(name, *args):
  """Runs `python experiments/NAME.py ARGS` from the repository root."""
  return subprocess.run([sys.executable, f"experiments/{name}.py", *args],
                        cwd=ROOT, capture_output=True, text=True, timeout=600,
                        env=dict(os.environ))


# Item 1: binaries run by path.

def test_every_binary_runs_by_path():
  # convergence and plot run by path in the tests below.
  others = sorted(set(BINARIES) - {"convergence", "plot"})
  assert len(others) == len(BINARIES) - 2
  procs = {name: subprocess.Popen(
      [sys.executable, f"experiments/{name}.py", "--helpshort"], cwd=ROOT,
      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
           for name in others}
  for name, proc in procs.items():
    out, err = proc.communicate(timeout=300)
    assert "Error" not in err, (name, err)
    assert f"experiments/{name}.py" in out, (name, out)


# Item 2: no stale outputs; item 6: one line per message, no C++ exception.

def test_sweep_by_path_prints_each_line_once_without_exception_text(tmp_path):
  result = run_by_path(
      "convergence", "--games=kuhn_poker",
      "--algorithms=mccfrb_learned,openspiel_es_cpp", "--seeds=1",
      "--iterations=30", "--num_checkpoints=2", "--jobs=1", "--plot=false",
      f"--out_dir={tmp_path}")
  assert result.returncode == 0, result.stderr
  output = result.stdout + result.stderr
  assert "OpenSpiel exception" not in output
  for done in (1, 2):
    assert output.count(f"finished {done}/2 runs") == 1, output
  assert "(1 seed)" in output and "1 seeds" not in output


def test_a_second_run_replaces_the_first_runs_outputs(tmp_path):
  rows = [{"game": g, "algorithm": "a", "seed": s, "iteration": t,
           "seconds": 1e-3 * t, "exploitability": 1.0 / t}
          for g in ("g1", "g2") for s in (0, 1) for t in (1, 10, 100)]
  df = pd.DataFrame(rows)
  df.to_csv(tmp_path / "two.csv", index=False)
  df[df["game"] == "g1"].to_csv(tmp_path / "one.csv", index=False)
  out = tmp_path / "out"
  out.mkdir()
  (out / "notes.txt").write_text("mine")
  first = run_by_path("plot", f"--csv={tmp_path}/two.csv",
                      f"--out_prefix={out}/p")
  assert first.returncode == 0, first.stderr
  assert sorted(os.listdir(out)) == ["notes.txt", "p_0.pdf", "p_0.png",
                                     "p_1.pdf", "p_1.png"]
  second = run_by_path("plot", f"--csv={tmp_path}/one.csv",
                       f"--out_prefix={out}/p")
  assert second.returncode == 0, second.stderr
  assert sorted(os.listdir(out)) == ["notes.txt", "p_0.pdf", "p_0.png"]


def test_remove_earlier_outputs_removes_only_matching_files(tmp_path):
  for name in ("convergence.csv", "convergence_3.png", "convergence_x.png",
               "speedup.csv", "other.csv"):
    (tmp_path / name).write_text("x")
  removed = common.remove_earlier_outputs(
      str(tmp_path), ("convergence.csv", "speedup.csv",
                      "convergence_[0-9]*.png"))
  assert len(removed) == 3
  assert sorted(os.listdir(tmp_path)) == ["convergence_x.png", "other.csv"]


def test_default_output_folder_is_ignored_but_committed_results_are_not():
  lines = (ROOT / ".gitignore").read_text().splitlines()
  assert "/results/" in lines
  assert not any(l.strip("/").startswith("experiments") for l in lines)


# Item 3: fast size refusal and progress.

@pytest.mark.parametrize("game", ["goofspiel", "liars_dice(numdice=2)"])
def test_large_games_are_refused_within_seconds(game):
  start = time.perf_counter()
  with pytest.raises(ValueError, match=r"Knuth's estimator .* about \d.*e\+"
                     r"\d+ histories.*max_nodes=\d+"):
    mccfrb.MCCFRbSolver(game)
  assert time.perf_counter() - start < 5.0


def test_size_estimate_is_exact_on_uniform_trees_and_close_otherwise():
  estimate, probes = tree_lib.estimate_num_nodes(GOOFSPIEL4)
  assert probes == 1000 and estimate == 26773  # Branching depends on depth.
  estimate, _ = tree_lib.estimate_num_nodes("leduc_poker")
  assert estimate == pytest.approx(9457, rel=0.1)


def test_a_game_near_max_nodes_still_compiles_to_its_exact_limit():
  # Leduc's 9,457 nodes are fewer than tree.ESTIMATE_AFTER (and Knuth's
  # estimate, 9,149, would not refuse it): the walk's exact max_nodes check
  # decides.
  with pytest.raises(ValueError, match="more than max_nodes=5000 histories"):
    mccfrb.compile_tree("leduc_poker", max_nodes=5000)
  assert mccfrb.compile_tree("leduc_poker", max_nodes=9457).num_nodes == 9457


def test_compile_progress_is_logged_or_printed_never_both(monkeypatch, caplog,
                                                          capsys):
  monkeypatch.setattr(tree_lib, "PROGRESS_SECONDS", 0.0)
  with caplog.at_level(logging.INFO, logger="mccfrb.tree"):
    mccfrb.compile_tree("leduc_poker")
  messages = [r.getMessage() for r in caplog.records]
  assert len(messages) == 2  # Checked every 4096 nodes; 9,457 nodes.
  assert all("nodes/s" in m and "s left" in m for m in messages)
  assert capsys.readouterr().out == ""
  caplog.clear()
  with caplog.at_level(logging.INFO, logger="mccfrb.tree"):
    mccfrb.compile_tree("leduc_poker", verbose=True)
  assert not caplog.records
  assert capsys.readouterr().out.count("compile_tree: ") == 2
  monkeypatch.setattr(tree_lib, "PROGRESS_SECONDS", 5.0)
  with caplog.at_level(logging.INFO, logger="mccfrb.tree"):
    mccfrb.compile_tree("leduc_poker")  # Well under 5 seconds: silent.
  assert not caplog.records


# Item 4: checkpoints describe themselves.

SOLVERS = [
    (mccfrb.MCCFRbSolver, {"seed": 3}),
    (mccfrb.OutcomeSamplingSolver, {"seed": 3}),
    (mccfrb.ExternalSamplingSolver, {"seed": 3}),
    (mccfrb.CFRSolver, {}),
    (mccfrb.PublicSamplingSolver, {"seed": 3}),
]


@pytest.mark.parametrize("cls,options", SOLVERS,
                         ids=[c.__name__ for c, _ in SOLVERS])
def test_load_without_the_game_resumes_identically(tmp_path, cls, options):
  path = tmp_path / "solver.npz"
  solver = cls("kuhn_poker", **options)
  solver.run(7)
  solver.save(path)
  loaded = cls.load(path)
  assert str(loaded.game) == "kuhn_poker()"
  solver.run(5)
  loaded.run(5)
  np.testing.assert_array_equal(loaded.average_policy_table(),
                                solver.average_policy_table())
  assert loaded.num_iterations == 12
  # Still checked when given.
  assert cls.load(path, "kuhn_poker").num_iterations == 7
  with pytest.raises(ValueError, match="saved for kuhn_poker"):
    cls.load(path, "leduc_poker")


def test_load_without_the_game_of_a_simultaneous_game(tmp_path):
  game = ("goofspiel(num_cards=3,imp_info=True,points_order=random,"
          "returns_type=point_difference)")
  solver = mccfrb.MCCFRbSolver(game, seed=1)
  solver.run(20)
  solver.save(tmp_path / "g.npz")
  loaded = mccfrb.MCCFRbSolver.load(tmp_path / "g.npz")
  assert str(loaded.game) == str(solver.game)
  np.testing.assert_array_equal(loaded.average_policy_table(),
                                solver.average_policy_table())


def test_another_class_names_it_with_the_right_article(tmp_path):
  mccfrb.ExternalSamplingSolver("kuhn_poker", seed=0).save(tmp_path / "e.npz")
  with pytest.raises(ValueError, match="holds an ExternalSamplingSolver "
                     "checkpoint, not an MCCFRbSolver"):
    mccfrb.MCCFRbSolver.load(tmp_path / "e.npz")


def foreign_files(folder):
  (folder / "text.npz").write_text("hello, world\n")
  (folder / "empty.npz").write_bytes(b"")
  np.save(folder / "array.npy", np.zeros(3))
  np.savez(folder / "other.npz", x=np.zeros(3))
  np.savez(folder / "badmeta.npz", meta=np.array('{"x": 1}'))
  return ["text.npz", "empty.npz", "array.npy", "other.npz", "badmeta.npz"]


def test_a_foreign_file_is_refused_as_not_a_checkpoint(tmp_path):
  for name in foreign_files(tmp_path):
    with pytest.raises(ValueError, match="is not an mccfrb checkpoint"):
      mccfrb.MCCFRbSolver.load(tmp_path / name)
    with pytest.raises(ValueError, match="is not an mccfrb checkpoint"):
      mccfrb.MCCFRbSolver.load(tmp_path / name, "kuhn_poker")
  with pytest.raises(FileNotFoundError):
    mccfrb.MCCFRbSolver.load(tmp_path / "missing.npz")


def test_an_interrupted_save_leaves_the_previous_checkpoint(tmp_path,
                                                             monkeypatch):
  path = tmp_path / "solver.npz"
  solver = mccfrb.MCCFRbSolver("kuhn_poker", seed=0)
  solver.run(10)
  solver.save(path)
  expected = solver.average_policy_table()
  solver.run(10)

  def crash(file, **unused_arrays):
    file.write(b"PK\x03\x04 half an archive")
    raise KeyboardInterrupt

  monkeypatch.setattr(np, "savez", crash)
  with pytest.raises(KeyboardInterrupt):
    solver.save(path)
  monkeypatch.undo()
  assert os.listdir(tmp_path) == ["solver.npz"]  # No temporary file left.
  loaded = mccfrb.MCCFRbSolver.load(path, "kuhn_poker")
  assert loaded.num_iterations == 10
  np.testing.assert_array_equal(loaded.average_policy_table(), expected)
  solver.save(path)
  assert mccfrb.MCCFRbSolver.load(path).num_iterations == 20


# Item 5: a policy of another game is refused.

def test_a_tabular_policy_of_another_game_is_refused():
  kuhn = mccfrb.MCCFRbSolver("kuhn_poker", seed=0)
  kuhn.run(10)
  with pytest.raises(ValueError, match=r"TabularPolicy \(of kuhn_poker\(\)\) "
                     r"names 12 information states that leduc_poker\(\) does "
                     "not have"):
    mccfrb.exploitability("leduc_poker", kuhn.average_policy())
  # Its own game, and a policy of one player only, are fine.
  assert mccfrb.exploitability("kuhn_poker", kuhn.average_policy()) > 0
  from open_spiel.python import policy as os_policy  # pylint: disable=g-import-not-at-top
  one_player = os_policy.TabularPolicy(pyspiel.load_game("kuhn_poker"),
                                       players=[0])
  assert mccfrb.exploitability("kuhn_poker", one_player) == pytest.approx(
      mccfrb.exploitability("kuhn_poker", mccfrb.uniform_table(kuhn.tree)))


def test_a_dict_policy_naming_unknown_infostates_is_refused():
  tree = mccfrb.compile_tree("kuhn_poker")
  policy = mccfrb.to_pyspiel_dict(tree, mccfrb.uniform_table(tree))
  assert mccfrb.exploitability(tree, policy) > 0
  with pytest.raises(ValueError, match="policy dict names 1 information "
                     "states that the compiled game does not have, e.g. "
                     "'nonsense'"):
    mccfrb.exploitability(tree, {**policy, "nonsense": [(0, 1.0)]})
  with pytest.raises(ValueError, match=r"names 1 .* leduc_poker\(\)"):
    mccfrb.table_from_policy(mccfrb.compile_tree("leduc_poker"),
                             {"0": [(0, 1.0)]},
                             game=pyspiel.load_game("leduc_poker"))
  with pytest.raises(ValueError, match="pyspiel.TabularPolicy names"):
    mccfrb.exploitability(tree, pyspiel.TabularPolicy({"xyz": [(0, 1.0)]}))


# Item 6: no OpenSpiel exception text on a successful conversion.

def test_cpp_policies_are_read_without_exception_text(capfd):
  game = pyspiel.load_game("kuhn_poker")
  tree = mccfrb.compile_tree(game)
  for cls in (pyspiel.ExternalSamplingMCCFRSolver,
              pyspiel.OutcomeSamplingMCCFRSolver):
    solver = cls(game, seed=1)
    # After one iteration some infosets are unvisited: their string query
    # falls through to a uniform policy that only answers state queries.
    solver.run_iteration()
    ours = mccfrb.exploitability(game, solver.average_policy())
    assert ours == pytest.approx(
        pyspiel.exploitability(game, solver.average_policy()), abs=1e-9)
  captured = capfd.readouterr()
  assert "OpenSpiel exception" not in captured.out + captured.err
  del tree


# Item 7: readable bands and wording.

def test_plot_bands_stay_inside_the_seeds_range_on_a_log_axis():
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
  # One seed far above the others: the t-interval's lower end is negative.
  rows = [{"game": "g", "algorithm": "a", "seed": s, "iteration": t,
           "seconds": 1e-3 * t, "exploitability": f / t}
          for s, f in enumerate((100.0, 1.0, 1.0)) for t in (1, 10, 100)]
  df = pd.DataFrame(rows)
  fig = analysis.plot_game(df, "g")
  ax = fig.axes[0]
  band = ax.collections[0].get_paths()[0].vertices
  ys = band[:, 1]
  assert ys.min() >= 0.01 * (1 - 1e-9) and ys.max() <= 100 * (1 + 1e-9)
  title = fig._suptitle.get_text()  # pylint: disable=protected-access
  assert "3 seeds" in title and "5th-95th percentile across seeds" in title
  assert "95% CI" not in title
  plt.close(fig)
  fig = analysis.plot_game(df[df["seed"] == 0], "g")
  title = fig._suptitle.get_text()  # pylint: disable=protected-access
  assert "1 seed " in title and "1 seeds" not in title
  plt.close(fig)
  table = analysis.by_iteration(df)
  first = table[table["iteration"] == 1].iloc[0]
  assert 1.0 <= first["p05"] < first["mean"] < first["p95"] <= 100.0
  assert analysis.count_text(1, "seed") == "1 seed"
  assert analysis.count_text(2, "seed") == "2 seeds"


# Item 11: small things.

def test_a_game_name_prefix_is_suggested():
  with pytest.raises(ValueError, match="Did you mean 'kuhn_poker'"):
    mccfrb.load_game("kuhn")
  with pytest.raises(ValueError, match="Did you mean 'leduc_poker'"):
    mccfrb.load_game("leduc")


@pytest.mark.parametrize("cls", [mccfrb.MCCFRbSolver,
                                 mccfrb.ExternalSamplingSolver,
                                 mccfrb.PublicSamplingSolver])
def test_a_negative_seed_names_the_seed_parameter(cls):
  with pytest.raises(ValueError, match="seed must be an integer >= 0 or "
                     "None, got -1"):
    cls("kuhn_poker", seed=-1)
  assert base.rng_from_seed(0) is not None
