"""Public-state sampling MCCFR with baselines: the vector form of VR-MCCFR.

ALGORITHMS.md, "Public-state sampling" (Schmid et al. 2019, arXiv:1809.03057,
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

from numba import njit

from mccfrb.kernels.exact import node_values
from mccfrb.kernels.exact import regret_matching
from mccfrb.kernels.exact import regret_matching_row
from mccfrb.kernels.outcome import averaged


@njit(cache=True, error_model="numpy")
def _stored(update_player, utility_sum, value):
  """The update player's value as player 0's (and back: its own inverse)."""
  return value if update_player == 0 else utility_sum - value


@njit(cache=True, error_model="numpy")
def public_episodes(kind, player, infoset, child_start, num_children,
                    edge_prob, utility, utility_sum, num_actions, node_ps,
                    ps_history_start, ps_histories, node_parent,
                    ps_child_start, ps_children, regrets, avg, avg_last,
                    baseline, baseline_count, baseline_kind, averaging,
                    regret_plus, sampling, epsilon, decay, first_iteration,
                    num_episodes, frozen, learn_baselines, rng, reach, value,
                    predicted, sigma, infoset_mark, mass, child_est, visited,
                    stack, ps_q, ps_xi, strategy_scratch, increment,
                    regret_sum, regret_sq, root_values, start_ps, start_stats):
  """Public-state sampling episodes; every table changes in place.

  Episode e updates player i = e % 2 at iteration t = first_iteration + e // 2
  (or t = first_iteration throughout if `frozen`). Episodes start at the
  root's public state, or, for the conditional variance (ALGORITHMS.md,
  "Measuring as the papers do"; Schmid et al. 2019, Fig. 5), at a public
  state `start_ps` > 0 of decision nodes, and then update the player of its
  first history, with q(start_ps) = 1 and the reaches of its histories as
  the caller left them in `reach`.

  Down the public tree, in preorder from the root's public state (q = 1):
  every history h of a visited public state S gets sigma^t(h) (regret
  matching, once per infoset; chance: its probabilities). The non-terminal
  child public states of S, ascending (= in order of first appearance over h
  ascending, a ascending), are the candidates. Sampling 0 and 1 draw one,
  S', with one uniform from `rng` and xi(S -> S') uniform or on-policy
  (eps / n + (1 - eps) m(S') / sum m, where m(S') sums pi(h) sigma(h, a)
  over the edges into S', pi the full reach); sampling 2 visits every
  candidate (xi = 1) of a public state of decision nodes and draws one of a
  public state of chance nodes uniformly. q(S') = q(S) xi(S -> S'); the
  reaches of the histories of S' follow from their parents'.

  Up, over the visited public states in reverse preorder (children first),
  for every non-terminal h in S (ALGORITHMS.md, "Public-state sampling"):
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
    node_ps, ps_history_start, ps_histories: the `PublicTree` arrays.
    node_parent: int32[N], the parent of every node (-1 at the root).
    ps_child_start, ps_children: CSR lists of the non-terminal child public
      states of every public state, ascending (the candidates).
    regrets, avg: float64[I, A]; avg_last: int64[I] (optimistic averaging).
    baseline, baseline_count: float64[N], int64[N], by child node id.
    frozen: studies: regrets, avg and avg_last stay untouched; the regret
      increment of each infoset of player i in each visited public state
      (summed over its histories) and its square go to regret_sum, regret_sq
      (float64[I, A]), u(root) of episode e to root_values[e].
    learn_baselines: False leaves the baseline tables untouched.
    rng: np.random.Generator, advanced in place.
    reach: float64[N, 3] scratch (pi_i, pi_{-i} with chance, the opponent's
      own); value, predicted: float64[N] scratch (u and, for the predictive
      baseline, v'); sigma: float64[I, A] scratch;
      infoset_mark: int64[I] and ps_xi: float64[P], zero on entry and exit;
      mass: float64[P]; child_est: float64[A]; visited, stack: int64[P];
      ps_q: float64[P]; strategy_scratch: float64[I, A] (oracle);
      increment: float64[I, A] (frozen; zero).
    start_ps: the public state episodes start at (0, the root's, in training).
    start_stats: float64[H, 2, A + 1], or empty: if not empty, every episode
      adds, for the k-th history h of `start_ps` (row k) if it is a decision
      node of the update player, u(h, a) (column a) and u(h) (column A), in
      the update player's utility, to [k, 0] and their squares to [k, 1].

  Returns:
    The number of nodes touched: per visited public state, the edges of its
    histories (every one is evaluated), again for the predictive pass, and
    the whole tree per oracle refill.
  """
  touched = 0
  for e in range(num_episodes):
    i = e % 2
    if start_ps > 0:
      i = player[ps_histories[ps_history_start[start_ps]]]
    t = first_iteration if frozen else first_iteration + e // 2
    avg_w = float(t) if regret_plus else 1.0
    stamp = 2  # Marks: 1 sigma computed, 2 updated, 3 sigma^{t+1}; reset.
    if baseline_kind == 6 and (not frozen or e == 0):
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
        u = rng.random()
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
              baseline[child] = averaged(
                  baseline[child], baseline_count[child],
                  _stored(i, utility_sum, value[child]), decay)
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
            if frozen:
              increment[iset, j] += x
            else:
              regrets[iset, j] += x
        elif not frozen and averaging == 1 and infoset_mark[iset] != stamp:
          infoset_mark[iset] = stamp
          prev = avg_last[iset]
          if regret_plus:
            ow = 0.5 * (t * (t + 1) - prev * (prev + 1)) * reach[h, 2]
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
        if regret_plus:
          for j in range(c):
            if regrets[iset, j] < 0.0:
              regrets[iset, j] = 0.0
        if averaging == 0:
          for j in range(c):
            avg[iset, j] += avg_w * (reach[h, 0] * sigma[iset, j] / q)
      if baseline_kind != 5 or not learn_baselines:
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
    # Leave the marks at zero for the next episode.
    for d in range(num_visited):
      s = visited[d]
      ps_xi[s] = 0.0
      for k in range(ps_history_start[s], ps_history_start[s + 1]):
        h = ps_histories[k]
        if kind[h] == 1:
          infoset_mark[infoset[h]] = 0
  return touched
