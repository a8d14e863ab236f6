"""The experiment registry, sweeps and binaries."""

import importlib.util
import json
import os
import pathlib
import subprocess
import sys
import time
import types

import numpy as np
import pandas as pd
import pyspiel
import pytest

import mccfrb
from mccfrb.experiment import analysis
from mccfrb.experiment import registry
from mccfrb.experiment import sweep

ROOT = pathlib.Path(__file__).resolve().parents[1]
TIMING = ["seconds", "setup_seconds"]
# The speedup table's columns that depend on the machine's clock.
SPEEDUP_TIMING = ["seconds", "reference_seconds", "seconds_speedup"]


@pytest.mark.parametrize("name", sorted(registry.ALGORITHMS))
def test_registry_builds_every_algorithm(name):
  if (name == "openspiel_nfsp" and importlib.util.find_spec("jax") is None
      and not os.environ.get("CI")):  # CI installs the extra: never skip.
    pytest.skip('needs the nfsp extra: pip install -e ".[nfsp]"')
  game = mccfrb.load_game("kuhn_poker")
  tree = mccfrb.compile_tree(game)
  runner = registry.make(name, game, seed=1, tree=tree)
  runner.run(20)
  table = runner.average_policy_table(tree)
  mccfrb.tables.policy.validate_table(tree, table)
  # Both evaluators agree on every algorithm's policy.
  assert pyspiel.exploitability(game, runner.openspiel_policy(tree)) == (
      pytest.approx(mccfrb.exploitability(tree, table), abs=1e-9))
  assert runner.nodes_touched is None or runner.nodes_touched > 20


def test_unknown_algorithm_names_the_known_ones():
  with pytest.raises(ValueError, match="'nope'.*known: os, "):
    registry.make("nope", pyspiel.load_game("kuhn_poker"), 0)


def test_log_checkpoints():
  assert sweep.log_checkpoints(1000, 4) == [1, 10, 100, 1000]
  assert sweep.log_checkpoints(10**6, 7) == [10**k for k in range(7)]
  points = sweep.log_checkpoints(5, 20)
  assert points[0] == 1 and points[-1] == 5 and points == sorted(set(points))


def run_binary(module, *args):
  return subprocess.run([sys.executable, "-m", module, *args], cwd=ROOT,
                        capture_output=True, text=True, timeout=600,
                        env=dict(os.environ))


@pytest.mark.slow
def test_tiny_sweep_writes_csv_and_plots_and_reruns_identically(tmp_path):
  args = ["--games=kuhn_poker", "--algorithms=mccfrb_learned,openspiel_os_cpp",
          "--seeds=2", "--iterations=1000", "--num_checkpoints=4", "--jobs=2"]
  first = run_binary("experiments.convergence", *args, f"--out_dir={tmp_path}/a")
  assert first.returncode == 0, first.stderr
  assert "finished 4/4 runs" in first.stdout
  df = pd.read_csv(tmp_path / "a" / "convergence.csv")
  assert list(df.columns) == list(sweep.COLUMNS) + ["backend"]
  assert len(df) == 2 * 2 * 4
  assert sorted(df["iteration"].unique()) == [1, 10, 100, 1000]
  assert (df["exploitability"] > 0).all()
  np.testing.assert_allclose(df["nash_conv"], 2 * df["exploitability"])
  assert df[df["algorithm"] == "mccfrb_learned"]["nodes_touched"].notna().all()
  for ext in ("png", "pdf"):
    assert (tmp_path / "a" / f"convergence_kuhn_poker.{ext}").stat().st_size > 1000
  second = run_binary("experiments.convergence", *args, "--jobs=1",
                      f"--out_dir={tmp_path}/b")
  assert second.returncode == 0, second.stderr
  df2 = pd.read_csv(tmp_path / "b" / "convergence.csv")
  mine = lambda d: d[d["algorithm"] == "mccfrb_learned"].drop(columns=TIMING)
  pd.testing.assert_frame_equal(mine(df).reset_index(drop=True),
                                mine(df2).reset_index(drop=True))
  # The plot binary reads the CSV back.
  plotted = run_binary("experiments.plot", f"--csv={tmp_path}/a/convergence.csv",
                       f"--out_prefix={tmp_path}/p")
  assert plotted.returncode == 0, plotted.stderr
  assert (tmp_path / "p_kuhn_poker.png").exists() and (
      tmp_path / "p_kuhn_poker.pdf").exists()


@pytest.mark.parametrize("flag,message", [
    ("--algorithms=mccfrb_learnt", "Unknown algorithm"),
    ("--games=leduc_pokr", "Unknown game 'leduc_pokr'"),
    ("--iterations=0", "iterations must be an integer >= 1"),
    ("--seeds=0", "seed count must be >= 1"),
    ("--reference=bogus", "--reference: Unknown algorithm(s) 'bogus'"),
    ("--reference_csv=/no/such.csv", "--reference_csv: no such file"),
])
def test_bad_input_one_line_error_nothing_written(tmp_path, flag, message):
  result = run_binary("experiments.convergence", flag, f"--out_dir={tmp_path}/o")
  assert result.returncode != 0
  lines = result.stderr.strip().splitlines()
  assert len(lines) == 1 and message in lines[0], result.stderr
  assert not (tmp_path / "o" / "convergence.csv").exists()


@pytest.mark.slow
def test_speedup_table_from_the_sweep_or_a_reference_csv(tmp_path):
  args = ["--games=kuhn_poker", "--iterations=2000", "--seeds=2",
          "--evaluator=mccfrb"]
  first = run_binary("experiments.convergence", *args,
                     "--algorithms=os_optimistic,mccfrb_history_optimistic",
                     "--reference=os_optimistic", f"--out_dir={tmp_path}/a")
  assert first.returncode == 0, first.stderr
  assert ("speedup over os_optimistic (os_optimistic; its curve and speed "
          "from this sweep)") in first.stdout
  speedup = pd.read_csv(tmp_path / "a" / "speedup.csv")
  assert list(speedup.columns) == list(analysis.SPEEDUP_COLUMNS)
  assert set(speedup["algorithm"]) == {"mccfrb_history_optimistic"}
  assert (speedup["reference"] == "os_optimistic").all()
  assert len(speedup) == 11 and speedup["iteration"].max() == 2000
  assert set(speedup["bound"]) <= {"=", ">=", "<="}
  np.testing.assert_allclose(
      speedup["speedup"], speedup["reference_iterations"] / speedup["iteration"])
  np.testing.assert_allclose(speedup["seconds_speedup"],
                             speedup["reference_seconds"] / speedup["seconds"])
  assert (speedup["nodes_touched"] > speedup["iteration"]).all()
  # The reference's rows read back from the first run's CSV give the same
  # speedups (the mccfrb solvers are deterministic given the seed).
  second = run_binary("experiments.convergence", *args,
                      "--algorithms=mccfrb_history_optimistic", "--plot=false",
                      "--reference=os_optimistic",
                      f"--reference_csv={tmp_path}/a/convergence.csv",
                      f"--out_dir={tmp_path}/b")
  assert second.returncode == 0, second.stderr
  again = pd.read_csv(tmp_path / "b" / "speedup.csv")
  pd.testing.assert_frame_equal(speedup.drop(columns=SPEEDUP_TIMING),
                                again.drop(columns=SPEEDUP_TIMING))
  # Without the reference's rows the table is skipped, with one line.
  third = run_binary("experiments.convergence", *args,
                     "--algorithms=mccfrb_history_optimistic", "--plot=false",
                     "--reference=os_optimistic", f"--out_dir={tmp_path}/c")
  assert third.returncode == 0, third.stderr
  assert ("speedup table skipped: no rows of the reference 'os_optimistic'"
          in third.stdout)
  assert not (tmp_path / "c" / "speedup.csv").exists()
  # experiments.plot computes the same table from the CSV files.
  plotted = run_binary("experiments.plot", f"--csv={tmp_path}/b/convergence.csv",
                       "--reference=os_optimistic",
                       f"--reference_csv={tmp_path}/a/convergence.csv",
                       f"--out_prefix={tmp_path}/p/plot")
  assert plotted.returncode == 0, plotted.stderr
  from_plot = pd.read_csv(tmp_path / "p" / "plot_speedup.csv")
  pd.testing.assert_frame_equal(speedup.drop(columns=SPEEDUP_TIMING),
                                from_plot.drop(columns=SPEEDUP_TIMING))
  missing = run_binary("experiments.plot", f"--csv={tmp_path}/b/convergence.csv",
                       "--reference=os_optimistic",
                       f"--out_prefix={tmp_path}/q/plot")
  assert missing.returncode == 1 and "os_optimistic" in missing.stderr


@pytest.mark.parametrize("lo, hi, times", [
    (0.5, 200.0, [1.0, 10.0, 100.0]),  # Two or more decades: those alone.
    # One decade inside: the 1-2-5 steps (the sweep below spans only 1 ms
    # of the powers of ten on a quiet machine, and none on a loaded one).
    (0.00028, 0.0083, [0.0005, 0.001, 0.002, 0.005]),
    (0.0011, 0.0083, [0.002, 0.005]),
    (0.09, 0.11, [0.1]),
    (0.3, 0.4, []),  # No step inside: no table, said so.
    (0.4, 0.3, []),  # The runs' times do not overlap.
])
def test_the_table_by_seconds_is_at_round_numbers_every_run_reached(
    lo, hi, times):
  assert analysis.round_times(lo, hi) == times


def test_the_default_compares_with_openspiels_cpp_solver_without_nan(
    tmp_path):
  """The default algorithms against OpenSpiel's C++ outcome sampling, its
  curve read off the committed long run: tables by iteration, by seconds
  and of speedups by iterations and by seconds, none with NaN; the time
  left is estimated on every line but the last."""
  # 10,000 iterations: MCCFRb's runs take a few milliseconds (from about
  # 0.2 ms at iteration 1 to 8 ms), so that round numbers of seconds lie
  # inside every run's training time on a loaded machine too.
  done = run_binary("experiments.convergence", "--games=leduc_poker",
                    "--iterations=10000", "--seeds=2", "--num_checkpoints=5",
                    "--evaluator=mccfrb", f"--out_dir={tmp_path}")
  assert done.returncode == 0, done.stderr
  out = done.stdout
  assert "nan" not in out.lower()
  progress = [l for l in out.splitlines() if l.startswith("finished ")]
  assert len(progress) == 6 and all("s left" in l for l in progress[:-1])
  assert progress[-1].startswith("finished 6/6 runs") and "left" not in (
      progress[-1])
  assert "leduc_poker: mean exploitability by training seconds" in out
  assert ("speedup over openspiel_os_cpp (OpenSpiel's C++ outcome sampling; "
          "its curve from a run of 10,000,000 iterations, 3 seeds, in "
          "--reference_csv; its speed from this sweep)") in out
  assert "by iterations:" in out and "by seconds:" in out
  df = pd.read_csv(tmp_path / "convergence.csv")
  assert set(df["algorithm"]) == {"mccfrb_plus_predictive",
                                  "public_plus_predictive",
                                  "openspiel_os_cpp"}
  speedup = pd.read_csv(tmp_path / "speedup.csv")
  assert set(speedup["algorithm"]) == {"mccfrb_plus_predictive",
                                       "public_plus_predictive"}
  last = speedup[speedup["iteration"] == 10000].set_index("algorithm")
  # The long run, not this sweep's 10,000 iterations, gives the curve: the
  # reference needs more iterations than the sweep ran for their
  # exploitability, and a measured (finite, positive) time for them.
  # Public-state sampling may reach below the long run's last value
  # (">=": not extrapolated); MCCFRb's row is read off the curve.
  assert (last["reference_iterations"] > 10000).all()
  assert last.loc["mccfrb_plus_predictive", "bound"] == "="
  assert last["bound"].isin(["=", ">="]).all() and (last["speedup"] > 1).all()
  assert (last["reference_seconds"] > 0).all()
  assert np.isfinite(last["seconds_speedup"]).all()


def _convergence_lists():
  """The binary's DEFAULT_ALGORITHMS and FULL_ALGORITHMS, read in a process
  of their own: importing a second binary here would define its absl flags
  twice (experiments.game_info's `games`, imported by another test)."""
  done = subprocess.run(
      [sys.executable, "-c", "import json, experiments.convergence as c; "
       "print(json.dumps([c.DEFAULT_ALGORITHMS, c.FULL_ALGORITHMS]))"],
      capture_output=True, text=True, cwd=ROOT, timeout=300, check=True)
  default, full = json.loads(done.stdout)
  return types.SimpleNamespace(DEFAULT_ALGORITHMS=default,
                               FULL_ALGORITHMS=full)


def test_full_runs_the_longer_study_and_excludes_algorithms(tmp_path):
  convergence = _convergence_lists()
  done = run_binary("experiments.convergence", "--full", "--games=kuhn_poker",
                    "--iterations=10", "--seeds=1", "--num_checkpoints=2",
                    "--evaluator=mccfrb", "--noplot", f"--out_dir={tmp_path}/a")
  assert done.returncode == 0, done.stderr
  df = pd.read_csv(tmp_path / "a" / "convergence.csv")
  assert sorted(df["algorithm"].unique()) == sorted(convergence.FULL_ALGORITHMS)
  assert set(convergence.DEFAULT_ALGORITHMS) < set(convergence.FULL_ALGORITHMS)
  assert "openspiel_os_python" in convergence.FULL_ALGORITHMS
  both = run_binary("experiments.convergence", "--full", "--algorithms=os",
                    f"--out_dir={tmp_path}/b")
  assert both.returncode == 1
  assert both.stderr.strip().splitlines() == [
      "convergence: error: --full and --algorithms exclude each other: "
      f"--full runs {', '.join(convergence.FULL_ALGORITHMS)}"]


def test_unwritable_output_folder(tmp_path):
  blocker = tmp_path / "file"
  blocker.write_text("not a folder")
  result = run_binary("experiments.convergence", "--games=kuhn_poker",
                      f"--out_dir={blocker}/out")
  assert result.returncode != 0
  assert "cannot write to output folder" in result.stderr.strip().splitlines()[-1]


RAY_SWEEP = """
import sys
import pandas as pd
from mccfrb.experiment import sweep
tasks = sweep.make_tasks(["kuhn_poker"], ["mccfrb_learned",
                                          "openspiel_os_cpp"], [0, 1], 300, 3)
pd.DataFrame(sweep.run_sweep(tasks, jobs=1)).to_csv(sys.argv[1], index=False)
pd.DataFrame(sweep.run_sweep(tasks, jobs=2, backend="ray")).to_csv(
    sys.argv[2], index=False)
"""


@pytest.mark.slow
def test_ray_backend_gives_the_local_rows(tmp_path):
  """A local 2-CPU Ray cluster reproduces --backend=local (CI installs ray).

  In a process of its own: after `ray.shutdown()` a process keeps Ray's
  threads (ten, gRPC's among them) and its SIGTERM handler, which the
  tests that follow in this worker would inherit.
  """
  if os.environ.get("CI"):
    import ray  # pylint: disable=unused-import,g-import-not-at-top
  else:
    pytest.importorskip("ray")
  local, remote = tmp_path / "local.csv", tmp_path / "ray.csv"
  result = subprocess.run([sys.executable, "-c", RAY_SWEEP, str(local),
                           str(remote)], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)
  assert result.returncode == 0, result.stderr
  pd.testing.assert_frame_equal(pd.read_csv(local).drop(columns=TIMING),
                                pd.read_csv(remote).drop(columns=TIMING))


@pytest.mark.slow
def test_variance_binary(tmp_path):
  result = run_binary("experiments.variance", "--games=kuhn_poker",
                      "--baselines=none,history,oracle", "--checkpoints=10,100",
                      "--episodes=20000", "--noconditional",
                      f"--out_dir={tmp_path}")
  assert result.returncode == 0, result.stderr
  df = pd.read_csv(tmp_path / "variance.csv").set_index(["baseline", "iteration"])
  assert df.loc[("oracle", 100), "root_variance"] < 1e-20
  # A learned history baseline cuts the root variance (measured 0.05 vs 2.6).
  assert df.loc[("history", 100), "root_variance"] < 0.2 * df.loc[
      ("none", 100), "root_variance"]
  assert (df["infoset_mse"] >= df["infoset_variance"] - 1e-12).all()
  assert (tmp_path / "variance.md").exists() and (tmp_path / "variance_kuhn_poker.png").exists()


@pytest.mark.slow
def test_thesis_tables_binary(tmp_path):
  result = run_binary("experiments.thesis_tables", "--games=goofspiel4",
                      "--seeds=1", "--max_power=1", "--jobs=1",
                      f"--out_dir={tmp_path}")
  assert result.returncode == 0, result.stderr
  table = (tmp_path / "thesis_tables.md").read_text()
  assert "| Direct average | 10 | 0.35 (0.07) |" in table
  assert "Exponentially decaying average" in table and "No updates" in table
  df = pd.read_csv(tmp_path / "thesis.csv")
  assert set(df["iteration"]) == {1, 10}
  assert (tmp_path / "thesis_goofspiel_num_cards_4_imp_info_True_points_order_random_returns_type_point_difference.pdf").exists()
  # Its finished runs were kept (for a rerun after Ctrl-C) until the
  # outputs were written, as in experiments.convergence.
  assert not (tmp_path / "thesis_runs").exists()


def test_measurements_reproduce_a_quoted_number():
  result = run_binary("experiments.measurements", "--sets=exponential")
  assert result.returncode == 0, result.stderr
  # BUILD_NOTES.md and README quote these (seeds 0-2, Leduc, 20,000 its).
  assert ("thesis_exponential decay=0.5: mean 1.2552, range 1.2137-1.2978"
          in result.stdout)
  bad = run_binary("experiments.measurements", "--sets=nope")
  assert bad.returncode != 0 and "unknown sets" in bad.stderr


def test_a_game_too_large_to_compile_is_refused_in_one_line_leaving_nothing(
    tmp_path):
  out = tmp_path / "out"
  done = run_binary("experiments.convergence", "--games=goofspiel",
                    "--algorithms=os", "--iterations=10", f"--out_dir={out}")
  assert done.returncode == 1
  lines = done.stderr.strip().splitlines()
  assert len(lines) == 1, done.stderr
  assert lines[0].startswith("convergence: error: goofspiel is too large")
  assert "experiments.big_games" in lines[0]
  assert not out.exists()


@pytest.mark.slow
def test_big_games_scores_checkpoints_head_to_head(tmp_path):
  """--evaluator=head_to_head on a small game: a row per checkpoint and
  opponent in head_to_head.csv, the C++ opponent trained as long (CPU
  seconds), a plot; a bound row per checkpoint in bound.csv, and its
  plot."""
  from mccfrb.experiment import head_to_head  # pylint: disable=import-outside-toplevel
  done = run_binary("experiments.big_games", "--games=kuhn_poker",
                    "--algorithms=mccfrb_plus_none,openspiel_os_cpp",
                    "--checkpoint_seconds=0.5,1", "--evaluator=head_to_head",
                    "--episodes=2000", "--bound_seconds=0.2", "--clock=cpu",
                    f"--out_dir={tmp_path}")
  assert done.returncode == 0, done.stderr
  bound = pd.read_csv(tmp_path / "bound.csv")
  assert list(bound.columns) == head_to_head.BOUND_COLUMNS
  assert len(bound) == 2 * 2  # Algorithms x checkpoints.
  assert set(bound.algorithm) == {"mccfrb_plus_none", "openspiel_os_cpp"}
  assert (bound.bound_seconds == 0.2).all() and (bound.episodes == 2000).all()
  assert (bound.representation == "tree").all()
  assert (bound.responder_walks > 0).all()
  assert (bound.low < bound.exploitability_bound).all() and (
      bound.exploitability_bound < bound.high).all()
  assert (tmp_path / "bound_kuhn_poker.png").exists()
  frame = pd.read_csv(tmp_path / "head_to_head.csv")
  assert list(frame.columns) == head_to_head.COLUMNS
  assert len(frame) == 2 * 2 * 2  # Algorithms x checkpoints x opponents.
  assert set(frame.opponent) == {"uniform", "openspiel_os_cpp"}
  assert (frame.episodes == 2000).all()
  assert (frame.low < frame["mean"]).all() and (
      frame["mean"] < frame.high).all()
  against_cpp = frame[frame.opponent == "openspiel_os_cpp"]
  assert (against_cpp.opponent_seconds >= against_cpp.target).all()
  assert (against_cpp.opponent_iterations > 0).all()
  # Trained policies beat the uniform policy on Kuhn.
  assert (frame[frame.opponent == "uniform"].low > 0).all()
  assert (tmp_path / "head_to_head_kuhn_poker.png").exists()
  assert not (tmp_path / "big_games.csv").exists()


def test_head_to_head_bound_is_below_and_close_to_the_exact_value():
  """The bound row of a checkpoint bounds that checkpoint's policy: on Kuhn
  (responders near best responses after a second) it is within 10% plus
  noise of the policy's exact exploitability, never far above it."""
  from mccfrb.experiment import head_to_head  # pylint: disable=import-outside-toplevel
  from mccfrb.experiment import wallclock  # pylint: disable=import-outside-toplevel
  runner = wallclock.factory_of("mccfrb_plus_none")("kuhn_poker", 0, "tree")
  runner.run(300)
  evaluation = head_to_head.Evaluation("kuhn_poker", 0, 400_000,
                                       opponents=(), bound_seconds=1.0)
  rows = evaluation(runner, 1.0)
  assert len(rows) == 1 and head_to_head.is_bound_row(rows[0])
  row = rows[0]
  exact = mccfrb.exploitability("kuhn_poker", runner.policy())
  assert exact > 0.01  # Far enough from equilibrium to be measured.
  assert row["low"] <= exact
  assert abs(row["exploitability_bound"] - exact) <= (
      0.1 * exact + 4 * row["stderr"]), (row, exact)
  assert row["responder_walks"] > 0 and row["representation"] == "tree"
  assert set(head_to_head.BOUND_COLUMNS) - set(row) == {
      "game", "algorithm", "seed", "target", "seconds", "iterations",
      "memory_bytes", "openspiel_rate", "openspiel_seconds",
      "mccfrb_seconds"}  # The run's own columns.


def test_head_to_head_bound_takes_two_threads_where_its_route_allows(
    monkeypatch):
  """bound_threads=2 reaches approximate_exploitability as threads=2 on
  the tree route; a policy bounded through OpenSpiel states (here Kuhn
  with its compiled tree refused) takes one thread instead of the
  refusal of approximate_exploitability, and the row says which; other
  counts are refused."""
  from mccfrb import evaluation as evaluation_lib  # pylint: disable=import-outside-toplevel
  from mccfrb.evaluation import bound as bound_lib  # pylint: disable=import-outside-toplevel
  from mccfrb.experiment import head_to_head  # pylint: disable=import-outside-toplevel
  from mccfrb.experiment import wallclock  # pylint: disable=import-outside-toplevel
  runner = wallclock.factory_of("mccfrb_plus_none")("kuhn_poker", 0, "tree")
  runner.run(300)
  asked = []
  real = bound_lib.approximate_exploitability

  def spy(*args, **kwargs):
    asked.append(kwargs["threads"])
    return real(*args, **kwargs)
  monkeypatch.setattr(bound_lib, "approximate_exploitability", spy)
  for threads in (1, 2):
    evaluation = head_to_head.Evaluation(
        "kuhn_poker", 0, 2000, opponents=(), bound_seconds=0.2,
        bound_threads=threads)
    row, = evaluation(runner, 1.0)
    assert (row["bound_threads"], asked[-1]) == (threads, threads)
    assert row["representation"] == "tree" and row["responder_walks"] > 0

  def refuse(game):
    raise ValueError(f"{game} does not compile here.")
  monkeypatch.setattr(evaluation_lib, "as_tree", refuse)
  evaluation = head_to_head.Evaluation(
      "kuhn_poker", 0, 200, opponents=(), bound_seconds=0.2, bound_threads=2)
  row, = evaluation(runner, 1.0)
  assert (row["representation"], row["bound_threads"], asked[-1]) == (
      "states", 1, 1)
  assert row["responder_walks"] > 0
  for threads in (0, 3, True, 2.0):
    with pytest.raises(ValueError, match="^bound_threads must be 1 or 2 "):
      head_to_head.Evaluation("kuhn_poker", 0, 200, bound_threads=threads)


def test_bound_binary_bounds_on_two_threads(tmp_path):
  """experiments.bound --threads=2: a row per budget with its threads,
  the bound close to the exact exploitability of the policy (Kuhn:
  responders near best responses in a fraction of a second) and its
  interval's lower end below it; the plot."""
  done = run_binary("experiments.bound", "--games=kuhn_poker",
                    "--seconds=0.3", "--policy_iterations=2000",
                    "--episodes=400000", "--threads=2",
                    f"--out_dir={tmp_path}")
  assert done.returncode == 0, done.stderr
  rows = pd.read_csv(tmp_path / "bound.csv").to_dict("records")
  assert len(rows) == 1
  row = rows[0]
  assert (tmp_path / "bound.png").exists()
  assert row["threads"] == 2 and row["walks"] > 0
  assert row["low"] <= row["exact"]
  assert abs(row["responders_ratio"] - 1.0) < 0.02, row
  assert abs(row["bound"] - row["exact"]) <= (
      0.1 * row["exact"] + 4 * (row["high"] - row["bound"]) / 1.96), row


def test_committed_bound_and_head_to_head_csvs_take_more_rows():
  """The committed bound.csv and head_to_head.csv files have the columns
  big_games writes today, so that the pages' commands, run again with
  their --out_dir, append to them instead of being refused."""
  from mccfrb.experiment import head_to_head  # pylint: disable=import-outside-toplevel
  expected = {"bound.csv": head_to_head.BOUND_COLUMNS,
              "head_to_head.csv": head_to_head.COLUMNS}
  found = 0
  results = ROOT / "experiments" / "results"
  own = results / "bound" / "bound.csv"  # experiments.bound's, rewritten.
  for path in sorted(results.rglob("*.csv")):
    if path.name in expected and path != own:
      header = path.read_text(encoding="utf-8").splitlines()[0]
      assert header.split(",") == expected[path.name], path
      found += 1
  assert found >= 9  # Five bound.csv, four head_to_head.csv.


def test_big_games_refuses_a_csv_of_other_columns_before_training(tmp_path):
  """A bound.csv written by an earlier version (no bound_threads column)
  is refused in one line before any run, and left as it was."""
  from mccfrb.experiment import head_to_head  # pylint: disable=import-outside-toplevel
  old = ",".join(head_to_head.BOUND_COLUMNS[:-1]) + "\n"
  (tmp_path / "bound.csv").write_text(old)
  done = run_binary("experiments.big_games", "--games=kuhn_poker",
                    "--algorithms=mccfrb_plus_none", "--evaluator=bound",
                    "--checkpoint_seconds=30", f"--out_dir={tmp_path}")
  assert done.returncode == 1
  lines = done.stderr.strip().splitlines()
  assert len(lines) == 1, done.stderr
  assert "bound.csv has other columns than this version writes" in lines[0]
  assert (tmp_path / "bound.csv").read_text() == old
  assert not (tmp_path / "bound_kuhn_poker.png").exists()


def test_head_to_head_cpu_clock_counts_cpu_seconds_not_waits(monkeypatch):
  """clock="cpu": the run and the opponent train until their CPU seconds
  reach the target; time spent waiting (here a sleep in every call of
  the run) is not counted, and both sides get as many CPU seconds."""
  from mccfrb.experiment import head_to_head  # pylint: disable=import-outside-toplevel
  from mccfrb.experiment import wallclock  # pylint: disable=import-outside-toplevel
  runner = wallclock.factory_of("mccfrb_plus_none")("kuhn_poker", 0, "tree")
  runner.run(2)
  slow_run = runner.run

  def run(n):
    time.sleep(0.05)  # Waiting: wall seconds, no CPU seconds.
    slow_run(n)

  monkeypatch.setattr(runner, "run", run)
  start_cpu, start_wall = time.process_time(), time.perf_counter()
  trained, _ = wallclock.train_until(runner, 0.0, 0.3, 1,
                                     head_to_head.CLOCKS["cpu"])
  wall = time.perf_counter() - start_wall
  assert 0.3 <= trained <= time.process_time() - start_cpu + 1e-6
  assert wall > trained + 0.1  # The sleeps were not counted.
  with pytest.raises(ValueError, match="clock must be one of wall, cpu"):
    head_to_head.Evaluation("kuhn_poker", 0, 2, clock="gpu")


def test_big_games_refuses_a_negative_bound_budget(tmp_path):
  done = run_binary("experiments.big_games", "--games=kuhn_poker",
                    "--evaluator=head_to_head", "--bound_seconds=-1",
                    f"--out_dir={tmp_path}/out")
  assert done.returncode == 1
  assert "--bound_seconds must be >= 0 (0 skips the bound), got -1" in (
      done.stderr)
  assert not (tmp_path / "out").exists()


def test_big_games_refuses_an_odd_number_of_episodes(tmp_path):
  done = run_binary("experiments.big_games", "--games=kuhn_poker",
                    "--evaluator=head_to_head", "--episodes=3",
                    f"--out_dir={tmp_path}/out")
  assert done.returncode == 1
  assert "--episodes must be a positive even integer, got 3" in done.stderr
  assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_precision_binary_writes_both_precisions_and_refuses_a_bad_one(
    tmp_path):
  g3 = ("goofspiel(num_cards=3,imp_info=True,points_order=random,"
        "returns_type=point_difference)")
  result = run_binary("experiments.precision", f"--games=kuhn_poker,{g3}",
                      "--seeds=1", "--max_iterations=3000",
                      "--first_checkpoint=300", f"--out_dir={tmp_path}")
  assert result.returncode == 0, result.stderr
  df = pd.read_csv(tmp_path / "precision.csv")
  assert set(df["precision"]) == {"float64", "float32"}
  assert set(df["iterations"]) == {300, 3000}
  last = df[df["iterations"] == 3000].set_index(["game", "precision"])
  for game in ("kuhn_poker", g3):
    # float32 rows are smaller, and learn as float64 does.
    assert (last.loc[(game, "float32"), "bytes_per_infoset"]
            < last.loc[(game, "float64"), "bytes_per_infoset"])
    assert last.loc[(game, "float32"), "exploitability"] == pytest.approx(
        last.loc[(game, "float64"), "exploitability"], rel=0.5)
  assert (last["lost_fraction"] < 0.01).all()
  assert (tmp_path / "precision_kuhn_poker.png").exists()
  bad = run_binary("experiments.precision", "--precisions=float16",
                   f"--out_dir={tmp_path}/bad")
  assert bad.returncode != 0
  assert "float32" in bad.stderr and "Traceback" not in bad.stderr


KUHN3 = "kuhn_poker(players=3)"


@pytest.mark.slow
def test_convergence_on_three_players_scores_nash_conv_and_plots(tmp_path):
  """Exploitability does not apply to three players: the CSV's
  exploitability column is empty, nash_conv is pyspiel.nash_conv of each
  checkpoint's policy, the tables and the plot say NashConv, and the
  algorithms that cannot run the game are left out with one line each."""
  algorithms = ["os", "es", "openspiel_os_cpp", "openspiel_os_python",
                "os_optimistic", "public_plus_predictive", "smooth_uct"]
  done = run_binary("experiments.convergence", f"--games={KUHN3}",
                    f"--algorithms={','.join(algorithms)}", "--seeds=2",
                    "--iterations=200", "--num_checkpoints=3", "--jobs=1",
                    f"--out_dir={tmp_path}")
  assert done.returncode == 0, done.stderr
  left_out = [l for l in done.stdout.splitlines() if l.startswith("left out")]
  assert [l.split()[2] for l in left_out] == [
      "os_optimistic", "public_plus_predictive", "smooth_uct"]
  assert "averaging='stochastic'" in left_out[0]
  assert "two-player zero-sum games only" in left_out[2]
  assert f"{KUHN3}: mean NashConv by iteration (2 seeds)" in done.stdout
  assert f"speedup table skipped for {KUHN3}: exploitability does not apply" in (
      done.stdout)
  df = pd.read_csv(tmp_path / "convergence.csv")
  assert sorted(df["algorithm"].unique()) == sorted(algorithms[:4])
  assert df["exploitability"].isna().all()
  assert len(df) == 4 * 2 * 3 and np.isfinite(df["nash_conv"]).all()
  # The first checkpoint (one iteration) is far from equilibrium, the last
  # closer; uniform play has NashConv > 2 on 3-player Kuhn.
  first = df[df["iteration"] == 1]["nash_conv"]
  last = df[df["iteration"] == 200]["nash_conv"]
  assert (first > 1.5).all() and last.mean() < first.mean()
  # Rescored independently: the row is the NashConv of that policy.
  game = pyspiel.load_game(KUHN3)
  tree = mccfrb.compile_tree(game)
  runner = registry.make("es", game, 1, tree=tree)
  runner.run(200)
  row = df[(df["algorithm"] == "es") & (df["seed"] == 1)
           & (df["iteration"] == 200)]["nash_conv"].item()
  assert row == pytest.approx(pyspiel.nash_conv(
      game, runner.openspiel_policy(tree)), abs=1e-9)
  for ext in ("png", "pdf"):
    assert (tmp_path / f"convergence_kuhn_poker_players_3.{ext}").exists()
  fig = analysis.plot_game(df, KUHN3)
  try:
    assert {ax.get_ylabel() for ax in fig.axes} == {"NashConv"}
    assert "of log NashConv" in fig._suptitle.get_text()  # pylint: disable=protected-access
  finally:
    import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
    plt.close(fig)


def test_a_stored_three_player_run_needs_nash_conv_not_exploitability():
  task = sweep.Task(KUHN3, "es", 0, 10, 2)
  rows = sweep.run_task(task)
  df = pd.DataFrame(rows, columns=list(sweep.COLUMNS))
  assert sweep._damage(df, task, {}) is None  # pylint: disable=protected-access
  bad = df.assign(exploitability=df["nash_conv"] / 2)
  assert "only NashConv applies" in sweep._damage(bad, task, {})  # pylint: disable=protected-access
  bad = df.assign(nash_conv=np.nan)
  assert sweep._damage(bad, task, {}) == (  # pylint: disable=protected-access
      "values are missing in column 'nash_conv'")
  # On a two-player game an empty exploitability is still damage.
  two = sweep.Task("kuhn_poker", "es", 0, 10, 2)
  df2 = pd.DataFrame(sweep.run_task(two), columns=list(sweep.COLUMNS))
  assert sweep._damage(df2, two, {}) is None  # pylint: disable=protected-access
  assert sweep._damage(df2.assign(exploitability=np.nan), two, {}) == (  # pylint: disable=protected-access
      "values are missing in column 'exploitability'")


def test_convergence_defaults_on_three_players_run_what_runs_there(tmp_path):
  """Without --algorithms, a 3-player game runs the defaults for such games
  (none left out), and a 2-player game in the same sweep keeps its own."""
  done = run_binary("experiments.convergence", f"--games={KUHN3},kuhn_poker",
                    "--seeds=1", "--iterations=100", "--num_checkpoints=2",
                    "--jobs=1", "--noplot", f"--out_dir={tmp_path}")
  assert done.returncode == 0, done.stderr
  assert "left out" not in done.stdout
  df = pd.read_csv(tmp_path / "convergence.csv")
  by_game = df.groupby("game")["algorithm"].unique()
  assert sorted(by_game[KUHN3]) == sorted(
      ["mccfrb_predictive", "os", "es", "openspiel_os_cpp",
       "openspiel_os_python"])
  assert sorted(by_game["kuhn_poker"]) == sorted(
      ["mccfrb_plus_predictive", "public_plus_predictive",
       "openspiel_os_cpp"])
  # The kernels of 3-player trees compile before the clock starts: the
  # first checkpoint of a run takes far less than a compile.
  first = df[(df["game"] == KUHN3) & (df["iteration"] == 1)]
  assert (first["seconds"] < 2.0).all(), first[["algorithm", "seconds"]]


G4_ENGINE = ("goofspiel(num_cards=4,imp_info=True,points_order=random,"
             "returns_type=point_difference)")


def test_big_games_takes_seeds_from_first_seed_on_the_cpu_clock(tmp_path):
  """--first_seed shifts the seeds (so that processes can split them),
  --clock=cpu reads the exploitability race's training time on the CPU
  clock, and --eval_threads scores on two threads."""
  done = run_binary("experiments.big_games", f"--games={G4_ENGINE}",
                    "--algorithms=mccfrb_plus_none", "--first_seed=5",
                    "--seeds=2", "--checkpoint_seconds=0.2", "--clock=cpu",
                    "--eval_threads=2", f"--out_dir={tmp_path}")
  assert done.returncode == 0, done.stderr
  frame = pd.read_csv(tmp_path / "big_games.csv")
  assert sorted(frame.seed) == [5, 6]
  assert (frame.seconds >= 0.2).all() and (frame.exploitability > 0).all()
  # Different seeds, different runs.
  assert frame.exploitability.nunique() == 2


@pytest.mark.slow
def test_engine_variance_binary_ranks_the_situation_key_below_none(
    tmp_path):
  """The binary's rows and table on goofspiel 4's engine: the situation
  baseline's sampled regrets vary less than plain outcome sampling's (on
  goofspiel 4, 5.6 against 0.65 for the action values after 20,000
  iterations), and a kind the engine cannot run is refused in one line."""
  done = run_binary("experiments.engine_variance", f"--game={G4_ENGINE}",
                    "--baselines=none,situation", "--iterations=20000",
                    "--trajectories=100", "--continuations=20",
                    f"--out_dir={tmp_path}")
  assert done.returncode == 0, done.stderr
  frame = pd.read_csv(tmp_path / "engine_variance.csv").set_index("baseline")
  assert list(frame.index) == ["none", "situation"]
  assert (frame.iterations == 20000).all() and (frame.histories > 0).all()
  for column in ("regret_variance", "action_variance"):
    assert frame.loc["situation", column] < frame.loc["none", column] / 2
  table = (tmp_path / "engine_variance.md").read_text()
  assert "| `situation` |" in table
  assert (tmp_path / "engine_variance.png").stat().st_size > 0
  bad = run_binary("experiments.engine_variance", f"--game={G4_ENGINE}",
                   "--baselines=oracle", f"--out_dir={tmp_path}/bad")
  assert bad.returncode == 1
  assert len(bad.stderr.strip().splitlines()) == 1, bad.stderr
  assert "oracle" in bad.stderr


def test_big_games_plots_a_single_checkpoint_as_bars(tmp_path):
  """One checkpoint: a bar per algorithm at its mean, the seeds' range as
  an error bar (a line over one x would show nothing)."""
  import matplotlib  # pylint: disable=import-outside-toplevel
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt  # pylint: disable=import-outside-toplevel
  frame = pd.DataFrame(dict(
      game="g", algorithm=["b", "b", "a", "a"], seed=[0, 1, 0, 1],
      target=60.0, seconds=[60.1, 60.2, 60.0, 60.3],
      exploitability=[1.0, 1.2, 0.8, 0.9]))
  fig, ax = plt.subplots()
  analysis.checkpoint_bars(ax, frame, "cpu")
  heights = [p.get_height() for p in ax.patches]
  np.testing.assert_allclose(heights, [0.85, 1.1])  # a, then b
  assert [t.get_text() for t in ax.get_xticklabels()] == ["a", "b"]
  assert "60 CPU seconds" in ax.get_ylabel()
  plt.close(fig)
  # The binary draws them for a run of one checkpoint (its own process:
  # importing a binary here would define its absl flags twice).
  done = run_binary("experiments.big_games", f"--games={G4_ENGINE}",
                    "--algorithms=mccfrb_plus_none", "--seeds=2",
                    "--checkpoint_seconds=0.2", "--clock=cpu",
                    f"--out_dir={tmp_path}")
  assert done.returncode == 0, done.stderr
  plots = list(tmp_path.glob("big_games_*.png"))
  assert len(plots) == 1 and plots[0].stat().st_size > 0
