"""Exact evaluation of strategy profiles on the compiled tree.

NashConv = BR_0(sigma_1) + BR_1(sigma_0) - (u_0 + u_1), and exploitability is
NashConv / 2, as OpenSpiel defines them for two-player games. On games with
more players or general-sum returns (general trees), NashConv is
sum_i (BR_i(sigma_{-i}) - u_i(sigma)), OpenSpiel's `nash_conv`; their
exploitability is refused, as OpenSpiel's is. Where no exact value can be
computed, `head_to_head` scores two policies against each other by Monte
Carlo (mccfrb/evaluation/head_to_head.py).
"""

import functools

import numpy as np
import pyspiel

from mccfrb import games
from mccfrb.tables import policy as policy_lib
from mccfrb.games import walk_size
from mccfrb.evaluation.head_to_head import HeadToHead  # pylint: disable=unused-import
from mccfrb.evaluation.head_to_head import head_to_head  # pylint: disable=unused-import
from mccfrb.kernels import schedule as schedule_lib
from mccfrb.games import tree as tree_lib
from mccfrb.kernels import exact
from mccfrb.solvers import base
from mccfrb.solvers import engine as engine_solvers
from mccfrb.solvers.outcome import visit_probabilities


@functools.lru_cache(maxsize=8)
def _compile_cached(game_string):
  return tree_lib.compile_tree(pyspiel.load_game(game_string))


def as_tree(game_or_tree):
  """The `GameTree` of a game string, `pyspiel.Game` or `GameTree`.

  Compiled trees of games are cached by their game string (8 most recent).
  """
  return _game_and_tree(game_or_tree)[1]


def _game_and_tree(game_or_tree):
  """(pyspiel.Game or None for a bare tree, GameTree), loading the game once."""
  if isinstance(game_or_tree, tree_lib.GameTree):
    return None, game_or_tree
  game = games.load_game(game_or_tree, general=True)
  walk_size.check_exact_walk(game)  # Size first: before any other error.
  try:
    return game, _compile_cached(str(game))
  except ValueError as e:
    raise ValueError(
        f"{e} Exact evaluation walks every history; a game too large for "
        "that is scored head to head instead (mccfrb.head_to_head: a "
        "policy against another in both seats, with a confidence "
        "interval).") from None


def best_response_values(tree, strategy, threads=1):
  """[BR_0(sigma_1), BR_1(sigma_0)] for an mccfrb strategy table; on a
  general tree [BR_i(sigma_{-i}) for every player i], on one thread.

  Args:
    tree: a `GameTree`.
    strategy: float64[I, A].
    threads: numba threads (default 1; at most numba's pool,
      NUMBA_NUM_THREADS): the subtrees of the tree's schedule and the
      infosets of a level are shared out; the values do not depend on the
      thread count.
  """
  base.check_threads(threads, None)
  n, i = tree.num_nodes, tree.num_infosets
  opp_reach, values = np.empty(n), np.empty(n)
  cfv = np.empty((i, tree.max_actions))
  best_action = np.zeros(i, dtype=np.int32)
  strategy = np.ascontiguousarray(strategy, dtype=np.float64)
  if tree.is_general:
    own_level = np.empty(n, dtype=np.int32)
    infoset_level = np.empty(i, dtype=np.int32)
    return np.array([
        exact.best_response_value(
            *tree.kernel_args(), tree.utility_sum, tree.infoset_num_actions,
            strategy, p, opp_reach, own_level, infoset_level, best_action,
            cfv, values) for p in range(tree.num_players)])
  schedule = schedule_lib.schedule_of(tree)
  with base.numba_threads(threads):
    return np.array([
        exact.best_response_levels(
            *schedule.tree, tree.utility_sum, tree.infoset_num_actions,
            strategy, p, *schedule.best_response_args(p), opp_reach, values,
            cfv, best_action) for p in (0, 1)])


def expected_value(tree, strategy):
  """Player 0's expected utility when both play `strategy`."""
  values = np.empty(tree.num_nodes)
  exact.node_values(*tree.kernel_args(), strategy, values)
  return float(values[0])


def node_values(tree, strategy):
  """Player 0's expected utility below every node, float64[N]."""
  values = np.empty(tree.num_nodes)
  exact.node_values(*tree.kernel_args(), strategy, values)
  return values


def counterfactual_values(tree, strategy):
  """v_i(I, a) for every infoset-action, in the acting player's utility."""
  cfv = np.empty((tree.num_infosets, tree.max_actions))
  exact.counterfactual_values(
      *tree.kernel_args(), tree.utility_sum, strategy,
      np.empty((tree.num_nodes, 3)), np.empty(tree.num_nodes), cfv)
  return cfv


def counterfactual_regrets(tree, strategy):
  """r(I, a) = v(I, a) - sum_b sigma(I, b) v(I, b); padding columns are 0."""
  cfv = counterfactual_values(tree, strategy)
  regrets = cfv - np.sum(strategy * cfv, axis=1, keepdims=True)
  return np.where(tree.legal_mask(), regrets, 0.0)


def nash_conv(game_or_tree, policy, threads=1):
  """NashConv of `policy` (sum of both players' best-response gains).

  Args:
    game_or_tree: game string, `pyspiel.Game` or compiled `GameTree`.
    policy: an mccfrb table, an OpenSpiel `TabularPolicy`, a pyspiel policy
      or a dict {information state string: [(action, prob)]}; or the
      `EnginePolicy` of a sampling solver on an engine (its
      `average_policy()`), valued by the streaming walk of the public tree
      without compiling the game (goofspiel 6; refused, in one line,
      where the walk would not fit in memory or time).
    threads: numba threads (see `best_response_values`); for an
      `EnginePolicy`, the streaming walk's Python threads, each walking
      public subtrees. The value does not depend on it.
  """
  base.check_threads(threads, None)
  if isinstance(policy, engine_solvers.EnginePolicy):
    # A policy of an engine solver: the streaming walk of the public tree,
    # no compiled tree (mccfrb/solvers/stream.py), on games of any size.
    return engine_solvers.engine_policy_nash_conv(policy, threads=threads)
  game, tree = _game_and_tree(game_or_tree)
  strategy = policy_lib.table_from_policy(tree, policy, game=game)
  best = best_response_values(tree, strategy, threads).sum()
  if tree.is_general:
    return float(best - policy_values(tree, strategy).sum())
  return float(best - tree.utility_sum)


def best_response(game_or_tree, policy, player_id):
  """One player's best response, as OpenSpiel's `exploitability.
  best_response` reports it (any number of players, general-sum too).

  Args:
    game_or_tree, policy: as for `nash_conv`.
    player_id: the responder.

  Returns:
    A dict: "best_response_action" {information state string of every
    infoset of `player_id`: its best action (the lowest-numbered of equal
    ones), also where the profile never reaches it}, "best_response_value",
    "on_policy_value", "on_policy_values" (every player's, float64[P]) and
    "nash_conv" (best_response_value - on_policy_value). OpenSpiel's
    per-state entries (best_response_state_value, info_sets) are left out:
    mccfrb's tables are per infoset.
  """
  game, tree = _game_and_tree(game_or_tree)
  if (isinstance(player_id, bool)
      or not isinstance(player_id, (int, np.integer))
      or not 0 <= player_id < tree.num_players):
    raise ValueError(f"player_id must be an integer in 0 .. "
                     f"{tree.num_players - 1}, got {player_id!r}.")
  strategy = policy_lib.table_from_policy(tree, policy, game=game)
  n, i = tree.num_nodes, tree.num_infosets
  best_action = np.zeros(i, dtype=np.int32)
  value = exact.best_response_value(
      *tree.kernel_args(), tree.utility_sum, tree.infoset_num_actions,
      strategy, int(player_id), np.empty(n), np.empty(n, dtype=np.int32),
      np.empty(i, dtype=np.int32), best_action,
      np.empty((i, tree.max_actions)), np.empty(n))
  on_policy = policy_values(tree, strategy)
  keys = tree.infoset_strings()
  actions = {keys[k]: int(tree.infoset_actions[k, best_action[k]])
             for k in np.flatnonzero(tree.infoset_player == player_id)}
  return {"best_response_action": actions,
          "best_response_value": float(value),
          "on_policy_value": float(on_policy[player_id]),
          "on_policy_values": on_policy,
          "nash_conv": float(value - on_policy[player_id])}


def policy_values(tree, strategy):
  """float64[P]: every player's expected utility when all play `strategy`."""
  values = np.empty(tree.num_nodes)
  out = np.empty(tree.num_players)
  for p in range(tree.num_players):
    exact.player_values(*tree.kernel_args(), tree.utility_sum, p, strategy,
                        values)
    out[p] = values[0]
  return out


def exploitability(game_or_tree, policy, threads=1):
  """NashConv / 2, OpenSpiel's `exploitability` for two-player zero- and
  constant-sum games; ValueError on others (use `nash_conv`).

  Args:
    game_or_tree, policy, threads: as for `nash_conv`.
  """
  if isinstance(game_or_tree, tree_lib.GameTree):
    if game_or_tree.is_general:
      raise ValueError(
          "exploitability is defined for two-player zero-sum games, as "
          f"OpenSpiel's; this tree has {game_or_tree.num_players} players "
          "or general-sum returns. Use nash_conv.")
  else:
    games.refuse_general(games.load_game(game_or_tree, general=True),
                         "exploitability")
  return nash_conv(game_or_tree, policy, threads) / 2.0


def expected_visits(tree, strategy, epsilon, episodes, explore=()):
  """Expected number of episodes visiting each infoset under outcome sampling.

  The owner p of an infoset updates in `episodes[p]` episodes, sampling with
  xi = eps-uniform (or eps times the flat `explore` strategy, balanced
  exploration) + (1 - eps) sigma at its own nodes and sigma elsewhere
  (docs/pages/algorithms.md); the result is episodes[p] * sum_{h in I} q(h).
  """
  nodes, q = visit_probabilities(tree, strategy, epsilon, explore)
  visits = np.zeros(tree.num_infosets)
  owner = tree.node_player[nodes]
  np.add.at(visits, tree.node_infoset[nodes],
            np.asarray(episodes)[owner] * q)
  return visits
