r"""MCCFRb against OpenSpiel's MCCFR: exploitability by iteration and by second.

  python -m experiments.convergence                      # the default comparison
  python -m experiments.convergence --games=leduc_poker \
      --algorithms=mccfrb_learned,os,openspiel_os_cpp --iterations=100000 \
      --seeds=10 --jobs=2 --out_dir=results/leduc

Writes {out_dir}/convergence.csv (one row per game, algorithm, seed and
checkpoint), {out_dir}/convergence_{k}.png/.pdf, and prints the tables.
Exploitability is OpenSpiel's (pyspiel.exploitability) for every algorithm
unless --evaluator=mccfrb asks for mccfrb's exact evaluator (equal to 1e-9).
"""

import os
import time

os.environ.setdefault("NUMBA_NUM_THREADS", "1")

from absl import app  # pylint: disable=g-import-not-at-top
from absl import flags
from absl import logging
import numpy as np
import pandas as pd

from experiments import common
from mccfrb import analysis
from mccfrb import registry
from mccfrb import sweep

_GAMES = flags.DEFINE_list(
    "games", ["leduc_poker",
              "goofspiel(num_cards=3,imp_info=True,points_order=random,"
              "returns_type=point_difference)"],
    "OpenSpiel game strings.")
_ALGORITHMS = flags.DEFINE_list(
    "algorithms", ["mccfrb_learned", "mccfrb_history", "os",
                   "openspiel_os_cpp", "openspiel_os_python"],
    f"Registry names: {', '.join(registry.ALGORITHMS)}.")
_ITERATIONS = flags.DEFINE_integer("iterations", 100_000, "Iterations per run.")
_CHECKPOINTS = flags.DEFINE_integer("num_checkpoints", 11,
                                    "Log-spaced checkpoints, the first at 1.")
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

PROGRAM = "convergence"


def progress(done, total, elapsed):
  left = elapsed / done * (total - done)
  message = (f"finished {done}/{total} runs, elapsed {elapsed:.0f}s, "
             f"about {left:.0f}s left")
  logging.info(message)
  print(message, flush=True)


def decade_times(seconds):
  """Powers of ten spanning the positive training times of a sweep."""
  seconds = seconds[seconds > 0]
  lo, hi = np.floor(np.log10(seconds.min())), np.ceil(np.log10(seconds.max()))
  return [float(10.0**k) for k in np.arange(lo, hi + 1)]


def print_tables(df):
  with pd.option_context("display.width", 200, "display.max_columns", 30,
                         "display.float_format", "{:.4g}".format):
    for game, g in df.groupby("game"):
      table = analysis.by_iteration(g).pivot(
          index="algorithm", columns="iteration", values="mean")
      print(f"\n{game}: mean exploitability by iteration "
            f"({g['seed'].nunique()} seeds)")
      print(table.to_string())
      at = analysis.at_times(g, decade_times(g["seconds"])).drop(
          columns="game").set_index("algorithm")
      print(f"\n{game}: mean exploitability by training seconds "
            "(interpolated; NaN outside what every seed reached)")
      print(at.to_string())


def main(argv):
  if len(argv) > 1:
    common.fail(PROGRAM, f"unexpected arguments {argv[1:]}")
  try:
    games_list = common.rejoin_game_list(_GAMES.value)
    seeds = common.parse_seeds(_SEEDS.value)
    sweep.validate(games_list, _ALGORITHMS.value, _ITERATIONS.value,
                   _CHECKPOINTS.value, _EVALUATOR.value, _BACKEND.value,
                   _JOBS.value)
    common.check_writable_dir(_OUT_DIR.value)
  except ValueError as e:
    common.fail(PROGRAM, e)
  tasks = sweep.make_tasks(games_list, _ALGORITHMS.value, seeds,
                           _ITERATIONS.value, _CHECKPOINTS.value,
                           _EVALUATOR.value)
  print(f"{len(tasks)} runs: {len(games_list)} games x "
        f"{len(_ALGORITHMS.value)} algorithms x {len(seeds)} seeds, "
        f"{_ITERATIONS.value} iterations, backend {_BACKEND.value}, "
        f"{_JOBS.value} jobs", flush=True)
  start = time.time()
  rows = sweep.run_sweep(tasks, jobs=_JOBS.value, backend=_BACKEND.value,
                         ray_address=_RAY_ADDRESS.value or None,
                         progress=progress)
  df = pd.DataFrame(rows, columns=list(sweep.COLUMNS))
  df["nodes_touched"] = df["nodes_touched"].astype("Int64")
  df["backend"] = _BACKEND.value
  csv_path = os.path.join(_OUT_DIR.value, "convergence.csv")
  common.write_atomically(csv_path, df.to_csv(index=False))
  print_tables(df)
  print(f"\nwrote {csv_path}")
  if _PLOT.value:
    for path in analysis.plot(df, os.path.join(_OUT_DIR.value, "convergence")):
      print(f"wrote {path}")
  print(f"total {time.time() - start:.0f}s")


if __name__ == "__main__":
  app.run(main)
