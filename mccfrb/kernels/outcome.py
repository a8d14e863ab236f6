"""Outcome-sampling MCCFR with baselines: one episode kernel for every variant.

Equations cite Schmid et al. 2019 (VR-MCCFR, arXiv:1809.03057) and the thesis
in shared/seeds/000 (Fig. 3.1); see ALGORITHMS.md. Variants are integer codes:

  baseline_kind: 0 none, 1 thesis (direct or, with decay > 0, exponential
    average of the 1/xi-corrected value, per update player and infoset),
    3 learned (infoset-keyed average of the child estimate), 4 history (per
    tree edge, chance included), 5 predictive (Davis et al. 2020), 6 oracle
    (exact values under the current strategy, recomputed before each episode).
  averaging: 0 stochastic (OpenSpiel), 1 optimistic (Lanctot 2013 section 4,
    the thesis's choice).
  regret_plus: 0 regret matching, 1 regret matching+ (MCCFRb+, ALGORITHMS.md
    "MCCFRb+"): cumulative regrets are clipped at 0 after every update and
    iteration t weighs t in the average strategy.

Baseline storage: the thesis tables are indexed (player, infoset, action) in
that player's utility; the other kinds store player 0's utility (the value
for player 1 is utility_sum - b), learned as (infoset, action), history,
predictive and oracle by the id of the child node the edge leads to.
"""

from numba import njit

from mccfrb.kernels.exact import node_values
from mccfrb.kernels.exact import regret_matching
from mccfrb.kernels.exact import regret_matching_row
from mccfrb.kernels.weighting import catch_up
from mccfrb.kernels.weighting import iteration_weight


@njit(cache=True, error_model="numpy")
def sample_index(probs, row, count, u):
  """Inverse-CDF sampling of an index in [0, count) of `probs[row]` from `u`.

  Never returns an index of probability 0, even when rounding leaves
  `u` above the cumulative sum.
  """
  cumulative = 0.0
  last_positive = -1
  for a in range(count):
    p = probs[row, a]
    if p > 0.0:
      last_positive = a
      cumulative += p
      if u < cumulative:
        return a
  return last_positive


@njit(cache=True, error_model="numpy")
def averaged(old, count, target, decay):
  """Running mean (decay <= 0: (b k + target) / (k + 1), thesis Fig. 3.1) or
  exponentially decaying average (1 - decay) b + decay target."""
  if decay > 0.0:
    return (1.0 - decay) * old + decay * target
  return (old * count + target) / (count + 1.0)


@njit(cache=True, error_model="numpy")
def baseline_base(baseline_kind, node_kind, infoset, child_start,
                  update_player, num_infosets, max_actions):
  """Index into the flat baseline table of edge (node, action 0), -1 if b = 0.

  The edge of action j is at the returned index + j for every kind.
  """
  if baseline_kind == 0:
    return -1
  if baseline_kind == 1:
    if node_kind != 1:
      return -1
    return (update_player * num_infosets + infoset) * max_actions
  if baseline_kind == 3:
    if node_kind != 1:
      return -1
    return infoset * max_actions
  return child_start


@njit(cache=True, error_model="numpy")
def run_episodes(kind, player, infoset, child_start, num_children, edge_prob,
                 utility, utility_sum, num_actions, regrets, avg, avg_last,
                 baseline, baseline_count, baseline_kind, averaging,
                 regret_plus, epsilon, decay, first_iteration, num_episodes,
                 frozen, learn_baselines, through, weighting, linear_until,
                 gamma, log_pos, log_neg, rng, path_node, path_action,
                 path_sigma, path_xi, path_reach, child_est,
                 strategy_scratch, regret_sum, regret_sq, value_sum, value_sq,
                 root_values, start_node, start_stats):
  """Outcome-sampling episodes; every table changes in place.

  Episode e updates player e % 2 at iteration t = first_iteration + e // 2
  (training: an iteration is one episode per player, in player order), or at
  t = first_iteration throughout if `frozen`. Episodes start at the root, or,
  for the conditional variance (ALGORITHMS.md, "Measuring as the papers do";
  Schmid et al. 2019, Fig. 5), at a decision node `start_node` > 0, and then
  update its player; reaches start at 1 there.

  Down the tree: at every node, sigma^t by regret matching on `regrets`; the
  sampling policy xi is eps-uniform mixed with sigma at the update player's
  nodes, sigma at the opponent's and chance's probabilities at chance nodes;
  one uniform from `rng` per node picks the action.

  Up the path (Schmid et al. 2019, Eqs. 9-10), with u(z) = u_i(z):
    u(h, a) = b(h, a) + (u(h a*) - b(h, a*)) / xi(h, a*)   if a = a*,
    u(h, a) = b(h, a)                                      otherwise,
    u(h) = sum_a sigma(h, a) u(h, a);
  at the update player's nodes (Eq. 11 with Eq. 2)
    R_I(a) += pi_{-i}(h) / q(h) * (u(h, a) - u(h));
  stochastic averaging adds pi_i(h) sigma(I, a) / q(h) there; optimistic
  averaging adds (t - c_I) pi_owner(h) sigma(I, a) at the opponent's nodes
  and sets c_I = t. With regret_plus (RM+, Tammelin 2014; VR-MCCFR+ in
  Schmid et al. 2019) R_I <- max(R_I, 0) after the update, and the average
  is linear: stochastic increments weigh t, optimistic ones the skipped
  iterations' weights c_I + 1 + ... + t = (t (t + 1) - c_I (c_I + 1)) / 2.
  Then the baseline of the sampled edge is updated (after
  its use, so the estimate stays unbiased). Predictive baselines are reset
  afterwards by a second bottom-up pass under the new strategy sigma^{t+1}.
  With the oracle baseline (kind 6) `baseline` is refilled before every
  episode (once, if frozen) with player 0's exact values under sigma^t.

  The loop over episodes lives in this one function on purpose: a call of a
  separate episode function with this many array arguments cost more than
  the episode itself.

  Args:
    regrets: float64[I, A] cumulative regrets (sigma^t comes from them).
    avg, avg_last: cumulative strategy float64[I, A] and the last-update
      iteration int64[I] (optimistic averaging).
    baseline, baseline_count: flat float64 / int64 tables (module docstring).
    frozen: estimator study: `regrets` and `avg` stay untouched; the regret
      increments and the sampled counterfactual action values
      pi_{-i}(h) / q(h) u(h, a) go, with their squares, to `regret_sum`,
      `regret_sq`, `value_sum`, `value_sq` (float64[I, A]) and u(root) of
      episode e to `root_values[e]`. Unused (may be empty) otherwise.
    learn_baselines: False leaves the baseline tables untouched.
    through, weighting, linear_until, gamma, log_pos, log_neg: iteration
      weighting (0 none, 1 linear, 2 discounted) as in kernels/external.py:
      regret increments weigh w_t = t (or min(t, linear_until)) if linear,
      average increments w_t or t^gamma; discounted rows catch up lazily
      (kernels/weighting.py) before sigma is computed.
    rng: np.random.Generator, advanced in place.
    path_*: scratch of max_depth rows; child_est: float64[A] scratch;
      strategy_scratch: float64[I, A] scratch for the oracle.
    start_node: the node episodes start at (0, the root, in training).
    start_stats: float64[2, A + 1], or empty: if not empty, every episode adds
      the start node's estimates u(h, a) (column a < its action count) and
      u(h) (column A), in the update player's utility, to row 0 and their
      squares to row 1.

  Returns:
    The number of nodes touched.
  """
  num_infosets = regrets.shape[0]
  max_actions = regrets.shape[1]
  touched = 0
  for e in range(num_episodes):
    update_player = e % 2
    if start_node > 0:
      update_player = player[start_node]
    t = first_iteration if frozen else first_iteration + e // 2
    avg_w = iteration_weight(weighting, t, linear_until, gamma)
    regret_w = avg_w if weighting == 1 else 1.0
    if regret_plus:
      avg_w = float(t)
    if baseline_kind == 6 and (not frozen or e == 0):
      if weighting == 2:
        for i in range(num_infosets):
          catch_up(regrets, i, num_actions[i], through, t, log_pos, log_neg)
      regret_matching(regrets, num_actions, strategy_scratch)
      node_values(kind, player, infoset, child_start, num_children, edge_prob,
                  utility, strategy_scratch, baseline)
      touched += kind.shape[0]
    n = start_node
    d = 0
    my_reach = 1.0
    opp_reach = 1.0
    opp_own_reach = 1.0
    sample_reach = 1.0
    while kind[n] != 2:
      path_node[d] = n
      path_reach[d, 0] = my_reach
      path_reach[d, 1] = opp_reach
      path_reach[d, 2] = opp_own_reach
      path_reach[d, 3] = sample_reach
      s = child_start[n]
      c = num_children[n]
      if kind[n] == 0:
        for j in range(c):
          path_sigma[d, j] = edge_prob[s + j]
          path_xi[d, j] = edge_prob[s + j]
      else:
        if weighting == 2:
          catch_up(regrets, infoset[n], c, through, t, log_pos, log_neg)
        regret_matching_row(regrets, infoset[n], c, path_sigma, d)
        if player[n] == update_player:
          for j in range(c):
            path_xi[d, j] = epsilon / c + (1.0 - epsilon) * path_sigma[d, j]
        else:
          for j in range(c):
            path_xi[d, j] = path_sigma[d, j]
      a = sample_index(path_xi, d, c, rng.random())
      path_action[d] = a
      sig = path_sigma[d, a]
      if kind[n] == 0:
        opp_reach *= sig
      elif player[n] == update_player:
        my_reach *= sig
      else:
        opp_reach *= sig
        opp_own_reach *= sig
      sample_reach *= path_xi[d, a]
      n = s + a
      d += 1
    depth = d
    terminal_value = utility[n] if update_player == 0 else utility_sum - utility[n]
    value = terminal_value
    # Stored baselines b are converted to the update player's utility as
    # offset + sign * b (the thesis tables are kept in that utility already);
    # the same map converts back, as it is its own inverse.
    offset = 0.0
    sign = 1.0
    if update_player == 1 and baseline_kind != 1:
      offset = utility_sum
      sign = -1.0
    for d in range(depth - 1, -1, -1):
      n = path_node[d]
      a_s = path_action[d]
      s = child_start[n]
      c = num_children[n]
      k = kind[n]
      iset = infoset[n]
      base = baseline_base(baseline_kind, k, iset, s, update_player,
                           num_infosets, max_actions)
      if base < 0:
        for j in range(c):
          child_est[j] = 0.0
      else:
        for j in range(c):
          child_est[j] = offset + sign * baseline[base + j]
      b_s = child_est[a_s]
      child_est[a_s] = b_s + (value - b_s) / path_xi[d, a_s]
      est = 0.0
      for j in range(c):
        est += path_sigma[d, j] * child_est[j]
      if k == 1:
        if player[n] == update_player:
          w = path_reach[d, 1] / path_reach[d, 3]
          for j in range(c):
            x = w * (child_est[j] - est)
            if frozen:
              regret_sum[iset, j] += x
              regret_sq[iset, j] += x * x
              y = w * child_est[j]
              value_sum[iset, j] += y
              value_sq[iset, j] += y * y
            else:
              regrets[iset, j] += regret_w * x
              if regret_plus and regrets[iset, j] < 0.0:
                regrets[iset, j] = 0.0
          if not frozen and averaging == 0:
            for j in range(c):
              avg[iset, j] += avg_w * (path_reach[d, 0] * path_sigma[d, j]
                                       / path_reach[d, 3])
        elif not frozen and averaging == 1:
          if regret_plus:
            last = avg_last[iset]
            w = 0.5 * (t * (t + 1) - last * (last + 1)) * path_reach[d, 2]
          else:
            w = (t - avg_last[iset]) * path_reach[d, 2]
          for j in range(c):
            avg[iset, j] += w * path_sigma[d, j]
          avg_last[iset] = t
      slot = base + a_s
      learn = learn_baselines and base >= 0
      if learn and baseline_kind == 1:
        # Thesis Fig. 3.1: b <- (b k_i(I) + b + (u - b) / xi) / (k_i(I) + 1),
        # with one visit counter per (update player, infoset).
        cslot = update_player * num_infosets + iset
        baseline[slot] = averaged(baseline[slot], baseline_count[cslot],
                                  child_est[a_s], decay)
        baseline_count[cslot] += 1
      elif learn and (baseline_kind == 3 or baseline_kind == 4):
        target = offset + sign * value
        baseline[slot] = averaged(baseline[slot], baseline_count[slot], target,
                                  decay)
        baseline_count[slot] += 1
      value = est
    if start_stats.shape[0] > 0:
      # child_est and value still hold u(h, .) and u(h) of the start node.
      for j in range(num_children[start_node]):
        start_stats[0, j] += child_est[j]
        start_stats[1, j] += child_est[j] * child_est[j]
      start_stats[0, max_actions] += value
      start_stats[1, max_actions] += value * value
    if baseline_kind == 5 and learn_baselines:
      # Davis et al. 2020: b(h, a*) <- u_{sigma^{t+1}}(h a*) along the path,
      # where u(h) = sum_a sigma^{t+1}(h, a) b(h, a).
      v = terminal_value
      for d in range(depth - 1, -1, -1):
        n = path_node[d]
        s = child_start[n]
        c = num_children[n]
        baseline[s + path_action[d]] = offset + sign * v
        if kind[n] == 1:
          regret_matching_row(regrets, infoset[n], c, path_sigma, d)
        v = 0.0
        for j in range(c):
          v += path_sigma[d, j] * (offset + sign * baseline[s + j])
      touched += depth
    touched += depth + 1
    if frozen:
      root_values[e] = value
  return touched
