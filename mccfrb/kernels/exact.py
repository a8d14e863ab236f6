"""Exact full-tree traversals: strategies, reach, values, best responses.

Every kernel takes the tree arrays in the order of `GameTree.kernel_args()`:
(node_kind, node_player, node_infoset, child_start, num_children, edge_prob,
utility). Children have larger ids than their parents, so a forward loop over
ids is a top-down sweep and a reverse loop a bottom-up sweep. Node kinds:
0 chance, 1 decision, 2 terminal.

The utility is player 0's, float64[N], on two-player zero- and
constant-sum trees (player 1's is utility_sum - u), or every player's,
float64[N, P], on general trees (`GameTree.payoffs`). Kernels that run
both read it through `payoff` and `players_of`, whose branch on its
dimension numba resolves when it compiles: a two-player tree's kernels
hold no branch for general trees.
"""

from numba import njit
from numba import prange

from mccfrb.kernels.threads import parallel_phases
from mccfrb.tables.atomics import borrow


@njit(cache=True, inline="always")
def borrowed_tree(kind, player, infoset, child_start, num_children, edge_prob,
                  utility):
  """A tree's kernel arrays (`GameTree.kernel_args`), borrowed
  (tables/atomics.py): a kernel takes them so at its start, and the
  helpers inlined in its loops then count no references to them."""
  return (borrow(kind), borrow(player), borrow(infoset), borrow(child_start),
          borrow(num_children), borrow(edge_prob), borrow(utility))


@njit(cache=True)
def payoff(utility, utility_sum, n, p):
  """u_p(n): player p's utility at terminal n, from `utility` float64[N]
  (player 0's; player 1's is utility_sum - u_0) or float64[N, P]."""
  if utility.ndim == 2:
    return utility[n, p]
  return utility[n] if p == 0 else utility_sum - utility[n]


@njit(cache=True)
def players_of(utility):
  """The number of players of a tree with this utility array."""
  if utility.ndim == 2:
    return utility.shape[1]
  return 2


@njit(cache=True, error_model="numpy", inline="always")
def regret_matching_row(regrets, infoset, num_actions, out, row):
  """Regret matching for one infoset (docs/pages/algorithms.md "Notation").

  Inlined by numba: as a call, LLVM left it a call with both arrays'
  structures pushed on the stack at every decision node, and external
  sampling on a tree ran 6-10% fewer iterations a second (BUILD_NOTES,
  "Regret matching inlined").

  sigma(I, a) = R+(I, a) / sum_b R+(I, b), uniform if the sum is 0.

  Args:
    regrets: float64[I, A] cumulative regrets.
    infoset: the row to read.
    num_actions: the number of legal actions of that row.
    out: float64[:, >= num_actions]; row `row` is filled in place.
    row: the row of `out` to fill.
  """
  total = 0.0
  for a in range(num_actions):
    r = regrets[infoset, a]
    if r > 0.0:
      total += r
  if total > 0.0:
    for a in range(num_actions):
      r = regrets[infoset, a]
      out[row, a] = r / total if r > 0.0 else 0.0
  else:
    for a in range(num_actions):
      out[row, a] = 1.0 / num_actions


@njit(cache=True, error_model="numpy")
def rule_row(regrets, inst, strategy, count, clip, post, predictive,
             discount, positive, negative, predict):
  """One infoset's regret rule (mccfrb/solvers/rules.py), on 1-D row views.

  With r = inst (the pass's instantaneous regrets):
    X = R * discount + r, clipped at 0 if `clip`, else (if `post`)
    multiplied by `positive` (X >= 0) or `negative` (X < 0): the new R;
    sigma = regret matching of R, or of R * predict + r if `predictive`
    (PCFR+: Farina et al. 2021, eq. of predictive RM+; DCFR+/PDCFR+: Xu et
    al. 2024). inst is overwritten by the regrets that were matched.
  """
  total = 0.0
  for a in range(count):
    r = inst[a]
    x = regrets[a] * discount + r
    if clip and x < 0.0:
      x = 0.0
    elif post:
      x = x * (positive if x >= 0.0 else negative)
    regrets[a] = x
    y = x * predict + r if predictive else x
    inst[a] = y
    if y > 0.0:
      total += y
  if total > 0.0:
    for a in range(count):
      y = inst[a]
      strategy[a] = y / total if y > 0.0 else 0.0
  else:
    for a in range(count):
      strategy[a] = 1.0 / count


@njit(cache=True, error_model="numpy")
def regret_matching(regrets, num_actions, out):
  """Current strategy of every infoset by regret matching; fills `out`."""
  for i in range(regrets.shape[0]):
    regret_matching_row(regrets, i, num_actions[i], out, i)


@njit(cache=True, error_model="numpy")
def normalize_rows(cumulative, num_actions, out):
  """Average strategy: each row of `cumulative` normalized, uniform if zero.

  Args:
    cumulative: float64[I, A] cumulative strategy weights.
    num_actions: int32[I].
    out: float64[I, A], filled in place (padding columns set to 0).
  """
  for i in range(cumulative.shape[0]):
    n = num_actions[i]
    total = 0.0
    for a in range(n):
      total += cumulative[i, a]
    for a in range(out.shape[1]):
      if a >= n:
        out[i, a] = 0.0
      elif total > 0.0:
        out[i, a] = cumulative[i, a] / total
      else:
        out[i, a] = 1.0 / n


@njit(cache=True, error_model="numpy")
def reach_probabilities(kind, player, infoset, child_start, num_children,
                        edge_prob, strategy, reach):
  """Top-down reach probabilities of every node under `strategy`.

  Args:
    strategy: float64[I, A] behaviour strategy of every player.
    reach: float64[N, P + 1], filled in place: column p is player p's own
      reach and the last chance's, so pi(h) is their product and
      pi_{-i}(h) is the product of the columns but i (with two players,
      reach[h, 1 - i] * reach[h, 2]).
  """
  if reach.shape[1] != 3:
    # Kept apart on purpose: a loop over the columns made the two-player
    # sweep measurably slower (BUILD_NOTES, "Games with more players").
    _reach_of_players(kind, player, infoset, child_start, num_children,
                      edge_prob, strategy, reach)
    return
  reach[0, 0] = 1.0
  reach[0, 1] = 1.0
  reach[0, 2] = 1.0
  for n in range(kind.shape[0]):
    k = kind[n]
    if k == 2:
      continue
    s = child_start[n]
    for j in range(num_children[n]):
      c = s + j
      reach[c, 0] = reach[n, 0]
      reach[c, 1] = reach[n, 1]
      reach[c, 2] = reach[n, 2]
      if k == 0:
        reach[c, 2] *= edge_prob[c]
      else:
        reach[c, player[n]] *= strategy[infoset[n], j]


@njit(cache=True, error_model="numpy")
def _reach_of_players(kind, player, infoset, child_start, num_children,
                      edge_prob, strategy, reach):
  """`reach_probabilities` with any number of players (P + 1 columns)."""
  chance = reach.shape[1] - 1
  for q in range(chance + 1):
    reach[0, q] = 1.0
  for n in range(kind.shape[0]):
    k = kind[n]
    if k == 2:
      continue
    s = child_start[n]
    for j in range(num_children[n]):
      c = s + j
      for q in range(chance + 1):
        reach[c, q] = reach[n, q]
      if k == 0:
        reach[c, chance] *= edge_prob[c]
      else:
        reach[c, player[n]] *= strategy[infoset[n], j]


@njit(cache=True, error_model="numpy")
def node_values(kind, player, infoset, child_start, num_children, edge_prob,
                utility, strategy, values):
  """Expected utility of player 0 below every node under `strategy`.

  v(h) = sum_a sigma(h, a) v(ha), chance weighted by its probabilities.

  Args:
    values: float64[N], filled in place.
  """
  player_values(kind, player, infoset, child_start, num_children, edge_prob,
                utility, 0.0, 0, strategy, values)


@njit(cache=True, error_model="numpy")
def player_values(kind, player, infoset, child_start, num_children,
                  edge_prob, utility, utility_sum, p, strategy, values):
  """`node_values` in player p's utility (`payoff`): the values general
  trees need per player.

  Args:
    values: float64[N], filled in place.
  """
  for n in range(kind.shape[0] - 1, -1, -1):
    k = kind[n]
    if k == 2:
      values[n] = payoff(utility, utility_sum, n, p)
      continue
    s = child_start[n]
    v = 0.0
    if k == 0:
      for j in range(num_children[n]):
        v += edge_prob[s + j] * values[s + j]
    else:
      i = infoset[n]
      for j in range(num_children[n]):
        v += strategy[i, j] * values[s + j]
    values[n] = v


@njit(cache=True, error_model="numpy")
def counterfactual_values(kind, player, infoset, child_start, num_children,
                          edge_prob, utility, utility_sum, strategy, reach,
                          values, cfv):
  """Counterfactual values v_i(I, a) = sum_{h in I} pi_{-i}(h) u_i(ha).

  The value is in the acting player's own utility (u_1 = utility_sum - u_0),
  Zinkevich et al. 2007, Eq. for v_i(sigma, I).

  Args:
    reach: float64[N, 3] scratch, filled with `reach_probabilities`.
    values: float64[N] scratch, filled with player 0's `node_values`.
    cfv: float64[I, A], overwritten with the counterfactual values.
  """
  reach_probabilities(kind, player, infoset, child_start, num_children,
                      edge_prob, strategy, reach)
  node_values(kind, player, infoset, child_start, num_children, edge_prob,
              utility, strategy, values)
  cfv[:, :] = 0.0
  for n in range(kind.shape[0]):
    if kind[n] != 1:
      continue
    p = player[n]
    w = reach[n, 1 - p] * reach[n, 2]
    if w == 0.0:
      continue
    s = child_start[n]
    i = infoset[n]
    for j in range(num_children[n]):
      v = values[s + j] if p == 0 else utility_sum - values[s + j]
      cfv[i, j] += w * v


@njit(cache=True, error_model="numpy")
def best_response_value(kind, player, infoset, child_start, num_children,
                        edge_prob, utility, utility_sum, num_actions, strategy,
                        br_player, opp_reach, own_level, infoset_level,
                        best_action, cfv, values):
  """Value of a best response of `br_player` to the others' `strategy`.

  On general trees too (any number of players, `payoff`): the others'
  strategies and chance make pi_{-i}.

  BR_i(sigma_{-i}) = max over pure sigma_i of u_i(sigma_i, sigma_{-i}). With
  perfect recall an infoset's histories share the number of the responder's
  own earlier decisions (its level), and deeper infosets have larger levels.
  So infosets are decided level by level from the deepest: one bottom-up
  sweep per level accumulates cfv(I, a) = sum_{h in I} pi_{-i}(h) v(ha) for
  the infosets of that level, whose subtrees are already decided.

  Args:
    strategy: float64[I, A]; rows of `br_player` are ignored.
    br_player: the responder, 0 .. P - 1.
    opp_reach, values: float64[N] scratch. own_level: int32[N] scratch.
    infoset_level, best_action: int32[I] scratch. cfv: float64[I, A] scratch.

  Returns:
    The best-response value in `br_player`'s utility.
  """
  n_nodes = kind.shape[0]
  opp_reach[0] = 1.0
  own_level[0] = 0
  infoset_level[:] = -1
  max_level = 0
  for n in range(n_nodes):
    k = kind[n]
    if k == 2:
      continue
    s = child_start[n]
    c = num_children[n]
    if k == 0:
      for j in range(c):
        opp_reach[s + j] = opp_reach[n] * edge_prob[s + j]
        own_level[s + j] = own_level[n]
    elif player[n] == br_player:
      lev = own_level[n]
      infoset_level[infoset[n]] = lev
      if lev > max_level:
        max_level = lev
      for j in range(c):
        opp_reach[s + j] = opp_reach[n]
        own_level[s + j] = lev + 1
    else:
      i = infoset[n]
      for j in range(c):
        opp_reach[s + j] = opp_reach[n] * strategy[i, j]
        own_level[s + j] = own_level[n]
  cfv[:, :] = 0.0
  best_action[:] = 0
  # Level -1 is the final pass, with every infoset decided.
  for level in range(max_level, -2, -1):
    for n in range(n_nodes - 1, -1, -1):
      k = kind[n]
      if k == 2:
        values[n] = payoff(utility, utility_sum, n, br_player)
        continue
      s = child_start[n]
      v = 0.0
      if k == 0:
        for j in range(num_children[n]):
          v += edge_prob[s + j] * values[s + j]
      elif player[n] != br_player:
        i = infoset[n]
        for j in range(num_children[n]):
          v += strategy[i, j] * values[s + j]
      else:
        i = infoset[n]
        lev = infoset_level[i]
        if lev > level:
          v = values[s + best_action[i]]
        elif lev == level:
          w = opp_reach[n]
          for j in range(num_children[n]):
            cfv[i, j] += w * values[s + j]
      values[n] = v
    if level >= 0:
      for i in range(infoset_level.shape[0]):
        if infoset_level[i] == level:
          best = 0
          for j in range(1, num_actions[i]):
            if cfv[i, j] > cfv[i, best]:
              best = j
          best_action[i] = best
  return values[0]


# ---------------------------------------------------------------------------
# Sweep schedules (mccfrb/kernels/schedule.py): built once per tree.


@njit(cache=True)
def node_depths(kind, child_start, num_children, depth):
  """depth[n] = number of edges from the root to n; fills `depth` in place."""
  depth[0] = 0
  for n in range(kind.shape[0]):
    if kind[n] == 2:
      continue
    s = child_start[n]
    for j in range(num_children[n]):
      depth[s + j] = depth[n] + 1


@njit(cache=True)
def subtree_tasks(kind, child_start, num_children, depth, frontier, task):
  """task[n]: the index of n's ancestor at depth `frontier` (-1 above it).

  Task roots (internal nodes at depth `frontier`) are numbered in ascending
  id order; terminals at the frontier get no task. Fills `task` in place and
  returns the number of tasks.
  """
  count = 0
  task[0] = -1
  for n in range(kind.shape[0]):
    if depth[n] == frontier:
      if kind[n] == 2:
        task[n] = -1
      else:
        task[n] = count
        count += 1
    if kind[n] == 2:
      continue
    s = child_start[n]
    for j in range(num_children[n]):
      task[s + j] = task[n] if depth[n] >= frontier else -1
  return count


@njit(cache=True)
def bucket_order(keys, num_keys, start, order):
  """Stable counting sort: the indices with key k >= 0, in ascending order,
  are order[start[k]:start[k + 1]]; negative keys are left out.

  Args:
    keys: int[M]. num_keys: the number of buckets.
    start: int64[num_keys + 1] and order: int32[number of keys >= 0], filled
      in place.
  """
  start[:] = 0
  for m in range(keys.shape[0]):
    if keys[m] >= 0:
      start[keys[m] + 1] += 1
  for k in range(num_keys):
    start[k + 1] += start[k]
  fill = start[:num_keys].copy()
  for m in range(keys.shape[0]):
    k = keys[m]
    if k >= 0:
      order[fill[k]] = m
      fill[k] += 1


@njit(cache=True, error_model="numpy")
def chance_reach(kind, child_start, num_children, edge_prob, out):
  """Chance's reach of every node (column 2 of `reach_probabilities`).

  Returns:
    True if a product underflowed to 0 (nonzero factors, zero product).
  """
  out[0] = 1.0
  underflow = False
  for n in range(kind.shape[0]):
    k = kind[n]
    if k == 2:
      continue
    s = child_start[n]
    x = out[n]
    for j in range(num_children[n]):
      if k == 0:
        y = x * edge_prob[s + j]
        out[s + j] = y
        if y == 0.0 and x != 0.0 and edge_prob[s + j] != 0.0:
          underflow = True
      else:
        out[s + j] = x
  return underflow


@njit(cache=True)
def own_levels(kind, player, infoset, child_start, num_children, br_player,
               own_level, infoset_level):
  """The responder's level of every node and infoset (`best_response_value`).

  own_level[n] counts `br_player`'s decisions above n; infoset_level[I] is
  the level of I's histories (equal under perfect recall), -1 for the other
  player's infosets. Fills both in place; returns the largest infoset level
  (0 if `br_player` never acts).
  """
  own_level[0] = 0
  infoset_level[:] = -1
  max_level = 0
  for n in range(kind.shape[0]):
    k = kind[n]
    if k == 2:
      continue
    lev = own_level[n]
    if k == 1 and player[n] == br_player:
      infoset_level[infoset[n]] = lev
      if lev > max_level:
        max_level = lev
      lev += 1
    s = child_start[n]
    for j in range(num_children[n]):
      own_level[s + j] = lev
  return max_level


@njit(cache=True)
def block_order(kind, child_start, num_children, order, stack):
  """The node order of a depth-first expansion that numbers each node's
  children as one block when the node is expanded, first child first.

  This is the order `compile_tree` numbers nodes in; in it the descendants
  of every node form one contiguous range of ids. Fills order[new id] = id
  and uses `stack` (int64, max_depth * max_actions + 1) as scratch.
  """
  order[0] = 0
  following = 1
  sp = 0
  stack[0] = 0
  while sp >= 0:
    n = stack[sp]
    sp -= 1
    s = child_start[n]
    c = num_children[n]
    for j in range(c):
      order[following + j] = s + j
    following += c
    for j in range(c - 1, -1, -1):
      if kind[s + j] != 2:
        sp += 1
        stack[sp] = s + j


@njit(cache=True)
def subtree_ends(kind, child_start, num_children, end):
  """end[n] = 1 + the largest id in n's subtree (n included); in
  `block_order` the descendants of n are ids child_start[n] .. end[n] - 1."""
  for n in range(kind.shape[0] - 1, -1, -1):
    e = n + 1
    if kind[n] != 2:
      s = child_start[n]
      for j in range(num_children[n]):
        if end[s + j] > e:
          e = end[s + j]
    end[n] = e


@njit(cache=True)
def task_range(k, top_nodes, task_start, task_end):
  """(listed, lo, hi) of task k of a schedule (mccfrb/kernels/schedule.py): for the
  top (k = T) the nodes top_nodes[lo:hi] (listed), else the ids lo .. hi - 1."""
  if k == task_start.shape[0]:
    return True, 0, top_nodes.shape[0]
  return False, int(task_start[k]), int(task_end[k])


@njit(cache=True, error_model="numpy", parallel=parallel_phases())
def _opponent_reach_down(first, last, kind, player, infoset, child_start,
                         num_children, edge_prob, strategy, br_player,
                         top_nodes, task_start, task_end, opp_reach):
  """pi_{-i}(h) (chance and the opponent of `br_player`) top-down over the
  tasks first .. last - 1 of a schedule (T: the top), one thread each: the
  products `best_response_value` computes."""
  for k in prange(first, last):
    listed, lo, hi = task_range(k, top_nodes, task_start, task_end)
    for m in range(lo, hi):
      n = top_nodes[m] if listed else m
      kn = kind[n]
      if kn == 2:
        continue
      s = child_start[n]
      x = opp_reach[n]
      if kn == 0:
        for j in range(num_children[n]):
          opp_reach[s + j] = x * edge_prob[s + j]
      elif player[n] == br_player:
        for j in range(num_children[n]):
          opp_reach[s + j] = x
      else:
        i = infoset[n]
        for j in range(num_children[n]):
          opp_reach[s + j] = x * strategy[i, j]


@njit(cache=True, error_model="numpy", parallel=parallel_phases())
def _level_values_up(first, last, level, width, kind, player, infoset,
                     child_start, num_children, edge_prob, utility,
                     utility_sum, strategy, br_player, level_start,
                     level_nodes, best_action, values):
  """Values (in `br_player`'s utility) of the internal nodes of responder
  level `level` of tasks first .. last - 1 (T: the top), children first,
  one thread per task; the responder plays best_action."""
  for k in prange(first, last):
    for m in range(level_start[k * width + level],
                   level_start[k * width + level + 1]):
      n = level_nodes[m]
      s = child_start[n]
      c = num_children[n]
      if kind[n] == 1 and player[n] == br_player:
        c = s + best_action[infoset[n]]
        if kind[c] == 2:
          values[n] = utility[c] if br_player == 0 else utility_sum - utility[c]
        else:
          values[n] = values[c]
        continue
      v = 0.0
      for j in range(c):
        if kind[n] == 0:
          f = edge_prob[s + j]
        else:
          f = strategy[infoset[n], j]
        u = s + j
        if kind[u] == 2:
          v += f * (utility[u] if br_player == 0 else utility_sum - utility[u])
        else:
          v += f * values[u]
      values[n] = v


@njit(cache=True, error_model="numpy", parallel=parallel_phases())
def _decide_infosets(first, last, kind, child_start, utility, utility_sum,
                     num_actions, br_player, level_isets, iset_start,
                     iset_slot, slot_node, opp_reach, values, cfv,
                     best_action):
  """best_action of the responder's infosets level_isets[first:last], one
  thread each: cfv(I, a) = sum_{h in I} pi_{-i}(h) v(h a), summed in
  descending tree id order (as `best_response_value`'s reverse sweep),
  then the first maximum."""
  for m in prange(first, last):
    i = level_isets[m]
    count = num_actions[i]
    for a in range(count):
      cfv[i, a] = 0.0
    slot = iset_slot[i]
    for h in range(slot + iset_start[i + 1] - iset_start[i] - 1, slot - 1,
                   -1):
      n = slot_node[h]
      w = opp_reach[n]
      s = child_start[n]
      for a in range(count):
        u = s + a
        if kind[u] == 2:
          x = utility[u] if br_player == 0 else utility_sum - utility[u]
        else:
          x = values[u]
        cfv[i, a] += w * x
    best = 0
    for a in range(1, count):
      if cfv[i, a] > cfv[i, best]:
        best = a
    best_action[i] = best


@njit(cache=True, error_model="numpy")
def best_response_levels(kind, player, infoset, child_start, num_children,
                         edge_prob, utility, utility_sum, num_actions,
                         strategy, br_player, top_nodes, task_start, task_end,
                         max_level, level_start, level_nodes, iset_level_start,
                         level_isets, iset_start, iset_slot, slot_node,
                         opp_reach, values, cfv, best_action):
  """`best_response_value` over a schedule, on numba's threads.

  The same decisions and sums in the same order (so the same value, bit
  for bit), but each internal node's value is computed once: the nodes of
  responder level l + 1 are final once the infosets of level l + 1 are
  decided, so level by level from the deepest, the sweep computes the
  values of the nodes of level l + 1 (tasks in parallel, then the top) and
  decides the infosets of level l (in parallel); level -1 is the root's.
  Cost: about one top-down and one bottom-up sweep, instead of
  (levels + 2) sweeps of the whole tree.

  Args:
    kind .. utility: the schedule's block-order tree (`Schedule.tree`).
    top_nodes .. slot_node: `Schedule.best_response_args(br_player)`.
    opp_reach, values: float64[N] scratch; cfv: float64[I, A] scratch;
      best_action: int32[I] scratch.

  Returns:
    The best-response value in `br_player`'s utility.
  """
  top = task_start.shape[0]
  opp_reach[0] = 1.0
  for first, last in ((top, top + 1), (0, top)):
    _opponent_reach_down(first, last, kind, player, infoset, child_start,
                         num_children, edge_prob, strategy, br_player,
                         top_nodes, task_start, task_end, opp_reach)
  width = max_level + 2
  for level in range(max_level, -2, -1):
    for first, last in ((0, top), (top, top + 1)):
      _level_values_up(first, last, level + 1, width, kind, player, infoset,
                       child_start, num_children, edge_prob, utility,
                       utility_sum, strategy, br_player, level_start,
                       level_nodes, best_action, values)
    if level >= 0:
      _decide_infosets(iset_level_start[level], iset_level_start[level + 1],
                       kind, child_start, utility, utility_sum, num_actions,
                       br_player, level_isets, iset_start, iset_slot,
                       slot_node, opp_reach, values, cfv, best_action)
  if kind[0] == 2:
    return utility[0] if br_player == 0 else utility_sum - utility[0]
  return values[0]
