"""The exact CFR family on the full compiled tree: any regret rule.

The local update of each infoset is a regret rule (mccfrb/solvers/rules.py:
CFR, CFR+, LCFR, DCFR, PCFR+, DCFR+, PDCFR+ or a user's), given to the
kernel as flags and per-iteration coefficients. Rules whose regret terms
are added to R in place (those without a discount before the addition and
without prediction) run exactly as below; the others ("split") sum the
terms r_t apart and `rule_row` (kernels/exact.py) forms
R_t = max(R_{t-1} d_t + r_t, 0) and the (predicted) strategy.

Follows OpenSpiel's `cfr.py` / `discounted_cfr.py` update order so the tables
agree: alternating updates; in player p's pass, at every decision node h of p,
  R_I(a) += pi_{-p}(h) (v_p(h a) - v_p(h))          (Zinkevich et al. 2007)
  S_I(a) += pi_p(h) sigma(I, a) w_t                  (summed over h in I)
with w_t = 1 (CFR), t (CFR+ linear averaging) or t^gamma (LCFR, DCFR); after
the pass RM+ clips regrets at 0 (CFR+), DCFR multiplies p's positive regrets by
t^alpha / (t^alpha + 1) and negative ones by t^beta / (t^beta + 1) (Brown and
Sandholm 2019; LCFR is alpha = beta = gamma = 1), and the current strategy is
recomputed by regret matching. With `simultaneous` (OpenSpiel's
`alternating_updates=False`, the iteration as Zinkevich et al. 2007 wrote
it) every player's terms of iteration t come from the same sigma^t, and
then every player's rows are clipped or discounted and regret-matched.

Two pass structures (the `passes` code), equal tables bit for bit (with
LCFR/DCFR discounting a zero regret may differ in sign; BUILD_NOTES.md,
"Exact CFR family"):
  FOUR_SWEEPS (0): the original structure, kept as the yardstick of the
    benchmark and the tests: per pass, a top-down sweep for every reach, a
    bottom-up sweep for every value, a sweep over all nodes for the updates,
    a loop over p's infosets and regret matching of every infoset.
  SWEEPS (1): per pass, one top-down sweep for the opponent's reach (the
    only reach that changed since the previous pass: p's own reach is the
    one the previous pass swept, kept per decision node for p's averages)
    and one bottom-up sweep
    for the values that also stores p's regret increments in slots, over a
    schedule of independent subtree tasks below a frontier depth
    (mccfrb/kernels/schedule.py); both sweeps skip subtrees where the opponent's
    or chance's reach has an exact zero factor (the 1-die Dudo notes: "prune histories
    whose opponent's reach is zero"). Then one loop over p's infosets adds each
    infoset's regret and average terms in ascending node id order (the
    order of the four sweeps' sums), clips or discounts and regret-matches.
    Tasks and infosets run on numba's threads; the tables do not depend on
    their number.
"""

import math
from typing import NamedTuple

import numpy as np
from numba import njit
from numba import prange

from mccfrb.kernels.exact import node_values
from mccfrb.kernels.exact import player_values
from mccfrb.kernels.exact import players_of
from mccfrb.kernels.exact import reach_probabilities
from mccfrb.kernels.exact import regret_matching
from mccfrb.kernels.exact import regret_matching_row
from mccfrb.kernels.exact import rule_row
from mccfrb.kernels.exact import task_range
from mccfrb.kernels.threads import parallel_phases

FOUR_SWEEPS = 0
SWEEPS = 1


class Flags(NamedTuple):
  """A regret rule's switches (solvers/rules.py `kernel_flags`): clip R at
  0 (RM+), discount after the addition by the positive/negative factors
  (`post`), keep the pass's terms apart in inst for `rule_row` (`split`),
  predictive regret matching."""
  clip: bool
  post: bool
  split: bool
  predictive: bool


class Rule(NamedTuple):
  """A regret rule's coefficients for one iteration
  (`RegretRule.coefficients`, exact.py `rule_row`)."""
  discount: float
  positive: float
  negative: float
  predict: float


class Scratch(NamedTuple):
  """`cfr_iterations`' scratch (`cfr_scratch` in solvers/cfr.py; shapes in
  `cfr_iterations`)."""
  reach: np.ndarray
  values: np.ndarray
  own: np.ndarray
  delta: np.ndarray
  visited: np.ndarray


@njit(cache=True, error_model="numpy")
def _four_sweep_pass(kind, player, infoset, child_start, num_children,
                     edge_prob, utility, utility_sum, num_actions,
                     infoset_player, regrets, avg, strategy, reach, values,
                     p, weight, flags, rule, inst):
  """Player p's pass with the original four sweeps (reach float64[N, P + 1]),
  or with p < 0 one pass that updates every player from the same sigma^t
  (simultaneous updates, the iteration of Zinkevich et al. 2007: every
  player's counterfactual regrets R_i^T(I, a) and average-strategy sums
  from the profile sigma^t, then sigma^{t+1} by regret matching for all).

  With a split rule (flags.split) the regret terms go to inst (the updated
  players' rows zeroed first) and `rule_row` combines them with R; else
  they are added to R in place, then clipped or discounted, and every row
  is regret-matched.

  On general trees (utility float64[N, P]) the values are each updated
  player's own (`player_values`, one bottom-up sweep per updated player)
  and pi_{-p}(h) is the product of every other player's reach and
  chance's, as in OpenSpiel's cfr.py for any number of players;
  two-player trees keep player 0's values and utility_sum - v.

  Returns:
    The sweeps of the tree made: 4, or 2 + 2 P for a simultaneous pass on
    a general tree of P players.
  """
  split = flags.split
  reach_probabilities(kind, player, infoset, child_start, num_children,
                      edge_prob, strategy, reach)
  target = inst if split else regrets
  if split:
    for i in range(regrets.shape[0]):
      if p < 0 or infoset_player[i] == p:
        for j in range(num_actions[i]):
          inst[i, j] = 0.0
  sweeps = 4
  if utility.ndim == 2:
    sweeps = 2
    for q in range(utility.shape[1]):
      if p < 0 or q == p:
        player_values(kind, player, infoset, child_start, num_children,
                      edge_prob, utility, utility_sum, q, strategy, values)
        _add_terms(kind, player, infoset, child_start, num_children, utility,
                   utility_sum, reach, values, q, strategy, weight, target,
                   avg)
        sweeps += 2
  else:
    node_values(kind, player, infoset, child_start, num_children, edge_prob,
                utility, strategy, values)
    _add_terms(kind, player, infoset, child_start, num_children, utility,
               utility_sum, reach, values, p, strategy, weight, target, avg)
  for i in range(regrets.shape[0]):
    if p >= 0 and infoset_player[i] != p:
      continue
    if split:
      rule_row(regrets[i], inst[i], strategy[i], num_actions[i], flags.clip,
               flags.post, flags.predictive, rule.discount, rule.positive,
               rule.negative, rule.predict)
    else:
      _clip_or_discount(regrets, i, num_actions[i], flags.clip, flags.post,
                        rule.positive, rule.negative)
  if not split:
    regret_matching(regrets, num_actions, strategy)
  return sweeps


@njit(cache=True, error_model="numpy")
def _add_terms(kind, player, infoset, child_start, num_children, utility,
               utility_sum, reach, values, p, strategy, weight, target, avg):
  """The regret and average terms of player p's decision nodes, or with
  p < 0 of every decision node (two-player trees), each in its acting
  player i's utility: the summands of Zinkevich et al. 2007's
  counterfactual regret R_i^T(I, a) and of the numerator of their average
  strategy sigma-bar_i^T(I)(a), the latter weighted by w_t,
    target(I, a) += pi_{-i}(h) (v_i(h a) - v_i(h)),
    avg(I, a) += pi_i(h) sigma(I, a) w_t,
  h in I, from `reach_probabilities` and `values` (player 0's on a
  two-player tree, whose player 1 has utility_sum - v; on a general tree
  player p's own, p >= 0)."""
  for n in range(kind.shape[0]):
    if kind[n] != 1:
      continue
    a = player[n]
    if p >= 0 and a != p:
      continue
    i = infoset[n]
    s = child_start[n]
    own = reach[n, a]
    if utility.ndim == 2:
      w = 1.0
      for q in range(reach.shape[1]):
        if q != a:
          w *= reach[n, q]
      v = values[n]
    else:
      w = reach[n, 1 - a] * reach[n, 2]
      v = values[n] if a == 0 else utility_sum - values[n]
    for j in range(num_children[n]):
      if utility.ndim == 2:
        child = values[s + j]
      else:
        child = values[s + j] if a == 0 else utility_sum - values[s + j]
      target[i, j] += w * (child - v)
      avg[i, j] += own * strategy[i, j] * weight


@njit(cache=True, error_model="numpy")
def _clip_or_discount(regrets, i, count, regret_matching_plus, discount,
                      pos_factor, neg_factor):
  """RM+ clipping or DCFR discounting of row i after its owner's pass."""
  for j in range(count):
    r = regrets[i, j]
    if regret_matching_plus and r < 0.0:
      regrets[i, j] = 0.0
    elif discount:
      regrets[i, j] = r * (pos_factor if r >= 0.0 else neg_factor)


@njit(cache=True, error_model="numpy", parallel=parallel_phases())
def _reach_down(first, last, prune, kind, player, infoset, child_start,
                num_children, top_nodes, task_start, task_end, skip_end,
                slot_of, strategy, q, col, own, stamp, visited):
  """q's own reach top-down over tasks first .. last - 1 (T: the top), one
  thread per task.

  The same products as column q of `reach_probabilities` (a child copies
  its parent's reach except below q's decisions) in col, and at q's
  decision nodes also in own[slot] = (reach, stamp): the reach their
  average updates use. With `prune`, a child reached through
  an action of q of probability 0 gets -0.0 instead of +0.0, which its
  descendants copy, so a node's reach is -0.0 exactly when a zero factor
  of q lies on its path (an underflow gives +0.0); and the descendants of a
  task node of reach -0.0 with a skip_end are skipped: every reach there is
  0, and their slots keep an older stamp, which reads as 0. The skip is
  marked in col, which holds no reach there, on the range's first internal
  node (-skip_end: where this sweep continues) and on its last
  (-child_start: where `_values_up`, going down, continues); a later sweep
  writes a node's reach before reading it. Writes visited[k], the nodes
  visited in task k (a prange reduction cannot sum what an inner loop
  counts).
  """
  for k in prange(first, last):
    listed, lo, hi = task_range(k, top_nodes, task_start, task_end)
    resume = lo
    skipped = 0
    for m in range(lo, hi):
      if prune and m < resume:
        continue
      n = top_nodes[m] if listed else m
      if kind[n] == 2:
        continue
      x = col[n]
      s = child_start[n]
      if prune and x <= 0.0:
        if x < 0.0:  # The first internal node of a skipped range.
          resume = int(-x)
          continue
        if skip_end[n] > 0 and math.copysign(1.0, x) < 0.0:
          e = skip_end[n]
          first_internal = s
          while kind[first_internal] == 2:
            first_internal += 1
          last_internal = e - 1
          while kind[last_internal] == 2:
            last_internal -= 1
          col[first_internal] = -float(e)
          col[last_internal] = -float(s)
          skipped += e - s
          continue
      if kind[n] == 1 and player[n] == q:
        h = slot_of[n]
        own[h, 0] = x
        own[h, 1] = stamp
        i = infoset[n]
        for j in range(num_children[n]):
          f = strategy[i, j]
          col[s + j] = -0.0 if prune and f == 0.0 else x * f
      else:
        for j in range(num_children[n]):
          col[s + j] = x
    visited[k] = hi - lo - skipped


@njit(cache=True, error_model="numpy", parallel=parallel_phases())
def _values_up(first, last, p, prune, zero_chance, kind, player, infoset,
               child_start, num_children, edge_prob, utility_sum, top_nodes,
               task_start, task_end, chance, slot_of, strategy, col, values,
               delta, stamp, visited):
  """Player 0's values bottom-up over tasks first .. last - 1 (T: the top),
  one thread per task, and p's regret increments.

  The values are `node_values`' sums. The ranges `_reach_down` skipped are
  skipped again (following its marks in col), and with `prune` so is every
  node of q-reach -0.0 or chance reach 0: it has an exact zero factor on
  its path, so its stale value is finite and only ever multiplied by an
  exact 0 (BUILD_NOTES.md); chance's reach is tested only if `zero_chance`
  (some internal node has chance reach 0). At each of p's decision nodes h
  visited it writes slot m = slot_of[h]: delta[m, 0] = stamp and
  delta[m, 1 + a] = pi_{-p}(h) (v_p(h a) - v_p(h)). Writes visited[k], the
  nodes visited in task k.
  """
  for k in prange(first, last):
    listed, lo, hi = task_range(k, top_nodes, task_start, task_end)
    resume = hi
    skipped = 0
    for m in range(hi - 1, lo - 1, -1):
      if prune and m >= resume:
        continue
      n = top_nodes[m] if listed else m
      if kind[n] == 2:
        continue
      x = col[n]
      if prune and (x <= 0.0 or (zero_chance and chance[n] == 0.0)):
        if x < 0.0:  # The last internal node of a skipped range.
          resume = int(-x)
          skipped += m + 1 - resume
          continue
        if math.copysign(1.0, x) < 0.0 or chance[n] == 0.0:
          continue
      s = child_start[n]
      c = num_children[n]
      v = 0.0
      if kind[n] == 0:
        for j in range(c):
          v += edge_prob[s + j] * values[s + j]
        values[n] = v
        continue
      i = infoset[n]
      for j in range(c):
        v += strategy[i, j] * values[s + j]
      values[n] = v
      if player[n] == p:
        h = slot_of[n]
        delta[h, 0] = stamp
        w = x * chance[n]
        vp = v if p == 0 else utility_sum - v
        for j in range(c):
          child = values[s + j] if p == 0 else utility_sum - values[s + j]
          delta[h, 1 + j] = w * (child - vp)
    visited[k] = hi - lo - skipped


@njit(cache=True, error_model="numpy")
def _sweeps(p, q, stamp, prune, zero_chance, with_values, kind, player,
            infoset, child_start, num_children, edge_prob, utility_sum,
            top_nodes, task_start, task_end, skip_end, chance, slot_of,
            strategy, col, values, own, delta, visited):
  """q's reach top-down (the top, then the tasks), then if `with_values`
  the values bottom-up (the tasks, then the top). Returns nodes visited."""
  top = task_start.shape[0]
  for first, last in ((top, top + 1), (0, top)):
    _reach_down(first, last, prune, kind, player, infoset, child_start,
                num_children, top_nodes, task_start, task_end, skip_end,
                slot_of, strategy, q, col, own, stamp,
                visited)
  touched = visited.sum()
  if with_values:
    for first, last in ((0, top), (top, top + 1)):
      _values_up(first, last, p, prune, zero_chance, kind, player, infoset,
                 child_start, num_children, edge_prob, utility_sum,
                 top_nodes, task_start, task_end, chance, slot_of, strategy,
                 col, values, delta, stamp, visited)
    touched += visited.sum()
  return touched


@njit(cache=True, error_model="numpy", parallel=parallel_phases())
def _update_infosets(p, num_actions, iset_start, iset_slot, player_iset_start,
                     player_isets, own, own_expected, delta, stamp, regrets,
                     avg, strategy, weight, flags, rule, inst):
  """Player p's infosets, one thread each: regret and average terms summed
  over the infoset's slots (its nodes in ascending id order), then RM+
  clipping or DCFR discounting and regret matching; with a split rule
  (flags.split) the regret terms are summed into inst and `rule_row` does the
  rest.

  A regret slot not written this pass (delta[m, 0] != stamp) belongs to a
  node with pi_{-p}(h) = 0, whose term would add +-0; an average slot not
  written by the last sweep of p's reach (own[m, 1] != own_expected) has
  pi_p(h) = 0, whose term would add +0.
  """
  split = flags.split
  for m in prange(player_iset_start[p], player_iset_start[p + 1]):
    i = player_isets[m]
    count = num_actions[i]
    first = iset_slot[i]
    target = inst if split else regrets
    if split:
      for j in range(count):
        inst[i, j] = 0.0
    for h in range(first, first + iset_start[i + 1] - iset_start[i]):
      if delta[h, 0] == stamp:
        for j in range(count):
          target[i, j] += delta[h, 1 + j]
      if own[h, 1] == own_expected:
        x = own[h, 0]
        for j in range(count):
          avg[i, j] += x * strategy[i, j] * weight
    if split:
      rule_row(regrets[i], inst[i], strategy[i], count, flags.clip,
               flags.post, flags.predictive, rule.discount, rule.positive,
               rule.negative, rule.predict)
    else:
      _clip_or_discount(regrets, i, count, flags.clip, flags.post,
                        rule.positive, rule.negative)
      regret_matching_row(regrets, i, count, strategy, i)


@njit(cache=True, error_model="numpy")
def cfr_iterations(kind, player, infoset, child_start, num_children,
                   edge_prob, utility, utility_sum, num_actions,
                   infoset_player, schedule, scratch, regrets, avg, strategy,
                   passes, flags, coefficients, inst, resume,
                   first_iteration, num_iterations, simultaneous):
  """Runs exact iterations first_iteration ..; tables change in place.

  Args:
    schedule: `Schedule.cfr_args()`, a `SweepArgs`
      (mccfrb/kernels/schedule.py).
    scratch: a `Scratch` (`cfr_scratch` in solvers/cfr.py). FOUR_SWEEPS uses reach float64[N, P + 1] and values
      float64[N]; SWEEPS uses reach float64[1, N] (one player's own reach,
      root entry 1), values (terminal entries must hold `utility`: they are
      never written), visited int64[T + 1], and per slot (decision node)
      own float64[S, 2] (own reach, stamp) and delta float64[S, 1 + A]
      (stamp, regret increments), stamps initially < 0. With SWEEPS, node
      ids are the schedule's block order.
    regrets, avg: float64[I, A] cumulative regrets and average weights.
    strategy: float64[I, A], the current strategy (kept in step with regrets).
    passes: FOUR_SWEEPS or SWEEPS (same tables). SWEEPS runs tasks and
      infosets on numba's threads (the caller sets their number); the
      tables do not depend on it. General trees (utility float64[N, P],
      `GameTree.payoffs`) run FOUR_SWEEPS only, one pass per player in
      player order.
    flags: the regret rule's `Flags` (solvers/rules.py `kernel_flags`).
    coefficients: float64[num_iterations, 5], the rule's (discount,
      positive, negative, predict, weight) for each iteration
      (`RegretRule.coefficients`).
    inst: float64[I, A] scratch for the instantaneous regrets of a split
      rule (else unused, any shape).
    resume: SWEEPS only: `scratch` is the one the previous call (which
      ended at iteration first_iteration - 1) left, with the tables
      unchanged since, so player 0's own reach is in it; else one more
      top-down sweep computes it.
    simultaneous: every player's terms of iteration t from sigma^t, then
      every player's rows updated (simultaneous updates, Zinkevich et al.
      2007; OpenSpiel's `alternating_updates=False`); else player p's pass
      sees the rows players 0 .. p - 1 updated in iteration t (alternating
      updates). FOUR_SWEEPS makes one pass for all players; SWEEPS keeps
      its passes, one per player, and defers every player's row updates
      (`_update_infosets`) until both have swept.

  Returns:
    Nodes touched: FOUR_SWEEPS counts the sweeps of the tree per pass (4;
    2 + 2 P for a simultaneous pass on a general tree of P players);
    SWEEPS counts the internal nodes each sweep visits.
  """
  reach, values, own = scratch.reach, scratch.values, scratch.own
  delta, visited = scratch.delta, scratch.visited
  top_nodes, chance, slot_of = (schedule.top_nodes, schedule.chance,
                                schedule.slot_of)
  task_start, task_end, skip_end = (schedule.task_start, schedule.task_end,
                                    schedule.skip_end)
  iset_start, iset_slot = schedule.iset_start, schedule.iset_slot
  player_iset_start = schedule.player_iset_start
  player_isets = schedule.player_isets
  prune, zero_chance = schedule.prune, schedule.zero_chance
  n_nodes = kind.shape[0]
  touched = 0
  # Stamps: 3 t for the sweep of player 0's reach that starts a call at
  # iteration t, 3 t + 1 + p for player p's pass of iteration t (player
  # 1's pass sweeps player 0's reach). Simultaneous updates need no
  # starting sweep: player 0's averages wait for player 1's pass.
  own_expected = [0, 0]
  if passes == SWEEPS and resume:
    own_expected[0] = 3 * (first_iteration - 1) + 2
  elif passes == SWEEPS and not simultaneous:
    own_expected[0] = 3 * first_iteration
    # np.int64 and np.bool_ keep the constants from being literal types:
    # numba would compile `_sweeps` (and its callees) once more for them.
    touched += _sweeps(
        np.int64(0), np.int64(0), own_expected[0], prune, zero_chance,
        np.bool_(False), kind, player,
        infoset, child_start, num_children, edge_prob, utility_sum, top_nodes,
        task_start, task_end, skip_end, chance, slot_of, strategy, reach[0],
        values, own, delta, visited)
  for t in range(first_iteration, first_iteration + num_iterations):
    k = t - first_iteration
    weight = coefficients[k, 4]
    rule = Rule(coefficients[k, 0], coefficients[k, 1], coefficients[k, 2],
                coefficients[k, 3])
    if passes == FOUR_SWEEPS:
      # One pass per player in turn, or one pass for all (p = -1).
      for p in range(-1 if simultaneous else 0,
                     0 if simultaneous else players_of(utility)):
        touched += n_nodes * _four_sweep_pass(
            kind, player, infoset, child_start, num_children, edge_prob,
            utility, utility_sum, num_actions, infoset_player, regrets, avg,
            strategy, reach, values, p, weight, flags, rule, inst)
      continue
    for p in range(2):
      q = 1 - p
      stamp = 3 * t + 1 + p
      touched += _sweeps(
          p, q, stamp, prune, zero_chance, np.bool_(True), kind, player,
          infoset,
          child_start, num_children, edge_prob, utility_sum, top_nodes,
          task_start, task_end, skip_end, chance, slot_of, strategy,
          reach[0], values, own, delta, visited)
      own_expected[q] = stamp
      if not simultaneous:
        _update_infosets(p, num_actions, iset_start, iset_slot,
                         player_iset_start, player_isets, own,
                         own_expected[p], delta, stamp, regrets,
                         avg, strategy, weight, flags, rule, inst)
    if simultaneous:
      for p in range(2):
        _update_infosets(p, num_actions, iset_start, iset_slot,
                         player_iset_start, player_isets, own,
                         own_expected[p], delta, 3 * t + 1 + p, regrets,
                         avg, strategy, weight, flags, rule, inst)
  return touched
