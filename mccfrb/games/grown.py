"""A game tree that grows as it is sampled (representation="grown").

For a game that neither compiles (too many histories) nor has a native
engine, the sampling kernels run on the flat arrays of `GameTree`, but a
node is stored only once an episode reaches it, and only the nodes that
episodes reach are stored (lean growth). A stored node that is not
terminal owns a block of child slots, one per legal action or chance
outcome: `slot_node` (the child's node id, -1 until an episode first
samples that action) and `slot_prob` (the chance probability, the
kernels' `edge_prob`). So an action that is never sampled costs its
slot, 12 bytes, and no OpenSpiel call.

The kernels reach a node's children through its slots (kernels/outcome.py
`episodes`, kernels/external.py `es_grown`). An episode that samples
an empty slot stops before any table changes; the solver moves the
OpenSpiel state of the path's last stored node one action along
(solvers/grown.py keeps the states of the last path), creates the child
here (`add_child`: its kind, player, infoset and slots, or its utility),
and the episode runs again from the same generator state. So a grown run
takes exactly the samples, and leaves exactly the tables, of a
compiled-tree run with the same seed.

Infosets are keyed by a 128-bit hash (BLAKE2b) of the acting player and
the information state string (some games give two players one string:
phantom_ttt's empty board) in an open-addressing table of arrays (linear
probing, at most half full); a key found again must agree on the number
of legal actions, or the lookup raises with the string (two strings with
one 128-bit hash would be a BLAKE2b collision).

Node ids follow the order in which episodes first reach the nodes, not
the compiled tree's preorder; infoset ids the order of their first node.
Memory (`BYTES_PER_NODE`, `BYTES_PER_SLOT`, `BYTES_PER_INFOSET`): the
node, slot and infoset arrays grow by doubling until `max_memory`
(shared with the solver's tables, which the solver sizes); past it the
tree stops growing (`frozen`), and an episode that leaves the stored tree
is played out from OpenSpiel states by the uniform strategy of the
infosets it does not store.
"""

import hashlib

import numpy as np
from numba import njit

from mccfrb.games import tree as tree_lib

# Bytes of the node arrays per stored node: kind, player (int8), infoset,
# child_start, parent (int32), number of children, action taken from the
# parent (int16), utility (float64).
BYTES_PER_NODE = 1 + 1 + 4 + 4 + 4 + 2 + 2 + 8
# Bytes per child slot: the child's node id (int32, -1 if not stored)
# and the chance probability (float64).
BYTES_PER_SLOT = 4 + 8
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
  shape = (size,) + array.shape[1:]
  if fill == 0:  # Zeroed pages come from the system as they are touched.
    out = np.zeros(shape, dtype=array.dtype)
  else:
    out = np.empty(shape, dtype=array.dtype)
    out[len(array):] = fill
  out[:len(array)] = array
  return out


class GrownTree:
  """The stored part of a game tree, with GameTree's arrays and names.

  Attributes (the first `num_nodes` / `num_slots` / `num_infosets`
  entries are used; the arrays are longer, their capacity):
    node_kind, node_player, node_infoset, child_start, num_children,
      utility: as `GameTree`'s, but `child_start` indexes the slots.
    node_parent, node_action: the parent's node id and the index of the
      action (or chance outcome) that leads here (-1 and 0 at the root).
    slot_node, slot_prob: per child slot, the child's node id (-1 until
      it is reached) and its chance probability (1 below decisions).
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
    self.node_kind = np.full(n, tree_lib.TERMINAL, dtype=np.int8)
    self.node_player = np.full(n, -1, dtype=np.int8)
    self.node_infoset = np.full(n, -1, dtype=np.int32)
    self.child_start = np.zeros(n, dtype=np.int32)
    self.node_parent = np.full(n, -1, dtype=np.int32)
    self.num_children = np.zeros(n, dtype=np.int16)
    self.node_action = np.zeros(n, dtype=np.int16)
    self.utility = np.zeros(n)
    self.slot_node = np.full(n, -1, dtype=np.int32)
    self.slot_prob = np.ones(n)
    self.infoset_player = np.zeros(n, dtype=np.int8)
    self.infoset_num_actions = np.zeros(n, dtype=np.int32)
    self._keys = np.zeros((2 * n, 2), dtype=np.uint64)
    self._slot_row = np.full(2 * n, -1, dtype=np.int64)
    self.num_nodes = 0
    self.num_slots = 0
    self.num_infosets = 0
    self.frozen = False
    # Counts the reallocations: kernels must be handed the new arrays.
    self.generation = 0
    # The node stored last and its actions (or chance outcomes), which
    # the next move from it (`advance`) takes without asking OpenSpiel.
    self._last_node, self._last_actions = -1, []

  # The arrays in `GameTree.kernel_args()` order (edge_prob: the slots'
  # chance probabilities), then the slots' child ids.
  def kernel_args(self):
    return (self.node_kind, self.node_player, self.node_infoset,
            self.child_start, self.num_children, self.slot_prob,
            self.utility, self.slot_node)

  @property
  def node_capacity(self):
    return len(self.node_kind)

  @property
  def slot_capacity(self):
    return len(self.slot_node)

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
    """The id of infoset `key`, inserted if new (room was reserved)."""
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
    self._keys[slot] = (h1, h2)
    self._slot_row[slot] = row
    self.infoset_player[row] = player
    self.infoset_num_actions[row] = count
    self.num_infosets += 1
    return row

  def reserve(self, nodes, slots, infosets, table_bytes):
    """Makes room for `nodes`, `slots` and `infosets` more, doubling the
    arrays while `nbytes() + table_bytes(infoset capacity, slot
    capacity)` stays within max_memory. Returns False (and freezes the
    tree) if it cannot."""
    n, s, i = self.node_capacity, self.slot_capacity, self.infoset_capacity
    while self.num_nodes + nodes > n:
      n *= 2
    while self.num_slots + slots > s:
      s *= 2
    while self.num_infosets + infosets > i:
      i *= 2
    if (n, s, i) == (self.node_capacity, self.slot_capacity,
                     self.infoset_capacity):
      return True
    if self.frozen:
      return False
    grown = (n * BYTES_PER_NODE + s * BYTES_PER_SLOT
             + i * BYTES_PER_INFOSET + table_bytes(i, s))
    if grown > self.max_memory or max(n, s) >= 2**31:
      self.frozen = True
      return False
    self.generation += 1
    if n > self.node_capacity:
      for name, fill in (("node_kind", tree_lib.TERMINAL),
                         ("node_player", -1), ("node_infoset", -1),
                         ("child_start", 0), ("node_parent", -1),
                         ("num_children", 0), ("node_action", 0),
                         ("utility", 0.0)):
        setattr(self, name, _grown(getattr(self, name), n, fill))
    if s > self.slot_capacity:
      self.slot_node = _grown(self.slot_node, s, -1)
      self.slot_prob = _grown(self.slot_prob, s, 1.0)
    if i > self.infoset_capacity:
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

  def add_root(self, state, table_bytes):
    """Stores the root (node 0) from the pyspiel `state`; False if
    max_memory does not hold it."""
    return self.add_child(-1, 0, state, table_bytes) is not None

  def add_child(self, parent, action, state, table_bytes):
    """Stores the child of `parent` by its action (or outcome) index
    `action`, reached by the pyspiel `state`: its kind and, unless it is
    terminal, its player, infoset and empty child slots (chance: with
    their probabilities); terminal: its utility. Returns its node id, or
    None, changing nothing, if the tree is full (`frozen`)."""
    if state.is_terminal():
      kind, player, count = tree_lib.TERMINAL, -1, 0
    elif state.is_chance_node():
      outcomes = state.chance_outcomes()
      kind, player, count = tree_lib.CHANCE, -1, len(outcomes)
    else:
      player = state.current_player()
      legal = state.legal_actions()
      kind, count = tree_lib.DECISION, len(legal)
    if ((self.num_nodes >= len(self.node_kind)
         or self.num_slots + count > len(self.slot_node)
         or self.num_infosets >= len(self.infoset_player))
        and not self.reserve(1, count, int(kind == tree_lib.DECISION),
                             table_bytes)):
      return None
    node = self.num_nodes
    self.num_nodes += 1
    self.node_kind[node] = kind
    self.node_player[node] = player
    self.node_parent[node] = parent
    self.node_action[node] = action
    if parent >= 0:
      self.slot_node[self.child_start[parent] + action] = node
    if kind == tree_lib.TERMINAL:
      self.utility[node] = state.returns()[0]
      return node
    start = self.num_slots
    self.num_slots += count
    self.child_start[node] = start
    self.num_children[node] = count
    if kind == tree_lib.CHANCE:
      self.slot_prob[start:start + count] = [p for _, p in outcomes]
      self._last_node, self._last_actions = node, [a for a, _ in outcomes]
    else:
      self._last_node, self._last_actions = node, legal
      self.node_infoset[node] = self._infoset(
          state.information_state_string(player), player, count)
    return node

  def slot(self, parent, action):
    """The slot of `parent`'s child by action index `action`."""
    return int(self.child_start[parent]) + action

  # Saved and restored by the solver (solvers/grown.py): every array at
  # its capacity, and the counts.
  NODE_ARRAYS = ("node_kind", "node_player", "node_infoset", "child_start",
                 "node_parent", "num_children", "node_action", "utility")
  SLOT_ARRAYS = ("slot_node", "slot_prob")
  INFOSET_ARRAYS = ("infoset_player", "infoset_num_actions")
  HASH_ARRAYS = ("_keys", "_slot_row")

  def arrays(self):
    """{name: array} of every array of the tree."""
    return {n.lstrip("_"): getattr(self, n) for n in (
        self.NODE_ARRAYS + self.SLOT_ARRAYS + self.INFOSET_ARRAYS
        + self.HASH_ARRAYS)}

  def restore(self, arrays, counts, frozen):
    """Takes saved `arrays` (as `arrays()` names them) and counts (nodes,
    slots, infosets), after checking that they fit together; ValueError
    naming what does not."""
    num_nodes, num_slots, num_infosets = (int(c) for c in counts)
    for group, what in ((self.NODE_ARRAYS, "node"),
                        (self.SLOT_ARRAYS, "slot"),
                        (self.INFOSET_ARRAYS, "infoset")):
      size = len(arrays[group[0]])
      for name in group:
        if arrays[name].shape != (size,):
          raise ValueError(f"table 'grown_{name}' has shape "
                           f"{arrays[name].shape}, not ({size},) as the "
                           f"other {what} tables")
    nodes, slots = len(arrays["node_kind"]), len(arrays["slot_node"])
    isets = len(arrays["infoset_player"])
    hashed = len(arrays["slot_row"])
    if (hashed < 2 * isets or hashed & (hashed - 1)
        or arrays["keys"].shape != (hashed, 2)):
      raise ValueError("tables 'grown_keys' and 'grown_slot_row' do not form "
                       f"a hash table of at least {2 * isets} slots")
    if not (1 <= num_nodes <= nodes and 0 <= num_slots <= slots
            and 0 <= num_infosets <= isets):
      raise ValueError(f"counts ({num_nodes} nodes, {num_slots} slots, "
                       f"{num_infosets} infosets) outside the tables "
                       f"({nodes}, {slots}, {isets})")
    kind = arrays["node_kind"][:num_nodes]
    inner = kind != tree_lib.TERMINAL
    ends = (arrays["child_start"][:num_nodes][inner].astype(np.int64)
            + arrays["num_children"][:num_nodes][inner])
    children = arrays["slot_node"][:num_slots]
    rows = arrays["slot_row"]
    if (np.any((kind < 0) | (kind > tree_lib.TERMINAL))
        or np.any(ends > num_slots) or np.any(children >= num_nodes)
        or np.any(arrays["node_parent"][:num_nodes] >= num_nodes)
        or np.any(arrays["node_infoset"][:num_nodes] >= num_infosets)
        or np.any(rows >= num_infosets) or np.sum(rows >= 0) != num_infosets):
      raise ValueError("the grown tree's nodes, children, infosets or hash "
                       "slots point outside what it stores")
    for name, value in arrays.items():
      setattr(self, "_" + name if "_" + name in self.HASH_ARRAYS else name,
              value)
    self.num_nodes, self.num_slots = num_nodes, num_slots
    self.num_infosets = num_infosets
    self.frozen = bool(frozen)

  def path_to(self, node):
    """(path_node, path_action) from the root to `node`, as `state_of`
    takes them."""
    nodes, actions = [], []
    while node > 0:
      nodes.append(int(self.node_parent[node]))
      actions.append(int(self.node_action[node]))
      node = nodes[-1]
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
    if depth == start + 1:  # One move, the usual case.
      j = int(path_action[start])
      if path_node[start] == self._last_node:
        state.apply_action(self._last_actions[j])
      elif self.node_kind[path_node[start]] == tree_lib.CHANCE:
        state.apply_action(state.chance_outcomes()[j][0])
      else:
        state.apply_action(state.legal_actions()[j])
      return state
    kinds = self.node_kind[path_node[start:depth]].tolist()
    for kind, j in zip(kinds, path_action[start:depth].tolist()):
      if kind == tree_lib.CHANCE:
        state.apply_action(state.chance_outcomes()[j][0])
      else:
        state.apply_action(state.legal_actions()[j])
    return state
