r"""MCCFRb against OpenSpiel's MCCFR: exploitability by iteration and by second.

  python -m experiments.convergence                      # the default comparison
  python -m experiments.convergence --full               # the longer study
  python -m experiments.convergence --games=leduc_poker \
      --algorithms=mccfrb_learned,os,openspiel_os_cpp --iterations=100000 \
      --seeds=10 --jobs=2 --out_dir=results/leduc

  # Equal training time instead of equal iterations (10 s per run):
  python -m experiments.convergence --games=leduc_poker --seconds=10

  # Speedups against another reference and a long run of it stored earlier:
  python -m experiments.convergence --games=leduc_poker \
      --algorithms=mccfrb_history_optimistic --reference=os_optimistic \
      --reference_csv=experiments/results/baselines/reference.csv

The default compares mccfrb's best configurations with OpenSpiel's C++
outcome sampling on Leduc and goofspiel 4 (3 seeds, 10^5 iterations: about
a minute on two cores, plus numba's first compile); --full adds
OpenSpiel's Python outcome sampling and plain outcome sampling with
optimistic averaging (about 12 minutes, most of it OpenSpiel's Python
solver).

Writes {out_dir}/convergence.csv (one row per game, algorithm, seed and
checkpoint), {out_dir}/convergence_{game}.png/.pdf (the game string in file-name form), and prints the tables.
Every run's rows are kept in {out_dir}/convergence_runs/ as it finishes: an
interrupted sweep (Ctrl-C) keeps them, and the same command run again skips
them; the folder is removed once the outputs are written.
Exploitability is OpenSpiel's (pyspiel.exploitability) for every algorithm
unless --evaluator=mccfrb asks for mccfrb's exact evaluator (equal to 1e-9).
On games with more than two players or general-sum (for example
--games="kuhn_poker(players=3)") exploitability does not apply: the CSV's
exploitability column is empty there, the nash_conv column (pyspiel.nash_conv
or mccfrb's) scores the runs, and the tables and plots say NashConv.
Without --algorithms such games run MORE_PLAYERS_ALGORITHMS (the predictive
baseline, plain outcome and external sampling, OpenSpiel's outcome
sampling); algorithms asked for that cannot run such a game (optimistic
averaging, public-state sampling, the MCTS solvers) are left out with one
line each saying why.

When the --reference algorithm's rows exist (in this sweep or in
--reference_csv), also writes {out_dir}/speedup.csv and prints the speedup
of every other algorithm over it (analysis.iteration_speedup), by
iterations: the iterations the reference needs for the same mean
exploitability divided by the algorithm's iterations, and by seconds: the
reference's seconds for those iterations (at its speed in this sweep)
divided by the algorithm's training seconds; ">=" where the reference's
run never gets there. The default reference is OpenSpiel's C++ outcome
sampling, its curve read off a committed run of 10^7 iterations.
"""

import os
import sys
import time

os.environ.setdefault("NUMBA_NUM_THREADS", "1")
# Run by path (python experiments/NAME.py) as well as with -m:
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app  # pylint: disable=g-import-not-at-top
from absl import flags
import numpy as np
import pandas as pd

from experiments import common
from mccfrb.experiment import analysis
from mccfrb.experiment import registry
from mccfrb.experiment import sweep

# The default comparison: the best per-history (MCCFRb+) and public-state
# configurations against OpenSpiel's C++ outcome sampling, on Leduc and on
# goofspiel with 4 cards, where optimistic and linear averaging keep
# converging (on goofspiel 3 with stochastic averaging every method stalls
# at the noise of its stochastically weighted average).
DEFAULT_ALGORITHMS = ("mccfrb_plus_predictive", "public_plus_predictive",
                      "openspiel_os_cpp")
# The longer study (--full): also OpenSpiel's Python outcome sampling (the
# solver mccfrb.compat stands in for; most of the study's time) and plain
# outcome sampling with optimistic averaging.
FULL_ALGORITHMS = DEFAULT_ALGORITHMS + ("os_optimistic", "openspiel_os_python")
# The default on games with more than two players or general-sum returns:
# the predictive baseline and plain outcome sampling with stochastic
# averaging, external sampling, and OpenSpiel's outcome sampling.
MORE_PLAYERS_ALGORITHMS = ("mccfrb_predictive", "os", "es", "openspiel_os_cpp",
                           "openspiel_os_python")
_GAMES = flags.DEFINE_list(
    "games", ["leduc_poker",
              "goofspiel(num_cards=4,imp_info=True,points_order=random,"
              "returns_type=point_difference)"],
    "OpenSpiel game strings.")
_ALGORITHMS = flags.DEFINE_list(
    "algorithms", list(DEFAULT_ALGORITHMS),
    f"Registry names: {', '.join(registry.ALGORITHMS)}. Without this "
    "flag, games with more than two players or general-sum run "
    f"{', '.join(MORE_PLAYERS_ALGORITHMS)} instead.")
_FULL = flags.DEFINE_bool(
    "full", False, "The longer study: the algorithms "
    f"{', '.join(FULL_ALGORITHMS)} (adds OpenSpiel's Python outcome "
    "sampling; about 12 minutes on two cores). Excludes --algorithms.")
_ITERATIONS = flags.DEFINE_integer("iterations", 100_000, "Iterations per run.")
_SECONDS = flags.DEFINE_float(
    "seconds", None, "Instead of --iterations: seconds of training wall "
    "clock per run, with log-spaced time checkpoints from seconds/1000.")
_CHECKPOINTS = flags.DEFINE_integer(
    "num_checkpoints", 11, "Log-spaced checkpoints, the first at iteration 1 "
    "(with --seconds: at seconds/1000).")
_SEEDS = flags.DEFINE_list("seeds", ["3"], "A count N (seeds 0..N-1) or a list.")
_OUT_DIR = flags.DEFINE_string("out_dir", "results/convergence",
                               "Folder for the CSV and the plots.")
_JOBS = flags.DEFINE_integer("jobs", 2, "Parallel worker processes (or CPUs).")
_BACKEND = flags.DEFINE_enum("backend", "local", list(sweep.BACKENDS),
                             "local processes or a Ray cluster.")
_RAY_ADDRESS = flags.DEFINE_string("ray_address", "",
                                   "Join this Ray cluster (default: start one).")
_EVALUATOR = flags.DEFINE_enum("evaluator", "openspiel", list(sweep.EVALUATORS),
                               "openspiel: pyspiel.exploitability; mccfrb: "
                               "mccfrb's exact evaluator.")
_PLOT = flags.DEFINE_bool("plot", True, "Write the plots.")
_REFERENCE = flags.DEFINE_string(
    "reference", "openspiel_os_cpp",
    "Registry name of the algorithm the speedups are measured against (its "
    "curve comes from --reference_csv where that holds the game, else from "
    "this sweep; its speed from this sweep where it ran).")
# The committed long run of OpenSpiel's C++ outcome sampling (10^7
# iterations, seeds 0-2, on Leduc and goofspiel 4; docs/pages/experiments.md).
COMMITTED_REFERENCE = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
    "experiments", "results", "reference", "openspiel_os_cpp.csv")
_REFERENCE_CSV = flags.DEFINE_string(
    "reference_csv", COMMITTED_REFERENCE,
    "Convergence CSV of an earlier run holding the reference's rows (e.g. a "
    "long run); for a game it holds, they replace this sweep's. Default: the "
    "committed openspiel_os_cpp run to 10^7 iterations (Leduc, goofspiel 4); "
    "empty: this sweep's rows only.")

PROGRAM = "convergence"
# Everything a run writes into --out_dir; an earlier run's are removed first.
OUTPUTS = ("convergence.csv", "speedup.csv", "convergence_*.png",
           "convergence_*.pdf")
RUNS = "convergence_runs"  # The finished runs of a sweep in progress.


def budget_times(budget):
  """Powers of ten from budget/100 up to a time budget, and the budget."""
  lo, hi = np.ceil(np.log10(budget / 100)), np.floor(np.log10(budget))
  times = [float(10.0**k) for k in np.arange(lo, hi + 1)]
  return times + ([] if times and np.isclose(times[-1], budget)
                  else [float(budget)])


def print_tables(df):
  with pd.option_context("display.width", 200, "display.max_columns", 30,
                         "display.float_format", "{:.4g}".format):
    for game, g in df.groupby("game"):
      seeds = analysis.count_text(g["seed"].nunique(), "seed")
      budgets = g["budget_seconds"].dropna().unique()
      if not len(budgets) and analysis.has_common_iterations(g):
        table = analysis.by_iteration(g).pivot(
            index="algorithm", columns="iteration", values="mean")
        print(f"\n{game}: mean {analysis.metric_name(g)} by iteration "
              f"({seeds})")
        print(table.to_string())
      else:
        last = g.sort_values("iteration").groupby(["algorithm", "seed"]).tail(1)
        reached = last.groupby("algorithm")["iteration"].agg(
            ["mean", "min", "max"]).astype(float)
        print(f"\n{game}: no table by iteration: runs with a time budget "
              "reach different iterations (no common iteration grid). "
              f"Iterations reached ({seeds}):")
        print(reached.rename(columns={"mean": "mean iterations"}).to_string(
            float_format="{:,.0f}".format))
      times = budget_times(budgets.max()) if len(budgets) else None
      at = analysis.at_times(g, times).drop(columns="game").set_index(
          "algorithm")
      # Without a column (no round number inside every run) no row is apart.
      apart = (at.index[at.isna().all(axis="columns")] if len(at.columns)
               else at.index[:0])
      if len(apart):
        print(f"\n{game}: not in the table by training seconds: "
              f"{', '.join(apart)} (the seeds' training times do not "
              "overlap)")
      at = at.drop(index=apart).dropna(axis="columns")
      if at.columns.empty or at.empty:
        print(f"\n{game}: no table by training seconds: no round number "
              "of seconds (1, 2 or 5 times a power of ten) lies inside "
              "every run's training time")
        continue
      print(f"\n{game}: mean {analysis.metric_name(g)} by training seconds "
            "(interpolated log-log, at round numbers of seconds every run "
            "of every algorithm reached; the speedups below compare beyond "
            "them)")
      print(at.to_string())


REFERENCE_CSV_COLUMNS = ("game", "algorithm", "iteration", "exploitability")
# How the tables name OpenSpiel's solvers.
READABLE = {"openspiel_os_cpp": "OpenSpiel's C++ outcome sampling",
            "openspiel_os_python": "OpenSpiel's Python outcome sampling"}


def read_reference_csv(path):
  """Rows of an earlier run's CSV; ValueError if unreadable or malformed."""
  return common.read_csv_with_columns(path, REFERENCE_CSV_COLUMNS,
                                      "--reference_csv")


def print_speedups(df, reference, reference_df, out_dir):
  """Prints the iteration speedups over `reference`, writes speedup.csv.

  Returns:
    The path written, or None when there is nothing to compare (one line
    saying why is printed).
  """
  for game, g in df.groupby("game"):
    if analysis.metric(g) == "nash_conv":
      print(f"\nspeedup table skipped for {game}: exploitability does not "
            "apply (more than two players or general-sum); the runs are "
            "scored by NashConv")
  df = df[[sweep.scored_by_exploitability(g) for g in df["game"]]]
  if df.empty:
    return None
  sources = [df] + ([reference_df] if reference_df is not None else [])
  have = set()
  for source in sources:
    have |= set(source.loc[source["algorithm"] == reference, "game"])
  others = df[df["algorithm"] != reference]
  where = "this sweep" + (" or --reference_csv" if reference_df is not None
                          else " (no --reference_csv given)")
  if others.empty:
    print(f"\nspeedup table skipped: no algorithm other than the reference "
          f"{reference!r} ran")
    return None
  gridless = sorted(game for game, g in others.groupby("game")
                    if not analysis.has_common_iterations(g))
  if gridless:
    print(f"\nspeedup table skipped for {', '.join(gridless)}: iteration "
          "speedups need a common iteration grid, which runs with a time "
          "budget (--seconds) do not have")
    others = others[~others["game"].isin(gridless)]
    if others.empty:
      return None
  games = sorted(set(others["game"]) & have)
  if not games:
    print(f"\nspeedup table skipped: no rows of the reference {reference!r} "
          f"in {where}")
    return None
  for game in sorted(set(others["game"]) - have):
    print(f"\nspeedup table skipped for {game}: no rows of the reference "
          f"{reference!r} for this game in {where}")
  speedup = analysis.iteration_speedup(df[df["game"].isin(games)], reference,
                                       reference_df)
  path = os.path.join(out_dir, "speedup.csv")
  common.write_atomically(path, speedup.to_csv(index=False))
  with pd.option_context("display.width", 250, "display.max_columns", 40):
    for game, g in speedup.groupby("game"):
      print(f"\n{game}: speedup over {reference} "
            f"({reference_text(df, reference, reference_df, game)}) at each "
            "checkpoint (\">=\": the reference never gets there in its run, "
            "not extrapolated; exploitability, nodes touched and seconds: "
            "means at the last checkpoint)")
      print("by iterations: the iterations the reference needs for the same "
            "mean exploitability / the algorithm's iterations")
      print(analysis.format_speedup(g, reported_only=True).to_string())
      print("by seconds: the reference's training seconds for those "
            "iterations, at its speed in this sweep / the algorithm's "
            "training seconds")
      print(analysis.format_speedup(g, by="seconds",
                                    reported_only=True).to_string())
  return path


def reference_text(df, reference, reference_df, game):
  """Where the reference's curve for `game` comes from, in words."""
  name = READABLE.get(reference, reference)
  rows = df[(df["algorithm"] == reference) & (df["game"] == game)]
  if reference_df is not None:
    long = reference_df[(reference_df["algorithm"] == reference)
                        & (reference_df["game"] == game)]
    if not long.empty:
      seeds = analysis.count_text(long["seed"].nunique(), "seed")
      speed = ("its speed from this sweep" if not rows.empty
               else "its speed from that run")
      return (f"{name}; its curve from a run of "
              f"{int(long['iteration'].max()):,} iterations, {seeds}, in "
              f"--reference_csv; {speed}")
  return f"{name}; its curve and speed from this sweep"


def algorithms_by_game(games_list):
  """(every algorithm of the sweep, {game: its algorithms}): --algorithms
  for every game; without the flag, its default for the two-player
  zero-sum games and MORE_PLAYERS_ALGORITHMS for the others (the default
  uses optimistic averaging and public-state sampling, which those games
  refuse)."""
  chosen = {}
  default = FULL_ALGORITHMS if _FULL.value else _ALGORITHMS.value
  for g in games_list:
    more = not _ALGORITHMS.present and not sweep.scored_by_exploitability(g)
    chosen[g] = list(MORE_PLAYERS_ALGORITHMS if more else default)
  algorithms = list(dict.fromkeys(a for g in games_list for a in chosen[g]))
  return algorithms, chosen


def main(argv):
  if len(argv) > 1:
    common.fail(PROGRAM, f"unexpected arguments {argv[1:]}")
  try:
    if _SECONDS.present and _ITERATIONS.present:
      raise ValueError("--iterations and --seconds exclude each other: give "
                       "one (a number of iterations or a time budget per run)")
    if _FULL.value and _ALGORITHMS.present:
      raise ValueError("--full and --algorithms exclude each other: --full "
                       f"runs {', '.join(FULL_ALGORITHMS)}")
    seconds = _SECONDS.value
    iterations = None if seconds is not None else _ITERATIONS.value
    games_list = common.rejoin_game_list(_GAMES.value)
    seeds = common.parse_seeds(_SEEDS.value)
    algorithms, chosen = algorithms_by_game(games_list)
    sweep.validate(games_list, algorithms, iterations,
                   _CHECKPOINTS.value, _EVALUATOR.value, _BACKEND.value,
                   _JOBS.value, seconds=seconds)
    try:
      registry.check_algorithms([_REFERENCE.value])
    except ValueError as e:
      raise ValueError(f"--reference: {e}") from e
    reference_df = (read_reference_csv(_REFERENCE_CSV.value)
                    if _REFERENCE_CSV.value else None)
    common.check_writable_dir(_OUT_DIR.value)
    left_out = [(g, a, why) for g, a, why in sweep.unsupported(
        games_list, algorithms) if a in chosen[g]]
  except ValueError as e:
    common.fail(PROGRAM, e)
  for game, algorithm, why in left_out:
    print(f"left out {algorithm} on {game}: {why}")
  refused = {(g, a) for g, a, _ in left_out}
  pairs = [(g, a) for g in games_list for a in chosen[g]
           if (g, a) not in refused]
  if not pairs:
    common.fail(PROGRAM, "none of the algorithms runs these games (see the "
                "lines above)")
  tasks = [t for t in sweep.make_tasks(
      games_list, algorithms, seeds, iterations, _CHECKPOINTS.value,
      _EVALUATOR.value, seconds) if (t.game, t.algorithm) in pairs]
  count = analysis.count_text
  budget = (f"{iterations} iterations" if seconds is None
            else f"{seconds:g} s of training")
  shape = (f"{count(len(games_list), 'game')} x "
           f"{count(len(algorithms), 'algorithm')}"
           if not left_out and len(pairs) == len(games_list) * len(algorithms)
           else f"{count(len(pairs), 'game-algorithm pair')}")
  print(f"{count(len(tasks), 'run')}: {shape} x "
        f"{count(len(seeds), 'seed')}, {budget} each, "
        f"backend {_BACKEND.value}, {count(_JOBS.value, 'job')}", flush=True)
  start = time.time()
  try:
    store = common.open_runs(_OUT_DIR.value, RUNS, tasks, OUTPUTS,
                             extra={"backend": _BACKEND.value})
  except (ValueError, OSError) as e:
    common.fail(PROGRAM, e)
  with common.ExitOnFault(PROGRAM, store):
    sweep.run_sweep(tasks, jobs=_JOBS.value, backend=_BACKEND.value,
                    ray_address=_RAY_ADDRESS.value or None,
                    progress=common.print_progress, store=store)
    df = store.dataframe()
    # Left by an interrupted run of this sweep, if any.
    common.remove_earlier_outputs(_OUT_DIR.value, OUTPUTS, quiet=True)
    csv_path = os.path.join(_OUT_DIR.value, "convergence.csv")
    common.write_atomically(csv_path, df.to_csv(index=False))
    print_tables(df)
    print(f"\nwrote {csv_path}")
    speedup_path = print_speedups(df, _REFERENCE.value, reference_df,
                                  _OUT_DIR.value)
    if speedup_path:
      print(f"\nwrote {speedup_path}")
    if _PLOT.value:
      for path in analysis.plot(df, os.path.join(_OUT_DIR.value,
                                                 "convergence")):
        print(f"wrote {path}")
    store.remove()
  print(f"total {time.time() - start:.0f}s")


if __name__ == "__main__":
  app.run(main)
