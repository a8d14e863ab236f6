"""Information-set MCTS: UCT and Smooth UCT, one kernel for both.

Extensive-form MCTS of Mac Manus's Leduc thesis (Algorithms 1-3, from Heinrich 2017) and
Heinrich & Silver, "Smooth UCT Search in Computer Poker", IJCAI 2015;
docs/pages/algorithms.md, "UCT and Smooth UCT". Each player i has its own search tree
T^i whose nodes are i's information states u^i, here the infoset ids of the
compiled tree; a node is in T^i once its visit count N(u) is positive.

One simulation samples a root-to-terminal path of the compiled tree:
  - chance nodes: an outcome by its probability;
  - a decision node of player i that is out of tree for i in this simulation
    (i expanded a node earlier on the path), or whose player is the fixed
    uniform opponent: a uniform action (the rollout policy);
  - u^i not in T^i: expand it (its first update makes N(u) = 1), take a
    uniform action, and mark i out of tree for the rest of the simulation;
  - u^i in T^i: SELECT(u^i):
      UCT (Algorithm 2):  argmax_a Q(u, a) + c sqrt(log N(u) / N(u, a)),
        actions with N(u, a) = 0 first (lowest index; ties: lowest index);
      Smooth UCT (Algorithm 3): with probability
        eta = max(gamma, eta0 / (1 + d sqrt(N(u)))) the UCT choice, otherwise
        a sample of the average strategy N(u, a) / N(u).
At the terminal z every expanded or selected (u, a) on the path is updated
(UPDATE of Algorithm 2) with r, the return of u's player:
  N(u) += 1, N(u, a) += 1, Q(u, a) += (r - Q(u, a)) / N(u, a).
Q is in the acting player's utility; the average strategy N(u, a) / N(u)
counts every selection, including the expanding one.

Random numbers, in path order, one uniform each: a chance node, a rollout
or expansion action (a = floor(U * count)), and at a Smooth UCT selection
U_1 < eta for the UCT branch, else U_2 * N(u) placed on the cumulative
counts. UCT selections draw nothing. `simulations` draws them from the
solver's PCG64 (numpy's `random()` inline, kernels/rng.py), bit for bit the
np.random.Generator draws of the pure-Python reference.

Two drivers run the one simulation (`_simulate`):
  `simulations`: one after the other, each updating the tables before the
    next starts (the algorithm of the seed).
  `simulation_batches` (threads): batches of B iterations (2B simulations).
    Phase 1 runs the simulations of a batch in parallel against the tables
    as they were at the batch start, simulation k drawing from its own
    counter stream (SplitMix64 keyed by the batch's key and k), and records
    its path of (u, a) and its return. Phase 2 applies the records:
    infosets are partitioned among the workers (u % workers), each worker
    scans every record in simulation order and applies the UPDATEs of its
    infosets exactly as `simulations` would. The tables depend on the seed
    and B, not on the number of workers. Within a batch, selections see
    stale counts (UCT picks the same action at an infoset for the whole
    batch, and several simulations may expand the same node): a different
    algorithm from the one-by-one search, whose effect on convergence is
    measured on the Threads page (docs/pages/threads.md).
"""

import math

import numpy as np
from numba import njit
from numba import prange

from mccfrb.kernels.rng import batch_end
from mccfrb.kernels.rng import batch_key
from mccfrb.kernels.rng import pcg64_next
from mccfrb.kernels.rng import stream_start
from mccfrb.kernels.rng import stream_uniform
from mccfrb.kernels.threads import parallel_phases


@njit(cache=True, error_model="numpy")
def _uniform_action(u, count):
  """floor(u * count), kept below count against rounding."""
  a = int(u * count)
  return count - 1 if a >= count else a


@njit(cache=True, error_model="numpy")
def ucb_action(visits, counts, values, infoset, num_actions, c):
  """argmax_a Q(u, a) + c sqrt(log N(u) / N(u, a)) (Mac Manus's Leduc thesis Eq. 2.10).

  Untried actions (N(u, a) = 0) come first, the lowest index; ties go to
  the lowest index.
  """
  log_n = math.log(visits[infoset])
  best = 0
  best_value = -math.inf
  for a in range(num_actions):
    n = counts[infoset, a]
    if n == 0:
      return a
    v = values[infoset, a] + c * math.sqrt(log_n / n)
    if v > best_value:
      best_value = v
      best = a
  return best


@njit(cache=True, error_model="numpy")
def smooth_eta(n, gamma, eta0, d):
  """eta = max(gamma, eta0 / (1 + d sqrt(N(u)))) (Mac Manus's Leduc thesis Algorithm 3)."""
  eta = eta0 / (1.0 + d * math.sqrt(n))
  return gamma if eta < gamma else eta


@njit(cache=True, error_model="numpy")
def _draw(s0, s1, i0, i1, stream):
  """(s0, s1, uniform): the next uniform and the advanced state. numpy's
  PCG64 (state high s0, low s1, increment i0, i1), or with `stream` the
  SplitMix64 counter stream whose state is s0. Scalars, so that the state
  stays in registers along a path."""
  if stream:
    s0, u = stream_uniform(s0)
    return s0, s1, u
  return pcg64_next(s0, s1, i0, i1)


# Inlined by numba into both drivers: as a call it cost the one-by-one
# search about 8% of its simulations per second.
@njit(cache=True, error_model="numpy", inline="always")
def _simulate(kind, player, infoset, child_start, num_children, edge_prob,
              utility, visits, counts, values, smooth, c, gamma, eta0, d,
              opponent_uniform, learner, state, stream, path_infoset,
              path_action):
  """One simulation's path (Algorithm 1's SIMULATE without its UPDATE).

  Returns:
    (depth, r0, touched): the number of (u, a) pairs written to
    `path_infoset`/`path_action` (those to update), player 0's return at
    the terminal reached, and the nodes visited, the terminal included.
  """
  s0, s1, i0, i1 = state[0], state[1], state[2], state[3]
  out0 = False
  out1 = False
  n = 0
  depth = 0
  touched = 0
  while kind[n] != 2:
    touched += 1
    s = child_start[n]
    count = num_children[n]
    if kind[n] == 0:
      s0, s1, u = _draw(s0, s1, i0, i1, stream)
      a = -1
      cumulative = 0.0
      for j in range(count):
        p = edge_prob[s + j]
        if p > 0.0:
          a = j
          cumulative += p
          if u < cumulative:
            break
    else:
      p = player[n]
      i = infoset[n]
      rollout = (opponent_uniform and p != learner) or (
          out0 if p == 0 else out1)
      if rollout:
        s0, s1, u = _draw(s0, s1, i0, i1, stream)
        a = _uniform_action(u, count)
      else:
        if visits[i] == 0:
          s0, s1, u = _draw(s0, s1, i0, i1, stream)
          a = _uniform_action(u, count)
          if p == 0:
            out0 = True
          else:
            out1 = True
        else:
          ucb = True
          if smooth:
            s0, s1, u = _draw(s0, s1, i0, i1, stream)
            ucb = u < smooth_eta(visits[i], gamma, eta0, d)
          if ucb:
            a = ucb_action(visits, counts, values, i, count, c)
          else:
            s0, s1, threshold = _draw(s0, s1, i0, i1, stream)
            threshold *= visits[i]
            a = count - 1
            cumulative = 0
            for j in range(count):
              cumulative += counts[i, j]
              if threshold < cumulative:
                a = j
                break
        path_infoset[depth] = i
        path_action[depth] = a
        depth += 1
    n = s + a
  state[0] = s0
  state[1] = s1
  return depth, utility[n], touched + 1


@njit(cache=True, error_model="numpy")
def _update(infoset_player, visits, counts, values, path_infoset, path_action,
            depth, r0, r1, part, parts):
  """UPDATE of Algorithm 2 for the path's (u, a) with u % parts == part:
  N(u) += 1, N(u, a) += 1, Q(u, a) += (r - Q(u, a)) / N(u, a), r the
  return of u's player."""
  for m in range(depth):
    i = path_infoset[m]
    if parts > 1 and i % parts != part:
      continue
    a = path_action[m]
    r = r0 if infoset_player[i] == 0 else r1
    visits[i] += 1
    counts[i, a] += 1
    values[i, a] += (r - values[i, a]) / counts[i, a]


@njit(cache=True, error_model="numpy")
def _add_reward(reward_sum, opponent_uniform, learner, r0, r1):
  """Adds a simulation's returns to the seats' reward sums (with
  `opponent_uniform`, only the learner's)."""
  if opponent_uniform:
    reward_sum[learner] += r0 if learner == 0 else r1
  else:
    reward_sum[0] += r0
    reward_sum[1] += r1


@njit(cache=True, error_model="numpy")
def simulations(kind, player, infoset, child_start, num_children, edge_prob,
                utility, utility_sum, infoset_player, visits, counts, values,
                smooth, c, gamma, eta0, d, opponent_uniform, first_simulation,
                num_simulations, rng_state, path_infoset, path_action,
                reward_sum):
  """Runs MCTS simulations one after the other; tables change in place.

  Simulation k (counted from 0 over the solver's life: `first_simulation`
  + the index in this call) trains both players (self-play) or, with
  `opponent_uniform`, the learner k % 2 against a uniform opponent, so an
  iteration of two simulations trains each seat once.

  Args:
    infoset_player: int8[I], the player of each infoset.
    visits: int64[I], N(u); counts: int64[I, A], N(u, a); values:
      float64[I, A], Q(u, a) in the acting player's utility.
    smooth: 0 UCT, 1 Smooth UCT.
    c, gamma, eta0, d: the UCB exploration constant and Smooth UCT's
      mixing schedule.
    opponent_uniform: train one learner per simulation against a uniform
      opponent (Mac Manus's Leduc thesis, Experiment 1).
    rng_state: uint64[4], the solver's PCG64 state (kernels/rng.py),
      advanced in place.
    path_infoset, path_action: int64[max_depth] scratch.
    reward_sum: float64[2], add per seat the returns of the simulations
      (with opponent_uniform: of the simulations where the seat learned).

  Returns:
    The number of tree nodes visited, terminals included.
  """
  touched = 0
  for k in range(num_simulations):
    learner = (first_simulation + k) % 2
    depth, r0, steps = _simulate(
        kind, player, infoset, child_start, num_children, edge_prob, utility,
        visits, counts, values, smooth, c, gamma, eta0, d, opponent_uniform,
        learner, rng_state, False, path_infoset, path_action)
    touched += steps
    r1 = utility_sum - r0
    _update(infoset_player, visits, counts, values, path_infoset,
            path_action, depth, r0, r1, 0, 1)
    _add_reward(reward_sum, opponent_uniform, learner, r0, r1)
  return touched


@njit(cache=True, error_model="numpy", parallel=parallel_phases())
def simulation_batches(kind, player, infoset, child_start, num_children,
                       edge_prob, utility, utility_sum, infoset_player,
                       visits, counts, values, smooth, c, gamma, eta0, d,
                       opponent_uniform, first_simulation, num_simulations,
                       batch, rng_state, workers, bucket_e, bucket_m,
                       bucket_n, worker_touched, rec_infoset, rec_action,
                       rec_r0, reward_sum):
  """Runs MCTS simulations in batches, each batch's in parallel (module
  docstring); tables change in place.

  Batches end at multiples of 2 `batch` simulations over the solver's life
  (or at this call's last simulation); each draws one key from `rng_state`.
  Phase 1 also sorts each record's (u, a) pairs into buckets by the worker
  that applies them (u % workers), so that phase 2 reads only its own:
  worker w runs a contiguous block of simulations in ascending order, so
  reading the buckets of workers 0, 1, ... in turn keeps simulation order.

  The arguments are those of `simulations`, and:

  Args:
    batch: iterations (two simulations each) per batch.
    workers: the number of workers (numba threads) to split work among.
    bucket_e, bucket_m: int32[workers, workers, C], C a bound on the pairs
      one worker records in a batch: bucket [w, p] holds the simulation and
      depth of the pairs worker w recorded for part p; bucket_n:
      int64[workers, workers], their counts.
    worker_touched: int64[workers] scratch.
    rec_infoset, rec_action: int64[2 batch, max_depth], the records of a
      batch.
    rec_r0: float64[2 batch], the records' returns to player 0.

  Returns:
    The number of tree nodes visited, terminals included.
  """
  span = 2 * batch
  last = first_simulation + num_simulations  # 1-based: simulation k is k + 1.
  touched = 0
  k0 = first_simulation + 1
  while k0 <= last:
    k1 = batch_end(k0, span, last)
    count = k1 - k0 + 1
    key = batch_key(rng_state)
    for w in prange(workers):
      # Worker-local state and counts: rows of a shared array would sit in
      # one cache line, written by every worker every simulation.
      state = np.zeros(4, dtype=np.uint64)
      filled = np.zeros(workers, dtype=np.int64)
      steps_w = 0
      w64 = np.int64(w)  # A prange index is unsigned (numba's parfors).
      for e in range(w64 * count // workers, (w64 + 1) * count // workers):
        state[0] = stream_start(key, e)
        depth, r0, steps = _simulate(
            kind, player, infoset, child_start, num_children, edge_prob,
            utility, visits, counts, values, smooth, c, gamma, eta0, d,
            opponent_uniform, (k0 - 1 + e) % 2, state, True,
            rec_infoset[e], rec_action[e])
        for m in range(depth):
          part = rec_infoset[e, m] % workers if workers > 1 else 0
          bucket_e[w, part, filled[part]] = e
          bucket_m[w, part, filled[part]] = m
          filled[part] += 1
        rec_r0[e] = r0
        steps_w += steps
      for part in range(workers):
        bucket_n[w, part] = filled[part]
      worker_touched[w] = steps_w
    for part in prange(workers):
      for w in range(workers):
        for j in range(bucket_n[w, part]):
          e = bucket_e[w, part, j]
          m = bucket_m[w, part, j]
          i = rec_infoset[e, m]
          a = rec_action[e, m]
          r0 = rec_r0[e]
          r = r0 if infoset_player[i] == 0 else utility_sum - r0
          visits[i] += 1
          counts[i, a] += 1
          values[i, a] += (r - values[i, a]) / counts[i, a]
    for e in range(count):
      _add_reward(reward_sum, opponent_uniform, (k0 - 1 + e) % 2, rec_r0[e],
                  utility_sum - rec_r0[e])
    for w in range(workers):
      touched += worker_touched[w]
    k0 = k1 + 1
  return touched


@njit(cache=True, error_model="numpy")
def selection_policy(visits, counts, values, num_actions, smooth, c, gamma,
                     eta0, d, out):
  """The policy SELECT would play at every infoset next; fills `out`.

  In the tree: UCT's choice (probability 1), mixed for Smooth UCT with the
  average strategy as eta * UCT + (1 - eta) * N(u, a) / N(u). Out of the
  tree: uniform (the rollout policy).
  """
  for i in range(visits.shape[0]):
    count = num_actions[i]
    for a in range(out.shape[1]):
      out[i, a] = 0.0
    if visits[i] == 0:
      for a in range(count):
        out[i, a] = 1.0 / count
      continue
    eta = 1.0
    if smooth:
      eta = smooth_eta(visits[i], gamma, eta0, d)
      for a in range(count):
        out[i, a] = (1.0 - eta) * counts[i, a] / visits[i]
    out[i, ucb_action(visits, counts, values, i, count, c)] += eta
