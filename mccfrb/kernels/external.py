"""External-sampling MCCFR with weighting and regret-based pruning.

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
"""

import numba
import numpy as np
from numba import njit
from numba import prange

from mccfrb.kernels.exact import payoff
from mccfrb.kernels.exact import players_of
from mccfrb.kernels.exact import reach_probabilities
from mccfrb.kernels.exact import regret_matching_row
from mccfrb.kernels.outcome import sample_index
from mccfrb.kernels.rng import batch_end
from mccfrb.kernels.rng import batch_key
from mccfrb.kernels.rng import pcg64_next
from mccfrb.kernels.rng import stream_start
from mccfrb.kernels.rng import stream_uniform
from mccfrb.kernels.threads import parallel_phases
from mccfrb.kernels.weighting import borrowed_discounts
from mccfrb.kernels.weighting import catch_up
from mccfrb.kernels.weighting import caught_up_row
from mccfrb.kernels.weighting import iteration_weight


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


@njit(cache=True, error_model="numpy")
def es_iterations(kind, player, infoset, child_start, num_children, edge_prob,
                  utility, utility_sum, num_actions, regrets, avg, through,
                  averaging, weighting, linear_until, gamma, log_pos, log_neg,
                  pruning, prune_threshold, prune_probability, prune_k,
                  prune_floor, prune_after, first_iteration, num_iterations,
                  rng_state, frame_node, frame_child, frame_sigma,
                  frame_values, frame_weight, strategy, reach, counters):
  """Runs external-sampling iterations; tables change in place.

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
  rows = np.zeros((0, 0), dtype=np.int64)
  values = np.zeros((0, 0, 0))
  counts = np.zeros(0, dtype=np.int64)
  _traversals(0, kind, player, infoset, child_start, num_children, edge_prob,
              utility, utility_sum, num_actions, regrets, avg, through,
              averaging, weighting, linear_until, gamma, log_pos, log_neg,
              pruning, prune_threshold, prune_probability, prune_k,
              prune_floor, prune_after, first_iteration,
              players_of(utility) * num_iterations,
              rng_state, np.uint64(0), 0, 1, frame_node, frame_child,
              frame_sigma, frame_values, frame_weight, strategy, reach,
              counters, rows, counts, values, values,
              np.zeros(2, dtype=np.int64), np.zeros(0, dtype=np.int64),
              np.zeros(0, dtype=np.int32))


@njit(cache=True, error_model="numpy")
def es_grown(kind, player, infoset, child_start, num_children, edge_prob,
             utility, slot_node, utility_sum, num_actions, regrets, avg, through,
             weighting, linear_until, gamma, log_pos, log_neg, pruning,
             prune_threshold, prune_probability, prune_k, prune_floor,
             prune_after, first_iteration, num_episodes, rng_state,
             frame_node, frame_child, frame_sigma, frame_values,
             frame_weight, counters, io, pending):
  """Traversals io[0] .. num_episodes - 1 with simple averaging on a grown
  tree (mccfrb/games/grown.py; `_traversals` mode 3): each runs first dry
  (no table changes, the generator restored after it), noting in
  `pending` the children it reaches that are not stored (the child of
  node n by action j is slot_node[child_start[n] + j], -1 if not stored),
  as pairs (n, j), and treating them as leaves; if it noted none it runs
  for real, taking the same samples, as `es_iterations` runs it.
  Otherwise the call returns with io[0] that traversal and io[1] the
  number of pairs noted (at most len(pending) // 2), the generator at that
  traversal's start, for the caller to store them and call again."""
  rows = np.zeros((0, 0), dtype=np.int64)
  values = np.zeros((0, 0, 0))
  counts = np.zeros(0, dtype=np.int64)
  _traversals(3, kind, player, infoset, child_start, num_children, edge_prob,
              utility, utility_sum, num_actions, regrets, avg, through, 0,
              weighting, linear_until, gamma, log_pos, log_neg, pruning,
              prune_threshold, prune_probability, prune_k, prune_floor,
              prune_after, first_iteration, num_episodes, rng_state,
              np.uint64(0), 0, 1, frame_node, frame_child, frame_sigma,
              frame_values, frame_weight, np.zeros((0, 1)), np.zeros((0, 1)),
              counters, rows, counts, values, values, io, pending,
              slot_node)


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


@njit(cache=True, error_model="numpy")
def _traversals(mode, kind, player, infoset, child_start, num_children,
                edge_prob, utility, utility_sum, num_actions, regrets, avg,
                through, averaging, weighting, linear_until, gamma, log_pos,
                log_neg, pruning, prune_threshold, prune_probability, prune_k,
                prune_floor, prune_after, first_iteration, num_episodes,
                rng_state, key, worker, workers, frame_node, frame_child,
                frame_sigma, frame_values, frame_weight, strategy, reach,
                counters, rec_nodes, rec_count, rec_value, rec_sigma, io,
                pending, slot_node):
  """Traversals e of the worker-th of `workers` contiguous blocks of
  range(num_episodes): traversal e updates player e % P at iteration
  first_iteration + e // P (module docstring for the equations); mode 3:
  traversals io[0] .. on a grown tree (`es_grown`).

  Args:
    mode: a compile-time constant (numba.literally; see kernels/outcome.py):
      0 training (full averaging after every iteration's second traversal),
      2 record (phase 1 of `es_batches`), 3 grown (`es_grown`, with
      `io`, `pending` and `slot_node`; empty otherwise).
    key: mode 2: traversal e draws from the stream `stream_start(key, e)`.
    rec_nodes: int64[E, R]; rec_count: int64[E]; rec_value, rec_sigma:
      float64[E, R, A]: mode 2, traversal e's visited decision nodes in
      visiting order (update player's: the regret increments; opponent's:
      sigma), and how many.
    Others: as `es_iterations`.
  """
  numba.literally(mode)
  regrets, through, log_pos, log_neg = borrowed_discounts(
      regrets, through, log_pos, log_neg)
  record = mode == 2
  grown = mode == 3
  width = frame_sigma.shape[1]
  flat_sigma = frame_sigma.reshape(frame_sigma.size)
  s_hi = rng_state[0]
  s_lo = rng_state[1]
  inc_hi = rng_state[2]
  inc_lo = rng_state[3]
  num_players = players_of(utility)
  first_episode = worker * num_episodes // workers
  if grown:
    first_episode = io[0]
    io[1] = 0
  # Worker w runs the w-th of `workers` contiguous blocks of episodes.
  for e in range(first_episode, (worker + 1) * num_episodes // workers):
    start_hi = s_hi
    start_lo = s_lo
    # A grown tree's traversal runs dry first (`es_grown`).
    for attempt in range(2 if grown else 1):
      dry = grown and attempt == 0
      if attempt == 1 and io[1] > 0:
        break
      s_hi = start_hi
      s_lo = start_lo
      t = first_iteration + e // num_players
      p = e % num_players
      averaged_player = (p + 1) % num_players
      w = iteration_weight(weighting, t, linear_until, gamma)
      regret_w = w if weighting == 1 else 1.0
      prune_now = pruning != 0 and t >= prune_after
      state = stream_start(key, e)
      num_records = 0
      d = 0
      frame_node[0] = 0
      entering = True
      ret = 0.0
      while True:
        n = frame_node[d]
        if entering:
          if not dry:
            counters[0] += 1
          if grown and n < 0:  # Not stored (dry runs only): a leaf.
            up = frame_node[d - 1]
            _note(pending, io, up, -2 - n - child_start[up])
            ret = 0.0
            entering = False
            d -= 1
            continue
          k = kind[n]
          if k == 2:
            ret = payoff(utility, utility_sum, n, p)
            entering = False
            if d == 0:
              break
            d -= 1
            continue
          s = child_start[n]
          c = num_children[n]
          if k == 0:
            if record:
              state, u = stream_uniform(state)
            else:
              s_hi, s_lo, u = pcg64_next(s_hi, s_lo, inc_hi, inc_lo)
            a = sample_index(edge_prob, s, c, u, 0.0)
            frame_child[d] = -1
            d += 1
            frame_node[d] = _child(grown, slot_node, s + a)
            continue
          i = infoset[n]
          # A dry run leaves the lazy discounts to the real one: its
          # traversal may end elsewhere, and a row caught up early would
          # be discounted in two products instead of one.
          lazy = dry and weighting == 2
          if lazy:
            caught_up_row(regrets, i, c, through, t, log_pos, log_neg,
                          frame_values, d)
            regret_matching_row(frame_values, d, c, frame_sigma, d)
          else:
            if weighting == 2 and not record:
              catch_up(regrets, i, c, through, t, log_pos, log_neg)
            regret_matching_row(regrets, i, c, frame_sigma, d)
          if player[n] != p:
            if record:
              state, u = stream_uniform(state)
            else:
              s_hi, s_lo, u = pcg64_next(s_hi, s_lo, inc_hi, inc_lo)
            a = sample_index(flat_sigma, d * width, c, u, 0.0)
            if averaging == 0 and player[n] == averaged_player:
              if record:
                rec_nodes[e, num_records] = n
                for j in range(c):
                  rec_sigma[e, num_records, j] = frame_sigma[d, j]
                num_records += 1
              elif not dry:
                for j in range(c):
                  avg[i, j] += w * frame_sigma[d, j]
            frame_child[d] = -1
            d += 1
            frame_node[d] = _child(grown, slot_node, s + a)
            continue
          explored = 0
          for j in range(c):
            frame_weight[d, j] = 1.0
            r = frame_values[d, j] if lazy else regrets[i, j]
            c_j = _child(grown, slot_node, s + j)
            if c_j < 0:  # Not stored (dry runs only): noted, not pruned.
              _note(pending, io, n, j)
            elif (prune_now and r < prune_threshold
                  and kind[c_j] != 2):
              if record:
                state, u = stream_uniform(state)
              else:
                s_hi, s_lo, u = pcg64_next(s_hi, s_lo, inc_hi, inc_lo)
              frame_weight[d, j] = prune_weight(
                  pruning, u, prune_probability, prune_k, prune_threshold, r,
                  prune_floor)
            if frame_weight[d, j] > 0.0:
              explored += 1
          if explored == 0:
            for j in range(c):
              frame_weight[d, j] = 1.0
          elif not dry:
            counters[1] += c - explored
          j = 0
          while frame_weight[d, j] == 0.0:
            j += 1
          frame_child[d] = j
          d += 1
          frame_node[d] = _child(grown, slot_node, s + j)
          continue
        # Returning `ret` to the node of frame d.
        j = frame_child[d]
        if j < 0:
          if d == 0:
            break
          d -= 1
          continue
        frame_values[d, j] = ret
        s = child_start[n]
        c = num_children[n]
        j += 1
        while j < c and frame_weight[d, j] == 0.0:
          j += 1
        if j < c:
          frame_child[d] = j
          d += 1
          frame_node[d] = _child(grown, slot_node, s + j)
          entering = True
          continue
        i = infoset[n]
        v = 0.0
        for jj in range(c):
          if frame_weight[d, jj] > 0.0:
            v += frame_sigma[d, jj] * frame_values[d, jj]
        if record:
          rec_nodes[e, num_records] = n
        for jj in range(c):
          x = 0.0
          if frame_weight[d, jj] > 0.0:
            x = regret_w * frame_weight[d, jj] * (frame_values[d, jj] - v)
            if not record and not dry:
              regrets[i, jj] += x
          if record:
            rec_value[e, num_records, jj] = x
        if record:
          num_records += 1
        ret = v
        if d == 0:
          break
        d -= 1
      if record:
        rec_count[e] = num_records
      if averaging == 1 and p == num_players - 1 and not record:
        _full_average(kind, player, infoset, child_start, num_children,
                      edge_prob, num_actions, regrets, avg, through, weighting,
                      log_pos, log_neg, t + 1, w, strategy, reach)
        counters[0] += kind.shape[0]
    if grown and io[1] > 0:
      io[0] = e
      s_hi = start_hi
      s_lo = start_lo
      break
  if grown and io[1] == 0:
    io[0] = num_episodes
  if not record:
    rng_state[0] = s_hi
    rng_state[1] = s_lo


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
  while t0 <= last_iteration:
    t1 = batch_end(t0, batch, last_iteration)
    count = num_players * (t1 - t0 + 1)
    key = batch_key(rng_state)
    for wk in prange(workers):
      _traversals(2, kind, player, infoset, child_start, num_children,
                  edge_prob, utility, utility_sum, num_actions, regrets, avg,
                  through, averaging, weighting, linear_until, gamma, log_pos,
                  log_neg, pruning, prune_threshold, prune_probability,
                  prune_k, prune_floor, prune_after, t0, count, rng_state,
                  key, wk, workers, frame_node[wk], frame_child[wk],
                  frame_sigma[wk], frame_values[wk], frame_weight[wk],
                  strategy, reach, counters[wk], rec_nodes, rec_count,
                  rec_value, rec_sigma, np.zeros(2, dtype=np.int64),
                  np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int32))
    for part in prange(workers):
      _apply_traversals(player, infoset, num_children, regrets, avg, through,
                        weighting, linear_until, gamma, log_pos, log_neg, t0,
                        count, part, workers, num_players, rec_nodes,
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
  episode and visiting order, as `_traversals` applies them (regret
  increments at the update player's nodes, w'_t sigma at the opponent's)."""
  regrets, through, log_pos, log_neg = borrowed_discounts(
      regrets, through, log_pos, log_neg)
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
        for j in range(c):
          avg[i, j] += w * rec_sigma[e, r, j]


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
