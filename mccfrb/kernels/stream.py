"""Exact walks of a native engine's game, grouped by public state.

A game too large to compile (mccfrb/games/engines) is walked depth first, but
one *public state* at a time instead of one history at a time: a frame
holds every history of one public state S (their engine states, the
reaches they carry), expands each by each move, groups the non-terminal
children by `protocol.public_hash` (a hash table, in order of first
appearance) and walks the groups one after the other; the values of the
children then come back up and the frame combines them. Every infoset lies
inside one public state, so when a frame combines, all the histories of
each infoset it holds are present: a best response takes the argmax per
infoset of the summed counterfactual values, and CFR has every regret
term of the infoset, exactly as on the full tree. Within a frame the
histories of one infoset are found by grouping their `infoset_hash` keys.

Memory is the frames along the current path, never the game: a frame
keeps its children (engine states, float and int columns) in three arenas
(int64, float64 and int64 states) that grow and shrink like a stack, so
the walk allocates nothing per history. The walk is an explicit stack of
frames (`frames`, one row per depth) whose whole state lives in arrays, so
a kernel call can stop at any frame boundary and the next call resumes:
after `budget` children (progress bars), or when an arena, the infoset
tables or a hash set is short of room (the Python side grows it and calls
again). A child is played from its parent's row into its own row of the
states arena, unless the engine values it as a leaf from the parent
(`terminal_value`); a row whose child ends the game is left unused.

The frame's pieces that are calls of their own (`_expand`, `_group`,
`_enter`, `_combine`: a call each per frame, with the walk's arrays)
allocate nothing and are compiled with `_nrt=False`: numba's code counted
references for each array they take, an out-of-line call per count.

Threads: `walk` can stop (SPLIT) at a frame about to walk its groups;
other walks (workers, on Python threads: the kernels release the GIL)
then walk the groups, each seeded with one group's histories
(`seed_walk`) and returning their values (`return_values`). A frame is
walked whole by one thread, so values and tables do not depend on the
number of threads; concurrent row inserts reserve room atomically.

Modes:
  BR: two best responses in one walk. A history h carries
    w_0(h) = pi_1(h) pi_c(h) and w_1(h) = pi_0(h) pi_c(h) under the
    evaluated profile sigma, and the own reaches c_0(h), c_1(h) under the
    tables' current strategy (for the flush below). Values, in the
    responder's utility, bottom-up:
      v_i(h) = sum_a sigma(h, a) v_i(h a)           at the other player's
                                                    and at chance nodes,
      v_i(h) = v_i(h a*(I)),  a*(I) = argmax_a sum_{h' in I} w_i(h')
               v_i(h' a)                            at i's infosets I,
    so v_0(root) = BR_0(sigma_1) and v_1(root) = BR_1(sigma_0). sigma is
    the tables' *average* policy: for the row r of the acting player's
    infoset I (`find_row`),
      cum_a = avg[r, a] + W c_p(h) strategy[r, a],
      W = 0 (flush 0), T - L (flush 1), (T (T + 1) - L (L + 1)) / 2
      (flush 2), L = avg_last[r],
    sigma(I, a) = cum_a / sum_b cum_b, uniform if the sum is <= 0 or I has
    no row: the lazy catch-up of optimistic averaging (Lanctot 2013
    section 4) read at iteration T, as `solvers.base.optimistic_average`
    does on a tree (c_p under the current strategy, uniform where I has no
    row).
  CFR: player p's pass of the exact CFR family (kernels/cfr.py), q = 1 - p.
    A history carries pi_q(h), pi_c(h) and pi_p(h) under the current
    strategy sigma (`strategy`, uniform where there is no row yet) and
    its value is v_p(h) = sum_a sigma(h, a) v_p(h a). At p's infosets
      regrets[I, a] += sum_{h in I} pi_q(h) pi_c(h) (v_p(h a) - v_p(h)),
    at q's infosets the opponent's average terms, whose sigma_q is the
    current one during p's pass,
      target[I, a] += sum_{h in I} pi_q(h) sigma(I, a) `weight`,
    target = `avg` in player 0's pass (player 1's terms of iteration t),
    the pending field S_PENDING in player 1's pass (player 0's terms of
    iteration t + 1, added to avg when it starts; `avg` if the tables have
    no pending field: simultaneous updates, player 0's terms of iteration
    t), and with `own_weight`
    (player 0's first pass) p's own terms pi_p(h) sigma(I, a) own_weight.
    So a pass skips every history with pi_q(h) = 0 (partial pruning: all
    its terms are 0), and `finish_pass` then clips (RM+) or discounts
    (DCFR) every row of p (through[r] holds the row's player) and
    regret-matches them. Rows are inserted as the walk meets infosets (both
    players', uniform strategy); sigma stays fixed during a pass, and the
    pass equals the tree's four sweeps up to the order of the sums.

BR prunes the histories with w_0 = w_1 = 0. A pruned child's values are
0, and are only ever multiplied by an exact 0. Infosets with a single
legal action get no row: their strategy is 1.

Public states that merge (two public paths reaching one public key: a DAG,
e.g. goofspiel without imp_info, whose information states lack perfect
recall) are walked once per path, so an infoset may be split over frames.
Every frame's public key goes into a hash set and a key seen twice sets
ctl[C_DAG]: CFR is unaffected (its updates are sums, applied after the
pass), a best response is then recomputed level by level (`level` >= -1,
the tree's `best_response_value` order): responder i's infosets with l
own earlier decisions are decided in walk l (deepest first), their
counterfactual values summed over frames in a second table (`dec`).

Every function takes arrays and fills them in place; `code` is the
engine's code (mccfrb/games/engines/protocol.py), a compile-time constant.
"""

from typing import NamedTuple

import numba
import numpy as np
from numba import njit

from mccfrb.games.engines import protocol
from mccfrb.kernels.exact import rule_row
from mccfrb.kernels.rows import match_into
from mccfrb.kernels.weighting import linear_skipped
from mccfrb.tables import hashed
from mccfrb.tables.atomics import atomic_add
from mccfrb.tables.atomics import borrow
from mccfrb.tables.atomics import prefetch


class InfosetRows(NamedTuple):
  """The infoset rows a walk reads (`walk`'s `tab`): their hashed table,
  smap (int64[SMAP_SIZE], its fields and header words) and reserve
  (int64[2], the rows and arena words that workers inserting concurrently
  have reserved; 0 when none is inside `walk`)."""
  table: hashed.Hashed
  smap: np.ndarray
  reserve: np.ndarray


class Arenas(NamedTuple):
  """A walk's state (`walk`), set up by `start_walk` and kept from one walk
  to the next (solvers/stream.py), so that arenas grow only once.

  Attributes:
    ctl: int64[CTL_SIZE], the walk's control words (C_*).
    frames: int64[*, FRAME_SIZE], a frame per depth of public states (F_*).
    ints, floats: the arenas of the frames' int and float columns.
    states: int64[*, state size], the engine states of the histories.
    ukeys: uint64[*, 2], each child's public key.
    tkeys, tstamp, tval: the grouping hash table (tkeys uint64[*, 2], its
      length a power of 2; tstamp, tval int64).
    pub: uint64[power of 2, 2], the set of public keys.
  """
  ctl: np.ndarray
  frames: np.ndarray
  ints: np.ndarray
  floats: np.ndarray
  states: np.ndarray
  ukeys: np.ndarray
  tkeys: np.ndarray
  tstamp: np.ndarray
  tval: np.ndarray
  pub: np.ndarray


# smap (int64[SMAP_SIZE]): where the walk finds its fields and header words
# in the infoset rows (tables/hashed.py); -1: absent (a table of a
# sampling solver keeps no strategy: the walk regret-matches its regrets).
S_REGRET = 0
S_AVG = 1
S_STRATEGY = 2
S_PENDING = 3  # CFR: player 0's average terms found in player 1's pass.
S_STASH = 4  # CFR with a split rule: R_{t-1} while the pass sums r_t.
S_PLAYER = 5  # CFR: the header word holding the row's player.
SMAP_SIZE = 6
# The level mode's decision rows: header words and their field.
DEC_HEADER = ("level", "best")
D_LEVEL = 2
D_BEST = 3

# Flush codes of the best response's sigma (`walk`): the average strategy
# with no catch-up, with optimistic averaging's catch-up (T - L) or its
# linear form, or the current strategy itself.
FLUSH_CURRENT = 3

# Modes.
BR = 0
CFR = 1

# Walk statuses.
DONE = 0
PAUSED = 1
SHORT_ARENA = 2  # ctl[C_NEED_*] say how much.
SHORT_TABLE = 3  # ctl[C_NEED_ROWS], ctl[C_NEED_CELLS]: more rows needed.
SHORT_DEC = 4  # The level mode's decision table, likewise.
SHORT_PUBLIC = 5  # The set of public keys is half full.
SHORT_FRAMES = 6  # The path is deeper than `frames` has rows.
SPLIT = 7  # The current frame's groups are to be walked by workers.

# ctl (int64[CTL_SIZE]).
C_DEPTH = 0  # The current frame.
C_ITOP = 1  # Arena tops.
C_FTOP = 2
C_STOP = 3
C_STAMP = 4  # Stamp of the grouping hash table's last use.
C_NEED_INTS = 5
C_NEED_FLOATS = 6
C_NEED_STATES = 7
C_NEED_KEYS = 8  # Entries of ukeys; the hash table needs 2x (power of 2).
C_NEED_ROWS = 9
C_NEED_CELLS = 10
C_DAG = 11  # 1 once a public key was met by two frames.
C_MAX_LEVEL = 12  # The largest responder level met (level mode).
C_WORK = 13  # Children expanded so far.
C_PUBLIC = 14  # Keys in the public set.
C_FRAMES = 15  # Frames entered.
C_COLLISIONS = 16  # Lookups that met a row of their key with another width.
C_MISSING = 17  # Infosets without a row where rows may not be inserted.
CTL_SIZE = 18

# Frame fields (frames: int64[depth, FRAME_SIZE]). A frame's histories are
# children of the frame above: ints[F_HIST + i] is the index of history i
# among the parent's children.
F_PHASE = 0  # 0: to enter; 1: walking its groups.
F_N = 1  # Histories.
F_HIST = 2
F_WHO = 3  # Acting player, CHANCE.
F_MC = 4  # Children.
F_CSTATE = 5  # Row of child 0 in `states`.
F_CFLOAT = 6  # Offset of child 0's float columns (KW per child).
F_CINT = 7  # Offset of child 0's int columns (KI per child).
F_CSTART = 8  # child_start[n + 1] (ints): children of h are cs .. ce - 1.
F_ORDER = 9  # The non-terminal children, grouped (ints).
F_GSTART = 10  # Group g is order[gstart[g]:gstart[g + 1]] (ints).
F_NG = 11  # Groups.
F_G = 12  # Groups walked so far.
F_ISET = 13  # iset[n]: history -> local infoset (ints).
F_NI = 14  # Local infosets.
F_IROW = 15  # Row of each local infoset in the tables, -1 (ints).
F_IFIRST = 16  # First history of each local infoset (ints).
F_IDEC = 17  # Row of each local infoset in the decision table (ints).
F_SIGMA = 18  # sigma per local infoset, stride M (floats).
F_CUR = 19  # The current strategy per local infoset (BR; floats).
F_CFV = 20  # Counterfactual values per local infoset (BR; floats).
F_ITOP = 21  # Arena tops before the frame (restored when it leaves).
F_FTOP = 22
F_STOP = 23
FRAME_SIZE = 24

# `level` of a best-response walk that decides infosets frame by frame.
NO_LEVEL = -2


@njit(cache=True)
def widths(mode, level):
  """(KR, KV, KI): float reach columns, float value columns and int columns
  each child carries.

  BR: (w_0, w_1, c_0, c_1), (v_0, v_1), and with level >= -1 the two
  responders' levels (own earlier decisions). CFR: (pi_q, pi_c, pi_p),
  (v_p), none.
  """
  if mode == BR:
    return 4, 2, 2 if level >= -1 else 0
  return 3, 1, 0


@njit(cache=True, inline="always")
def group_probe(tkeys, tstamp, tval, mask, stamp, a, b, fresh):
  """The value of key (a, b) in the grouping hash table (entries with
  another stamp are empty), or `fresh` after inserting it with that value."""
  s = np.int64(a & np.uint64(mask))
  while True:
    if tstamp[s] != stamp:
      tstamp[s] = stamp
      tkeys[s, 0] = a
      tkeys[s, 1] = b
      tval[s] = fresh
      return fresh
    if tkeys[s, 0] == a and tkeys[s, 1] == b:
      return tval[s]
    s = (s + 1) & mask


@njit(cache=True, inline="always")
def group_table_size(count):
  """The grouping hash table's size for `count` keys: a power of 2 >= 2
  count."""
  size = 2
  while size < 2 * count:
    size *= 2
  return size


@njit(cache=True, error_model="numpy")
def stash_regrets(tab, smap, p):
  """Before player p's pass with a split rule: stash = R, R = 0 on p's
  rows (header word S_PLAYER == p), so that the walk sums r_t alone into
  R."""
  words, cells, header, fields, per_word, top, o = hashed.walk(tab)
  while o < top:
    c = hashed.width_of(words, o)
    if words[o + smap[S_PLAYER]] == p:
      base = hashed.first_cell(o, header, per_word)
      r = base + smap[S_REGRET] * c
      s = base + smap[S_STASH] * c
      for j in range(c):
        cells[s + j] = cells[r + j]
        cells[r + j] = 0.0
    o = hashed.next_row(words, o + hashed.row_words(c, header, fields,
                                                    per_word),
                        top, header, fields, per_word)


@njit(cache=True, error_model="numpy")
def finish_pass(tab, smap, p, clip, post, split, predictive, rule):
  """After player p's pass: p's rows (header word S_PLAYER == p) get the
  regret rule (solvers/rules.py) with rule = (discount, positive,
  negative, predict) of this iteration: RM+ clipping (R <- max(R, 0)) or
  DCFR discounting (R <- R t^a / (t^a + 1) if R >= 0, R t^b / (t^b + 1)
  if R < 0, as kernels/cfr.py's `_clip_or_discount`), then sigma by regret
  matching; with a split rule, R holds r_t and the stash R_{t-1}
  (`stash_regrets`; rows inserted by the walk have stash 0), and
  `rule_row` forms R_t and sigma (the stash is overwritten). Rows are
  walked in arena order. Returns the rows updated."""
  words, cells, header, fields, per_word, top, o = hashed.walk(tab)
  count = 0
  while o < top:
    c = hashed.width_of(words, o)
    nxt = o + hashed.row_words(c, header, fields, per_word)
    if words[o + smap[S_PLAYER]] != p:
      o = hashed.next_row(words, nxt, top, header, fields, per_word)
      continue
    count += 1
    base = hashed.first_cell(o, header, per_word)
    r = base + smap[S_REGRET] * c
    g = base + smap[S_STRATEGY] * c
    if split:
      s = base + smap[S_STASH] * c
      for j in range(c):  # rule_row's (R_{t-1}, r_t) order.
        x = cells[r + j]
        cells[r + j] = cells[s + j]
        cells[s + j] = x
      rule_row(cells[r:r + c], cells[s:s + c], cells[g:g + c], c, clip,
               post, predictive, rule[0], rule[1], rule[2], rule[3])
    else:
      for j in range(c):
        x = cells[r + j]
        if clip and x < 0.0:
          cells[r + j] = 0.0
        elif post:
          cells[r + j] = x * (rule[1] if x >= 0.0 else rule[2])
      match_into(cells, r, c, cells, g)
    o = hashed.next_row(words, nxt, top, header, fields, per_word)
  return count


@njit(cache=True)
def rehash_public(pub, new_pub):
  """Moves the set of public keys into an empty larger one."""
  mask = new_pub.shape[0] - 1
  for s in range(pub.shape[0]):
    a = pub[s, 0]
    if a == 0:
      continue
    t = np.int64(a & np.uint64(mask))
    while new_pub[t, 0] != 0:
      t = (t + 1) & mask
    new_pub[t, 0] = a
    new_pub[t, 1] = pub[s, 1]


@njit(cache=True, error_model="numpy")
def decide_level(dec, level):
  """Level mode: the best action of every decision row of `level` (the
  first maximum of its summed counterfactual values, field 0; header words
  DEC_HEADER)."""
  words, cells, header, fields, per_word, top, o = hashed.walk(dec)
  while o < top:
    c = hashed.width_of(words, o)
    if words[o + D_LEVEL] == level:
      s = hashed.first_cell(o, header, per_word)
      b = 0
      for j in range(1, c):
        if cells[s + j] > cells[s + b]:
          b = j
      words[o + D_BEST] = b
    o = hashed.next_row(words, o + hashed.row_words(c, header, fields,
                                                    per_word),
                        top, header, fields, per_word)


@njit(cache=True)
def start_walk(code, params, mode, level, utility_sum, p, wk):
  """Resets a walk: frame 0 is a pseudo-frame whose one child is the root
  (reaches 1). Returns False if the root is terminal (then its values are
  already in child 0's value columns)."""
  numba.literally(code)
  ctl, frames, ints = wk.ctl, wk.frames, wk.ints
  floats, states = wk.floats, wk.states
  kr, kv, ki = widths(mode, level)
  kw = kr + kv
  stamp = ctl[C_STAMP]  # tstamp keeps the stamps of earlier walks.
  ctl[:] = 0
  ctl[C_STAMP] = stamp
  ctl[C_MAX_LEVEL] = -1
  frames[:, :] = 0
  wk.pub[:, :] = 0
  protocol.reset(code, params, states[0])
  for x in range(kr):
    floats[x] = 1.0
  for x in range(kv):
    floats[kr + x] = 0.0
  for x in range(ki):
    ints[3 + x] = 0
  frames[0, F_PHASE] = 1
  frames[0, F_N] = 1
  frames[0, F_MC] = 1
  frames[0, F_CSTATE] = 0
  frames[0, F_CFLOAT] = 0
  frames[0, F_ORDER] = 0
  frames[0, F_GSTART] = 1
  frames[0, F_CINT] = 3
  ints[0] = 0  # order
  ints[1] = 0  # gstart
  ints[2] = 1
  ctl[C_ITOP] = 3 + ki
  ctl[C_FTOP] = kw
  ctl[C_STOP] = 1
  if protocol.player(code, params, states[0]) == protocol.TERMINAL:
    u0 = protocol.returns0(code, params, states[0])
    if mode == BR:
      floats[kr] = u0
      floats[kr + 1] = utility_sum - u0
    else:
      floats[kr] = u0 if p == 0 else utility_sum - u0
    frames[0, F_NG] = 0
    return False
  frames[0, F_NG] = 1
  return True


@njit(cache=True, inline="always")
def _histories(frames, d):
  """Frame d's histories: their number n, where their indices among the
  parent's children start in ints (hist), and the parent's child columns:
  the first child's row in `states` (psb), its float and int offsets (pfb,
  pib). History i is the parent's child ints[hist + i]."""
  return (frames[d, F_N], frames[d, F_HIST], frames[d - 1, F_CSTATE],
          frames[d - 1, F_CFLOAT], frames[d - 1, F_CINT])


@njit(cache=True, error_model="numpy", _nrt=False)
def _expand(code, params, mode, p, level, utility_sum, own_weight, prune,
            max_moves, d, wk):
  """`_enter`'s children of frame d (laid out by `_layout`): each child's
  carried reaches and value columns, and its engine state and public key
  (ukeys), or its terminal value (then ints[gid + c] = -1)."""
  numba.literally(code)
  frames, ints, floats = wk.frames, wk.ints, wk.floats
  states, ukeys = wk.states, wk.ukeys
  n, hist, psb, pfb, pib = _histories(frames, d)
  who = frames[d, F_WHO]
  cst = frames[d, F_CSTART]
  iset = frames[d, F_ISET]
  sig = frames[d, F_SIGMA]
  cur = frames[d, F_CUR]
  cfl = frames[d, F_CFLOAT]
  cint = frames[d, F_CINT]
  gid = frames[d, F_ORDER] + frames[d, F_MC]
  stop = frames[d, F_CSTATE]
  kr, kv, ki = widths(mode, level)
  kw = kr + kv
  big_m = max_moves
  width = states.shape[1]
  ask = False
  for i in range(n):
    cp = ints[hist + i]
    prow = psb + cp
    pbase = pfb + cp * kw
    k = ints[iset + i] if who >= 0 else 0
    o = k * big_m
    cs = ints[cst + i]
    par = states[prow]
    for j in range(ints[cst + i + 1] - cs):
      c = cs + j
      cb = cfl + c * kw
      # A terminal child the engine values without playing the move (no
      # state copied, no keys hashed, no reaches carried: most of the
      # game's histories are such leaves). The engine is asked for the
      # first history's children, and for the others only if it valued
      # one of those (the histories of one public state end alike in the
      # engines; a child it is not asked for is played, which is always
      # right).
      if i == 0 or ask:
        leaf, u0 = protocol.terminal_value(code, params, par, j)
        if leaf:
          ask = True
          _leaf_values(mode, p, utility_sum, u0, floats, cb + kr)
          ints[gid + c] = -1
          continue
      for x in range(kr):
        floats[cb + x] = floats[pbase + x]
      if who < 0:
        pr = protocol.chance_prob(code, params, par, j)
        if mode == BR:
          floats[cb] *= pr
          floats[cb + 1] *= pr
        else:
          floats[cb + 1] *= pr
      elif mode == BR:
        floats[cb + 1 - who] *= floats[sig + o + j]
        floats[cb + 2 + who] *= floats[cur + o + j]
      elif who == p:
        floats[cb + 2] *= floats[sig + o + j]
      else:
        floats[cb] *= floats[sig + o + j]
      if ki > 0:
        for x in range(ki):
          ints[cint + c * ki + x] = ints[pib + cp * ki + x]
        if who >= 0:
          ints[cint + c * ki + who] += 1
      if prune and floats[cb] == 0.0 and (
          floats[cb + 1] == 0.0 if mode == BR
          else own_weight == 0.0 or floats[cb + 2] == 0.0):
        for x in range(kv):  # A played child's frame writes its values.
          floats[cb + kr + x] = 0.0
        ints[gid + c] = -1
        continue
      # The move played into the child's row of the arena (left unused if
      # the child is terminal).
      child = states[stop + c]
      for x in range(width):
        child[x] = par[x]
      protocol.apply(code, params, child, j)
      if protocol.player(code, params, child) == protocol.TERMINAL:
        _leaf_values(mode, p, utility_sum,
                     protocol.returns0(code, params, child), floats, cb + kr)
        ints[gid + c] = -1
      else:
        a, b = protocol.public_hash(code, params, child)
        ukeys[c, 0] = a
        ukeys[c, 1] = b
        ints[gid + c] = 0


@njit(cache=True, error_model="numpy", inline="always")
def _leaf_values(mode, p, utility_sum, u0, floats, at):
  """A terminal child's value columns at floats[at:] from player 0's
  return: both players' (BR), or p's (CFR). A leaf carries no reaches:
  its values are only read through its own probabilities (pruned or not,
  a leaf of a zero-reach history is multiplied by that zero on the way
  up)."""
  if mode == BR:
    floats[at] = u0
    floats[at + 1] = utility_sum - u0
  else:
    floats[at] = u0 if p == 0 else utility_sum - u0


@njit(cache=True, error_model="numpy", _nrt=False)
def _group(mc, order, gid, gst, tsize, wk):
  """`_enter`'s groups of the frame's non-terminal children by public key
  (ints[gid + c] = -1 for the others): ints[order + ...] lists them group
  by group, group g from ints[gst + g]; returns the number of groups."""
  ctl, ints, ukeys = wk.ctl, wk.ints, wk.ukeys
  tkeys, tstamp, tval = wk.tkeys, wk.tstamp, wk.tval
  # Groups of the non-terminal children (a counting sort by group).
  stamp = ctl[C_STAMP] + 1
  ctl[C_STAMP] = stamp
  mask = tsize - 1
  ng = 0
  last_a = np.uint64(0)
  last_b = np.uint64(0)
  last_g = -1
  for c in range(mc):
    if ints[gid + c] < 0:
      continue
    a = ukeys[c, 0]
    b = ukeys[c, 1]
    if last_g >= 0 and a == last_a and b == last_b:
      g = last_g
    else:
      g = group_probe(tkeys, tstamp, tval, mask, stamp, a, b, ng)
      if g == ng:
        ints[gst + ng] = 0
        ng += 1
      last_a = a
      last_b = b
      last_g = g
    ints[gid + c] = g
    ints[gst + g] += 1
  run = 0
  for g in range(ng):
    size = ints[gst + g]
    ints[gst + g] = run
    run += size
  for c in range(mc):
    g = ints[gid + c]
    if g >= 0:
      ints[order + ints[gst + g]] = c
      ints[gst + g] += 1
  for g in range(ng, 0, -1):
    ints[gst + g] = ints[gst + g - 1]
  ints[gst] = 0
  return ng


@njit(cache=True, error_model="numpy", inline="always")
def _layout(code, params, mode, level, max_moves, d, wk):
  """`_enter`'s arena layout of frame d (its histories are children of
  frame d - 1): the children per history, and where the frame's columns
  start in the arenas, into frames[d] (F_WHO, F_MC, F_CSTART, F_ORDER,
  F_GSTART, F_ISET, F_IFIRST, F_IROW, F_IDEC, F_CINT, F_SIGMA, F_CUR,
  F_CFV, F_CFLOAT, F_CSTATE and the arena tops before it). Returns DONE,
  or SHORT_PUBLIC or SHORT_ARENA (ctl[C_NEED_*] set)."""
  ctl, frames, ints = wk.ctl, wk.frames, wk.ints
  floats, states = wk.floats, wk.states
  ukeys, tkeys, pub = wk.ukeys, wk.tkeys, wk.pub
  kr, kv, ki = widths(mode, level)
  kw = kr + kv
  n, hist, psb, _, _ = _histories(frames, d)
  itop = ctl[C_ITOP]
  ftop = ctl[C_FTOP]
  stop = ctl[C_STOP]
  if 2 * (ctl[C_PUBLIC] + 1) > pub.shape[0]:
    return SHORT_PUBLIC
  if itop + n + 1 > ints.shape[0]:
    ctl[C_NEED_INTS] = itop + n + 1
    return SHORT_ARENA
  cst = itop
  ints[cst] = 0
  for i in range(n):
    ints[cst + i + 1] = ints[cst + i] + protocol.num_moves(
        code, params, states[psb + ints[hist + i]])
  mc = ints[cst + n]
  order = cst + n + 1
  iset = order + 3 * mc + 1  # After gid[mc] and gstart[mc + 1].
  cint = iset + 4 * n  # After iset, ifirst, irow, idec.
  cfl = ftop + 3 * n * max_moves  # After sigma, cur, cfv.
  nkeys = max(n, mc)
  if (cint + mc * ki > ints.shape[0] or cfl + mc * kw > floats.shape[0]
      or stop + mc > states.shape[0] or nkeys > ukeys.shape[0]
      or group_table_size(nkeys) > tkeys.shape[0]):
    ctl[C_NEED_INTS] = cint + mc * ki
    ctl[C_NEED_FLOATS] = cfl + mc * kw
    ctl[C_NEED_STATES] = stop + mc
    ctl[C_NEED_KEYS] = nkeys
    return SHORT_ARENA
  frames[d, F_WHO] = protocol.player(code, params, states[psb + ints[hist]])
  frames[d, F_MC] = mc
  frames[d, F_CSTART] = cst
  frames[d, F_ORDER] = order
  frames[d, F_GSTART] = order + 2 * mc
  frames[d, F_ISET] = iset
  frames[d, F_IFIRST] = iset + n
  frames[d, F_IROW] = iset + 2 * n
  frames[d, F_IDEC] = iset + 3 * n
  frames[d, F_CINT] = cint
  frames[d, F_SIGMA] = ftop
  frames[d, F_CUR] = ftop + n * max_moves
  frames[d, F_CFV] = ftop + 2 * n * max_moves
  frames[d, F_CFLOAT] = cfl
  frames[d, F_CSTATE] = stop
  frames[d, F_ITOP] = itop
  frames[d, F_FTOP] = ftop
  frames[d, F_STOP] = stop
  return DONE


@njit(cache=True, error_model="numpy", inline="always")
def _infoset_rows(code, params, mode, level, insert, max_moves, d, wk, tab,
                  dec):
  """`_enter`'s infosets of the acting player in frame d: each history's
  local infoset (its key grouped, into ints[F_ISET]; the first history of
  each into ints[F_IFIRST]) and each infoset's row in the tables (-1: none;
  ints[F_IROW]), inserted in CFR mode with `insert`. Returns (status, the
  number of infosets): DONE, or SHORT_TABLE or SHORT_DEC (ctl[C_NEED_*]
  set; no row inserted)."""
  ctl, frames, ints, states = wk.ctl, wk.frames, wk.ints, wk.states
  ukeys, tkeys, tstamp, tval = wk.ukeys, wk.tkeys, wk.tstamp, wk.tval
  t = tab.table
  index, meta, words, cells, layout = (t.index, t.meta, t.words, t.cells,
                                       t.layout)
  smap, reserve = tab.smap, tab.reserve
  header = layout[hashed.L_HEADER]
  per_word = layout[hashed.L_PER_WORD]
  widest = hashed.row_words(max_moves, header, layout[hashed.L_FIELDS],
                            per_word)
  d_index, d_meta, d_layout = dec.index, dec.meta, dec.layout
  d_widest = hashed.row_words(max_moves, d_layout[hashed.L_HEADER],
                              d_layout[hashed.L_FIELDS],
                              d_layout[hashed.L_PER_WORD])
  n, hist, psb, _, _ = _histories(frames, d)
  who = frames[d, F_WHO]
  cst = frames[d, F_CSTART]
  iset = frames[d, F_ISET]
  ifirst = frames[d, F_IFIRST]
  irow = frames[d, F_IROW]
  ni = 0
  stamp = ctl[C_STAMP] + 1
  ctl[C_STAMP] = stamp
  mask = group_table_size(n) - 1
  for i in range(n):
    a, b = protocol.infoset_hash(code, params, states[psb + ints[hist + i]],
                                 who)
    ukeys[i, 0] = a
    ukeys[i, 1] = b
    k = group_probe(tkeys, tstamp, tval, mask, stamp, a, b, ni)
    if k == ni:
      ints[ifirst + ni] = i
      ni += 1
    ints[iset + i] = k
  reserved = mode == CFR and insert
  if reserved:
    # Workers insert concurrently: each reserves room for its frame's
    # rows (reserve: rows, arena words reserved) until it has inserted
    # them.
    old_rows = atomic_add(reserve, 0, ni)
    old_words = atomic_add(reserve, 1, ni * widest)
    if not hashed.has_room(meta, index, old_rows + ni,
                           old_words + ni * widest):
      atomic_add(reserve, 0, -ni)
      atomic_add(reserve, 1, -ni * widest)
      ctl[C_NEED_ROWS] = old_rows + ni
      ctl[C_NEED_CELLS] = old_words + ni * widest
      return SHORT_TABLE, ni
  if level >= -1 and not hashed.has_room(d_meta, d_index, ni,
                                         ni * d_widest):
    ctl[C_NEED_ROWS] = ni
    ctl[C_NEED_CELLS] = ni * d_widest
    return SHORT_DEC, ni
  # The rows in two sweeps over the infosets, a prefetch of each one's
  # index slot first: independent lookups whose cache misses overlap,
  # where the lookups one after the other would wait for one at a time.
  for k in range(ni):
    hashed.slot_hint(index, ukeys[ints[ifirst + k], 0])
  for k in range(ni):
    i = ints[ifirst + k]
    c = ints[cst + i + 1] - ints[cst + i]
    a = ukeys[i, 0]
    b = ukeys[i, 1]
    r = -1
    if c > 1:
      if mode == CFR and insert:
        r, new = hashed.row_of(t, a, b, c, True, meta[:0], True)
        if new:
          words[r + smap[S_PLAYER]] = who
      else:
        r = hashed.find(index, words, a, b)
        if r >= 0 and hashed.width_of(words, r) != c:
          ctl[C_COLLISIONS] += 1  # A detected collision: no row.
          r = -1
        if r < 0 and mode == CFR:
          ctl[C_MISSING] += 1
    ints[irow + k] = r
    if r >= 0:
      prefetch(cells, hashed.first_cell(r, header, per_word))
  if reserved:
    atomic_add(reserve, 0, -ni)
    atomic_add(reserve, 1, -ni * widest)
  return DONE, ni


@njit(cache=True, error_model="numpy", inline="always")
def _infoset_sigmas(mode, level, flush, big_t, max_moves, d, wk, tab, dec):
  """`_enter`'s strategies at frame d's ni infosets (rows found by
  `_infoset_rows`): CFR: the current strategy (floats[F_SIGMA]); BR: the
  current strategy (F_CUR) and the evaluated sigma (F_SIGMA: the average
  with the optimistic catch-up of `flush`, module docstring), uniform
  without a row; in the level mode each infoset's decision row
  (ints[F_IDEC])."""
  ctl, frames, ints = wk.ctl, wk.frames, wk.ints
  floats, ukeys = wk.floats, wk.ukeys
  words, cells, layout = tab.table.words, tab.table.cells, tab.table.layout
  smap = tab.smap
  header = layout[hashed.L_HEADER]
  per_word = layout[hashed.L_PER_WORD]
  d_index, d_meta, d_words = dec.index, dec.meta, dec.words
  f_regret = smap[S_REGRET]
  f_avg = smap[S_AVG]
  f_strategy = smap[S_STRATEGY]
  kr, kv, ki = widths(mode, level)
  kw = kr + kv
  _, hist, _, pfb, pib = _histories(frames, d)
  who = frames[d, F_WHO]
  cst = frames[d, F_CSTART]
  ifirst = frames[d, F_IFIRST]
  irow = frames[d, F_IROW]
  idec = frames[d, F_IDEC]
  sig = frames[d, F_SIGMA]
  cur = frames[d, F_CUR]
  for k in range(frames[d, F_NI]):
    i = ints[ifirst + k]
    c = ints[cst + i + 1] - ints[cst + i]
    r = ints[irow + k]
    o = k * max_moves
    base = hashed.first_cell(r, header, per_word) if r >= 0 else 0
    if mode == CFR:
      if r >= 0:
        for j in range(c):
          floats[sig + o + j] = cells[base + f_strategy * c + j]
      else:
        for j in range(c):
          floats[sig + o + j] = 1.0 / c
      continue
    if r >= 0:
      if f_strategy >= 0:
        for j in range(c):
          floats[cur + o + j] = cells[base + f_strategy * c + j]
      else:
        match_into(cells, base + f_regret * c, c, floats, cur + o)
      if flush == FLUSH_CURRENT:
        for j in range(c):
          floats[sig + o + j] = floats[cur + o + j]
      else:
        w = 0.0
        if flush == 1:
          w = big_t - hashed.stamp_of(words, r)
        elif flush == 2:
          w = linear_skipped(big_t, hashed.stamp_of(words, r))
        own = floats[pfb + ints[hist + i] * kw + 2 + who]
        cum = 0.0
        for j in range(c):
          y = np.float64(cells[base + f_avg * c + j])
          if w != 0.0:
            y += w * own * floats[cur + o + j]
          floats[sig + o + j] = y
          cum += y
        if cum > 0.0:
          for j in range(c):
            floats[sig + o + j] /= cum
        else:
          for j in range(c):
            floats[sig + o + j] = 1.0 / c
    else:
      for j in range(c):
        floats[cur + o + j] = 1.0 / c
        floats[sig + o + j] = 1.0 / c
    if level >= -1:
      # The infoset's key is still in ukeys (`_infoset_rows`).
      a = ukeys[i, 0]
      b = ukeys[i, 1]
      lev = ints[pib + ints[hist + i] * ki + who]
      if lev > ctl[C_MAX_LEVEL]:
        ctl[C_MAX_LEVEL] = lev
      dr = -1
      if c > 1 and lev == level:
        dr, new = hashed.row_of(dec, a, b, c, True, d_meta[:0], False)
        if new:
          d_words[dr + D_LEVEL] = lev
      elif c > 1 and lev > level:
        dr = hashed.find(d_index, d_words, a, b)
      ints[idec + k] = dr


@njit(cache=True, inline="always")
def _register_public(code, params, state, ctl, pub):
  """Adds the public key of `state` (a frame's) to the set of public keys;
  a key met twice sets ctl[C_DAG]."""
  a, b = protocol.public_hash(code, params, state)
  if a == 0:
    a = np.uint64(1)
  pmask = pub.shape[0] - 1
  s = np.int64(a & np.uint64(pmask))
  while True:
    if pub[s, 0] == 0:
      pub[s, 0] = a
      pub[s, 1] = b
      ctl[C_PUBLIC] += 1
      return
    if pub[s, 0] == a and pub[s, 1] == b:
      ctl[C_DAG] = 1
      return
    s = (s + 1) & pmask


@njit(cache=True, error_model="numpy", _nrt=False)
def _enter(code, params, mode, p, level, flush, big_t, utility_sum,
           own_weight, prune, insert, max_moves, d, wk, tab, dec):
  """Expands frame d: its layout in the arenas (`_layout`), the acting
  player's infosets, their rows and strategies (`_infoset_rows`,
  `_infoset_sigmas`), every child (reaches, engine state, terminal
  values: `_expand`), the groups of the non-terminal children (`_group`)
  and the frame's public key (`_register_public`). Returns DONE or a
  SHORT_* status (then nothing persistent changed: the frame is entered
  again after the Python side grew what was short)."""
  numba.literally(code)
  ctl, frames, ints = wk.ctl, wk.frames, wk.ints
  status = _layout(code, params, mode, level, max_moves, d, wk)
  if status != DONE:
    return status
  ni = 0
  if frames[d, F_WHO] >= 0:
    status, ni = _infoset_rows(code, params, mode, level, insert, max_moves,
                               d, wk, tab, dec)
    if status != DONE:
      return status
  frames[d, F_NI] = ni
  if ni > 0:
    _infoset_sigmas(mode, level, flush, big_t, max_moves, d, wk, tab, dec)
  _expand(code, params, mode, p, level, utility_sum, own_weight, prune,
          max_moves, d, wk)
  mc = frames[d, F_MC]
  frames[d, F_NG] = _group(mc, frames[d, F_ORDER], frames[d, F_ORDER] + mc,
                           frames[d, F_GSTART],
                           group_table_size(max(frames[d, F_N], mc)), wk)
  frames[d, F_G] = 0
  # The frame's public key is its first history's.
  _, hist, psb, _, _ = _histories(frames, d)
  _register_public(code, params, wk.states[psb + ints[hist]], ctl, wk.pub)
  kr, kv, ki = widths(mode, level)
  ctl[C_ITOP] = frames[d, F_CINT] + mc * ki
  ctl[C_FTOP] = frames[d, F_CFLOAT] + mc * (kr + kv)
  ctl[C_STOP] = frames[d, F_CSTATE] + mc
  ctl[C_WORK] += mc
  ctl[C_FRAMES] += 1
  return DONE


@njit(cache=True, error_model="numpy", _nrt=False)
def _combine(code, params, mode, p, level, weight, own_weight, max_moves, d,
             wk, tab, dec):
  """The values of frame d's histories from their children's (written into
  the parent frame's child columns), and at the updating player's infosets
  the CFR increments."""
  numba.literally(code)
  frames, ints, floats, states = wk.frames, wk.ints, wk.floats, wk.states
  cells, layout, smap = tab.table.cells, tab.table.layout, tab.smap
  header = layout[hashed.L_HEADER]
  per_word = layout[hashed.L_PER_WORD]
  # CFR: q's averages go to the field S_AVG in player 0's pass (iteration
  # t) and to S_PENDING in player 1's pass (player 0's, iteration t + 1);
  # tables without S_PENDING (simultaneous updates: sigma_0 is still
  # sigma_0^t in player 1's pass) take them in S_AVG in both.
  f_target = (smap[S_PENDING] if p == 1 and smap[S_PENDING] >= 0
              else smap[S_AVG])
  kr, kv, ki = widths(mode, level)
  kw = kr + kv
  big_m = max_moves
  n, hist, psb, pfb, pib = _histories(frames, d)
  who = frames[d, F_WHO]
  cst = frames[d, F_CSTART]
  cfl = frames[d, F_CFLOAT]
  iset = frames[d, F_ISET]
  ni = frames[d, F_NI]
  irow = frames[d, F_IROW]
  ifirst = frames[d, F_IFIRST]
  idec = frames[d, F_IDEC]
  sig = frames[d, F_SIGMA]
  cfv = frames[d, F_CFV]
  if who < 0:
    for i in range(n):
      cp = ints[hist + i]
      dst = pfb + cp * kw + kr
      cs = ints[cst + i]
      ce = ints[cst + i + 1]
      # kv is 1 or 2 (`widths`): each sum in the order of the moves.
      v0 = 0.0
      v1 = 0.0
      for j in range(ce - cs):
        pr = protocol.chance_prob(code, params, states[psb + cp], j)
        at = cfl + (cs + j) * kw + kr
        v0 += pr * floats[at]
        if kv > 1:
          v1 += pr * floats[at + 1]
      floats[dst] = v0
      if kv > 1:
        floats[dst + 1] = v1
    return
  if mode == CFR:
    for i in range(n):
      cp = ints[hist + i]
      pbase = pfb + cp * kw
      cs = ints[cst + i]
      c = ints[cst + i + 1] - cs
      k = ints[iset + i]
      o = sig + k * big_m
      v = 0.0
      for j in range(c):
        v += floats[o + j] * floats[cfl + (cs + j) * kw + kr]
      floats[pbase + kr] = v
      r = ints[irow + k]
      if r < 0:
        continue
      s = hashed.first_cell(r, header, per_word)
      if who == p:
        w = floats[pbase] * floats[pbase + 1]
        if w != 0.0:
          g = s + smap[S_REGRET] * c
          for j in range(c):
            cells[g + j] += w * (floats[cfl + (cs + j) * kw + kr] - v)
        if own_weight != 0.0:
          own = floats[pbase + 2]
          g = s + smap[S_AVG] * c
          for j in range(c):
            cells[g + j] += own * floats[o + j] * own_weight
      else:
        own = floats[pbase]
        g = s + f_target * c
        for j in range(c):
          cells[g + j] += own * floats[o + j] * weight
    return
  # Best responses: the other player's value under sigma, and (NO_LEVEL)
  # the responder's sums over each infoset's histories of w_who(h) v_who(h a)
  # (cfv), in the same pass over the children.
  other = 1 - who
  sums = level < -1
  if sums:
    for k in range(ni):
      i = ints[ifirst + k]
      for j in range(ints[cst + i + 1] - ints[cst + i]):
        floats[cfv + k * big_m + j] = 0.0
  for i in range(n):
    cp = ints[hist + i]
    cs = ints[cst + i]
    c = ints[cst + i + 1] - cs
    k = ints[iset + i]
    o = sig + k * big_m
    v = 0.0
    for j in range(c):
      v += floats[o + j] * floats[cfl + (cs + j) * kw + kr + other]
    floats[pfb + cp * kw + kr + other] = v
    if sums:
      w = floats[pfb + cp * kw + who]
      o = cfv + k * big_m
      for j in range(c):
        floats[o + j] += w * floats[cfl + (cs + j) * kw + kr + who]
  if sums:
    # The responder's argmax per infoset.
    for k in range(ni):
      i = ints[ifirst + k]
      c = ints[cst + i + 1] - ints[cst + i]
      o = cfv + k * big_m
      best = 0
      for j in range(1, c):
        if floats[o + j] > floats[o + best]:
          best = j
      ints[irow + k] = best  # The rows are not needed any more.
    for i in range(n):
      cp = ints[hist + i]
      best = ints[irow + ints[iset + i]]
      floats[pfb + cp * kw + kr + who] = floats[
          cfl + (ints[cst + i] + best) * kw + kr + who]
    return
  # Level mode: decided deeper infosets play their best action, this
  # level's sum their counterfactual values, shallower ones are not needed.
  d_words, d_cells, d_layout = dec.words, dec.cells, dec.layout
  d_header = d_layout[hashed.L_HEADER]
  d_per_word = d_layout[hashed.L_PER_WORD]
  for i in range(n):
    cp = ints[hist + i]
    cs = ints[cst + i]
    c = ints[cst + i + 1] - cs
    dst = pfb + cp * kw + kr + who
    lev = ints[pib + cp * ki + who]
    dr = ints[idec + ints[iset + i]]
    if c == 1:
      floats[dst] = floats[cfl + cs * kw + kr + who]
    elif lev > level:
      a = d_words[dr + D_BEST] if dr >= 0 else 0
      floats[dst] = floats[cfl + (cs + a) * kw + kr + who]
    else:
      floats[dst] = 0.0
      if lev == level:
        w = floats[pfb + cp * kw + who]
        s = hashed.first_cell(dr, d_header, d_per_word)
        for j in range(c):
          d_cells[s + j] += w * floats[cfl + (cs + j) * kw + kr + who]


@njit(cache=True, error_model="numpy", nogil=True)
def walk(code, params, mode, p, level, flush, big_t, utility_sum, weight,
         own_weight, prune, insert, split, max_moves, budget, wk, tab, dec):
  """Runs the walk from where `wk` stands until it is done, `budget` more
  children were expanded, or something is short of room.

  Args:
    code, params: the engine (mccfrb/games/engines/protocol.py).
    mode: BR or CFR (module docstring).
    p: CFR: the updating player.
    level: BR: NO_LEVEL (decide each infoset in its frame) or the level
      mode's target level (>= -1; -1 is the final walk, every infoset
      decided).
    flush, big_t: BR: the optimistic-averaging catch-up code (0, 1, 2) and
      the iteration T it catches up to; FLUSH_CURRENT: the tables' current
      strategy is the evaluated policy.
    utility_sum: u_0 + u_1 at terminals.
    weight: CFR: the weight of the opponent q's average terms (w_t in
      player 0's pass, w_{t + 1} in player 1's).
    own_weight: CFR: the weight of p's own average terms (w_1 in player
      0's pass of iteration 1, else 0: no such terms).
    prune: skip children whose carried reaches are all 0.
    insert: CFR: insert rows for infosets without one (else they play
      uniform, are not updated and counted in ctl[C_MISSING]).
    split: return SPLIT at a frame (below the pseudo-frame) about to walk
      at least `split` groups, for workers to walk them (0: never).
    max_moves: the engine's largest number of moves (the stride M of the
      per-infoset scratch).
    budget: children to expand before pausing.
    wk: the walk's `Arenas` (set up by `start_walk`).
    tab: the infoset rows (`InfosetRows`).
    dec: the level mode's decision rows (`hashed.Hashed`): header words
      DEC_HEADER, field 0 the counterfactual values.

  Returns:
    DONE (the root's values in `floats[KR:KR + KV]`), PAUSED, SPLIT (the
    caller walks the groups of frame ctl[C_DEPTH] with `seed_walk` and
    `return_values`, sets its F_G to F_NG and calls again), or a SHORT_*
    status with ctl[C_NEED_*] set.
  """
  numba.literally(code)
  # Every array borrowed (tables/atomics.py): the views the frames make of
  # them, and the calls that pass them, cost no atomic reference counts.
  wk = Arenas(borrow(wk.ctl), borrow(wk.frames), borrow(wk.ints),
              borrow(wk.floats), borrow(wk.states), borrow(wk.ukeys),
              borrow(wk.tkeys), borrow(wk.tstamp), borrow(wk.tval),
              borrow(wk.pub))
  tab = InfosetRows(hashed.borrowed(tab.table), borrow(tab.smap),
                    borrow(tab.reserve))
  dec = hashed.borrowed(dec)
  params = borrow(params)
  ctl, frames, ints = wk.ctl, wk.frames, wk.ints
  start = ctl[C_WORK]
  while True:
    d = ctl[C_DEPTH]
    if frames[d, F_PHASE] == 0:
      status = _enter(code, params, mode, p, level, flush, big_t,
                      utility_sum, own_weight, prune, insert, max_moves, d,
                      wk, tab, dec)
      if status != DONE:
        return status
      frames[d, F_PHASE] = 1
      continue
    g = frames[d, F_G]
    if g < frames[d, F_NG]:
      if g == 0 and d >= 1 and 0 < split <= frames[d, F_NG]:
        return SPLIT
      if ctl[C_WORK] - start >= budget:
        return PAUSED
      if d + 2 > frames.shape[0]:
        return SHORT_FRAMES
      gs = ints[frames[d, F_GSTART] + g]
      ge = ints[frames[d, F_GSTART] + g + 1]
      frames[d, F_G] = g + 1
      frames[d + 1, F_PHASE] = 0
      frames[d + 1, F_N] = ge - gs
      frames[d + 1, F_HIST] = frames[d, F_ORDER] + gs
      ctl[C_DEPTH] = d + 1
      continue
    if d == 0:
      return DONE
    _combine(code, params, mode, p, level, weight, own_weight, max_moves, d,
             wk, tab, dec)
    ctl[C_ITOP] = frames[d, F_ITOP]
    ctl[C_FTOP] = frames[d, F_FTOP]
    ctl[C_STOP] = frames[d, F_STOP]
    ctl[C_DEPTH] = d - 1


@njit(cache=True, nogil=True)
def seed_walk(src, d, g, dst, mode, level):
  """Sets up walk `dst` to walk group g of frame d of walk `src`: its
  pseudo-frame 0 gets the group's histories (engine states, float and int
  columns) as its children, in one group. dst's public set, DAG flag,
  work counter and stamp are kept (one worker walks many groups). Returns
  False if dst's arenas are short (dst's ctl[C_NEED_*] set)."""
  sframes, sints, sfloats = src.frames, src.ints, src.floats
  sstates = src.states
  ctl, frames, ints = dst.ctl, dst.frames, dst.ints
  floats, states = dst.floats, dst.states
  kr, kv, ki = widths(mode, level)
  kw = kr + kv
  gst = sframes[d, F_GSTART]
  gs = sints[gst + g]
  n = sints[gst + g + 1] - gs
  order = sframes[d, F_ORDER] + gs
  cst = sframes[d, F_CSTATE]
  cfl = sframes[d, F_CFLOAT]
  cint = sframes[d, F_CINT]
  iend = n + 2 + n * ki
  if (iend > ints.shape[0] or n * kw > floats.shape[0]
      or n > states.shape[0] or frames.shape[0] < 2):
    ctl[C_NEED_INTS] = iend
    ctl[C_NEED_FLOATS] = n * kw
    ctl[C_NEED_STATES] = n
    ctl[C_NEED_KEYS] = 0
    return False
  for x in range(CTL_SIZE):
    if (x != C_STAMP and x != C_DAG and x != C_WORK and x != C_PUBLIC
        and x != C_FRAMES and x != C_MISSING):
      ctl[x] = 0
  ctl[C_MAX_LEVEL] = -1
  frames[:, :] = 0
  width = states.shape[1]
  for i in range(n):
    c = sints[order + i]
    for x in range(width):
      states[i, x] = sstates[cst + c, x]
    for x in range(kw):
      floats[i * kw + x] = sfloats[cfl + c * kw + x]
    for x in range(ki):
      ints[n + 2 + i * ki + x] = sints[cint + c * ki + x]
    ints[i] = i
  ints[n] = 0
  ints[n + 1] = n
  frames[0, F_PHASE] = 1
  frames[0, F_N] = n
  frames[0, F_MC] = n
  frames[0, F_ORDER] = 0
  frames[0, F_GSTART] = n
  frames[0, F_CINT] = n + 2
  frames[0, F_NG] = 1 if n > 0 else 0
  ctl[C_ITOP] = iend
  ctl[C_FTOP] = n * kw
  ctl[C_STOP] = n
  return True


@njit(cache=True, nogil=True)
def return_values(dst, src, d, g, mode, level):
  """The values of the histories walk `dst` walked (seeded by `seed_walk`
  with group g of src's frame d), into src's child value columns."""
  sframes, sints, sfloats = src.frames, src.ints, src.floats
  floats = dst.floats
  kr, kv, _ = widths(mode, level)
  kw = kr + kv
  gst = sframes[d, F_GSTART]
  gs = sints[gst + g]
  order = sframes[d, F_ORDER] + gs
  cfl = sframes[d, F_CFLOAT]
  for i in range(sints[gst + g + 1] - gs):
    c = sints[order + i]
    for x in range(kv):
      sfloats[cfl + c * kw + kr + x] = floats[i * kw + kr + x]


@njit(cache=True)
def merge_public(src, dst):
  """Inserts the keys of public set `src` into `dst` (room for them is the
  caller's); returns how many were in dst already (public states two
  workers both met: merging public states)."""
  mask = dst.shape[0] - 1
  dup = 0
  for s in range(src.shape[0]):
    a = src[s, 0]
    if a == 0:
      continue
    t = np.int64(a & np.uint64(mask))
    while True:
      if dst[t, 0] == 0:
        dst[t, 0] = a
        dst[t, 1] = src[s, 1]
        break
      if dst[t, 0] == a and dst[t, 1] == src[s, 1]:
        dup += 1
        break
      t = (t + 1) & mask
  return dup


@njit(cache=True, error_model="numpy")
def fold_pending(tab, smap):
  """avg += pending; pending = 0 (fields S_AVG and S_PENDING of every row,
  in arena order)."""
  words, cells, header, fields, per_word, top, o = hashed.walk(tab)
  while o < top:
    c = hashed.width_of(words, o)
    base = hashed.first_cell(o, header, per_word)
    a = base + smap[S_AVG] * c
    q = base + smap[S_PENDING] * c
    for j in range(c):
      cells[a + j] += cells[q + j]
      cells[q + j] = 0.0
    o = hashed.next_row(words, o + hashed.row_words(c, header, fields,
                                                    per_word),
                        top, header, fields, per_word)
