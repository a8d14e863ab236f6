"""Sweep schedules of a compiled tree for the exact kernels.

The exact kernels (kernels/cfr.py, `best_response_levels` in kernels/exact.py)
walk a `Schedule`, computed once per tree:

- block order: node ids as `compile_tree` numbers them, a depth-first
  expansion that gives each node's children one block of ids, so the
  descendants of every node form one contiguous range. A tree numbered
  otherwise (the kernels assume nothing beyond root 0, consecutive
  children and child ids above their parent's) is renumbered into a copy;
- tasks: the internal (non-terminal) nodes at the frontier depth are task
  roots; a task is its root and the range of its descendants. Tasks are
  independent in a top-down or bottom-up sweep, so threads share them out;
  the internal nodes above the frontier (the top) are swept on one thread,
  before the tasks top-down and after them bottom-up;
- decision-node slots: the decision nodes numbered by (player, infoset,
  tree id), so an infoset's nodes are consecutive and in ascending id
  order; infoset sums are accumulated in this fixed order by one thread per
  infoset, so no result depends on the thread count;
- chance's reach of every node, which no strategy changes;
- for each best-responding player, the internal nodes of each task and of
  the top grouped by the responder's level (`own_levels`), and its infosets
  by level.
"""

from typing import NamedTuple

import numpy as np

from mccfrb.kernels import exact

# The frontier is the shallowest depth with at least this many internal
# nodes (or, if none has, the depth with the most): enough tasks to share
# out among many threads, and a top small enough to run on one.
MIN_TASKS = 64
# Sweeps skip zero-reach subtrees of at least this many nodes only: a test
# costs about as much as a node, and skipping a few nodes saves little.
MIN_SKIP = 16
# Schedules of the most recently used trees kept by `schedule_of`.
CACHE_SIZE = 4


class ResponderLevels(NamedTuple):
  """The internal nodes of each task and of the top by a responder's level.

  Attributes:
    max_level: the largest level of the responder's infosets (0 if none).
    level_start: int64[(T + 1) * (max_level + 2) + 1]; task k's (k < T) or
      the top's (k = T) internal nodes of level l (levels 0 .. max_level +
      1) are level_nodes[level_start[k * (max_level + 2) + l]: ... + 1]], in
      descending id order (children before parents).
    level_nodes: int32.
    iset_start: int64[max_level + 2]; the responder's infosets of level l
      are isets[iset_start[l]:iset_start[l + 1]], ascending.
    isets: int32.
  """
  max_level: int
  level_start: np.ndarray
  level_nodes: np.ndarray
  iset_start: np.ndarray
  isets: np.ndarray


class SweepArgs(NamedTuple):
  """The schedule's arrays `kernels.cfr.cfr_iterations` reads
  (`Schedule.cfr_args()`; the fields as `Schedule`'s)."""
  top_nodes: np.ndarray
  task_start: np.ndarray
  task_end: np.ndarray
  skip_end: np.ndarray
  iset_start: np.ndarray
  iset_slot: np.ndarray
  player_iset_start: np.ndarray
  player_isets: np.ndarray
  slot_of: np.ndarray
  chance: np.ndarray
  prune: bool
  zero_chance: bool


class Schedule(NamedTuple):
  """Node and infoset orders of a `GameTree` for the exact kernels.

  Node ids below are block-order ids (see the module docstring); they are
  the tree's own ids unless `order` is not None.

  Attributes:
    tree: the arrays of `GameTree.kernel_args()` in block order.
    order: None, or int64[N]: the tree's id of each block-order id.
    frontier: the depth of the task roots.
    top_nodes: int32, the internal nodes above the frontier and the task
      roots, ascending.
    task_start, task_end: int32[T]; task k is the descendants of the k-th
      internal node at the frontier depth: ids task_start[k] ..
      task_end[k] - 1.
    skip_end: int32[N]: for an internal node of a task whose subtree has
      at least MIN_SKIP nodes, 1 + its subtree's largest id (its
      descendants are child_start[n] .. skip_end[n] - 1); else 0.
    iset_start: int64[I + 1]; infoset i has iset_start[i + 1] -
      iset_start[i] decision nodes.
    player_iset_start: int64[3]; player p's infosets are
      player_isets[player_iset_start[p]:player_iset_start[p + 1]].
    player_isets: int32.
    slot_of: int32[N], each decision node's slot: its rank among the
      decision nodes ordered by (player, infoset, tree id); -1 elsewhere.
    iset_slot: int64[I]; infoset i's slots are iset_slot[i] ..
      iset_slot[i] + iset_start[i + 1] - iset_start[i] - 1.
    slot_node: int32[S], the node of each slot.
    chance: float64[N], chance's reach of every node.
    prune: whether zero-reach pruning is exact on this tree: chance's reach
      never underflows to 0 and every utility is finite (BUILD_NOTES.md).
    zero_chance: whether some internal node has chance reach 0 (a chance
      outcome of probability 0); if not, the sweeps need not test it.
    responders: (ResponderLevels of player 0, of player 1).
  """
  tree: tuple
  order: object
  frontier: int
  top_nodes: np.ndarray
  task_start: np.ndarray
  task_end: np.ndarray
  skip_end: np.ndarray
  iset_start: np.ndarray
  player_iset_start: np.ndarray
  player_isets: np.ndarray
  slot_of: np.ndarray
  iset_slot: np.ndarray
  slot_node: np.ndarray
  chance: np.ndarray
  prune: bool
  zero_chance: bool
  responders: tuple

  @property
  def num_tasks(self):
    return len(self.task_start)

  @property
  def num_slots(self):
    return int(self.iset_start[-1])

  def cfr_args(self):
    """The `SweepArgs` `kernels.cfr.cfr_iterations` takes."""
    return SweepArgs(self.top_nodes, self.task_start, self.task_end,
                     self.skip_end, self.iset_start, self.iset_slot,
                     self.player_iset_start, self.player_isets, self.slot_of,
                     self.chance, self.prune, self.zero_chance)

  def best_response_args(self, player):
    """The schedule arrays `exact.best_response_levels` takes for `player`."""
    r = self.responders[player]
    return (self.top_nodes, self.task_start, self.task_end, r.max_level,
            r.level_start, r.level_nodes, r.iset_start, r.isets,
            self.iset_start, self.iset_slot, self.slot_node)


def _buckets(keys, num_keys, values=None):
  """(start, order): a stable counting sort of `keys` (negatives left out);
  `order` holds `values[m]` (default m) for each kept index m."""
  start = np.zeros(num_keys + 1, dtype=np.int64)
  order = np.zeros(int(np.count_nonzero(keys >= 0)), dtype=np.int32)
  exact.bucket_order(keys, num_keys, start, order)
  if values is not None:
    order = values[order].astype(np.int32)
  return start, order


def _block_tree(tree):
  """(kernel arrays in block order, order or None if already in it)."""
  args = tree.kernel_args()
  kind, child_start, num_children = args[0], args[3], args[4]
  order = np.zeros(tree.num_nodes, dtype=np.int64)
  exact.block_order(kind, child_start, num_children, order, np.zeros(
      tree.max_depth * max(tree.max_actions, 1) + 1, dtype=np.int64))
  if np.array_equal(order, np.arange(tree.num_nodes)):
    return args, None
  new_id = np.empty_like(order)
  new_id[order] = np.arange(tree.num_nodes)
  moved = [a[order] for a in args]
  internal = moved[0] != 2
  first_child = child_start[order]
  moved[3] = np.where(internal, new_id[first_child], 0).astype(
      child_start.dtype)
  return tuple(moved), order


def build_schedule(tree):
  """The `Schedule` of `tree` (a few linear passes over its nodes)."""
  n = tree.num_nodes
  arrays, order = _block_tree(tree)
  kind, player, infoset, child_start, num_children, edge_prob, utility = arrays
  depth = np.zeros(n, dtype=np.int32)
  exact.node_depths(kind, child_start, num_children, depth)
  internal = np.flatnonzero(kind != 2)
  counts = np.bincount(depth[internal], minlength=1)
  wide = np.flatnonzero(counts >= MIN_TASKS)
  frontier = int(wide[0]) if len(wide) else int(np.argmax(counts))
  task = np.zeros(n, dtype=np.int32)
  num_tasks = exact.subtree_tasks(kind, child_start, num_children, depth,
                                  frontier, task)
  end = np.zeros(n, dtype=np.int64)
  exact.subtree_ends(kind, child_start, num_children, end)
  top_nodes = internal[depth[internal] <= frontier].astype(np.int32)
  task_roots = internal[depth[internal] == frontier]
  task_start = child_start[task_roots].astype(np.int32)
  task_end = end[task_roots].astype(np.int32)
  big = ((kind != 2) & (depth > frontier)
         & (end - child_start >= MIN_SKIP))
  skip_end = np.where(big, end, 0).astype(np.int32)
  # Slots: the decision nodes by (player, infoset, tree id), so each
  # infoset's slots are consecutive and in ascending tree id order.
  decision = np.flatnonzero(kind == 1)
  tree_id = decision if order is None else order[decision]
  decision = decision[np.argsort(tree_id, kind="stable")]
  iset_start, ranked = _buckets(infoset[decision], tree.num_infosets,
                                decision)
  player_iset_start, player_isets = _buckets(
      tree.infoset_player.astype(np.int32), 2)
  sizes = np.diff(iset_start)
  iset_slot = np.zeros(tree.num_infosets, dtype=np.int64)
  iset_slot[player_isets] = np.cumsum(sizes[player_isets]) - sizes[player_isets]
  owner = np.repeat(np.arange(tree.num_infosets), sizes)
  slot_node = np.zeros(len(ranked), dtype=np.int32)
  slot_node[iset_slot[owner] + np.arange(len(ranked)) - iset_start[owner]] = (
      ranked)
  slot_of = np.full(n, -1, dtype=np.int32)
  slot_of[slot_node] = np.arange(len(slot_node))
  chance = np.zeros(n)
  underflow = exact.chance_reach(kind, child_start, num_children, edge_prob,
                                 chance)
  prune = bool(not underflow and np.isfinite(utility).all())
  zero_chance = bool((chance[kind != 2] == 0.0).any())
  segment = np.where(depth > frontier, task, num_tasks)[internal[::-1]]
  responders = []
  for p in (0, 1):
    own_level = np.zeros(n, dtype=np.int32)
    infoset_level = np.zeros(tree.num_infosets, dtype=np.int32)
    max_level = exact.own_levels(kind, player, infoset, child_start,
                                 num_children, p, own_level, infoset_level)
    width = max_level + 2  # Internal nodes have levels 0 .. max_level + 1.
    level_start, level_nodes = _buckets(
        segment.astype(np.int64) * width + own_level[internal[::-1]],
        (num_tasks + 1) * width, internal[::-1])
    iset_level_start, level_isets = _buckets(infoset_level, max_level + 1)
    responders.append(ResponderLevels(int(max_level), level_start,
                                      level_nodes, iset_level_start,
                                      level_isets))
  return Schedule(arrays, order, frontier, top_nodes, task_start, task_end,
                  skip_end, iset_start, player_iset_start, player_isets,
                  slot_of, iset_slot, slot_node, chance, prune, zero_chance,
                  tuple(responders))


_cache = []


def schedule_of(tree):
  """`build_schedule(tree)`, cached for the CACHE_SIZE most recent trees
  (by identity: a GameTree's arrays are never changed after the compile)."""
  for i, (cached_tree, schedule) in enumerate(_cache):
    if cached_tree is tree:
      _cache.append(_cache.pop(i))
      return schedule
  schedule = build_schedule(tree)
  _cache.append((tree, schedule))
  del _cache[:-CACHE_SIZE]
  return schedule
