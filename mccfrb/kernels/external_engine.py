"""External-sampling MCCFR on a native engine (no tree).

The traversal of kernels/external.py (`_traversals`, mode 0), played by an
engine (mccfrb/games/engines/protocol.py) instead of read from a compiled tree,
with infoset rows found by the engine's 128-bit key in a hashed table
(tables/hashed.py: fields regret and avg, and with discounted weighting
the header word `through`). Traversal e updates player i = e % 2 at
iteration t = e // 2 + 1; chance and the opponent are sampled (one uniform
per node, pre-order), every action of i is explored, and at i's rows
  R_I(a) += w_t (v(h a) - v(h)),   v(h) = sum_a sigma(I, a) v(h a),   (1)
sigma(I) the regret matching of R_I (sigma(I, a) = R+_I(a) / sum_b
R+_I(b), uniform if the sum is 0); the opponent's rows get the simple
average
  avg_I(a) += w'_t sigma(I, a).                                        (2)
Weighting (Brown and Sandholm 2019): 0 none (w = w' = 1), 1 linear (w_t =
w'_t = t, or min(t, linear_until)), 2 discounted (rows catch up lazily on
the factors t^alpha / (t^alpha + 1), t^beta / (t^beta + 1) they missed,
kernels/weighting.py; w'_t = t^gamma). Pruning (Brown 2017, Pluribus), at
i's rows from iteration `prune_after` on, for actions with R_I(a) < C whose
child is not terminal: 1 "pluribus" skips the action with probability
`prune_probability`; 2 "probabilistic" explores it with probability q =
max(floor, K / (K + C - R_I(a))) and weighs its regret increment by 1 / q.
A pruned action gets no regret increment and is left out of v(h); if every
action would be pruned, none is. The tree kernel's full averaging walks the
whole tree each iteration and has no engine form (solvers/external.py
refuses it).

The arithmetic is the tree kernel's, operation for operation, and so are
the random draws (the solver's PCG64 inline, in the same order), so on a
game that compiles a run equals the tree run with the same seed bit for bit
(tests/test_external_engine.py).

The traversal keeps a stack of engine states, one per depth
(`states[w, d]`: int64[state size]): a child's state is its parent's copied
one row down and advanced by the move, so returning to a parent needs no
undo. Per depth it keeps the row of the infoset (-1 at chance or an
unstored infoset), the number of moves, the child being explored (-1 where
one move was sampled), sigma (or the chance probabilities), the children's
values and the pruning weights (0 pruned, 1, or 1 / q).

Rows are inserted on first visit while `allow_insert`; with
`allow_insert=False` an infoset not stored plays uniform, gets no update and
is counted in meta[DROPPED]. A traversal can insert many rows (all of the
update player's subtree), so the kernel suspends *inside* a traversal, at
the entry of a node, when an insert would find the table short of room
(meta[STOP] = 1) or after `node_budget` nodes: the stack stays in the
frames and `progress` records where to resume, the caller grows the table
(or freezes it) and calls again. Suspending changes nothing in the results:
a run is the same however it is cut into calls.

Threads (Hogwild, `hogwild_traversals`): in a block of traversals, worker
w runs both traversals of iterations w, w + W, w + 2 W, ... (as
kernels/outcome_engine.py's workers), each from its own counter-based
random stream (`stream_start` of the block's key and the traversal's
index), against the shared tables with no locks: increments may be lost
to races, new rows are inserted atomically (tables/hashed.py). Not
reproducible run to run.
"""

import numba
import numpy as np
from numba import njit
from numba import prange

from mccfrb.games.engines import protocol
from mccfrb.kernels.external import prune_weight
from mccfrb.kernels.outcome import sample_index
from mccfrb.kernels.rng import pcg64_next
from mccfrb.kernels.rng import stream_start
from mccfrb.kernels.rng import stream_uniform
from mccfrb.kernels.rows import catch_up
from mccfrb.kernels.rows import match_into
from mccfrb.kernels.rows import count_store
from mccfrb.kernels.rows import flush_counts
from mccfrb.kernels.threads import parallel_phases
from mccfrb.kernels.weighting import iteration_weight
from mccfrb.tables import hashed
from mccfrb.tables.atomics import atomic_add
from mccfrb.tables.atomics import borrow

STOP = hashed.STOP

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


@njit(cache=True, inline="always")
def _descend(code, params, states, d, j):
  """states[d + 1] = states[d] advanced by move j."""
  for k in range(states.shape[1]):
    states[d + 1, k] = states[d, k]
  protocol.apply(code, params, states[d + 1], j)


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


@njit(cache=True, error_model="numpy")
def es_engine_traversals(code, params, utility_sum, tab, h_through,
                         weighting, linear_until, gamma, log_pos, log_neg,
                         pruning, prune_threshold, prune_probability, prune_k,
                         prune_floor, prune_after, allow_insert, node_budget,
                         rng_state, worker, workers, progress, streams,
                         states, frame_row, frame_count, frame_child,
                         frame_sigma, frame_values, frame_weight, counters):
  """Runs worker `worker`'s share of a block of traversals, from
  progress[worker, NEXT] (resuming a suspended one first) up to
  progress[worker, END] - 1: all of them with one worker; with W workers
  both traversals of every W-th iteration (worker w: traversals 2 w, 2 w +
  1, 2 w + 2 W, ... from the block's start), so that the workers advance
  through the iterations together. Tables change in place (Eqs. 1-2 of
  the module docstring).

  With one worker the uniforms come from the solver's PCG64 (`rng_state`,
  advanced in place), as the tree kernel draws them; with several,
  traversal e draws from the stream `stream_start(streams[worker, KEY], e)`
  (its state kept in streams[worker, STREAM] while suspended).

  Args:
    code, params, utility_sum: the engine (protocol.py) and u0 + u1.
    tab: (index, meta, words, cells, layout) of the rows (tables/hashed.py):
      field 0 the regrets, field 1 the average's sums.
    h_through: the header word holding the last iteration whose discount a
      row has had (discounted weighting), or -1.
    weighting, linear_until, gamma, log_pos, log_neg: kernels/weighting.py.
    pruning: 0 none, 1 pluribus, 2 probabilistic; prune_*: the module
      docstring's C, p, K, floor and first iteration.
    allow_insert: insert unstored infosets (else they play uniform).
    node_budget: suspend after this many nodes (this call).
    progress: int64[W, PROGRESS_SIZE]; streams: uint64[W, 2].
    states: int64[W, D + 2, state size] (the last row: scratch);
      frame_row, frame_count,
      frame_child: int64[W, D + 1]; frame_sigma, frame_values,
      frame_weight: float64[W, D + 1, A] (D: the engine's max_depth, A: its
      max_moves).
    counters: int64[W, 2], incremented: nodes touched, actions pruned.

  Returns:
    True when the block is done; False when suspended (the table was short
    of room, meta[STOP] = 1, or the node budget ran out).
  """
  numba.literally(code)
  # Every array the loops touch, borrowed (tables/atomics.py): views made
  # in the loops (a depth's state, sigma) cost no atomic reference counts.
  index, meta, words, cells, layout = hashed.borrowed(tab)
  params = borrow(params)
  log_pos = borrow(log_pos)
  log_neg = borrow(log_neg)
  header = layout[hashed.L_HEADER]
  per_word = layout[hashed.L_PER_WORD]
  widest = hashed.row_words(frame_sigma.shape[2], header,
                            layout[hashed.L_FIELDS], per_word)
  atomic = workers > 1
  acc = (0, 0.0, 0.0, 0)  # float32 cells' updates (rows.count_store).
  no_block = meta[:0]
  st = borrow(states)[worker]
  f_row = borrow(frame_row)[worker]
  f_count = borrow(frame_count)[worker]
  f_child = borrow(frame_child)[worker]
  f_sigma = borrow(frame_sigma)[worker]
  f_values = borrow(frame_values)[worker]
  f_weight = borrow(frame_weight)[worker]
  width = f_sigma.shape[1]
  flat_sigma = f_sigma.reshape(f_sigma.size)
  single = workers == 1
  s_hi = rng_state[0]
  s_lo = rng_state[1]
  inc_hi = rng_state[2]
  inc_lo = rng_state[3]
  stream = streams[worker, STREAM]
  key = streams[worker, KEY]
  e = progress[worker, NEXT]
  end = progress[worker, END]
  pending = progress[worker, PENDING] != 0
  d = progress[worker, DEPTH]
  ran = progress[worker, RAN]
  touched = 0
  pruned = 0
  suspended = False
  while pending or e < end:
    if not pending:
      protocol.reset(code, params, st[0])
      d = 0
      pending = True
      if not single:
        stream = stream_start(key, e)
    t = e // 2 + 1
    p = e % 2
    w = iteration_weight(weighting, t, linear_until, gamma)
    regret_w = w if weighting == 1 else 1.0
    prune_now = pruning != 0 and t >= prune_after
    entering = True
    ret = 0.0
    while True:
      if entering:
        if touched >= node_budget or (not single and meta[STOP] != 0):
          suspended = True
          break
        state = st[d]
        q = protocol.player(code, params, state)
        if q == protocol.TERMINAL:
          touched += 1
          u0 = protocol.returns0(code, params, state)
          ret = u0 if p == 0 else utility_sum - u0
          entering = False
          if d == 0:
            break
          d -= 1
          continue
        c = protocol.num_moves(code, params, state)
        if q == protocol.CHANCE:
          touched += 1
          if single:
            s_hi, s_lo, u = pcg64_next(s_hi, s_lo, inc_hi, inc_lo)
          else:
            stream, u = stream_uniform(stream)
          for j in range(c):
            f_sigma[d, j] = protocol.chance_prob(code, params, state, j)
          a = sample_index(flat_sigma, d * width, c, u, 0.0)
          f_child[d] = -1
          _descend(code, params, st, d, a)
          d += 1
          continue
        h1, h2 = protocol.infoset_hash(code, params, state, q)
        row = hashed.find(index, words, h1, h2)
        if row < 0:
          if allow_insert and not hashed.has_room(meta, index, workers,
                                                  workers * widest):
            meta[STOP] = 1
            suspended = True
            break
          row, _ = hashed.row_of(index, meta, words, cells, layout, h1, h2,
                                 c, allow_insert, no_block, atomic)
        elif hashed.width_of(words, row) != c:  # A detected collision.
          meta[hashed.COLLISIONS] += 1
          row = -1
        touched += 1
        f_row[d] = row
        f_count[d] = c
        start = 0
        if row >= 0:
          start = hashed.first_cell(row, header, per_word)
          if weighting == 2:
            catch_up(cells, start, c, words, row + h_through, t, log_pos,
                     log_neg)
          match_into(cells, start, c, f_sigma[d], 0)  # sigma(I).
        else:  # Not stored: uniform, never updated.
          for j in range(c):
            f_sigma[d, j] = 1.0 / c
        if q != p:
          if single:
            s_hi, s_lo, u = pcg64_next(s_hi, s_lo, inc_hi, inc_lo)
          else:
            stream, u = stream_uniform(stream)
          a = sample_index(flat_sigma, d * width, c, u, 0.0)
          if row >= 0:  # Eq. 2.
            for j in range(c):
              inc = w * f_sigma[d, j]
              old = cells[start + c + j]
              cells[start + c + j] = old + inc
              acc = count_store(acc, cells, start + c + j, old, inc)
          f_child[d] = -1
          _descend(code, params, st, d, a)
          d += 1
          continue
        explored = 0
        for j in range(c):
          f_weight[d, j] = 1.0
          if prune_now and row >= 0 and cells[start + j] < prune_threshold:
            # The tree kernel's `kind[child] != 2`: the child (in row d + 1,
            # overwritten when a child is entered) is not terminal.
            _descend(code, params, st, d, j)
            if protocol.player(code, params, st[d + 1]) != protocol.TERMINAL:
              if single:
                s_hi, s_lo, u = pcg64_next(s_hi, s_lo, inc_hi, inc_lo)
              else:
                stream, u = stream_uniform(stream)
              f_weight[d, j] = prune_weight(
                  pruning, u, prune_probability, prune_k, prune_threshold,
                  np.float64(cells[start + j]), prune_floor)
          if f_weight[d, j] > 0.0:
            explored += 1
        if explored == 0:
          for j in range(c):
            f_weight[d, j] = 1.0
        else:
          pruned += c - explored
        j = 0
        while f_weight[d, j] == 0.0:
          j += 1
        f_child[d] = j
        _hint_next(code, params, st, d, j, c, f_weight, index)
        _descend(code, params, st, d, j)
        d += 1
        continue
      # Returning `ret` to the node of depth d.
      j = f_child[d]
      if j < 0:
        if d == 0:
          break
        d -= 1
        continue
      f_values[d, j] = ret
      c = f_count[d]
      j += 1
      while j < c and f_weight[d, j] == 0.0:
        j += 1
      if j < c:
        f_child[d] = j
        _hint_next(code, params, st, d, j, c, f_weight, index)
        _descend(code, params, st, d, j)
        d += 1
        entering = True
        continue
      row = f_row[d]
      v = 0.0
      for jj in range(c):
        if f_weight[d, jj] > 0.0:
          v += f_sigma[d, jj] * f_values[d, jj]
      if row >= 0:  # Eq. 1.
        start = hashed.first_cell(row, header, per_word)
        for jj in range(c):
          if f_weight[d, jj] > 0.0:
            inc = regret_w * f_weight[d, jj] * (f_values[d, jj] - v)
            old = cells[start + jj]
            cells[start + jj] = old + inc
            acc = count_store(acc, cells, start + jj, old, inc)
      ret = v
      if d == 0:
        break
      d -= 1
    if suspended:
      break
    pending = False
    ran += 1
    if not single and e % 2 == 1:
      e += 2 * workers - 1  # The next iteration of this worker's share.
    else:
      e += 1
  progress[worker, NEXT] = e
  progress[worker, PENDING] = 1 if pending else 0
  progress[worker, DEPTH] = d
  progress[worker, RAN] = ran
  streams[worker, STREAM] = stream
  counters[worker, TOUCHED] += touched
  counters[worker, PRUNED] += pruned
  if single:
    rng_state[0] = s_hi
    rng_state[1] = s_lo
  flush_counts(meta, acc)
  return not suspended


@njit(cache=True, error_model="numpy", parallel=parallel_phases())
def hogwild_traversals(code, params, utility_sum, tab, h_through,
                       weighting, linear_until, gamma, log_pos, log_neg,
                       pruning, prune_threshold, prune_probability, prune_k,
                       prune_floor, prune_after, allow_insert, node_budget,
                       rng_state, workers, progress, streams, states,
                       frame_row, frame_count, frame_child, frame_sigma,
                       frame_values, frame_weight, counters):
  """`es_engine_traversals` on `workers` threads at once, lock-free
  (Hogwild): worker w runs its share of the block, progress[w], with its
  own streams (streams[w, KEY] set by the caller). A worker that finds the table short
  of room sets meta[STOP] and every worker suspends at its next node.

  Returns:
    True when every block is done.
  """
  numba.literally(code)
  for w in prange(workers):
    es_engine_traversals(
        code, params, utility_sum, tab, h_through, weighting, linear_until,
        gamma,
        log_pos, log_neg, pruning, prune_threshold, prune_probability,
        prune_k, prune_floor, prune_after, allow_insert, node_budget,
        rng_state, w, workers, progress, streams, states, frame_row,
        frame_count, frame_child, frame_sigma, frame_values, frame_weight,
        counters)
  done = True
  for w in range(workers):
    if progress[w, PENDING] != 0 or progress[w, NEXT] < progress[w, END]:
      done = False
  return done
