"""Public-state sampling MCCFR with baselines, the vector form of VR-MCCFR,
on a compiled tree or a native engine.

docs/pages/algorithms.md, "Public-state sampling" (Schmid et al. 2019,
arXiv:1809.03057, section "VR-MCCFR" with public-state sampling; Davis,
Schmid, Bowling 2020, arXiv:1907.09633, "public outcome sampling"). One
episode walks one path of the public tree; at every public state it visits
it evaluates every history of that state (a vector over the private
histories: private chance is never sampled), evaluates terminal children
exactly, and samples one non-terminal child public state.

One episode for both representations (`episodes`):
  - a compiled tree: its public tree (games/public.py) is known, rows are
    dense by infoset id (regrets, avg and the scratch sigma^t, float64[I,
    A]), and the baselines are per tree edge, stored by child node id;
  - an engine (games/engines/protocol.py): the public states an episode
    visits are built as it reaches them. Their histories go in a pool
    (engine state, row, reaches, value), with per history its edges
    (terminal utility, or the pool index of the child if the child's public
    state is visited). Visiting a public state S: the rows of its
    histories' infosets are looked up in tables/hashed.py's table (fields
    FIELDS: regret, avg and the current strategy; inserted on first visit),
    every child of every history is played on a scratch state, the children
    are grouped by `protocol.public_hash` in order of first appearance
    (history ascending, move ascending: on a compiled tree the order of
    public-state ids, since node ids at equal depth follow the histories'
    lexicographic order), and the groups holding a non-terminal child are
    the candidates. The per-history baselines are rows of a second hashed
    table keyed by the running hash of the move indices
    (kernels/outcome.py's `history_step`).
The down pass (finding the candidates and drawing one) is written for each;
the up pass, where every estimator, baseline and averaging lives, is
written once, reading a row's cells (regrets at rcells[r0 + a], the
average's sums at acells[a0 + a], sigma^t at scells[s0 + a]) and a
history's baselines (bcells[b0 + a]). So on a game that compiles, an
engine's episode draws the same uniforms, visits the same public states
and adds the same terms in the same order as the tree's: the tables are
equal bit for bit (tests/test_public_engine.py).

Variant codes, shared with kernels/outcome.py:
  rule: the history-keyed baseline's learning rule (kernels/baselines.py):
    RULE_NONE (no baseline), RULE_CHILD (the "history" kind: per tree
    edge, stored by child node id, running or exponentially decaying
    average of the child's estimate), RULE_PREDICTIVE (Davis et al. 2020:
    reset along the path under sigma^{t+1}), RULE_ORACLE (exact values
    under sigma^t, recomputed before every episode; a tree only).
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

On an engine, when a buffer or a table is short of room, the episode stops
before its up pass changes anything, the generator is put back where the
episode began, and the kernel returns the episode's number with a status in
`ctl`; the caller grows what is short and calls again.
"""

import numba
import numpy as np
from numba import njit
from numba import prange

from mccfrb.games.engines import protocol
from mccfrb.kernels.baselines import RULE_CHILD
from mccfrb.kernels.baselines import RULE_NONE
from mccfrb.kernels.baselines import RULE_ORACLE
from mccfrb.kernels.baselines import RULE_PREDICTIVE
from mccfrb.kernels.baselines import averaged
from mccfrb.kernels.exact import borrowed_tree
from mccfrb.kernels.exact import node_values
from mccfrb.kernels.exact import regret_matching
from mccfrb.kernels.exact import regret_matching_row
from mccfrb.kernels.outcome import sample_index
from mccfrb.kernels.outcome import HISTORY_SEED
from mccfrb.kernels.outcome import history_step
from mccfrb.kernels.rng import batch_end
from mccfrb.kernels.rng import batch_key
from mccfrb.kernels.rng import pcg64_next
from mccfrb.kernels.rng import stream_start
from mccfrb.kernels.rng import stream_uniform
from mccfrb.kernels.rows import match_into
from mccfrb.kernels.stream import group_probe
from mccfrb.kernels.stream import group_table_size
from mccfrb.kernels.threads import parallel_phases
from mccfrb.kernels.weighting import linear_skipped
from mccfrb.tables import hashed
from mccfrb.tables.atomics import borrow
from mccfrb.tables.atomics import prefetch

# An engine's infoset rows' fields (tables/hashed.py), in this order, and
# header words; the history rows' fields: the value, and the running mean's
# count (history baseline).
FIELDS = ("regret", "avg", "strategy")
HEADER = ("mark",)
P_REGRET, P_AVG, P_STRATEGY = 0, 1, 2
H_MARK = 2

# ctl (int64[CTL_SIZE]), an engine's.
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

# Per history (a tree's node, an engine's pool index) floats: reaches pi_i,
# pi_{-i} with chance, the opponent's own; value u(h); the predictive
# baseline's v'(h).
F_OWN, F_OPP, F_OPP_OWN, F_VALUE, F_PRED = 0, 1, 2, 3, 4
POOL_FLOATS = 5
# An engine's pool ints.
I_ROW, I_PLAYER, I_MOVES, I_EDGE, I_PS, I_HROW = 0, 1, 2, 3, 4, 5
POOL_INTS = 6
# Public states: first and end history in an engine's pool (ints); q(S),
# xi (floats, both representations).
S_START, S_END = 0, 1
S_Q, S_XI = 0, 1
# e_child of an engine's edge: the child's pool index, or one of these.
TERMINAL_EDGE = -2
UNSAMPLED = -1


@njit(cache=True, error_model="numpy")
def _stored(update_player, utility_sum, value):
  """The update player's value as player 0's (and back: its own inverse)."""
  return value if update_player == 0 else utility_sum - value


# A history's accessors on each representation (the kernel calls a tree's
# under `if game is not None` and an engine's under `if eng is not None`:
# numba prunes the other's before typing, so each kernel types only its
# own). They take arrays, not the tuples: an inlined call with a tuple of
# arrays counts a reference to each of them.


@njit(cache=True, inline="always")
def _tree_history(kind, player, infoset, num_children, ps_histories, k,
                  width):
  """(h, player, moves, row, r0) of a tree's history ps_histories[k] (the
  player CHANCE or TERMINAL by its kind; its infoset's row starts at cell
  row A)."""
  h = np.int64(ps_histories[k])
  p = np.int64(player[h])
  if kind[h] == 2:
    p = protocol.TERMINAL
  elif kind[h] == 0:
    p = protocol.CHANCE
  row = np.int64(infoset[h])
  return h, p, np.int64(num_children[h]), row, row * width


@njit(cache=True, inline="always")
def _pool_history(pool_i, k, header, per_word):
  """(h, player, moves, row, r0) of an engine's history at pool index k
  (row -1 where the infoset is not stored)."""
  row = pool_i[k, I_ROW]
  r0 = hashed.first_cell(row, header, per_word) if row >= 0 else 0
  return k, pool_i[k, I_PLAYER], pool_i[k, I_MOVES], row, r0


@njit(cache=True, inline="always")
def _tree_edge(kind, child_start, utility, node_ps, ps_f, h, j):
  """(slot, terminal, its utility, xi) of move j at a tree's node h: the
  child node and the xi of its public state (0 if it was not visited)."""
  child = np.int64(child_start[h] + j)
  if kind[child] == 2:
    return child, True, utility[child], 0.0
  return child, False, 0.0, ps_f[node_ps[child], S_XI]


@njit(cache=True, inline="always")
def _pool_edge(pool_i, e_child, e_util, ps_f, h, j):
  """(slot, terminal, its utility, xi) of move j at an engine's history h:
  the child's pool index (-1 if its public state was not visited) and the
  xi of its public state (0 if not visited)."""
  edge = pool_i[h, I_EDGE] + j
  ch = e_child[edge]
  if ch == TERMINAL_EDGE:
    return ch, True, e_util[edge], 0.0
  return ch, False, 0.0, ps_f[pool_i[ch, I_PS], S_XI] if ch >= 0 else 0.0


@njit(cache=True, inline="always")
def _sigma(scells, s0, row, j, c):
  """sigma^t(I, j) of a player's row (scells[s0 + j]), uniform where an
  engine's infoset has no row."""
  if row >= 0:
    return np.float64(scells[s0 + j])
  return 1.0 / c


@njit(cache=True, error_model="numpy")
def episodes(code, game, eng, utility_sum, table, bl, codes, first_iteration,
              first_episode, num_episodes, learn_baselines, rng_state, key,
              worker, workers, scratch, study, records):
  """Public-state sampling episodes of the worker-th of `workers`
  contiguous blocks of range(first_episode, num_episodes); every table
  changes in place (the one episode of every representation).

  Episode e updates player i = e % 2 at iteration t = first_iteration +
  e // 2 (or t = first_iteration throughout with `study`). Episodes start
  at the root's public state, or, for the conditional variance
  (docs/pages/algorithms.md, "Measuring as the papers do"; Schmid et al.
  2019, Fig. 5), at a public state `start_ps` > 0 of decision nodes of a
  tree, and then update the player of its first history, with q(start_ps)
  = 1 and the reaches of its histories as the caller left them in `hf`.

  Down the public tree, in preorder from the root's public state (q = 1):
  every history h of a visited public state S gets sigma^t(h) (a tree's:
  regret matching, once per infoset; an engine's row holds it; chance: its
  probabilities). The non-terminal child public states of S, ascending (=
  in order of first appearance over h ascending, a ascending), are the
  candidates. Sampling 0 and 1 draw one, S', with one uniform and xi(S ->
  S') uniform or on-policy (eps / n + (1 - eps) m(S') / sum m, where m(S')
  sums pi(h) sigma(h, a) over the edges into S', pi the full reach);
  sampling 2 visits every candidate (xi = 1) of a public state of decision
  nodes and draws one of a public state of chance nodes uniformly. q(S') =
  q(S) xi(S -> S'); the reaches of the histories of S' follow from their
  parents'.

  Up, over the visited public states in reverse preorder (children first),
  for every non-terminal h in S (docs/pages/algorithms.md, "Public-state
  sampling"):
    u(h, a) = u_i(h a)                                     if h a is terminal,
    u(h, a) = u(h a)                       if pub(h a) was visited with xi = 1,
    u(h, a) = b(h, a) + [pub(h a) visited] (u(h a) - b(h, a)) / xi  otherwise,
    u(h) = sum_a sigma^t(h, a) u(h, a),
    R_I(a) += pi_{-i}(h) / q(S) (u(h, a) - u(h))   (I of player i),
  then, once per infoset of player i in S: RM+ clips R_I at 0 (if
  regret_plus) and stochastic averaging adds w_t pi_i(I) sigma^t(I, a) /
  q(S), with w_t = t if regret_plus else 1 (an engine's row then takes
  sigma^{t+1}). Optimistic averaging adds, once per opponent infoset in S,
  the skipped iterations' weights (t - c_I, or (t (t + 1) - c_I (c_I + 1))
  / 2 with regret_plus) times pi_owner(I) sigma^t(I) and sets c_I = t.
  History baselines of the edges into visited public states learn from
  u(h a) after their use. The predictive baseline then redoes each visited
  public state (after its regret update, children first) under
  sigma^{t+1}: b(h, a) <- v'(h a) for every edge into a visited public
  state, v'(h) = sum_a sigma^{t+1}(h, a) b(h, a) (terminal edges: u(h a)),
  without 1/xi (Davis et al.'s zero-variance setting).

  Args:
    code: the engine's code (a compile-time constant: call with
      games/engines/common.py's `call_literal`); on a tree, unread
      (protocol.TREE, a plain integer: a plain call from Python).
    game: None on an engine, or a tree's (kind, player, infoset,
      child_start, num_children, edge_prob, utility, num_actions, node_ps,
      ps_history_start, ps_histories, node_parent, ps_child_start,
      ps_children, mass, strategy_scratch, increment, start_ps): node_ps,
      ps_history_start, ps_histories are the `PublicTree` arrays;
      node_parent int32[N] the parent of every node (-1 at the root);
      ps_child_start, ps_children CSR lists of the non-terminal child
      public states of every public state, ascending (the candidates);
      mass: float64[P] scratch; strategy_scratch: float64[I, A] (oracle);
      increment: float64[I, A] (with `study` or `records`; zero).
    eng: None on a tree, or (params, tab, history, allow_insert,
      pool_state, pool_i, pool_key, e_child, e_util, e_group, ps_i, gkeys,
      gstamp, gval, groups, gxi, scratch, ctl, allow_history): the infoset
      rows' and the per-history baselines' tables' (index, meta, words,
      cells, layout) (fields FIELDS, header HEADER; the history rows' field
      0 the value, field 1 the running mean's count); pool_state: int64[H,
      state size]; pool_i: int64[H, POOL_INTS]; pool_key: uint64[H, 2];
      e_child, e_group: int64[E], e_util: float64[E] (edges); ps_i:
      int64[P, 2]; gkeys: uint64[G2, 2], gstamp, gval: int64[G2] (the
      grouping hash table, G2 a power of 2 >= 2 G); groups: int64[G, 4]
      (per group of one public state's children: 1 if it holds a
      non-terminal child, its non-terminal children, the next pool index to
      fill, its public state or -1); gxi: float64[G]; scratch: int64[state
      size]; ctl: int64[CTL_SIZE].
    table: (rcells, acells, scells, mwords, twords, width, a_step, s_step,
      m_off): a row's regrets at rcells[r0 + a], average sums at acells[a0
      + a], sigma^t at scells[s0 + a] (a0 = r0 + a_step c, s0 = r0 + s_step
      c), its mark at mwords[row + m_off] (zero on entry and exit) and its
      optimistic averaging's c_I in twords (a tree's avg_last[row], an
      engine's row stamp). A tree's rows start at r0 = row width.
    bl: (bcells, ccells): the baselines of history h's edges at bcells[b0 +
      a] and their counts at ccells[c0 + a]: a tree's by child node id (b0 =
      c0 = child_start[h]), an engine's in h's history row (c0 = b0 + c).
    codes: (rule, averaging, regret_plus, sampling, epsilon,
      decay).
    learn_baselines: False leaves the baseline tables untouched.
    rng_state: uint64[4], the solver's PCG64 state (kernels/rng.py),
      advanced in place (but with `records`).
    key: with `records`, episode e draws from the stream `stream_start(key,
      e)`.
    scratch: (hf, ps_f, visited, stack, child_est): hf float64[slots,
      POOL_FLOATS] per history slot (a tree's node), ps_f float64[P, 2] (q
      and xi; xi zero on entry and exit on a tree), visited and stack
      int64[P], child_est float64[A].
    study: None, or a tree's frozen episodes (studies: the tables stay
      untouched): (regret_sum, regret_sq, root_values, start_stats): the
      regret increment of each infoset of player i in each visited public
      state (summed over its histories) and its square go to regret_sum,
      regret_sq (float64[I, A]), u(root) of episode e to root_values[e];
      start_stats: float64[H, 2, A + 1], or empty: if not empty, every
      episode adds, for the k-th history h of `start_ps` (row k) if it is a
      decision node of the update player, u(h, a) (column a) and u(h)
      (column A), in the update player's utility, to [k, 0] and their
      squares to [k, 1].
    records: None, or phase 1 of `public_batches`'s records of episode e
      (rec_rows, rec_value, rec_avg, rec_scalar, rec_edges, rec_target,
      rec_ps, rec_counts).

  Returns:
    (the episode to run next: num_episodes unless an engine's was short of
    room, the number of nodes touched: per visited public state, the edges
    of its histories (every one is evaluated), again for the predictive
    pass, and the whole tree per oracle refill).
  """
  # Every array the loops touch, borrowed (tables/atomics.py): the inlined
  # helpers that take them cost no reference counts.
  rcells, acells, scells, mwords, twords, width, a_step, s_step, m_off = (
      table)
  rcells = borrow(rcells)
  acells = borrow(acells)
  scells = borrow(scells)
  mwords = borrow(mwords)
  twords = borrow(twords)
  bcells = borrow(bl[0])
  ccells = borrow(bl[1])
  (rule, averaging, regret_plus, sampling, epsilon, decay) = codes
  hf = borrow(scratch[0])
  ps_f = borrow(scratch[1])
  visited = borrow(scratch[2])
  stack = borrow(scratch[3])
  child_est = borrow(scratch[4])
  frozen = study is not None
  record = records is not None
  start_ps = 0
  if game is not None:
    (kind, player, infoset, child_start, num_children, edge_prob, utility,
     num_actions, node_ps, ps_history_start, ps_histories, node_parent,
     ps_child_start, ps_children, mass, strategy_scratch, increment,
     start_ps) = game
    (kind, player, infoset, child_start, num_children, edge_prob,
     utility) = borrowed_tree(kind, player, infoset, child_start,
                              num_children, edge_prob, utility)
    node_ps = borrow(node_ps)
    ps_history_start = borrow(ps_history_start)
    ps_histories = borrow(ps_histories)
    node_parent = borrow(node_parent)
    ps_child_start = borrow(ps_child_start)
    ps_children = borrow(ps_children)
    mass = borrow(mass)
    increment = borrow(increment)
  if study is not None:
    regret_sum, regret_sq, root_values, start_stats = study
  if records is not None:
    (rec_rows, rec_value, rec_avg, rec_scalar, rec_edges, rec_target,
     rec_ps, rec_counts) = records
  if eng is not None:
    # An engine's code is a compile-time constant (a tree's is unread: a
    # plain integer, and the kernel a plain call from Python).
    numba.literally(code)
    (params, tab, history, allow_insert, pool_state, pool_i, pool_key,
     e_child, e_util, e_group, ps_i, gkeys, gstamp, gval, groups, gxi,
     st_scratch, ctl, allow_history) = eng
    params = borrow(params)
    index, meta, words, cells, layout = hashed.borrowed(tab)
    h_index, h_meta, h_words, h_cells, h_layout = hashed.borrowed(history)
    pool_state = borrow(pool_state)
    pool_i = borrow(pool_i)
    pool_key = borrow(pool_key)
    e_child = borrow(e_child)
    e_util = borrow(e_util)
    ps_i = borrow(ps_i)
    # The engine's down pass gets them borrowed too.
    down = (params, (index, meta, words, cells, layout),
            (h_index, h_meta, h_words, h_cells, h_layout), allow_insert,
            pool_state, pool_i, pool_key, e_child, e_util, borrow(e_group),
            ps_i, borrow(gkeys), borrow(gstamp), borrow(gval),
            borrow(groups), borrow(gxi), borrow(st_scratch), borrow(ctl),
            allow_history)
    header = layout[hashed.L_HEADER]
    per_word = layout[hashed.L_PER_WORD]
    h_header = h_layout[hashed.L_HEADER]
    h_per_word = h_layout[hashed.L_PER_WORD]
    max_moves = child_est.shape[0]
    widest = hashed.row_words(max_moves, header, layout[hashed.L_FIELDS],
                              per_word)
    h_widest = hashed.row_words(max_moves, h_header,
                                h_layout[hashed.L_FIELDS], h_per_word)
    no_block = meta[:0]
    ctl[C_STATUS] = DONE
  per_history = rule == RULE_CHILD or rule == RULE_PREDICTIVE
  s_hi = rng_state[0]
  s_lo = rng_state[1]
  inc_hi = rng_state[2]
  inc_lo = rng_state[3]
  touched = 0
  span = num_episodes - first_episode
  e = first_episode + worker * span // workers
  end = first_episode + (worker + 1) * span // workers
  while e < end:
    start_hi = s_hi
    start_lo = s_lo
    i = e % 2
    t = first_iteration if frozen else first_iteration + e // 2
    avg_w = float(t) if regret_plus else 1.0
    stamp = 2  # Marks: 1 sigma computed, 2 updated, 3 sigma^{t+1}; reset.
    state = stream_start(key, e)
    num_rows = 0
    num_edges = 0
    episode_touched = 0
    nvis = 0
    status = DONE
    if game is not None:
      # The tree's down pass.
      if start_ps > 0:
        i = player[ps_histories[ps_history_start[start_ps]]]
      if rule == RULE_ORACLE and not record and (not frozen or e == 0):
        regret_matching(rcells.reshape((rcells.size // width, width)),
                        num_actions, strategy_scratch)
        node_values(kind, player, infoset, child_start, num_children,
                    edge_prob, utility, strategy_scratch, bcells)
        episode_touched += kind.shape[0]
      if start_ps == 0:
        hf[0, F_OWN] = 1.0
        hf[0, F_OPP] = 1.0
        hf[0, F_OPP_OWN] = 1.0
      ps_f[start_ps, S_Q] = 1.0
      stack[0] = start_ps
      top = 1
      while top > 0:
        top -= 1
        s = stack[top]
        visited[nvis] = s
        nvis += 1
        q = ps_f[s, S_Q]
        for k in range(ps_history_start[s], ps_history_start[s + 1]):
          h = ps_histories[k]
          episode_touched += num_children[h]
          if kind[h] == 1 and mwords[infoset[h]] == 0:
            mwords[infoset[h]] = 1
            match_into(rcells, infoset[h] * width, num_children[h], scells,
                       infoset[h] * width)
        first = ps_child_start[s]
        num_candidates = ps_child_start[s + 1] - first
        if num_candidates == 0:
          continue
        if sampling == 2 and kind[ps_histories[ps_history_start[s]]] != 0:
          # Pushed in descending order, so they are visited ascending.
          for m in range(num_candidates - 1, -1, -1):
            stack[top] = ps_children[first + m]
            top += 1
            ps_f[ps_children[first + m], S_XI] = 1.0
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
                  sj = scells[infoset[h] * width + child - child_start[h]]
                flow += hf[h, F_OWN] * hf[h, F_OPP] * sj
              mass[m] = flow
              total += flow
          if sampling == 1:
            for m in range(num_candidates):
              if total > 0.0:
                mass[m] = (epsilon / num_candidates
                           + (1.0 - epsilon) * mass[m] / total)
              else:
                mass[m] = 1.0 / num_candidates
          if record:
            state, u = stream_uniform(state)
          else:
            s_hi, s_lo, u = pcg64_next(s_hi, s_lo, inc_hi, inc_lo)
          chosen = sample_index(mass, 0, num_candidates, u, 0.0)
          stack[top] = ps_children[first + chosen]
          top += 1
          ps_f[ps_children[first + chosen], S_XI] = mass[chosen]
        for m in range(num_candidates):
          nxt = ps_children[first + m]
          if ps_f[nxt, S_XI] == 0.0:
            continue
          ps_f[nxt, S_Q] = q * ps_f[nxt, S_XI]
          for k in range(ps_history_start[nxt], ps_history_start[nxt + 1]):
            child = ps_histories[k]
            h = node_parent[child]
            hf[child, F_OWN] = hf[h, F_OWN]
            hf[child, F_OPP] = hf[h, F_OPP]
            hf[child, F_OPP_OWN] = hf[h, F_OPP_OWN]
            if kind[h] == 0:
              hf[child, F_OPP] *= edge_prob[child]
            else:
              sj = scells[infoset[h] * width + child - child_start[h]]
              if player[h] == i:
                hf[child, F_OWN] *= sj
              else:
                hf[child, F_OPP] *= sj
                hf[child, F_OPP_OWN] *= sj
    if eng is not None:
      nvis, status, episode_touched, npool, s_hi, s_lo = _engine_down(
          code, down, down[1], hf, ps_f, visited, stack, i, sampling, epsilon,
          header, per_word, widest, no_block, s_hi, s_lo, inc_hi, inc_lo)
      if status == DONE and allow_history and not hashed.has_room(
          h_meta, h_index, npool, npool * h_widest):
        status = SHORT_HISTORY
      if status != DONE:
        ctl[C_STATUS] = status
        rng_state[0] = start_hi
        rng_state[1] = start_lo
        return e, touched
    # Up, over the visited public states in reverse preorder: written once.
    for d in range(nvis - 1, -1, -1):
      s = visited[d]
      q = ps_f[s, S_Q]
      if game is not None:
        lo = ps_history_start[s]
        hi = ps_history_start[s + 1]
      if eng is not None:
        lo = ps_i[s, S_START]
        hi = ps_i[s, S_END]
      for k in range(lo, hi):
        if game is not None:
          h, p, c, row, r0 = _tree_history(kind, player, infoset,
                                           num_children, ps_histories, k,
                                           width)
        if eng is not None:
          h, p, c, row, r0 = _pool_history(pool_i, k, header, per_word)
        if p == protocol.TERMINAL:
          continue
        s0 = r0 + s_step * c
        b0 = -1
        c0 = -1
        if game is not None and rule != RULE_NONE:
          b0 = child_start[h]
          c0 = b0
        if eng is not None:
          if per_history:
            hrow, _ = hashed.row_of(h_index, h_meta, h_words, h_cells,
                                    h_layout, pool_key[k, 0], pool_key[k, 1],
                                    c, allow_history, no_block, False)
            if hrow >= 0:
              b0 = hashed.first_cell(hrow, h_header, h_per_word)
          pool_i[k, I_HROW] = b0
          c0 = b0 + c
        v = 0.0
        for j in range(c):
          if game is not None:
            slot, terminal, util, xi = _tree_edge(kind, child_start, utility,
                                                  node_ps, ps_f, h, j)
          if eng is not None:
            slot, terminal, util, xi = _pool_edge(pool_i, e_child, e_util,
                                                  ps_f, h, j)
          if terminal:
            est = _stored(i, utility_sum, util)
          elif xi == 1.0:
            est = hf[slot, F_VALUE]
          else:
            b = 0.0
            if rule != RULE_NONE and b0 >= 0:
              b = _stored(i, utility_sum, np.float64(bcells[b0 + j]))
            est = b
            if xi > 0.0:
              est = b + (hf[slot, F_VALUE] - b) / xi
          if (not terminal and xi > 0.0 and learn_baselines
              and rule == RULE_CHILD and b0 >= 0):
            target = _stored(i, utility_sum, hf[slot, F_VALUE])
            if records is not None:
              rec_edges[e, num_edges] = b0 + j
              rec_target[e, num_edges] = target
              num_edges += 1
            else:
              # A tree counts always; an engine's row has a count only
              # for a running mean.
              counted = game is not None or decay <= 0.0
              count = np.float64(ccells[c0 + j]) if counted else 0.0
              bcells[b0 + j] = averaged(np.float64(bcells[b0 + j]), count,
                                        target, decay)
              if counted:
                ccells[c0 + j] += 1
          if p != protocol.CHANCE:
            sj = _sigma(scells, s0, row, j, c)
          else:
            if game is not None:
              sj = edge_prob[child_start[h] + j]
            if eng is not None:
              sj = protocol.chance_prob(code, params, pool_state[h], j)
          v += sj * est
          child_est[j] = est
        hf[h, F_VALUE] = v
        if study is not None:
          if d == 0 and start_stats.shape[0] > 0 and p == i:
            r = k - ps_history_start[s]
            for j in range(c):
              start_stats[r, 0, j] += child_est[j]
              start_stats[r, 1, j] += child_est[j] * child_est[j]
            start_stats[r, 0, start_stats.shape[2] - 1] += v
            start_stats[r, 1, start_stats.shape[2] - 1] += v * v
        if p < 0 or row < 0:
          continue
        if p == i:
          w = hf[h, F_OPP] / q
          for j in range(c):
            x = w * (child_est[j] - v)
            if frozen or record:
              if game is not None:
                increment[row, j] += x
            else:
              rcells[r0 + j] += x
        elif not frozen and averaging == 1 and mwords[row + m_off] != stamp:
          mwords[row + m_off] = stamp
          if records is not None:
            rec_rows[e, num_rows] = 2 * row
            rec_scalar[e, num_rows] = hf[h, F_OPP_OWN]
            for j in range(c):
              rec_avg[e, num_rows, j] = scells[s0 + j]
            num_rows += 1
            continue
          if game is not None:
            prev = twords[row]
          if eng is not None:
            prev = hashed.stamp_of(twords, row)
          if regret_plus:
            ow = linear_skipped(t, prev) * hf[h, F_OPP_OWN]
          else:
            ow = (t - prev) * hf[h, F_OPP_OWN]
          a0 = r0 + a_step * c
          for j in range(c):
            acells[a0 + j] += ow * np.float64(scells[s0 + j])
          if game is not None:
            twords[row] = t
          if eng is not None:
            hashed.set_stamp(twords, row, t)
      # Once per infoset of player i in S.
      for k in range(lo, hi):
        if game is not None:
          h, p, c, row, r0 = _tree_history(kind, player, infoset,
                                           num_children, ps_histories, k,
                                           width)
        if eng is not None:
          h, p, c, row, r0 = _pool_history(pool_i, k, header, per_word)
        if p != i or row < 0 or mwords[row + m_off] == stamp:
          continue
        mwords[row + m_off] = stamp
        if study is not None:
          for j in range(c):
            x = increment[row, j]
            regret_sum[row, j] += x
            regret_sq[row, j] += x * x
            increment[row, j] = 0.0
          continue
        s0 = r0 + s_step * c
        if records is not None:
          rec_rows[e, num_rows] = 2 * row + 1
          for j in range(c):
            rec_value[e, num_rows, j] = increment[row, j]
            increment[row, j] = 0.0
            if averaging == 0:
              rec_avg[e, num_rows, j] = avg_w * (hf[h, F_OWN] * scells[s0 + j]
                                                 / q)
          num_rows += 1
          continue
        if regret_plus:
          for j in range(c):
            if rcells[r0 + j] < 0.0:
              rcells[r0 + j] = 0.0
        if averaging == 0:
          a0 = r0 + a_step * c
          for j in range(c):
            acells[a0 + j] += avg_w * (
                hf[h, F_OWN] * np.float64(scells[s0 + j]) / q)
        if eng is not None:
          match_into(rcells, r0, c, scells, s0)  # sigma^{t+1}(I).
      if rule != RULE_PREDICTIVE or not learn_baselines:
        continue
      # Predictive baseline: v'(h) under sigma^{t+1}, children first.
      for k in range(lo, hi):
        if game is not None:
          h, p, c, row, r0 = _tree_history(kind, player, infoset,
                                           num_children, ps_histories, k,
                                           width)
        if eng is not None:
          h, p, c, row, r0 = _pool_history(pool_i, k, header, per_word)
        if p == protocol.TERMINAL:
          continue
        episode_touched += c
        if records is not None:
          continue
        s0 = r0 + s_step * c
        b0 = -1
        if game is not None:
          b0 = child_start[h]
          if p == i and mwords[row] != 3:
            # sigma^{t+1} differs from sigma^t only where regrets changed.
            mwords[row] = 3
            match_into(rcells, r0, c, scells, s0)
        if eng is not None:
          b0 = pool_i[k, I_HROW]
        v = 0.0
        for j in range(c):
          if game is not None:
            slot, terminal, util, xi = _tree_edge(kind, child_start, utility,
                                                  node_ps, ps_f, h, j)
          if eng is not None:
            slot, terminal, util, xi = _pool_edge(pool_i, e_child, e_util,
                                                  ps_f, h, j)
          if terminal:
            est = _stored(i, utility_sum, util)
          else:
            stored = 0.0
            if b0 >= 0:
              if xi > 0.0:
                bcells[b0 + j] = _stored(i, utility_sum, hf[slot, F_PRED])
              stored = np.float64(bcells[b0 + j])
            elif xi > 0.0:
              stored = _stored(i, utility_sum, hf[slot, F_PRED])
            est = _stored(i, utility_sum, stored)
          if p != protocol.CHANCE:
            sj = _sigma(scells, s0, row, j, c)
          else:
            if game is not None:
              sj = edge_prob[child_start[h] + j]
            if eng is not None:
              sj = protocol.chance_prob(code, params, pool_state[h], j)
          v += sj * est
        hf[h, F_PRED] = v
    if study is not None:
      root_values[e] = hf[0, F_VALUE]
    if records is not None:
      for d in range(nvis):
        rec_ps[e, d] = visited[d]
      rec_counts[e, 0] = num_rows
      rec_counts[e, 1] = num_edges
      rec_counts[e, 2] = nvis
    # Leave the marks (and a tree's xi) at zero for the next episode.
    if game is not None:
      for d in range(nvis):
        s = visited[d]
        ps_f[s, S_XI] = 0.0
        for k in range(ps_history_start[s], ps_history_start[s + 1]):
          h = ps_histories[k]
          if kind[h] == 1:
            mwords[infoset[h]] = 0
    if eng is not None:
      for k in range(npool):
        row = pool_i[k, I_ROW]
        if row >= 0:
          mwords[row + m_off] = 0
    touched += episode_touched
    e += 1
  if not record:
    rng_state[0] = s_hi
    rng_state[1] = s_lo
  return e, touched


@njit(cache=True, error_model="numpy")
def _engine_down(code, eng, tab, hf, ps_f, visited, stack, i, sampling,
                 epsilon, header, per_word, widest, no_block, s_hi, s_lo,
                 inc_hi, inc_lo):
  """An engine's down pass of one episode (`episodes`): from the root,
  the public states visited, in preorder, built in the pool as they are
  reached (the module docstring).

  Returns:
    (public states visited, status (DONE, or what was short of room:
    ctl[C_NEED_*] say how much), nodes touched, histories in the pool,
    the generator's state words).
  """
  numba.literally(code)
  (params, _, _, allow_insert, pool_state, pool_i, pool_key, e_child,
   e_util, e_group, ps_i, gkeys, gstamp, gval, groups, gxi, scratch, ctl,
   _) = eng
  index, meta, words, cells, layout = tab
  touched = 0
  protocol.reset(code, params, pool_state[0])
  hf[0, F_OWN] = 1.0
  hf[0, F_OPP] = 1.0
  hf[0, F_OPP_OWN] = 1.0
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
      touched += c
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
    # np.int64: counts that start at a constant would be typed literal,
    # and a first use would compile one _group_xi per constant.
    _group_xi(code, eng, hf, header, per_word, cells, hs, he, np.int64(ng),
              np.int64(ncand), sampling, epsilon, explore)
    if not explore:
      s_hi, s_lo, u = pcg64_next(s_hi, s_lo, inc_hi, inc_lo)
      chosen = sample_index(gxi, 0, ng, u, 0.0)  # 0 but at candidates.
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
        hf[n, F_OWN] = hf[k, F_OWN]
        hf[n, F_OPP] = hf[k, F_OPP]
        hf[n, F_OPP_OWN] = hf[k, F_OPP_OWN]
        if p == protocol.CHANCE:
          sj = protocol.chance_prob(code, params, st, j)
        else:
          sj = _sigma(cells, start + 2 * c, row, j, c)
        if p == protocol.CHANCE:
          hf[n, F_OPP] *= sj
        elif p == i:
          hf[n, F_OWN] *= sj
        else:
          hf[n, F_OPP] *= sj
          hf[n, F_OPP_OWN] *= sj
    npool = offset
  return nvis, status, touched, npool, s_hi, s_lo


@njit(cache=True, error_model="numpy")
def _group_xi(code, eng, hf, header, per_word, cells, hs, he, ng, ncand,
              sampling, epsilon, explore):
  """gxi[g] = xi(S -> S') of the children groups g < ng of an engine's
  public state S, its histories hs .. he - 1 in the pool (0 for groups
  without a non-terminal child): 1 when exploring, else uniform over the n
  candidates or, on-policy, eps / n + (1 - eps) m(S') / sum m with m(S') =
  sum over the edges into S' of pi(h) sigma(h, a) (summed in the tree's
  order: the histories of the child public state ascending = history,
  move)."""
  numba.literally(code)
  params, pool_state, pool_i = eng[0], eng[4], eng[5]
  e_group, groups, xi = eng[9], eng[14], eng[15]
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
  for k in range(hs, he):
    p = pool_i[k, I_PLAYER]
    c = pool_i[k, I_MOVES]
    row = pool_i[k, I_ROW]
    start = hashed.first_cell(row, header, per_word) if row >= 0 else 0
    for j in range(c):
      g = e_group[pool_i[k, I_EDGE] + j]
      if groups[g, 0] == 1:
        if p == protocol.CHANCE:
          sj = protocol.chance_prob(code, params, pool_state[k], j)
        else:
          sj = _sigma(cells, start + 2 * c, row, j, c)
        xi[g] += hf[k, F_OWN] * hf[k, F_OPP] * sj
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


@njit(cache=True, error_model="numpy", inline="always")
def _dense(regrets, avg, sigma, infoset_mark, avg_last):
  """A tree's table of `episodes`: row i's regrets, average sums and
  sigma^t at cell i A of the flat arrays, its mark infoset_mark[i], its
  c_I avg_last[i]."""
  return (regrets.reshape(regrets.size), avg.reshape(avg.size),
          sigma.reshape(sigma.size), infoset_mark, avg_last,
          regrets.shape[1], 0, 0, 0)


@njit(cache=True, error_model="numpy", parallel=parallel_phases())
def public_batches(kind, player, infoset, child_start, num_children,
                   edge_prob, utility, utility_sum, num_actions, node_ps,
                   ps_history_start, ps_histories, node_parent,
                   ps_child_start, ps_children, ps_depth, regrets, avg,
                   avg_last, baseline, baseline_count, rule,
                   averaging, regret_plus, sampling, epsilon, decay,
                   first_iteration, num_iterations, batch, rng_state, workers,
                   hf, sigma, infoset_mark, mass, child_est, visited, stack,
                   ps_f, strategy_scratch,
                   increment, rec_rows, rec_value, rec_avg, rec_scalar,
                   rec_edges, rec_target, rec_ps, rec_counts, ps_mark,
                   sigma_mark):
  """Training iterations in batches, episodes in parallel (kernels/outcome.py
  describes the scheme).

  Per batch (ending at the next multiple of `batch`, or at this call's last
  iteration) starting at iteration t0: one key from `rng_state`; phase 1,
  its 2B episodes by `workers` workers (`episodes` with `records`: episode k
  updates player k % 2 at iteration t0 + k // 2, draws from the stream
  `stream_start(key, k)` and reads the tables of the batch start; the oracle
  baseline is refilled there); phase 2, `_apply_public` by every worker for
  its rows; phase 3, the predictive baseline: for every public state S a
  sampled episode visited (but the root's), one depth at a time from the
  deepest, b(h) <- v'(h) = sum_a sigma^{t+1}(h, a) v(h a) for every
  non-terminal h in S, in player 0's utility, with v(h a) = u(h a) at a
  terminal and b(h a) otherwise.

  The arguments are a tree's arrays and tables as `episodes` takes them
  in `game`, `table`, `bl` and `codes` (regrets, avg: float64[I, A];
  avg_last: int64[I]; baseline, baseline_count: float64[N], int64[N] by
  child node id), its scratch (hf, sigma, infoset_mark, mass, child_est,
  visited, stack, ps_f, strategy_scratch, increment) stacked on a leading
  axis of `workers` rows, and the records of a batch,
  one row per episode k (R, Eb and V are bounds computed over the public
  tree, solvers/public.py):

  Args:
    ps_depth: int32[P], the depth of each public state.
    rec_rows: int64[2 batch, R], 2 I + 1 for the regret increment (summed
      over I's histories) of an update player's infoset I in a visited
      public state, 2 I for an opponent's infoset (optimistic averaging).
    rec_value, rec_avg: float64[2 batch, R, A], that increment and the
      stochastic average increment, or sigma(I) at an opponent's infoset.
    rec_scalar: float64[2 batch, R], the opponent's own reach there.
    rec_edges, rec_target: [2 batch, Eb], the history baseline's edges
      (child node ids) and targets.
    rec_ps: int64[2 batch, V], the visited public states.
    rec_counts: int64[2 batch, 3], how many rows, edges and public states.
    ps_mark: int64[P], the batch that last reset a public state.
    sigma_mark: int64[W, I], per worker, the batch whose sigma^{t+1} its
      `sigma` holds for an infoset.

  Returns:
    The number of nodes touched.
  """
  touched = 0
  last_iteration = first_iteration + num_iterations - 1
  t0 = first_iteration
  while t0 <= last_iteration:
    t1 = batch_end(t0, batch, last_iteration)
    count = 2 * (t1 - t0 + 1)
    key = batch_key(rng_state)
    if rule == RULE_ORACLE:
      regret_matching(regrets, num_actions, strategy_scratch[0])
      node_values(kind, player, infoset, child_start, num_children,
                  edge_prob, utility, strategy_scratch[0], baseline)
      touched += kind.shape[0]
    for w in prange(workers):
      # The tuples are built here: a parfor takes no tuple of arrays from
      # outside it.
      touched += episodes(
          3, (kind, player, infoset, child_start, num_children, edge_prob,
              utility, num_actions, node_ps, ps_history_start, ps_histories,
              node_parent, ps_child_start, ps_children, mass[w],
              strategy_scratch[w], increment[w], 0), None, utility_sum,
          _dense(regrets, avg, sigma[w], infoset_mark[w], avg_last),
          (baseline, baseline_count),
          (rule, averaging, regret_plus, sampling, epsilon, decay),
          t0, 0, count, True, rng_state, key, w, workers,
          (hf[w], ps_f[w], visited[w], stack[w], child_est[w]), None,
          (rec_rows, rec_value, rec_avg, rec_scalar, rec_edges, rec_target,
           rec_ps, rec_counts))[1]
    for part in prange(workers):
      _apply_public(regrets, avg, avg_last, baseline, baseline_count,
                    num_actions, averaging, regret_plus, decay, t0, count,
                    part, workers, rec_rows, rec_value, rec_avg, rec_scalar,
                    rec_edges, rec_target, rec_counts)
    if rule == RULE_PREDICTIVE:
      deepest = 0
      for k in range(count):
        for d in range(rec_counts[k, 2]):
          deepest = max(deepest, ps_depth[rec_ps[k, d]])
      for level in range(deepest, 0, -1):
        for part in prange(workers):
          for k in range(part * count // workers,
                         (part + 1) * count // workers):
            for d in range(rec_counts[k, 2]):
              ps = rec_ps[k, d]
              if ps_depth[ps] != level or ps_mark[ps] == t0:
                continue
              ps_mark[ps] = t0  # Every worker would write the same values.
              _reset_public_state(kind, infoset, child_start, num_children,
                                  edge_prob, utility, ps_history_start,
                                  ps_histories, regrets, baseline, ps,
                                  sigma[part], sigma_mark[part], t0)
    t0 = t1 + 1
  return touched


@njit(cache=True, error_model="numpy")
def _reset_public_state(kind, infoset, child_start, num_children, edge_prob,
                        utility, ps_history_start, ps_histories, regrets,
                        baseline, ps, sigma, sigma_mark, stamp):
  """b(edge into h) <- v'(h) for every non-terminal history h of public
  state `ps`, in player 0's utility (see `public_batches`); sigma^{t+1} of
  an infoset is computed once per `stamp` into `sigma`."""
  for k in range(ps_history_start[ps], ps_history_start[ps + 1]):
    h = ps_histories[k]
    if kind[h] == 2:
      continue
    s = child_start[h]
    c = num_children[h]
    iset = infoset[h]
    if kind[h] == 1 and sigma_mark[iset] != stamp:
      sigma_mark[iset] = stamp
      regret_matching_row(regrets, iset, c, sigma, iset)
    v = 0.0
    for j in range(c):
      child = s + j
      b = utility[child] if kind[child] == 2 else baseline[child]
      v += (edge_prob[child] if kind[h] == 0 else sigma[iset, j]) * b
    baseline[h] = v


@njit(cache=True, error_model="numpy")
def _apply_public(regrets, avg, avg_last, baseline, baseline_count,
                  num_actions, averaging, regret_plus, decay,
                  first_iteration, num_episodes, part, parts, rec_rows,
                  rec_value, rec_avg, rec_scalar, rec_edges, rec_target,
                  rec_counts):
  """Phase 2 of a batch for the rows of worker `part` (infoset % parts, and
  the history baseline's child node % parts): every record, in episode
  order, applied as `episodes` applies an infoset's increment (RM+
  clipping after it, stochastic or optimistic averaging, running or
  decaying means)."""
  for k in range(num_episodes):
    t = first_iteration + k // 2
    for r in range(rec_counts[k, 0]):
      code = rec_rows[k, r]
      iset = code >> 1
      if iset % parts != part:
        continue
      c = num_actions[iset]
      if code & 1:
        for j in range(c):
          regrets[iset, j] += rec_value[k, r, j]
          if regret_plus and regrets[iset, j] < 0.0:
            regrets[iset, j] = 0.0
        if averaging == 0:
          for j in range(c):
            avg[iset, j] += rec_avg[k, r, j]
      else:
        prev = avg_last[iset]
        if regret_plus:
          w = linear_skipped(t, prev) * rec_scalar[k, r]
        else:
          w = (t - prev) * rec_scalar[k, r]
        for j in range(c):
          avg[iset, j] += w * rec_avg[k, r, j]
        avg_last[iset] = t
    for m in range(rec_counts[k, 1]):
      child = rec_edges[k, m]
      if child % parts == part:
        baseline[child] = averaged(baseline[child], baseline_count[child],
                                   rec_target[k, m], decay)
        baseline_count[child] += 1
