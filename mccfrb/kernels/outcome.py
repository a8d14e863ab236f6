"""Outcome-sampling MCCFR with baselines: one episode for every variant.

Equations cite Schmid et al. 2019 (VR-MCCFR, arXiv:1809.03057) and the thesis
in Kuchař's thesis (2020, Fig. 3.1); see docs/pages/algorithms.md. Variants are integer codes:

  baseline_kind: 0 none, 1 thesis (direct or, with decay > 0, exponential
    average of the 1/xi-corrected value, per update player and infoset),
    3 learned (infoset-keyed average of the child estimate), 4 history (per
    tree edge, chance included), 5 predictive (Davis et al. 2020), 6 oracle
    (exact values under the current strategy, recomputed before each episode).
  averaging: 0 stochastic (OpenSpiel), 1 optimistic (Lanctot 2013 section 4,
    the thesis's choice).
  regret_plus: 0 regret matching, 1 regret matching+ (MCCFRb+, docs/pages/algorithms.md
    "MCCFRb+"): cumulative regrets are clipped at 0 after every update and
    iteration t weighs t in the average strategy.

Baseline storage: the thesis tables are indexed (player, infoset, action) in
that player's utility; the other kinds store player 0's utility (the value
for player 1 is utility_sum - b), learned as (infoset, action), history,
predictive and oracle by the id of the child node the edge leads to. On
general trees (below) those kinds keep one block per player instead, each
in its own player's utility: player p's table starts at p * stride, stride
= the table's size / P (`baseline_stride`).

The current strategy sigma^t is kept in a table beside the regrets
(`strategy`, regret matching of every row), recomputed for a row right after
its regrets change, so an episode reads sigma instead of recomputing it at
every node.

The episode loop lives in one kernel, `_episodes`, whose mode (0 training,
1 frozen estimator studies, 2 records of a batch) is a compile-time
constant, and two drivers run it:
  `run_episodes`: episodes one after the other, each updating the tables
    before the next starts (modes 0 and 1), uniforms from the solver's
    PCG64 (kernels/rng.py).
  `run_batches` (threads): batches of iterations. Phase 1 runs the 2B
    episodes of a batch in parallel (mode 2) against the tables as they
    were at the batch start, episode k drawing from its own counter-based
    stream (SplitMix64 keyed by the batch's key and k), and writes its
    increments into record slots. Phase 2 applies them: rows are
    partitioned among the workers (row % workers), and each worker scans
    every record in episode order and applies those of its rows exactly as
    `run_episodes` would (RM+ clipping after each increment, optimistic
    averaging's catch-up, running means). Phase 3 resets the predictive
    baseline along every sampled path under sigma^{t+1}, one depth at a
    time, deepest first, in player 0's utility, so that every writer of an
    edge writes the same value. The tables depend on the generator's state
    and the batch size, not on the number of workers.

Perfect recall (OpenSpiel's information states) is assumed: an infoset
occurs at most once on a path, so its row of `strategy` still holds
sigma^t when the up pass reaches it.

General trees (more than two players or general-sum: utility float64[N,
P], kernels/exact.py `payoff`): an iteration is one episode per player in
player order, u(z) is the update player's own return, and pi_{-i} is the
product of every other player's and chance's probabilities, as in
OpenSpiel's outcome_sampling_mccfr.py for any number of players. Every
baseline is kept per player there (one block each, in that player's own
utility: a constant sum no longer maps one player's values to the
other's); with more than two players averaging is stochastic only
(optimistic averaging's pi_owner is the single opponent's reach).
"""

import numba
import numpy as np
from numba import njit
from numba import prange

from mccfrb.kernels.exact import node_values
from mccfrb.kernels.exact import payoff
from mccfrb.kernels.exact import player_values
from mccfrb.kernels.exact import players_of
from mccfrb.kernels.exact import regret_matching
from mccfrb.kernels.exact import regret_matching_row
from mccfrb.kernels.rng import batch_end
from mccfrb.kernels.rng import batch_key
from mccfrb.kernels.rng import pcg64_next
from mccfrb.kernels.rng import stream_start
from mccfrb.kernels.rng import stream_uniform
from mccfrb.kernels.threads import parallel_phases
from mccfrb.kernels.weighting import borrowed_discounts
from mccfrb.kernels.weighting import catch_up
from mccfrb.kernels.weighting import iteration_weight
from mccfrb.kernels.weighting import linear_skipped


@njit(cache=True, error_model="numpy")
def sample_index(probs, start, count, u, epsilon):
  """Inverse-CDF sampling of an index in [0, count) from `u`, under the
  probabilities xi(a) = epsilon / count + (1 - epsilon) probs[start + a]
  (epsilon = 0: probs itself, exactly).

  Never returns an index of probability 0, even when rounding leaves
  `u` above the cumulative sum.
  """
  uniform = epsilon / count
  cumulative = 0.0
  last_positive = -1
  for a in range(count):
    p = probs[start + a]
    if epsilon > 0.0:
      p = uniform + (1.0 - epsilon) * p
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
def baseline_stride(utility, baseline_kind, baseline):
  """The offset between two players' blocks of the baseline table: 0 (one
  table in player 0's utility) but for kinds 3-6 on general trees."""
  if utility.ndim == 1 or baseline_kind < 3:
    return 0
  return baseline.shape[0] // players_of(utility)


@njit(cache=True, error_model="numpy")
def baseline_base(baseline_kind, node_kind, infoset, child_start,
                  update_player, num_infosets, max_actions, stride):
  """Index into the flat baseline table of edge (node, action 0), -1 if b = 0.

  The edge of action j is at the returned index + j for every kind;
  `stride` (`baseline_stride`) selects the update player's block.
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
    return infoset * max_actions + update_player * stride
  return child_start + update_player * stride


@njit(cache=True, error_model="numpy")
def oracle_values(kind, player, infoset, child_start, num_children,
                  edge_prob, utility, utility_sum, strategy, baseline):
  """The oracle baseline (kind 6): every node's exact value under
  `strategy`, in player 0's utility, or on general trees every player's
  block in its own utility. Returns the nodes touched."""
  if utility.ndim == 1:
    node_values(kind, player, infoset, child_start, num_children,
                edge_prob, utility, strategy, baseline)
    return kind.shape[0]
  stride = baseline_stride(utility, 6, baseline)
  num_players = players_of(utility)
  for p in range(num_players):
    player_values(kind, player, infoset, child_start, num_children,
                  edge_prob, utility, utility_sum, p, strategy,
                  baseline[p * stride:(p + 1) * stride])
  return num_players * kind.shape[0]


@njit(cache=True, error_model="numpy")
def _learn_baseline(baseline, baseline_count, baseline_kind, slot, cslot,
                    target, decay):
  """One baseline update (thesis Fig. 3.1 for kind 1, with one visit counter
  per (update player, infoset) `cslot`; per slot for kinds 3 and 4)."""
  if baseline_kind != 1:
    cslot = slot
  baseline[slot] = averaged(baseline[slot], baseline_count[cslot], target,
                            decay)
  baseline_count[cslot] += 1



@njit(cache=True, error_model="numpy")
def run_episodes(frozen, kind, player, infoset, child_start, num_children,
                 edge_prob, utility, utility_sum, num_actions, regrets,
                 strategy, avg, avg_last, baseline, baseline_count,
                 baseline_kind, averaging, regret_plus, epsilon, decay,
                 first_iteration, num_episodes, learn_baselines, through,
                 weighting, linear_until, gamma, log_pos, log_neg, rng_state,
                 path_node, path_action, path_reach, child_est, regret_sum,
                 regret_sq, value_sum, value_sq,
                 root_values, start_node, start_stats):
  """Outcome-sampling episodes one after the other (`_episodes`, mode 0 for
  training, 1 if `frozen`); every table changes in place.

  `frozen` is None for training and True for the studies: numba prunes the
  branch on `frozen is not None` before typing, so training compiles mode 0
  alone (with a boolean both modes compiled at the first use of training,
  BUILD_NOTES "First use: training compiles training alone").

  Returns:
    The number of nodes touched.
  """
  rec_node = np.zeros((0, 0), dtype=np.int64)
  records = np.zeros((0, 0, 0))
  rec_depth = np.zeros(0, dtype=np.int64)
  rec_scalar = np.zeros((0, 0))
  if frozen is not None:
    return _episodes(
        1, kind, player, infoset, child_start, num_children, edge_prob,
        utility, utility_sum, num_actions, regrets, strategy, avg, avg_last,
        baseline, baseline_count, baseline_kind, averaging, regret_plus,
        epsilon, decay, first_iteration, num_episodes, learn_baselines,
        through, weighting, linear_until, gamma, log_pos, log_neg, rng_state,
        np.uint64(0), 0, 1, path_node, path_action, path_reach, child_est,
        rec_depth, rec_node, rec_node, records, records, rec_scalar,
        rec_scalar, regret_sum, regret_sq, value_sum, value_sq, root_values,
        start_node, start_stats, np.full(4, -1, dtype=np.int64), np.zeros(1),
        np.zeros(0, dtype=np.int32))
  return _episodes(
      0, kind, player, infoset, child_start, num_children, edge_prob,
      utility, utility_sum, num_actions, regrets, strategy, avg, avg_last,
      baseline, baseline_count, baseline_kind, averaging, regret_plus,
      epsilon, decay, first_iteration, num_episodes, learn_baselines,
      through, weighting, linear_until, gamma, log_pos, log_neg, rng_state,
      np.uint64(0), 0, 1, path_node, path_action, path_reach, child_est,
      rec_depth, rec_node, rec_node, records, records, rec_scalar,
      rec_scalar, regret_sum, regret_sq, value_sum, value_sq, root_values,
      start_node, start_stats, np.full(4, -1, dtype=np.int64), np.zeros(1),
        np.zeros(0, dtype=np.int32))


@njit(cache=True, error_model="numpy")
def _episodes(mode, kind, player, infoset, child_start, num_children,
              edge_prob, utility, utility_sum, num_actions, regrets, strategy,
              avg, avg_last, baseline, baseline_count, baseline_kind,
              averaging, regret_plus, epsilon, decay, first_iteration,
              num_episodes, learn_baselines, through, weighting, linear_until,
              gamma, log_pos, log_neg, rng_state, key, worker, workers,
              path_node, path_action, path_reach, child_est, rec_depth,
              rec_node, rec_row, rec_value, rec_avg, rec_scalar, rec_target,
              regret_sum, regret_sq, value_sum, value_sq, root_values,
              start_node, start_stats, grown_io, leaf_value, slot_node):
  """Episodes e of the worker-th of `workers` contiguous blocks of
  range(num_episodes) (mode 3: episodes grown_io[0] ..).

  Episode e updates player e % P at iteration t = first_iteration + e // P
  (training: an iteration is one episode per player, in player order; P =
  2 but on general trees), or at t = first_iteration throughout if
  frozen. Episodes start at the root, or,
  for the conditional variance (docs/pages/algorithms.md, "Measuring as the papers do";
  Schmid et al. 2019, Fig. 5), at a decision node `start_node` > 0, and then
  update its player; reaches start at 1 there.

  Down the tree: at every node sigma^t (the `strategy` table); the sampling
  policy xi is eps-uniform mixed with sigma at the update player's nodes,
  sigma at the opponent's and chance's probabilities at chance nodes; one
  uniform per node picks the action.

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
  Then sigma^{t+1}(I) is recomputed by regret matching, and the baseline of
  the sampled edge is updated (after its use, so the estimate stays
  unbiased). The predictive baseline (Davis et al. 2020) is reset along the
  path under sigma^{t+1} in the same bottom-up pass, once a node's own
  update is done: b(h, a*) <- u'(h a*), u'(h) = sum_a sigma^{t+1}(h, a)
  b(h, a). With the oracle baseline (kind 6) `baseline` is refilled before
  every episode (once, if frozen) with player 0's exact values under
  sigma^t.

  The episode is written out inside the loop over episodes on purpose: a
  call of a separate episode function with this many array arguments cost
  more than the episode itself.

  Args:
    mode: a compile-time constant (numba.literally: each mode is its own
      machine code, about 20% faster than one code for all three): 0
      training, 1 frozen, 2 record (phase 1 of `run_batches`), 3 training
      on a grown tree (`grown_episodes`).
    regrets: float64[I, A] cumulative regrets.
    strategy: float64[I, A], regret matching of `regrets` on entry; kept so.
    avg, avg_last: cumulative strategy float64[I, A] and the last-update
      iteration int64[I] (optimistic averaging).
    baseline, baseline_count: flat float64 / int64 tables (module docstring).
    learn_baselines: False leaves the baseline tables untouched.
    through, weighting, linear_until, gamma, log_pos, log_neg: iteration
      weighting (0 none, 1 linear, 2 discounted) as in kernels/external.py:
      regret increments weigh w_t = t (or min(t, linear_until)) if linear,
      average increments w_t or t^gamma; discounted rows catch up lazily
      (kernels/weighting.py) before sigma is read (in records: before an
      increment is applied, in `_apply_records`).
    rng_state: uint64[4], the state of the solver's np.random.Generator
      (PCG64; kernels/rng.py), advanced in place (modes 0 and 1).
    key: mode 2: episode e draws from the stream `stream_start(key, e)`.
    worker, workers: this worker w and their number W (0 and 1 outside
      mode 2).
    path_node, path_action: int64[W * D]; path_reach: float64[W * D * 4];
      child_est: float64[W * A]: scratch, worker w's block at offset w *
      size (D: the tree's depth).
    rec_*: mode 2, the records of a batch (`run_batches`).
    regret_sum, regret_sq, value_sum, value_sq, root_values: mode 1: the
      regret increments and the sampled counterfactual action values
      pi_{-i}(h) / q(h) u(h, a), with their squares (float64[I, A]), and
      u(root) of episode e; `regrets`, `strategy` and `avg` stay untouched.
    start_node: the node episodes start at (0, the root, in training).
    start_stats: float64[2, A + 1], or empty: if not empty, every episode adds
      the start node's estimates u(h, a) (column a < its action count) and
      u(h) (column A), in the update player's utility, to row 0 and their
      squares to row 1.
    grown_io, leaf_value, slot_node: mode 3 (`grown_episodes`): the child
      of node n by action a is slot_node[child_start[n] + a], -1 if not
      stored (empty outside mode 3: the child is child_start[n] + a).
      grown_io: int64[4], in: [0] the first episode, [2] a pending leaf
      slot (-1: none), whose player-0 value leaf_value[0] ends an episode
      that reaches it (consumed: set to -1); out: [0] the episode
      reached, [1] the empty slot that stopped it (-1 if every episode
      ran) and [3] its depth (path_node[:depth], path_action[:depth] lead
      to it, the last move into the empty slot).

  Returns:
    The number of nodes touched.
  """
  numba.literally(mode)
  regrets, through, log_pos, log_neg = borrowed_discounts(
      regrets, through, log_pos, log_neg)
  frozen = mode == 1
  record = mode == 2
  num_infosets = regrets.shape[0]
  max_actions = regrets.shape[1]
  max_depth = path_node.shape[0] // workers
  flat_strategy = strategy.reshape(strategy.size)
  width = strategy.shape[1]
  p0 = worker * max_depth  # This worker's block of the path scratch.
  c0 = worker * max_actions
  s_hi = rng_state[0]
  s_lo = rng_state[1]
  inc_hi = rng_state[2]
  inc_lo = rng_state[3]
  touched = 0
  num_players = players_of(utility)
  stride = baseline_stride(utility, baseline_kind, baseline)
  grown = mode == 3
  first_episode = worker * num_episodes // workers
  if grown:
    first_episode = grown_io[0]
    grown_io[1] = -1
  # Worker w runs the w-th of `workers` contiguous blocks of episodes.
  for e in range(first_episode, (worker + 1) * num_episodes // workers):
    update_player = e % num_players
    if start_node > 0:
      update_player = player[start_node]
    t = first_iteration if frozen else first_iteration + e // num_players
    avg_w = iteration_weight(weighting, t, linear_until, gamma)
    regret_w = avg_w if weighting == 1 else 1.0
    if regret_plus:
      avg_w = float(t)
    if baseline_kind == 6 and not record and (not frozen or e == 0):
      if weighting == 2:
        for i in range(num_infosets):
          catch_up(regrets, i, num_actions[i], through, t, log_pos,
                   log_neg)
        regret_matching(regrets, num_actions, strategy)
      touched += oracle_values(kind, player, infoset, child_start,
                               num_children, edge_prob, utility, utility_sum,
                               strategy, baseline)
    state = stream_start(key, e)
    episode_hi = s_hi
    episode_lo = s_lo
    # Down the tree.
    n = start_node
    d = 0
    my_reach = 1.0
    opp_reach = 1.0
    opp_own_reach = 1.0
    sample_reach = 1.0
    missing = -1
    while kind[n] != 2:
      path_node[p0 + d] = n
      r = 4 * (p0 + d)
      path_reach[r] = my_reach
      path_reach[r + 1] = opp_reach
      path_reach[r + 2] = opp_own_reach
      path_reach[r + 3] = sample_reach
      s = child_start[n]
      c = num_children[n]
      if record:
        state, u = stream_uniform(state)
      else:
        s_hi, s_lo, u = pcg64_next(s_hi, s_lo, inc_hi, inc_lo)
      if kind[n] == 0:
        a = sample_index(edge_prob, s, c, u, 0.0)
        sig = edge_prob[s + a]
        opp_reach *= sig
        sample_reach *= sig
      else:
        iset = infoset[n]
        if weighting == 2 and not record:
          catch_up(regrets, iset, c, through, t, log_pos, log_neg)
          regret_matching_row(regrets, iset, c, strategy, iset)
        if player[n] == update_player:
          a = sample_index(flat_strategy, iset * width, c, u, epsilon)
          sig = strategy[iset, a]
          my_reach *= sig
          sample_reach *= epsilon / c + (1.0 - epsilon) * sig
        else:
          a = sample_index(flat_strategy, iset * width, c, u, 0.0)
          sig = strategy[iset, a]
          opp_reach *= sig
          opp_own_reach *= sig
          sample_reach *= sig
      path_action[p0 + d] = a
      d += 1
      if grown:
        # A grown tree reaches children through slots (games/grown.py).
        if slot_node[s + a] < 0:
          missing = s + a
          break
        n = slot_node[s + a]
      else:
        n = s + a
    depth = d
    if record:
      rec_depth[e] = depth
      rec_node[depth, e] = n
    if grown and missing >= 0:
      if missing != grown_io[2]:
        # A child not stored: stop before any table changes; the episode
        # runs again from the same generator state once it is stored.
        grown_io[0] = e
        grown_io[1] = missing
        grown_io[3] = depth
        s_hi = episode_hi
        s_lo = episode_lo
        break
      grown_io[2] = -1
      terminal_value = (leaf_value[0] if update_player == 0
                        else utility_sum - leaf_value[0])
    else:
      terminal_value = payoff(utility, utility_sum, n, update_player)
    # Up the path. Stored baselines b are converted to the update
    # player's utility as offset + sign * b (the thesis tables are kept
    # in that utility already); the same map converts back.
    value = terminal_value
    predicted = terminal_value
    predictive = baseline_kind == 5 and learn_baselines and not record
    offset = 0.0
    sign = 1.0
    if update_player == 1 and baseline_kind != 1 and utility.ndim == 1:
      offset = utility_sum
      sign = -1.0
    for d in range(depth - 1, -1, -1):
      n = path_node[p0 + d]
      a_s = path_action[p0 + d]
      s = child_start[n]
      c = num_children[n]
      nk = kind[n]
      iset = infoset[n]
      r = 4 * (p0 + d)
      mine = nk == 1 and player[n] == update_player
      if record:
        rec_node[d, e] = n
        rec_row[e, d] = -1 if nk == 0 else 2 * iset + (1 if mine else 0)
      base = baseline_base(baseline_kind, nk, iset, s, update_player,
                           num_infosets, max_actions, stride)
      if nk == 0:
        xi_s = edge_prob[s + a_s]
      elif mine:
        xi_s = epsilon / c + (1.0 - epsilon) * strategy[iset, a_s]
      else:
        xi_s = strategy[iset, a_s]
      if predictive:
        stored = offset + sign * predicted
        back = offset + sign * stored
        predicted = 0.0
      # u(h, a*) = b(h, a*) + (u(h a*) - b(h, a*)) / xi(h, a*), before the
      # loop so that the division is done once.
      b_s = 0.0
      if base >= 0:
        b_s = offset + sign * baseline[base + a_s]
      corrected = b_s + (value - b_s) / xi_s
      est = 0.0
      probs = edge_prob if nk == 0 else flat_strategy
      first = s if nk == 0 else iset * width
      for j in range(c):
        ce = 0.0
        if base >= 0:
          ce = offset + sign * baseline[base + j]
        sj = probs[first + j]
        if predictive and not mine:
          predicted += sj * (back if j == a_s else ce)
        ce = corrected if j == a_s else ce
        child_est[c0 + j] = ce
        est += sj * ce
      if mine:
        weight = path_reach[r + 1] / path_reach[r + 3]
        total = 0.0
        for j in range(c):
          x = weight * (child_est[c0 + j] - est)
          if frozen:
            regret_sum[iset, j] += x
            regret_sq[iset, j] += x * x
            y = weight * child_est[c0 + j]
            value_sum[iset, j] += y
            value_sq[iset, j] += y * y
          elif record:
            rec_value[e, d, j] = regret_w * x
          else:
            rr = regrets[iset, j] + regret_w * x
            if regret_plus and rr < 0.0:
              rr = 0.0
            regrets[iset, j] = rr
            if rr > 0.0:
              total += rr
        if not frozen and averaging == 0:
          for j in range(c):
            inc = avg_w * (path_reach[r] * strategy[iset, j]
                           / path_reach[r + 3])
            if record:
              rec_avg[e, d, j] = inc
            else:
              avg[iset, j] += inc
        if not frozen and not record:
          if total > 0.0:
            for j in range(c):
              rr = regrets[iset, j]
              strategy[iset, j] = rr / total if rr > 0.0 else 0.0
          else:
            for j in range(c):
              strategy[iset, j] = 1.0 / c
      elif nk == 1 and not frozen and averaging == 1:
        if record:
          rec_scalar[e, d] = path_reach[r + 2]
          for j in range(c):
            rec_avg[e, d, j] = strategy[iset, j]
        else:
          if regret_plus:
            last = avg_last[iset]
            weight = linear_skipped(t, last) * path_reach[r + 2]
          else:
            weight = (t - avg_last[iset]) * path_reach[r + 2]
          for j in range(c):
            avg[iset, j] += weight * strategy[iset, j]
          avg_last[iset] = t
      if learn_baselines and base >= 0 and (
          baseline_kind == 1 or baseline_kind == 3 or baseline_kind == 4):
        if baseline_kind == 1:
          # Thesis Fig. 3.1: b <- (b k_i(I) + b + (u - b) / xi) /
          # (k_i(I) + 1), one visit counter per (update player, infoset).
          target = child_est[c0 + a_s]
        else:
          target = offset + sign * value
        if record:
          rec_target[e, d] = target
        else:
          _learn_baseline(baseline, baseline_count, baseline_kind,
                          base + a_s, update_player * num_infosets + iset,
                          target, decay)
      if predictive:
        baseline[base + a_s] = stored
        if mine:
          for j in range(c):
            predicted += strategy[iset, j] * (back if j == a_s
                                              else child_est[c0 + j])
      value = est
    if start_stats.shape[0] > 0:
      # child_est and value hold u(h, .) and u(h) of the start node.
      for j in range(num_children[start_node]):
        start_stats[0, j] += child_est[c0 + j]
        start_stats[1, j] += child_est[c0 + j] * child_est[c0 + j]
      start_stats[0, max_actions] += value
      start_stats[1, max_actions] += value * value
    if predictive:
      touched += depth
    touched += depth + 1
    if frozen:
      root_values[e] = value
  if grown and grown_io[1] < 0:
    grown_io[0] = num_episodes
  if not record:
    rng_state[0] = s_hi
    rng_state[1] = s_lo
  return touched


@njit(cache=True, error_model="numpy")
def grown_episodes(kind, player, infoset, child_start, num_children,
                   edge_prob, utility, slot_node, utility_sum, num_actions,
                   regrets, strategy, avg, avg_last, baseline, baseline_count,
                   baseline_kind, averaging, regret_plus, epsilon, decay,
                   first_iteration, num_episodes, through, weighting,
                   linear_until, gamma, log_pos, log_neg, rng_state,
                   path_node, path_action, path_reach, child_est, grown_io,
                   leaf_value):
  """Training episodes grown_io[0] .. num_episodes - 1 on a grown tree
  (mccfrb/games/grown.py; `_episodes` mode 3): each as `run_episodes`
  runs it, until one samples a child that is not stored (an empty slot),
  which it reports in grown_io[1] with the generator state of that
  episode's start, so that the caller stores the child and calls again:
  the episodes, and the tables, are those of the compiled tree.

  Returns:
    The number of nodes touched.
  """
  rec_node = np.zeros((0, 0), dtype=np.int64)
  records = np.zeros((0, 0, 0))
  rec_depth = np.zeros(0, dtype=np.int64)
  empty = np.zeros((0, 0))
  return _episodes(
      3, kind, player, infoset, child_start, num_children, edge_prob,
      utility, utility_sum, num_actions, regrets, strategy, avg, avg_last,
      baseline, baseline_count, baseline_kind, averaging, regret_plus,
      epsilon, decay, first_iteration, num_episodes, True, through,
      weighting, linear_until, gamma, log_pos, log_neg, rng_state,
      np.uint64(0), 0, 1, path_node, path_action, path_reach, child_est,
      rec_depth, rec_node, rec_node, records, records, empty, empty,
      empty, empty, empty, empty, np.zeros(0), 0, empty, grown_io,
      leaf_value, slot_node)


@njit(cache=True, error_model="numpy", parallel=parallel_phases())
def run_batches(kind, player, infoset, child_start, num_children, edge_prob,
                utility, utility_sum, num_actions, regrets, strategy, avg,
                avg_last, baseline, baseline_count, baseline_kind, averaging,
                regret_plus, epsilon, decay, first_iteration, num_iterations,
                batch, through, weighting, linear_until, gamma, log_pos,
                log_neg, rng_state, workers, path_node, path_action,
                path_reach, child_est, rec_depth, rec_node, rec_row,
                rec_value, rec_avg, rec_scalar, rec_target, reset_mark,
                row_mark, row_list):
  """Training iterations in batches, episodes in parallel (module docstring).

  The batch of iteration t ends at the next multiple of `batch` (or at this
  call's last iteration). Per batch starting at iteration t0: one key from
  `rng_state`; phase 1, its 2B episodes (`_episodes` mode 2: episode k
  updates player k % 2 at iteration t0 + k // 2, draws from the stream
  `stream_start(key, k)`, is run by one of the workers (contiguous blocks
  of episodes), and reads the
  tables as they were at the batch start; the oracle baseline is refilled
  there); phase 2, `_apply_records` by every worker; phase 3, the
  predictive baseline's reset b(h a*) <- sum_a' sigma^{t+1}(h a*, a')
  b(h a*, a') (u(z) at a terminal) for every sampled edge, one depth at a
  time from the deepest, in player 0's utility (general trees: in the
  episode's update player's block and utility).

  The arguments are those of `run_episodes`; the scratch has one block per
  worker (see `_episodes`) and the records one slot per episode k of a
  batch:

  Args:
    rec_depth: int64[2 batch], its depth.
    rec_node: int64[D + 1, 2 batch], its path (terminal last; by depth, so
      that a depth's nodes are contiguous).
    rec_row: int64[2 batch, D], 2 I + 1 at an update player's node of
      infoset I, 2 I at an opponent's, -1 at chance.
    rec_value, rec_avg: float64[2 batch, D, A], the regret increments of the
      update player's nodes, their stochastic average increments or, at
      opponent nodes with optimistic averaging, sigma.
    rec_scalar: float64[2 batch, D], the opponent's own reach there.
    rec_target: float64[2 batch, D], the baseline targets of sampled edges.
    reset_mark: int64[N] (predictive baseline; else empty), the batch that
      last reset each node.
    row_mark, row_list: int64[I] and int64[W, I // W + 1], the batch that
      last changed each row and the rows each worker changed (sigma is
      recomputed once per changed row).

  Returns:
    The number of nodes touched.
  """
  touched = 0
  last_iteration = first_iteration + num_iterations - 1
  empty = np.zeros((0, 0))
  t0 = first_iteration
  num_players = players_of(utility)
  stride = baseline_stride(utility, baseline_kind, baseline)
  while t0 <= last_iteration:
    t1 = batch_end(t0, batch, last_iteration)
    count = num_players * (t1 - t0 + 1)
    key = batch_key(rng_state)
    if baseline_kind == 6:
      if weighting == 2:
        for i in range(regrets.shape[0]):
          catch_up(regrets, i, num_actions[i], through, t0, log_pos, log_neg)
        regret_matching(regrets, num_actions, strategy)
      touched += oracle_values(kind, player, infoset, child_start,
                               num_children, edge_prob, utility, utility_sum,
                               strategy, baseline)
    for w in prange(workers):
      touched += _episodes(
          2, kind, player, infoset, child_start, num_children, edge_prob,
          utility, utility_sum, num_actions, regrets, strategy, avg, avg_last,
          baseline, baseline_count, baseline_kind, averaging, regret_plus,
          epsilon, decay, t0, count, True, through, weighting, linear_until,
          gamma, log_pos, log_neg, rng_state, key, w, workers, path_node,
          path_action, path_reach, child_est, rec_depth, rec_node, rec_row,
          rec_value, rec_avg, rec_scalar, rec_target, empty, empty, empty,
          empty, np.zeros(0), 0, empty, np.full(4, -1, dtype=np.int64),
          np.zeros(1), np.zeros(0, dtype=np.int32))
    for part in prange(workers):
      _apply_records(kind, infoset, child_start, num_actions, regrets,
                     strategy, avg, avg_last, baseline, baseline_count,
                     baseline_kind, averaging, regret_plus, decay, t0, count,
                     True, through, weighting, log_pos, log_neg, part,
                     workers, num_players, stride, rec_depth, rec_node, rec_row,
                     rec_value, rec_avg, rec_scalar, rec_target, row_mark,
                     row_list[part])
    if baseline_kind == 5:
      deepest = 0
      for k in range(count):
        deepest = max(deepest, rec_depth[k])
        touched += rec_depth[k]
      for level in range(deepest, 0, -1):
        for part in prange(workers):
          for k in range(part * count // workers,
                         (part + 1) * count // workers):
            if rec_depth[k] < level:
              continue
            h = rec_node[level, k]
            # Player 0's table, or the update player's block (general).
            p = k % num_players if stride > 0 else 0
            o = p * stride
            if reset_mark[o + h] == t0:
              continue  # Already reset in this batch (the same value).
            reset_mark[o + h] = t0
            if kind[h] == 2:
              baseline[o + h] = payoff(utility, utility_sum, h, p)
              continue
            s = o + child_start[h]
            v = 0.0
            if kind[h] == 0:
              for j in range(num_children[h]):
                v += edge_prob[child_start[h] + j] * baseline[s + j]
            else:
              i = infoset[h]
              for j in range(num_children[h]):
                v += strategy[i, j] * baseline[s + j]
            baseline[o + h] = v
    t0 = t1 + 1
  return touched


@njit(cache=True, error_model="numpy")
def _apply_records(kind, infoset, child_start, num_actions, regrets,
                   strategy, avg, avg_last, baseline, baseline_count,
                   baseline_kind, averaging, regret_plus, decay,
                   first_iteration, num_episodes, learn_baselines, through,
                   weighting, log_pos, log_neg, part, parts, num_players,
                   stride, rec_depth, rec_node, rec_row, rec_value, rec_avg,
                   rec_scalar, rec_target, row_mark, row_list):
  """Phase 2 of a batch for the rows of worker `part` (row % parts == part):
  every record, in episode order, applied as `run_episodes` applies an
  episode's increments (RM+ clipping after each, optimistic averaging's
  catch-up with c_I, running means), then sigma of the row recomputed.

  Rows are infosets for the regrets, sigma and the average, and for the
  thesis and learned baselines; baseline slots (child node ids) for the
  history baseline.
  """
  regrets, through, log_pos, log_neg = borrowed_discounts(
      regrets, through, log_pos, log_neg)
  num_infosets = regrets.shape[0]
  max_actions = regrets.shape[1]
  changed = 0
  for k in range(num_episodes):
    update_player = k % num_players
    t = first_iteration + k // num_players
    for d in range(rec_depth[k]):
      code = rec_row[k, d]
      iset = code >> 1
      if code >= 0 and iset % parts == part:
        c = num_actions[iset]
        if code & 1:
          if weighting == 2:
            catch_up(regrets, iset, c, through, t, log_pos, log_neg)
          for j in range(c):
            regrets[iset, j] += rec_value[k, d, j]
            if regret_plus and regrets[iset, j] < 0.0:
              regrets[iset, j] = 0.0
          if averaging == 0:
            for j in range(c):
              avg[iset, j] += rec_avg[k, d, j]
          if row_mark[iset] != first_iteration:
            row_mark[iset] = first_iteration
            row_list[changed] = iset
            changed += 1
        elif averaging == 1:
          if regret_plus:
            last = avg_last[iset]
            w = linear_skipped(t, last) * rec_scalar[k, d]
          else:
            w = (t - avg_last[iset]) * rec_scalar[k, d]
          for j in range(c):
            avg[iset, j] += w * rec_avg[k, d, j]
          avg_last[iset] = t
      if learn_baselines and (baseline_kind == 1 or baseline_kind == 3
                              or baseline_kind == 4):
        n = rec_node[d, k]
        s = child_start[n]
        base = baseline_base(baseline_kind, kind[n], infoset[n], s,
                             update_player, num_infosets, max_actions,
                             stride)
        if base < 0:
          continue
        slot = base + rec_node[d + 1, k] - s
        owner = slot if baseline_kind == 4 else infoset[n]
        if owner % parts == part:
          _learn_baseline(baseline, baseline_count, baseline_kind, slot,
                          update_player * num_infosets + infoset[n],
                          rec_target[k, d], decay)
  for m in range(changed):
    iset = row_list[m]
    regret_matching_row(regrets, iset, num_actions[iset], strategy, iset)
