"""Exact CFR, CFR+, linear and discounted CFR on the full compiled tree.

Follows OpenSpiel's `cfr.py` / `discounted_cfr.py` update order so the tables
agree: alternating updates; in player p's pass, at every decision node h of p,
  R_I(a) += pi_{-p}(h) (v_p(h a) - v_p(h))          (Zinkevich et al. 2007)
  S_I(a) += pi_p(h) sigma(I, a) w_t                  (summed over h in I)
with w_t = 1 (CFR), t (CFR+ linear averaging) or t^gamma (LCFR, DCFR); after
the pass RM+ clips regrets at 0 (CFR+), DCFR multiplies p's positive regrets by
t^alpha / (t^alpha + 1) and negative ones by t^beta / (t^beta + 1) (Brown and
Sandholm 2019; LCFR is alpha = beta = gamma = 1), and the current strategy is
recomputed by regret matching.
"""

from numba import njit

from mccfrb.kernels.exact import node_values
from mccfrb.kernels.exact import reach_probabilities
from mccfrb.kernels.exact import regret_matching


@njit(cache=True, error_model="numpy")
def cfr_iterations(kind, player, infoset, child_start, num_children,
                   edge_prob, utility, utility_sum, num_actions,
                   infoset_player, regrets, avg, strategy, reach, values,
                   regret_matching_plus, averaging_power, discount, alpha,
                   beta, first_iteration, num_iterations):
  """Runs exact iterations first_iteration ..; tables change in place.

  Args:
    regrets, avg: float64[I, A] cumulative regrets and average weights.
    strategy: float64[I, A], the current strategy (kept in step with regrets).
    reach: float64[N, 3] and values: float64[N] scratch.
    regret_matching_plus: clip regrets at 0 after every pass.
    averaging_power: w_t = t ** averaging_power (0: uniform averaging).
    discount: apply DCFR's regret discounting with `alpha` and `beta`.

  Returns:
    Nodes touched (4 sweeps of the tree per player and iteration).
  """
  n_nodes = kind.shape[0]
  for t in range(first_iteration, first_iteration + num_iterations):
    weight = float(t) ** averaging_power
    for p in range(2):
      reach_probabilities(kind, player, infoset, child_start, num_children,
                          edge_prob, strategy, reach)
      node_values(kind, player, infoset, child_start, num_children, edge_prob,
                  utility, strategy, values)
      for n in range(n_nodes):
        if kind[n] != 1 or player[n] != p:
          continue
        i = infoset[n]
        s = child_start[n]
        w = reach[n, 1 - p] * reach[n, 2]
        own = reach[n, p]
        v = values[n] if p == 0 else utility_sum - values[n]
        for j in range(num_children[n]):
          child = values[s + j] if p == 0 else utility_sum - values[s + j]
          regrets[i, j] += w * (child - v)
          avg[i, j] += own * strategy[i, j] * weight
      for i in range(regrets.shape[0]):
        if infoset_player[i] != p:
          continue
        for j in range(num_actions[i]):
          r = regrets[i, j]
          if regret_matching_plus and r < 0.0:
            regrets[i, j] = 0.0
          elif discount:
            if r >= 0.0:
              ta = float(t) ** alpha
              regrets[i, j] = r * (ta / (ta + 1.0))
            else:
              tb = float(t) ** beta
              regrets[i, j] = r * (tb / (tb + 1.0))
      regret_matching(regrets, num_actions, strategy)
  return 8 * n_nodes * num_iterations
