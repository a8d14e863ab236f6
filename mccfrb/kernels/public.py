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
The down pass (finding the candidates and drawing one) is written for each
(`tree_down`, `engine_down`); the up pass, where every estimator, baseline
and averaging lives, is written once (`state_values`, `update_infosets`,
`predictive_pass`; the arguments travel in named tuples, `TreeArgs`,
`EngineArgs`, `Rows`, `Work`), reading a row's cells (regrets at
rcells[r0 + a], the average's sums at acells[a0 + a], sigma^t at
scells[s0 + a]) and a history's baselines (bcells[b0 + a]). So on a game
that compiles, an engine's episode draws the same uniforms, visits the
same public states and adds the same terms in the same order as the
tree's: the tables are equal bit for bit (tests/test_public_engine.py).

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

from typing import NamedTuple

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
from mccfrb.kernels.outcome import catch_up_average
from mccfrb.kernels.outcome import history_step
from mccfrb.kernels.rng import batch_end
from mccfrb.kernels.rng import batch_key
from mccfrb.kernels.rng import pcg64_next
from mccfrb.kernels.rng import stream_start
from mccfrb.kernels.rng import stream_uniform
from mccfrb.kernels.rows import Counts
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


class TreeArgs(NamedTuple):
  """A tree's arrays in an episode (`episodes`'s `game`, borrowed:
  tables/atomics.py).

  Attributes:
    kind, player, infoset, child_start, num_children, edge_prob, utility:
      `GameTree.kernel_args()`; num_actions: int32[I].
    node_ps, ps_history_start, ps_histories: the `PublicTree` arrays.
    node_parent: int32[N], the parent of every node (-1 at the root).
    ps_child_start, ps_children: CSR lists of the non-terminal child
      public states of every public state, ascending (the candidates).
    mass: float64[P] scratch.
    strategy_scratch: float64[I, A] (the oracle baseline's sigma^t).
    increment: float64[I, A], the regret increments with `study` or
      `records` (zero on entry and exit).
    start_ps: the public state episodes start at.
  """
  kind: np.ndarray
  player: np.ndarray
  infoset: np.ndarray
  child_start: np.ndarray
  num_children: np.ndarray
  edge_prob: np.ndarray
  utility: np.ndarray
  num_actions: np.ndarray
  node_ps: np.ndarray
  ps_history_start: np.ndarray
  ps_histories: np.ndarray
  node_parent: np.ndarray
  ps_child_start: np.ndarray
  ps_children: np.ndarray
  mass: np.ndarray
  strategy_scratch: np.ndarray
  increment: np.ndarray
  start_ps: int


class EngineArgs(NamedTuple):
  """An engine's episode (`episodes`'s `eng`).

  Attributes:
    params: the engine's parameters.
    tab, history: the infoset rows' and the per-history baselines' tables
      (`hashed.Hashed`; fields FIELDS, header HEADER; the history rows'
      field 0 the value, field 1 the running mean's count).
    allow_insert, allow_history: rows are inserted while these hold.
    pool_state: int64[H, state size]; pool_i: int64[H, POOL_INTS];
      pool_key: uint64[H, 2]: the histories of the visited public states.
    e_child, e_group: int64[E], e_util: float64[E]: their edges.
    ps_i: int64[P, 2], the public states' first and end histories.
    gkeys: uint64[G2, 2], gstamp, gval: int64[G2]: the grouping hash table
      (G2 a power of 2 >= 2 G).
    groups: int64[G, 4], per group of one public state's children: 1 if it
      holds a non-terminal child, its non-terminal children, the next pool
      index to fill, its public state or -1; gxi: float64[G].
    scratch: int64[state size].
    ctl: int64[CTL_SIZE].
  """
  params: np.ndarray
  tab: hashed.Hashed
  history: hashed.Hashed
  allow_insert: bool
  pool_state: np.ndarray
  pool_i: np.ndarray
  pool_key: np.ndarray
  e_child: np.ndarray
  e_util: np.ndarray
  e_group: np.ndarray
  ps_i: np.ndarray
  gkeys: np.ndarray
  gstamp: np.ndarray
  gval: np.ndarray
  groups: np.ndarray
  gxi: np.ndarray
  scratch: np.ndarray
  ctl: np.ndarray
  allow_history: bool


class Codes(NamedTuple):
  """An episode's variant codes (module docstring): the baseline's
  learning `rule` (RULE_*), `averaging` and `regret_plus` (as
  kernels/outcome.py's), `sampling` and its `epsilon`, and the history
  baseline's `decay`."""
  rule: int
  averaging: int
  regret_plus: int
  sampling: int
  epsilon: float
  decay: float


class Rows(NamedTuple):
  """The tables as an episode reads them (`episodes`'s `table`, borrowed;
  the caller's header and per_word unread: the kernel sets an engine's).

  Attributes:
    rcells, acells, scells: a row's regrets at rcells[r0 + a], average
      sums at acells[a0 + a], sigma^t at scells[s0 + a] (a0 = r0 + a_step
      c, s0 = r0 + s_step c; a tree's rows start at r0 = row width).
    mwords: the row's mark at mwords[row + m_off] (zero on entry and exit).
    twords: optimistic averaging's c_I (a tree's avg_last[row], an
      engine's row stamp).
    bcells, ccells: the baselines of history h's edges at bcells[b0 + a]
      and their counts at ccells[c0 + a]: a tree's by child node id (b0 =
      c0 = child_start[h]), an engine's in h's history row (c0 = b0 + c).
    header, per_word: an engine's infoset rows' header words and cells
      per word (tables/hashed.py; 0 on a tree).
  """
  rcells: np.ndarray
  acells: np.ndarray
  scells: np.ndarray
  mwords: np.ndarray
  twords: np.ndarray
  width: int
  a_step: int
  s_step: int
  m_off: int
  bcells: np.ndarray
  ccells: np.ndarray
  header: int
  per_word: int


class Records(NamedTuple):
  """Phase 1's records of `public_batches`, one row per episode
  (`episodes`'s `records`, borrowed; `public_batches` says what each
  holds)."""
  rows: np.ndarray
  value: np.ndarray
  avg: np.ndarray
  scalar: np.ndarray
  edges: np.ndarray
  target: np.ndarray
  ps: np.ndarray
  counts: np.ndarray


class Study(NamedTuple):
  """A tree's frozen episodes' sums (`episodes`'s `study`, borrowed).

  Attributes:
    regret_sum, regret_sq: float64[I, A], the regret increment of each
      infoset of player i in each visited public state (summed over its
      histories) and its square.
    root_values: u(root) of episode e at [e].
    start_stats: float64[H, 2, A + 1], or empty: if not empty, every
      episode adds, for the k-th history h of `start_ps` (row k) if it is
      a decision node of the update player, u(h, a) (column a) and u(h)
      (column A), in the update player's utility, to [k, 0] and their
      squares to [k, 1].
  """
  regret_sum: np.ndarray
  regret_sq: np.ndarray
  root_values: np.ndarray
  start_stats: np.ndarray


class Work(NamedTuple):
  """An episode's scratch (`episodes`'s `scratch`, borrowed).

  Attributes:
    hf: float64[slots, POOL_FLOATS] per history slot (a tree's node).
    ps_f: float64[P, 2], q and xi per public state (xi zero on entry and
      exit on a tree).
    visited, stack: int64[P].
    child_est: float64[A].
  """
  hf: np.ndarray
  ps_f: np.ndarray
  visited: np.ndarray
  stack: np.ndarray
  child_est: np.ndarray


@njit(cache=True, inline="always")
def _borrowed_tree(game):
  """`game` with every array borrowed (tables/atomics.py)."""
  return TreeArgs(*borrowed_tree(game.kind, game.player, game.infoset,
                                 game.child_start, game.num_children,
                                 game.edge_prob, game.utility),
                  borrow(game.num_actions), borrow(game.node_ps),
                  borrow(game.ps_history_start), borrow(game.ps_histories),
                  borrow(game.node_parent), borrow(game.ps_child_start),
                  borrow(game.ps_children), borrow(game.mass),
                  borrow(game.strategy_scratch), borrow(game.increment),
                  game.start_ps)


@njit(cache=True, inline="always")
def _borrowed_engine(eng):
  """`eng` with every array borrowed, its tables' too."""
  return EngineArgs(borrow(eng.params), hashed.borrowed(eng.tab),
                    hashed.borrowed(eng.history), eng.allow_insert,
                    borrow(eng.pool_state), borrow(eng.pool_i),
                    borrow(eng.pool_key), borrow(eng.e_child),
                    borrow(eng.e_util), borrow(eng.e_group),
                    borrow(eng.ps_i), borrow(eng.gkeys), borrow(eng.gstamp),
                    borrow(eng.gval), borrow(eng.groups), borrow(eng.gxi),
                    borrow(eng.scratch), borrow(eng.ctl), eng.allow_history)


@njit(cache=True, inline="always")
def _borrowed_study(study):
  """`study` with every array borrowed."""
  return Study(borrow(study.regret_sum), borrow(study.regret_sq),
               borrow(study.root_values), borrow(study.start_stats))


@njit(cache=True, inline="always")
def _borrowed_records(records):
  """`records` with every array borrowed."""
  return Records(borrow(records.rows), borrow(records.value),
                 borrow(records.avg), borrow(records.scalar),
                 borrow(records.edges), borrow(records.target),
                 borrow(records.ps), borrow(records.counts))


@njit(cache=True, inline="always")
def _state_bounds(game, eng, s):
  """The first and end history (a tree's ps_histories index, an engine's
  pool index) of visited public state s."""
  if game is not None:
    lo = game.ps_history_start[s]
    hi = game.ps_history_start[s + 1]
  if eng is not None:
    lo = eng.ps_i[s, S_START]
    hi = eng.ps_i[s, S_END]
  return lo, hi


@njit(cache=True, inline="always")
def _history(game, eng, rows, k):
  """(h, player, moves, row, r0) of the k-th history of a public state
  (`_tree_history`, `_pool_history`)."""
  if game is not None:
    out = _tree_history(game.kind, game.player, game.infoset,
                        game.num_children, game.ps_histories, k, rows.width)
  if eng is not None:
    out = _pool_history(eng.pool_i, k, rows.header, rows.per_word)
  return out


@njit(cache=True, inline="always")
def _edge(game, eng, ps_f, h, j):
  """(slot, terminal, its utility, xi) of move j at history h
  (`_tree_edge`, `_pool_edge`)."""
  if game is not None:
    out = _tree_edge(game.kind, game.child_start, game.utility, game.node_ps,
                     ps_f, h, j)
  if eng is not None:
    out = _pool_edge(eng.pool_i, eng.e_child, eng.e_util, ps_f, h, j)
  return out


@njit(cache=True, inline="always")
def _chance(code, game, eng, h, j):
  """The probability of chance's move j at history h."""
  if game is not None:
    sj = game.edge_prob[game.child_start[h] + j]
  if eng is not None:
    sj = protocol.chance_prob(code, eng.params, eng.pool_state[h], j)
  return sj


@njit(cache=True, inline="always")
def _next_state(stack, top, visited, nvis, ps_f):
  """The way down's next public state, popped from the stack and
  appended to `visited` (preorder). Returns (it, its q, the new top, the
  new count of visited states)."""
  s = stack[top - 1]
  visited[nvis] = s
  return s, ps_f[s, S_Q], top - 1, nvis + 1


@njit(cache=True, error_model="numpy", inline="always")
def _tree_start(tree, rows, hf, i, rule, record, frozen, e):
  """A tree's episode before its way down: the update player (the first
  history's at a start public state > 0), the oracle baseline's exact
  values under sigma^t (before every episode, the first only with `study`,
  never in phase 1 of a batch, which refills them itself) and the root's
  reaches. Returns (the update player, the nodes touched)."""
  touched = 0
  if tree.start_ps > 0:
    i = tree.player[tree.ps_histories[tree.ps_history_start[tree.start_ps]]]
  if rule == RULE_ORACLE and not record and (not frozen or e == 0):
    width = rows.width
    regret_matching(rows.rcells.reshape((rows.rcells.size // width, width)),
                    tree.num_actions, tree.strategy_scratch)
    node_values(tree.kind, tree.player, tree.infoset, tree.child_start,
                tree.num_children, tree.edge_prob, tree.utility,
                tree.strategy_scratch, rows.bcells)
    touched += tree.kind.shape[0]
  if tree.start_ps == 0:
    hf[0, F_OWN] = 1.0
    hf[0, F_OPP] = 1.0
    hf[0, F_OPP_OWN] = 1.0
  return i, touched


@njit(cache=True, error_model="numpy", inline="always")
def tree_down(game, rows, work, i, sampling, epsilon, record, state, s_hi,
               s_lo, inc_hi, inc_lo):
  """A tree's way down of one episode (`episodes`), in preorder from
  public state `game.start_ps` (q = 1): every history h of a visited
  public state S gets sigma^t(h) (regret matching, once per infoset,
  marked 1; chance: its probabilities). The non-terminal child public
  states of S, ascending (= in order of first appearance over h
  ascending, a ascending), are the candidates. Sampling 0 and 1 draw one,
  S', with one uniform and xi(S -> S') uniform or on-policy (eps / n + (1
  - eps) m(S') / sum m, where m(S') sums pi(h) sigma(h, a) over the edges
  into S', pi the full reach); sampling 2 visits every candidate (xi = 1)
  of a public state of decision nodes and draws one of a public state of
  chance nodes uniformly. q(S') = q(S) xi(S -> S'); the reaches of the
  histories of S' follow from their parents'.

  Returns:
    (public states visited, into work.visited; nodes touched; the random
    stream's state; the generator's state words).
  """
  kind, player, infoset = game.kind, game.player, game.infoset
  child_start, num_children = game.child_start, game.num_children
  ps_history_start, ps_histories = game.ps_history_start, game.ps_histories
  ps_child_start, ps_children = game.ps_child_start, game.ps_children
  mass, node_parent, edge_prob = game.mass, game.node_parent, game.edge_prob
  hf, ps_f, visited, stack = work.hf, work.ps_f, work.visited, work.stack
  scells, width = rows.scells, rows.width
  touched = 0
  nvis = 0
  ps_f[game.start_ps, S_Q] = 1.0
  stack[0] = game.start_ps
  top = 1
  while top > 0:
    s, q, top, nvis = _next_state(stack, top, visited, nvis, ps_f)
    for k in range(ps_history_start[s], ps_history_start[s + 1]):
      h = ps_histories[k]
      touched += num_children[h]
      if kind[h] == 1 and rows.mwords[infoset[h]] == 0:
        rows.mwords[infoset[h]] = 1
        match_into(rows.rcells, infoset[h] * width, num_children[h], scells,
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
  return nvis, touched, state, s_hi, s_lo


@njit(cache=True, error_model="numpy", inline="always")
def _baseline_row(game, eng, rows, per_history, rule, k, h, c):
  """Where history h's edge baselines (b0) and their counts (c0) start in
  rows.bcells / rows.ccells, -1 without: a tree's by child node id, an
  engine's in h's history row (inserted while eng.allow_history holds; its
  start kept in the pool's I_HROW for the predictive pass)."""
  b0 = -1
  c0 = -1
  if game is not None and rule != RULE_NONE:
    b0 = game.child_start[h]
    c0 = b0
  if eng is not None:
    if per_history:
      h_layout = eng.history.layout
      hrow, _ = hashed.row_of(eng.history, eng.pool_key[k, 0],
                              eng.pool_key[k, 1], c, eng.allow_history,
                              eng.history.meta[:0], False)
      if hrow >= 0:
        b0 = hashed.first_cell(hrow, h_layout[hashed.L_HEADER],
                               h_layout[hashed.L_PER_WORD])
    eng.pool_i[k, I_HROW] = b0
    c0 = b0 + c
  return b0, c0


@njit(cache=True, error_model="numpy", inline="always")
def edge_estimate(game, eng, rows, work, codes, h, j, b0, c0, i,
                   utility_sum, learn_baselines, records, e, num_edges):
  """u(h, a) of move j at history h (`episodes`: terminal, visited with
  xi = 1, or the baseline-corrected estimate), after which the history
  baseline of a sampled edge learns u(h a) (or, with `records`, its
  target is recorded). Returns (u(h, a), the records' edge count)."""
  rule, decay = codes.rule, codes.decay
  hf, bcells, ccells = work.hf, rows.bcells, rows.ccells
  slot, terminal, util, xi = _edge(game, eng, work.ps_f, h, j)
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
  if (not terminal and xi > 0.0 and learn_baselines and rule == RULE_CHILD
      and b0 >= 0):
    target = _stored(i, utility_sum, hf[slot, F_VALUE])
    if records is not None:
      records.edges[e, num_edges] = b0 + j
      records.target[e, num_edges] = target
      num_edges += 1
    else:
      # A tree counts always; an engine's row has a count only for a
      # running mean.
      counted = game is not None or decay <= 0.0
      count = np.float64(ccells[c0 + j]) if counted else 0.0
      bcells[b0 + j] = averaged(np.float64(bcells[b0 + j]), count, target,
                                decay)
      if counted:
        ccells[c0 + j] += 1
  return est, num_edges


@njit(cache=True, error_model="numpy", inline="always")
def _average_opponent(game, eng, rows, work, codes, h, row, r0, s0, c, t,
                      stamp, records, e, num_rows):
  """Optimistic averaging at an opponent's infoset, once per episode
  (marked `stamp`; Lanctot 2013, section 4): the skipped iterations'
  weights (t - c_I, or (t (t + 1) - c_I (c_I + 1)) / 2 with regret_plus)
  times pi_owner(I) sigma^t(I) added to the average sums
  (kernels/outcome.py's `catch_up_average`), c_I = t; or, with `records`,
  sigma and the opponent's own reach recorded. Returns the records' row
  count."""
  mwords, scells, acells = rows.mwords, rows.scells, rows.acells
  hf = work.hf
  if mwords[row + rows.m_off] == stamp:
    return num_rows
  mwords[row + rows.m_off] = stamp
  if records is not None:
    records.rows[e, num_rows] = 2 * row
    records.scalar[e, num_rows] = hf[h, F_OPP_OWN]
    for j in range(c):
      records.avg[e, num_rows, j] = scells[s0 + j]
    return num_rows + 1
  if game is not None:
    prev = rows.twords[row]
  if eng is not None:
    prev = hashed.stamp_of(rows.twords, row)
  catch_up_average(acells, r0 + rows.a_step * c, c, scells, s0, t, prev,
                   hf[h, F_OPP_OWN], codes.regret_plus,
                   Counts(0, 0.0, 0.0, 0))
  if game is not None:
    rows.twords[row] = t
  if eng is not None:
    hashed.set_stamp(rows.twords, row, t)
  return num_rows


@njit(cache=True, error_model="numpy", inline="always")
def state_values(code, game, eng, rows, work, codes, lo, hi, q, d, i, t,
                  stamp, utility_sum, learn_baselines, study, records, e,
                  num_rows, num_edges):
  """The way up at one visited public state S (histories lo .. hi - 1),
  for every non-terminal h in S (docs/pages/algorithms.md, "Public-state
  sampling"; Schmid et al. 2019, the VR-MCCFR estimates in vector form):
    u(h, a) = u_i(h a)                                     if h a is terminal,
    u(h, a) = u(h a)                       if pub(h a) was visited with xi = 1,
    u(h, a) = b(h, a) + [pub(h a) visited] (u(h a) - b(h, a)) / xi  otherwise,
    u(h) = sum_a sigma^t(h, a) u(h, a)                  (into hf[h, F_VALUE]),
    R_I(a) += pi_{-i}(h) / q(S) (u(h, a) - u(h))   (I of player i),
  into the tree's `increment` with `study` or `records`. History
  baselines of the edges into visited public states learn from u(h a)
  after their use (`edge_estimate`); optimistic averaging runs once per
  opponent infoset (`_average_opponent`). Returns the records' row and
  edge counts."""
  averaging = codes.averaging
  per_history = codes.rule == RULE_CHILD or codes.rule == RULE_PREDICTIVE
  frozen = study is not None
  hf, child_est = work.hf, work.child_est
  for k in range(lo, hi):
    h, p, c, row, r0 = _history(game, eng, rows, k)
    if p == protocol.TERMINAL:
      continue
    s0 = r0 + rows.s_step * c
    b0, c0 = _baseline_row(game, eng, rows, per_history, codes.rule, k, h,
                           c)
    v = 0.0
    for j in range(c):
      est, num_edges = edge_estimate(game, eng, rows, work, codes, h, j, b0,
                                      c0, i, utility_sum, learn_baselines,
                                      records, e, num_edges)
      if p != protocol.CHANCE:
        sj = _sigma(rows.scells, s0, row, j, c)
      else:
        sj = _chance(code, game, eng, h, j)
      v += sj * est
      child_est[j] = est
    hf[h, F_VALUE] = v
    if study is not None:
      start_stats = study.start_stats
      if d == 0 and start_stats.shape[0] > 0 and p == i:
        r = k - lo
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
        if frozen or records is not None:
          if game is not None:
            game.increment[row, j] += x
        else:
          rows.rcells[r0 + j] += x
    elif not frozen and averaging == 1:
      num_rows = _average_opponent(game, eng, rows, work, codes, h, row, r0,
                                   s0, c, t, stamp, records, e, num_rows)
  return num_rows, num_edges


@njit(cache=True, error_model="numpy", inline="always")
def update_infosets(game, eng, rows, work, codes, lo, hi, q, i, avg_w,
                     stamp, study, records, e, num_rows):
  """Once per infoset of the update player i in a visited public state
  (marked `stamp`): RM+ clips its regrets at 0 (if regret_plus),
  stochastic averaging adds w_t pi_i(I) sigma^t(I, a) / q(S), w_t = t if
  regret_plus else 1, and an engine's row takes sigma^{t+1}; or, with
  `study`, the summed increments and their squares go to its sums; or,
  with `records`, they are recorded. Returns the records' row count."""
  regret_plus, averaging = codes.regret_plus, codes.averaging
  rcells, scells, mwords = rows.rcells, rows.scells, rows.mwords
  hf = work.hf
  for k in range(lo, hi):
    h, p, c, row, r0 = _history(game, eng, rows, k)
    if p != i or row < 0 or mwords[row + rows.m_off] == stamp:
      continue
    mwords[row + rows.m_off] = stamp
    if study is not None:
      for j in range(c):
        x = game.increment[row, j]
        study.regret_sum[row, j] += x
        study.regret_sq[row, j] += x * x
        game.increment[row, j] = 0.0
      continue
    s0 = r0 + rows.s_step * c
    if records is not None:
      records.rows[e, num_rows] = 2 * row + 1
      for j in range(c):
        records.value[e, num_rows, j] = game.increment[row, j]
        game.increment[row, j] = 0.0
        if averaging == 0:
          records.avg[e, num_rows, j] = avg_w * (hf[h, F_OWN] * scells[s0 + j]
                                                / q)
      num_rows += 1
      continue
    if regret_plus:
      for j in range(c):
        if rcells[r0 + j] < 0.0:
          rcells[r0 + j] = 0.0
    if averaging == 0:
      a0 = r0 + rows.a_step * c
      for j in range(c):
        rows.acells[a0 + j] += avg_w * (
            hf[h, F_OWN] * np.float64(scells[s0 + j]) / q)
    if eng is not None:
      match_into(rcells, r0, c, scells, s0)  # sigma^{t+1}(I).
  return num_rows


@njit(cache=True, error_model="numpy", inline="always")
def predictive_pass(code, game, eng, rows, work, lo, hi, i, utility_sum,
                    records):
  """The predictive baseline at a visited public state, after its regret
  update, children first (Davis et al. 2020): under sigma^{t+1}, b(h, a)
  <- v'(h a) for every edge into a visited public state and v'(h) =
  sum_a sigma^{t+1}(h, a) b(h, a) into hf[h, F_PRED] (terminal edges:
  u(h a)), without 1/xi (Davis et al.'s zero-variance setting).
  Returns the nodes touched."""
  hf, bcells, scells = work.hf, rows.bcells, rows.scells
  touched = 0
  for k in range(lo, hi):
    h, p, c, row, r0 = _history(game, eng, rows, k)
    if p == protocol.TERMINAL:
      continue
    touched += c
    if records is not None:
      continue
    s0 = r0 + rows.s_step * c
    b0 = -1
    if game is not None:
      b0 = game.child_start[h]
      if p == i and rows.mwords[row] != 3:
        # sigma^{t+1} differs from sigma^t only where regrets changed.
        rows.mwords[row] = 3
        match_into(rows.rcells, r0, c, scells, s0)
    if eng is not None:
      b0 = eng.pool_i[k, I_HROW]
    v = 0.0
    for j in range(c):
      slot, terminal, util, xi = _edge(game, eng, work.ps_f, h, j)
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
        sj = _chance(code, game, eng, h, j)
      v += sj * est
    hf[h, F_PRED] = v
  return touched


@njit(cache=True, error_model="numpy", inline="always")
def _clear_marks(game, eng, rows, work, nvis, npool):
  """The marks (and a tree's xi) back to zero for the next episode."""
  if game is not None:
    for d in range(nvis):
      s = work.visited[d]
      work.ps_f[s, S_XI] = 0.0
      for k in range(game.ps_history_start[s], game.ps_history_start[s + 1]):
        h = game.ps_histories[k]
        if game.kind[h] == 1:
          rows.mwords[game.infoset[h]] = 0
  if eng is not None:
    for k in range(npool):
      row = eng.pool_i[k, I_ROW]
      if row >= 0:
        rows.mwords[row + rows.m_off] = 0


@njit(cache=True, error_model="numpy")
def episodes(code, game, eng, utility_sum, table, codes, first_iteration,
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

  An episode goes down the public tree (`tree_down`, `engine_down`: the
  public states it visits, in preorder, with q and xi), then up over them
  in reverse preorder, written once for both representations:
  `state_values` (the estimates u(h, a), u(h) and the regret terms),
  `update_infosets` (RM+ and stochastic averaging, once per infoset) and
  `predictive_pass` (the predictive baseline).

  Args:
    code: the engine's code (a compile-time constant: call with
      games/engines/common.py's `call_literal`); on a tree, unread
      (protocol.TREE, a plain integer: a plain call from Python).
    game: None on an engine, or a tree's `TreeArgs`.
    eng: None on a tree, or an engine's `EngineArgs`.
    table: the tables, a `Rows` (its header and per_word unread).
    codes: the variant, a `Codes`.
    learn_baselines: False leaves the baseline tables untouched.
    rng_state: uint64[4], the solver's PCG64 state (kernels/rng.py),
      advanced in place (but with `records`).
    key: with `records`, episode e draws from the stream `stream_start(key,
      e)`.
    scratch: the episode's `Work`.
    study: None, or a tree's frozen episodes (the tables stay untouched):
      their sums, a `Study`.
    records: None, or phase 1 of `public_batches`: its `Records`.

  Returns:
    (the episode to run next: num_episodes unless an engine's was short of
    room, the number of nodes touched: per visited public state, the edges
    of its histories (every one is evaluated), again for the predictive
    pass, and the whole tree per oracle refill).
  """
  # Every array the pieces touch, borrowed (tables/atomics.py), so the
  # inlined pieces count no references. `x = borrowed(arg) if arg is not
  # None else arg` keeps the argument's type (an `x = None` first would
  # make x optional) and lets numba prune the pieces' code for an argument
  # that is None; this function's own branches test the arguments, which
  # numba prunes first.
  tree = _borrowed_tree(game) if game is not None else game
  pool = _borrowed_engine(eng) if eng is not None else eng
  sums = _borrowed_study(study) if study is not None else study
  recs = _borrowed_records(records) if records is not None else records
  header = 0
  per_word = 0
  if eng is not None:
    # An engine's code is a compile-time constant (a tree's is unread: a
    # plain integer, and the kernel a plain call from Python).
    numba.literally(code)
    layout, h_layout = pool.tab.layout, pool.history.layout
    header, per_word = layout[hashed.L_HEADER], layout[hashed.L_PER_WORD]
    max_moves = scratch.child_est.shape[0]
    widest = hashed.row_words(max_moves, header, layout[hashed.L_FIELDS],
                              per_word)
    h_widest = hashed.row_words(max_moves, h_layout[hashed.L_HEADER],
                                h_layout[hashed.L_FIELDS],
                                h_layout[hashed.L_PER_WORD])
    pool.ctl[C_STATUS] = DONE
  rows = Rows(borrow(table.rcells), borrow(table.acells),
              borrow(table.scells), borrow(table.mwords),
              borrow(table.twords), table.width, table.a_step, table.s_step,
              table.m_off, borrow(table.bcells), borrow(table.ccells), header,
              per_word)
  work = Work(borrow(scratch.hf), borrow(scratch.ps_f),
              borrow(scratch.visited), borrow(scratch.stack),
              borrow(scratch.child_est))
  rule, regret_plus = codes.rule, codes.regret_plus
  sampling, epsilon = codes.sampling, codes.epsilon
  frozen = study is not None
  record = records is not None
  hf, ps_f, visited = work.hf, work.ps_f, work.visited
  s_hi, s_lo, inc_hi, inc_lo = (rng_state[0], rng_state[1], rng_state[2],
                                rng_state[3])
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
    npool = 0
    if game is not None:
      i, start_touched = _tree_start(tree, rows, hf, i, rule, record, frozen,
                                     e)
      nvis, down_touched, state, s_hi, s_lo = tree_down(
          tree, rows, work, i, sampling, epsilon, record, state, s_hi, s_lo,
          inc_hi, inc_lo)
      episode_touched += start_touched + down_touched
    if eng is not None:
      nvis, status, episode_touched, npool, s_hi, s_lo = engine_down(
          code, pool, hf, ps_f, visited, work.stack, i, sampling, epsilon,
          header, per_word, widest, s_hi, s_lo, inc_hi, inc_lo)
      if status == DONE and pool.allow_history and not hashed.has_room(
          pool.history.meta, pool.history.index, npool, npool * h_widest):
        status = SHORT_HISTORY
      if status != DONE:
        pool.ctl[C_STATUS] = status
        rng_state[0] = start_hi
        rng_state[1] = start_lo
        return e, touched
    # Up, over the visited public states in reverse preorder: written once.
    for d in range(nvis - 1, -1, -1):
      s = visited[d]
      q = ps_f[s, S_Q]
      lo, hi = _state_bounds(tree, pool, s)
      num_rows, num_edges = state_values(
          code, tree, pool, rows, work, codes, lo, hi, q, d, i, t, stamp,
          utility_sum, learn_baselines, sums, recs, e, num_rows, num_edges)
      num_rows = update_infosets(tree, pool, rows, work, codes, lo, hi, q,
                                  i, avg_w, stamp, sums, recs, e, num_rows)
      if rule == RULE_PREDICTIVE and learn_baselines:
        episode_touched += predictive_pass(code, tree, pool, rows, work, lo,
                                           hi, i, utility_sum, recs)
    if study is not None:
      sums.root_values[e] = hf[0, F_VALUE]
    if records is not None:
      for d in range(nvis):
        recs.ps[e, d] = visited[d]
      recs.counts[e, 0] = num_rows
      recs.counts[e, 1] = num_edges
      recs.counts[e, 2] = nvis
    _clear_marks(tree, pool, rows, work, nvis, npool)
    touched += episode_touched
    e += 1
  if not record:
    rng_state[0] = s_hi
    rng_state[1] = s_lo
  return e, touched


@njit(cache=True, error_model="numpy", inline="always")
def _state_rows(code, params, tab, allow_insert, pool_state, pool_i, gkeys,
                gstamp, gval, groups, ctl, hs, he, nedge, no_block):
  """The rows of the infosets of an engine's public state (histories hs ..
  he - 1 in the pool), sigma^t in their strategy field: one lookup per
  infoset (its histories grouped by key first), inserted while
  `allow_insert` holds; each history's player, moves, first edge and row
  into pool_i. Returns the histories' children (their edges)."""
  index, cells, layout = tab.index, tab.cells, tab.layout
  header = layout[hashed.L_HEADER]
  per_word = layout[hashed.L_PER_WORD]
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
    row = -1
    if p >= 0:
      h1, h2 = protocol.infoset_hash(code, params, st, p)
      loc = group_probe(gkeys, gstamp, gval, mask, gs, h1, h2, nloc)
      if loc == nloc:
        row, _ = hashed.row_of(tab, h1, h2, c, allow_insert, no_block, False)
        if row >= 0:
          prefetch(cells, hashed.first_cell(row, header, per_word))
        groups[nloc, 3] = row
        nloc += 1
      else:
        row = groups[loc, 3]
    pool_i[k, I_ROW] = row
  return children


@njit(cache=True, error_model="numpy", inline="always")
def _group_children(code, params, pool_state, pool_i, e_child, e_util,
                    e_group, gkeys, gstamp, gval, groups, scratch, ctl, hs,
                    he):
  """Every child of the histories hs .. he - 1, played on `scratch`, into
  its edge (terminal: its utility; else UNSAMPLED) and grouped by
  `protocol.public_hash` in order of first appearance (groups[g, 0]: 1 if
  the group holds a non-terminal child, groups[g, 1]: how many). Returns
  the number of groups."""
  mask = gkeys.shape[0] - 1
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
      terminal = protocol.player(code, params, scratch) == protocol.TERMINAL
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
  return ng


@njit(cache=True, error_model="numpy", inline="always")
def _keep_groups(groups, gxi, ps_i, ps_f, stack, ng, npool, nps, top, q):
  """The kept groups (a non-terminal child and xi > 0) become public
  states, in group order, their histories from pool index `npool` on
  (groups[g, 2]: the next to fill; groups[g, 3]: the public state, -1 if
  not kept), q(S') = q(S) xi; pushed in descending order so that they are
  visited ascending. Returns (the pool's and the public states' new ends,
  the stack's top)."""
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
  return offset, nps, top


@njit(cache=True, error_model="numpy", inline="always")
def _build_children(code, params, cells, header, per_word, pool_state,
                    pool_i, pool_key, e_child, e_group, groups, hf, hs, he,
                    i):
  """The children of histories hs .. he - 1 in kept groups, into the pool
  (their state, public state, history key and reaches: pi_i times
  sigma^t(h, a) at i's histories, pi_{-i} times sigma^t or chance's
  probability elsewhere), their pool index into the edge."""
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


@njit(cache=True, error_model="numpy")
def engine_down(code, eng, hf, ps_f, visited, stack, i, sampling, epsilon,
                 header, per_word, widest, s_hi, s_lo, inc_hi, inc_lo):
  """An engine's down pass of one episode (`episodes`): from the root,
  the public states visited, in preorder, built in the pool as they are
  reached (the module docstring; sampling and xi as `tree_down`'s).

  Args:
    eng: `EngineArgs`, borrowed (`episodes`); the rest as `episodes` has
      them.

  Returns:
    (public states visited, status (DONE, or what was short of room:
    ctl[C_NEED_*] say how much), nodes touched, histories in the pool,
    the generator's state words).
  """
  numba.literally(code)
  params, tab, allow_insert = eng.params, eng.tab, eng.allow_insert
  pool_state, pool_i, pool_key = eng.pool_state, eng.pool_i, eng.pool_key
  e_child, e_util, e_group = eng.e_child, eng.e_util, eng.e_group
  ps_i, groups, gxi, ctl = eng.ps_i, eng.groups, eng.gxi, eng.ctl
  gkeys, gstamp, gval = eng.gkeys, eng.gstamp, eng.gval
  index, meta, cells = tab.index, tab.meta, tab.cells
  no_block = meta[:0]
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
    s, q, top, nvis = _next_state(stack, top, visited, nvis, ps_f)
    hs = ps_i[s, S_START]
    he = ps_i[s, S_END]
    if allow_insert and not hashed.has_room(meta, index, he - hs,
                                            (he - hs) * widest):
      status = SHORT_TABLE
      break
    if (group_table_size(he - hs) > gkeys.shape[0]
        or he - hs > groups.shape[0]):
      ctl[C_NEED_GROUPS] = he - hs
      status = SHORT_POOL
      break
    children = _state_rows(code, params, tab, allow_insert, pool_state,
                           pool_i, gkeys, gstamp, gval, groups, ctl, hs, he,
                           nedge, no_block)
    touched += children
    if nedge + children > e_child.shape[0]:
      ctl[C_NEED_EDGES] = nedge + children
      status = SHORT_POOL
      break
    if (group_table_size(children) > gkeys.shape[0]
        or children > groups.shape[0]):
      ctl[C_NEED_GROUPS] = children
      status = SHORT_POOL
      break
    ng = _group_children(code, params, pool_state, pool_i, e_child, e_util,
                         e_group, gkeys, gstamp, gval, groups, eng.scratch,
                         ctl, hs, he)
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
    offset, nps, top = _keep_groups(groups, gxi, ps_i, ps_f, stack, ng,
                                    npool, nps, top, q)
    _build_children(code, params, cells, header, per_word, pool_state,
                    pool_i, pool_key, e_child, e_group, groups, hf, hs, he,
                    i)
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
  params, pool_state, pool_i = eng.params, eng.pool_state, eng.pool_i
  e_group, groups, xi = eng.e_group, eng.groups, eng.gxi
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
def _dense(regrets, avg, sigma, infoset_mark, avg_last, baseline,
           baseline_count):
  """A tree's `Rows` for `episodes`: row i's regrets, average sums and
  sigma^t at cell i A of the flat arrays, its mark infoset_mark[i], its
  c_I avg_last[i]; the baselines and their counts by child node id."""
  return Rows(regrets.reshape(regrets.size), avg.reshape(avg.size),
              sigma.reshape(sigma.size), infoset_mark, avg_last,
              regrets.shape[1], 0, 0, 0, baseline, baseline_count, 0, 0)


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
  in `game`, `table` and `codes` (regrets, avg: float64[I, A];
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
          3, TreeArgs(kind, player, infoset, child_start, num_children,
                      edge_prob, utility, num_actions, node_ps,
                      ps_history_start, ps_histories, node_parent,
                      ps_child_start, ps_children, mass[w],
                      strategy_scratch[w], increment[w], 0), None,
          utility_sum,
          _dense(regrets, avg, sigma[w], infoset_mark[w], avg_last, baseline,
                 baseline_count),
          Codes(rule, averaging, regret_plus, sampling, epsilon, decay),
          t0, 0, count, True, rng_state, key, np.int64(w), workers,
          Work(hf[w], ps_f[w], visited[w], stack[w], child_est[w]), None,
          Records(rec_rows, rec_value, rec_avg, rec_scalar, rec_edges,
                  rec_target, rec_ps, rec_counts))[1]
    for part in prange(workers):
      _apply_public(regrets, avg, avg_last, baseline, baseline_count,
                    num_actions, averaging, regret_plus, decay, t0, count,
                    np.int64(part), workers, rec_rows, rec_value, rec_avg,
                    rec_scalar, rec_edges, rec_target, rec_counts)
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
