r"""Variance of the sampled regrets on a native engine, per baseline kind.

  python -m experiments.engine_variance                  # goofspiel 6, 10M
  python -m experiments.engine_variance --iterations=1000000 --baselines=none,situation

Each baseline kind trains MCCFRbSolver (its defaults otherwise: MCCFRb+,
optimistic averaging, float32 rows, episodes in flight) on the engine for
--iterations from seed --seed; then, with the tables frozen,
`conditional_variance` samples --trajectories episodes as training does
and, from every decision of their update player, --continuations more
(Schmid et al. 2019, Fig. 5, on an engine: each history counts with its
visit probability). Reported per kind: the conditional variance of the
sampled counterfactual regrets pi_{-i}(h)/q(h) (u(h, a) - u(h)), of the
action values u(h, a) and of u(h), and each one's ratio to "none" (plain
outcome sampling's estimator on the same tables' kind). Rows go to
{out_dir}/engine_variance.csv as each kind finishes, the table to
engine_variance.md and a bar chart to engine_variance.png (and .pdf).
"""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("NUMBA_NUM_THREADS", "1")

from absl import app  # pylint: disable=g-import-not-at-top
from absl import flags
import pandas as pd

import mccfrb
from experiments import common
from mccfrb.experiment import analysis
from mccfrb.kernels import baselines

G6 = ("goofspiel(num_cards=6,imp_info=True,points_order=random,"
      "returns_type=point_difference)")

_GAME = flags.DEFINE_string("game", G6, "A game with a native engine.")
_BASELINES = flags.DEFINE_list(
    "baselines", list(baselines.kinds("engine")),
    "Baseline kinds an engine runs.")
_ITERATIONS = flags.DEFINE_integer("iterations", 10_000_000,
                                   "Training iterations before measuring.")
_TRAJECTORIES = flags.DEFINE_integer("trajectories", 2000,
                                     "Sampled episodes whose histories are "
                                     "measured.")
_CONTINUATIONS = flags.DEFINE_integer("continuations", 200,
                                      "Episodes from every measured history.")
_SEED = flags.DEFINE_integer("seed", 0, "Training seed (measuring: seed + 1).")
_OUT_DIR = flags.DEFINE_string("out_dir", "results/engine_variance",
                               "Output folder.")

PROGRAM = "engine_variance"
OUTPUTS = ("engine_variance.csv", "engine_variance.md", "engine_variance.png",
           "engine_variance.pdf")
COLUMNS = ("regret_variance", "action_variance", "value_variance")


def measure(game, baseline, iterations, trajectories, continuations, seed):
  """One kind's row: trains, then measures with the tables frozen."""
  solver = mccfrb.MCCFRbSolver(game, baseline=baseline, seed=seed,
                               representation="engine")
  start = time.perf_counter()
  solver.run(iterations, progress=False)
  seconds = time.perf_counter() - start
  cv = solver.conditional_variance(continuations=continuations,
                                   seed=seed + 1, trajectories=trajectories)
  return {"game": game, "baseline": baseline, "iterations": iterations,
          "train_seconds": seconds, "histories": cv.histories,
          "trajectories": trajectories, "continuations": continuations,
          "regret_variance": cv.regret_variance,
          "action_variance": cv.action_variance,
          "value_variance": cv.value_variance,
          "mean_weight": cv.mean_weight}


def table(df):
  """Markdown: each kind's variances and their ratio to "none"."""
  lines = ["| baseline | regret variance | x lower than none | action value "
           "variance | x lower | u(h) variance | x lower | iterations/s |",
           "| --- | --- | --- | --- | --- | --- | --- | --- |"]
  none = df[df.baseline == "none"]
  for _, r in df.iterrows():
    cells = [f"`{r.baseline}`"]
    for column in COLUMNS:
      ratio = (f"{none[column].iloc[0] / r[column]:.1f}"
               if len(none) and r[column] > 0 else "")
      cells += [f"{r[column]:.4g}", ratio]
    cells.append(f"{r.iterations / r.train_seconds:,.0f}")
    lines.append("| " + " | ".join(cells) + " |")
  return "\n".join(lines) + "\n"


TITLES = {"regret_variance": "sampled regrets pi_-i/q (u(h,a) - u(h))",
          "action_variance": "action values u(h, a)",
          "value_variance": "values u(h)"}


def plot(df, stem):
  import matplotlib  # pylint: disable=g-import-not-at-top
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
  fig, axes = plt.subplots(1, len(COLUMNS), figsize=(4 * len(COLUMNS), 3.8))
  for ax, column in zip(axes, COLUMNS):
    bars = ax.bar(df.baseline, df[column], color="tab:blue")
    ax.set_yscale("log")
    ax.set_ylim(df[column].min() / 4, df[column].max() * 2)
    ax.bar_label(bars, labels=[f"{v:.3g}" for v in df[column]], fontsize=7)
    ax.set_title(f"variance of the {TITLES[column]}", fontsize=9)
    ax.tick_params(axis="x", rotation=60)
  game = df.game.iloc[0]
  fig.suptitle(f"{game}: conditional variance after "
               f"{int(df.iterations.iloc[0]):,} iterations (log scale)",
               fontsize=9)
  analysis.save_figure(fig, stem)


def main(argv):
  if len(argv) > 1:
    common.fail(PROGRAM, f"unexpected arguments {argv[1:]}")
  try:
    game = mccfrb.load_game(_GAME.value)
    if mccfrb.games.engines.engine_for(game) is None:
      raise ValueError(f"{_GAME.value} has no native engine")
    for kind in _BASELINES.value:
      baselines.check(kind, "engine")
    if _ITERATIONS.value < 1 or _TRAJECTORIES.value < 1 or (
        _CONTINUATIONS.value < 2):
      raise ValueError("iterations and trajectories must be >= 1, "
                       "continuations >= 2")
    common.check_writable_dir(_OUT_DIR.value)
  except ValueError as e:
    common.fail(PROGRAM, e)
  rows = []
  for kind in _BASELINES.value:
    rows.append(measure(_GAME.value, kind, _ITERATIONS.value,
                        _TRAJECTORIES.value, _CONTINUATIONS.value,
                        _SEED.value))
    r = rows[-1]
    print(f"{kind}: regret variance {r['regret_variance']:.4g}, action "
          f"variance {r['action_variance']:.4g} ({r['histories']} histories, "
          f"{r['train_seconds']:.0f} s of training)", flush=True)
  df = pd.DataFrame(rows)
  common.remove_earlier_outputs(_OUT_DIR.value, OUTPUTS, quiet=True)
  df.to_csv(os.path.join(_OUT_DIR.value, "engine_variance.csv"), index=False)
  text = table(df)
  common.write_atomically(os.path.join(_OUT_DIR.value, "engine_variance.md"),
                          text)
  plot(df, os.path.join(_OUT_DIR.value, "engine_variance"))
  print(text)


if __name__ == "__main__":
  app.run(main)
