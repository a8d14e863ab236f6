r"""Seed 003's experiments on the compiled tree: UCT and Smooth UCT on Leduc.

  python -m experiments.mcts                  # the full reproduction
  python -m experiments.mcts --simulations=10000000 --seeds=2 --out_dir=results/mcts_short

Runs, for --seeds seeds, to --simulations simulations each (an iteration of
the solvers is two simulations):
  smooth_uct       Smooth UCT self-play (Heinrich & Silver 2015; c 18,
                   gamma 0.1, eta0 0.9, d 0.002);
  smooth_uct_d01   the same with Mac Manus's d = 0.1;
  uct              UCT self-play, c 20 (Mac Manus's Leduc thesis, Experiment 2);
  uct_vs_uniform   UCT against a uniform opponent (Experiment 1).
Writes {out_dir}/mcts.csv (one row per algorithm, seed and checkpoint, with
exploitability, training reward, exact value against a uniform opponent and
search-tree sizes), mcts_summary.csv (exploitability at 10^6 ... 5x10^8
simulations and at the last checkpoint), mcts_exploitability.png/.pdf and, for every algorithm trained
against the uniform opponent, mcts_uniform_{algorithm}.png/.pdf (Mac Manus's
Figures 4.1-4.3). Each finished run is kept in {out_dir}/mcts_runs/ until
the outputs are written, so an interrupted reproduction (Ctrl-C) continues
where it stopped when the same command is run again.
"""

import os
import sys
import time

os.environ.setdefault("NUMBA_NUM_THREADS", "1")
# Run by path (python experiments/NAME.py) as well as with -m:
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app  # pylint: disable=g-import-not-at-top
from absl import flags
import pandas as pd

from experiments import common
from mccfrb.experiment import analysis
from mccfrb.experiment import analysis_mcts
from mccfrb import evaluation
from mccfrb.tables import policy as policy_lib
from mccfrb.experiment import sweep
from mccfrb.games import tree as tree_lib

_GAME = flags.DEFINE_string("game", "leduc_poker", "OpenSpiel game string.")
_ALGORITHMS = flags.DEFINE_list(
    "algorithms", ["smooth_uct", "smooth_uct_d01", "uct", "uct_vs_uniform"],
    "MCTS registry names.")
_SIMULATIONS = flags.DEFINE_integer("simulations", 500_000_000,
                                    "Simulations per run (even).")
_CHECKPOINTS = flags.DEFINE_integer("num_checkpoints", 18,
                                    "Log-spaced checkpoints.")
_SEEDS = flags.DEFINE_list("seeds", ["3"], "A count N (seeds 0..N-1) or a list.")
_JOBS = flags.DEFINE_integer("jobs", 2, "Parallel worker processes.")
_OUT_DIR = flags.DEFINE_string("out_dir", "results/mcts",
                               "Folder for the CSVs and the plots.")
_PLOT = flags.DEFINE_bool("plot", True, "Write the plots.")
_CSV = flags.DEFINE_string(
    "csv", "", "Instead of running, read the rows of an earlier run from "
    "this mcts.csv and write its summary, plots and a copy of the rows into "
    "--out_dir.")

PROGRAM = "mcts"
# Finished runs are kept here until the outputs are written: an interrupted
# run resumes when the same command is run again (experiments/common.py).
RUNS = "mcts_runs"
MCTS_ALGORITHMS = ("smooth_uct", "smooth_uct_d01", "uct", "uct_vs_uniform")
OUTPUTS = ("mcts.csv", "mcts_summary.csv", "mcts_exploitability.png",
           "mcts_exploitability.pdf", "mcts_uniform_*.png",
           "mcts_uniform_*.pdf")


def main(argv):
  if len(argv) > 1:
    common.fail(PROGRAM, f"unexpected arguments {argv[1:]}")
  try:
    unknown = [a for a in _ALGORITHMS.value if a not in MCTS_ALGORITHMS]
    if unknown:
      raise ValueError(f"--algorithms: {', '.join(unknown)} not among the "
                       f"MCTS entries {', '.join(MCTS_ALGORITHMS)}")
    if _SIMULATIONS.value < 2 or _SIMULATIONS.value % 2:
      raise ValueError("--simulations must be an even number >= 2 (an "
                       f"iteration is two simulations), got {_SIMULATIONS.value}")
    seeds = common.parse_seeds(_SEEDS.value)
    iterations = _SIMULATIONS.value // 2
    sweep.validate([_GAME.value], _ALGORITHMS.value, iterations,
                   _CHECKPOINTS.value, "mccfrb", "local", _JOBS.value)
    common.check_writable_dir(_OUT_DIR.value)
  except ValueError as e:
    common.fail(PROGRAM, e)
  start = time.time()
  store = None
  if _CSV.value:
    try:
      df = pd.read_csv(_CSV.value)
    except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError) as e:
      common.fail(PROGRAM, f"--csv: cannot read {_CSV.value!r}: {e}")
    game = df["game"].iloc[0]
    algorithms = sorted(df["algorithm"].unique())
    simulations = int(df["simulations"].max())
  else:
    game, algorithms, simulations = (_GAME.value, _ALGORITHMS.value,
                                     _SIMULATIONS.value)
    tasks = sweep.make_tasks([game], algorithms, seeds, iterations,
                             _CHECKPOINTS.value, "mccfrb")
    print(f"{analysis.count_text(len(tasks), 'run')} of {simulations:.3g} "
          f"simulations on {game}, {analysis.count_text(_JOBS.value, 'job')}",
          flush=True)
    try:
      store = common.open_runs(_OUT_DIR.value, RUNS, tasks, OUTPUTS)
    except (ValueError, OSError) as e:
      common.fail(PROGRAM, e)
    with common.ExitOnFault(PROGRAM, store):
      sweep.run_sweep(tasks, jobs=_JOBS.value,
                      progress=common.print_progress, store=store)
    df = store.dataframe()
  with common.ExitOnFault(PROGRAM, store):
    write_outputs(df, game, algorithms, simulations, quiet=store is not None)
  if store is not None:
    store.remove()
  print(f"total {time.time() - start:.0f}s")


def write_outputs(df, game, algorithms, simulations, quiet):
  """Writes the CSV files (and the plots) of the runs `df` and prints the
  summary; removes an earlier run's outputs first (one line unless
  `quiet`)."""
  points = sorted({p for p in (1e6, 1e7, 1e8, 5e8) if p < simulations}
                  | {float(simulations)})
  summary = analysis_mcts.summary(df, points)
  common.remove_earlier_outputs(_OUT_DIR.value, OUTPUTS, quiet=quiet)
  out = os.path.join(_OUT_DIR.value, "mcts")
  common.write_atomically(f"{out}.csv", df.to_csv(index=False))
  common.write_atomically(f"{out}_summary.csv", summary.to_csv(index=False))
  with pd.option_context("display.width", 200, "display.max_columns", 20):
    print("\nexploitability (NashConv / 2) of the average strategy at "
          "simulations: mean [min-max] over seeds; training seconds per run")
    print(summary.to_string(index=False))
  print(f"\nwrote {out}.csv, {out}_summary.csv")
  if _PLOT.value:
    paths = analysis.save_figure(
        analysis_mcts.plot_exploitability(df, game), f"{out}_exploitability")
    tree = tree_lib.compile_tree(game)
    best = evaluation.best_response_values(tree,
                                           policy_lib.uniform_table(tree))
    for algorithm in algorithms:
      if algorithm.endswith("vs_uniform"):
        paths += analysis.save_figure(
            analysis_mcts.plot_against_uniform(df, game, algorithm, best),
            f"{out}_uniform_{algorithm}")
    print("wrote " + ", ".join(paths))


if __name__ == "__main__":
  app.run(main)
