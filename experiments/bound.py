r"""How close the exploitability bound comes to the exact value, by seconds.

  python -m experiments.bound
  python -m experiments.bound --games=leduc_poker --seconds=1,10 --episodes=1000000
  python -m experiments.bound --threads=2      # the responders side by side

For each game of --games: train an MCCFRb policy (MCCFRbSolver, seed
--seed, --policy_iterations iterations), compute its exact exploitability
(mccfrb.exploitability), then for each budget of --seconds run
mccfrb.approximate_exploitability(game, policy, seconds=budget,
seed=--seed, episodes=--episodes, threads=--threads) on the compiled tree:
best responders trained for `budget` seconds (both players together; with
--threads=2 each, side by side on two threads), scored on fresh episodes.
Writes bound.csv (one row per game and budget: exact, bound, its 95%
interval, ratio = bound / exact, training walks, threads) and bound.png
(the bound with its interval against training seconds, the exact value as
a line) to --out_dir. Also the responders' exact value against the policy
(responders_exact: the bound without its Monte Carlo noise, computed on
the compiled tree). Training is timed on the wall clock: the walks in a
budget depend on the machine's load.
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

_GAMES = flags.DEFINE_list(
    "games", ["leduc_poker", "goofspiel(num_cards=5)", "liars_dice"],
    "OpenSpiel game strings (two-player zero-sum, compilable).")
_SECONDS = flags.DEFINE_list("seconds", ["1", "3", "10", "30", "60"],
                             "Best-response training budgets, seconds.")
_POLICY_ITERATIONS = flags.DEFINE_integer(
    "policy_iterations", 100_000, "MCCFRb iterations of the bounded policy.")
_EPISODES = flags.DEFINE_integer("episodes", 4_000_000,
                                 "Scoring episodes per player.")
_SEED = flags.DEFINE_integer("seed", 0, "Seed of the policy and the bound.")
_OUT_DIR = flags.DEFINE_string("out_dir", "experiments/results/bound",
                               "Output folder.")
_THREADS = flags.DEFINE_integer(
    "threads", 1, "2 trains the two responders side by side on two "
    "threads, each for the whole budget.", lower_bound=1, upper_bound=2)


def measure(game, budgets, policy_iterations, episodes, seed, threads=1):
  """Rows of the table for one game."""
  solver = mccfrb.MCCFRbSolver(game, seed=seed)
  solver.run(policy_iterations)
  table = solver.average_policy_table()
  exact = mccfrb.exploitability(solver.tree, table)
  rows = []
  mine = [own_infosets(solver.tree, p) for p in (0, 1)]
  for budget in budgets:
    result = mccfrb.approximate_exploitability(
        game, table, seconds=budget, seed=seed, episodes=episodes,
        threads=threads)
    # The responders' exact values: the bound without its Monte Carlo noise.
    values = []
    for p in (0, 1):
      mixed = table.copy()
      mixed[mine[p]] = 0.0
      mixed[mine[p], result.responders[p][mine[p]]] = 1.0
      value0 = mccfrb.expected_value(solver.tree, mixed)
      values.append(value0 if p == 0 else solver.tree.utility_sum - value0)
    responders_exact = (sum(values) - solver.tree.utility_sum) / 2.0
    print(f"{game} {budget:g} s: {result} exact {exact:.4f} ratio "
          f"{result.exploitability / exact:.3f}; responders' exact value "
          f"{responders_exact:.4f}", flush=True)
    rows.append(dict(
        game=game, policy_iterations=policy_iterations, seconds=budget,
        exact=exact, bound=result.exploitability, low=result.low,
        high=result.high, ratio=result.exploitability / exact,
        responders_exact=responders_exact,
        responders_ratio=responders_exact / exact,
        walks=sum(result.iterations), episodes=result.episodes,
        threads=threads))
  return rows


def own_infosets(tree, player):
  """The infosets of `player`."""
  return np.flatnonzero(tree.infoset_player == player)


def plot(frame, path):
  import matplotlib  # pylint: disable=import-outside-toplevel
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt  # pylint: disable=import-outside-toplevel
  names = list(dict.fromkeys(frame.game))
  fig, axes = plt.subplots(1, len(names), figsize=(4.2 * len(names), 3.6),
                           squeeze=False)
  for ax, name in zip(axes[0], names):
    rows = frame[frame.game == name]
    exact = rows.exact.iloc[0]
    ax.axhline(exact, color="black", linestyle="--",
               label=f"exact {exact:.4f}")
    ax.axhspan(0.9 * exact, exact, color="0.9", label="within 10%")
    ax.errorbar(rows.seconds, rows.bound,
                yerr=[rows.bound - rows.low, rows.high - rows.bound],
                marker="o", capsize=3, label="bound, 95% interval")
    ax.plot(rows.seconds, rows.responders_exact, "x", color="tab:red",
            label="responders' exact value")
    ax.set_xscale("log")
    ax.set_xlabel("best-response training, s\n" + (
        "(each responder, side by side)" if rows.threads.iloc[0] == 2
        else "(both responders)"))
    ax.set_ylabel("exploitability")
    ax.set_title(f"{name}\nMCCFRb policy, "
                 f"{rows.policy_iterations.iloc[0]:,} it.", fontsize=9)
    ax.legend(fontsize=8, loc="lower right")
  fig.tight_layout()
  fig.savefig(path, dpi=120)


def main(argv):
  del argv
  common.check_writable_dir(_OUT_DIR.value)
  budgets = [float(s) for s in _SECONDS.value]
  rows = []
  for game in common.rejoin_game_list(_GAMES.value):
    rows += measure(game, budgets, _POLICY_ITERATIONS.value, _EPISODES.value,
                    _SEED.value, _THREADS.value)
  frame = pd.DataFrame(rows)
  frame.to_csv(os.path.join(_OUT_DIR.value, "bound.csv"), index=False)
  plot(frame, os.path.join(_OUT_DIR.value, "bound.png"))


if __name__ == "__main__":
  app.run(main)
