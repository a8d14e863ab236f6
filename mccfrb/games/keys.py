"""Keys that many histories share, per node of a compiled tree: the
situation, the public state and the observation (baselines keyed by them,
kernels/baselines.py).

Each function returns int64[N], a label per node of a `GameTree` (0 ..
number of distinct keys - 1), computed once. Chance and terminal nodes get
labels too (a baseline is kept per edge of every node on the path).

- `situation_ids`: what the rest of the game depends on, not how it was
  reached. Where the game has a native engine, its `situation_hash`
  (games/engines/protocol.py) walked over the engine's tree, which is
  numbered as `compile_tree` numbers the compiled tree; so a situation
  baseline on the tree equals the engine's run bit for bit. Elsewhere the
  subtree's shape (`shape_ids`): two nodes share a label exactly when the
  games below them are the same (kinds, players, actions, chance
  probabilities and returns, node by node), the coarsest key with that
  property.
- `public_ids`: the public state with the depth (the engine's
  `public_hash` where the game has one, else `mccfrb.public_states`).
- `observation_ids`: both players' OpenSpiel observation strings, the
  acting player and the depth (games whose observation strings exist).
"""

import numpy as np
from numba import njit

from mccfrb import games
from mccfrb.games import engines
from mccfrb.games import public as public_lib
from mccfrb.games.engines import check
from mccfrb.games.engines.common import hash_step

_SALT = 0x5A5A5A5A


def _engine_walk(tree, game):
  """The engine's enumerated tree (check.enumerate_tree) when the game has
  an engine whose tree is the compiled one, else None."""
  if game is None or not games.is_two_player_zero_sum(game):
    return None  # Engines play two-player zero-sum games.
  engine = engines.engine_for(game)
  return None if engine is None else check.enumerate_like(engine, tree)


def situation_ids(tree, game=None):
  """The situation of every node (module docstring): the engine's key where
  `game` has an engine, else the subtree's shape."""
  walked = _engine_walk(tree, game)
  if walked is not None:
    return check.key_labels(walked.situation_key)
  return shape_ids(tree)


@njit(cache=True)
def _shape_hashes(kind, player, child_start, num_children, prob_bits,
                  utility_bits, actions, out):
  """out[n]: a 128-bit hash of the game below node n (children have larger
  ids than their parent, so one pass from the last node up); prob_bits,
  utility_bits: the float64 bits of edge_prob and of every player's
  return, as int64."""
  for n in range(kind.shape[0] - 1, -1, -1):
    w = np.int64(kind[n]) + 4 * (np.int64(player[n]) + 1)
    a = hash_step(np.uint64(0x243F6A8885A308D3), w)
    b = hash_step(np.uint64(0x13198A2E03707344), w ^ _SALT)
    if kind[n] == 2:
      for p in range(utility_bits.shape[1]):
        a = hash_step(a, utility_bits[n, p])
        b = hash_step(b, utility_bits[n, p] ^ _SALT)
    s = child_start[n]
    for j in range(num_children[n]):
      c = s + j
      for word in (actions[c], prob_bits[c], np.int64(out[c, 0]),
                   np.int64(out[c, 1])):
        a = hash_step(a, word)
        b = hash_step(b, word ^ _SALT)
    out[n, 0] = a
    out[n, 1] = b


def shape_ids(tree):
  """Labels equal exactly when the games below two nodes are the same (up
  to 128-bit hash collisions): the same kinds, acting players, OpenSpiel
  actions, chance probabilities and returns (every player's), node by
  node."""
  utility = tree.payoffs
  if utility.ndim == 1:
    utility = utility[:, None]
  out = np.zeros((tree.num_nodes, 2), dtype=np.uint64)
  _shape_hashes(tree.node_kind, tree.node_player, tree.child_start,
                tree.num_children,
                np.ascontiguousarray(tree.edge_prob,
                                     dtype=np.float64).view(np.int64),
                np.ascontiguousarray(utility, dtype=np.float64).view(np.int64),
                tree.edge_actions(), out)
  return check.key_labels(out)


def public_ids(tree, game):
  """The public state (with the depth) of every node: the engine's
  `public_hash` where the game has an engine, else the public tree."""
  walked = _engine_walk(tree, game)
  if walked is not None:
    keys = walked.public_key.copy()
    keys[:, 1] ^= walked.node_depth.astype(np.uint64) * np.uint64(
        0x9E3779B97F4A7C15)
    return check.key_labels(keys)
  return public_lib.public_states(tree, game=game).node_public_state.astype(
      np.int64)


def check_observation(game):
  """Raises ValueError unless the game gives observation strings."""
  if not game.get_type().provides_observation_string:
    raise ValueError(
        f"{game} has no observation strings (OpenSpiel's "
        "observation_string); baseline='observation' needs them. Use a "
        "situation or infoset baseline.")


def observation_key(state, depth):
  """The observation key of a pyspiel state: (acting player, depth, both
  players' observation strings) as a hashable tuple."""
  if state.is_terminal():
    return (-4, depth)
  strings = tuple(state.observation_string(p)
                  for p in range(state.num_players()))
  return (state.current_player(), depth) + strings


def observation_ids(tree, game):
  """The observation key (`observation_key`) of every node, labelled 0..;
  a walk of pyspiel states in the order `compile_tree` numbers nodes."""
  check_observation(game)
  n = tree.num_nodes
  labels = np.zeros(n, dtype=np.int64)
  ids = {}
  stack = [(0, game.new_initial_state(), 0)]
  visited = 0
  while stack:
    nid, state, d = stack.pop()
    start, actions = public_lib.expand_checked(game, tree, nid, state)
    visited += 1
    labels[nid] = ids.setdefault(observation_key(state, d), len(ids))
    for k in range(len(actions) - 1, -1, -1):
      stack.append((start + k, state.child(actions[k]), d + 1))
  if visited != n:
    raise ValueError(f"The GameTree does not match {game}: the game has "
                     f"{visited} nodes and the tree {n}.")
  return labels


def node_key_ids(name, tree, game):
  """int64[N] per-node key labels of baseline key `name` ("situation",
  "public" or "observation") on a compiled tree."""
  if name == "situation":
    return situation_ids(tree, game)
  if name == "public":
    return public_ids(tree, game)
  if name == "observation":
    return observation_ids(tree, game)
  raise ValueError(f"no per-node key {name!r}")

