"""A game tree that grows as it is sampled (representation="grown").

For a game that neither compiles (too many histories) nor has a native
engine, the sampling kernels run on the flat arrays of `GameTree`, but a
node is allocated when its parent is expanded and expanded (its own kind,
player, infoset and children) the first time an episode reaches it:
node kind UNEXPANDED (3) stops the episode (kernels/outcome.py
`grown_episodes`), the solver replays the episode's path from the root in
OpenSpiel and expands the node here, and the episode runs again from the
same generator state. So a grown run takes exactly the samples, and
leaves exactly the tables, of a compiled-tree run with the same seed.

Expansion creates all children of a node at once: their kinds (terminal
children get their utility at once), the chance probabilities, and the
node's infoset. Infosets are keyed by a 128-bit hash (BLAKE2b) of the
acting player and the information state string (some games give two
players one string: phantom_ttt's empty board) in an open-addressing table
of arrays (linear probing, at most half full); a key found again must
agree on the number of legal actions, or the lookup raises with the
string (two strings with one 128-bit hash would be a BLAKE2b collision).

Node ids follow the order of expansion, not the compiled tree's preorder;
infoset ids follow the order of first expansion. Memory: the node arrays
(GameTree's and a parent, 32 bytes a node) and the infoset arrays (player, action
count and two hash slots of key and row: 53 bytes an infoset) grow by
doubling until `max_memory` (shared with the solver's tables, which the
solver sizes); past it the tree stops growing (`frozen`), and an episode
that leaves the stored tree is played out from OpenSpiel states by the
uniform strategy of the infosets it does not store.
"""

import hashlib

import numpy as np
from numba import njit

from mccfrb.games import tree as tree_lib

UNEXPANDED = 3
# Bytes of the node arrays per node: kind, player (int8), infoset,
# child_start, parent (int32), num_children (int16), edge_prob, utility
# (float64).
BYTES_PER_NODE = 32
# Bytes of the infoset arrays per infoset: player (int8), number of
# actions (int32), and two hash slots (at most half full) of a 16-byte key
# and an int64 row.
BYTES_PER_INFOSET = 1 + 4 + 2 * (16 + 8)
FIRST_CAPACITY = 1 << 12


def infoset_hash(key, player):
  """The two uint64 words of the 128-bit BLAKE2b hash of a player and an
  info-state string."""
  digest = hashlib.blake2b(bytes([player]) + key.encode("utf-8"),
                           digest_size=16).digest()
  return (int.from_bytes(digest[:8], "little"),
          int.from_bytes(digest[8:], "little"))


@njit(cache=True)
def find_slot(keys, slot_row, h1, h2):
  """The slot of key (h1, h2) in the open-addressing table (linear
  probing): where it is, or the empty slot (row -1) where it goes."""
  mask = slot_row.shape[0] - 1
  s = (h1 ^ (h2 >> np.uint64(7))) & np.uint64(mask)
  s = np.int64(s)
  while slot_row[s] >= 0:
    if keys[s, 0] == h1 and keys[s, 1] == h2:
      return s
    s = (s + 1) & mask
  return s


def _grown(array, size, fill):
  """`array` copied into a new one of `size` rows, new rows `fill`."""
  out = np.full((size,) + array.shape[1:], fill, dtype=array.dtype)
  out[:len(array)] = array
  return out


class GrownTree:
  """The stored part of a game tree, with GameTree's arrays and names.

  Attributes (the first `num_nodes` / `num_infosets` entries are used;
  the arrays are longer, their capacity):
    node_kind, node_player, node_infoset, child_start, num_children,
      edge_prob, utility: as `GameTree`'s; node_kind 3 (UNEXPANDED) for a
      node allocated by its parent's expansion and not yet expanded.
    infoset_player, infoset_num_actions: per infoset.
    utility_sum, max_actions (the game's widest move), max_depth (the
      longest history, chance included, plus one).
    frozen: the tree stopped growing at `max_memory`.
  """

  def __init__(self, game, max_memory):
    self.game = game
    self.max_memory = int(max_memory)
    self.max_actions = max(game.num_distinct_actions(),
                           game.max_chance_outcomes(), 1)
    self.max_depth = (game.max_game_length()
                      + game.max_chance_nodes_in_history() + 1)
    gtype = game.get_type()
    self.utility_sum = (float(game.utility_sum()) if gtype.utility
                        == gtype.utility.CONSTANT_SUM else 0.0)
    n = FIRST_CAPACITY
    self.node_kind = np.full(n, UNEXPANDED, dtype=np.int8)
    self.node_player = np.full(n, -1, dtype=np.int8)
    self.node_infoset = np.full(n, -1, dtype=np.int32)
    self.child_start = np.zeros(n, dtype=np.int32)
    self.node_parent = np.full(n, -1, dtype=np.int32)
    self.num_children = np.zeros(n, dtype=np.int16)
    self.edge_prob = np.ones(n)
    self.utility = np.zeros(n)
    self.infoset_player = np.zeros(n, dtype=np.int8)
    self.infoset_num_actions = np.zeros(n, dtype=np.int32)
    self._keys = np.zeros((2 * n, 2), dtype=np.uint64)
    self._slot_row = np.full(2 * n, -1, dtype=np.int64)
    self.num_nodes = 1  # The root, unexpanded.
    self.num_infosets = 0
    self.frozen = False

  # The arrays in `GameTree.kernel_args()` order.
  def kernel_args(self):
    return (self.node_kind, self.node_player, self.node_infoset,
            self.child_start, self.num_children, self.edge_prob,
            self.utility)

  @property
  def node_capacity(self):
    return len(self.node_kind)

  @property
  def infoset_capacity(self):
    return len(self.infoset_player)

  def nbytes(self):
    """Bytes held by the tree's arrays (capacity included)."""
    return sum(a.nbytes for a in self.arrays().values())

  def find(self, key, player):
    """The infoset id of `player`'s info-state string, or -1 if not
    stored."""
    h1, h2 = infoset_hash(key, player)
    slot = find_slot(self._keys, self._slot_row, np.uint64(h1), np.uint64(h2))
    return int(self._slot_row[slot])

  def _infoset(self, key, player, count):
    """The id of infoset `key`, inserted if new (None if the tree is full)."""
    h1, h2 = infoset_hash(key, player)
    h1, h2 = np.uint64(h1), np.uint64(h2)
    slot = find_slot(self._keys, self._slot_row, h1, h2)
    row = int(self._slot_row[slot])
    if row >= 0:
      if (self.infoset_player[row] != player
          or self.infoset_num_actions[row] != count):
        raise ValueError(
            f"{self.game}: player {player}'s info state {key!r} was stored "
            f"with {self.infoset_num_actions[row]} actions (player "
            f"{self.infoset_player[row]}) and is now met with {count}: "
            "histories of one infoset disagree, or two info-state strings "
            "share a 128-bit hash.")
      return row
    row = self.num_infosets
    if row == self.infoset_capacity:
      return None
    self._keys[slot] = (h1, h2)
    self._slot_row[slot] = row
    self.infoset_player[row] = player
    self.infoset_num_actions[row] = count
    self.num_infosets += 1
    return row

  def reserve(self, nodes, infosets, table_bytes):
    """Makes room for `nodes` more nodes and `infosets` more infosets,
    doubling the arrays while `nbytes() + table_bytes(new infoset
    capacity, new node capacity)` stays within max_memory. Returns False
    (and freezes the tree) if it cannot."""
    need_nodes = self.num_nodes + nodes > self.node_capacity
    need_isets = self.num_infosets + infosets > self.infoset_capacity
    if not (need_nodes or need_isets):
      return True
    if self.frozen:
      return False
    n = self.node_capacity * (2 if need_nodes else 1)
    i = self.infoset_capacity * (2 if need_isets else 1)
    grown = n * BYTES_PER_NODE + i * BYTES_PER_INFOSET + table_bytes(i, n)
    if grown > self.max_memory or n >= 2**31:
      self.frozen = True
      return False
    if need_nodes:
      self.node_kind = _grown(self.node_kind, n, UNEXPANDED)
      self.node_player = _grown(self.node_player, n, -1)
      self.node_infoset = _grown(self.node_infoset, n, -1)
      self.child_start = _grown(self.child_start, n, 0)
      self.node_parent = _grown(self.node_parent, n, -1)
      self.num_children = _grown(self.num_children, n, 0)
      self.edge_prob = _grown(self.edge_prob, n, 1.0)
      self.utility = _grown(self.utility, n, 0.0)
    if need_isets:
      self.infoset_player = _grown(self.infoset_player, i, 0)
      self.infoset_num_actions = _grown(self.infoset_num_actions, i, 0)
      keys, rows = self._keys, self._slot_row
      self._keys = np.zeros((2 * i, 2), dtype=np.uint64)
      self._slot_row = np.full(2 * i, -1, dtype=np.int64)
      for slot in np.flatnonzero(rows >= 0):
        h1, h2 = keys[slot]
        new = find_slot(self._keys, self._slot_row, h1, h2)
        self._keys[new] = keys[slot]
        self._slot_row[new] = rows[slot]
    return True

  def expand(self, node, state, table_bytes):
    """Expands `node` (UNEXPANDED, reached by the pyspiel `state`): its
    kind, player, infoset and children. Returns False, changing nothing,
    if the tree is full (`frozen`)."""
    if state.is_chance_node():
      outcomes = state.chance_outcomes()
      actions = [a for a, _ in outcomes]
      kind, player, infoset = tree_lib.CHANCE, -1, -1
    else:
      player = state.current_player()
      actions = state.legal_actions()
      kind = tree_lib.DECISION
    count = len(actions)
    if not self.reserve(count, 0 if kind == tree_lib.CHANCE else 1,
                        table_bytes):
      return False
    if kind == tree_lib.DECISION:
      infoset = self._infoset(state.information_state_string(player),
                              player, count)
      if infoset is None:
        return False
    start = self.num_nodes
    self.num_nodes += count
    self.node_parent[start:start + count] = node
    for j, a in enumerate(actions):
      child = state.child(a)
      if child.is_terminal():
        self.node_kind[start + j] = tree_lib.TERMINAL
        self.utility[start + j] = child.returns()[0]
    if kind == tree_lib.CHANCE:
      self.edge_prob[start:start + count] = [p for _, p in outcomes]
    self.node_kind[node] = kind
    self.node_player[node] = player
    self.node_infoset[node] = infoset
    self.child_start[node] = start
    self.num_children[node] = count
    return True

  # Saved and restored by the solver (solvers/grown.py): every array at
  # its capacity, and the counts.
  NODE_ARRAYS = ("node_kind", "node_player", "node_infoset", "child_start",
                 "node_parent", "num_children", "edge_prob", "utility")
  INFOSET_ARRAYS = ("infoset_player", "infoset_num_actions")
  HASH_ARRAYS = ("_keys", "_slot_row")

  def arrays(self):
    """{name: array} of every array of the tree."""
    return {n.lstrip("_"): getattr(self, n) for n in (
        self.NODE_ARRAYS + self.INFOSET_ARRAYS + self.HASH_ARRAYS)}

  def restore(self, arrays, num_nodes, num_infosets, frozen):
    """Takes saved `arrays` (as `arrays()` names them) and counts, after
    checking that they fit together; ValueError naming what does not."""
    nodes = len(arrays["node_kind"])
    isets = len(arrays["infoset_player"])
    slots = len(arrays["slot_row"])
    for name in self.NODE_ARRAYS:
      if arrays[name].shape != (nodes,):
        raise ValueError(f"table 'grown_{name}' has shape "
                         f"{arrays[name].shape}, not ({nodes},)")
    for name in self.INFOSET_ARRAYS:
      if arrays[name].shape != (isets,):
        raise ValueError(f"table 'grown_{name}' has shape "
                         f"{arrays[name].shape}, not ({isets},)")
    if (slots < 2 * isets or slots & (slots - 1)
        or arrays["keys"].shape != (slots, 2)):
      raise ValueError("tables 'grown_keys' and 'grown_slot_row' do not form "
                       f"a hash table of at least {2 * isets} slots")
    if not (1 <= num_nodes <= nodes and 0 <= num_infosets <= isets):
      raise ValueError(f"counts ({num_nodes} nodes, {num_infosets} "
                       f"infosets) outside the tables ({nodes}, {isets})")
    kind = arrays["node_kind"][:num_nodes]
    inner = kind <= tree_lib.DECISION
    ends = (arrays["child_start"][:num_nodes][inner].astype(np.int64)
            + arrays["num_children"][:num_nodes][inner])
    rows = arrays["slot_row"]
    if (np.any((kind < 0) | (kind > UNEXPANDED)) or np.any(ends > num_nodes)
        or np.any(arrays["node_infoset"][:num_nodes] >= num_infosets)
        or np.any(rows >= num_infosets) or np.sum(rows >= 0) != num_infosets):
      raise ValueError("the grown tree's nodes, children, infosets or hash "
                       "slots point outside what it stores")
    for name, value in arrays.items():
      setattr(self, "_" + name if "_" + name in self.HASH_ARRAYS else name,
              value)
    self.num_nodes, self.num_infosets = int(num_nodes), int(num_infosets)
    self.frozen = bool(frozen)

  def path_to(self, node):
    """(path_node, path_action) from the root to `node`, as `state_of`
    takes them."""
    nodes, actions = [], []
    while node > 0:
      parent = int(self.node_parent[node])
      nodes.append(parent)
      actions.append(node - int(self.child_start[parent]))
      node = parent
    return np.array(nodes[::-1], dtype=np.int64), np.array(
        actions[::-1], dtype=np.int64)

  def state_of(self, path_node, path_action, depth):
    """The pyspiel state at the end of a path of `depth` moves: node
    path_node[d] took its child path_action[d] (legal actions or chance
    outcomes in OpenSpiel's order)."""
    return self.advance(self.game.new_initial_state(), path_node,
                        path_action, 0, depth)

  def advance(self, state, path_node, path_action, start, depth):
    """`state`, the pyspiel state at path_node[start], moved (in place)
    along the path's moves start .. depth - 1 (see `state_of`)."""
    kinds = self.node_kind[path_node[start:depth]].tolist()
    for kind, j in zip(kinds, path_action[start:depth].tolist()):
      if kind == tree_lib.CHANCE:
        state.apply_action(state.chance_outcomes()[j][0])
      else:
        state.apply_action(state.legal_actions()[j])
    return state
