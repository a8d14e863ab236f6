"""External-sampling MCCFR with weighting and regret-based pruning.

As OpenSpiel's `external_sampling_mccfr.py` (seed 001): for update player i,
chance and the opponent are sampled (one uniform per node, pre-order), every
action of i is explored, and at i's nodes
  R_I(a) += w_t (v(h a) - v(h)),   v(h) = sum_a sigma(I, a) v(h a).
Averaging "simple" adds w'_t sigma(I) at the opponent's nodes; "full" walks the
whole tree after both players' traversals adding w'_t pi_p(h) sigma(I) at every
decision node (OpenSpiel's FULL).

Weighting (seed 002; Brown and Sandholm 2019): "linear" uses w_t = w'_t = t
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
"""

from numba import njit

from mccfrb.kernels.exact import reach_probabilities
from mccfrb.kernels.exact import regret_matching_row
from mccfrb.kernels.outcome import sample_index
from mccfrb.kernels.weighting import catch_up
from mccfrb.kernels.weighting import iteration_weight


@njit(cache=True, error_model="numpy")
def es_iterations(kind, player, infoset, child_start, num_children, edge_prob,
                  utility, utility_sum, num_actions, regrets, avg, through,
                  averaging, weighting, linear_until, gamma, log_pos, log_neg,
                  pruning, prune_threshold, prune_probability, prune_k,
                  prune_floor, prune_after, first_iteration, num_iterations,
                  rng, frame_node, frame_child, frame_sigma, frame_values,
                  frame_weight, strategy, reach, counters):
  """Runs external-sampling iterations; tables change in place.

  Args:
    regrets, avg: float64[I, A]. through: int64[I], the last iteration whose
      discount each regret row has had (weighting 2 only).
    averaging: 0 simple, 1 full. weighting: 0 none, 1 linear, 2 discounted.
    pruning: 0 none, 1 pluribus, 2 probabilistic.
    frame_*: scratch of max_depth rows; strategy: float64[I, A] and reach:
      float64[N, 3] scratch for full averaging.
    counters: int64[2], incremented: nodes touched, actions pruned.
  """
  for t in range(first_iteration, first_iteration + num_iterations):
    w = iteration_weight(weighting, t, linear_until, gamma)
    regret_w = w if weighting == 1 else 1.0
    prune_now = pruning != 0 and t >= prune_after
    for p in range(2):
      d = 0
      frame_node[0] = 0
      entering = True
      ret = 0.0
      while True:
        n = frame_node[d]
        if entering:
          counters[0] += 1
          k = kind[n]
          if k == 2:
            ret = utility[n] if p == 0 else utility_sum - utility[n]
            entering = False
            if d == 0:
              break
            d -= 1
            continue
          s = child_start[n]
          c = num_children[n]
          if k == 0:
            for j in range(c):
              frame_sigma[d, j] = edge_prob[s + j]
            a = sample_index(frame_sigma[d], 0, c, rng.random(), 0.0)
            frame_child[d] = -1
            d += 1
            frame_node[d] = s + a
            continue
          i = infoset[n]
          if weighting == 2:
            catch_up(regrets, i, c, through, t, log_pos, log_neg)
          regret_matching_row(regrets, i, c, frame_sigma, d)
          if player[n] != p:
            a = sample_index(frame_sigma[d], 0, c, rng.random(), 0.0)
            if averaging == 0:
              for j in range(c):
                avg[i, j] += w * frame_sigma[d, j]
            frame_child[d] = -1
            d += 1
            frame_node[d] = s + a
            continue
          explored = 0
          for j in range(c):
            frame_weight[d, j] = 1.0
            if (prune_now and regrets[i, j] < prune_threshold
                and kind[s + j] != 2):
              u = rng.random()
              if pruning == 1:
                if u < prune_probability:
                  frame_weight[d, j] = 0.0
              else:
                q = prune_k / (prune_k + prune_threshold - regrets[i, j])
                if q < prune_floor:
                  q = prune_floor
                frame_weight[d, j] = 1.0 / q if u < q else 0.0
            if frame_weight[d, j] > 0.0:
              explored += 1
          if explored == 0:
            for j in range(c):
              frame_weight[d, j] = 1.0
          else:
            counters[1] += c - explored
          j = 0
          while frame_weight[d, j] == 0.0:
            j += 1
          frame_child[d] = j
          d += 1
          frame_node[d] = s + j
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
          frame_node[d] = s + j
          entering = True
          continue
        i = infoset[n]
        v = 0.0
        for jj in range(c):
          if frame_weight[d, jj] > 0.0:
            v += frame_sigma[d, jj] * frame_values[d, jj]
        for jj in range(c):
          if frame_weight[d, jj] > 0.0:
            regrets[i, jj] += regret_w * frame_weight[d, jj] * (
                frame_values[d, jj] - v)
        ret = v
        if d == 0:
          break
        d -= 1
    if averaging == 1:
      for i in range(regrets.shape[0]):
        if weighting == 2:
          catch_up(regrets, i, num_actions[i], through, t + 1, log_pos,
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
      counters[0] += kind.shape[0]
