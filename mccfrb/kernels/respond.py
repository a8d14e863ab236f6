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

import numba
import numpy as np
from numba import njit

from mccfrb.games.engines import protocol
from mccfrb.kernels.outcome import sample_index
from mccfrb.kernels.rng import pcg64_next
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
O_HINT = 11  # 1: prefetch the next decision's infoset (`_hint_next`).
OPTS_SIZE = 12

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
def _lookup(index, words, h1, h2, c):
  """The row of key (h1, h2) of width c, or -1 (none, or a detected
  collision: another width)."""
  o = hashed.find(index, words, h1, h2)
  if o >= 0 and hashed.width_of(words, o) != c:
    return np.int64(-1)
  return o


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
  table's arguments (tables/hashed.py)."""
  index, _, words, cells, layout = table
  return (index, words, cells, layout[hashed.L_HEADER],
          layout[hashed.L_PER_WORD])


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
  r_index, r_meta, r_words, r_cells, r_layout = resp
  if not hashed.has_room(r_meta, r_index, 1, widest_words):
    r_meta[hashed.STOP] = 1
    return np.int64(-1)
  row, _ = hashed.row_of(r_index, r_meta, r_words, r_cells, r_layout, h1, h2,
                         c, True, r_meta[:0], False)
  return row


@njit(cache=True, error_model="numpy", inline="always")
def _hint_next(code, params, states, d, q, me, p_index, r_index):
  """Prefetches the index slots of the infoset after move 0 of the node at
  depth d when the other player moves there. In goofspiel (the bids) that
  infoset does not depend on the move, so its misses overlap this node's
  lookups (walks 1.25x on 13-card goofspiel; on phantom_ttt, whose rows
  near the root stay in cache, the extra move cost about 0.75x: O_HINT is
  set per engine, evaluation/respond.py HINT_ENGINES). Plays the move on
  the stack's last row (scratch)."""
  last = states.shape[0] - 1
  for k in range(states.shape[1]):
    states[last, k] = states[d, k]
  protocol.apply(code, params, states[last], 0)
  nq = protocol.player(code, params, states[last])
  if nq >= 0 and nq != q:
    g1, _ = protocol.infoset_hash(code, params, states[last], nq)
    hashed.slot_hint(p_index, g1)
    if nq == me:
      hashed.slot_hint(r_index, g1)


@njit(cache=True, error_model="numpy")
def _walk(code, params, me, pol, pmap, log_pos, log_neg, resp, opts,
          allow_insert, rng, frames, cur, sig):
  """One training walk of responder `me` (module docstring), a depth-first
  traversal on an explicit stack (a frame per depth: the state, the row
  and move, and at an explored node the moves' values). Returns the PCG64
  state words (s_hi, s_lo) after it and the walk's value at the root;
  rows are updated in place."""
  (states, f_row, f_child, f_count, f_search, f_reach, f_mul, f_vals,
   f_rng) = frames
  p_index, p_words, p_cells, p_header, p_per_word = _opened(pol)
  r_index, r_words, r_cells, r_header, r_per_word = _opened(resp)
  r_layout = resp[4]
  expand = opts[O_EXPAND]
  big_t = opts[O_BIG_T]
  hint = opts[O_HINT] != 0.0
  widest = np.int64(opts[O_EXPLORE_MOVES])
  row_words = hashed.row_words(cur.shape[0], r_header,
                               r_layout[hashed.L_FIELDS], r_per_word)
  s_hi, s_lo, i_hi, i_lo = rng
  protocol.reset(code, params, states[0])
  f_reach[0, 0] = 1.0
  f_reach[0, 1] = 1.0
  f_search[0] = 1
  inserted = not allow_insert
  d = 0
  ret = 0.0
  entering = True
  while True:
    if entering:
      state = states[d]
      f_row[d] = -1
      f_child[d] = -1
      q = protocol.player(code, params, state)
      if q == protocol.TERMINAL:
        ret = _return(me, opts[O_UTILITY_SUM],
                      protocol.returns0(code, params, state))
        entering = False
        if d == 0:
          break
        d -= 1
        continue
      c = protocol.num_moves(code, params, state)
      f_reach[d + 1, 0] = f_reach[d, 0]
      f_reach[d + 1, 1] = f_reach[d, 1]
      f_search[d + 1] = f_search[d]
      if q == protocol.CHANCE:
        s_hi, s_lo, u = pcg64_next(s_hi, s_lo, i_hi, i_lo)
        _descend(code, params, states, d, _chance_move(code, params, state, c,
                                                       u))
        d += 1
        continue
      h1, h2 = protocol.infoset_hash(code, params, state, q)
      if q == me:  # Both lookups' first misses at once.
        hashed.slot_hint(r_index, h1)
      if hint:
        _hint_next(code, params, states, d, q, me, p_index, r_index)
      if c > 1:
        policy_row(p_cells, p_words, _lookup(p_index, p_words, h1, h2, c), c,
                   p_header, p_per_word, pmap, big_t, log_pos, log_neg,
                   f_reach[d, q], cur, sig)
      else:
        cur[0] = 1.0
        sig[0] = 1.0
      j = -1
      if q == me and c > 1:
        row = _lookup(r_index, r_words, h1, h2, c)
        if c <= widest:  # Every move explored.
          if row < 0 and allow_insert:
            row = _insert(resp, h1, h2, c, row_words)
          if row >= 0:
            f_row[d] = row
            f_child[d] = 0
            f_count[d] = c
            for a in range(c):
              f_mul[d, a] = cur[a]
            f_reach[d + 1, me] = f_reach[d, me] * cur[0]
            # Every move's subtree draws the same numbers (common random
            # numbers: their values differ by the move more than by luck).
            f_rng[d, 0] = s_hi
            f_rng[d, 1] = s_lo
            _descend(code, params, states, d, 0)
            d += 1
            continue
          f_search[d + 1] = 0
        elif f_search[d]:
          if row < 0 and not inserted:
            row = _insert(resp, h1, h2, c, row_words)
            inserted = True
          f_search[d + 1] = 0
          if row >= 0:
            f_row[d] = row
            base = hashed.first_cell(row, r_header, r_per_word)
            n = _visits(r_cells, base, c)
            if n >= expand:
              f_search[d + 1] = 1
              j = puct_move(r_cells, base, c, n, opts[O_EXPLORE],
                            opts[O_SCALE], sig, opts[O_MIX])
      if j < 0:
        s_hi, s_lo, u = pcg64_next(s_hi, s_lo, i_hi, i_lo)
        j = sample_index(sig, 0, c, u, 0.0)
      f_count[d] = j  # The move played, for the row's update.
      f_reach[d + 1, q] = f_reach[d, q] * cur[j]
      _descend(code, params, states, d, j)
      d += 1
      continue
    # Returning `ret` to the node at depth d.
    row = f_row[d]
    j = f_child[d]
    if j >= 0:  # An explored node: the next move, or all are done.
      c = f_count[d]
      f_vals[d, j] = ret
      j += 1
      if j < c:
        f_child[d] = j
        f_reach[d + 1, 1 - me] = f_reach[d, 1 - me]
        f_reach[d + 1, me] = f_reach[d, me] * f_mul[d, j]
        f_search[d + 1] = f_search[d]
        s_hi = f_rng[d, 0]
        s_lo = f_rng[d, 1]
        _descend(code, params, states, d, j)
        d += 1
        entering = True
        continue
      base = hashed.first_cell(row, r_header, r_per_word)
      for a in range(c):
        record(r_cells, base, c, a, f_vals[d, a])
      ret = f_vals[d, greedy_move(r_cells, base, c)]
    elif row >= 0:  # A searched move: its count and total.
      c = hashed.width_of(r_words, row)
      base = hashed.first_cell(row, r_header, r_per_word)
      record(r_cells, base, c, f_count[d], ret)
    if d == 0:
      break
    d -= 1
  return s_hi, s_lo, ret


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


@njit(cache=True, error_model="numpy")
def train(code, params, me, pol, pmap, log_pos, log_neg, resp, opts,
          allow_insert, count, rng_state, frames, cur, sig, done):
  """Training walks of responder `me` (module docstring) until done[0] ==
  `count`, or until a walk found the responder's table short of room for
  a new row (that walk went on without it; returns SHORT: the caller
  grows the table, or freezes it and calls again with allow_insert
  False).

  Args:
    code, params: the engine (protocol.py).
    me: the responder, 0 or 1.
    pol: the policy's (index, meta, words, cells, layout); pmap: how to
      read it (P_*); log_pos, log_neg: discounted weighting's prefix sums
      of log-factors (kernels/weighting.py; read with P_THROUGH only).
    resp: the responder's (index, meta, words, cells, layout): float64
      cells, fields RESPONDER_FIELDS.
    opts: float64[OPTS_SIZE] (O_*).
    allow_insert: insert rows (else the walks only use those stored).
    count: walks to reach; done: int64[1], walks done (advanced).
    rng_state: uint64[4], numpy's PCG64 state (kernels/rng.py), advanced
      in place.
    frames: (states int64[D + 2, state size], row, move, child, count,
      search int64[D + 1], reach float64[D + 1, 2], cur, vals
      float64[D + 1, A]): the walk's stack (D the engine's max_depth, A
      its max_moves); cur, sig: float64[A] scratch.

  Returns:
    RAN or SHORT.
  """
  numba.literally(code)
  params, pol, pmap, log_pos, log_neg, resp, opts, cur, sig = _borrowed(
      params, pol, pmap, log_pos, log_neg, resp, opts, cur, sig)
  (states, f_row, f_child, f_count, f_search, f_reach, f_mul, f_vals,
   f_rng) = frames
  frames = (borrow(states), borrow(f_row), borrow(f_child), borrow(f_count),
            borrow(f_search), borrow(f_reach), borrow(f_mul), borrow(f_vals),
            borrow(f_rng))
  r_meta = resp[1]
  rng = (rng_state[0], rng_state[1], rng_state[2], rng_state[3])
  status = RAN
  r_meta[hashed.STOP] = 0
  while done[0] < count:
    s_hi, s_lo, g = _walk(code, params, me, pol, pmap, log_pos, log_neg,
                          resp, opts, allow_insert, rng, frames, cur, sig)
    rng = (s_hi, s_lo, rng[2], rng[3])
    done[0] += 1
    n = opts[O_WALKS] + 1.0
    delta = g - opts[O_MEAN]
    opts[O_WALKS] = n
    opts[O_MEAN] += delta / n
    opts[O_M2] += delta * (g - opts[O_MEAN])
    if n >= 2.0 and opts[O_M2] > 0.0:
      opts[O_SCALE] = math.sqrt(opts[O_M2] / (n - 1.0))
    if r_meta[hashed.STOP] != 0:
      status = SHORT
      break
  rng_state[0] = rng[0]
  rng_state[1] = rng[1]
  return status


@njit(cache=True, error_model="numpy")
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
