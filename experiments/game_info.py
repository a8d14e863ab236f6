r"""Prints the size of compiled game trees and the exploitability of uniform play.

  python -m experiments.game_info
  python -m experiments.game_info --games=kuhn_poker,leduc_poker
  python -m experiments.game_info --partitions=observer,common_knowledge

With --partitions, also the public states of each partition
(`mccfrb.public_states`): non-terminal / all, and the seconds to build them
on the compiled tree.
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
from experiments.common import GOOFSPIEL4
from experiments.common import rejoin_game_list
from mccfrb.games import tree as tree_lib

PROGRAM = "game_info"
_GAMES = flags.DEFINE_list(
    "games", ["leduc_poker", GOOFSPIEL4, "matching_pennies"],
    "OpenSpiel game strings (commas inside parentheses are fine).")
_MAX_NODES = flags.DEFINE_integer(
    "max_nodes", tree_lib.DEFAULT_MAX_NODES,
    "Size guard of compile_tree (default: what the available memory allows, "
    "mccfrb.games.tree_size.default_max_nodes).")
_PARTITIONS = flags.DEFINE_list(
    "partitions", [], "Public-state partitions to count (observer, "
    "common_knowledge, auto); none by default.")


def describe(game_string, max_nodes, partitions=()):
  """One row of facts about a compiled game."""
  start = time.perf_counter()
  tree = mccfrb.compile_tree(game_string, max_nodes=max_nodes)
  seconds = time.perf_counter() - start
  uniform = mccfrb.uniform_table(tree)
  public = {}
  for partition in partitions:
    start = time.perf_counter()
    try:
      states = mccfrb.public_states(tree, partition=partition, game=game_string)
    except ValueError as e:  # E.g. no public observer.
      public[f"{partition}_states"] = f"refused: {str(e)[:40]}"
      continue
    public[f"{partition}_s"] = round(time.perf_counter() - start, 2)
    public[f"{partition}_states"] = (
        f"{int((~states.ps_terminal).sum())} / {states.num_public_states}")
  return {
      "game": game_string,
      "histories": tree.num_nodes,
      "terminals": int(np.sum(tree.node_kind == tree_lib.TERMINAL)),
      "infosets_p0": int(np.sum(tree.infoset_player == 0)),
      "infosets_p1": int(np.sum(tree.infoset_player == 1)),
      # tree.max_actions counts chance outcomes too (Kuhn: 3 deals).
      "max_player_actions": int(tree.infoset_num_actions.max(initial=0)),
      "max_chance_outcomes": int(np.max(
          tree.num_children[tree.node_kind == tree_lib.CHANCE], initial=0)),
      "compile_s": round(seconds, 3),
      "tree_MiB": round(tree.nbytes() / 2**20, 2),
      "bytes_per_node": round(tree.nbytes() / tree.num_nodes, 1),
      "uniform_exploitability": mccfrb.exploitability(tree, uniform),
      **public,
  }


def main(argv):
  if len(argv) > 1:
    common.fail(PROGRAM, f"unexpected arguments {argv[1:]}")
  try:
    rows = [describe(g, _MAX_NODES.value, _PARTITIONS.value)
            for g in rejoin_game_list(_GAMES.value)]
  except ValueError as e:
    common.fail(PROGRAM, e)
  with pd.option_context("display.max_colwidth", 40, "display.width", 200):
    print(pd.DataFrame(rows).to_string(index=False))


if __name__ == "__main__":
  app.run(main)
