"""Outcome-sampling MCCFR with baselines on a native engine (no tree).

The episode of kernels/outcome.py (`_episodes`, mode 0; Schmid et al.
2019, Eqs. 9-11; the thesis's Fig. 3.1), played by an engine
(mccfrb/games/engines/protocol.py) instead of read from a compiled tree, with
infoset rows found by the engine's 128-bit key in a growing hash table
(kernels/table.py). The arithmetic is the tree kernel's, operation for
operation, and so are the random draws (one uniform per node on the path,
the solver's PCG64 inline), so on a game that compiles a run equals the
tree run with the same seed bit for bit (tests/test_engine_solvers.py).

Variants are the tree kernel's integer codes. Baselines: 0 none, 1 thesis
(per update player and infoset), 3 learned (per infoset and action), both
in the infoset tables; 4 history and 5 predictive, per history and action
in a second hash table keyed by the history (`engine_episodes`); the oracle
(6) needs the exact values of the whole game and is refused by the solver.
Averaging: 0 stochastic, 1 optimistic. regret_plus: RM+ with linear
averaging. Weighting: 0 none, 1 linear, 2 discounted (rows catch up
lazily, kernels/weighting.py).

Threads (Hogwild, `hogwild_episodes`): workers run their own episodes,
each from its own counter-based random stream, against the shared tables
with no locks: increments may be lost to races, new rows are inserted
atomically (kernels/table.py). Not reproducible run to run.

Tables (kernels/table.py, solvers/tables.py): row r owns cells
row_start[r] .. + row_actions[r] - 1 of `regrets`, `strategy` (sigma^t,
regret matching of the row), `avg` and the 2-d `baseline` (column 0 for the
learned baseline, column p for the thesis baseline of update player p) and,
per cell, the learned baseline's `baseline_count` (column 0); the thesis
baseline counts visits per row and update player, baseline_count[r, p].
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
from mccfrb.kernels.table import ROWS
from mccfrb.kernels.table import CELLS
from mccfrb.kernels.table import match_cells
from mccfrb.kernels.table import row_of
from mccfrb.kernels.table import BLOCK_ROWS
from mccfrb.kernels.table import atomic_add
from mccfrb.kernels.table import reserve_row_of
from mccfrb.kernels.weighting import iteration_weight
from mccfrb.kernels.weighting import linear_skipped

STOP = 3  # meta[STOP] = 1: a worker found the table short of room.


@njit(cache=True, error_model="numpy")
def catch_up_cells(regrets, start, count, through, row, t, log_pos, log_neg):
  """kernels/weighting.py's `catch_up` for one row of flat cells."""
  d = through[row]
  if d < t - 1:
    fp = np.exp(log_pos[t - 1] - log_pos[d])
    fn = np.exp(log_neg[t - 1] - log_neg[d])
    for j in range(count):
      r = regrets[start + j]
      regrets[start + j] = r * fp if r >= 0.0 else r * fn
    through[row] = t - 1


@njit(cache=True, error_model="numpy")
def has_room(meta, row_start, regrets, slot_row, margin_rows, margin_cells):
  """True while `margin_rows` more rows and `margin_cells` cells fit, with
  the hash table at most half full (`regrets`: any table of one entry per
  cell)."""
  rows = meta[ROWS] + margin_rows
  return (rows <= row_start.shape[0] and 2 * rows <= slot_row.shape[0]
          and meta[CELLS] + margin_cells <= regrets.shape[0])


# The running key of the empty history (history-keyed baselines).
HISTORY_SEED = (0x3C6EF372FE94F82B, 0xA54FF53A5F1D36F1)


@njit(cache=True, inline="always")
def history_step(g1, g2, move):
  """The 128-bit key of a history extended by move index `move` (two
  independent running hashes, as engines key information states)."""
  return hash_step(g1, move), hash_step(g2, move ^ 0x5A5A5A5A)


@njit(cache=True, error_model="numpy")
def engine_episodes(code, params, utility_sum, keys, slot_row, meta,
                    row_start, row_actions, avg_last, through, regrets,
                    strategy, avg, baseline, baseline_count, history,
                    baseline_kind, averaging, regret_plus, epsilon, decay,
                    first_iteration, first_episode, num_episodes,
                    allow_insert, allow_history, weighting, linear_until,
                    gamma, log_pos, log_neg, rng_state, key, worker, workers,
                    state, path_row, path_info, path_reach, path_probs,
                    child_est, path_key, block, claim):
  """Episodes first_episode .. num_episodes - 1 (worker w of W > 1: both
  episodes of every W-th iteration from iteration w); tables change in
  place.

  Episode e updates player e % 2 at iteration t = first_iteration + e // 2.
  With one worker the uniforms come from the solver's PCG64 (`rng_state`,
  advanced in place), as the tree kernel draws them; with several, episode
  e draws from the stream `stream_start(key, e)`.

  Down the path the engine is played from its initial state; at a decision
  the row of the acting player's infoset is looked up (inserted on first
  visit while `allow_insert`; an infoset not stored plays uniform and is
  not updated). Up the path, Schmid et al. 2019, Eqs. 9-10:
    u(h, a) = b(h, a) + (u(h a*) - b(h, a*)) / xi(h, a*)   if a = a*,
    u(h, a) = b(h, a)                                      otherwise,
    u(h) = sum_a sigma(h, a) u(h, a);
  at the update player's rows R_I(a) += pi_{-i}(h) / q(h) (u(h, a) - u(h))
  (Eq. 11 with Eq. 2), and the averages and baselines as kernels/outcome.py
  describes (stochastic or optimistic averaging, RM+, the thesis's, the
  learned, the history and the predictive baselines).

  The per-history baselines (kinds 4 history, 5 predictive; kernels/
  outcome.py keeps them per tree edge) are kept in `history`, a second
  hash table whose row for history h (keyed by the running hash of h's
  move indices, `history_step`) holds b(h, a) for each move a, chance
  nodes included; rows are inserted on the way up while `allow_history`,
  and where a row is not stored b = 0 and nothing is learned there.

  Args:
    history: (keys, slot_row, meta, row_start, row_actions, values float64
      [C, 1], counts int64[C, 1]) of the history table (kinds 4 and 5;
      stand-ins otherwise; counts for kind 4 only).
    state: int64[W, state size]; path_row, path_info: int64[W, D] (row and
      (player, count, action) packed as player + 4 (count + 1 << 20 ...));
      path_reach: float64[W, D, 4]; path_probs: float64[W, D, A] (chance
      probabilities on the path); child_est: float64[W, A]; path_key:
      uint64[W, D, 2] (history keys on the path, kinds 4 and 5): each
      worker's scratch (D: the engine's max_depth, A: its max_moves).
    block: this Hogwild worker's block of rows and cells
      (kernels/table.py, BLOCK_ROWS), or empty (one worker).
    claim: int64[1] shared by the Hogwild workers, the next iteration to
      claim (atomic add), 0 at the start of a call; unused by one worker.
    Others: as kernels/outcome.py's `_episodes`.

  Returns:
    (the next episode this worker would run: num_episodes or beyond
    unless the table ran short of room with `allow_insert`, nodes touched,
    episodes run).
  """
  numba.literally(code)
  max_depth = path_row.shape[1]
  max_moves = child_est.shape[1]
  per_history = baseline_kind == 4 or baseline_kind == 5
  # Room for every worker's episode and a fresh block of its own.
  spare_rows = BLOCK_ROWS if block.shape[0] > 0 else 0
  spare_cells = block[4] if block.shape[0] > 0 else 0
  h_keys, h_slot_row, h_meta, h_row_start, h_row_actions, h_values, h_counts = (
      history)
  s_hi = rng_state[0]
  s_lo = rng_state[1]
  inc_hi = rng_state[2]
  inc_lo = rng_state[3]
  touched = 0
  st = state[worker]
  # With W > 1 workers (Hogwild; first_episode 0), each worker claims the
  # next iteration from the shared counter and runs both of its episodes:
  # each worker alternates the update player as one worker does, and a
  # worker the OS deschedules runs fewer iterations instead of holding
  # the others up at the end of the call.
  e = 2 * atomic_add(claim, 0, 1) if workers > 1 else first_episode
  ran = 0
  # Rows a worker may take before its next check: one episode's path, or
  # with Hogwild a whole iteration's two (checked at its start, so a
  # claimed iteration always runs both episodes).
  per_check = max_depth if workers == 1 else 2 * max_depth
  while e < num_episodes:
    if workers == 1 or e % 2 == 0:
      if allow_insert and not has_room(meta, row_start, regrets, slot_row,
                                       workers * (per_check + spare_rows),
                                       workers * (per_check * max_moves
                                                  + spare_cells)):
        meta[STOP] = 1
        break
      if allow_history and not has_room(
          h_meta, h_row_start, h_values[:, 0], h_slot_row,
          workers * per_check, workers * per_check * max_moves):
        meta[STOP] = 1
        break
      if workers > 1 and meta[STOP] != 0:
        break
    update_player = e % 2
    t = first_iteration + e // 2
    avg_w = iteration_weight(weighting, t, linear_until, gamma)
    regret_w = avg_w if weighting == 1 else 1.0
    if regret_plus:
      avg_w = float(t)
    rstream = stream_start(key, e)
    protocol.reset(code, params, st)
    g1 = np.uint64(HISTORY_SEED[0])
    g2 = np.uint64(HISTORY_SEED[1])
    d = 0
    my_reach = 1.0
    opp_reach = 1.0
    opp_own_reach = 1.0
    sample_reach = 1.0
    while True:
      p = protocol.player(code, params, st)
      if p == protocol.TERMINAL:
        break
      path_reach[worker, d, 0] = my_reach
      path_reach[worker, d, 1] = opp_reach
      path_reach[worker, d, 2] = opp_own_reach
      path_reach[worker, d, 3] = sample_reach
      c = protocol.num_moves(code, params, st)
      if workers > 1:
        rstream, u = stream_uniform(rstream)
      else:
        s_hi, s_lo, u = pcg64_next(s_hi, s_lo, inc_hi, inc_lo)
      row = -1
      if p == protocol.CHANCE:
        probs = path_probs[worker, d]
        for j in range(c):
          probs[j] = protocol.chance_prob(code, params, st, j)
        a = sample_index(probs, 0, c, u, 0.0)
        sig = probs[a]
        opp_reach *= sig
        sample_reach *= sig
      else:
        h1, h2 = protocol.infoset_hash(code, params, st, p)
        row, _ = reserve_row_of(keys, slot_row, meta, row_start,
                                row_actions, strategy, h1, h2, c,
                                allow_insert, block)
        if row >= 0:
          start = row_start[row]
          if weighting == 2:
            catch_up_cells(regrets, start, c, through, row, t, log_pos,
                           log_neg)
            match_cells(regrets, strategy, start, c)
          if p == update_player:
            a = sample_index(strategy, start, c, u, epsilon)
          else:
            a = sample_index(strategy, start, c, u, 0.0)
          sig = strategy[start + a]
        else:  # Not stored: uniform.
          a = min(int(u * c), c - 1)
          sig = 1.0 / c
        if p == update_player:
          my_reach *= sig
          sample_reach *= epsilon / c + (1.0 - epsilon) * sig
        else:
          opp_reach *= sig
          opp_own_reach *= sig
          sample_reach *= sig
      path_row[worker, d] = row
      path_info[worker, d] = (p + 2) | (c << 8) | (a << 32)
      if per_history:
        path_key[worker, d, 0] = g1
        path_key[worker, d, 1] = g2
        g1, g2 = history_step(g1, g2, a)
      protocol.apply(code, params, st, a)
      d += 1
    depth = d
    u0 = protocol.returns0(code, params, st)
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
    for d in range(depth - 1, -1, -1):
      info = path_info[worker, d]
      p = (info & 255) - 2
      c = (info >> 8) & 0xFFFFFF
      a_s = info >> 32
      row = path_row[worker, d]
      chance = p == protocol.CHANCE
      mine = p == update_player and row >= 0
      start = row_start[row] if row >= 0 else 0
      base = -1
      bcol = update_player if baseline_kind == 1 else 0
      bvalues = baseline
      bcounts = baseline_count
      if row >= 0 and (baseline_kind == 1 or baseline_kind == 3):
        base = start
      elif per_history:
        hrow, _ = row_of(h_keys, h_slot_row, h_meta, h_row_start,
                         h_row_actions, path_key[worker, d, 0],
                         path_key[worker, d, 1], c, allow_history)
        if hrow >= 0:
          base = h_row_start[hrow]
          bvalues = h_values
          bcounts = h_counts
      if chance:
        xi_s = path_probs[worker, d, a_s]
      elif row < 0:
        xi_s = 1.0 / c
        if p == update_player:
          xi_s = epsilon / c + (1.0 - epsilon) * xi_s
      elif mine:
        xi_s = epsilon / c + (1.0 - epsilon) * strategy[start + a_s]
      else:
        xi_s = strategy[start + a_s]
      if predictive:
        stored = offset + sign * predicted
        back = offset + sign * stored
        predicted = 0.0
      b_s = 0.0
      if base >= 0:
        b_s = offset + sign * bvalues[base + a_s, bcol]
      corrected = b_s + (value - b_s) / xi_s
      est = 0.0
      for j in range(c):
        ce = 0.0
        if base >= 0:
          ce = offset + sign * bvalues[base + j, bcol]
        if chance:
          sj = path_probs[worker, d, j]
        elif row < 0:
          sj = 1.0 / c
        else:
          sj = strategy[start + j]
        if predictive and not mine:
          predicted += sj * (back if j == a_s else ce)
        ce = corrected if j == a_s else ce
        child_est[worker, j] = ce
        est += sj * ce
      if mine:
        weight = path_reach[worker, d, 1] / path_reach[worker, d, 3]
        for j in range(c):
          x = weight * (child_est[worker, j] - est)
          rr = regrets[start + j] + regret_w * x
          if regret_plus and rr < 0.0:
            rr = 0.0
          regrets[start + j] = rr
        if averaging == 0:
          for j in range(c):
            avg[start + j] += avg_w * (path_reach[worker, d, 0]
                                       * strategy[start + j]
                                       / path_reach[worker, d, 3])
        match_cells(regrets, strategy, start, c)  # sigma^{t+1}(I).
      elif not chance and row >= 0 and averaging == 1:
        last = avg_last[row]
        if last < t:  # Always, but for Hogwild workers' races.
          if regret_plus:
            weight = linear_skipped(t, last) * path_reach[worker, d, 2]
          else:
            weight = (t - last) * path_reach[worker, d, 2]
          for j in range(c):
            avg[start + j] += weight * strategy[start + j]
          avg_last[row] = t
      if base >= 0 and not predictive:
        if baseline_kind == 1:
          target = child_est[worker, a_s]
          cslot = row
        else:
          target = offset + sign * value
          cslot = base + a_s
        bvalues[base + a_s, bcol] = averaged(
            bvalues[base + a_s, bcol], bcounts[cslot, bcol], target, decay)
        bcounts[cslot, bcol] += 1
      if predictive:
        if base >= 0:
          bvalues[base + a_s, 0] = stored
        if mine:
          for j in range(c):
            predicted += strategy[start + j] * (
                back if j == a_s else child_est[worker, j])
      value = est
    if predictive:  # The reset pass, as kernels/outcome.py counts it.
      touched += depth
    touched += depth + 1
    ran += 1
    if workers > 1 and e % 2 == 1:
      e = 2 * atomic_add(claim, 0, 1)
    else:
      e += 1
  if workers == 1:
    rng_state[0] = s_hi
    rng_state[1] = s_lo
  return e, touched, ran


@njit(cache=True, error_model="numpy", parallel=True)
def hogwild_episodes(code, params, utility_sum, keys, slot_row, meta,
                     row_start, row_actions, avg_last, through, regrets,
                     strategy, avg, baseline, baseline_count, history,
                     baseline_kind, averaging, regret_plus, epsilon, decay,
                     first_iteration, num_episodes, allow_insert,
                     allow_history, weighting, linear_until, gamma, log_pos,
                     log_neg, rng_state, workers, state, path_row, path_info,
                     path_reach, path_probs, child_est, path_key, blocks,
                     done):
  """`engine_episodes` on `workers` threads at once, lock-free (Hogwild):
  each worker claims iterations from a shared counter and runs both of
  their episodes, each episode drawing from its own stream (keyed by the
  episode's index) under one key drawn from `rng_state`, and
  taking new rows from its own block, blocks[w] (int64[W, BLOCK_SIZE],
  kernels/table.py; zero the first time, kept from call to call: only the
  rows the last blocks leave unused stay gaps of width 0);
  done[w] is the number of episodes worker w ran (all of its share unless
  the table ran short of room, which stops every worker).

  Returns:
    Nodes touched.
  """
  numba.literally(code)
  key = batch_key(rng_state)
  meta[STOP] = 0
  touched = 0
  for w in range(workers):
    blocks[w, 4] = BLOCK_ROWS * child_est.shape[1]
  claim = np.zeros(1, dtype=np.int64)
  for w in prange(workers):
    _, nodes, ran = engine_episodes(
        code, params, utility_sum, keys, slot_row, meta, row_start,
        row_actions, avg_last, through, regrets, strategy, avg, baseline,
        baseline_count, history, baseline_kind, averaging, regret_plus,
        epsilon, decay, first_iteration, 0, num_episodes, allow_insert,
        allow_history, weighting, linear_until, gamma, log_pos, log_neg,
        rng_state, key, w, workers, state, path_row, path_info, path_reach,
        path_probs, child_est, path_key, blocks[w], claim)
    done[w] = ran
    touched += nodes
  return touched
