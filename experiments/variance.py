r"""Variance of the sampled counterfactual values, per baseline kind.

  python -m experiments.variance
  python -m experiments.variance --games=leduc_poker --checkpoints=100,1000,10000

As Schmid et al. (2019) measured it: train each baseline kind (seed
--seed) and, at every checkpoint, freeze all tables and sample --episodes
extra episodes (MCCFRbSolver.sample_estimates with learn_baselines=False).
Reported, against the exact values of the frozen strategy from the exact
evaluation kernels:
  root_variance, root_mse: of the root value estimate u(root), averaged over
    the two update players;
  infoset_variance, infoset_mse: of the sampled counterfactual action values
    pi_{-i}(h)/q(h) u(h, a), averaged over every infoset-action.
Writes variance.csv, variance.md and variance_{k}.png/.pdf to --out_dir.
"""

import os
import sys

# Run by path (python experiments/NAME.py) as well as with -m:
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app  # pylint: disable=g-import-not-at-top
from absl import flags
import numpy as np
import pandas as pd

import mccfrb
from experiments import common
from mccfrb import analysis

_GAMES = flags.DEFINE_list("games", ["leduc_poker", common.GOOFSPIEL4],
                           "OpenSpiel game strings.")
_BASELINES = flags.DEFINE_list("baselines", list(mccfrb.BASELINES),
                               "Baseline kinds.")
_CHECKPOINTS = flags.DEFINE_list("checkpoints", ["100", "1000", "10000"],
                                 "Training iterations at which to measure.")
_EPISODES = flags.DEFINE_integer("episodes", 100_000,
                                 "Sampled episodes per measurement.")
_SEED = flags.DEFINE_integer("seed", 0, "Training seed (sampling uses seed+1).")
_OUT_DIR = flags.DEFINE_string("out_dir", "experiments/results/variance",
                               "Output folder.")

PROGRAM = "variance"
# Everything a run writes into --out_dir; an earlier run's are removed first.
OUTPUTS = ("variance.csv", "variance.md", "variance_[0-9]*.png",
           "variance_[0-9]*.pdf")


def measure(solver, episodes, seed):
  """One row of variance and MSE statistics at the solver's current state."""
  tree = solver.tree
  strategy = solver.current_policy_table()
  sample = solver.sample_estimates(episodes, seed=seed, learn_baselines=False)
  v0 = mccfrb.expected_value(tree, strategy)
  root = [sample.root_values[0::2], sample.root_values[1::2]]
  truth = [v0, tree.utility_sum - v0]
  exact_cfv = mccfrb.counterfactual_values(tree, strategy)
  legal = tree.legal_mask()
  mse = sample.value_var + (sample.value_mean - exact_cfv) ** 2
  return {
      "root_variance": float(np.mean([np.var(r) for r in root])),
      "root_mse": float(np.mean([np.mean((r - v) ** 2)
                                 for r, v in zip(root, truth)])),
      "infoset_variance": float(sample.value_var[legal].mean()),
      "infoset_mse": float(mse[legal].mean()),
  }


def plot(df, out_prefix):
  import matplotlib  # pylint: disable=g-import-not-at-top
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
  paths = []
  for k, (game, g) in enumerate(df.groupby("game")):
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    limits = {}
    for column in ("root_variance", "infoset_variance"):
      values = g[column].values
      values = values[np.isfinite(values) & (values > 1e-20)]
      median = np.median(values)
      shown = values[values < 1e4 * median]
      limits[column] = (shown.min() / 10, shown.max() * 10)
    for baseline, b in g.groupby("baseline"):
      for ax, column in zip(axes, ("root_variance", "infoset_variance")):
        low, high = limits[column]
        ax.plot(b["iteration"], np.clip(b[column], low, high * 0.99),
                marker="o", label=baseline)
    for ax, column, title in zip(
        axes, ("root_variance", "infoset_variance"),
        ("root value estimate",
         "counterfactual action values (mean over infosets)")):
      ax.set_xscale("log")
      ax.set_yscale("log")
      ax.set_ylim(*limits[column])
      ax.set_xlabel("training iterations")
      ax.set_ylabel("variance")
      ax.set_title(f"{title}\n(0 drawn at the bottom edge, values over 1e4 x "
                   "the median at the top edge)", fontsize=8)
      ax.grid(True, which="both", alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle(f"{game}: estimator variance, {g['episodes'].iloc[0]} frozen "
                 "episodes per point", fontsize=9)
    paths += analysis.save_figure(fig, f"{out_prefix}_{k}")
  return paths


def main(argv):
  if len(argv) > 1:
    common.fail(PROGRAM, f"unexpected arguments {argv[1:]}")
  try:
    games_list = common.rejoin_game_list(_GAMES.value)
    for g in games_list:
      mccfrb.load_game(g)
    unknown = set(_BASELINES.value) - set(mccfrb.BASELINES)
    if unknown:
      raise ValueError(f"unknown baselines {sorted(unknown)}; allowed: "
                       f"{list(mccfrb.BASELINES)}")
    checkpoints = sorted(int(c) for c in _CHECKPOINTS.value)
    if checkpoints[0] < 1 or _EPISODES.value < 2:
      raise ValueError("checkpoints must be >= 1 and episodes >= 2")
    common.check_writable_dir(_OUT_DIR.value)
  except ValueError as e:
    common.fail(PROGRAM, e)
  rows = []
  for game in games_list:
    tree = mccfrb.compile_tree(game)
    for baseline in _BASELINES.value:
      solver = mccfrb.MCCFRbSolver(game, baseline=baseline, seed=_SEED.value,
                                   tree=tree)
      for checkpoint in checkpoints:
        solver.run(checkpoint - solver.num_iterations)
        row = {"game": game, "baseline": baseline, "iteration": checkpoint,
               "episodes": _EPISODES.value}
        row.update(measure(solver, _EPISODES.value, _SEED.value + 1))
        rows.append(row)
        print(f"{game[:30]} {baseline} {checkpoint}: root variance "
              f"{row['root_variance']:.4g}, infoset variance "
              f"{row['infoset_variance']:.4g}", flush=True)
  df = pd.DataFrame(rows)
  common.remove_earlier_outputs(_OUT_DIR.value, OUTPUTS)
  common.write_atomically(os.path.join(_OUT_DIR.value, "variance.csv"),
                          df.to_csv(index=False))
  lines = []
  for game, g in df.groupby("game"):
    lines.append(f"\n### `{game}` ({_EPISODES.value} frozen episodes per "
                 f"entry, training seed {_SEED.value})\n")
    lines.append("| baseline | iteration | root variance | root MSE | "
                 "infoset variance | infoset MSE |")
    lines.append("| --- | ---: | ---: | ---: | ---: | ---: |")
    for _, r in g.iterrows():
      lines.append(f"| {r['baseline']} | {r['iteration']} | "
                   f"{r['root_variance']:.3g} | {r['root_mse']:.3g} | "
                   f"{r['infoset_variance']:.3g} | {r['infoset_mse']:.3g} |")
  table = "\n".join(lines) + "\n"
  common.write_atomically(os.path.join(_OUT_DIR.value, "variance.md"), table)
  print(table)
  for path in plot(df, os.path.join(_OUT_DIR.value, "variance")):
    print(f"wrote {path}")


if __name__ == "__main__":
  app.run(main)
