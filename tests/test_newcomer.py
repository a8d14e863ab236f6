"""A newcomer's path (issue 10): binaries by path, outputs of one run only,
fast size refusals, self-describing checkpoints, foreign policies refused,
single quiet logs, readable plot bands, interrupted sweeps that resume,
time budgets, a drop-in for OpenSpiel's example and small wording fixes."""

import glob
import logging
import os
import pathlib
import signal
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import pyspiel
import pytest

import mccfrb
from experiments import common
from mccfrb.experiment import analysis
from mccfrb.experiment import sweep
from mccfrb.games import tree as tree_lib
from mccfrb.solvers import base
from tests.conftest import error_lines

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

@pytest.mark.slow
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
  assert sorted(os.listdir(out)) == ["notes.txt", "p_g1.pdf", "p_g1.png",
                                     "p_g2.pdf", "p_g2.png"]
  second = run_by_path("plot", f"--csv={tmp_path}/one.csv",
                       f"--out_prefix={out}/p")
  assert second.returncode == 0, second.stderr
  assert sorted(os.listdir(out)) == ["notes.txt", "p_g1.pdf", "p_g1.png"]


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
    mccfrb.MCCFRbSolver(game, representation="tree")
  assert time.perf_counter() - start < 5.0


@pytest.mark.parametrize("game", ["goofspiel", "liars_dice(numdice=2)"])
def test_large_games_with_an_engine_run_on_it_by_default(game):
  """Since the native engines, "auto" plays such a game on its engine."""
  start = time.perf_counter()
  solver = mccfrb.MCCFRbSolver(game, seed=0)
  assert solver.representation == "engine"
  assert time.perf_counter() - start < 5.0
  solver.run(100)
  assert solver.memory()["infosets"] > 0


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
  with caplog.at_level(logging.INFO, logger="mccfrb.games.tree"):
    mccfrb.compile_tree("leduc_poker")
  messages = [r.getMessage() for r in caplog.records]
  assert len(messages) == 2  # Checked every 4096 nodes; 9,457 nodes.
  assert all("nodes/s" in m and "s left" in m for m in messages)
  assert capsys.readouterr().out == ""
  caplog.clear()
  with caplog.at_level(logging.INFO, logger="mccfrb.games.tree"):
    mccfrb.compile_tree("leduc_poker", verbose=True)
  assert not caplog.records
  assert capsys.readouterr().out.count("compile_tree: ") == 2
  monkeypatch.setattr(tree_lib, "PROGRESS_SECONDS", 5.0)
  with caplog.at_level(logging.INFO, logger="mccfrb.games.tree"):
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


# Item 8: interrupted sweeps keep their finished runs and resume.

TIMING = ["seconds", "setup_seconds"]


def interrupt_after(runs):
  """A progress callback that presses Ctrl-C once `runs` runs finished."""
  def progress(done, total, elapsed, left):
    del total, elapsed, left
    if done == runs:
      raise KeyboardInterrupt
  return progress


@pytest.mark.parametrize("jobs", [1, 2])
def test_an_interrupted_sweep_keeps_its_runs_and_a_rerun_completes_it(
    tmp_path, jobs):
  tasks = sweep.make_tasks(["kuhn_poker"], ["mccfrb_learned", "os"], [0, 1],
                           300, 3, "mccfrb")
  store = sweep.RunStore(tmp_path / "runs", tasks)
  store.reset()
  with pytest.raises(KeyboardInterrupt):
    sweep.run_sweep(tasks, jobs=jobs, progress=interrupt_after(2 if jobs == 1
                                                               else 1),
                    store=store)
  kept = store.finished()
  assert len(kept) == (2 if jobs == 1 else 1)
  assert sorted(f for f in os.listdir(tmp_path / "runs")) == sorted(
      ["settings.json"] + [f"run_{i:05d}.csv" for i in kept])
  # The same tasks resume: only the other runs run.
  again = sweep.RunStore(tmp_path / "runs", tasks)
  assert again.matches() and again.finished() == kept
  totals = []
  rows = sweep.run_sweep(tasks, jobs=jobs, store=again,
                         progress=lambda d, t, e, left: totals.append(t))
  assert totals == [len(tasks) - len(kept)] * (len(tasks) - len(kept))
  fresh = sweep.RunStore(tmp_path / "fresh", tasks)
  fresh.reset()
  uninterrupted = sweep.run_sweep(tasks, store=fresh)
  pd.testing.assert_frame_equal(again.dataframe().drop(columns=TIMING),
                                fresh.dataframe().drop(columns=TIMING))
  pd.testing.assert_frame_equal(
      pd.DataFrame(rows).drop(columns=TIMING),
      pd.DataFrame(uninterrupted).drop(columns=TIMING))
  # Other tasks do not match the folder.
  assert not sweep.RunStore(tmp_path / "runs", tasks[:-1]).matches()


def test_other_settings_replace_the_earlier_runs_the_same_resume(tmp_path,
                                                                  capsys):
  tasks = sweep.make_tasks(["kuhn_poker"], ["os"], [0, 1], 10, 2, "mccfrb")
  outputs = ("convergence.csv",)
  (tmp_path / "convergence.csv").write_text("an earlier run's\n")
  (tmp_path / "notes.txt").write_text("mine")
  store = common.open_runs(str(tmp_path), "runs", tasks, outputs)
  line = capsys.readouterr().out
  assert line == (f"replacing the outputs of an earlier run in {tmp_path} (a "
                  "finished run, or one with other settings): removed 1 "
                  "output file\n")
  store.write(0, sweep.run_task(tasks[0]))
  store = common.open_runs(str(tmp_path), "runs", tasks, outputs)
  assert capsys.readouterr().out == (
      f"resuming the interrupted run in {tmp_path}/runs: 1 of 2 runs finished "
      "before, skipping them\n")
  assert store.finished() == [0]
  store = common.open_runs(str(tmp_path), "runs", tasks[1:], outputs)
  assert "removed 1 finished run of an interrupted sweep" in (
      capsys.readouterr().out)
  assert store.finished() == []
  assert sorted(os.listdir(tmp_path)) == ["notes.txt", "runs"]


def test_a_half_written_run_file_is_never_taken_for_a_finished_run(tmp_path):
  tasks = sweep.make_tasks(["kuhn_poker"], ["os"], [0, 1], 10, 2, "mccfrb")
  store = sweep.RunStore(tmp_path, tasks)
  store.reset()
  rows = sweep.run_task(tasks[0])
  store.write(0, rows)
  text = (tmp_path / "run_00000.csv").read_text()
  (tmp_path / "run_00001.csv").write_text(text[:len(text) // 2])  # Not seed 1.
  assert store.finished() == [0]
  (tmp_path / "run_00000.csv").write_text(text.splitlines()[0] + "\n")
  assert store.finished() == []


SWEEP = ["--games=kuhn_poker", "--algorithms=mccfrb_learned,os", "--seeds=4",
         "--iterations=300000", "--num_checkpoints=3", "--evaluator=mccfrb",
         "--plot=false"]


@pytest.mark.slow
@pytest.mark.parametrize("jobs,backend", [(1, "local"), (2, "local"),
                                          (2, "ray")])
def test_ctrl_c_keeps_finished_runs_in_one_line_and_the_same_command_resumes(
    tmp_path, jobs, backend):
  if backend == "ray" and not os.environ.get("CI"):
    pytest.importorskip("ray")  # CI installs it.
  out = tmp_path / "out"
  command = [sys.executable, "experiments/convergence.py", *SWEEP,
             f"--jobs={jobs}", f"--backend={backend}", f"--out_dir={out}"]
  proc = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True,
                          start_new_session=True)
  deadline = time.time() + 300
  while not glob.glob(str(out / "convergence_runs" / "run_*.csv")):
    assert proc.poll() is None and time.time() < deadline
    time.sleep(0.02)
  os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C: the whole process group.
  stdout, stderr = proc.communicate(timeout=120)
  assert proc.returncode == 130, stderr
  kept = glob.glob(str(out / "convergence_runs" / "run_*.csv"))
  assert 1 <= len(kept) < 8
  message = (f"convergence: interrupted: kept {len(kept)} of 8 runs in "
             f"{out}/convergence_runs; rerun the same command to finish the "
             f"other {8 - len(kept)}")
  if backend == "ray":  # Ray logs its own start to standard error.
    assert stderr.splitlines()[-1] == message
    assert stderr.count("convergence:") == 1
  else:  # The one line, after the compile notice of an empty cache.
    assert error_lines(stderr) == [message]
  assert "Traceback" not in stdout + stderr
  assert not (out / "convergence.csv").exists()
  # The backend is not a setting: a Ray sweep resumes on local processes.
  again = subprocess.run([c.replace("--backend=ray", "--backend=local")
                          for c in command], cwd=ROOT, capture_output=True,
                         text=True, timeout=600)
  assert again.returncode == 0, again.stderr
  assert (f"resuming the interrupted run in {out}/convergence_runs: "
          f"{len(kept)} of 8 runs finished before, skipping them"
          in again.stdout)
  assert f"finished {8 - len(kept)}/{8 - len(kept)} runs" in again.stdout
  assert sorted(os.listdir(out)) == ["convergence.csv"]  # Runs folder gone.
  resumed = pd.read_csv(out / "convergence.csv")
  tasks = sweep.make_tasks(["kuhn_poker"], ["mccfrb_learned", "os"],
                           [0, 1, 2, 3], 300000, 3, "mccfrb")
  fresh = sweep.RunStore(tmp_path / "fresh", tasks)
  fresh.reset()
  sweep.run_sweep(tasks, store=fresh)
  pd.testing.assert_frame_equal(
      resumed.drop(columns=TIMING + ["backend"]),
      fresh.dataframe().drop(columns=TIMING), check_dtype=False)
  # Each run says which backend ran it.
  ran_before = [int(os.path.basename(k)[4:9]) for k in kept]
  expected = ["local"] * 8
  for i in ran_before:
    expected[i] = backend
  assert list(resumed.groupby(["algorithm", "seed"], sort=False)["backend"]
              .first()) == expected


# Item 9: time budgets.

def test_a_time_budget_run_checkpoints_at_log_spaced_training_times():
  budget = 0.2
  task = sweep.Task("kuhn_poker", "mccfrb_learned", 0, None, 4, "mccfrb",
                    budget)
  rows = pd.DataFrame(sweep.run_task(task))
  targets = sweep.time_checkpoints(budget, 4)
  assert targets == pytest.approx([2e-4, 2e-3, 2e-2, 0.2])
  assert 1 <= len(rows) <= 4
  assert rows["iteration"].is_monotonic_increasing
  assert rows["iteration"].is_unique
  # Every target is passed, and every row is the first check after one.
  assert rows["seconds"].iloc[-1] >= targets[-1]
  before = np.concatenate([[0.0], rows["seconds"].values[:-1]])
  for previous, now in zip(before, rows["seconds"]):
    assert any(previous < t <= now for t in targets), (previous, now)
  assert rows["seconds"].iloc[-1] >= budget
  assert (rows["budget_seconds"] == budget).all()
  assert rows["iterations"].isna().all()
  assert rows["exploitability"].iloc[-1] < rows["exploitability"].iloc[0]


@pytest.mark.slow
def test_seconds_runs_write_rows_for_every_algorithm(tmp_path):
  algorithms = ["mccfrb_learned", "es", "openspiel_os_cpp",
                "openspiel_os_python"]
  result = run_by_path(
      "convergence", "--games=kuhn_poker",
      f"--algorithms={','.join(algorithms)}",
      "--seeds=2", "--seconds=0.3", "--num_checkpoints=4", "--jobs=2",
      "--evaluator=mccfrb", "--reference_csv=", f"--out_dir={tmp_path}")
  assert result.returncode == 0, result.stderr
  df = pd.read_csv(tmp_path / "convergence.csv")
  assert list(df.columns) == list(sweep.COLUMNS) + ["backend"]
  last = df.groupby(["algorithm", "seed"]).tail(1).set_index(
      ["algorithm", "seed"]).sort_index()
  assert list(last.index) == [(a, s) for a in sorted(algorithms)
                              for s in (0, 1)]
  assert (last["seconds"] >= 0.3).all() and (last["seconds"] < 3.0).all()
  assert (last["iteration"] > 1).all()
  assert (df["budget_seconds"] == 0.3).all() and df["iterations"].isna().all()
  for _, run in df.groupby(["algorithm", "seed"]):
    assert run["seconds"].is_monotonic_increasing
    assert run["iteration"].is_monotonic_increasing
  # A faster solver gets further in the same time.
  assert (last.loc["mccfrb_learned", "iteration"].min()
          > 10 * last.loc["openspiel_os_python", "iteration"].max())
  assert ("no table by iteration: runs with a time budget reach different "
          "iterations (no common iteration grid)" in result.stdout)
  assert "mean exploitability by training seconds" in result.stdout
  assert "0.3s" in result.stdout
  assert (tmp_path / "convergence_kuhn_poker.png").stat().st_size > 1000
  # The plot binary reads such runs too.
  plotted = run_by_path("plot", f"--csv={tmp_path}/convergence.csv",
                        f"--out_prefix={tmp_path}/p")
  assert plotted.returncode == 0, plotted.stderr
  refused = run_by_path("plot", f"--csv={tmp_path}/convergence.csv",
                        "--reference=openspiel_os_cpp",
                        f"--out_prefix={tmp_path}/q")
  assert refused.returncode == 1
  assert "need a common iteration grid" in refused.stderr


def test_iterations_and_seconds_exclude_each_other(tmp_path):
  result = run_by_path("convergence", "--iterations=10", "--seconds=1",
                       f"--out_dir={tmp_path}/o")
  assert result.returncode == 1
  assert result.stderr.strip().splitlines() == [
      "convergence: error: --iterations and --seconds exclude each other: "
      "give one (a number of iterations or a time budget per run)"]
  assert not (tmp_path / "o").exists()
  for bad in ("0", "inf"):
    result = run_by_path("convergence", f"--seconds={bad}",
                         f"--out_dir={tmp_path}/o")
    assert result.returncode == 1
    assert "seconds must be a positive number" in result.stderr


def test_time_budget_plots_interpolate_seeds_onto_one_iteration_grid():
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
  # Two seeds reaching different iterations, exploitability 1/t on both.
  rows = [{"game": "g", "algorithm": "a", "seed": s, "iteration": t,
           "seconds": 1e-3 * t, "nodes_touched": 5 * t,
           "exploitability": 1.0 / t}
          for s, ts in enumerate(((1, 30, 900), (2, 50, 1000))) for t in ts]
  df = pd.DataFrame(rows)
  assert not analysis.has_common_iterations(df)
  assert analysis.has_common_iterations(df[df["seed"] == 0])
  curves = analysis.iteration_curves(df)
  assert curves["iteration"].min() == pytest.approx(2)
  assert curves["iteration"].max() == pytest.approx(900)
  np.testing.assert_allclose(curves["mean"], 1.0 / curves["iteration"])
  np.testing.assert_allclose(curves["nodes_touched"], 5 * curves["iteration"])
  fig = analysis.plot_game(df, "g")
  line, = fig.axes[0].get_lines()
  assert len(line.get_xdata()) == 40
  plt.close(fig)
  with pytest.raises(ValueError, match="common iteration grid"):
    analysis.iteration_speedup(df.assign(algorithm="b").pipe(
        lambda d: pd.concat([d, df.assign(algorithm="ref")])), "ref")


# Item 10: a drop-in for OpenSpiel's own example.

def openspiel_example():
  import open_spiel  # pylint: disable=g-import-not-at-top
  return (pathlib.Path(open_spiel.__file__).parent / "python" / "examples"
          / "mccfr_example.py")


SWAPPED_IMPORTS = {
    "from open_spiel.python.algorithms import external_sampling_mccfr as "
    "external_mccfr": "import mccfrb as external_mccfr",
    "from open_spiel.python.algorithms import outcome_sampling_mccfr as "
    "outcome_mccfr": "import mccfrb as outcome_mccfr",
}


@pytest.mark.parametrize("sampling", ["outcome", "external"])
def test_openspiels_mccfr_example_runs_with_mccfrb_imported(tmp_path,
                                                            sampling):
  source = openspiel_example().read_text()
  lines = source.splitlines()
  for old, new in SWAPPED_IMPORTS.items():
    assert lines.count(old) == 1, old
    lines[lines.index(old)] = new
  assert "external_mccfr.AverageType.SIMPLE" in source  # Passed positionally.
  script = tmp_path / "mccfr_example.py"
  script.write_text("\n".join(lines) + "\n")
  result = subprocess.run(
      [sys.executable, str(script), f"--sampling={sampling}"],
      capture_output=True, text=True, timeout=600,
      env={**os.environ, "PYTHONPATH": str(ROOT)})
  assert result.returncode == 0, result.stderr
  printed = [l.split() for l in result.stdout.splitlines()]
  assert [p[:3] for p in printed] == [
      ["Iteration", str(i), "exploitability"] for i in range(0, 10000, 1000)]
  nash_conv = [float(p[3]) for p in printed]
  # After one iteration near the uniform policy's 11/12 (0.75 to 1.0, as
  # with OpenSpiel's own solvers), after 9001 well below.
  assert nash_conv[0] > 0.5 and nash_conv[-1] < 0.3


def test_openspiels_average_types_choose_the_same_averaging():
  from open_spiel.python.algorithms import external_sampling_mccfr as es  # pylint: disable=g-import-not-at-top
  assert mccfrb.AverageType is es.AverageType
  for value, name in ((mccfrb.AverageType.SIMPLE, "simple"),
                      (mccfrb.AverageType.FULL, "full"),
                      (pyspiel.MCCFRAverageType.FULL, "full")):
    ours = mccfrb.ExternalSamplingSolver("kuhn_poker", value, seed=4)
    named = mccfrb.ExternalSamplingSolver("kuhn_poker", averaging=name, seed=4)
    ours.run(50)
    named.run(50)
    np.testing.assert_array_equal(ours.average_policy_table(),
                                  named.average_policy_table())
  full = mccfrb.ExternalSamplingSolver("kuhn_poker", mccfrb.AverageType.FULL,
                                       seed=4)
  simple = mccfrb.ExternalSamplingSolver("kuhn_poker", "simple", seed=4)
  full.run(50)
  simple.run(50)
  assert not np.array_equal(full.average_policy_table(),
                            simple.average_policy_table())
  with pytest.raises(ValueError, match="Unknown averaging 1"):
    mccfrb.ExternalSamplingSolver("kuhn_poker", 1)
  # OpenSpiel's OutcomeSamplingSolver(game) too.
  assert mccfrb.OutcomeSamplingSolver(
      pyspiel.load_game("kuhn_poker", {"players": 2})).num_iterations == 0


def test_the_table_by_seconds_keeps_algorithms_whose_seeds_do_not_overlap():
  # Seed 1 starts after seed 0 ends (a loaded machine's first checkpoint):
  # no common time grid, yet the table has the algorithm's row (all NaN).
  rows = [{"game": "g", "algorithm": a, "seed": s, "iteration": t,
           "seconds": (1e-3 if s == 0 or a == "b" else 1.0) * t,
           "exploitability": 1.0 / t}
          for a in ("a", "b") for s in (0, 1) for t in (1, 10)]
  table = analysis.at_times(pd.DataFrame(rows), [0.005]).set_index("algorithm")
  assert list(table.index) == ["a", "b"]
  assert np.isnan(table.loc["a", "0.005s"])
  assert table.loc["b", "0.005s"] == pytest.approx(0.2)
  only_a = analysis.at_times(pd.DataFrame(rows[:4]), [0.005])
  assert list(only_a["algorithm"]) == ["a"] and only_a["0.005s"].isna().all()
  # Without times: the round numbers inside every curve, b's 1 to 10 ms
  # (a, without a curve, does not narrow them); none without any curve.
  default = analysis.at_times(pd.DataFrame(rows)).set_index("algorithm")
  assert list(default.columns) == ["game", "0.001s", "0.01s"]
  assert default.loc["a", ["0.001s", "0.01s"]].isna().all()
  assert default.loc["b", "0.01s"] == pytest.approx(0.1)
  assert list(analysis.at_times(pd.DataFrame(rows[:4])).columns) == [
      "game", "algorithm"]
