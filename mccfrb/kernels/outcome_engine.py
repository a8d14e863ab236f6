"""Outcome-sampling MCCFR with baselines on a native engine (no tree).

The episode of kernels/outcome.py (`_episodes`, mode 0; Schmid et al.
2019, Eqs. 9-11; the thesis's Fig. 3.1), played by an engine
(mccfrb/games/engines/protocol.py) instead of read from a compiled tree, with
infoset rows found by the engine's 128-bit key in a hashed table
(tables/hashed.py). The arithmetic is the tree kernel's, operation for
operation, and so are the random draws (one uniform per node on the path,
the solver's PCG64 inline), so on a game that compiles a run on float64
rows equals the tree run with the same seed bit for bit
(tests/test_engine_solvers.py).

Variants are the tree kernel's integer codes. Baselines: 0 none, 1 thesis
(per update player and infoset), 3 learned (per infoset and action), both
in the infoset rows; 4 history and 5 predictive, per history and action
in a second hashed table keyed by the history (`engine_episodes`); the
oracle (6) needs the exact values of the whole game and is refused by the
solver. Averaging: 0 stochastic, 1 optimistic. regret_plus: RM+ with
linear averaging. Weighting: 0 none, 1 linear, 2 discounted (rows catch
up lazily, kernels/weighting.py).

Rows (tables/hashed.py) hold the fields `fmap` names: regrets (F_REGRET),
the average strategy's sums (F_AVG), and the baseline's values and counts
(F_BASE: the learned baseline's b(I, a), or the thesis baseline's for
update player p at F_BASE + p; F_COUNT: the learned running mean's visit
counts); header words: the row's stamp (the last iteration of its
optimistic average), DCFR's discount stamp (H_THROUGH) and the thesis
baseline's visit counts per update player (H_COUNT + p). The current
strategy sigma^t(I) is not stored: it is the regret matching of the
row's regrets, computed when the episode reaches the row (and kept along
the path for the way up), which is what a stored copy would hold.

Several episodes in flight (`in_flight` K > 1): the episodes of a group
of K are played down the tree in lockstep, one node of each in turn, and
the index slot of each next infoset is prefetched as soon as its key is
known, so the memory misses of K independent lookups overlap instead of
queueing; then their up passes run one after the other, in episode order.
Each down pass reads the tables as the group found them (the up passes of
earlier episodes of its group are not seen), as a batch does. Groups are
the episodes gK .. gK + K - 1, cut at a call's first and last episode, so
a run is reproducible for a given K, calls that start at multiples of K
episodes compose (run(a); run(b) equals run(a + b) when 2a is a multiple
of K), and K = 1 is the one-by-one run.

Threads (Hogwild, `hogwild_episodes`): workers run their own episodes,
each from its own counter-based random stream, against the shared tables
with no locks: increments may be lost to races, new rows are inserted
atomically (tables/hashed.py). Not reproducible run to run.
"""

import numba
import numpy as np
from numba import njit
from numba import prange

from mccfrb.games.engines import protocol
from mccfrb.games.engines.common import hash_step
from mccfrb.kernels.outcome import averaged
from mccfrb.kernels.outcome import sample_index
from mccfrb.kernels.rng import batch_key
from mccfrb.kernels.rng import pcg64_next
from mccfrb.kernels.rng import stream_start
from mccfrb.kernels.rng import stream_uniform
from mccfrb.kernels.rows import catch_up
from mccfrb.kernels.rows import match_into
from mccfrb.kernels.rows import count_store
from mccfrb.kernels.rows import flush_counts
from mccfrb.kernels.threads import parallel_phases
from mccfrb.kernels.weighting import iteration_weight
from mccfrb.kernels.weighting import linear_skipped
from mccfrb.tables import hashed
from mccfrb.tables.atomics import atomic_add
from mccfrb.tables.atomics import borrow
from mccfrb.tables.atomics import prefetch

# fmap (int64[FMAP_SIZE]): where the kernel finds its fields and header
# words in the infoset rows (-1: absent), and in the history rows.
F_REGRET = 0
F_AVG = 1
F_BASE = 2
F_COUNT = 3
H_THROUGH = 4
H_COUNT = 5
F_HISTORY_VALUE = 6
F_HISTORY_COUNT = 7
FMAP_SIZE = 8

STOP = hashed.STOP

# The running key of the empty history (history-keyed baselines).
HISTORY_SEED = (0x3C6EF372FE94F82B, 0xA54FF53A5F1D36F1)

# A Hogwild worker's arena block, in rows of the widest width.
BLOCK_ROWS = 64

# The steps of a node on the way down (`engine_episodes`).
ARRIVE = 0
LOCATE = 1
CONFIRM = 2
PLAY = 3


@njit(cache=True, inline="always")
def history_step(g1, g2, move):
  """The 128-bit key of a history extended by move index `move` (two
  independent running hashes, as engines key information states)."""
  return hash_step(g1, move), hash_step(g2, move ^ 0x5A5A5A5A)


@njit(cache=True, error_model="numpy")
def engine_episodes(code, params, utility_sum, tab, history, fmap,
                    baseline_kind, averaging, regret_plus, epsilon, decay,
                    first_iteration, first_episode, num_episodes,
                    allow_insert, allow_history, weighting, linear_until,
                    gamma, log_pos, log_neg, rng_state, key, worker, workers,
                    in_flight, state, path_row, path_info, path_reach,
                    path_probs, path_sigma, child_est, path_key, block,
                    claim):
  """Episodes first_episode .. num_episodes - 1 (worker w of W > 1: both
  episodes of the iterations it claims); tables change in place.

  Episode e updates player e % 2 at iteration t = first_iteration + e // 2.
  With one worker the uniforms come from the solver's PCG64 (`rng_state`,
  advanced in place), as the tree kernel draws them; with several, episode
  e draws from the stream `stream_start(key, e)`.

  Down the path the engine is played from its initial state; at a decision
  the row of the acting player's infoset is looked up (inserted on first
  visit while `allow_insert`; an infoset not stored plays uniform and is
  not updated) and sigma^t(I) computed from its regrets. Up the path,
  Schmid et al. 2019, Eqs. 9-10:
    u(h, a) = b(h, a) + (u(h a*) - b(h, a*)) / xi(h, a*)   if a = a*,
    u(h, a) = b(h, a)                                      otherwise,
    u(h) = sum_a sigma(h, a) u(h, a);
  at the update player's rows R_I(a) += pi_{-i}(h) / q(h) (u(h, a) - u(h))
  (Eq. 11 with Eq. 2), and the averages and baselines as kernels/outcome.py
  describes (stochastic or optimistic averaging, RM+, the thesis's, the
  learned, the history and the predictive baselines).

  The per-history baselines (kinds 4 history, 5 predictive; kernels/
  outcome.py keeps them per tree edge) are kept in `history`, a second
  hashed table whose row for history h (keyed by the running hash of h's
  move indices, `history_step`) holds b(h, a) for each move a, chance
  nodes included; rows are inserted on the way up while `allow_history`,
  and where a row is not stored b = 0 and nothing is learned there.

  Args:
    tab, history: (index, meta, words, cells, layout) of the infoset rows
      and of the history rows (tables/hashed.py; a stand-in unless kinds
      4 and 5), of one precision.
    fmap: int64[FMAP_SIZE], the fields and header words (module docstring).
    in_flight: K, episodes played down in lockstep (a Hogwild worker:
      max(K // 2, 1) iterations, both episodes each).
    state: int64[K, state size]; path_row, path_info: int64[K, D] (row
      offset and (player, count, action) packed as player + 2 | count << 8
      | action << 32); path_reach: float64[K, D, 4]; path_probs,
      path_sigma: float64[K, D, A] (chance probabilities and sigma^t on
      the path); child_est: float64[K, A]; path_key: uint64[K, D, 2]
      (history keys on the path, kinds 4 and 5): scratch, per episode in
      flight (one worker) or per worker (Hogwild; D: the engine's
      max_depth, A: its max_moves).
    block: this Hogwild worker's arena block (tables/hashed.py,
      BLOCK_SIZE), or empty (one worker).
    claim: int64[1] shared by the Hogwild workers, the next iteration to
      claim (atomic add), 0 at the start of a call; unused by one worker.
    Others: as kernels/outcome.py's `_episodes`.

  Returns:
    (the next episode this worker would run: num_episodes or beyond
    unless the table ran short of room with `allow_insert`, nodes touched,
    episodes run).
  """
  numba.literally(code)
  # Every array the loops touch, borrowed (tables/atomics.py): no atomic
  # reference counts in the hot loop.
  index, meta, words, cells, layout = hashed.borrowed(tab)
  h_index, h_meta, h_words, h_cells, h_layout = hashed.borrowed(history)
  fmap = borrow(fmap)
  params = borrow(params)
  log_pos = borrow(log_pos)
  log_neg = borrow(log_neg)
  state = borrow(state)
  path_row = borrow(path_row)
  path_info = borrow(path_info)
  path_reach = borrow(path_reach)
  path_key = borrow(path_key)
  child_est = borrow(child_est)
  block = borrow(block)
  max_depth = path_row.shape[1]
  max_moves = child_est.shape[1]
  per_history = baseline_kind == 4 or baseline_kind == 5
  header = layout[hashed.L_HEADER]
  per_word = layout[hashed.L_PER_WORD]
  h_header = h_layout[hashed.L_HEADER]
  h_per_word = h_layout[hashed.L_PER_WORD]
  f_regret = fmap[F_REGRET]
  f_avg = fmap[F_AVG]
  f_base = fmap[F_BASE]
  f_count = fmap[F_COUNT]
  h_through = fmap[H_THROUGH]
  h_count = fmap[H_COUNT]
  f_hvalue = fmap[F_HISTORY_VALUE]
  f_hcount = fmap[F_HISTORY_COUNT]
  widest = hashed.row_words(max_moves, header, layout[hashed.L_FIELDS],
                            per_word)
  h_widest = hashed.row_words(max_moves, h_header, h_layout[hashed.L_FIELDS],
                              h_per_word)
  atomic = workers > 1
  flight = in_flight
  # A Hogwild worker claims whole iterations, `per` at a time (its group in
  # flight: both episodes of each).
  per = max(flight // 2, 1)
  # Room for every worker's episodes and a fresh block of its own (whose
  # rows meta may not count yet).
  spare = block[2] if block.shape[0] > 0 else 0
  spare_rows = hashed.BLOCK_FLUSH if block.shape[0] > 0 else 0
  s_hi = rng_state[0]
  s_lo = rng_state[1]
  inc_hi = rng_state[2]
  inc_lo = rng_state[3]
  acc = (0, 0.0, 0.0, 0)  # float32 cells' updates (rows.count_store).
  touched = 0
  # With W > 1 workers (Hogwild; first_episode 0), each worker claims the
  # next `per` iterations from the shared counter and runs both episodes
  # of each: each worker alternates the update player as one worker does,
  # and a worker the OS deschedules runs fewer iterations instead of
  # holding the others up at the end of the call.
  e = 2 * atomic_add(claim, 0, per) if workers > 1 else first_episode
  claimed = min(e + 2 * per, num_episodes)  # Hogwild: the claim's end.
  starts_claim = True
  ran = 0
  # Rows a worker may take before its next check: its group's paths (a
  # Hogwild worker's whole claim, checked when it starts, so that a
  # claimed iteration always runs whole).
  per_check = max_depth * (2 * per if workers > 1 else flight)
  # This worker's rows of the per-episode scratch.
  wk = np.int64(worker) * flight if workers > 1 else np.int64(0)
  # Views of borrowed arrays (episode states, below) cost no reference
  # counts; sigma and the chance probabilities are read through flat views.
  flat_sigma = borrow(path_sigma.reshape(path_sigma.size))
  flat_probs = borrow(path_probs.reshape(path_probs.size))
  no_block = block[:0]
  depth = np.zeros(flight, dtype=np.int64)
  step = np.zeros(flight, dtype=np.int64)
  keys = np.zeros((flight, 2), dtype=np.uint64)
  slots = np.zeros(flight, dtype=np.int64)
  streams = np.zeros(flight, dtype=np.uint64)  # Hogwild: each episode's.
  while e < num_episodes:
    if workers == 1 or starts_claim:
      if allow_insert and not hashed.has_room(
          meta, index, workers * (per_check + spare_rows),
          workers * (per_check * widest + spare)):
        meta[STOP] = 1
        break
      if allow_history and not hashed.has_room(
          h_meta, h_index, workers * per_check,
          workers * per_check * h_widest):
        meta[STOP] = 1
        break
      if workers > 1 and meta[STOP] != 0:
        break
    if workers > 1:  # The next episodes of the claim, K at most.
      group = min(flight, claimed - e)
    else:
      # Groups are episodes gK .. gK + K - 1 (cut at the call's ends), so
      # that runs split at multiples of K episodes equal one run.
      group = min(flight - (2 * (first_iteration - 1) + e) % flight,
                  num_episodes - e)
    # Down: the group's episodes in lockstep. A node takes four steps:
    # arrive (its key, and a prefetch of its index slot), locate (the slot
    # whose tag matches, and a prefetch of the row it names), confirm (the
    # row's key; an insert if the key has none) and play (sigma^t, the
    # sample, the move); with K > 1 each episode takes one step per turn,
    # so that the misses of the K lookups overlap; with K = 1 the four
    # follow at once.
    for k in range(group):
      x = wk + k
      protocol.reset(code, params, state[x])
      depth[k] = 0
      step[k] = ARRIVE
      for f in range(4):
        path_reach[x, 0, f] = 1.0
      path_key[x, 0, 0] = np.uint64(HISTORY_SEED[0])
      path_key[x, 0, 1] = np.uint64(HISTORY_SEED[1])
    live = group
    while live > 0:
      for k in range(group):
        x = wk + k
        d = depth[k]
        if d < 0:
          continue
        st = state[x]
        ee = e + k
        while True:
          if step[k] == ARRIVE:
            p = protocol.player(code, params, st)
            if p == protocol.TERMINAL:
              depth[k] = -1 - d
              live -= 1
              break
            path_info[x, d] = (p + 2) | (protocol.num_moves(
                code, params, st) << 8)
            if p == protocol.CHANCE:
              path_row[x, d] = -1
              step[k] = PLAY
              continue
            h1, h2 = protocol.infoset_hash(code, params, st, p)
            keys[k, 0] = h1
            keys[k, 1] = h2
            step[k] = LOCATE
            if flight > 1:
              hashed.slot_hint(index, h1)
              break
          if step[k] == LOCATE:
            s = hashed.candidate(index, keys[k, 1],
                                 hashed.home_slot(index, keys[k, 0]))
            slots[k] = s
            step[k] = CONFIRM
            if flight > 1:
              e_at = index[s]
              if e_at != 0:  # The row the index names: read it next turn.
                o = np.int64(e_at & np.uint64(hashed.OFFSET_MASK))
                prefetch(words, o)
                prefetch(words, o + widest - 1)
                break
          if step[k] == CONFIRM:
            c = (path_info[x, d] >> 8) & 0xFFFFFF
            o, _ = hashed.row_at(index, meta, words, cells, layout,
                                 keys[k, 0], keys[k, 1], c, allow_insert,
                                 block, atomic, slots[k])
            path_row[x, d] = o
            step[k] = PLAY
          # PLAY.
          info = path_info[x, d]
          p = (info & 255) - 2
          c = (info >> 8) & 0xFFFFFF
          o = path_row[x, d]
          update_player = ee % 2
          t = first_iteration + ee // 2
          if workers > 1:
            if d == 0:
              streams[k] = stream_start(key, ee)
            streams[k], u = stream_uniform(streams[k])
          else:
            s_hi, s_lo, u = pcg64_next(s_hi, s_lo, inc_hi, inc_lo)
          my_reach = path_reach[x, d, 0]
          opp_reach = path_reach[x, d, 1]
          opp_own_reach = path_reach[x, d, 2]
          sample_reach = path_reach[x, d, 3]
          at = (x * max_depth + d) * max_moves
          if p == protocol.CHANCE:
            for j in range(c):
              flat_probs[at + j] = protocol.chance_prob(code, params, st, j)
            a = sample_index(flat_probs, at, c, u, 0.0)
            sig = flat_probs[at + a]
            opp_reach *= sig
            sample_reach *= sig
          else:
            if o >= 0:
              start = hashed.first_cell(o, header, per_word) + f_regret * c
              if weighting == 2:
                catch_up(cells, start, c, words, o + h_through, t, log_pos,
                         log_neg)
              match_into(cells, start, c, flat_sigma, at)
              if p == update_player:
                a = sample_index(flat_sigma, at, c, u, epsilon)
              else:
                a = sample_index(flat_sigma, at, c, u, 0.0)
              sig = flat_sigma[at + a]
            else:  # Not stored: uniform.
              for j in range(c):
                flat_sigma[at + j] = 1.0 / c
              a = min(int(u * c), c - 1)
              sig = 1.0 / c
            if p == update_player:
              my_reach *= sig
              sample_reach *= epsilon / c + (1.0 - epsilon) * sig
            else:
              opp_reach *= sig
              opp_own_reach *= sig
              sample_reach *= sig
          path_info[x, d] = info | (np.int64(a) << 32)
          if per_history and d + 1 < max_depth:
            g1, g2 = history_step(path_key[x, d, 0], path_key[x, d, 1], a)
            path_key[x, d + 1, 0] = g1
            path_key[x, d + 1, 1] = g2
          protocol.apply(code, params, st, a)
          d += 1
          depth[k] = d
          if d < max_depth:
            path_reach[x, d, 0] = my_reach
            path_reach[x, d, 1] = opp_reach
            path_reach[x, d, 2] = opp_own_reach
            path_reach[x, d, 3] = sample_reach
          step[k] = ARRIVE
          if flight > 1:
            break
    # Up: one episode after the other, in episode order.
    for k in range(group):
      x = wk + k
      ee = e + k
      update_player = ee % 2
      t = first_iteration + ee // 2
      avg_w = iteration_weight(weighting, t, linear_until, gamma)
      regret_w = avg_w if weighting == 1 else 1.0
      if regret_plus:
        avg_w = float(t)
      ep_depth = -1 - depth[k]
      u0 = protocol.returns0(code, params, state[x])
      value = u0 if update_player == 0 else utility_sum - u0
      # The predictive baseline's v'(h a*) under sigma^{t+1}, in the update
      # player's utility (kernels/outcome.py).
      predicted = value
      predictive = baseline_kind == 5
      offset = 0.0
      sign = 1.0
      if update_player == 1 and baseline_kind != 1:
        offset = utility_sum
        sign = -1.0
      for d in range(ep_depth - 1, -1, -1):
        info = path_info[x, d]
        p = (info & 255) - 2
        c = (info >> 8) & 0xFFFFFF
        a_s = info >> 32
        o = path_row[x, d]
        chance = p == protocol.CHANCE
        mine = p == update_player and o >= 0
        first = hashed.first_cell(o, header, per_word) if o >= 0 else 0
        at = (x * max_depth + d) * max_moves
        # The baseline's cells of b(h, 0): in the infoset row (kinds 1, 3),
        # or in the history's row (kinds 4, 5); -1: b = 0.
        bstart = -1
        bcells = cells
        if o >= 0 and (baseline_kind == 1 or baseline_kind == 3):
          bstart = first + f_base * c
          if baseline_kind == 1:
            bstart += update_player * c
        elif per_history:
          ho, _ = hashed.row_of(h_index, h_meta, h_words, h_cells, h_layout,
                                path_key[x, d, 0], path_key[x, d, 1], c,
                                allow_history, no_block, atomic)
          if ho >= 0:
            bstart = hashed.first_cell(ho, h_header, h_per_word) + (
                f_hvalue * c)
            bcells = h_cells
        if chance:
          xi_s = flat_probs[at + a_s]
        elif o < 0:
          xi_s = 1.0 / c
          if p == update_player:
            xi_s = epsilon / c + (1.0 - epsilon) * xi_s
        elif mine:
          xi_s = epsilon / c + (1.0 - epsilon) * flat_sigma[at + a_s]
        else:
          xi_s = flat_sigma[at + a_s]
        if predictive:
          stored = offset + sign * predicted
          back = offset + sign * stored
          predicted = 0.0
        b_s = 0.0
        if bstart >= 0:
          b_s = offset + sign * np.float64(bcells[bstart + a_s])
        corrected = b_s + (value - b_s) / xi_s
        est = 0.0
        for j in range(c):
          ce = 0.0
          if bstart >= 0:
            ce = offset + sign * np.float64(bcells[bstart + j])
          if chance:
            sj = flat_probs[at + j]
          else:
            sj = flat_sigma[at + j]
          if predictive and not mine:
            predicted += sj * (back if j == a_s else ce)
          ce = corrected if j == a_s else ce
          child_est[x, j] = ce
          est += sj * ce
        if mine:
          weight = path_reach[x, d, 1] / path_reach[x, d, 3]
          rstart = first + f_regret * c
          for j in range(c):
            inc = regret_w * (weight * (child_est[x, j] - est))
            old = cells[rstart + j]
            rr = old + inc
            if regret_plus and rr < 0.0:
              rr = 0.0
            cells[rstart + j] = rr
            acc = count_store(acc, cells, rstart + j, old, rr - old)
          if averaging == 0:
            astart = first + f_avg * c
            for j in range(c):
              inc = avg_w * (path_reach[x, d, 0] * flat_sigma[at + j]
                             / path_reach[x, d, 3])
              old = cells[astart + j]
              cells[astart + j] = old + inc
              acc = count_store(acc, cells, astart + j, old, inc)
          if predictive:  # sigma^{t+1}(I), for the predicted values.
            match_into(cells, rstart, c, flat_sigma, at)
        elif not chance and o >= 0 and averaging == 1:
          last = hashed.stamp_of(words, o)
          if last < t:  # Always, but for Hogwild workers' races.
            if regret_plus:
              weight = linear_skipped(t, last) * path_reach[x, d, 2]
            else:
              weight = (t - last) * path_reach[x, d, 2]
            astart = first + f_avg * c
            for j in range(c):
              inc = weight * flat_sigma[at + j]
              old = cells[astart + j]
              cells[astart + j] = old + inc
              acc = count_store(acc, cells, astart + j, old, inc)
            hashed.set_stamp(words, o, t)
        if bstart >= 0 and not predictive:
          if baseline_kind == 1:
            target = child_est[x, a_s]
            at = o + h_count + update_player
            count = np.float64(words[at])
            bcells[bstart + a_s] = averaged(
                np.float64(bcells[bstart + a_s]), count, target, decay)
            words[at] += 1
          else:
            target = offset + sign * value
            cstart = bstart + (f_count - f_base) * c
            if baseline_kind != 3:
              cstart = bstart + (f_hcount - f_hvalue) * c
            if decay > 0.0:
              count = 0.0
            else:
              count = np.float64(bcells[cstart + a_s])
            bcells[bstart + a_s] = averaged(
                np.float64(bcells[bstart + a_s]), count, target, decay)
            if decay <= 0.0:
              bcells[cstart + a_s] = count + 1.0
        if predictive:
          if bstart >= 0:
            bcells[bstart + a_s] = stored
          if mine:
            for j in range(c):
              predicted += flat_sigma[at + j] * (
                  back if j == a_s else child_est[x, j])
        value = est
      if predictive:  # The reset pass, as kernels/outcome.py counts it.
        touched += ep_depth
      touched += ep_depth + 1
      ran += 1
    e += group
    starts_claim = False
    if workers > 1 and e >= claimed:
      e = 2 * atomic_add(claim, 0, per)
      claimed = min(e + 2 * per, num_episodes)
      starts_claim = True
  if workers == 1:
    rng_state[0] = s_hi
    rng_state[1] = s_lo
  hashed.flush_block(meta, block)
  flush_counts(meta, acc)
  return e, touched, ran


@njit(cache=True, error_model="numpy", parallel=parallel_phases())
def hogwild_episodes(code, params, utility_sum, tab, history, fmap,
                     baseline_kind, averaging, regret_plus, epsilon, decay,
                     first_iteration, num_episodes, allow_insert,
                     allow_history, weighting, linear_until, gamma, log_pos,
                     log_neg, rng_state, workers, in_flight, state, path_row,
                     path_info, path_reach, path_probs, path_sigma, child_est,
                     path_key, blocks, done):
  """`engine_episodes` on `workers` threads at once, lock-free (Hogwild):
  each worker claims iterations from a shared counter (max(in_flight // 2,
  1) at a time, in flight together) and runs both of their episodes, each
  episode drawing from its own stream (keyed by the
  episode's index) under one key drawn from `rng_state`, and taking new
  rows from its own arena block, blocks[w] (int64[W, BLOCK_SIZE],
  tables/hashed.py; kept from call to call); done[w] is the number of
  episodes worker w ran (all of its share unless the table ran short of
  room, which stops every worker).

  Returns:
    Nodes touched.
  """
  numba.literally(code)
  key = batch_key(rng_state)
  meta = tab[1]
  meta[STOP] = 0
  touched = 0
  claim = np.zeros(1, dtype=np.int64)
  for w in prange(workers):
    _, nodes, ran = engine_episodes(
        code, params, utility_sum, tab, history, fmap, baseline_kind,
        averaging, regret_plus, epsilon, decay, first_iteration, 0,
        num_episodes, allow_insert, allow_history, weighting, linear_until,
        gamma, log_pos, log_neg, rng_state, key, w, workers, in_flight,
        state,
        path_row, path_info, path_reach, path_probs, path_sigma, child_est,
        path_key, blocks[w], claim)
    done[w] = ran
    touched += nodes
  return touched
