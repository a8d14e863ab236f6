"""Public-state sampling MCCFR with baselines on a native engine (no tree).

The episode of kernels/public.py (`_public_episodes`, mode 0; Schmid et al.
2019, the vector form of VR-MCCFR; Davis et al. 2020, public outcome
sampling), with the public tree built on the fly: the public states an
episode visits are expanded as it reaches them, by the engine
(mccfrb/games/engines/protocol.py), and infoset rows are found by the
engine's keys in the growing hash tables of tables/hashed.py.

An episode holds, in a pool, the histories of the public states it visits
(engine state, reaches, value, row), and per history its edges (terminal
utility, or the pool index of the child if the child's public state is
visited). Visiting a public state S: the rows of its histories' infosets
are looked up (inserted on first visit), every child of every history is
played on a scratch state, the children are grouped by
`protocol.public_hash` in order of first appearance (history ascending,
move ascending: on a compiled tree the order of public-state ids, since
node ids at equal depth follow the histories' lexicographic order), the
groups holding a non-terminal child are the candidates, and one is drawn
(or, with public chance sampling at a public state of decisions, every
one is kept) exactly as kernels/public.py draws it; the kept groups
become public states of the pool, their histories' reaches following
from their parents'. So on a game that compiles an episode draws the same
uniforms, visits the same public states, and adds the same terms in the
same order as the tree kernel: the tables equal the tree run's bit for bit
(tests/test_public_engine.py).

The up pass is kernels/public.py's, term for term: u(h, a) from the
terminal utility, the child's value (xi = 1), or the baseline-corrected
estimate b(h, a) + [visited] (u(h a) - b(h, a)) / xi; regrets of the
update player's infosets, RM+ clipping and stochastic averaging once per
infoset of S, optimistic averaging once per opponent infoset of S; the
history baseline learns the edges into visited public states; the
predictive baseline is reset under sigma^{t+1}. The current strategy
sigma^t is the tables' `strategy` column (regret matching of the row,
redone when the row's regrets change), so sigma^{t+1} of a row is ready
once its update is done.

Baselines: 0 none; 4 history and 5 predictive, per history and move in a
second hash table keyed by the running hash of the move indices
(kernels/outcome_engine.py's `history_step`); the oracle needs the whole
game's values and is refused by the solver. Variant codes are
kernels/public.py's.

When a buffer or a table is short of room, the episode stops before its
up pass changes anything, the generator is put back where the episode
began, and the kernel returns the episode's number with a status in
`ctl`; the caller grows what is short and calls again.
"""

import numba
import numpy as np
from numba import njit

from mccfrb.games.engines import protocol
from mccfrb.kernels.outcome import averaged
from mccfrb.kernels.outcome_engine import HISTORY_SEED
from mccfrb.kernels.outcome_engine import history_step
from mccfrb.kernels.public import _stored
from mccfrb.kernels.rng import pcg64_next
from mccfrb.kernels.rows import match_into
from mccfrb.kernels.stream import group_probe
from mccfrb.kernels.stream import group_table_size
from mccfrb.kernels.weighting import linear_skipped
from mccfrb.tables import hashed
from mccfrb.tables.atomics import prefetch

# The infoset rows' fields (tables/hashed.py), in this order, and header
# words; the history rows' fields: the value, and the running mean's count
# (history baseline).
FIELDS = ("regret", "avg", "strategy")
HEADER = ("mark",)
P_REGRET, P_AVG, P_STRATEGY = 0, 1, 2
H_MARK = 2

# ctl (int64[CTL_SIZE]).
C_STATUS = 0
C_NEED_POOL = 1  # Histories the pool must hold.
C_NEED_EDGES = 2
C_NEED_STATES = 3  # Public states.
C_NEED_GROUPS = 4  # Children to group at one public state.
C_STAMP = 5  # Stamp of the grouping hash table's last use.
CTL_SIZE = 6

# Statuses.
DONE = 0
SHORT_POOL = 1  # ctl[C_NEED_*] say how much.
SHORT_TABLE = 2
SHORT_HISTORY = 3

# Pool columns: floats (reaches pi_i, pi_{-i} with chance, the opponent's
# own; value u(h); the predictive baseline's v'(h)) and ints.
F_OWN, F_OPP, F_OPP_OWN, F_VALUE, F_PRED = 0, 1, 2, 3, 4
POOL_FLOATS = 5
I_ROW, I_PLAYER, I_MOVES, I_EDGE, I_PS, I_HROW = 0, 1, 2, 3, 4, 5
POOL_INTS = 6
# Public-state columns: first and end history in the pool; q(S), xi.
S_START, S_END = 0, 1
S_Q, S_XI = 0, 1
# e_child of an edge: the child's pool index, or one of these.
TERMINAL_EDGE = -2
UNSAMPLED = -1


@njit(cache=True, inline="always")
def _move_prob(code, params, state, p, row, start, cells, j, c):
  """sigma(h, j) at a history: chance's probability, the row's strategy
  (its cells from `start`, the row's first cell), or uniform where the
  infoset has no row."""
  if p == protocol.CHANCE:
    return protocol.chance_prob(code, params, state, j)
  if row >= 0:
    return np.float64(cells[start + P_STRATEGY * c + j])
  return 1.0 / c


@njit(cache=True, error_model="numpy")
def public_engine_episodes(code, params, utility_sum, tab, history,
                           baseline_kind, averaging, regret_plus, sampling,
                           epsilon, decay, first_iteration, first_episode,
                           num_episodes, allow_insert, allow_history,
                           rng_state, pool_state, pool_f, pool_i, pool_key,
                           e_child, e_util, e_group, ps_i, ps_f, visited,
                           stack, gkeys, gstamp, gval, groups, gxi,
                           child_est, scratch, ctl):
  """Public-state sampling episodes first_episode .. num_episodes - 1 (one
  after the other, each updating the tables before the next starts).

  Episode e updates player i = e % 2 at iteration t = first_iteration +
  e // 2, drawing its uniforms from the solver's PCG64 (`rng_state`,
  advanced in place) as kernels/public.py does.

  Args:
    tab: (index, meta, words, cells, layout) of the infoset rows
      (tables/hashed.py; fields FIELDS, header HEADER, the strategy field
      uniform in a new row).
    history: the same of the per-history baselines' rows (field 0 the
      value, field 1 the history baseline's visit count).
    pool_state: int64[H, state size]; pool_f: float64[H, POOL_FLOATS];
      pool_i: int64[H, POOL_INTS]; pool_key: uint64[H, 2] (history keys).
    e_child, e_group: int64[E]; e_util: float64[E] (edges).
    ps_i: int64[P, 2]; ps_f: float64[P, 2]; visited, stack: int64[P].
    gkeys: uint64[G2, 2], gstamp, gval: int64[G2] (the grouping hash
      table, G2 a power of 2 >= 2 G); groups: int64[G, 4] (per group of
      one public state's children: 1 if it holds a non-terminal child, its
      non-terminal children, the next pool index to fill, its public state
      or -1); gxi: float64[G] (xi of each group).
    child_est: float64[A]; scratch: int64[state size].
    ctl: int64[CTL_SIZE].

  Returns:
    (the episode to run next: num_episodes unless one was short of room,
    nodes touched).
  """
  numba.literally(code)
  index, meta, words, cells, layout = tab
  h_index, h_meta, h_words, h_cells, h_layout = history
  header = layout[hashed.L_HEADER]
  per_word = layout[hashed.L_PER_WORD]
  h_header = h_layout[hashed.L_HEADER]
  h_per_word = h_layout[hashed.L_PER_WORD]
  per_history = baseline_kind == 4 or baseline_kind == 5
  max_moves = child_est.shape[0]
  widest = hashed.row_words(max_moves, header, layout[hashed.L_FIELDS],
                            per_word)
  h_widest = hashed.row_words(max_moves, h_header, h_layout[hashed.L_FIELDS],
                              h_per_word)
  no_block = meta[:0]
  s_hi = rng_state[0]
  s_lo = rng_state[1]
  inc_hi = rng_state[2]
  inc_lo = rng_state[3]
  touched = 0
  ctl[C_STATUS] = DONE
  e = first_episode
  while e < num_episodes:
    start_hi = s_hi
    start_lo = s_lo
    i = e % 2
    t = first_iteration + e // 2
    avg_w = float(t) if regret_plus else 1.0
    stamp = 2
    episode_touched = 0
    protocol.reset(code, params, pool_state[0])
    pool_f[0, F_OWN] = 1.0
    pool_f[0, F_OPP] = 1.0
    pool_f[0, F_OPP_OWN] = 1.0
    pool_i[0, I_PS] = 0
    pool_key[0, 0] = np.uint64(HISTORY_SEED[0])
    pool_key[0, 1] = np.uint64(HISTORY_SEED[1])
    npool = 1
    nedge = 0
    ps_i[0, S_START] = 0
    ps_i[0, S_END] = 1
    ps_f[0, S_Q] = 1.0
    ps_f[0, S_XI] = 1.0
    nps = 1
    stack[0] = 0
    top = 1
    nvis = 0
    status = DONE
    while top > 0:
      top -= 1
      s = stack[top]
      visited[nvis] = s
      nvis += 1
      q = ps_f[s, S_Q]
      hs = ps_i[s, S_START]
      he = ps_i[s, S_END]
      # The rows of the histories' infosets, sigma^t in their strategy:
      # one lookup per infoset of S (its histories grouped by key first).
      if allow_insert and not hashed.has_room(meta, index, he - hs,
                                              (he - hs) * widest):
        status = SHORT_TABLE
        break
      if (group_table_size(he - hs) > gkeys.shape[0]
          or he - hs > groups.shape[0]):
        ctl[C_NEED_GROUPS] = he - hs
        status = SHORT_POOL
        break
      mask = gkeys.shape[0] - 1
      ctl[C_STAMP] += 1
      gs = ctl[C_STAMP]
      nloc = 0
      children = 0
      if he - hs > 1:
        # The index slots of the histories' infosets first: independent
        # loads whose misses overlap (the lookups below then wait little).
        for k in range(hs, he):
          st = pool_state[k]
          p = protocol.player(code, params, st)
          if p >= 0:
            h1, _ = protocol.infoset_hash(code, params, st, p)
            hashed.slot_hint(index, h1)
      for k in range(hs, he):
        st = pool_state[k]
        p = protocol.player(code, params, st)
        c = protocol.num_moves(code, params, st)
        pool_i[k, I_PLAYER] = p
        pool_i[k, I_MOVES] = c
        pool_i[k, I_EDGE] = nedge + children
        children += c
        episode_touched += c
        row = -1
        if p >= 0:
          h1, h2 = protocol.infoset_hash(code, params, st, p)
          loc = group_probe(gkeys, gstamp, gval, mask, gs, h1, h2, nloc)
          if loc == nloc:
            row, _ = hashed.row_of(index, meta, words, cells, layout, h1,
                                   h2, c, allow_insert, no_block, False)
            if row >= 0:
              prefetch(cells, hashed.first_cell(row, header, per_word))
            groups[nloc, 3] = row
            nloc += 1
          else:
            row = groups[loc, 3]
        pool_i[k, I_ROW] = row
      if nedge + children > e_child.shape[0]:
        ctl[C_NEED_EDGES] = nedge + children
        status = SHORT_POOL
        break
      if (group_table_size(children) > gkeys.shape[0]
          or children > groups.shape[0]):
        ctl[C_NEED_GROUPS] = children
        status = SHORT_POOL
        break
      # The children, grouped by public state in order of first appearance.
      ctl[C_STAMP] += 1
      gs = ctl[C_STAMP]
      ng = 0
      for k in range(hs, he):
        st = pool_state[k]
        for j in range(pool_i[k, I_MOVES]):
          edge = pool_i[k, I_EDGE] + j
          for w in range(st.shape[0]):
            scratch[w] = st[w]
          protocol.apply(code, params, scratch, j)
          terminal = protocol.player(code, params, scratch) == (
              protocol.TERMINAL)
          if terminal:
            e_child[edge] = TERMINAL_EDGE
            e_util[edge] = protocol.returns0(code, params, scratch)
          else:
            e_child[edge] = UNSAMPLED
          a, b = protocol.public_hash(code, params, scratch)
          g = group_probe(gkeys, gstamp, gval, mask, gs, a, b, ng)
          if g == ng:
            groups[g, 0] = 0
            groups[g, 1] = 0
            groups[g, 2] = -1
            ng += 1
          e_group[edge] = g
          if not terminal:
            groups[g, 0] = 1
            groups[g, 1] += 1
      # Candidates: the groups with a non-terminal child, in group order.
      ncand = 0
      for g in range(ng):
        if groups[g, 0] == 1:
          ncand += 1
      nedge += children
      if ncand == 0:
        continue
      explore = sampling == 2 and pool_i[hs, I_PLAYER] != protocol.CHANCE
      _group_xi(code, params, pool_state, pool_f, pool_i, header, per_word,
                cells, e_group, groups, hs, he, ng, ncand, sampling,
                epsilon, explore, gxi)
      if not explore:
        s_hi, s_lo, u = pcg64_next(s_hi, s_lo, inc_hi, inc_lo)
        chosen = -1
        cumulative = 0.0
        for g in range(ng):
          if groups[g, 0] == 1 and gxi[g] > 0.0:
            chosen = g
            cumulative += gxi[g]
            if u < cumulative:
              break
        for g in range(ng):  # Only the chosen one is kept.
          if g != chosen:
            gxi[g] = 0.0
      # Room for the kept groups' histories and public states.
      kept_histories = 0
      kept_states = 0
      for g in range(ng):
        if groups[g, 0] == 1 and gxi[g] > 0.0:
          kept_histories += groups[g, 1]
          kept_states += 1
      if (npool + kept_histories > pool_state.shape[0]
          or nps + kept_states > ps_i.shape[0]):
        ctl[C_NEED_POOL] = npool + kept_histories
        ctl[C_NEED_STATES] = nps + kept_states
        status = SHORT_POOL
        break
      # Kept groups become public states, in group order; pushed in
      # descending order so that they are visited ascending.
      offset = npool
      for g in range(ng):
        if groups[g, 0] == 1 and gxi[g] > 0.0:
          groups[g, 2] = offset
          groups[g, 3] = nps
          ps_i[nps, S_START] = offset
          ps_i[nps, S_END] = offset + groups[g, 1]
          ps_f[nps, S_Q] = q * gxi[g]
          ps_f[nps, S_XI] = gxi[g]
          offset += groups[g, 1]
          nps += 1
        else:
          groups[g, 3] = -1
      for g in range(ng - 1, -1, -1):
        if groups[g, 3] >= 0:
          stack[top] = groups[g, 3]
          top += 1
      for k in range(hs, he):
        st = pool_state[k]
        p = pool_i[k, I_PLAYER]
        c = pool_i[k, I_MOVES]
        row = pool_i[k, I_ROW]
        start = hashed.first_cell(row, header, per_word) if row >= 0 else 0
        for j in range(c):
          edge = pool_i[k, I_EDGE] + j
          g = e_group[edge]
          if e_child[edge] != UNSAMPLED or groups[g, 3] < 0:
            continue
          n = groups[g, 2]
          groups[g, 2] = n + 1
          e_child[edge] = n
          child = pool_state[n]
          for w in range(st.shape[0]):
            child[w] = st[w]
          protocol.apply(code, params, child, j)
          pool_i[n, I_PS] = groups[g, 3]
          pool_key[n, 0], pool_key[n, 1] = history_step(
              pool_key[k, 0], pool_key[k, 1], j)
          pool_f[n, F_OWN] = pool_f[k, F_OWN]
          pool_f[n, F_OPP] = pool_f[k, F_OPP]
          pool_f[n, F_OPP_OWN] = pool_f[k, F_OPP_OWN]
          sj = _move_prob(code, params, st, p, row, start, cells, j, c)
          if p == protocol.CHANCE:
            pool_f[n, F_OPP] *= sj
          elif p == i:
            pool_f[n, F_OWN] *= sj
          else:
            pool_f[n, F_OPP] *= sj
            pool_f[n, F_OPP_OWN] *= sj
      npool = offset
    if status == DONE and allow_history and not hashed.has_room(
        h_meta, h_index, npool, npool * h_widest):
      status = SHORT_HISTORY
    if status != DONE:
      ctl[C_STATUS] = status
      rng_state[0] = start_hi
      rng_state[1] = start_lo
      return e, touched
    # Up, over the visited public states in reverse preorder.
    for d in range(nvis - 1, -1, -1):
      s = visited[d]
      q = ps_f[s, S_Q]
      hs = ps_i[s, S_START]
      he = ps_i[s, S_END]
      for k in range(hs, he):
        st = pool_state[k]
        p = pool_i[k, I_PLAYER]
        c = pool_i[k, I_MOVES]
        row = pool_i[k, I_ROW]
        start = hashed.first_cell(row, header, per_word) if row >= 0 else 0
        hb = -1
        if per_history:
          hrow, _ = hashed.row_of(h_index, h_meta, h_words, h_cells,
                                  h_layout, pool_key[k, 0], pool_key[k, 1],
                                  c, allow_history, no_block, False)
          if hrow >= 0:
            hb = hashed.first_cell(hrow, h_header, h_per_word)
        pool_i[k, I_HROW] = hb
        v = 0.0
        for j in range(c):
          edge = pool_i[k, I_EDGE] + j
          ch = e_child[edge]
          if ch == TERMINAL_EDGE:
            est = _stored(i, utility_sum, e_util[edge])
          else:
            xi = ps_f[pool_i[ch, I_PS], S_XI] if ch >= 0 else 0.0
            if xi == 1.0:
              est = pool_f[ch, F_VALUE]
            else:
              b = 0.0
              if baseline_kind != 0 and hb >= 0:
                b = _stored(i, utility_sum, np.float64(h_cells[hb + j]))
              est = b
              if xi > 0.0:
                est = b + (pool_f[ch, F_VALUE] - b) / xi
            if xi > 0.0 and baseline_kind == 4 and hb >= 0:
              target = _stored(i, utility_sum, pool_f[ch, F_VALUE])
              count = 0.0 if decay > 0.0 else np.float64(h_cells[hb + c + j])
              h_cells[hb + j] = averaged(np.float64(h_cells[hb + j]), count,
                                         target, decay)
              if decay <= 0.0:
                h_cells[hb + c + j] = count + 1.0
          v += _move_prob(code, params, st, p, row, start, cells, j,
                          c) * est
          child_est[j] = est
        pool_f[k, F_VALUE] = v
        if p < 0 or row < 0:
          continue
        if p == i:
          w = pool_f[k, F_OPP] / q
          for j in range(c):
            cells[start + j] += w * (child_est[j] - v)
        elif averaging == 1 and words[row + H_MARK] != stamp:
          words[row + H_MARK] = stamp
          prev = hashed.stamp_of(words, row)
          if regret_plus:
            ow = linear_skipped(t, prev) * pool_f[k, F_OPP_OWN]
          else:
            ow = (t - prev) * pool_f[k, F_OPP_OWN]
          for j in range(c):
            cells[start + c + j] += ow * np.float64(cells[start + 2 * c + j])
          hashed.set_stamp(words, row, t)
      for k in range(hs, he):
        row = pool_i[k, I_ROW]
        if (pool_i[k, I_PLAYER] != i or row < 0
            or words[row + H_MARK] == stamp):
          continue
        words[row + H_MARK] = stamp
        c = pool_i[k, I_MOVES]
        start = hashed.first_cell(row, header, per_word)
        if regret_plus:
          for j in range(c):
            if cells[start + j] < 0.0:
              cells[start + j] = 0.0
        if averaging == 0:
          for j in range(c):
            cells[start + c + j] += avg_w * (
                pool_f[k, F_OWN] * np.float64(cells[start + 2 * c + j]) / q)
        match_into(cells, start, c, cells, start + 2 * c)  # sigma^{t+1}(I).
      if baseline_kind != 5:
        continue
      # Predictive baseline: v'(h) under sigma^{t+1}, children first.
      for k in range(hs, he):
        st = pool_state[k]
        p = pool_i[k, I_PLAYER]
        c = pool_i[k, I_MOVES]
        row = pool_i[k, I_ROW]
        start = hashed.first_cell(row, header, per_word) if row >= 0 else 0
        hb = pool_i[k, I_HROW]
        episode_touched += c
        v = 0.0
        for j in range(c):
          edge = pool_i[k, I_EDGE] + j
          ch = e_child[edge]
          if ch == TERMINAL_EDGE:
            est = _stored(i, utility_sum, e_util[edge])
          else:
            stored = 0.0
            if hb >= 0:
              if ch >= 0:
                h_cells[hb + j] = _stored(i, utility_sum, pool_f[ch, F_PRED])
              stored = np.float64(h_cells[hb + j])
            elif ch >= 0:
              stored = _stored(i, utility_sum, pool_f[ch, F_PRED])
            est = _stored(i, utility_sum, stored)
          v += _move_prob(code, params, st, p, row, start, cells, j,
                          c) * est
        pool_f[k, F_PRED] = v
    # Leave the marks at zero for the next episode.
    for k in range(npool):
      row = pool_i[k, I_ROW]
      if row >= 0:
        words[row + H_MARK] = 0
    touched += episode_touched
    e += 1
  rng_state[0] = s_hi
  rng_state[1] = s_lo
  return e, touched


@njit(cache=True, error_model="numpy")
def _group_xi(code, params, pool_state, pool_f, pool_i, header, per_word,
              cells, e_group, groups, hs, he, ng, ncand, sampling, epsilon,
              explore, xi):
  """xi[g] = xi(S -> S') of the children groups g < ng of public state S
  (0 for groups without a non-terminal child): 1 when exploring, else
  uniform over the n candidates or, on-policy, eps / n + (1 - eps) m(S') /
  sum m with m(S') = sum over the edges into S' of pi(h) sigma(h, a)
  (kernels/public.py's sums, in its order)."""
  numba.literally(code)
  for g in range(ng):
    xi[g] = 0.0
  if explore:
    for g in range(ng):
      if groups[g, 0] == 1:
        xi[g] = 1.0
    return
  if sampling != 1:
    for g in range(ng):
      if groups[g, 0] == 1:
        xi[g] = 1.0 / ncand
    return
  # On-policy: the flows into every group, summed in the tree's order
  # (histories of the child public state ascending = history, move).
  for k in range(hs, he):
    st = pool_state[k]
    p = pool_i[k, I_PLAYER]
    c = pool_i[k, I_MOVES]
    row = pool_i[k, I_ROW]
    start = hashed.first_cell(row, header, per_word) if row >= 0 else 0
    for j in range(c):
      g = e_group[pool_i[k, I_EDGE] + j]
      if groups[g, 0] == 1:
        sj = _move_prob(code, params, st, p, row, start, cells, j, c)
        xi[g] += pool_f[k, F_OWN] * pool_f[k, F_OPP] * sj
  total = 0.0
  for g in range(ng):
    if groups[g, 0] == 1:
      total += xi[g]
  for g in range(ng):
    if groups[g, 0] != 1:
      continue
    if total > 0.0:
      xi[g] = epsilon / ncand + (1.0 - epsilon) * xi[g] / total
    else:
      xi[g] = 1.0 / ncand
