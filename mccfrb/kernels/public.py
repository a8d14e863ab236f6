"""Public-state sampling MCCFR with baselines: the vector form of VR-MCCFR.

docs/pages/algorithms.md, "Public-state sampling" (Schmid et al. 2019, arXiv:1809.03057,
section "VR-MCCFR" with public-state sampling; Davis, Schmid, Bowling 2020,
arXiv:1907.09633, "public outcome sampling"). One episode walks one path of
the public tree; at every public state it visits it evaluates every history
of that state (a vector over the private histories: private chance is never
sampled), evaluates terminal children exactly, and samples one non-terminal
child public state.

Variant codes, shared with kernels/outcome.py:
  baseline_kind: 0 none, 4 history (per tree edge, stored by child node id,
    running or exponentially decaying average of the child's estimate),
    5 predictive (Davis et al. 2020: reset along the path under
    sigma^{t+1}), 6 oracle (exact values under sigma^t, recomputed before
    every episode).
  averaging: 0 stochastic, 1 optimistic (Lanctot 2013 section 4).
  regret_plus: 0 regret matching, 1 regret matching+ with linear averaging.
  sampling: 0 uniform over the non-terminal child public states (Schmid et
    al.), 1 on-policy: proportional to the reach mass flowing into each child,
    mixed with epsilon of uniform, 2 public chance sampling (Johanson et al.
    2012, in vector form): every child of a public state of players'
    decisions is visited (xi = 1), one child of a public state of chance
    nodes is drawn uniformly.
Baselines are stored in player 0's utility; for player 1 the value is
utility_sum - b.
"""

import numba
import numpy as np
from numba import njit
from numba import prange

from mccfrb.kernels.exact import node_values
from mccfrb.kernels.exact import regret_matching
from mccfrb.kernels.exact import regret_matching_row
from mccfrb.kernels.outcome import averaged
from mccfrb.kernels.rng import batch_end
from mccfrb.kernels.rng import batch_key
from mccfrb.kernels.rng import pcg64_next
from mccfrb.kernels.rng import stream_start
from mccfrb.kernels.rng import stream_uniform
from mccfrb.kernels.threads import parallel_phases
from mccfrb.kernels.weighting import linear_skipped


@njit(cache=True, error_model="numpy")
def _stored(update_player, utility_sum, value):
  """The update player's value as player 0's (and back: its own inverse)."""
  return value if update_player == 0 else utility_sum - value


@njit(cache=True, error_model="numpy")
def public_episodes(frozen, kind, player, infoset, child_start, num_children,
                    edge_prob, utility, utility_sum, num_actions, node_ps,
                    ps_history_start, ps_histories, node_parent,
                    ps_child_start, ps_children, regrets, avg, avg_last,
                    baseline, baseline_count, baseline_kind, averaging,
                    regret_plus, sampling, epsilon, decay, first_iteration,
                    num_episodes, learn_baselines, rng_state, reach, value,
                    predicted, sigma, infoset_mark, mass, child_est, visited,
                    stack, ps_q, ps_xi, strategy_scratch, increment,
                    regret_sum, regret_sq, root_values, start_ps, start_stats):
  """Public-state sampling episodes one after the other (`_public_episodes`,
  mode 0 for training, 1 if `frozen`); every table changes in place.

  Returns:
    The number of nodes touched.
  """
  rows = np.zeros((0, 0), dtype=np.int64)
  values = np.zeros((0, 0, 0))
  plane = np.zeros((0, 0))
  if frozen:
    return _public_episodes(
        1, kind, player, infoset, child_start, num_children, edge_prob,
        utility, utility_sum, num_actions, node_ps, ps_history_start,
        ps_histories, node_parent, ps_child_start, ps_children, regrets, avg,
        avg_last, baseline, baseline_count, baseline_kind, averaging,
        regret_plus, sampling, epsilon, decay, first_iteration, num_episodes,
        learn_baselines, rng_state, np.uint64(0), 0, 1, reach, value,
        predicted, sigma, infoset_mark, mass, child_est, visited, stack,
        ps_q, ps_xi, strategy_scratch, increment, regret_sum, regret_sq,
        root_values, start_ps, start_stats, rows, values, values,
        plane, rows, plane, rows, rows)
  return _public_episodes(
      0, kind, player, infoset, child_start, num_children, edge_prob,
      utility, utility_sum, num_actions, node_ps, ps_history_start,
      ps_histories, node_parent, ps_child_start, ps_children, regrets, avg,
      avg_last, baseline, baseline_count, baseline_kind, averaging,
      regret_plus, sampling, epsilon, decay, first_iteration, num_episodes,
      learn_baselines, rng_state, np.uint64(0), 0, 1, reach, value,
      predicted, sigma, infoset_mark, mass, child_est, visited, stack, ps_q,
      ps_xi, strategy_scratch, increment, regret_sum, regret_sq, root_values,
      start_ps, start_stats, rows, values, values, plane, rows,
      plane, rows, rows)


@njit(cache=True, error_model="numpy")
def _public_episodes(mode, kind, player, infoset, child_start, num_children,
                     edge_prob, utility, utility_sum, num_actions, node_ps,
                     ps_history_start, ps_histories, node_parent,
                     ps_child_start, ps_children, regrets, avg, avg_last,
                     baseline, baseline_count, baseline_kind, averaging,
                     regret_plus, sampling, epsilon, decay, first_iteration,
                     num_episodes, learn_baselines, rng_state, key, worker,
                     workers, reach, value, predicted, sigma, infoset_mark,
                     mass, child_est, visited, stack, ps_q, ps_xi,
                     strategy_scratch, increment, regret_sum, regret_sq,
                     root_values, start_ps, start_stats, rec_rows,
                     rec_value, rec_avg, rec_scalar, rec_edges, rec_target,
                     rec_ps, rec_counts):
  """Public-state sampling episodes e of the worker-th of `workers`
  contiguous blocks of range(num_episodes); every table changes in place.

  Episode e updates player i = e % 2 at iteration t = first_iteration + e // 2
  (or t = first_iteration throughout if frozen). Episodes start at the
  root's public state, or, for the conditional variance (docs/pages/algorithms.md,
  "Measuring as the papers do"; Schmid et al. 2019, Fig. 5), at a public
  state `start_ps` > 0 of decision nodes, and then update the player of its
  first history, with q(start_ps) = 1 and the reaches of its histories as
  the caller left them in `reach`.

  Down the public tree, in preorder from the root's public state (q = 1):
  every history h of a visited public state S gets sigma^t(h) (regret
  matching, once per infoset; chance: its probabilities). The non-terminal
  child public states of S, ascending (= in order of first appearance over h
  ascending, a ascending), are the candidates. Sampling 0 and 1 draw one,
  S', with one uniform and xi(S -> S') uniform or on-policy
  (eps / n + (1 - eps) m(S') / sum m, where m(S') sums pi(h) sigma(h, a)
  over the edges into S', pi the full reach); sampling 2 visits every
  candidate (xi = 1) of a public state of decision nodes and draws one of a
  public state of chance nodes uniformly. q(S') = q(S) xi(S -> S'); the
  reaches of the histories of S' follow from their parents'.

  Up, over the visited public states in reverse preorder (children first),
  for every non-terminal h in S (docs/pages/algorithms.md, "Public-state sampling"):
    u(h, a) = u_i(h a)                                     if h a is terminal,
    u(h, a) = u(h a)                       if pub(h a) was visited with xi = 1,
    u(h, a) = b(h, a) + [pub(h a) visited] (u(h a) - b(h, a)) / xi  otherwise,
    u(h) = sum_a sigma^t(h, a) u(h, a),
    R_I(a) += pi_{-i}(h) / q(S) (u(h, a) - u(h))   (I of player i),
  then, once per infoset of player i in S: RM+ clips R_I at 0 (if
  regret_plus) and stochastic averaging adds w_t pi_i(I) sigma^t(I, a) /
  q(S), with w_t = t if regret_plus else 1. Optimistic averaging adds, once
  per opponent infoset in S, the skipped iterations' weights (t - c_I, or
  (t (t + 1) - c_I (c_I + 1)) / 2 with regret_plus) times pi_owner(I)
  sigma^t(I) and sets c_I = t. History baselines of the edges into visited
  public states learn from u(h a) after their use. The predictive baseline
  then redoes each visited public state (after its regret update, children
  first) under sigma^{t+1}:
  b(h, a) <- v'(h a) for every edge into a visited public state, v'(h) =
  sum_a sigma^{t+1}(h, a) b(h, a) (terminal edges: u(h a)), without 1/xi
  (Davis et al.'s zero-variance setting).

  Args:
    mode: a compile-time constant (numba.literally; see kernels/outcome.py):
      0 training, 1 frozen, 2 record (phase 1 of `public_batches`).
    node_ps, ps_history_start, ps_histories: the `PublicTree` arrays.
    node_parent: int32[N], the parent of every node (-1 at the root).
    ps_child_start, ps_children: CSR lists of the non-terminal child public
      states of every public state, ascending (the candidates).
    regrets, avg: float64[I, A]; avg_last: int64[I] (optimistic averaging).
    baseline, baseline_count: float64[N], int64[N], by child node id.
    learn_baselines: False leaves the baseline tables untouched.
    rng_state: uint64[4], the solver's PCG64 state (kernels/rng.py),
      advanced in place (modes 0 and 1).
    key: mode 2: episode e draws from the stream `stream_start(key, e)`.
    worker, workers: this worker and their number (0 and 1 outside mode 2).
    reach: float64[N, 3] scratch (pi_i, pi_{-i} with chance, the opponent's
      own); value, predicted: float64[N] scratch (u and, for the predictive
      baseline, v'); sigma: float64[I, A] scratch;
      infoset_mark: int64[I] and ps_xi: float64[P], zero on entry and exit;
      mass: float64[P]; child_est: float64[A]; visited, stack: int64[P];
      ps_q: float64[P]; strategy_scratch: float64[I, A] (oracle);
      increment: float64[I, A] (modes 1 and 2; zero).
    regret_sum, regret_sq, root_values: mode 1 (studies): regrets, avg and
      avg_last stay untouched; the regret increment of each infoset of
      player i in each visited public state (summed over its histories) and
      its square go to regret_sum, regret_sq (float64[I, A]), u(root) of
      episode e to root_values[e].
    start_ps: the public state episodes start at (0, the root's, in training).
    start_stats: float64[H, 2, A + 1], or empty: if not empty, every episode
      adds, for the k-th history h of `start_ps` (row k) if it is a decision
      node of the update player, u(h, a) (column a) and u(h) (column A), in
      the update player's utility, to [k, 0] and their squares to [k, 1].
    rec_*: mode 2, the records of episode e (`public_batches`).

  Returns:
    The number of nodes touched: per visited public state, the edges of its
    histories (every one is evaluated), again for the predictive pass, and
    the whole tree per oracle refill.
  """
  numba.literally(mode)
  frozen = mode == 1
  record = mode == 2
  s_hi = rng_state[0]
  s_lo = rng_state[1]
  inc_hi = rng_state[2]
  inc_lo = rng_state[3]
  touched = 0
  # Worker w runs the w-th of `workers` contiguous blocks of episodes.
  for e in range(worker * num_episodes // workers,
                 (worker + 1) * num_episodes // workers):
    i = e % 2
    if start_ps > 0:
      i = player[ps_histories[ps_history_start[start_ps]]]
    t = first_iteration if frozen else first_iteration + e // 2
    avg_w = float(t) if regret_plus else 1.0
    stamp = 2  # Marks: 1 sigma computed, 2 updated, 3 sigma^{t+1}; reset.
    state = stream_start(key, e)
    num_rows = 0
    num_edges = 0
    if baseline_kind == 6 and not record and (not frozen or e == 0):
      regret_matching(regrets, num_actions, strategy_scratch)
      node_values(kind, player, infoset, child_start, num_children, edge_prob,
                  utility, strategy_scratch, baseline)
      touched += kind.shape[0]
    if start_ps == 0:
      reach[0, 0] = 1.0
      reach[0, 1] = 1.0
      reach[0, 2] = 1.0
    ps_q[start_ps] = 1.0
    stack[0] = start_ps
    top = 1
    num_visited = 0
    while top > 0:
      top -= 1
      s = stack[top]
      visited[num_visited] = s
      num_visited += 1
      q = ps_q[s]
      for k in range(ps_history_start[s], ps_history_start[s + 1]):
        h = ps_histories[k]
        touched += num_children[h]
        if kind[h] == 1 and infoset_mark[infoset[h]] == 0:
          infoset_mark[infoset[h]] = 1
          regret_matching_row(regrets, infoset[h], num_children[h], sigma,
                              infoset[h])
      first = ps_child_start[s]
      num_candidates = ps_child_start[s + 1] - first
      if num_candidates == 0:
        continue
      explore = sampling == 2 and kind[ps_histories[ps_history_start[s]]] != 0
      if explore:
        # Pushed in descending order, so they are visited ascending.
        for m in range(num_candidates - 1, -1, -1):
          stack[top] = ps_children[first + m]
          top += 1
          ps_xi[ps_children[first + m]] = 1.0
      else:
        total = 0.0
        for m in range(num_candidates):
          mass[m] = 1.0 / num_candidates
          if sampling == 1:
            child_ps = ps_children[first + m]
            flow = 0.0
            for k in range(ps_history_start[child_ps],
                           ps_history_start[child_ps + 1]):
              child = ps_histories[k]
              h = node_parent[child]
              if kind[h] == 0:
                sj = edge_prob[child]
              else:
                sj = sigma[infoset[h], child - child_start[h]]
              flow += reach[h, 0] * reach[h, 1] * sj
            mass[m] = flow
            total += flow
        if sampling == 1:
          for m in range(num_candidates):
            if total > 0.0:
              mass[m] = (epsilon / num_candidates
                         + (1.0 - epsilon) * mass[m] / total)
            else:
              mass[m] = 1.0 / num_candidates
        if record:
          state, u = stream_uniform(state)
        else:
          s_hi, s_lo, u = pcg64_next(s_hi, s_lo, inc_hi, inc_lo)
        chosen = -1
        cumulative = 0.0
        for m in range(num_candidates):
          if mass[m] > 0.0:
            chosen = m
            cumulative += mass[m]
            if u < cumulative:
              break
        stack[top] = ps_children[first + chosen]
        top += 1
        ps_xi[ps_children[first + chosen]] = mass[chosen]
      for m in range(num_candidates):
        nxt = ps_children[first + m]
        if ps_xi[nxt] == 0.0:
          continue
        ps_q[nxt] = q * ps_xi[nxt]
        for k in range(ps_history_start[nxt], ps_history_start[nxt + 1]):
          child = ps_histories[k]
          h = node_parent[child]
          reach[child, 0] = reach[h, 0]
          reach[child, 1] = reach[h, 1]
          reach[child, 2] = reach[h, 2]
          if kind[h] == 0:
            reach[child, 1] *= edge_prob[child]
          else:
            sj = sigma[infoset[h], child - child_start[h]]
            if player[h] == i:
              reach[child, 0] *= sj
            else:
              reach[child, 1] *= sj
              reach[child, 2] *= sj
    for d in range(num_visited - 1, -1, -1):
      s = visited[d]
      q = ps_q[s]
      for k in range(ps_history_start[s], ps_history_start[s + 1]):
        h = ps_histories[k]
        if kind[h] == 2:
          continue
        start = child_start[h]
        c = num_children[h]
        iset = infoset[h]
        v = 0.0
        for j in range(c):
          child = start + j
          if kind[child] == 2:
            est = _stored(i, utility_sum, utility[child])
          else:
            xi = ps_xi[node_ps[child]]
            if xi == 1.0:
              est = value[child]
            else:
              b = 0.0
              if baseline_kind != 0:
                b = _stored(i, utility_sum, baseline[child])
              est = b
              if xi > 0.0:
                est = b + (value[child] - b) / xi
            if xi > 0.0 and learn_baselines and baseline_kind == 4:
              target = _stored(i, utility_sum, value[child])
              if record:
                rec_edges[e, num_edges] = child
                rec_target[e, num_edges] = target
                num_edges += 1
              else:
                baseline[child] = averaged(baseline[child],
                                           baseline_count[child], target,
                                           decay)
                baseline_count[child] += 1
          if kind[h] == 0:
            v += edge_prob[child] * est
          else:
            v += sigma[iset, j] * est
          child_est[j] = est
        value[h] = v
        if d == 0 and start_stats.shape[0] > 0 and kind[h] == 1 and (
            player[h] == i):
          r = k - ps_history_start[s]
          for j in range(c):
            start_stats[r, 0, j] += child_est[j]
            start_stats[r, 1, j] += child_est[j] * child_est[j]
          start_stats[r, 0, start_stats.shape[2] - 1] += v
          start_stats[r, 1, start_stats.shape[2] - 1] += v * v
        if kind[h] != 1:
          continue
        if player[h] == i:
          w = reach[h, 1] / q
          for j in range(c):
            x = w * (child_est[j] - v)
            if frozen or record:
              increment[iset, j] += x
            else:
              regrets[iset, j] += x
        elif not frozen and averaging == 1 and infoset_mark[iset] != stamp:
          infoset_mark[iset] = stamp
          if record:
            rec_rows[e, num_rows] = 2 * iset
            rec_scalar[e, num_rows] = reach[h, 2]
            for j in range(c):
              rec_avg[e, num_rows, j] = sigma[iset, j]
            num_rows += 1
            continue
          prev = avg_last[iset]
          if regret_plus:
            ow = linear_skipped(t, prev) * reach[h, 2]
          else:
            ow = (t - prev) * reach[h, 2]
          for j in range(c):
            avg[iset, j] += ow * sigma[iset, j]
          avg_last[iset] = t
      for k in range(ps_history_start[s], ps_history_start[s + 1]):
        h = ps_histories[k]
        if kind[h] != 1 or player[h] != i:
          continue
        iset = infoset[h]
        if infoset_mark[iset] == stamp:
          continue
        infoset_mark[iset] = stamp
        c = num_children[h]
        if frozen:
          for j in range(c):
            x = increment[iset, j]
            regret_sum[iset, j] += x
            regret_sq[iset, j] += x * x
            increment[iset, j] = 0.0
          continue
        if record:
          rec_rows[e, num_rows] = 2 * iset + 1
          for j in range(c):
            rec_value[e, num_rows, j] = increment[iset, j]
            increment[iset, j] = 0.0
            if averaging == 0:
              rec_avg[e, num_rows, j] = avg_w * (reach[h, 0] * sigma[iset, j]
                                                 / q)
          num_rows += 1
          continue
        if regret_plus:
          for j in range(c):
            if regrets[iset, j] < 0.0:
              regrets[iset, j] = 0.0
        if averaging == 0:
          for j in range(c):
            avg[iset, j] += avg_w * (reach[h, 0] * sigma[iset, j] / q)
      if baseline_kind != 5 or not learn_baselines:
        continue
      if record:
        for k in range(ps_history_start[s], ps_history_start[s + 1]):
          if kind[ps_histories[k]] != 2:
            touched += num_children[ps_histories[k]]
        continue
      # Predictive baseline: v'(h) under sigma^{t+1}, children first.
      for k in range(ps_history_start[s], ps_history_start[s + 1]):
        h = ps_histories[k]
        if kind[h] == 2:
          continue
        start = child_start[h]
        c = num_children[h]
        touched += c
        if (kind[h] == 1 and player[h] == i
            and infoset_mark[infoset[h]] != 3):
          # sigma^{t+1} differs from sigma^t only where regrets changed.
          infoset_mark[infoset[h]] = 3
          regret_matching_row(regrets, infoset[h], c, sigma, infoset[h])
        v = 0.0
        for j in range(c):
          child = start + j
          if kind[child] == 2:
            est = _stored(i, utility_sum, utility[child])
          else:
            if ps_xi[node_ps[child]] > 0.0:
              baseline[child] = _stored(i, utility_sum, predicted[child])
            est = _stored(i, utility_sum, baseline[child])
          if kind[h] == 0:
            v += edge_prob[child] * est
          else:
            v += sigma[infoset[h], j] * est
        predicted[h] = v
    if frozen:
      root_values[e] = value[0]
    if record:
      for d in range(num_visited):
        rec_ps[e, d] = visited[d]
      rec_counts[e, 0] = num_rows
      rec_counts[e, 1] = num_edges
      rec_counts[e, 2] = num_visited
    # Leave the marks at zero for the next episode.
    for d in range(num_visited):
      s = visited[d]
      ps_xi[s] = 0.0
      for k in range(ps_history_start[s], ps_history_start[s + 1]):
        h = ps_histories[k]
        if kind[h] == 1:
          infoset_mark[infoset[h]] = 0
  if not record:
    rng_state[0] = s_hi
    rng_state[1] = s_lo
  return touched


@njit(cache=True, error_model="numpy", parallel=parallel_phases())
def public_batches(kind, player, infoset, child_start, num_children,
                   edge_prob, utility, utility_sum, num_actions, node_ps,
                   ps_history_start, ps_histories, node_parent,
                   ps_child_start, ps_children, ps_depth, regrets, avg,
                   avg_last, baseline, baseline_count, baseline_kind,
                   averaging, regret_plus, sampling, epsilon, decay,
                   first_iteration, num_iterations, batch, rng_state, workers,
                   reach, value, predicted, sigma, infoset_mark, mass,
                   child_est, visited, stack, ps_q, ps_xi, strategy_scratch,
                   increment, rec_rows, rec_value, rec_avg, rec_scalar,
                   rec_edges, rec_target, rec_ps, rec_counts, ps_mark,
                   sigma_mark):
  """Training iterations in batches, episodes in parallel (kernels/outcome.py
  describes the scheme).

  Per batch (ending at the next multiple of `batch`, or at this call's last
  iteration) starting at iteration t0: one key from `rng_state`; phase 1,
  its 2B episodes by `workers` workers (`_public_episodes` mode 2: episode k
  updates player k % 2 at iteration t0 + k // 2, draws from the stream
  `stream_start(key, k)` and reads the tables of the batch start; the oracle
  baseline is refilled there); phase 2, `_apply_public` by every worker for
  its rows; phase 3, the predictive baseline: for every public state S a
  sampled episode visited (but the root's), one depth at a time from the
  deepest, b(h) <- v'(h) = sum_a sigma^{t+1}(h, a) v(h a) for every
  non-terminal h in S, in player 0's utility, with v(h a) = u(h a) at a
  terminal and b(h a) otherwise.

  The arguments are those of `public_episodes`, with the per-worker scratch
  stacked on a leading axis of `workers` rows, and the records of a batch,
  one row per episode k (R, Eb and V are bounds computed over the public
  tree, solvers/public.py):

  Args:
    ps_depth: int32[P], the depth of each public state.
    rec_rows: int64[2 batch, R], 2 I + 1 for the regret increment (summed
      over I's histories) of an update player's infoset I in a visited
      public state, 2 I for an opponent's infoset (optimistic averaging).
    rec_value, rec_avg: float64[2 batch, R, A], that increment and the
      stochastic average increment, or sigma(I) at an opponent's infoset.
    rec_scalar: float64[2 batch, R], the opponent's own reach there.
    rec_edges, rec_target: [2 batch, Eb], the history baseline's edges
      (child node ids) and targets.
    rec_ps: int64[2 batch, V], the visited public states.
    rec_counts: int64[2 batch, 3], how many rows, edges and public states.
    ps_mark: int64[P], the batch that last reset a public state.
    sigma_mark: int64[W, I], per worker, the batch whose sigma^{t+1} its
      `sigma` holds for an infoset.

  Returns:
    The number of nodes touched.
  """
  touched = 0
  last_iteration = first_iteration + num_iterations - 1
  empty = np.zeros((0, 0))
  empty3 = np.zeros((0, 0, 0))
  t0 = first_iteration
  while t0 <= last_iteration:
    t1 = batch_end(t0, batch, last_iteration)
    count = 2 * (t1 - t0 + 1)
    key = batch_key(rng_state)
    if baseline_kind == 6:
      regret_matching(regrets, num_actions, strategy_scratch[0])
      node_values(kind, player, infoset, child_start, num_children,
                  edge_prob, utility, strategy_scratch[0], baseline)
      touched += kind.shape[0]
    for w in prange(workers):
      touched += _public_episodes(
          2, kind, player, infoset, child_start, num_children, edge_prob,
          utility, utility_sum, num_actions, node_ps, ps_history_start,
          ps_histories, node_parent, ps_child_start, ps_children, regrets,
          avg, avg_last, baseline, baseline_count, baseline_kind, averaging,
          regret_plus, sampling, epsilon, decay, t0, count, True, rng_state,
          key, w, workers, reach[w], value[w], predicted[w], sigma[w],
          infoset_mark[w], mass[w], child_est[w], visited[w], stack[w],
          ps_q[w], ps_xi[w], strategy_scratch[w], increment[w], empty, empty,
          np.zeros(0), 0, empty3, rec_rows, rec_value, rec_avg, rec_scalar,
          rec_edges, rec_target, rec_ps, rec_counts)
    for part in prange(workers):
      _apply_public(regrets, avg, avg_last, baseline, baseline_count,
                    num_actions, averaging, regret_plus, decay, t0, count,
                    part, workers, rec_rows, rec_value, rec_avg, rec_scalar,
                    rec_edges, rec_target, rec_counts)
    if baseline_kind == 5:
      deepest = 0
      for k in range(count):
        for d in range(rec_counts[k, 2]):
          deepest = max(deepest, ps_depth[rec_ps[k, d]])
      for level in range(deepest, 0, -1):
        for part in prange(workers):
          for k in range(part * count // workers,
                         (part + 1) * count // workers):
            for d in range(rec_counts[k, 2]):
              ps = rec_ps[k, d]
              if ps_depth[ps] != level or ps_mark[ps] == t0:
                continue
              ps_mark[ps] = t0  # Every worker would write the same values.
              _reset_public_state(kind, infoset, child_start, num_children,
                                  edge_prob, utility, ps_history_start,
                                  ps_histories, regrets, baseline, ps,
                                  sigma[part], sigma_mark[part], t0)
    t0 = t1 + 1
  return touched


@njit(cache=True, error_model="numpy")
def _reset_public_state(kind, infoset, child_start, num_children, edge_prob,
                        utility, ps_history_start, ps_histories, regrets,
                        baseline, ps, sigma, sigma_mark, stamp):
  """b(edge into h) <- v'(h) for every non-terminal history h of public
  state `ps`, in player 0's utility (see `public_batches`); sigma^{t+1} of
  an infoset is computed once per `stamp` into `sigma`."""
  for k in range(ps_history_start[ps], ps_history_start[ps + 1]):
    h = ps_histories[k]
    if kind[h] == 2:
      continue
    s = child_start[h]
    c = num_children[h]
    iset = infoset[h]
    if kind[h] == 1 and sigma_mark[iset] != stamp:
      sigma_mark[iset] = stamp
      regret_matching_row(regrets, iset, c, sigma, iset)
    v = 0.0
    for j in range(c):
      child = s + j
      b = utility[child] if kind[child] == 2 else baseline[child]
      v += (edge_prob[child] if kind[h] == 0 else sigma[iset, j]) * b
    baseline[h] = v


@njit(cache=True, error_model="numpy")
def _apply_public(regrets, avg, avg_last, baseline, baseline_count,
                  num_actions, averaging, regret_plus, decay,
                  first_iteration, num_episodes, part, parts, rec_rows,
                  rec_value, rec_avg, rec_scalar, rec_edges, rec_target,
                  rec_counts):
  """Phase 2 of a batch for the rows of worker `part` (infoset % parts, and
  the history baseline's child node % parts): every record, in episode
  order, applied as `_public_episodes` applies an infoset's increment (RM+
  clipping after it, stochastic or optimistic averaging, running or
  decaying means)."""
  for k in range(num_episodes):
    t = first_iteration + k // 2
    for r in range(rec_counts[k, 0]):
      code = rec_rows[k, r]
      iset = code >> 1
      if iset % parts != part:
        continue
      c = num_actions[iset]
      if code & 1:
        for j in range(c):
          regrets[iset, j] += rec_value[k, r, j]
          if regret_plus and regrets[iset, j] < 0.0:
            regrets[iset, j] = 0.0
        if averaging == 0:
          for j in range(c):
            avg[iset, j] += rec_avg[k, r, j]
      else:
        prev = avg_last[iset]
        if regret_plus:
          w = linear_skipped(t, prev) * rec_scalar[k, r]
        else:
          w = (t - prev) * rec_scalar[k, r]
        for j in range(c):
          avg[iset, j] += w * rec_avg[k, r, j]
        avg_last[iset] = t
    for m in range(rec_counts[k, 1]):
      child = rec_edges[k, m]
      if child % parts == part:
        baseline[child] = averaged(baseline[child], baseline_count[child],
                                   rec_target[k, m], decay)
        baseline_count[child] += 1
