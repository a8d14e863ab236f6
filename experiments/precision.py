r"""float64 against float32 tables: exploitability at equal iterations.

  python -m experiments.precision                     # Leduc, goofspiel 5 and 6
  python -m experiments.precision --games=leduc_poker --max_iterations=100000000 --seeds=1

MCCFRbSolver with its engine defaults (hashed tables: MCCFRb+ without a
baseline, episodes in flight) at each --precisions, the same seeds, scored
at log-spaced iterations: goofspiel on its native engine, Leduc (no engine)
on the same hashed tables over its compiled tree (the engine kernels run on
a compiled tree unchanged). Exploitability is exact (the streaming walk).
Writes {out_dir}/precision.csv (a row per game, precision, seed and
checkpoint, with the tables' bytes per infoset and float32's lost
fraction), plots {out_dir}/precision_{game}.png and prints the ratio of
the float32 mean to the float64 mean at every checkpoint.
"""

import os
import sys
import textwrap

os.environ.setdefault("NUMBA_NUM_THREADS", "1")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app  # pylint: disable=g-import-not-at-top
from absl import flags
import numpy as np
import pandas as pd

import mccfrb
from experiments import common
from mccfrb import tables
from mccfrb.experiment import analysis
from mccfrb.games import engines

G5 = ("goofspiel(num_cards=5,imp_info=True,points_order=random,"
      "returns_type=point_difference)")
G6 = ("goofspiel(num_cards=6,imp_info=True,points_order=random,"
      "returns_type=point_difference)")
# Iterations of each game's last checkpoint (--max_iterations overrides).
MAX_ITERATIONS = {"leduc_poker": 10**7, G5: 10**7, G6: 10**7}

_GAMES = flags.DEFINE_list("games", ["leduc_poker", G5, G6], "Game strings.")
_PRECISIONS = flags.DEFINE_list("precisions", ["float64", "float32"],
                                "Table precisions.")
_SEEDS = flags.DEFINE_integer("seeds", 3, "Seeds per precision (goofspiel 6: "
                              "at most 1 unless --seeds_big).")
_SEEDS_BIG = flags.DEFINE_integer("seeds_big", 1, "Seeds on goofspiel 6.")
_MAX_ITERATIONS = flags.DEFINE_integer(
    "max_iterations", 0, "Last checkpoint (0: MAX_ITERATIONS per game).")
_FIRST = flags.DEFINE_integer("first_checkpoint", 1000,
                              "First checkpoint (iterations).")
_PER_DECADE = flags.DEFINE_integer("per_decade", 1,
                                   "Checkpoints per factor of 10.")
_OUT_DIR = flags.DEFINE_string("out_dir", "results/precision",
                               "Where the CSV and the plots go.")

PROGRAM = "precision"


def solver_for(game, seed, precision):
  """MCCFRbSolver with the engine defaults and `precision`: on the game's
  native engine, or on hashed tables over its compiled tree."""
  loaded = mccfrb.load_game(game)
  if engines.engine_for(loaded) is not None:
    return mccfrb.MCCFRbSolver(loaded, seed=seed, representation="engine",
                               precision=precision)
  return common.hashed_tree_solver(loaded, seed, precision,
                                   baseline="none")


def checkpoints(last):
  marks, k = [], 0
  while True:
    n = int(round(_FIRST.value * 10 ** (k / _PER_DECADE.value)))
    if n >= last:
      return marks + [last]
    marks.append(n)
    k += 1


def plot(frame, game, path):
  import matplotlib  # pylint: disable=import-outside-toplevel
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt  # pylint: disable=import-outside-toplevel
  fig, ax = plt.subplots(figsize=(6, 4))
  part = frame[frame["game"] == game]
  for precision, style in (("float64", "-"), ("float32", "--")):
    rows = part[part["precision"] == precision]
    if rows.empty:
      continue
    stats = rows.groupby("iterations")["exploitability"].agg(
        ["mean", "min", "max"])
    seeds = rows["seed"].nunique()
    label = (f"{precision} (mean of {seeds} seeds, band: min to max)"
             if seeds > 1 else f"{precision} (one seed)")
    line, = ax.plot(stats.index, stats["mean"], style, marker="o",
                    label=label)
    if seeds > 1:
      ax.fill_between(stats.index, stats["min"], stats["max"],
                      color=line.get_color(), alpha=0.15)
  ax.set_xscale("log")
  ax.set_yscale("log")
  ax.set_xlabel("iterations")
  ax.set_ylabel("exploitability")
  ax.set_title("\n".join(textwrap.wrap(
      f"{game}: MCCFRbSolver engine defaults by precision", 70)),
               fontsize=9)
  ax.grid(alpha=0.3, which="both")
  ax.legend()
  fig.tight_layout()
  fig.savefig(path, dpi=120)
  plt.close(fig)


def main(argv):
  if len(argv) > 1:
    common.fail(PROGRAM, f"unexpected arguments {argv[1:]}")
  for precision in _PRECISIONS.value:
    try:
      tables.check_precision(precision)
    except ValueError as e:
      common.fail(PROGRAM, str(e))
  os.makedirs(_OUT_DIR.value, exist_ok=True)
  path = os.path.join(_OUT_DIR.value, "precision.csv")
  games_list = common.rejoin_game_list(_GAMES.value)
  rows = []
  for game in games_list:
    last = _MAX_ITERATIONS.value or MAX_ITERATIONS.get(game, 10**6)
    marks = checkpoints(last)
    seeds = _SEEDS_BIG.value if game == G6 else _SEEDS.value
    for precision in _PRECISIONS.value:
      for seed in range(seeds):
        solver = solver_for(game, seed, precision)
        for mark in marks:
          solver.run(mark - solver.num_iterations, progress=False)
          value = mccfrb.exploitability(game, solver.average_policy())
          memory = solver.memory()
          row = dict(game=game, precision=precision, seed=seed,
                     iterations=mark, exploitability=value,
                     bytes_per_infoset=memory["bytes_per_infoset"],
                     infosets=memory["infosets"],
                     lost_fraction=solver._backend.tables.lost_fraction)  # pylint: disable=protected-access
          rows.append(row)
          pd.DataFrame(rows).to_csv(path, index=False)
          print(f"{game[:40]:>40} {precision} seed {seed} {mark:>11,} "
                f"exploitability {value:.6f}", flush=True)
  frame = pd.DataFrame(rows)
  for game in games_list:
    plot(frame, game, os.path.join(
        _OUT_DIR.value, f"precision_{analysis.game_slug(game)}.png"))
  means = frame.groupby(["game", "iterations", "precision"])[
      "exploitability"].mean().unstack("precision")
  if {"float32", "float64"} <= set(means.columns):
    means["float32 / float64"] = means["float32"] / means["float64"]
  print(means.to_string())


if __name__ == "__main__":
  app.run(main)
