"""Public states of a compiled game tree (docs/pages/algorithms.md, "Public states").

`public_states` partitions the nodes of a `GameTree` into public states and
returns a `PublicTree`: flat numpy arrays, like the `GameTree` itself, that
public-state sampling walks without touching Python objects.

Two partitions are available; in both, two nodes share a public state only if
they have the same depth (number of moves from the root):

- "observer": OpenSpiel's public observation (perfect recall, public
  information only, no private information): nodes with equal observer
  strings. Simultaneous-move games that `load_game` converted to turn-based
  ones are observed through the original game, replaying the moves of each
  round once all players have chosen.
- "common_knowledge": the connected components of the graph that joins two
  nodes when `information_state_string(p)` is equal for either player p.

Public-state ids follow the smallest node id of each state, so the root's
public state is 0 and every child public state has a larger id than its
parent, as with node ids.
"""

from typing import NamedTuple

import numpy as np
import pyspiel
from scipy.sparse import coo_matrix
from scipy.sparse import csgraph

from mccfrb import games
from mccfrb.games import tree as tree_lib

PARTITIONS = ("auto", "observer", "common_knowledge")

PUBLIC_OBSERVATION_TYPE = pyspiel.IIGObservationType(
    perfect_recall=True, public_info=True,
    private_info=pyspiel.PrivateInfoType.NONE)

_TURN_BASED = "turn_based_simultaneous_game"


class PublicTree(NamedTuple):
  """The public states of a `GameTree` as flat arrays.

  Attributes:
    node_public_state: int32[N], the public state of every node of the
      `GameTree`, terminals included.
    ps_history_start: int32[P+1], CSR offsets into `ps_histories`. Ids
      follow the smallest node id of each public state, so the root's public
      state is 0 and a child public state's id exceeds its parent's.
    ps_histories: int32[N], the histories (node ids) of public state s are
      `ps_histories[ps_history_start[s]:ps_history_start[s+1]]`, ascending.
    ps_parent: int32[P], the public state holding the parents of the
      histories of s (-1 for the root's public state 0).
    ps_child_start: int32[P+1], CSR offsets into `ps_children`.
    ps_children: int32[P-1], the distinct public states of the children of
      the histories of s, ascending:
      `ps_children[ps_child_start[s]:ps_child_start[s+1]]`.
    ps_depth: int32[P], number of moves from the root to every history of s.
    ps_terminal: bool_[P], True iff every history of s is terminal.
    partition: "observer" or "common_knowledge", the partition used.
  """
  node_public_state: np.ndarray
  ps_history_start: np.ndarray
  ps_histories: np.ndarray
  ps_parent: np.ndarray
  ps_child_start: np.ndarray
  ps_children: np.ndarray
  ps_depth: np.ndarray
  ps_terminal: np.ndarray
  partition: str

  @property
  def num_public_states(self):
    return len(self.ps_parent)

  def histories(self, ps):
    """The node ids of public state `ps`, ascending."""
    return self.ps_histories[
        self.ps_history_start[ps]:self.ps_history_start[ps + 1]]

  def children(self, ps):
    """The child public states of `ps`, ascending."""
    return self.ps_children[self.ps_child_start[ps]:self.ps_child_start[ps + 1]]


def public_states(game_or_tree, partition="auto", game=None):
  """Partitions every node of a game tree into public states.

  Args:
    game_or_tree: a game string or `pyspiel.Game` (loaded with `load_game`
      and compiled with `compile_tree`), or a `GameTree`.
    partition: "observer" (OpenSpiel's public observation strings, refined by
      depth), "common_knowledge" (nodes of equal depth joined when either
      player's information state string is equal) or "auto" (observer where
      the game has a public observer, common_knowledge otherwise).
    game: the game string or `pyspiel.Game` of `game_or_tree` when that is a
      `GameTree` (the partition needs pyspiel states); not allowed otherwise.

  Returns:
    The `PublicTree`.

  Raises:
    ValueError: unknown `partition`; a `GameTree` without `game`, or `game`
      given with a game; the tree does not match `game`; "observer" asked of
      a game without a public observer; an infoset straddles two public
      states, or the parents of a public state's histories lie in several
      public states (the public states do not form a tree).
    TypeError: `game_or_tree` is not a game string, game or `GameTree`.
  """
  if not isinstance(partition, str) or partition not in PARTITIONS:
    raise ValueError(f"Unknown partition {partition!r}; use one of "
                     f"{', '.join(repr(p) for p in PARTITIONS)}.")
  if isinstance(game_or_tree, tree_lib.GameTree):
    if game is None:
      raise ValueError(
          "public_states needs the game of a GameTree to build pyspiel "
          "states: pass game= (a game string or pyspiel.Game).")
    tree = game_or_tree
    game = games.load_game(game)
  elif isinstance(game_or_tree, (str, pyspiel.Game)):
    if game is not None:
      raise ValueError(
          "game= is only for a GameTree; public_states got a game as well as "
          f"game={game!r}.")
    game = games.load_game(game_or_tree)
    tree = tree_lib.compile_tree(game)
  else:
    raise TypeError("public_states takes a game string, a pyspiel.Game or a "
                    f"GameTree, not {type(game_or_tree)}.")

  observation = None
  if partition in ("auto", "observer"):
    observation = _public_observation(game)
    if observation is None:
      if partition == "observer":
        raise ValueError(
            f"{game} has no public observer (perfect_recall=True, "
            "public_info=True, private_info=NONE); use "
            "partition='common_knowledge'.")
      partition = "common_knowledge"
    else:
      partition = "observer"

  if partition == "observer":
    found = _engine_observer(game, tree)
    depth, labels = (found if found is not None else
                     _walk_observer(game, tree, *observation))
  else:
    depth, keys0, keys1 = _walk_information_states(game, tree)
    labels = _components(keys0, keys1)
  return _build(tree, depth, labels, partition)


def _public_observation(game):
  """(observation, base game) for the public observer, or None."""
  base = game
  if game.get_type().short_name == _TURN_BASED:
    params = dict(game.get_parameters()["game"])
    base = pyspiel.load_game(params.pop("name"), params)
  try:
    observer = base.make_observer(PUBLIC_OBSERVATION_TYPE, {})
  except (pyspiel.SpielError, RuntimeError):
    return None
  if observer is None:
    return None
  # pylint: disable-next=protected-access
  observation = pyspiel._Observation(base, observer)
  if not observation.has_string():
    return None
  return observation, base


def _mismatch(game, nid, what):
  return ValueError(
      f"The GameTree does not match {game}: at node {nid} {what}. Pass the "
      "game the tree was compiled from.")


def expand_checked(game, tree, nid, state):
  """The children's (first id, actions) of `state` at node `nid`, checked."""
  if nid >= tree.num_nodes:
    raise _mismatch(game, nid, "the game has more nodes than the tree")
  kind = tree.node_kind[nid]
  if state.is_terminal():
    if kind != tree_lib.TERMINAL:
      raise _mismatch(game, nid, "the game is terminal and the tree is not")
    return 0, ()
  if state.is_chance_node():
    if kind != tree_lib.CHANCE:
      raise _mismatch(game, nid, "the game is at chance and the tree is not")
    actions = [a for a, _ in state.chance_outcomes()]
  else:
    if kind != tree_lib.DECISION:
      raise _mismatch(game, nid, "the game is at a decision and the tree is "
                      "not")
    actions = state.legal_actions()
  if len(actions) != tree.num_children[nid]:
    raise _mismatch(game, nid, f"the game has {len(actions)} children and the "
                    f"tree {tree.num_children[nid]}")
  return int(tree.child_start[nid]), actions


def _engine_observer(game, tree):
  """(depth, labels) of the observer partition from a native engine's public
  keys, or None where no engine is known to give it.

  The goofspiel engine with imp_info=True keys a node by exactly what
  OpenSpiel's public observer shows (tests/test_engine_goofspiel.py compares
  the partitions on every small instance), and walks the tree in numba in
  the order compile_tree numbers it, where the pyspiel walk costs about 15
  us a node (goofspiel 5: 50 s). The engine's tree is checked against
  `tree` node kind by node kind before it is trusted.
  """
  from mccfrb.games import engines  # pylint: disable=import-outside-toplevel
  from mccfrb.games.engines import check  # pylint: disable=import-outside-toplevel
  from mccfrb.games.engines import goofspiel  # pylint: disable=import-outside-toplevel
  engine = engines.engine_for(game)
  if (engine is None or engine.name != "goofspiel"
      or not goofspiel.parameters(game).get("imp_info", False)):
    return None
  walked = check.enumerate_like(engine, tree)
  if walked is None:
    return None
  return (walked.node_depth.astype(np.int32),
          check.key_labels(walked.public_key))


def _walk_observer(game, tree, observation, base):
  """Depth and (depth, public observer string) label of every node."""
  n = tree.num_nodes
  depth = [0] * n
  labels = [0] * n
  ids = {}
  visited = 0
  wrapped = base is not game
  num_players = game.num_players()
  string_from = observation.string_from
  # (node id, state, depth, base-game state, moves of the unfinished
  # simultaneous round, public string of the base-game state).
  root = game.new_initial_state()
  base_root = base.new_initial_state() if wrapped else root
  stack = [(0, root, 0, base_root, (), string_from(base_root, 0))]
  while stack:
    nid, state, d, bstate, pending, public = stack.pop()
    start, actions = expand_checked(game, tree, nid, state)
    visited += 1
    depth[nid] = d
    labels[nid] = ids.setdefault((d, public), len(ids))
    chance = state.is_chance_node()
    if wrapped:
      if pending or not (state.is_terminal() or chance):
        if not bstate.is_simultaneous_node() or (
            actions and state.current_player() != len(pending)):
          raise ValueError(
              f"{game}: cannot follow the simultaneous rounds of {base} at "
              f"node {nid}; use partition='common_knowledge'.")
      elif (bstate.is_terminal() != state.is_terminal()
            or bstate.is_chance_node() != chance):
        raise ValueError(
            f"{game} and {base} disagree on the kind of node {nid}; use "
            "partition='common_knowledge'.")
    for k in range(len(actions) - 1, -1, -1):
      a = actions[k]
      child = state.child(a)
      if not wrapped:
        stack.append((start + k, child, d + 1, child, (),
                      string_from(child, 0)))
      elif chance:
        bchild = bstate.child(a)
        stack.append((start + k, child, d + 1, bchild, (),
                      string_from(bchild, 0)))
      elif len(pending) + 1 == num_players:
        bchild = bstate.clone()
        bchild.apply_actions(list(pending) + [a])
        stack.append((start + k, child, d + 1, bchild, (),
                      string_from(bchild, 0)))
      else:
        stack.append((start + k, child, d + 1, bstate, pending + (a,), public))
  if visited != n:
    raise _mismatch(game, 0, f"the game has {visited} nodes and the tree {n}")
  return np.array(depth, dtype=np.int32), np.array(labels, dtype=np.int64)


def _walk_information_states(game, tree):
  """Depth and, per player, a (depth, information state string) label.

  A node whose information state string raises (terminals of some games)
  gets label -1 for that player: it joins no other node through it.
  """
  n = tree.num_nodes
  depth = [0] * n
  keys = ([0] * n, [0] * n)
  ids = ({}, {})
  visited = 0
  stack = [(0, game.new_initial_state(), 0)]
  while stack:
    nid, state, d = stack.pop()
    start, actions = expand_checked(game, tree, nid, state)
    visited += 1
    depth[nid] = d
    for p in (0, 1):
      try:
        key = state.information_state_string(p)
      except pyspiel.SpielError:
        keys[p][nid] = -1
        continue
      keys[p][nid] = ids[p].setdefault((d, key), len(ids[p]))
    for k in range(len(actions) - 1, -1, -1):
      stack.append((start + k, state.child(actions[k]), d + 1))
  if visited != n:
    raise _mismatch(game, 0, f"the game has {visited} nodes and the tree {n}")
  return (np.array(depth, dtype=np.int32), np.array(keys[0], dtype=np.int64),
          np.array(keys[1], dtype=np.int64))


def _components(keys0, keys1):
  """Connected components of nodes joined by equal keys0 or equal keys1.

  The graph is bipartite: node n is joined to a vertex for its keys0 label and
  a vertex for its keys1 label (none for label -1).
  """
  n = len(keys0)
  g0 = int(keys0.max()) + 1
  g1 = int(keys1.max()) + 1
  nodes = np.arange(n)
  has0, has1 = keys0 >= 0, keys1 >= 0
  rows = np.concatenate([nodes[has0], nodes[has1]])
  cols = np.concatenate([n + keys0[has0], n + g0 + keys1[has1]])
  size = n + g0 + g1
  graph = coo_matrix((np.ones(len(rows), dtype=np.int8), (rows, cols)),
                     shape=(size, size)).tocsr()
  _, labels = csgraph.connected_components(graph, directed=False)
  return labels[:n].astype(np.int64)


def _relabel(labels):
  """Ids 0.. in order of the smallest node id of each label."""
  _, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
  rank = np.empty(len(first), dtype=np.int64)
  rank[np.argsort(first, kind="stable")] = np.arange(len(first))
  return rank[inverse.ravel()].astype(np.int32)


def _csr(owner, count):
  """Offsets and members (ascending) of the groups given by owner ids."""
  start = np.zeros(count + 1, dtype=np.int32)
  np.cumsum(np.bincount(owner, minlength=count), out=start[1:])
  members = np.argsort(owner, kind="stable").astype(np.int32)
  return start, members


def node_parents(tree):
  """int64[N]: the parent of every node, -1 at the root."""
  return tree.node_parents()


def _group_violations(owner, value):
  """Owners whose members carry more than one distinct value."""
  pairs = np.unique(np.stack([owner, value]), axis=1)
  counts = np.bincount(pairs[0])
  return np.flatnonzero(counts > 1), pairs


def _names(states, limit=8):
  shown = ", ".join(str(s) for s in states[:limit])
  return shown + (f", ... ({len(states)} in all)" if len(states) > limit
                  else "")


def _build(tree, depth, labels, partition):
  """Checks the partition and lays it out as a `PublicTree`."""
  node_ps = _relabel(labels)
  num_ps = int(node_ps.max()) + 1
  ps_history_start, ps_histories = _csr(node_ps, num_ps)

  decision = np.flatnonzero(tree.node_infoset >= 0)
  bad, pairs = _group_violations(tree.node_infoset[decision],
                                 node_ps[decision])
  if len(bad):
    i = int(bad[0])
    straddled = pairs[1][pairs[0] == i]
    raise ValueError(
        f"Infoset {i} {tree.infoset_key(i)!r} straddles public states "
        f"{_names(straddled)} of the {partition!r} partition ({len(bad)} "
        "infosets do); every infoset must lie inside one public state. Try "
        "partition='common_knowledge'.")

  parent = node_parents(tree)
  parent_ps = np.where(parent >= 0, node_ps[np.maximum(parent, 0)], -1)
  bad, pairs = _group_violations(node_ps, parent_ps)
  if len(bad):
    s = int(bad[0])
    parents = pairs[1][pairs[0] == s]
    histories = ps_histories[ps_history_start[s]:ps_history_start[s + 1]]
    raise ValueError(
        f"The parents of the histories of public state {s} (histories "
        f"{_names(histories)}) lie in "
        f"public states {_names(parents)} of the {partition!r} partition "
        f"({len(bad)} public states do): these public states do not form a "
        "tree.")
  ps_parent = np.empty(num_ps, dtype=np.int32)
  ps_parent[node_ps] = parent_ps
  ps_ids = np.arange(num_ps)
  if ps_parent[0] != -1 or np.any(ps_parent[1:] >= ps_ids[1:]):
    raise ValueError(
        f"Public-state ids of the {partition!r} partition are not "
        "topological: a child public state does not have a larger id than "
        "its parent.")

  ps_depth = np.empty(num_ps, dtype=np.int32)
  ps_depth[node_ps] = depth
  nonterminal = np.bincount(node_ps, weights=tree.node_kind
                            != tree_lib.TERMINAL, minlength=num_ps)
  ps_child_start, children = _csr(ps_parent[1:], num_ps)
  return PublicTree(
      node_public_state=node_ps,
      ps_history_start=ps_history_start,
      ps_histories=ps_histories,
      ps_parent=ps_parent,
      ps_child_start=ps_child_start,
      ps_children=(children + 1).astype(np.int32),
      ps_depth=ps_depth,
      ps_terminal=nonterminal == 0,
      partition=partition,
  )
