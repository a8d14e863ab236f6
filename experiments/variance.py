r"""Variance of the sampled counterfactual values, per baseline kind.

  python -m experiments.variance
  python -m experiments.variance --games=leduc_poker --checkpoints=100,1000,10000
  python -m experiments.variance --baselines= --algorithms=os_optimistic,\
      public_plus_predictive --conditional_checkpoints=1000,100000

As Schmid et al. (2019) measured it: train each baseline kind (seed
--seed) and, at every checkpoint, freeze all tables and sample --episodes
extra episodes (MCCFRbSolver.sample_estimates with learn_baselines=False).
Reported, against the exact values of the frozen strategy from the exact
evaluation kernels:
  root_variance, root_mse: of the root value estimate u(root), averaged over
    the two update players;
  infoset_variance, infoset_mse: of the sampled counterfactual action values
    pi_{-i}(h)/q(h) u(h, a), averaged over every infoset-action.
Writes variance.csv, variance.md and variance_{game}.png/.pdf to --out_dir
(--baselines= skips this study).

With --conditional (the default), also the conditional variance of Schmid et
al. (2019, Fig. 5; docs/pages/algorithms.md "Measuring as the papers do") of the
registry's --algorithms on --conditional_games at --conditional_checkpoints:
with the tables frozen, --continuations episodes are sampled from every
history that training's episodes visit (per-history solvers: each decision
node of the update player, weighted by its visit probability q(h);
public-state solvers: each history of the update player in each public
state, weighted by q(S)), and the sample variances of the baseline-corrected
estimates u(h, a) (mean over legal actions) and u(h) are averaged with those
weights (`conditional_variance` of both solvers). Writes
conditional_variance.csv, a section of variance.md and
conditional_variance_{game}.png/.pdf.
"""

import os
import sys
import time

# Run by path (python experiments/NAME.py) as well as with -m:
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app  # pylint: disable=g-import-not-at-top
from absl import flags
import numpy as np
import pandas as pd

import mccfrb
from experiments import common
from mccfrb.experiment import analysis
from mccfrb.experiment import registry

# Plain OS, the best per-history configurations and the public-state form.
CONDITIONAL_ALGORITHMS = [
    "os_optimistic", "mccfrb_history_optimistic",
    "mccfrb_predictive_optimistic", "mccfrb_plus_history",
    "mccfrb_plus_predictive", "public_plus_none", "public_plus_history",
    "public_plus_predictive"]

_GAMES = flags.DEFINE_list("games", ["leduc_poker", common.GOOFSPIEL4],
                           "OpenSpiel game strings.")
_BASELINES = flags.DEFINE_list("baselines", list(mccfrb.BASELINES),
                               "Baseline kinds.")
_CHECKPOINTS = flags.DEFINE_list("checkpoints", ["100", "1000", "10000"],
                                 "Training iterations at which to measure.")
_EPISODES = flags.DEFINE_integer("episodes", 100_000,
                                 "Sampled episodes per measurement.")
# The unconditional study's configuration is pinned to the one its committed
# numbers (README) were measured with, not MCCFRbSolver's current defaults.
_AVERAGING = flags.DEFINE_enum("averaging", "stochastic", list(mccfrb.AVERAGINGS),
                               "Averaging of the unconditional study's solvers.")
_REGRET = flags.DEFINE_enum("regret", "rm", list(mccfrb.REGRETS),
                            "Regret update of the unconditional study's solvers.")
_SEED = flags.DEFINE_integer("seed", 0, "Training seed (sampling uses seed+1).")
_OUT_DIR = flags.DEFINE_string("out_dir", "experiments/results/variance",
                               "Output folder.")
_CONDITIONAL = flags.DEFINE_bool(
    "conditional", True, "Also measure the conditional variance of "
    "--algorithms (Schmid et al. 2019, Fig. 5).")
_ALGORITHMS = flags.DEFINE_list(
    "algorithms", CONDITIONAL_ALGORITHMS, "Registry algorithms (mccfrb "
    "per-history or public-state solvers) for the conditional variance.")
_CONDITIONAL_GAMES = flags.DEFINE_list(
    "conditional_games", ["leduc_poker"], "Games of the conditional variance.")
_CONDITIONAL_CHECKPOINTS = flags.DEFINE_list(
    "conditional_checkpoints", ["1000", "10000", "100000", "1000000"],
    "Training iterations at which to measure the conditional variance.")
_CONTINUATIONS = flags.DEFINE_integer(
    "continuations", 1000, "Episodes sampled from every measured history "
    "(Schmid et al.'s M).")

PROGRAM = "variance"
# Below this, a conditional variance is rounding: sums of squares of values
# of size ~10 over M continuations cancel to ~1e-13.
ROUNDING = 1e-10
# Everything a run writes into --out_dir; an earlier run's are removed first.
OUTPUTS = ("variance.csv", "variance.md", "variance_[0-9]*.png",
           "variance_[0-9]*.pdf", "conditional_variance.csv",
           "conditional_variance_[0-9]*.png", "conditional_variance_[0-9]*.pdf")


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
  for game, g in df.groupby("game"):
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
    paths += analysis.save_figure(fig,
                                  f"{out_prefix}_{analysis.game_slug(game)}")
  return paths


def conditional_rows(game, names, checkpoints, continuations, seed):
  """Conditional-variance rows of every algorithm at every checkpoint."""
  game_obj = mccfrb.load_game(game)
  tree = mccfrb.compile_tree(game_obj)
  rows = []
  for name in names:
    solver = registry.make(name, game_obj, seed, tree).solver
    form = ("public-state" if isinstance(solver, mccfrb.PublicSamplingSolver)
            else "per-history")
    train_seconds = 0.0
    for checkpoint in checkpoints:
      start = time.perf_counter()
      solver.run(checkpoint - solver.num_iterations)
      train_seconds += time.perf_counter() - start
      start = time.perf_counter()
      cv = solver.conditional_variance(continuations, seed=seed + 1)
      rows.append({
          "game": game, "algorithm": name, "form": form, "seed": seed,
          "iteration": checkpoint, "continuations": continuations,
          "histories": cv.histories, "action_variance": cv.action_variance,
          "value_variance": cv.value_variance,
          "nodes_touched": solver.nodes_touched,
          "train_seconds": train_seconds,
          "measure_seconds": time.perf_counter() - start})
      print(f"{game[:30]} {name} {checkpoint}: conditional variance of "
            f"u(h, a) {cv.action_variance:.4g}, of u(h) "
            f"{cv.value_variance:.4g} ({cv.histories} histories, "
            f"{rows[-1]['measure_seconds']:.1f} s)", flush=True)
  return rows


def conditional_table(df):
  """Markdown tables of the conditional variance: algorithm x checkpoint."""
  lines = []
  reference = CONDITIONAL_ALGORITHMS[0]
  for game, g in df.groupby("game", sort=False):
    checkpoints = sorted(g["iteration"].unique())
    head = " | ".join(f"{c:.0e}".replace("e+0", "e") for c in checkpoints)
    rule = " | ".join("---:" for _ in checkpoints)
    lines.append(f"\n### Conditional variance, `{game}` (Schmid et al. 2019, "
                 f"Fig. 5; {g['continuations'].iloc[0]} continuations from "
                 "every visited history, weighted by its visit probability; "
                 f"training seed {g['seed'].iloc[0]})\n")
    for column, title in (("action_variance", "Var[u(h, a) | h], mean over "
                           "legal actions"),
                          ("value_variance", "Var[u(h) | h]")):
      lines.append(f"\n{title}:\n")
      lines.append(f"| algorithm | form | {head} |")
      lines.append(f"| --- | --- | {rule} |")
      for name, a in g.groupby("algorithm", sort=False):
        values = a.set_index("iteration")[column]
        cells = " | ".join(_cell(values[c]) if c in values.index else "-"
                           for c in checkpoints)
        lines.append(f"| {name} | {a['form'].iloc[0]} | {cells} |")
    if reference in set(g["algorithm"]):
      ref = g[g["algorithm"] == reference].set_index("iteration")
      lines.append(f"\nRatio {reference} / algorithm (u(h, a); u(h) in "
                   "parentheses):\n")
      lines.append(f"| algorithm | {head} |")
      lines.append(f"| --- | {rule} |")
      for name, a in g.groupby("algorithm", sort=False):
        if name == reference:
          continue
        a = a.set_index("iteration")
        cells = []
        for c in checkpoints:
          if c not in a.index or c not in ref.index:
            cells.append("-")
            continue
          r, x = ref.loc[c], a.loc[c]
          cells.append(f"{_ratio(r.action_variance, x.action_variance)} "
                       f"({_ratio(r.value_variance, x.value_variance)})")
        lines.append(f"| {name} | {' | '.join(cells)} |")
  lines.append(f"\n0*, inf*: a variance below {ROUNDING:g}, zero up to "
               "rounding.")
  return "\n".join(lines) + "\n"


def _cell(value):
  return "0*" if value < ROUNDING else f"{value:.3g}"


def _ratio(numerator, denominator):
  return "inf*" if denominator < ROUNDING else f"{numerator / denominator:.3g}"


def plot_conditional(df, out_prefix):
  """Conditional variance against iterations (log-log), a line per algorithm."""
  import matplotlib  # pylint: disable=g-import-not-at-top
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
  paths = []
  columns = (("action_variance", "Var[û(h,a) | h], mean over actions"),
             ("value_variance", "Var[û(h) | h]"))
  for game, g in df.groupby("game", sort=False):
    fig, axes = plt.subplots(1, 2, figsize=(14, 4.8))
    positive = g[[c for c, _ in columns]].values
    positive = positive[positive >= ROUNDING]
    floor = 10 ** np.floor(np.log10(positive.min())) / 10 if len(
        positive) else ROUNDING
    for m, (name, a) in enumerate(g.groupby("algorithm", sort=False)):
      style = "--" if a["form"].iloc[0] == "public-state" else "-"
      for ax, (column, _) in zip(axes, columns):
        ax.plot(a["iteration"], np.maximum(a[column], floor), style,
                marker="os^vDP*X"[m % 8], color=f"C{m % 10}", label=name)
    for ax, (_, title) in zip(axes, columns):
      ax.set_xscale("log")
      ax.set_yscale("log")
      ax.set_xlabel("training iterations")
      ax.set_ylabel("conditional variance")
      ax.set_title(f"{title}\n(zero up to rounding, below {ROUNDING:g}, "
                   f"drawn at {floor:.0e}; dashed: public-state sampling)",
                   fontsize=9)
      ax.grid(True, which="both", alpha=0.3)
    axes[1].legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0))
    fig.suptitle(f"{game}: conditional variance (Schmid et al. 2019, Fig. 5), "
                 f"{g['continuations'].iloc[0]} continuations per visited "
                 "history", fontsize=10)
    paths += analysis.save_figure(fig,
                                  f"{out_prefix}_{analysis.game_slug(game)}")
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
    conditional_games = common.rejoin_game_list(_CONDITIONAL_GAMES.value)
    conditional_checkpoints = sorted(
        int(c) for c in _CONDITIONAL_CHECKPOINTS.value)
    if _CONDITIONAL.value:
      for g in conditional_games:
        mccfrb.load_game(g)
      registry.check_algorithms(_ALGORITHMS.value)
      probe = mccfrb.load_game("kuhn_poker")
      for name in _ALGORITHMS.value:
        solver = getattr(registry.make(name, probe, 0), "solver", None)
        if not hasattr(solver, "conditional_variance"):
          raise ValueError(
              f"algorithm {name!r} has no conditional variance: use mccfrb's "
              "per-history (MCCFRbSolver) or public-state "
              "(PublicSamplingSolver) entries, such as "
              f"{', '.join(CONDITIONAL_ALGORITHMS)}")
      if (not conditional_checkpoints or conditional_checkpoints[0] < 1
          or _CONTINUATIONS.value < 2):
        raise ValueError("conditional checkpoints must be >= 1 and "
                         "continuations >= 2")
    common.check_writable_dir(_OUT_DIR.value)
  except ValueError as e:
    common.fail(PROGRAM, e)
  rows = []
  for game in games_list if _BASELINES.value else []:
    tree = mccfrb.compile_tree(game)
    for baseline in _BASELINES.value:
      solver = mccfrb.MCCFRbSolver(game, baseline=baseline, seed=_SEED.value,
                                   tree=tree, averaging=_AVERAGING.value,
                                   regret=_REGRET.value)
      for checkpoint in checkpoints:
        solver.run(checkpoint - solver.num_iterations)
        row = {"game": game, "baseline": baseline, "iteration": checkpoint,
               "episodes": _EPISODES.value}
        row.update(measure(solver, _EPISODES.value, _SEED.value + 1))
        rows.append(row)
        print(f"{game[:30]} {baseline} {checkpoint}: root variance "
              f"{row['root_variance']:.4g}, infoset variance "
              f"{row['infoset_variance']:.4g}", flush=True)
  conditional = []
  if _CONDITIONAL.value:
    for game in conditional_games:
      conditional += conditional_rows(game, _ALGORITHMS.value,
                                      conditional_checkpoints,
                                      _CONTINUATIONS.value, _SEED.value)
  common.remove_earlier_outputs(_OUT_DIR.value, OUTPUTS)
  lines = []
  if rows:
    df = pd.DataFrame(rows)
    common.write_atomically(os.path.join(_OUT_DIR.value, "variance.csv"),
                            df.to_csv(index=False))
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
  if conditional:
    cdf = pd.DataFrame(conditional)
    common.write_atomically(
        os.path.join(_OUT_DIR.value, "conditional_variance.csv"),
        cdf.to_csv(index=False))
    table += conditional_table(cdf)
  common.write_atomically(os.path.join(_OUT_DIR.value, "variance.md"), table)
  print(table)
  paths = plot(pd.DataFrame(rows), os.path.join(_OUT_DIR.value, "variance")
               ) if rows else []
  if conditional:
    paths += plot_conditional(
        cdf, os.path.join(_OUT_DIR.value, "conditional_variance"))
  for path in paths:
    print(f"wrote {path}")


if __name__ == "__main__":
  app.run(main)
