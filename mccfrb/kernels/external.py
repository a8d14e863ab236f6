"""External-sampling MCCFR with weighting and regret-based pruning, on a
compiled tree, a grown tree or a native engine.

As OpenSpiel's `external_sampling_mccfr.py` (and a blog post on external-sampling MCCFR): for update player i,
chance and the opponent are sampled (one uniform per node, pre-order), every
action of i is explored, and at i's nodes
  R_I(a) += w_t (v(h a) - v(h)),   v(h) = sum_a sigma(I, a) v(h a).
Averaging "simple" adds w'_t sigma(I) at the opponent's nodes; "full" walks the
whole tree after both players' traversals adding w'_t pi_p(h) sigma(I) at every
decision node (OpenSpiel's FULL).

Weighting (the 1-die Dudo notes; Brown and Sandholm 2019): "linear" uses w_t = w'_t = t
(or min(t, linear_until)); "discounted" (alpha, beta, gamma) multiplies, after
iteration t, positive regrets by t^a/(t^a + 1) and negative ones by
t^b/(t^b + 1), applied lazily: an infoset catches up on the discounts it
missed when it is next visited, through prefix sums of the log-factors
(`log_pos`, `log_neg`); averages are weighted w'_t = t^gamma.

Pruning (Pluribus; Brown 2017), from iteration `prune_after` on, at the update
player's nodes, for actions with R(I, a) < C not leading to a terminal:
  1 "pluribus": skipped with probability `prune_probability`;
  2 "probabilistic": explored with probability q = max(floor, K / (K + C - R))
    and then weighted 1/q in the regret update (so it stays unbiased).
A pruned action gets no regret update and is left out of v(h) (its sigma is 0
under regret matching anyway, as its regret is negative). If every action
would be pruned, none is.

General trees (more than two players or general-sum; kernels/exact.py
`payoff`): an iteration is one traversal per player in player order, the
returns are the update player's own, and simple averaging adds sigma at
the nodes of the next player (p + 1) % P only, as OpenSpiel's
external_sampling_mccfr.py does for any number of players (with two
players: the opponent's nodes).

Threads (`es_batches`): the scheme of kernels/outcome.py. A traversal is an
episode (episode e of a batch: update player e % P, iteration t0 + e // P);
phase 1 runs a batch's traversals in parallel against the regrets of the
batch start, each drawing from its own SplitMix64 stream, and records the
regret increment of every update-player node it visits and sigma at every
opponent node (simple averaging), in visiting order; phase 2 applies them,
rows (infosets) partitioned among the workers, in episode and visiting
order (discounted rows catch up before an increment; a pruned action's
increment is 0). Full averaging makes one pass per batch after phase 2,
weighted by the sum of the batch's w'_t.

One traversal for every representation (`_traversals`): a compiled tree
(dense rows by infoset id), a grown tree (games/grown.py) and an engine
(games/engines/protocol.py: the game played move by move, rows found by
the infoset's 128-bit key in a hashed table, tables/hashed.py, fields
regret and avg, and with discounted weighting the header word `through`).
On an engine it keeps a stack of engine states, one per depth (a child's
state is its parent's copied one row down and advanced by the move, so
returning needs no undo), and per depth the row (-1 at an unstored
infoset, which plays uniform and gets no update) and the number of
moves. The arithmetic and the random draws are the same in every
representation, so on a game that compiles an engine's run equals the
tree's with the same seed bit for bit (tests/test_external_engine.py,
tests/test_compiled_engine.py). Only averaging "simple" runs on an engine
or a grown tree (solvers/external.py refuses "full").

On an engine rows are inserted on first visit while `allow_insert`, and
the kernel suspends *inside* a traversal, at the entry of a node, when an
insert would find the table short of room (meta[STOP] = 1) or after
`node_budget` nodes: the stack stays in the frames and `progress` records
where to resume; the caller grows the table (or freezes it) and calls
again. A run is the same however it is cut into calls. Threads on an
engine are Hogwild (solvers/external.py: one `es_engine_traversals` call
per worker, each on its own Python thread): in a block, worker w runs both
traversals of iterations w, w + W, w + 2 W, ..., each from its own
counter-based stream, against the shared tables with no locks
(increments may be lost to races; rows are inserted atomically); not
reproducible run to run.
"""

from typing import NamedTuple

import numba
import numpy as np
from numba import njit
from numba import prange

from mccfrb.kernels.exact import payoff
from mccfrb.kernels.exact import players_of
from mccfrb.kernels.exact import reach_probabilities
from mccfrb.kernels.exact import regret_matching_row
from mccfrb.kernels.baselines import learn
from mccfrb.kernels.outcome import key_hash
from mccfrb.kernels.outcome import Weights
from mccfrb.kernels.outcome import sample_index
from mccfrb.kernels.rng import batch_end
from mccfrb.kernels.rng import batch_key
from mccfrb.kernels.rng import pcg64_next
from mccfrb.kernels.rng import stream_start
from mccfrb.kernels.rng import stream_uniform
from mccfrb.kernels.threads import parallel_phases
from mccfrb.kernels.weighting import borrowed_discounts
from mccfrb.kernels.weighting import catch_up
from mccfrb.kernels.weighting import iteration_weight
from mccfrb.kernels import rows
from mccfrb.games.engines import protocol
from mccfrb.tables import hashed
from mccfrb.tables.atomics import borrow
from mccfrb.tables.atomics import flat


class Tree(NamedTuple):
  """A compiled or grown tree's arrays (`GameTree.kernel_args()`);
  slot_node a grown tree's (games/grown.py: the child of node n by action
  a is slot_node[child_start[n] + a], -1 if not stored), empty otherwise."""
  kind: np.ndarray
  player: np.ndarray
  infoset: np.ndarray
  child_start: np.ndarray
  num_children: np.ndarray
  edge_prob: np.ndarray
  utility: np.ndarray
  slot_node: np.ndarray


class Table(NamedTuple):
  """The rows `_traversals` reads through their cells: a row's regrets at
  rcells[r0 + a], its average's sums at acells[a0 + a], its discount stamp
  at twords[tw]. Dense rows (`_dense`): r0 = a0 = i width, tw = i for
  infoset i; hashed rows (tables/hashed.py): r0 the row's first cell, a0 =
  r0 + c, tw = the row + h_through (width unread)."""
  rcells: np.ndarray
  acells: np.ndarray
  twords: np.ndarray
  width: int
  h_through: int


class Engine(NamedTuple):
  """An engine's game and rows, and one worker's stack (`_traversals` mode
  ENGINE).

  Attributes:
    params: the engine's parameters (games/engines/protocol.py).
    tab: the hashed table (`hashed.Hashed`).
    states: int64[D + 2, state size], a state per depth (the last: scratch).
    frame_row, frame_count: int64[D + 1], each depth's row and moves.
    streams: uint64[W, 2], the Hogwild streams (streams[w, STREAM]: the
      stream of a suspended traversal).
    key_code, allow_keyed: the keyed baseline's key (kernels/baselines.py)
      and whether its rows may be inserted.
    frame_brow, frame_act: int64[D + 1], each depth's keyed row and sampled
      move.
  """
  params: np.ndarray
  tab: hashed.Hashed
  states: np.ndarray
  frame_row: np.ndarray
  frame_count: np.ndarray
  streams: np.ndarray
  key_code: int
  allow_keyed: bool
  frame_brow: np.ndarray
  frame_act: np.ndarray


class Prune(NamedTuple):
  """Regret-based pruning (module docstring): `pruning` 0 none, 1
  pluribus, 2 probabilistic; C `threshold`, the skip `probability`, K `k`,
  q's `floor`, from iteration `after` on."""
  pruning: int
  threshold: float
  probability: float
  k: float
  floor: float
  after: int


class Frames(NamedTuple):
  """A worker's traversal stack, a row per depth: the node (a tree's id),
  the child being explored (-1: a sampled node), and float64[D + 1, A]
  sigma, the children's values and their pruning weights."""
  node: np.ndarray
  child: np.ndarray
  sigma: np.ndarray
  values: np.ndarray
  weight: np.ndarray


class Full(NamedTuple):
  """Full averaging's tables and scratch (`_full_average`)."""
  num_actions: np.ndarray
  regrets: np.ndarray
  avg: np.ndarray
  strategy: np.ndarray
  reach: np.ndarray


class Recorded(NamedTuple):
  """RECORD's output (`es_batches`): traversal e's visited decision nodes
  in visiting order, nodes[e, :count[e]], and at each the regret
  increments (update player's, value) or sigma (opponent's, sigma)."""
  nodes: np.ndarray
  count: np.ndarray
  value: np.ndarray
  sigma: np.ndarray


@njit(cache=True, error_model="numpy")
def prune_weight(pruning, u, probability, k, threshold, regret, floor):
  """The weight of an action that pruning may skip, given the uniform u
  (module docstring): "pluribus" (1) skips it (0) with `probability`,
  else 1; "probabilistic" (2) explores it with probability q = max(floor,
  k / (k + threshold - regret)), weighted 1/q, else 0."""
  if pruning == 1:
    return 0.0 if u < probability else 1.0
  q = k / (k + threshold - regret)
  if q < floor:
    q = floor
  return 1.0 / q if u < q else 0.0


# The kernel's modes (`_traversals`, a compile-time constant: callers pass
# the number itself, as numba types a module constant as a plain integer,
# and a tree's engine code is protocol.TREE, 3).
TRAIN = 0    # a compiled tree, the solver's PCG64 (`es_iterations`)
RECORD = 2   # a compiled tree, phase 1 of a batch (`es_batches`)
GROWN = 3    # a grown tree, dry runs first (`es_grown`)
ENGINE = 4   # an engine's states and a hashed table (`es_engine_traversals`)
# progress[w, :]: a worker's share of a block of traversals and where it
# stands.
NEXT = 0      # the traversal being run (PENDING) or the next to start
END = 1       # one past the block's last traversal
BEGIN = 2     # the block's first traversal
PENDING = 3   # 1: traversal NEXT is under way, suspended at depth DEPTH
DEPTH = 4
RAN = 5       # traversals of the block this worker finished
PROGRESS_SIZE = 6
# streams[w, :]: a Hogwild worker's stream state and its block's key.
STREAM = 0
KEY = 1
# counters[w, :]: nodes touched, actions pruned.
TOUCHED = 0
PRUNED = 1
STOP = hashed.STOP


@njit(cache=True, error_model="numpy")
def es_iterations(kind, player, infoset, child_start, num_children, edge_prob,
                  utility, utility_sum, num_actions, regrets, avg, through,
                  averaging, weighting, linear_until, gamma, log_pos, log_neg,
                  pruning, prune_threshold, prune_probability, prune_k,
                  prune_floor, prune_after, first_iteration, num_iterations,
                  rng_state, frame_node, frame_child, frame_sigma,
                  frame_values, frame_weight, strategy, reach, counters):
  """Runs external-sampling iterations on a compiled tree (`_traversals`
  mode TRAIN); tables change in place.

  Args:
    regrets, avg: float64[I, A]. through: int64[I], the last iteration whose
      discount each regret row has had (weighting 2 only).
    averaging: 0 simple, 1 full. weighting: 0 none, 1 linear, 2 discounted.
    pruning: 0 none, 1 pluribus, 2 probabilistic.
    rng_state: uint64[4], the solver's PCG64 state (kernels/rng.py),
      advanced in place.
    frame_*: scratch of max_depth rows; strategy: float64[I, A] and reach:
      float64[N, P + 1] scratch for full averaging.
    counters: int64[2], incremented: nodes touched, actions pruned.
  """
  progress = np.zeros((1, PROGRESS_SIZE), dtype=np.int64)
  progress[0, END] = players_of(utility) * num_iterations
  _traversals(0, 3,  # TRAIN, protocol.TREE (unread)
              Tree(kind, player, infoset, child_start, num_children,
                   edge_prob, utility, np.zeros(0, dtype=np.int32)),
              utility_sum, _dense(regrets, avg, through), None,
              Weights(weighting, linear_until, gamma, log_pos, log_neg),
              Prune(pruning, prune_threshold, prune_probability, prune_k,
                    prune_floor, prune_after), averaging, first_iteration,
              False, 0, rng_state, np.uint64(0), 0, 1, progress,
              Frames(frame_node, frame_child, frame_sigma, frame_values,
                     frame_weight),
              counters, Full(num_actions, regrets, avg, strategy, reach),
              _no_records(), np.zeros(2, dtype=np.int64),
              np.zeros(0, dtype=np.int64), None)


@njit(cache=True, error_model="numpy", inline="always")
def _dense(regrets, avg, through):
  """The dense table of `_traversals`: row i's regrets at cell i A of the
  flat regrets, its average's sums at cell i A of the flat averages, its
  discount stamp through[i]."""
  return Table(regrets.reshape(regrets.size), avg.reshape(avg.size), through,
               regrets.shape[1], -1)


@njit(cache=True, error_model="numpy", inline="always")
def _no_records():
  return Recorded(np.zeros((0, 0), dtype=np.int64),
                  np.zeros(0, dtype=np.int64), np.zeros((0, 0, 0)),
                  np.zeros((0, 0, 0)))


@njit(cache=True, error_model="numpy")
def es_grown(kind, player, infoset, child_start, num_children, edge_prob,
             utility, slot_node, utility_sum, num_actions, regrets, avg, through,
             weighting, linear_until, gamma, log_pos, log_neg, pruning,
             prune_threshold, prune_probability, prune_k, prune_floor,
             prune_after, first_iteration, num_episodes, rng_state,
             frame_node, frame_child, frame_sigma, frame_values,
             frame_weight, counters, io, pending):
  """Traversals io[0] .. num_episodes - 1 with simple averaging on a grown
  tree (mccfrb/games/grown.py; `_traversals` mode GROWN): each runs first
  dry (no table changes, the generator restored after it), noting in
  `pending` the children it reaches that are not stored (the child of
  node n by action j is slot_node[child_start[n] + j], -1 if not stored),
  as pairs (n, j), and treating them as leaves; if it noted none it runs
  for real, taking the same samples, as `es_iterations` runs it.
  Otherwise the call returns with io[0] that traversal and io[1] the
  number of pairs noted (at most len(pending) // 2), the generator at that
  traversal's start, for the caller to store them and call again."""
  progress = np.zeros((1, PROGRESS_SIZE), dtype=np.int64)
  progress[0, NEXT] = io[0]
  progress[0, END] = num_episodes
  _traversals(3, 3,  # GROWN, protocol.TREE (unread)
              Tree(kind, player, infoset, child_start, num_children,
                   edge_prob, utility, slot_node), utility_sum,
              _dense(regrets, avg, through), None,
              Weights(weighting, linear_until, gamma, log_pos, log_neg),
              Prune(pruning, prune_threshold, prune_probability, prune_k,
                    prune_floor, prune_after), 0, first_iteration, False, 0,
              rng_state, np.uint64(0), 0, 1, progress,
              Frames(frame_node, frame_child, frame_sigma, frame_values,
                     frame_weight),
              counters, Full(num_actions, regrets, avg, np.zeros((0, 1)),
                             np.zeros((0, 1))),
              _no_records(), io, pending, None)


@njit(cache=True, error_model="numpy", inline="always")
def _child(grown, slot_node, slot):
  """The child node in `slot` (a grown tree's: -2 - slot if it is not
  stored)."""
  if not grown:
    return slot
  c = slot_node[slot]
  return c if c >= 0 else -2 - slot


@njit(cache=True, error_model="numpy")
def _note(pending, io, node, j):
  """Notes the child of `node` by action j as not stored (`es_grown`)."""
  if 2 * io[1] + 1 < pending.shape[0]:
    pending[2 * io[1]] = node
    pending[2 * io[1] + 1] = j
    io[1] += 1


# An engine's steps (`_traversals` with `eng`).


@njit(cache=True, inline="always")
def _descend(code, params, states, d, j):
  """states[d + 1] = states[d] advanced by move j (an engine's stack)."""
  for k in range(states.shape[1]):
    states[d + 1, k] = states[d, k]
  protocol.apply(code, params, states[d + 1], j)


@njit(cache=True, inline="always")
def _node(code, params, state, p, utility_sum):
  """(kind, player, moves, p's return) of an engine's state: kind 2
  terminal, 0 chance, 1 a decision."""
  q = protocol.player(code, params, state)
  if q == protocol.TERMINAL:
    u0 = protocol.returns0(code, params, state)
    return np.int64(2), q, np.int64(0), u0 if p == 0 else utility_sum - u0
  c = protocol.num_moves(code, params, state)
  return np.int64(0 if q == protocol.CHANCE else 1), q, c, 0.0


@njit(cache=True, inline="always")
def _chance(code, params, state, c, out, start, u):
  """The chance outcome of an engine's state for the uniform u, its
  probabilities written to out[start:start + c]."""
  for j in range(c):
    out[start + j] = protocol.chance_prob(code, params, state, j)
  return sample_index(out, start, c, u, 0.0)


@njit(cache=True, inline="always")
def _row(code, params, state, q, c, tab, allow_insert, workers, widest,
         no_block):
  """(row, suspend) of player q's infoset at an engine's state: the row
  found or inserted, -1 if it is not stored (the table full, or a
  detected collision, counted); suspend when an insert would find the
  table short of room (meta[STOP] set)."""
  index, meta, words = tab.index, tab.meta, tab.words
  h1, h2 = protocol.infoset_hash(code, params, state, q)
  row = hashed.find(index, words, h1, h2)
  if row < 0:
    if allow_insert and not hashed.has_room(meta, index, workers,
                                            workers * widest):
      meta[STOP] = 1
      return row, True
    row, _ = hashed.row_of(tab, h1, h2, c, allow_insert, no_block,
                           workers > 1)
  elif hashed.width_of(words, row) != c:  # A detected collision.
    meta[hashed.COLLISIONS] += 1
    row = -1
  return row, False


@njit(cache=True, inline="always")
def _hint_next(code, params, states, d, j, c, weights, index):
  """Prefetches the index slot of the infoset of the next explored child
  after child j of the node at depth d (its state played on the stack's
  last row, scratch): its miss then overlaps child j's subtree."""
  j += 1
  while j < c and weights[d, j] == 0.0:
    j += 1
  if j >= c:
    return
  last = states.shape[0] - 1
  for k in range(states.shape[1]):
    states[last, k] = states[d, k]
  protocol.apply(code, params, states[last], j)
  q = protocol.player(code, params, states[last])
  if q >= 0:
    h1, _ = protocol.infoset_hash(code, params, states[last], q)
    hashed.slot_hint(index, h1)


@njit(cache=True, inline="always")
def _explore(code, params, states, d, j, c, weights, index):
  """Enters explored child j of an engine's node at depth d, the index
  slot of the next explored child's infoset prefetched first."""
  _hint_next(code, params, states, d, j, c, weights, index)
  _descend(code, params, states, d, j)


@njit(cache=True, inline="always")
def _draw(use_stream, rng):
  """(rng, one uniform): from the counter-based stream, or the solver's
  PCG64; rng = (stream, PCG64 state high, low, increment high, low)."""
  stream, s_hi, s_lo, inc_hi, inc_lo = rng
  if use_stream:
    stream, u = stream_uniform(stream)
  else:
    s_hi, s_lo, u = pcg64_next(s_hi, s_lo, inc_hi, inc_lo)
  return (stream, s_hi, s_lo, inc_hi, inc_lo), u


@njit(cache=True, inline="always")
def keyed_row(code, params, state, key_code, d, c, keyed, widest,
              allow_insert):
  """(row, suspend) of the baseline at the sampled node at depth d (state
  `state`, c moves) under key `key_code` (`outcome.key_hash`): found or
  inserted; -1 (b = 0 there) where the table is frozen or a collision is
  detected (counted); suspend when an insert would find the table short
  of room (meta[STOP] set), as `_row`."""
  index, meta, words = keyed.index, keyed.meta, keyed.words
  h1, h2 = key_hash(code, params, state, key_code, d)
  row = hashed.find(index, words, h1, h2)
  if row < 0:
    if allow_insert and not hashed.has_room(meta, index, 1, widest):
      meta[STOP] = 1
      return row, True
    row, _ = hashed.row_of(keyed, h1, h2, c, allow_insert, meta[:0], False)
  elif hashed.width_of(words, row) != c:
    meta[hashed.COLLISIONS] += 1
    row = -1
  return row, False


@njit(cache=True, error_model="numpy", inline="always")
def keyed_correct(keyed, row, a_s, c, sigma, s0, value, p, utility_sum):
  """The baseline-corrected value of a sampled node (an opponent's or
  chance's; Schmid et al. 2019, Eqs. 9-10 with xi = sigma, the sampling
  policy there):

      u(h) = sum_a sigma(h, a) b(h, a) + u(h a*) - b(h, a*),

  with u(h a*) = `value` in player p's utility, sigma at sigma[s0 + a],
  and b(h, a) the row's cells (player 0's utility, read by p as
  utility_sum - b). Then b(h, a*) learns the running mean of u(h a*)
  (rule `child`). Row -1: `value` as it is."""
  if row < 0:
    return value
  cells, layout = keyed.cells, keyed.layout
  b0 = hashed.first_cell(row, layout[hashed.L_HEADER],
                         layout[hashed.L_PER_WORD])
  offset = 0.0 if p == 0 else utility_sum
  sign = 1.0 if p == 0 else -1.0
  mean = 0.0
  for j in range(c):
    mean += sigma[s0 + j] * (offset + sign * np.float64(cells[b0 + j]))
  corrected = mean + value - (offset + sign * np.float64(cells[b0 + a_s]))
  learn(cells, b0 + a_s, cells, b0 + c + a_s, offset + sign * value, 0.0)
  return corrected


@njit(cache=True, error_model="numpy", inline="always")
def regret_update(rcells, r0, c, sigma, values, weight, d, regret_w, write,
                  increments, acc):
  """The way up at a node h of the update player i, with every explored
  action's sampled value v(h a) = values[d, a] (Lanctot et al. 2009; the
  module docstring):

      v(h) = sum_a sigma(I, a) v(h a),
      R_I(a) += w_t / q_a (v(h a) - v(h)),

  the sums over the explored actions (weight[d, a] = 1 / q_a > 0: 1
  unless probabilistic pruning explored a with probability q_a; a pruned
  action, weight 0, gets no increment). w_t = regret_w (weighting).
  Adds the increments to rcells[r0 + a] if `write` (float32 cells count
  their rounding in `acc`, rows.count_store) and writes them to
  increments[a] if it has room (a batch's records, applied by
  `_apply_traversals`). Returns (v(h), acc)."""
  v = 0.0
  for a in range(c):
    if weight[d, a] > 0.0:
      v += sigma[d, a] * values[d, a]
  for a in range(c):
    x = 0.0
    if weight[d, a] > 0.0:
      x = regret_w * weight[d, a] * (values[d, a] - v)
      if write:
        old = rcells[r0 + a]
        rcells[r0 + a] = old + x
        acc = rows.count_store(acc, rcells, r0 + a, old, x)
    if increments.shape[0] > 0:
      increments[a] = x
  return v, acc


@njit(cache=True, error_model="numpy", inline="always")
def average_update(acells, a0, c, sigma, d, w, acc):
  """Simple averaging at a sampled node of the player averaged in this
  traversal (the opponent, with two players): avg[I, a] += w'_t
  sigma(I, a), w'_t = `w` (weighting). Returns `acc` (float32 cells,
  rows.count_store)."""
  for a in range(c):
    inc = w * sigma[d, a]
    old = acells[a0 + a]
    acells[a0 + a] = old + inc
    acc = rows.count_store(acc, acells, a0 + a, old, inc)
  return acc


class Run(NamedTuple):
  """A `_traversals` call's constants: its mode's flags (`record` RECORD,
  `grown` GROWN; `use_stream`: traversal e draws from stream_start(key,
  e), else from the solver's PCG64), simple (0) or full (1) averaging,
  u0 + u1, and an engine's insertion, workers and node budget."""
  record: bool
  grown: bool
  use_stream: bool
  averaging: int
  utility_sum: float
  allow_insert: bool
  workers: int
  node_budget: int


class Geometry(NamedTuple):
  """An engine's rows (`_traversals`): the table's row header and cells
  per word, and the words of its widest row and of the baselines'."""
  header: int
  per_word: int
  widest: int
  keyed_widest: int


class Walk(NamedTuple):
  """One traversal's constants (`_walk`): traversal e updates player p at
  iteration t with regret weight regret_w (w_t), simple averaging adds
  w'_t = w at the nodes of player `averaged`, pruning is on if
  `prune_now`; `dry`: a grown tree's dry run (module docstring)."""
  e: int
  p: int
  averaged: int
  t: int
  w: float
  regret_w: float
  prune_now: bool
  dry: bool


# What `_enter` and `_leave` did at depth d.
DOWN = 0   # entered a child: depth d + 1
UP = 1     # returns `ret` to the parent (a leaf, or the node is done)
HALT = 2   # suspended at the node's entry (an engine's table short of room)


@njit(cache=True, error_model="numpy", inline="always")
def _down(code, game, eng, keyed, frames, grown, d, s, a):
  """Enters the child by sampled move a of the node at depth d (a chance
  or an opponent's node; s: a tree's first child slot)."""
  frames.child[d] = -1
  if eng is not None:
    if keyed is not None:
      eng.frame_act[d] = a
    _descend(code, eng.params, eng.states, d, a)
  if game is not None:
    frames.node[d + 1] = _child(grown, game.slot_node, s + a)


@njit(cache=True, error_model="numpy", inline="always")
def _enter_explored(code, game, eng, frames, grown, d, s, j, c):
  """Enters explored child j of the update player's node at depth d."""
  frames.child[d] = j
  if eng is not None:
    _explore(code, eng.params, eng.states, d, j, c, frames.weight,
             eng.tab.index)
  if game is not None:
    frames.node[d + 1] = _child(grown, game.slot_node, s + j)


@njit(cache=True, error_model="numpy", inline="always")
def _decision_row(code, game, eng, geo, table, run, d, n, q, c):
  """(q, row, r0, a0, tw, stored, suspend) of the decision node at depth d
  (`Table`'s cells; an engine's row found or inserted by `_row`, -1 not
  stored)."""
  row = np.int64(0)
  if eng is not None:
    row, suspend = _row(code, eng.params, eng.states[d], q, c, eng.tab,
                        run.allow_insert, run.workers, geo.widest,
                        eng.tab.meta[:0])
    if suspend:
      return q, row, 0, 0, 0, False, True
    eng.frame_row[d] = row
    eng.frame_count[d] = c
    r0 = hashed.first_cell(row, geo.header, geo.per_word) if row >= 0 else 0
    return q, row, r0, r0 + c, row + table.h_through, row >= 0, False
  if game is not None:
    q = np.int64(game.player[n])
    row = np.int64(game.infoset[n])
  r0 = row * table.width
  return q, row, r0, r0, row, True, False


@njit(cache=True, error_model="numpy", inline="always")
def _current_sigma(table, weights, frames, run, walk, d, c, r0, tw, stored):
  """sigma(I) into frames.sigma[d] by regret matching, a discounted row
  caught up first (module docstring); uniform at an unstored row. A dry
  run leaves the lazy discounts to the real one (its traversal may end
  elsewhere, and a row caught up early would be discounted in two
  products instead of one): it matches the caught-up regrets, written to
  frames.values[d]. Returns whether it did (`lazy`)."""
  width = frames.sigma.shape[1]
  f_sigma = flat(frames.sigma)
  lazy = walk.dry and weights.weighting == 2
  if lazy:
    f_values = flat(frames.values)
    rows.caught_up_into(table.rcells, r0, c, table.twords, tw, walk.t,
                        weights.log_pos, weights.log_neg, f_values,
                        d * width)
    rows.match_into(f_values, d * width, c, f_sigma, d * width)
  elif stored:
    if weights.weighting == 2 and not run.record:
      rows.catch_up(table.rcells, r0, c, table.twords, tw, walk.t,
                    weights.log_pos, weights.log_neg)
    rows.match_into(table.rcells, r0, c, f_sigma, d * width)
  else:  # Not stored: uniform, never updated.
    for j in range(c):
      frames.sigma[d, j] = 1.0 / c
  return lazy


@njit(cache=True, error_model="numpy", inline="always")
def _prune_weights(code, game, eng, table, prune, frames, run, walk, rng,
                   io, pending, d, n, s, c, r0, lazy, stored):
  """At the update player's node at depth d: frames.weight[d, a], 1 for
  an explored action, 0 for a pruned one, 1 / q_a for one probabilistic
  pruning explored (module docstring; a child that is terminal, or a
  grown tree's that is not stored, is never pruned; if every action
  would be, none is); then enters the first explored child. Returns (rng,
  actions pruned)."""
  explored = 0
  for j in range(c):
    frames.weight[d, j] = 1.0
    r = frames.values[d, j] if lazy else np.float64(table.rcells[r0 + j])
    noted = False
    if game is not None:
      if run.grown and _child(True, game.slot_node, s + j) < 0:
        _note(pending, io, n, j)  # Not stored (dry runs): not pruned.
        noted = True
    if not noted and walk.prune_now and stored and r < prune.threshold:
      # An engine plays the child into row d + 1, overwritten when a
      # child is entered.
      leaf = False
      if eng is not None:
        _descend(code, eng.params, eng.states, d, j)
        leaf = protocol.player(code, eng.params,
                               eng.states[d + 1]) == protocol.TERMINAL
      if game is not None:
        leaf = game.kind[_child(run.grown, game.slot_node, s + j)] == 2
      if not leaf:
        rng, u = _draw(run.use_stream, rng)
        frames.weight[d, j] = prune_weight(
            prune.pruning, u, prune.probability, prune.k, prune.threshold,
            r, prune.floor)
    if frames.weight[d, j] > 0.0:
      explored += 1
  skipped = 0
  if explored == 0:
    for j in range(c):
      frames.weight[d, j] = 1.0
  elif not walk.dry:
    skipped = c - explored
  j = 0
  while frames.weight[d, j] == 0.0:
    j += 1
  _enter_explored(code, game, eng, frames, run.grown, d, s, j, c)
  return rng, skipped


@njit(cache=True, error_model="numpy", inline="always")
def _enter(code, game, eng, keyed, geo, table, weights, prune, frames,
           records, io, pending, run, walk, d, rng, acc, num_records):
  """The way down at the node at depth d: a leaf's value; at a chance
  node or an opponent's, one move sampled (simple averaging, or its
  record, at the averaged player's); at the update player's, sigma and
  the pruning weights, and the first explored child entered.

  Returns:
    (DOWN, UP (a leaf, its value `ret`) or HALT, ret, rng, acc,
    num_records, actions pruned).
  """
  n = 0
  s = 0
  q = np.int64(0)
  c = np.int64(0)
  k = np.int64(0)
  ret = 0.0
  if eng is not None:
    k, q, c, ret = _node(code, eng.params, eng.states[d], walk.p,
                         run.utility_sum)
  if game is not None:
    n = frames.node[d]
    if run.grown and n < 0:  # Not stored (dry runs only): a leaf.
      up = frames.node[d - 1]
      _note(pending, io, up, -2 - n - game.child_start[up])
      return UP, 0.0, rng, acc, num_records, 0
    k = np.int64(game.kind[n])
    if k == 2:
      return (UP, payoff(game.utility, run.utility_sum, n, walk.p), rng, acc,
              num_records, 0)
    s = game.child_start[n]
    c = np.int64(game.num_children[n])
  if k == 2:
    return UP, ret, rng, acc, num_records, 0
  if eng is not None:
    if keyed is not None:
      if k == 0 or q != walk.p:  # A sampled node: its baseline's row.
        eng.frame_brow[d], suspend = keyed_row(
            code, eng.params, eng.states[d], eng.key_code, d, c, keyed,
            geo.keyed_widest, eng.allow_keyed)
        if suspend:
          return HALT, ret, rng, acc, num_records, 0
        eng.frame_count[d] = c
  width = frames.sigma.shape[1]
  f_sigma = flat(frames.sigma)
  if k == 0:
    rng, u = _draw(run.use_stream, rng)
    a = 0
    if eng is not None:
      a = _chance(code, eng.params, eng.states[d], c, f_sigma, d * width, u)
    if game is not None:
      a = sample_index(game.edge_prob, s, c, u, 0.0)
    _down(code, game, eng, keyed, frames, run.grown, d, s, a)
    return DOWN, ret, rng, acc, num_records, 0
  q, row, r0, a0, tw, stored, suspend = _decision_row(
      code, game, eng, geo, table, run, d, n, q, c)
  if suspend:
    return HALT, ret, rng, acc, num_records, 0
  lazy = _current_sigma(table, weights, frames, run, walk, d, c, r0, tw,
                        stored)
  if q != walk.p:
    rng, u = _draw(run.use_stream, rng)
    a = sample_index(f_sigma, d * width, c, u, 0.0)
    if run.averaging == 0 and q == walk.averaged:
      if run.record:
        records.nodes[walk.e, num_records] = n
        for j in range(c):
          records.sigma[walk.e, num_records, j] = frames.sigma[d, j]
        num_records += 1
      elif not walk.dry and stored:
        acc = average_update(table.acells, a0, c, frames.sigma, d, walk.w,
                             acc)
    _down(code, game, eng, keyed, frames, run.grown, d, s, a)
    return DOWN, ret, rng, acc, num_records, 0
  rng, skipped = _prune_weights(code, game, eng, table, prune, frames, run,
                                walk, rng, io, pending, d, n, s, c, r0, lazy,
                                stored)
  return DOWN, ret, rng, acc, num_records, skipped


@njit(cache=True, error_model="numpy", inline="always")
def _leave(code, game, eng, keyed, geo, table, frames, records, run, walk,
           d, ret, acc, num_records, no_increments):
  """The way up at the node at depth d, its child's value `ret` returned:
  at a sampled node, `ret` as it is (an engine's baseline-corrected,
  `keyed_correct`); at the update player's, the next explored child
  entered, or after the last one the regret update (`regret_update`;
  RECORD records its increments instead).

  Returns:
    (DOWN or UP, the node's value, acc, num_records).
  """
  j = frames.child[d]
  if j < 0:
    if eng is not None:
      if keyed is not None:
        ret = keyed_correct(keyed, eng.frame_brow[d], eng.frame_act[d],
                            eng.frame_count[d], flat(frames.sigma),
                            d * frames.sigma.shape[1], ret, walk.p,
                            run.utility_sum)
    return UP, ret, acc, num_records
  frames.values[d, j] = ret
  n = 0
  s = 0
  c = np.int64(0)
  if eng is not None:
    c = eng.frame_count[d]
  if game is not None:
    n = frames.node[d]
    s = game.child_start[n]
    c = np.int64(game.num_children[n])
  j += 1
  while j < c and frames.weight[d, j] == 0.0:
    j += 1
  if j < c:
    _enter_explored(code, game, eng, frames, run.grown, d, s, j, c)
    return DOWN, ret, acc, num_records
  r0 = 0
  stored = True
  if eng is not None:
    row = eng.frame_row[d]
    r0 = hashed.first_cell(row, geo.header, geo.per_word) if row >= 0 else 0
    stored = row >= 0
  if game is not None:
    r0 = game.infoset[n] * table.width
  increments = no_increments
  if run.record:
    records.nodes[walk.e, num_records] = n
    increments = records.value[walk.e, num_records]
    num_records += 1
  write = not run.record and not walk.dry and stored
  ret, acc = regret_update(table.rcells, r0, c, frames.sigma, frames.values,
                           frames.weight, d, walk.regret_w, write,
                           increments, acc)
  return UP, ret, acc, num_records


@njit(cache=True, error_model="numpy", inline="always")
def _walk(code, game, eng, keyed, geo, table, weights, prune, frames,
          records, io, pending, run, walk, d, rng, acc, touched):
  """One traversal (module docstring), from the root, or resumed at the
  node at depth d, down (`_enter`) and up (`_leave`), on its stack of
  frames. Returns (the depth it ended or suspended at, rng, acc, nodes
  touched, actions pruned, records made, suspended)."""
  no_increments = flat(frames.values)[:0]  # Unrecorded: none kept.
  num_records = 0
  pruned = 0
  entering = True
  ret = 0.0
  while True:
    if entering:
      if eng is not None:
        if touched >= run.node_budget or (run.workers > 1
                                          and eng.tab.meta[STOP] != 0):
          return d, rng, acc, touched, pruned, num_records, True
      if not walk.dry:
        touched += 1
      step, ret, rng, acc, num_records, skipped = _enter(
          code, game, eng, keyed, geo, table, weights, prune, frames,
          records, io, pending, run, walk, d, rng, acc, num_records)
      pruned += skipped
      if step == HALT:
        return d, rng, acc, touched - 1, pruned, num_records, True
      entering = step == DOWN
    else:
      step, ret, acc, num_records = _leave(
          code, game, eng, keyed, geo, table, frames, records, run, walk, d,
          ret, acc, num_records, no_increments)
      entering = step == DOWN
    if step == DOWN:
      d += 1
    elif d == 0:
      return d, rng, acc, touched, pruned, num_records, False
    else:
      d -= 1


@njit(cache=True, error_model="numpy", _nrt=False)
def _traversals(mode, code, game, utility_sum, table, eng, weights, prune,
                averaging, first_iteration, allow_insert, node_budget,
                rng_state, key, worker, workers, progress, frames, counters,
                full, records, io, pending, keyed):
  """Worker `worker`'s traversals, progress[worker, NEXT] (resuming a
  suspended one first) up to progress[worker, END] - 1: traversal e
  updates player e % P at iteration first_iteration + e // P (`_walk`).
  The one external-sampling traversal of every representation: `game` a
  compiled or grown tree's `Tree`, or `eng` an engine's `Engine`, the
  other None (numba prunes the branches on them before it types the
  kernel: a tree's kernel never types an engine or a hashed table, an
  engine's never full averaging); `table` a `Table` of dense rows
  (`_dense`) or hashed ones.

  Compiled without numba's reference counts (`_nrt=False`; it allocates
  nothing): its pieces, inlined by numba, receive the tuples' arrays at
  every node, and with counts each array handed on costs a call to
  NRT_incref and one to NRT_decref, functions LLVM cannot inline, even
  for a borrowed array (tables/atomics.py): 0.13x the iterations a
  second on Leduc (BUILD_NOTES.md, "External sampling written once").

  Args:
    mode: a compile-time constant (numba.literally): TRAIN (full averaging
      after every iteration's last traversal when averaging is 1), RECORD
      (phase 1 of `es_batches`, into `records`), GROWN (`es_grown`, with
      `io`, `pending`), ENGINE (`es_engine_traversals`).
    code: the engine's code (a compile-time constant; 3, unread, on a
      tree).
    weights, prune, frames, full: `Weights`, `Prune`, a worker's `Frames`,
      `Full` (read in TRAIN with full averaging only).
    allow_insert, node_budget: an engine's: insert unstored infosets;
      suspend after this many nodes.
    rng_state: uint64[4], the solver's PCG64, advanced in place when the
      kernel draws from it (TRAIN, GROWN, an engine with one worker);
      RECORD and Hogwild workers draw traversal e from stream_start(key,
      e).
    progress: int64[W, PROGRESS_SIZE]; counters: int64[2], incremented.
    keyed: None, or an engine's baselines at the sampled nodes
      (`hashed.Hashed`; `keyed_row`, `keyed_correct`).

  Returns:
    False when suspended (an engine's table short of room, meta[STOP] = 1,
    or the node budget spent), else True.
  """
  numba.literally(mode)
  numba.literally(code)
  num_players = 2
  if game is not None:
    num_players = players_of(game.utility)
  use_stream = mode == RECORD
  stream = np.uint64(0)
  resume = False
  z = np.int64(0)
  geo = Geometry(z, z, z, z)
  if eng is not None:
    layout = eng.tab.layout
    keyed_widest = z
    if keyed is not None:
      keyed_widest = hashed.layout_row_words(keyed.layout,
                                             frames.sigma.shape[1])
    geo = Geometry(layout[hashed.L_HEADER], layout[hashed.L_PER_WORD],
                   hashed.layout_row_words(layout, frames.sigma.shape[1]),
                   keyed_widest)
    use_stream = workers > 1
    stream = eng.streams[worker, STREAM]
    resume = progress[worker, PENDING] != 0
  run = Run(mode == RECORD, mode == GROWN, use_stream, averaging,
            utility_sum, allow_insert, workers, node_budget)
  acc = rows.Counts(0, 0.0, 0.0, 0)  # float32 cells' updates.
  rng = (stream, rng_state[0], rng_state[1], rng_state[2], rng_state[3])
  e = progress[worker, NEXT]
  end = progress[worker, END]
  d = progress[worker, DEPTH] if resume else 0
  ran = progress[worker, RAN]
  if run.grown:
    io[1] = 0
  touched = 0
  pruned = 0
  suspended = False
  while resume or e < end:
    t = first_iteration + e // num_players
    p = e % num_players
    w = iteration_weight(weights.weighting, t, weights.linear_until,
                         weights.gamma)
    start = rng
    # A grown tree's traversal runs dry first (`es_grown`).
    for attempt in range(2 if run.grown else 1):
      if attempt == 1 and io[1] > 0:
        break
      if not resume:
        rng = start
        if use_stream:
          rng = (stream_start(key, e), rng[1], rng[2], rng[3], rng[4])
        d = 0
        if eng is not None:
          protocol.reset(code, eng.params, eng.states[0])
        if game is not None:
          frames.node[0] = 0
      resume = False
      walk = Walk(e, p, (p + 1) % num_players, t, w,
                  w if weights.weighting == 1 else 1.0,
                  prune.pruning != 0 and t >= prune.after,
                  run.grown and attempt == 0)
      d, rng, acc, touched, skipped, num_records, suspended = _walk(
          code, game, eng, keyed, geo, table, weights, prune, frames,
          records, io, pending, run, walk, d, rng, acc, touched)
      pruned += skipped
      if suspended:
        break
      if run.record:
        records.count[e] = num_records
      if game is not None:
        if averaging == 1 and p == num_players - 1 and not run.record:
          _full_average(game.kind, game.player, game.infoset,
                        game.child_start, game.num_children, game.edge_prob,
                        full.num_actions, full.regrets, full.avg,
                        table.twords, weights.weighting, weights.log_pos,
                        weights.log_neg, t + 1, w, full.strategy, full.reach)
          touched += game.kind.shape[0]
    if suspended:
      break
    if run.grown and io[1] > 0:
      io[0] = e
      rng = start
      break
    ran += 1
    if use_stream and not run.record and e % 2 == 1:
      # Hogwild (two players): this worker's next iteration.
      e += 2 * workers - 1
    else:
      e += 1
  if run.grown and io[1] == 0:
    io[0] = end
  progress[worker, NEXT] = e
  progress[worker, PENDING] = 1 if suspended else 0
  progress[worker, DEPTH] = d
  progress[worker, RAN] = ran
  if eng is not None:
    eng.streams[worker, STREAM] = rng[0]
    rows.flush_counts(eng.tab.meta, acc)
  counters[TOUCHED] += touched
  counters[PRUNED] += pruned
  if not use_stream:
    rng_state[0] = rng[1]
    rng_state[1] = rng[2]
  return not suspended


@njit(cache=True, error_model="numpy")
def _full_average(kind, player, infoset, child_start, num_children, edge_prob,
                  num_actions, regrets, avg, through, weighting, log_pos,
                  log_neg, next_iteration, w, strategy, reach):
  """Full averaging (OpenSpiel's FULL): avg(I) += w pi_owner(h) sigma(I) at
  every decision node h, sigma by regret matching of the regrets caught up
  to `next_iteration` (discounted weighting)."""
  regrets, through, log_pos, log_neg = borrowed_discounts(
      regrets, through, log_pos, log_neg)
  for i in range(regrets.shape[0]):
    if weighting == 2:
      catch_up(regrets, i, num_actions[i], through, next_iteration, log_pos,
               log_neg)
    regret_matching_row(regrets, i, num_actions[i], strategy, i)
  reach_probabilities(kind, player, infoset, child_start, num_children,
                      edge_prob, strategy, reach)
  for n in range(kind.shape[0]):
    if kind[n] != 1:
      continue
    i = infoset[n]
    own = reach[n, player[n]]
    for j in range(num_children[n]):
      avg[i, j] += w * own * strategy[i, j]


@njit(cache=True, error_model="numpy", parallel=parallel_phases())
def es_batches(kind, player, infoset, child_start, num_children, edge_prob,
               utility, utility_sum, num_actions, regrets, avg, through,
               averaging, weighting, linear_until, gamma, log_pos, log_neg,
               pruning, prune_threshold, prune_probability, prune_k,
               prune_floor, prune_after, first_iteration, num_iterations,
               batch, rng_state, workers, frame_node, frame_child,
               frame_sigma, frame_values, frame_weight, strategy, reach,
               counters, rec_nodes, rec_count, rec_value, rec_sigma):
  """External-sampling iterations in batches, traversals in parallel
  (module docstring; the scheme of kernels/outcome.py `run_batches`).

  Batches end at multiples of `batch` in the iteration count (or at this
  call's last iteration); each draws one key from `rng_state`.

  The arguments are those of `es_iterations`, with the frames and
  `counters` stacked on a leading axis of `workers` rows, and the records
  of a batch (`_traversals`), R a bound on the decision nodes one traversal
  visits (solvers/external.py):

  Args:
    rec_nodes: int64[2 batch, R], the nodes of each traversal.
    rec_count: int64[2 batch], how many.
    rec_value, rec_sigma: float64[2 batch, R, A], what each traversal
      recorded at those nodes (`_traversals`).
  """
  last_iteration = first_iteration + num_iterations - 1
  t0 = first_iteration
  num_players = players_of(utility)
  progress = np.zeros((workers, PROGRESS_SIZE), dtype=np.int64)
  io = np.zeros(2, dtype=np.int64)
  pending = np.zeros(0, dtype=np.int64)
  no_slots = np.zeros(0, dtype=np.int32)
  while t0 <= last_iteration:
    t1 = batch_end(t0, batch, last_iteration)
    count = num_players * (t1 - t0 + 1)
    key = batch_key(rng_state)
    for wk in range(workers):
      progress[wk, :] = 0
      progress[wk, NEXT] = wk * count // workers
      progress[wk, END] = (wk + 1) * count // workers
    for wk in prange(workers):
      # The tuples are made in the loop: a parallel loop takes no tuple
      # of arrays from outside it.
      _traversals(2, 3,  # RECORD, protocol.TREE (unread)
                  Tree(kind, player, infoset, child_start, num_children,
                       edge_prob, utility, no_slots),
                  utility_sum, _dense(regrets, avg, through), None,
                  Weights(weighting, linear_until, gamma, log_pos, log_neg),
                  Prune(pruning, prune_threshold, prune_probability, prune_k,
                        prune_floor, prune_after),
                  averaging, t0, False, 0, rng_state, key, np.int64(wk),
                  workers, progress,
                  Frames(frame_node[wk], frame_child[wk], frame_sigma[wk],
                         frame_values[wk], frame_weight[wk]),
                  counters[wk],
                  Full(num_actions, regrets, avg, strategy, reach),
                  Recorded(rec_nodes, rec_count, rec_value, rec_sigma), io,
                  pending, None)
    for part in prange(workers):
      _apply_traversals(player, infoset, num_children, regrets, avg, through,
                        weighting, linear_until, gamma, log_pos, log_neg, t0,
                        count, np.int64(part), workers, num_players, rec_nodes,
                        rec_count, rec_value, rec_sigma)
    if averaging == 1:
      total = 0.0
      for t in range(t0, t1 + 1):
        total += iteration_weight(weighting, t, linear_until, gamma)
      _full_average(kind, player, infoset, child_start, num_children,
                    edge_prob, num_actions, regrets, avg, through, weighting,
                    log_pos, log_neg, t1 + 1, total, strategy, reach)
      counters[0, 0] += kind.shape[0]
    t0 = t1 + 1


@njit(cache=True, error_model="numpy")
def _apply_traversals(player, infoset, num_children, regrets, avg, through,
                      weighting, linear_until, gamma, log_pos, log_neg,
                      first_iteration, num_episodes, part, parts,
                      num_players, rec_nodes, rec_count, rec_value,
                      rec_sigma):
  """Phase 2 of a batch for the infosets i % parts == part: the records in
  episode and visiting order, as `_traversals` applies them (the regret
  increments `regret_update` recorded at the update player's nodes,
  `average_update` at the opponent's)."""
  regrets, through, log_pos, log_neg = borrowed_discounts(
      regrets, through, log_pos, log_neg)
  width = avg.shape[1]
  flat_avg = avg.reshape(avg.size)
  acc = rows.Counts(0, 0.0, 0.0, 0)  # float64 cells: nothing to count.
  for e in range(num_episodes):
    t = first_iteration + e // num_players
    p = e % num_players
    w = iteration_weight(weighting, t, linear_until, gamma)
    for r in range(rec_count[e]):
      n = rec_nodes[e, r]
      i = infoset[n]
      if i % parts != part:
        continue
      c = num_children[n]
      if player[n] == p:
        if weighting == 2:
          catch_up(regrets, i, c, through, t, log_pos, log_neg)
        for j in range(c):
          regrets[i, j] += rec_value[e, r, j]
      else:
        acc = average_update(flat_avg, i * width, c, rec_sigma[e], r, w, acc)


@njit(cache=True, error_model="numpy")
def traversal_bound(kind, player, infoset, child_start, num_children,
                    num_players):
  """The most decision nodes one traversal visits, for any update player:
  children first, [decision node] + the sum over the children at the
  update player's nodes (all explored) or their maximum elsewhere (one
  sampled); sizes the records of `es_batches`."""
  visits = np.zeros(kind.shape[0], dtype=np.int64)
  bound = 1
  for p in range(num_players):
    for n in range(kind.shape[0] - 1, -1, -1):
      if kind[n] == 2:
        visits[n] = 0
        continue
      s = child_start[n]
      explore = kind[n] == 1 and player[n] == p
      below = 0
      for j in range(num_children[n]):
        if explore:
          below += visits[s + j]
        else:
          below = max(below, visits[s + j])
      visits[n] = (1 if kind[n] == 1 else 0) + below
    bound = max(bound, visits[0])
  return bound


@njit(cache=True, error_model="numpy", nogil=True)
def es_engine_traversals(code, params, utility_sum, tab, h_through,
                         weighting, linear_until, gamma, log_pos, log_neg,
                         pruning, prune_threshold, prune_probability, prune_k,
                         prune_floor, prune_after, allow_insert, node_budget,
                         rng_state, worker, workers, progress, streams,
                         states, frame_row, frame_count, frame_child,
                         frame_sigma, frame_values, frame_weight, counters,
                         keyed, key_code, allow_keyed, frame_brow,
                         frame_act):
  """`_traversals` on an engine (mode ENGINE, the module docstring):
  worker `worker`'s share of a block of traversals, progress[worker, NEXT]
  (resuming a suspended one first) up to progress[worker, END] - 1; with
  W workers both traversals of every W-th iteration. Traversal e updates
  player e % 2 at iteration e // 2 + 1. One worker draws from the
  solver's PCG64 (`rng_state`, as the tree's runs), several from
  `stream_start(streams[worker, KEY], e)`.

  Args:
    code, params, utility_sum: the engine (protocol.py) and u0 + u1.
    tab: the rows' `hashed.Hashed` (tables/hashed.py): field 0
      the regrets, field 1 the average's sums; h_through: the header word
      of the discount stamp (discounted weighting), or -1.
    weighting ... prune_after: as `es_iterations`.
    allow_insert: insert unstored infosets (else they play uniform).
    node_budget: suspend after this many nodes (this call).
    progress: int64[W, PROGRESS_SIZE]; streams: uint64[W, 2].
    states: int64[W, D + 2, state size] (the last row: scratch);
      frame_row, frame_count, frame_child: int64[W, D + 1]; frame_sigma,
      frame_values, frame_weight: float64[W, D + 1, A] (D: the engine's
      max_depth, A: its max_moves).
    counters: int64[W, 2], incremented: nodes touched, actions pruned.
    keyed: None, or the baselines' hashed table (`_traversals`), keyed by
      key_code, its rows inserted while allow_keyed; frame_brow,
      frame_act: int64[W, D + 1], each depth's keyed row and sampled move.

  Returns:
    True when the block is done; False when suspended (the table was short
    of room, meta[STOP] = 1, or the node budget ran out).
  """
  numba.literally(code)
  words, cells = tab.words, tab.cells
  return _traversals(
      4, code, None, utility_sum,  # ENGINE
      Table(cells, cells, words, 0, h_through),
      Engine(params, tab, borrow(states)[worker], borrow(frame_row)[worker],
             borrow(frame_count)[worker], streams, key_code, allow_keyed,
             borrow(frame_brow)[worker], borrow(frame_act)[worker]),
      Weights(weighting, linear_until, gamma, log_pos, log_neg),
      Prune(pruning, prune_threshold, prune_probability, prune_k,
            prune_floor, prune_after), 0, 1, allow_insert, node_budget,
      rng_state, streams[worker, KEY], worker, workers, progress,
      Frames(np.zeros(1, dtype=np.int64), borrow(frame_child)[worker],
             borrow(frame_sigma)[worker], borrow(frame_values)[worker],
             borrow(frame_weight)[worker]),
      borrow(counters)[worker], None, _no_records(),
      np.zeros(2, dtype=np.int64), np.zeros(0, dtype=np.int64), keyed)
