r"""A best responder to a fixed policy, trained and scored on a native engine.

The policy is a sampling solver's hashed table (tables/hashed.py), read
row by row as `EnginePolicy` reads it (solvers/engine.py): sigma^T by
regret matching of the regrets (or the stored strategy field), and the
average

$$\bar\sigma(I, a) \propto \mathrm{avg}[I, a]
  + W\,\pi^{T}_{p}(h)\,\sigma^{T}(I, a),$$

$W = 0$ without optimistic averaging, $T - L$ with it, and
$(T(T+1) - L(L+1))/2$ with its linear form (RM+), $L$ the row's stamp and
$\pi^T_p(h)$ the owner's reach under sigma^T, which the walk carries down
(Lanctot 2013, section 4; `current` reads sigma^T itself). An infoset
without a row plays uniform.

The responder of player i (`me`) is a search over i's information states
against the fixed policy: the opponent's moves and chance are sampled,
so the opponent is part of the environment, and with perfect recall
i's problem is a one-player decision tree over its information states
(the distribution over the histories of an information state does not
depend on i's own strategy). A walk samples one episode:

- at i's information state I with a row of n(I) = sum_a n(I, a) >=
  `expand` visits (inside the searched tree), the action of PUCT (Silver
  et al. 2017, as in AlphaZero's search) with the policy's own strategy
  as the prior, a quarter of it uniform:
  $\arg\max_a \bar u(I, a) + C\,S\,p(a)\sqrt{n(I)} / (1 + n(I, a))$,
  $p(a) = 0.75\,\sigma(I, a) + 0.25/|A(I)|$, with
  $\bar u(I, a) = \mathrm{total}(I, a) / n(I, a)$ (an untried action: the
  row's mean), C `explore` and S the standard deviation of the walks'
  returns so far (kept by the kernel per responder); at a decision with
  at most `explore_moves` moves every move is explored instead;
- the first of i's information states of the walk that is not inside the
  tree (no row, or fewer than `expand` visits) gets a row if it has none
  (at most one new row a walk, as Monte Carlo tree search grows its tree)
  and plays the policy's own strategy for i, as every later decision of
  i in the walk does (the default policy);
- at the end, every row the walk passed (inside the tree and the first
  outside it) adds the walk's return u_i(z) to the total of the action
  taken and 1 to its count.

K walks are in flight at once (`train`): each has a lane (its stack, step
and stream), and the lanes take turns, a decision taking three steps (its
keys, the index slots they name, the rows), so that the K lookups' memory
misses overlap instead of following one another (as the outcome sampling
kernel's episodes in flight do). Walk w draws from its own counter-based
stream (`stream_start(key, w)`), so what a walk samples does not depend on
the lane that plays it; a walk's search reads the rows as the walks in
flight left them.

The trained responder plays at each information state with a row of at
least `expand` visits the action of the highest mean return among those
tried (the UCT recommendation), and the policy's own strategy everywhere
else: a strategy of i (mixed where it follows the policy), so its value
u_i(beta_i, sigma_{-i}) is at most the best response's, whatever the
walks saw. `score` plays it against the policy on fresh episodes.

With imperfect recall (goofspiel with imp_info=False: an information
state after different orders of i's own bids) the histories of an
information state depend on i's earlier choices, so the means mix
several situations and the search converges to a weaker responder; it is
still a strategy of i, and the bound stays a lower bound.

Every function takes arrays and fills them in place; `code` is the
engine's code (games/engines/protocol.py), a compile-time constant.
"""

import math
from typing import NamedTuple

import numba
import numpy as np
from numba import njit

from mccfrb.games.engines import protocol
from mccfrb.kernels.outcome import sample_index
from mccfrb.kernels.rng import pcg64_next
from mccfrb.kernels.rng import stream_start
from mccfrb.kernels.rng import stream_uniform
from mccfrb.kernels.rows import caught_up_into
from mccfrb.kernels.rows import match_into
from mccfrb.kernels.weighting import linear_skipped
from mccfrb.tables import hashed
from mccfrb.tables.atomics import borrow

# pmap (int64[PMAP_SIZE]): where the walk finds the policy's fields and
# header words (-1: absent), and how it reads the rows.
P_REGRET = 0
P_AVG = 1
P_STRATEGY = 2  # A stored current strategy, or -1: regret matching.
P_THROUGH = 3  # The discount stamp (discounted weighting), or -1.
P_FLUSH = 4  # FLUSH_* below.
PMAP_SIZE = 5
# How sigma is read: the average with no catch-up, with optimistic
# averaging's (T - L) or its linear form, or the current strategy.
FLUSH_NONE = 0
FLUSH_OPTIMISTIC = 1
FLUSH_LINEAR = 2
FLUSH_CURRENT = 3

# The responder's rows: fields (float64 cells).
R_COUNT = 0
R_TOTAL = 1
RESPONDER_FIELDS = ("count", "total")

# opts (float64[OPTS_SIZE]).
O_EXPAND = 0  # Visits that put a row inside the searched tree.
O_EXPLORE = 1  # PUCT's constant C.
O_SCALE = 2  # S: the standard deviation of the walks' returns so far
#               (`train` keeps it; the game's range of returns at first).
O_UTILITY_SUM = 3  # u_0 + u_1 at terminals.
O_BIG_T = 4  # T, the iteration the policy's averages catch up to.
O_EXPLORE_MOVES = 5  # Responder nodes with at most this many moves explore all.
O_TRUST = 6  # Visits from which the trained responder plays a row's best.
O_MIX = 7  # The uniform share of the search's prior.
O_WALKS = 8  # Walks so far, their returns' mean and sum of squared
O_MEAN = 9  # deviations (Welford): S is their standard deviation.
O_M2 = 10
OPTS_SIZE = 11

# A lane's step (`_turn`): no walk (the next turn starts one), at a node
# not yet looked at, at a decision whose keys are known (their index
# slots prefetched), whose slots are found (the rows they name
# prefetched), returning a value to the node at its depth.
IDLE = 0
ENTER = 1
LOCATE = 2
CONFIRM = 3
RETURN = 4
# lanes (int64[K, LANE_FIELDS]): the step, the depth, the decision's player
# and moves, its index slots in the policy's and the responder's tables,
# and whether the walk has inserted its row.
L_STEP = 0
L_DEPTH = 1
L_PLAYER = 2
L_MOVES = 3
L_PSLOT = 4
L_RSLOT = 5
L_INSERTED = 6
LANE_FIELDS = 7
# lane_words (uint64[K, LANE_WORDS]): the decision's infoset key, and the
# walk's stream state.
W_H1 = 0
W_H2 = 1
W_STREAM = 2
LANE_WORDS = 3



class Stacks(NamedTuple):
  """The lanes' stacks (`train`), a frame per depth: K lanes, D the
  engine's max_depth, A its max_moves.

  Attributes:
    states: int64[K, D + 2, state size], the state at each depth.
    row: int64[K, D + 1], the responder's row (-1: none).
    child: int64[K, D + 1], an explored node's move being played (-1: not
      explored).
    count: int64[K, D + 1], the move played, or an explored node's moves.
    search: int64[K, D + 1], whether the walk is still inside the tree.
    reach: float64[K, D + 1, 2], both players' reaches under sigma^T.
    mul: float64[K, D + 1, A], an explored node's sigma^T.
    vals: float64[K, D + 1, A], an explored node's moves' values.
    rng: uint64[K, D + 1], an explored node's stream (every move draws the
      same numbers).
  """
  states: np.ndarray
  row: np.ndarray
  child: np.ndarray
  count: np.ndarray
  search: np.ndarray
  reach: np.ndarray
  mul: np.ndarray
  vals: np.ndarray
  rng: np.ndarray


# Walk statuses of `train`.
RAN = 0  # All walks done.
SHORT = 1  # The last walk found the responder's table short of room.


@njit(cache=True, error_model="numpy", inline="always")
def policy_row(cells, words, o, c, header, per_word, pmap, big_t, log_pos,
               log_neg, reach, cur, sig):
  """sigma^T (into cur[:c]) and the evaluated policy (into sig[:c]) at the
  policy's row o (-1: no row, uniform), for a history whose owner's reach
  under sigma^T is `reach` (module docstring)."""
  flush = pmap[P_FLUSH]
  if o < 0:
    for j in range(c):
      cur[j] = 1.0 / c
      sig[j] = 1.0 / c
    return
  base = hashed.first_cell(o, header, per_word)
  if pmap[P_STRATEGY] >= 0:
    for j in range(c):
      cur[j] = np.float64(cells[base + pmap[P_STRATEGY] * c + j])
  elif flush == FLUSH_CURRENT and pmap[P_THROUGH] >= 0:
    # The discounts the row has pending (iterations through + 1 .. T).
    caught_up_into(cells, base + pmap[P_REGRET] * c, c, words,
                   o + pmap[P_THROUGH], np.int64(big_t) + 1, log_pos,
                   log_neg, sig, 0)
    match_into(sig, 0, c, cur, 0)
  else:
    match_into(cells, base + pmap[P_REGRET] * c, c, cur, 0)
  if flush == FLUSH_CURRENT:
    for j in range(c):
      sig[j] = cur[j]
    return
  w = 0.0
  if flush == FLUSH_OPTIMISTIC:
    w = big_t - hashed.stamp_of(words, o)
  elif flush == FLUSH_LINEAR:
    w = linear_skipped(big_t, hashed.stamp_of(words, o))
  total = 0.0
  a0 = base + pmap[P_AVG] * c
  for j in range(c):
    y = np.float64(cells[a0 + j])
    if w != 0.0:
      y += w * reach * cur[j]
    sig[j] = y
    total += y
  if total > 0.0:
    for j in range(c):
      sig[j] /= total
  else:
    for j in range(c):
      sig[j] = 1.0 / c


@njit(cache=True, error_model="numpy", inline="always")
def _found(words, o, c):
  """Row o if it has width c, else -1 (none, or a detected collision:
  another width)."""
  if o >= 0 and hashed.width_of(words, o) != c:
    return np.int64(-1)
  return o


@njit(cache=True, error_model="numpy", inline="always")
def _lookup(index, words, h1, h2, c):
  """The row of key (h1, h2) of width c, or -1 (`_found`)."""
  return _found(words, hashed.find(index, words, h1, h2), c)


@njit(cache=True, error_model="numpy", inline="always")
def _visits(cells, base, c):
  """n(I): the sum of the row's counts."""
  n = 0.0
  for j in range(c):
    n += cells[base + R_COUNT * c + j]
  return n


@njit(cache=True, error_model="numpy", inline="always")
def record(cells, base, c, a, value):
  """Adds one visit of move a with return `value` to a row."""
  cells[base + R_COUNT * c + a] += 1.0
  cells[base + R_TOTAL * c + a] += value


@njit(cache=True, error_model="numpy", inline="always")
def puct_move(cells, base, c, n, explore, scale, prior, mix):
  """PUCT: mean (untried: the row's mean) + C S prior(a) sqrt(n) / (1 +
  n_a)."""
  tot = 0.0
  for j in range(c):
    tot += cells[base + R_TOTAL * c + j]
  fpu = tot / n if n > 0 else 0.0
  root = math.sqrt(n)
  best = 0
  best_value = -np.inf
  for j in range(c):
    k = cells[base + R_COUNT * c + j]
    mean = cells[base + R_TOTAL * c + j] / k if k > 0.0 else fpu
    value = mean + explore * scale * (
        (1.0 - mix) * prior[j] + mix / c) * root / (1.0 + k)
    if value > best_value:
      best_value = value
      best = j
  return best


@njit(cache=True, error_model="numpy", inline="always")
def greedy_move(cells, base, c):
  """The trained responder's action at a row inside the tree: the highest
  mean return among the actions tried (the first of equal ones)."""
  best = -1
  best_value = -np.inf
  for j in range(c):
    k = cells[base + R_COUNT * c + j]
    if k > 0.0:
      value = cells[base + R_TOTAL * c + j] / k
      if value > best_value:
        best_value = value
        best = j
  return best


@njit(cache=True, error_model="numpy", inline="always")
def _chance_move(code, params, state, c, u):
  """The chance outcome of `state` that the uniform u selects."""
  total = 0.0
  for a in range(c):
    total += protocol.chance_prob(code, params, state, a)
    if u < total:
      return a
  return c - 1


@njit(cache=True, error_model="numpy", inline="always")
def _descend(code, params, states, d, j):
  """states[d + 1] = states[d] advanced by move j."""
  for k in range(states.shape[1]):
    states[d + 1, k] = states[d, k]
  protocol.apply(code, params, states[d + 1], j)


@njit(cache=True, error_model="numpy", inline="always")
def _return(me, utility_sum, u0):
  """me's return from player 0's."""
  return u0 if me == 0 else utility_sum - u0



@njit(cache=True, inline="always")
def _opened(table):
  """(index, words, cells, header words, cells per word) of a hashed
  table (`hashed.Hashed`)."""
  return (table.index, table.words, table.cells,
          table.layout[hashed.L_HEADER], table.layout[hashed.L_PER_WORD])


@njit(cache=True, inline="always")
def _borrowed(params, pol, pmap, log_pos, log_neg, resp, opts, cur, sig):
  """The arguments the walks read, borrowed (tables/atomics.py): each
  engine call and each view of them in the loops would otherwise count
  references with atomic instructions, about half of a walk's time on
  goofspiel 6 (BUILD_NOTES.md, "Evaluation and bounds")."""
  return (borrow(params), hashed.borrowed(pol), borrow(pmap), borrow(log_pos),
          borrow(log_neg), hashed.borrowed(resp), borrow(opts), borrow(cur),
          borrow(sig))


@njit(cache=True, error_model="numpy", inline="always")
def _insert(resp, h1, h2, c, widest_words):
  """The new row of key (h1, h2) of width c, or -1 when the table has no
  room for it (then meta[STOP] is set: the caller grows the table before
  the next walk)."""
  r_meta = resp.meta
  if not hashed.has_room(r_meta, resp.index, 1, widest_words):
    r_meta[hashed.STOP] = 1
    return np.int64(-1)
  row, _ = hashed.row_of(resp, h1, h2, c, True, r_meta[:0], False)
  return row


# `_searched`'s answers besides a move: an explored node (descend to its
# move 0), or the policy's own play (a move sampled from sigma).
EXPLORED = -2
SAMPLED = -1


@njit(cache=True, error_model="numpy", inline="always")
def _arrived(code, params, state, q, c, me, pol, resp, lanes, lane_words, x):
  """ENTER at a decision of q with c moves: its infoset key and the index
  slots it starts from, prefetched (the policy's, and at me's decisions
  the responder's: both lookups' first misses at once)."""
  h1, h2 = protocol.infoset_hash(code, params, state, q)
  lane_words[x, W_H1] = h1
  lane_words[x, W_H2] = h2
  lanes[x, L_PLAYER] = q
  lanes[x, L_MOVES] = c
  if c > 1:
    hashed.slot_hint(pol.index, h1)
    if q == me:
      hashed.slot_hint(resp.index, h1)


@njit(cache=True, inline="always")
def _widest(table, max_moves):
  """Words of a row of `max_moves` moves in a hashed table (`Hashed`)."""
  layout = table.layout
  return hashed.row_words(max_moves, layout[hashed.L_HEADER],
                          layout[hashed.L_FIELDS], layout[hashed.L_PER_WORD])


@njit(cache=True, error_model="numpy", inline="always")
def _slot(index, lane_words, x):
  """The slot of `index` from which lane x's decision key is looked up
  (`hashed.candidate`)."""
  return hashed.candidate(index, lane_words[x, W_H2],
                          hashed.home_slot(index, lane_words[x, W_H1]))


@njit(cache=True, error_model="numpy", inline="always")
def _located(pol, resp, lanes, lane_words, x, me, widest):
  """LOCATE: the index slots of lane x's decision key whose tags match (the
  policy's, and at me's decisions the responder's), with a prefetch of the
  rows they name. Returns whether a row is on its way."""
  p_index, p_words = pol.index, pol.words
  r_index, r_words = resp.index, resp.words
  pending = False
  if lanes[x, L_MOVES] > 1:
    s = _slot(p_index, lane_words, x)
    lanes[x, L_PSLOT] = s
    pending = hashed.row_hint(p_index, p_words, s, widest[0])
    if lanes[x, L_PLAYER] == me:
      s = _slot(r_index, lane_words, x)
      lanes[x, L_RSLOT] = s
      pending |= hashed.row_hint(r_index, r_words, s, widest[1])
  return pending


@njit(cache=True, error_model="numpy", inline="always")
def _searched(resp, opts, lanes, lane_words, frames, x, d, c, me, cur, sig,
              allow_insert, r_row_words):
  """CONFIRM at a decision of me with c > 1 moves (module docstring): its
  row (inserted where the walk may), and the move: EXPLORED (every move
  explored: the frame is set for them), PUCT's inside the searched tree,
  or SAMPLED (the policy's own play)."""
  r_index, r_words, r_cells, r_header, r_per_word = _opened(resp)
  h1 = lane_words[x, W_H1]
  h2 = lane_words[x, W_H2]
  row = _found(r_words, hashed.find_at(r_index, r_words, h1, h2,
                                       lanes[x, L_RSLOT]), c)
  if c <= np.int64(opts[O_EXPLORE_MOVES]):  # Every move explored.
    if row < 0 and allow_insert:
      row = _insert(resp, h1, h2, c, r_row_words)
    if row >= 0:
      frames.row[x, d] = row
      frames.child[x, d] = 0
      frames.count[x, d] = c
      for a in range(c):
        frames.mul[x, d, a] = cur[a]
      frames.reach[x, d + 1, me] = frames.reach[x, d, me] * cur[0]
      return EXPLORED
    frames.search[x, d + 1] = 0
  elif frames.search[x, d]:
    if row < 0 and lanes[x, L_INSERTED] == 0:
      row = _insert(resp, h1, h2, c, r_row_words)
      lanes[x, L_INSERTED] = 1
    frames.search[x, d + 1] = 0
    if row >= 0:
      frames.row[x, d] = row
      base = hashed.first_cell(row, r_header, r_per_word)
      n = _visits(r_cells, base, c)
      if n >= opts[O_EXPAND]:
        frames.search[x, d + 1] = 1
        return puct_move(r_cells, base, c, n, opts[O_EXPLORE],
                         opts[O_SCALE], sig, opts[O_MIX])
  return SAMPLED


@njit(cache=True, error_model="numpy", inline="always")
def _returned(frames, x, d, me, rets, resp):
  """RETURN of rets[x] to lane x's node at depth d: an explored node's
  next move (its frame set for it), or -1 when the node is done (its row
  updated; rets[x] its value)."""
  _, r_words, r_cells, r_header, r_per_word = _opened(resp)
  ret = rets[x]
  row = frames.row[x, d]
  j = frames.child[x, d]
  if j >= 0:  # An explored node: the next move, or all are done.
    c = frames.count[x, d]
    frames.vals[x, d, j] = ret
    j += 1
    if j < c:
      frames.child[x, d] = j
      frames.reach[x, d + 1, 1 - me] = frames.reach[x, d, 1 - me]
      frames.reach[x, d + 1, me] = frames.reach[x, d, me] * frames.mul[x, d, j]
      frames.search[x, d + 1] = frames.search[x, d]
      return j
    base = hashed.first_cell(row, r_header, r_per_word)
    for a in range(c):
      record(r_cells, base, c, a, frames.vals[x, d, a])
    rets[x] = frames.vals[x, d, greedy_move(r_cells, base, c)]
  elif row >= 0:  # A searched move: its count and total.
    c = hashed.width_of(r_words, row)
    base = hashed.first_cell(row, r_header, r_per_word)
    record(r_cells, base, c, frames.count[x, d], ret)
  return np.int64(-1)


@njit(cache=True, error_model="numpy", inline="always")
def _start(code, params, key, cursor, lanes, lane_words, frames, x,
           allow_insert):
  """Lane x starts the next walk: cursor[1], drawing from its own stream
  under `key`."""
  states = frames.states
  lane_words[x, W_STREAM] = stream_start(key, cursor[1])
  cursor[1] += 1
  protocol.reset(code, params, states[x, 0])
  frames.reach[x, 0, 0] = 1.0
  frames.reach[x, 0, 1] = 1.0
  frames.search[x, 0] = 1
  lanes[x, L_INSERTED] = 0 if allow_insert else 1
  lanes[x, L_DEPTH] = 0
  lanes[x, L_STEP] = ENTER


@njit(cache=True, error_model="numpy", inline="always")
def _turn(code, params, me, pol, pmap, log_pos, log_neg, resp, opts,
          allow_insert, lanes, lane_words, rets, frames, x, cur, sig, widest):
  """One turn of lane x's walk (module docstring), a depth-first traversal
  on the lane's explicit stack (a frame per depth: the state, the row and
  move, and at an explored node the moves' values). A decision takes three
  steps: ENTER (its keys, and a prefetch of their index slots), LOCATE (the
  slots, and a prefetch of the rows they name) and CONFIRM (the rows, the
  move); with several lanes the turn ends after each of the first two, so
  that the lanes' misses overlap, with one they follow at once. Returns
  whether the walk ended (its value at the root in rets[x]); rows are
  updated in place. widest: the words of the widest row of the policy's
  table and of the responder's (`_widest`)."""
  states = frames.states
  stack = states[x]
  p_index, p_words, p_cells, p_header, p_per_word = _opened(pol)
  flight = lanes.shape[0] > 1
  stream = lane_words[x, W_STREAM]
  d = lanes[x, L_DEPTH]
  step = lanes[x, L_STEP]
  ended = False
  while True:
    if step == ENTER:
      state = stack[d]
      frames.row[x, d] = -1
      frames.child[x, d] = -1
      q = protocol.player(code, params, state)
      if q == protocol.TERMINAL:
        rets[x] = _return(me, opts[O_UTILITY_SUM],
                          protocol.returns0(code, params, state))
        step = RETURN
        if d == 0:
          ended = True
          break
        d -= 1
        continue
      c = protocol.num_moves(code, params, state)
      frames.reach[x, d + 1, 0] = frames.reach[x, d, 0]
      frames.reach[x, d + 1, 1] = frames.reach[x, d, 1]
      frames.search[x, d + 1] = frames.search[x, d]
      if q == protocol.CHANCE:
        stream, u = stream_uniform(stream)
        _descend(code, params, stack, d, _chance_move(code, params, state, c,
                                                      u))
        d += 1
        continue
      _arrived(code, params, state, q, c, me, pol, resp, lanes, lane_words,
               x)
      step = LOCATE
      if flight:
        break
    if step == LOCATE:
      pending = _located(pol, resp, lanes, lane_words, x, me, widest)
      step = CONFIRM
      if flight and pending:
        break
    if step == CONFIRM:
      h1 = lane_words[x, W_H1]
      h2 = lane_words[x, W_H2]
      q = lanes[x, L_PLAYER]
      c = lanes[x, L_MOVES]
      if c > 1:
        policy_row(p_cells, p_words, _found(
            p_words, hashed.find_at(p_index, p_words, h1, h2,
                                    lanes[x, L_PSLOT]), c), c,
                   p_header, p_per_word, pmap, opts[O_BIG_T], log_pos,
                   log_neg, frames.reach[x, d, q], cur, sig)
      else:
        cur[0] = 1.0
        sig[0] = 1.0
      step = ENTER
      j = SAMPLED
      if q == me and c > 1:
        j = _searched(resp, opts, lanes, lane_words, frames, x, d, c, me,
                      cur, sig, allow_insert, widest[1])
        if j == EXPLORED:
          # Move 0 first; every move's subtree draws the same numbers
          # (common random numbers: their values differ by the move more
          # than by luck).
          frames.rng[x, d] = stream
          _descend(code, params, stack, d, 0)
          d += 1
          continue
      if j < 0:
        stream, u = stream_uniform(stream)
        j = sample_index(sig, 0, c, u, 0.0)
      frames.count[x, d] = j  # The move played, for the row's update.
      frames.reach[x, d + 1, q] = frames.reach[x, d, q] * cur[j]
      _descend(code, params, stack, d, j)
      d += 1
      continue
    # RETURN: rets[x] to the node at depth d.
    j = _returned(frames, x, d, me, rets, resp)
    if j >= 0:  # An explored node's next move.
      stream = frames.rng[x, d]
      _descend(code, params, stack, d, j)
      d += 1
      step = ENTER
      continue
    if d == 0:
      ended = True
      break
    d -= 1
  lanes[x, L_DEPTH] = d
  lanes[x, L_STEP] = IDLE if ended else step
  lane_words[x, W_STREAM] = stream
  return ended


@njit(cache=True, error_model="numpy")
def _episode(code, params, me, pol, pmap, log_pos, log_neg, resp, opts, rng,
             state, cur, sig):
  """One scoring episode: the trained responder (module docstring) against
  the policy. Returns (me's return, s_hi, s_lo)."""
  p_index, p_words, p_cells, p_header, p_per_word = _opened(pol)
  r_index, r_words, r_cells, r_header, r_per_word = _opened(resp)
  trust = opts[O_TRUST]
  big_t = opts[O_BIG_T]
  s_hi, s_lo, i_hi, i_lo = rng
  protocol.reset(code, params, state)
  reach0 = 1.0
  reach1 = 1.0
  while True:
    q = protocol.player(code, params, state)
    if q == protocol.TERMINAL:
      break
    c = protocol.num_moves(code, params, state)
    if q == protocol.CHANCE:
      s_hi, s_lo, u = pcg64_next(s_hi, s_lo, i_hi, i_lo)
      protocol.apply(code, params, state,
                     _chance_move(code, params, state, c, u))
      continue
    j = -1
    cur[0] = 1.0
    if c > 1:
      h1, h2 = protocol.infoset_hash(code, params, state, q)
      policy_row(p_cells, p_words, _lookup(p_index, p_words, h1, h2, c), c,
                 p_header, p_per_word, pmap, big_t, log_pos, log_neg,
                 reach0 if q == 0 else reach1, cur, sig)
      if q == me:
        row = _lookup(r_index, r_words, h1, h2, c)
        if row >= 0:
          base = hashed.first_cell(row, r_header, r_per_word)
          if _visits(r_cells, base, c) >= trust:
            j = greedy_move(r_cells, base, c)
      if j < 0:
        s_hi, s_lo, u = pcg64_next(s_hi, s_lo, i_hi, i_lo)
        j = sample_index(sig, 0, c, u, 0.0)
    else:
      j = 0
    if q == 0:
      reach0 *= cur[j]
    else:
      reach1 *= cur[j]
    protocol.apply(code, params, state, j)
  return (_return(me, opts[O_UTILITY_SUM], protocol.returns0(code, params,
                                                             state)),
          s_hi, s_lo)


@njit(cache=True, error_model="numpy", nogil=True)
def train(code, params, me, pol, pmap, log_pos, log_neg, resp, opts,
          allow_insert, count, drain, key, lanes, lane_words, rets, cursor,
          frames, cur, sig):
  """Training walks of responder `me` (module docstring) until `count`
  have started (and with `drain`, until every walk started has ended), or
  until a walk found the responder's table short of room for a new row
  (that walk goes on without it; returns SHORT: the caller grows the
  table, or freezes it and calls again with allow_insert False). K =
  lanes.shape[0] walks are in flight, their lanes taking turns (`_turn`);
  a lane whose walk ends starts the next in its next turn. The lanes and
  the cursor carry over between calls, so the walks and rows depend on
  `count` only, not on how the calls split it, and after a drain they are
  walks 0 .. count - 1 whatever K.

  Args:
    code, params: the engine (protocol.py).
    me: the responder, 0 or 1.
    pol: the policy's hashed table (`hashed.Hashed`); pmap: how to
      read it (P_*); log_pos, log_neg: discounted weighting's prefix sums
      of log-factors (kernels/weighting.py; read with P_THROUGH only).
    resp: the responder's hashed table: float64 cells, fields
      RESPONDER_FIELDS.
    opts: float64[OPTS_SIZE] (O_*).
    allow_insert: insert rows (else the walks only use those stored).
    count: walks to start; drain: end the walks in flight (the last
      call).
    key: uint64, the streams' key: walk w draws from
      `stream_start(key, w)` (kernels/rng.py).
    lanes: int64[K, LANE_FIELDS] (L_*), IDLE at first; lane_words:
      uint64[K, LANE_WORDS] (W_*); rets: float64[K]; cursor: int64[2],
      the lane whose turn is next and the walks started (advanced).
    frames: the lanes' `Stacks`; cur, sig: float64[A] scratch (A the
      engine's max_moves).

  Returns:
    RAN or SHORT.
  """
  numba.literally(code)
  params, pol, pmap, log_pos, log_neg, resp, opts, cur, sig = _borrowed(
      params, pol, pmap, log_pos, log_neg, resp, opts, cur, sig)
  frames = Stacks(borrow(frames.states), borrow(frames.row),
                  borrow(frames.child), borrow(frames.count),
                  borrow(frames.search), borrow(frames.reach),
                  borrow(frames.mul), borrow(frames.vals),
                  borrow(frames.rng))
  lanes = borrow(lanes)
  lane_words = borrow(lane_words)
  rets = borrow(rets)
  r_meta = resp.meta
  r_meta[hashed.STOP] = 0
  r_index = resp.index
  for x in range(lanes.shape[0]):  # The caller may have grown the table:
    if (lanes[x, L_STEP] == CONFIRM and lanes[x, L_PLAYER] == me  # found
        and lanes[x, L_MOVES] > 1):  # again (the same slot if not).
      lanes[x, L_RSLOT] = _slot(r_index, lane_words, x)
  widest = (_widest(pol, cur.shape[0]), _widest(resp, cur.shape[0]))
  status = RAN
  k = lanes.shape[0]
  x = cursor[0]
  idle = 0  # Lanes in a row found idle after the last walk started.
  while True:
    if lanes[x, L_STEP] == IDLE:
      if cursor[1] >= count:
        idle += 1
        if not drain or idle == k:
          break
        x = (x + 1) % k
        continue
      _start(code, params, key, cursor, lanes, lane_words, frames, x,
             allow_insert)
    idle = 0
    if _turn(code, params, me, pol, pmap, log_pos, log_neg, resp, opts,
             allow_insert, lanes, lane_words, rets, frames, x, cur, sig,
             widest):
      g = rets[x]
      n = opts[O_WALKS] + 1.0
      delta = g - opts[O_MEAN]
      opts[O_WALKS] = n
      opts[O_MEAN] += delta / n
      opts[O_M2] += delta * (g - opts[O_MEAN])
      if n >= 2.0 and opts[O_M2] > 0.0:
        opts[O_SCALE] = math.sqrt(opts[O_M2] / (n - 1.0))
    x = (x + 1) % k
    if r_meta[hashed.STOP] != 0:
      status = SHORT
      break
  cursor[0] = x
  return status


@njit(cache=True, error_model="numpy", nogil=True)
def score(code, params, me, pol, pmap, log_pos, log_neg, resp, opts,
          rng_state, state, cur, sig, out):
  """Fills `out` with me's returns of episodes in which the trained
  responder (module docstring) plays against the policy; arguments as
  `train`'s (state: int64[state size])."""
  numba.literally(code)
  params, pol, pmap, log_pos, log_neg, resp, opts, cur, sig = _borrowed(
      params, pol, pmap, log_pos, log_neg, resp, opts, cur, sig)
  state = borrow(state)
  rng = (rng_state[0], rng_state[1], rng_state[2], rng_state[3])
  for e in range(out.shape[0]):
    g, s_hi, s_lo = _episode(code, params, me, pol, pmap, log_pos, log_neg,
                             resp, opts, rng, state, cur, sig)
    rng = (s_hi, s_lo, rng[2], rng[3])
    out[e] = g
  rng_state[0] = rng[0]
  rng_state[1] = rng[1]
