"""Checks that a native engine plays its OpenSpiel game (see `protocol`).

Generic over the protocol, for every engine:

- `enumerate_tree` walks the engine's whole tree in numba and numbers the
  nodes exactly as `tree.compile_tree` numbers the compiled tree;
- `compare_with_tree` asserts that tree equal to a compiled `GameTree`:
  structure, players, actions, chance probabilities, utilities, the
  infoset partition and the public states;
- `compare_playouts` steps the engine and a pyspiel state side by side
  along random play-outs, for games too large to compile.

Each raises AssertionError naming the first node (or play-out step) and the
field that differ.
"""

from typing import NamedTuple

import numba
from numba import njit
from numba.core import types
import numpy as np
import pyspiel

from mccfrb.games import tree as tree_lib
from mccfrb.games.engines import protocol
from mccfrb.games.engines.common import CHANCE
from mccfrb.games.engines.common import call_literal
from mccfrb.games.engines.common import TERMINAL

# `enumerate_tree`'s default bound on the number of nodes.
DEFAULT_MAX_NODES = 50_000_000
# Play-outs simulated by one numba call of `compare_playouts`.
PLAYOUT_BATCH = 256
# Tolerance on chance probabilities.
PROB_TOLERANCE = 1e-15
# Relative tolerance on utilities.
UTILITY_TOLERANCE = 1e-12

# Walk status codes.
_OK = 0
_TOO_MANY = 1
_TOO_DEEP = 2
_NO_MOVES = 3
_BAD_TERMINAL_VALUE = 4  # terminal_value disagrees with playing the move.

_OPENSPIEL_TERMINAL = int(pyspiel.PlayerId.TERMINAL)


class EngineTree(NamedTuple):
  """An engine's whole game tree as flat arrays, numbered as
  `tree.compile_tree` numbers the compiled tree.

  Attributes:
    node_kind: int8[N], tree.CHANCE (0), tree.DECISION (1) or
      tree.TERMINAL (2).
    node_player: int8[N], acting player at decisions, -1 elsewhere.
    child_start: int64[N], id of the first child (0 for terminals).
    num_children: int32[N], number of children (0 for terminals).
    edge_prob: float64[N], probability of the chance outcome into the node
      when its parent is a chance node, 1.0 otherwise.
    utility: float64[N], player 0's return at terminals (0 elsewhere).
    node_action: int64[N], OpenSpiel's action on the edge into the node
      (-1 at the root).
    node_depth: int32[N], moves from the root.
    infoset_key: uint64[N, 2], the acting player's `infoset_hash` at
      decisions, (0, 0) elsewhere.
    public_key: uint64[N, 2], `public_hash` of every node.
    situation_key: uint64[N, 2], `situation_hash` of every node.
    max_depth: the most moves on a root-to-terminal path.
    max_moves: the most children of a node.
  """
  node_kind: np.ndarray
  node_player: np.ndarray
  child_start: np.ndarray
  num_children: np.ndarray
  edge_prob: np.ndarray
  utility: np.ndarray
  node_action: np.ndarray
  node_depth: np.ndarray
  infoset_key: np.ndarray
  public_key: np.ndarray
  situation_key: np.ndarray
  max_depth: int
  max_moves: int

  @property
  def num_nodes(self):
    return len(self.node_kind)


@njit(cache=True)
def _record(code, params, state, nid, depth, kind, player, utility,
            node_depth, infoset_key, public_key, situation_key):
  """Writes node `nid`'s own fields from its state; returns its player."""
  p = protocol.player(code, params, state)
  node_depth[nid] = depth
  if p == TERMINAL:
    kind[nid] = tree_lib.TERMINAL
    player[nid] = -1
    utility[nid] = protocol.returns0(code, params, state)
  elif p == CHANCE:
    kind[nid] = tree_lib.CHANCE
    player[nid] = -1
  else:
    kind[nid] = tree_lib.DECISION
    player[nid] = p
    a, b = protocol.infoset_hash(code, params, state, p)
    infoset_key[nid, 0] = a
    infoset_key[nid, 1] = b
  a, b = protocol.public_hash(code, params, state)
  public_key[nid, 0] = a
  public_key[nid, 1] = b
  a, b = protocol.situation_hash(code, params, state)
  situation_key[nid, 0] = a
  situation_key[nid, 1] = b
  return p


@njit(cache=True)
def _walk(code, params, state_size, max_depth, max_nodes, record, kind,
          player, child_start, num_children, edge_prob, utility, action,
          node_depth, infoset_key, public_key, situation_key):
  """Depth-first walk of the engine's tree with an explicit stack.

  A node's children get the next free ids when it is expanded, and a
  non-terminal child is expanded as soon as it is reached (preorder), as in
  `tree._walk`. With `record`, writes every node's fields into the arrays
  (sized to the node count of a first walk without it).

  Returns:
    (number of nodes, status, deepest depth reached, node where the walk
    stopped on an error).
  """
  numba.literally(code)
  levels = max_depth + 1
  states = np.zeros((levels, state_size), dtype=np.int64)
  start = np.zeros(levels, dtype=np.int64)
  count = np.zeros(levels, dtype=np.int64)
  nxt = np.zeros(levels, dtype=np.int64)
  parent_player = np.zeros(levels, dtype=np.int64)
  protocol.reset(code, params, states[0])
  p = protocol.player(code, params, states[0])
  if record:
    _record(code, params, states[0], 0, 0, kind, player, utility,
            node_depth, infoset_key, public_key, situation_key)
    action[0] = -1
    edge_prob[0] = 1.0
  if p == TERMINAL:
    return 1, _OK, 0, 0
  m = protocol.num_moves(code, params, states[0])
  if m <= 0:
    return 1, _NO_MOVES, 0, 0
  next_id = 1 + m
  if next_id > max_nodes:
    return next_id, _TOO_MANY, 0, 0
  if record:
    child_start[0] = 1
    num_children[0] = m
  start[0] = 1
  count[0] = m
  parent_player[0] = p
  deepest = 0
  d = 0
  while d >= 0:
    j = nxt[d]
    if j == count[d]:
      d -= 1
      continue
    nxt[d] = j + 1
    cid = start[d] + j
    child = states[d + 1]
    child[:] = states[d]
    protocol.apply(code, params, child, j)
    if d + 1 > deepest:
      deepest = d + 1
    if record:
      action[cid] = protocol.move_action(code, params, states[d], j)
      if parent_player[d] == CHANCE:
        edge_prob[cid] = protocol.chance_prob(code, params, states[d], j)
      else:
        edge_prob[cid] = 1.0
      p = _record(code, params, child, cid, d + 1, kind, player, utility,
                  node_depth, infoset_key, public_key, situation_key)
    else:
      p = protocol.player(code, params, child)
    leaf, value = protocol.terminal_value(code, params, states[d], j)
    if leaf and (p != TERMINAL
                 or value != protocol.returns0(code, params, child)):
      return next_id, _BAD_TERMINAL_VALUE, deepest, cid
    if p == TERMINAL:
      continue
    if d + 1 >= max_depth:
      return next_id, _TOO_DEEP, deepest, cid
    m = protocol.num_moves(code, params, child)
    if m <= 0:
      return next_id, _NO_MOVES, deepest, cid
    d += 1
    start[d] = next_id
    count[d] = m
    nxt[d] = 0
    parent_player[d] = p
    if record:
      child_start[cid] = next_id
      num_children[cid] = m
    next_id += m
    if next_id > max_nodes:
      return next_id, _TOO_MANY, deepest, cid
  return next_id, _OK, deepest, 0


def _walk_arrays(n):
  """The per-node arrays of a walk of `n` nodes."""
  return (np.zeros(n, dtype=np.int8), np.full(n, -1, dtype=np.int8),
          np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int32),
          np.ones(n, dtype=np.float64), np.zeros(n, dtype=np.float64),
          np.full(n, -1, dtype=np.int64), np.zeros(n, dtype=np.int32),
          np.zeros((n, 2), dtype=np.uint64), np.zeros((n, 2), dtype=np.uint64),
          np.zeros((n, 2), dtype=np.uint64))


def enumerate_tree(engine, max_nodes=DEFAULT_MAX_NODES):
  """The engine's whole game tree, numbered as `tree.compile_tree` does.

  Two walks in numba: one counts the nodes, the next fills arrays of that
  size (about 75 bytes a node).

  Args:
    engine: an `Engine`.
    max_nodes: refuse trees with more nodes than this.

  Returns:
    The `EngineTree`.

  Raises:
    ValueError: more than `max_nodes` nodes; a non-terminal node at
      `engine.max_depth` moves from the root; a non-terminal node without
      moves.
  """
  walk_args = (engine.code, engine.params, engine.state_size,
               engine.max_depth, max_nodes)
  n, status, _, where = call_literal(_walk, *walk_args, False,
                                     *_walk_arrays(1))
  if status == _TOO_MANY:
    raise ValueError(f"{engine.name} engine ({engine.game}) has more than "
                     f"max_nodes={max_nodes} nodes; pass a larger max_nodes.")
  if status == _TOO_DEEP:
    raise ValueError(
        f"{engine.name} engine: node {where} is not terminal at the engine's "
        f"max_depth={engine.max_depth} moves from the root.")
  if status == _NO_MOVES:
    raise ValueError(f"{engine.name} engine: node {where} is neither terminal "
                     "nor has moves.")
  if status == _BAD_TERMINAL_VALUE:
    raise ValueError(
        f"{engine.name} engine: terminal_value of the move into node "
        f"{where} says it ends the game with another return than playing "
        "it (or the node is not terminal).")
  arrays = _walk_arrays(n)
  n2, status, deepest, _ = call_literal(_walk, *walk_args, True, *arrays)
  assert (n2, status) == (n, _OK), (n2, status, n)
  (kind, player, child_start, num_children, edge_prob, utility, action,
   depth, infoset_key, public_key, situation_key) = arrays
  return EngineTree(
      node_kind=kind, node_player=player, child_start=child_start,
      num_children=num_children, edge_prob=edge_prob, utility=utility,
      node_action=action, node_depth=depth, infoset_key=infoset_key,
      public_key=public_key, situation_key=situation_key,
      max_depth=int(deepest),
      max_moves=int(num_children.max()))


def enumerate_like(engine, tree):
  """`enumerate_tree` of the engine when its tree is the compiled `tree`
  (node count, kinds and children equal), else None: callers then read
  keys per node of the compiled tree from the engine's walk."""
  walked = enumerate_tree(engine, max_nodes=tree.num_nodes)
  if (walked.num_nodes != tree.num_nodes
      or not np.array_equal(walked.node_kind, tree.node_kind)
      or not np.array_equal(walked.num_children, tree.num_children)):
    return None
  return walked


def key_labels(keys):
  """int64 labels 0.. of the distinct rows of a uint64[N, 2] key array."""
  labels = np.zeros(len(keys), dtype=np.int64)
  if not len(keys):
    return labels
  order = np.lexsort((keys[:, 1], keys[:, 0]))
  first, second = keys[order, 0], keys[order, 1]
  new = np.empty(len(keys), dtype=bool)
  new[0] = False
  np.not_equal(first[1:], first[:-1], out=new[1:])
  new[1:] |= second[1:] != second[:-1]
  labels[order] = np.cumsum(new)
  return labels


def _first_split(a, b):
  """Positions (i, k), i < k, with a[i] == a[k] and b[i] != b[k] (the
  smallest such k, i the first position of its class of `a`), or None:
  None means every class of `a` lies inside a class of `b`."""
  _, first, inverse = np.unique(a, return_index=True, return_inverse=True)
  head = first[inverse.ravel()]
  bad = np.flatnonzero(b != b[head])
  if not len(bad):
    return None
  k = int(bad[0])
  return int(head[k]), k


def _same_partition(what, nodes, ours, theirs, our_name, their_name):
  """Asserts that labels `ours` and `theirs` of `nodes` induce one
  partition, naming the first two nodes on which they disagree."""
  for a, b, na, nb in ((theirs, ours, their_name, our_name),
                       (ours, theirs, our_name, their_name)):
    split = _first_split(a, b)
    if split is not None:
      i, k = split
      raise AssertionError(
          f"{what}: nodes {nodes[i]} and {nodes[k]} share {na} but not "
          f"{nb} (first node where the partitions differ: {nodes[k]}).")


def _assert_field(name, ours, theirs, atol=None, rtol=None):
  """Asserts equal per-node arrays (within `atol` absolute or `rtol`
  relative to max(1, |theirs|)), naming the first differing node."""
  if atol is not None:
    equal = np.abs(ours - theirs) <= atol
  elif rtol is not None:
    equal = np.abs(ours - theirs) <= rtol * np.maximum(1.0, np.abs(theirs))
  else:
    equal = ours == theirs
  bad = np.flatnonzero(~equal)
  if len(bad):
    n = int(bad[0])
    raise AssertionError(
        f"node {n}: {name} of the engine is {ours[n].item()!r}, the tree's "
        f"{theirs[n].item()!r} ({len(bad)} nodes differ).")


def compare_with_tree(engine, tree, public_tree=None, enumerated=None):
  """Asserts that the engine plays the game of a compiled tree.

  Checks, node by node in `tree`'s numbering: node kind, acting player,
  children (start, count), the OpenSpiel action into every node
  (`tree.edge_actions()`), chance probabilities (to PROB_TOLERANCE),
  terminal utilities (relative UTILITY_TOLERANCE), the engine's max_depth
  and max_moves; that the engine's infoset keys and the tree's infoset ids
  partition the decision nodes alike; that the public keys keep the acting
  player and the depth constant, hold every infoset in one public state
  and, given `public_tree`, partition the nodes as it does.

  Args:
    engine: an `Engine`.
    tree: the `GameTree` of `engine.game` (`tree.compile_tree`).
    public_tree: optional `public.PublicTree` of `tree` (e.g. from
      `public.public_states(tree, game=engine.game)`): then the public keys
      must give exactly its partition.
    enumerated: the engine's `EngineTree` if already enumerated.

  Returns:
    The `EngineTree`.

  Raises:
    AssertionError: the first difference, naming the node and the field.
  """
  e = enumerated
  if e is None:
    limit = 2 * tree.num_nodes + 1000
    try:
      e = enumerate_tree(engine, max_nodes=limit)
    except ValueError as err:
      raise AssertionError(f"the engine does not enumerate as the tree of "
                           f"{tree.num_nodes} nodes: {err}") from err
  # Fields on the nodes both have first: the first structural difference
  # shows there, in preorder numbering.
  m = min(e.num_nodes, tree.num_nodes)
  ours, theirs = e.num_children[:m], tree.num_children[:m].astype(np.int32)
  _assert_field("node_kind", e.node_kind[:m], tree.node_kind[:m])
  _assert_field("node_player", e.node_player[:m], tree.node_player[:m])
  _assert_field("num_children", ours, theirs)
  inner = theirs > 0
  _assert_field("child_start", np.where(inner, e.child_start[:m], 0),
                np.where(inner, tree.child_start[:m], 0).astype(np.int64))
  _assert_field("action (edge into the node)", e.node_action[:m],
                tree.edge_actions()[:m])
  _assert_field("edge_prob", e.edge_prob[:m], tree.edge_prob[:m],
                atol=PROB_TOLERANCE)
  _assert_field("utility", e.utility[:m], tree.utility[:m],
                rtol=UTILITY_TOLERANCE)
  if e.num_nodes != tree.num_nodes:
    raise AssertionError(f"the engine has {e.num_nodes} nodes, the tree "
                         f"{tree.num_nodes}.")
  if e.max_depth != engine.max_depth or e.max_depth + 1 != tree.max_depth:
    raise AssertionError(
        f"max_depth: the engine declares {engine.max_depth} moves, its tree "
        f"has {e.max_depth}, the compiled tree {tree.max_depth - 1}.")
  if e.max_moves != engine.max_moves:
    raise AssertionError(f"max_moves: the engine declares {engine.max_moves},"
                         f" its tree has {e.max_moves}.")
  if abs(engine.utility_sum - tree.utility_sum) > UTILITY_TOLERANCE:
    raise AssertionError(f"utility_sum: the engine's {engine.utility_sum}, "
                         f"the tree's {tree.utility_sum}.")

  decision = np.flatnonzero(tree.node_kind == tree_lib.DECISION)
  keys = e.infoset_key[decision]
  if np.any((keys[:, 0] == 0) & (keys[:, 1] == 0)):
    n = decision[np.flatnonzero((keys[:, 0] == 0) & (keys[:, 1] == 0))[0]]
    raise AssertionError(f"node {n}: infoset key (0, 0).")
  iset_label = key_labels(keys)
  _same_partition("infoset partition", decision, iset_label,
                  tree.node_infoset[decision].astype(np.int64),
                  "an engine infoset key", "a tree infoset id")

  public = key_labels(e.public_key)
  nodes = np.arange(e.num_nodes)
  owner = e.node_player.astype(np.int64)
  owner[e.node_kind == tree_lib.CHANCE] = CHANCE
  owner[e.node_kind == tree_lib.TERMINAL] = TERMINAL
  for what, value in (("acting player", owner), ("depth", e.node_depth)):
    split = _first_split(public, value)
    if split is not None:
      i, k = split
      raise AssertionError(
          f"public key: nodes {i} and {k} share a public key but not the "
          f"{what} ({value[i]} and {value[k]}).")
  split = _first_split(tree.node_infoset[decision].astype(np.int64),
                       public[decision])
  if split is not None:
    i, k = decision[split[0]], decision[split[1]]
    raise AssertionError(
        f"public key: nodes {i} and {k} of infoset {tree.node_infoset[i]} "
        "have different public keys (an infoset must lie inside one public "
        "state).")
  if public_tree is not None:
    _same_partition("public partition", nodes, public,
                    public_tree.node_public_state.astype(np.int64),
                    "an engine public key", "a PublicTree public state")
  return e


@njit(cache=True)
def _playouts(code, params, state_size, max_depth, max_moves, uniforms,
              length, player, moves, actions, probs, chosen, keys,
              public_key, returns0):
  """Random play-outs of the engine, every step recorded.

  Play-out i draws its moves with uniforms[i, t]: uniformly among the
  legal actions, by their probabilities at chance. Records per step t (the
  terminal included) in row [i, t]: player, number of moves, their actions
  and probabilities, the move chosen, both players' infoset keys and the
  public key; length[i] steps in all.

  Returns:
    -1, or the first play-out not terminal after max_depth moves or with
    more than max_moves moves at a node (the play-outs stop there).
  """
  numba.literally(code)
  state = np.zeros(state_size, dtype=np.int64)
  for i in range(uniforms.shape[0]):
    protocol.reset(code, params, state)
    t = 0
    while True:
      length[i] = t + 1
      p = protocol.player(code, params, state)
      player[i, t] = p
      for q in range(2):
        a, b = protocol.infoset_hash(code, params, state, q)
        keys[i, t, q, 0] = a
        keys[i, t, q, 1] = b
      a, b = protocol.public_hash(code, params, state)
      public_key[i, t, 0] = a
      public_key[i, t, 1] = b
      if p == TERMINAL:
        returns0[i] = protocol.returns0(code, params, state)
        break
      if t == max_depth:
        return i
      m = protocol.num_moves(code, params, state)
      moves[i, t] = m
      if m > max_moves or m <= 0:
        return i
      u = uniforms[i, t]
      j = min(int(u * m), m - 1)
      if p == CHANCE:
        j = 0
      cumulative = 0.0
      for k in range(m):
        actions[i, t, k] = protocol.move_action(code, params, state, k)
        if p == CHANCE:
          probs[i, t, k] = protocol.chance_prob(code, params, state, k)
          cumulative += probs[i, t, k]
          if cumulative <= u and k + 1 < m:
            j = k + 1
      chosen[i, t] = j
      protocol.apply(code, params, state, j)
      t += 1
  return -1


class _Books:
  """What `compare_playouts` has seen of the information states."""

  def __init__(self):
    self.string_key = ({}, {})
    self.key_string = ({}, {})
    self.public_player = {}
    self.infoset_public = {}


def _check_step(books, state, where, p, moves, actions, probs, keys, public,
                acting_only):
  """Compares one step of a play-out with the pyspiel state."""
  theirs = state.current_player()
  if theirs == _OPENSPIEL_TERMINAL:
    theirs = TERMINAL
  if p != theirs:
    raise AssertionError(f"{where()}: player of the engine {p}, OpenSpiel's "
                         f"{theirs}.")
  if p == CHANCE:
    outcomes = state.chance_outcomes()
    ours = list(zip(actions[:moves].tolist(), probs[:moves].tolist()))
    if len(outcomes) != moves or any(
        a != b or not abs(x - y) <= PROB_TOLERANCE
        for (a, x), (b, y) in zip(ours, outcomes)):
      raise AssertionError(f"{where()}: chance outcomes of the engine "
                           f"{ours}, OpenSpiel's {outcomes}.")
  elif p != TERMINAL:
    legal = state.legal_actions()
    if legal != actions[:moves].tolist():
      raise AssertionError(f"{where()}: legal actions of the engine "
                           f"{actions[:moves].tolist()}, OpenSpiel's {legal}.")
  public = (int(public[0]), int(public[1]))
  if books.public_player.setdefault(public, p) != p:
    raise AssertionError(
        f"{where()}: public key {public} seen with player "
        f"{books.public_player[public]} and now {p}.")
  for q in (0, 1):
    if acting_only and q != p:
      continue
    key = (int(keys[q, 0]), int(keys[q, 1]))
    if key == (0, 0):
      raise AssertionError(f"{where()}: infoset key (0, 0) of player {q}.")
    try:
      text = state.information_state_string(q)
    except pyspiel.SpielError:
      continue
    known = books.string_key[q].setdefault(text, key)
    if known != key:
      raise AssertionError(
          f"{where()}: player {q}'s information state string {text!r} had "
          f"infoset key {known} and now {key}.")
    known = books.key_string[q].setdefault(key, text)
    if known != text:
      raise AssertionError(
          f"{where()}: player {q}'s infoset key {key} is shared by the "
          f"strings {known!r} and {text!r}.")
    if q == p:
      seen = books.infoset_public.setdefault((q, key), public)
      if seen != public:
        raise AssertionError(
            f"{where()}: an infoset of player {q} straddles public keys "
            f"{seen} and {public}.")


def compare_playouts(engine, num_playouts, seed, progress=False,
                     acting_only=False):
  """Asserts that the engine and pyspiel agree along random play-outs.

  The engine plays `num_playouts` random play-outs (uniform actions, chance
  by its probabilities) in numba; each is replayed on a pyspiel state and
  compared at every step: acting player, legal actions (`move_action`) or
  chance outcomes and probabilities (to PROB_TOLERANCE), returns at the
  terminal. Information states: over all play-outs, equal strings of a
  player must have equal `infoset_hash` and equal hashes equal strings
  (both directions are functions), never (0, 0); the public key must keep
  the acting player and hold every infoset of the acting player.

  Args:
    engine: an `Engine`.
    num_playouts: number of play-outs.
    seed: seed of the numpy generator drawing the moves.
    progress: show a tqdm progress bar.
    acting_only: check only the acting player's information state at
      decisions (by default both players' at every node where OpenSpiel
      gives a string).

  Returns:
    The number of steps (nodes, terminals included) compared.

  Raises:
    AssertionError: the first difference, naming the play-out, step,
      history and field.
  """
  rng = np.random.default_rng(seed)
  game = engine.game
  books = _Books()
  depth, width = engine.max_depth, max(1, engine.max_moves)
  steps = 0
  bar = None
  if progress:
    import tqdm  # pylint: disable=import-outside-toplevel
    bar = tqdm.tqdm(total=num_playouts, desc=f"{engine.name} play-outs",
                    unit="play-out")
  try:
    for first in range(0, num_playouts, PLAYOUT_BATCH):
      count = min(PLAYOUT_BATCH, num_playouts - first)
      uniforms = rng.random((count, depth + 1))
      length = np.zeros(count, dtype=np.int64)
      player = np.zeros((count, depth + 1), dtype=np.int64)
      moves = np.zeros((count, depth + 1), dtype=np.int64)
      actions = np.zeros((count, depth + 1, width), dtype=np.int64)
      probs = np.zeros((count, depth + 1, width), dtype=np.float64)
      chosen = np.zeros((count, depth + 1), dtype=np.int64)
      keys = np.zeros((count, depth + 1, 2, 2), dtype=np.uint64)
      public = np.zeros((count, depth + 1, 2), dtype=np.uint64)
      ret0 = np.zeros(count, dtype=np.float64)
      stop = call_literal(_playouts, engine.code, engine.params,
                          engine.state_size, depth, width, uniforms, length,
                          player, moves, actions, probs, chosen, keys, public,
                          ret0)
      for i in range(count if stop < 0 else stop + 1):
        state = game.new_initial_state()
        steps_i = int(length[i])
        for t in range(steps_i):
          where = (lambda i=i, t=t, s=state: f"play-out {first + i} (seed "
                   f"{seed}), step {t}, history {s.history()}")
          p = int(player[i, t])
          if p != TERMINAL and t == depth:
            raise AssertionError(
                f"{where()}: the engine is not terminal after its "
                f"max_depth={depth} moves (OpenSpiel's state "
                f"{'is' if state.is_terminal() else 'is not'} terminal).")
          if p != TERMINAL and not 0 < moves[i, t] <= width:
            raise AssertionError(
                f"{where()}: {moves[i, t]} moves at a non-terminal node "
                f"(the engine's max_moves is {width}).")
          _check_step(books, state, where, p, int(moves[i, t]),
                      actions[i, t], probs[i, t], keys[i, t], public[i, t],
                      acting_only)
          if p == TERMINAL:
            returns = state.returns()
            if not (abs(returns[0] - ret0[i])
                    <= UTILITY_TOLERANCE * max(1.0, abs(returns[0]))
                    and abs(returns[0] + returns[1] - engine.utility_sum)
                    <= UTILITY_TOLERANCE * max(1.0, abs(returns[0]))):
              raise AssertionError(
                  f"{where()}: player 0's return of the engine {ret0[i]}, "
                  f"OpenSpiel's returns {returns} (utility_sum "
                  f"{engine.utility_sum}).")
            break
          state.apply_action(int(actions[i, t, chosen[i, t]]))
        steps += steps_i
        if bar is not None:
          bar.update(1)
  finally:
    if bar is not None:
      bar.close()
  return steps
