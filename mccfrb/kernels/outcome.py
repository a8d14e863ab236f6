"""Outcome-sampling MCCFR with baselines: one episode for every
representation and variant.

Equations cite Schmid et al. 2019 (VR-MCCFR, arXiv:1809.03057) and
Kuchař's thesis (2020, Fig. 3.1); see docs/pages/algorithms.md. `episodes`
is the one episode: its way up (the estimates, the regret and average
updates, the baselines' learning) is written once; the way down is the
representation's own, a compiled tree's (`game`: its node arrays and
dense float64 tables) or a native engine's (`eng`: the engine played from
its initial state, hashed rows found by the infoset's 128-bit key,
tables/hashed.py). numba prunes the branch of the representation not
given (None) before typing, so each compiles only its own code, and a
tree's code is a plain call from Python (an engine's `code` is made
literal inside the engine's branch only). On a game that compiles, an
engine run on float64 rows equals the tree run with the same seed bit for
bit (tests/test_engine_solvers.py, tests/test_compiled_engine.py).

Variants are integer codes:
  baseline_kind: 0 none, 1 thesis (direct or, with decay > 0, exponential
    average of the 1/xi-corrected value, per update player and infoset),
    3 learned (infoset-keyed average of the child estimate), 4 history (per
    edge of the history, chance included), 5 predictive (Davis et al.
    2020), 6 oracle (a tree's exact values under the current strategy,
    recomputed before each episode).
  averaging: 0 stochastic (OpenSpiel), 1 optimistic (Lanctot 2013 section 4,
    the thesis's choice).
  regret_plus: 0 regret matching, 1 regret matching+ (MCCFRb+,
    docs/pages/algorithms.md "MCCFRb+"): cumulative regrets are clipped at
    0 after every update and iteration t weighs t in the average strategy.
  weighting: 0 none, 1 linear, 2 discounted (rows catch up lazily,
    kernels/weighting.py and kernels/rows.py).

A tree's tables: regrets, the current strategy sigma^t (`strategy`,
regret matching of every row, recomputed right after a row's regrets
change) and the average's sums, float64[I, A]; baselines flat: the thesis
tables indexed (player, infoset, action) in that player's utility; the
other kinds in player 0's utility (the value for player 1 is utility_sum -
b), learned as (infoset, action), history, predictive and oracle by the id
of the child node the edge leads to. On general trees (more than two
players or general-sum: utility float64[N, P], kernels/exact.py `payoff`)
those kinds keep one block per player, each in its own player's utility,
player p's at p * stride (`baseline_stride`); an iteration is one episode
per player in player order, u(z) the update player's own return and pi_{-i}
the product of every other player's and chance's probabilities, as in
OpenSpiel's outcome_sampling_mccfr.py (with more than two players
averaging is stochastic only: optimistic averaging's pi_owner is the single
opponent's reach).

An engine's rows (tables/hashed.py) hold the fields `fmap` names: regrets
(F_REGRET), the average's sums (F_AVG), and the baseline's values and
counts (F_BASE: the learned baseline's b(I, a), or the thesis baseline's
for update player p at F_BASE + p; F_COUNT: the learned running mean's
counts); header words: the row's stamp (the last iteration of its
optimistic average), DCFR's discount stamp (H_THROUGH) and the thesis
baseline's visit counts per update player (H_COUNT + p). sigma^t(I) is not
stored: it is the regret matching of the row's regrets, computed when the
episode reaches the row and kept along the path for the way up. The
per-history baselines (kinds 4 and 5) are kept in a second hashed table
whose row for history h (keyed by the running hash of h's move indices,
`history_step`) holds b(h, a) for each move a; rows are inserted on the way
up while `allow_history`, and where one is not stored b = 0 and nothing is
learned there. The oracle (6) needs the whole game's exact values and is
refused by the solver.

Drivers:
  A tree's training and studies call `episodes` from Python, episodes one
    after the other, each updating the tables before the next starts.
  `run_batches` (a tree, threads): batches of iterations. Phase 1 runs the
    2B episodes of a batch in parallel (`records`) against the tables as
    they were at the batch start, episode k drawing from its own
    counter-based stream (SplitMix64 keyed by the batch's key and k), and
    writes its increments into record slots. Phase 2 applies them: rows are
    partitioned among the workers (row % workers), and each worker scans
    every record in episode order and applies those of its rows exactly as
    the sequential episodes would (RM+ clipping after each increment,
    optimistic averaging's catch-up, running means). Phase 3 resets the
    predictive baseline along every sampled path under sigma^{t+1}, one
    depth at a time, deepest first, in player 0's utility. The tables
    depend on the generator's state and the batch size, not on the number
    of workers.
  An engine's episodes in flight (`in_flight` K > 1): the episodes of a
    group of K are played down in lockstep, one node of each in turn, and
    the index slot of each next infoset is prefetched as soon as its key is
    known, so the memory misses of K independent lookups overlap; then
    their up passes run one after the other, in episode order. Each down
    pass reads the tables as the group found them. Groups are the episodes
    gK .. gK + K - 1, cut at a call's first and last episode, so a run is
    reproducible for a given K, calls that start at multiples of K episodes
    compose, and K = 1 is the one-by-one run (a tree's only).
  `hogwild_episodes` (an engine, threads): workers run their own episodes,
    each from its own counter-based random stream, against the shared
    tables with no locks: increments may be lost to races, new rows are
    inserted atomically (tables/hashed.py). Not reproducible run to run.

Perfect recall (OpenSpiel's information states) is assumed: an infoset
occurs at most once on a path, so sigma^t of a row still holds when the up
pass reaches it.
"""

import numba
import numpy as np
from numba import njit
from numba import prange

from mccfrb.games.engines import protocol
from mccfrb.games.engines.common import hash_step
from mccfrb.kernels.exact import borrowed_tree
from mccfrb.kernels.exact import node_values
from mccfrb.kernels.exact import payoff
from mccfrb.kernels.exact import player_values
from mccfrb.kernels.exact import players_of
from mccfrb.kernels.exact import regret_matching
from mccfrb.kernels.exact import regret_matching_row
from mccfrb.kernels.rng import batch_end
from mccfrb.kernels.rng import batch_key
from mccfrb.kernels.rng import pcg64_next
from mccfrb.kernels.rng import stream_start
from mccfrb.kernels.rng import stream_uniform
from mccfrb.kernels.rows import catch_up as catch_up_cells
from mccfrb.kernels.rows import count_store
from mccfrb.kernels.rows import flush_counts
from mccfrb.kernels.rows import match_into
from mccfrb.kernels.threads import parallel_phases
from mccfrb.kernels.weighting import borrowed_discounts
from mccfrb.kernels.weighting import catch_up
from mccfrb.kernels.weighting import iteration_weight
from mccfrb.kernels.weighting import linear_skipped
from mccfrb.tables import hashed
from mccfrb.tables.atomics import atomic_add
from mccfrb.tables.atomics import borrow
from mccfrb.tables.atomics import prefetch

# fmap (int64[FMAP_SIZE]): where the kernel finds its fields and header
# words in an engine's infoset rows (-1: absent), and in the history rows.
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

# The steps of a node on an engine's way down.
ARRIVE = 0
LOCATE = 1
CONFIRM = 2
PLAY = 3


@njit(cache=True, error_model="numpy")
def sample_index(probs, start, count, u, epsilon):
  """Inverse-CDF sampling of an index in [0, count) from `u`, under the
  probabilities xi(a) = epsilon / count + (1 - epsilon) probs[start + a]
  (epsilon = 0: probs itself, exactly).

  Never returns an index of probability 0, even when rounding leaves
  `u` above the cumulative sum.
  """
  uniform = epsilon / count
  cumulative = 0.0
  last_positive = -1
  for a in range(count):
    p = probs[start + a]
    if epsilon > 0.0:
      p = uniform + (1.0 - epsilon) * p
    if p > 0.0:
      last_positive = a
      cumulative += p
      if u < cumulative:
        return a
  return last_positive


@njit(cache=True, error_model="numpy")
def averaged(old, count, target, decay):
  """Running mean (decay <= 0: (b k + target) / (k + 1), thesis Fig. 3.1) or
  exponentially decaying average (1 - decay) b + decay target."""
  if decay > 0.0:
    return (1.0 - decay) * old + decay * target
  return (old * count + target) / (count + 1.0)


@njit(cache=True, error_model="numpy")
def baseline_stride(utility, baseline_kind, baseline):
  """The offset between two players' blocks of the baseline table: 0 (one
  table in player 0's utility) but for kinds 3-6 on general trees."""
  if utility.ndim == 1 or baseline_kind < 3:
    return 0
  return baseline.shape[0] // players_of(utility)


@njit(cache=True, error_model="numpy")
def baseline_base(baseline_kind, node_kind, infoset, child_start,
                  update_player, num_infosets, max_actions, stride):
  """Index into the flat baseline table of edge (node, action 0), -1 if b = 0.

  The edge of action j is at the returned index + j for every kind;
  `stride` (`baseline_stride`) selects the update player's block.
  """
  if baseline_kind == 0:
    return -1
  if baseline_kind == 1:
    if node_kind != 1:
      return -1
    return (update_player * num_infosets + infoset) * max_actions
  if baseline_kind == 3:
    if node_kind != 1:
      return -1
    return infoset * max_actions + update_player * stride
  return child_start + update_player * stride


@njit(cache=True, error_model="numpy")
def oracle_values(kind, player, infoset, child_start, num_children,
                  edge_prob, utility, utility_sum, strategy, baseline):
  """The oracle baseline (kind 6): every node's exact value under
  `strategy`, in player 0's utility, or on general trees every player's
  block in its own utility. Returns the nodes touched."""
  if utility.ndim == 1:
    node_values(kind, player, infoset, child_start, num_children,
                edge_prob, utility, strategy, baseline)
    return kind.shape[0]
  stride = baseline_stride(utility, 6, baseline)
  num_players = players_of(utility)
  for p in range(num_players):
    player_values(kind, player, infoset, child_start, num_children,
                  edge_prob, utility, utility_sum, p, strategy,
                  baseline[p * stride:(p + 1) * stride])
  return num_players * kind.shape[0]


@njit(cache=True, error_model="numpy")
def _learn_baseline(baseline, baseline_count, baseline_kind, slot, cslot,
                    target, decay):
  """One baseline update (thesis Fig. 3.1 for kind 1, with one visit counter
  per (update player, infoset) `cslot`; per slot for kinds 3 and 4)."""
  if baseline_kind != 1:
    cslot = slot
  baseline[slot] = averaged(baseline[slot], baseline_count[cslot], target,
                            decay)
  baseline_count[cslot] += 1


@njit(cache=True, error_model="numpy", inline="always")
def _learn_cells(bcells, slot, words, at, baseline_kind, count_offset,
                 target, decay):
  """One baseline update in an engine's cells (`_learn_baseline`'s
  arithmetic): the thesis baseline's visit count is the row's header word
  words[at]; the learned and history baselines' running-mean count is the
  cell `count_offset` after the value (none with decay > 0)."""
  if baseline_kind == 1:
    count = np.float64(words[at])
    bcells[slot] = averaged(np.float64(bcells[slot]), count, target, decay)
    words[at] += 1
  else:
    count = 0.0 if decay > 0.0 else np.float64(bcells[slot + count_offset])
    bcells[slot] = averaged(np.float64(bcells[slot]), count, target, decay)
    if decay <= 0.0:
      bcells[slot + count_offset] = count + 1.0


@njit(cache=True, inline="always")
def history_step(g1, g2, move):
  """The 128-bit key of a history extended by move index `move` (two
  independent running hashes, as engines key information states)."""
  return hash_step(g1, move), hash_step(g2, move ^ 0x5A5A5A5A)


@njit(cache=True, error_model="numpy")
def episodes(code, game, eng, history, utility_sum, codes, weights,
             first_iteration, first_episode, num_episodes, learn_baselines,
             rng_state, key, worker, workers, scratch, study, records,
             grown):
  """Outcome-sampling episodes first_episode .. num_episodes - 1 (the
  worker-th of `workers` contiguous blocks of them with `records`; an
  engine's Hogwild worker: both episodes of the iterations it claims);
  every table changes in place.

  Episode e updates player e % P at iteration t = first_iteration + e // P
  (P = 2 but on general trees), or at t = first_iteration throughout with
  `study`. Episodes start at the root, or, for the conditional variance
  (docs/pages/algorithms.md, "Measuring as the papers do"; Schmid et al.
  2019, Fig. 5), at a tree's decision node `start_node` > 0, and then
  update its player; reaches start at 1 there.

  Down: at every node sigma^t (a tree's `strategy` row; an engine's row's
  regret matching, uniform where an infoset is not stored, which is then
  not updated); the sampling policy xi is eps-uniform mixed with sigma at
  the update player's nodes, sigma at the opponent's and chance's
  probabilities at chance nodes; one uniform per node picks the action,
  from the solver's PCG64 (`rng_state`, advanced in place), or with
  `records` or several engine workers from the stream `stream_start(key,
  e)` of episode e.

  Up the path (Schmid et al. 2019, Eqs. 9-10), with u(z) = u_i(z):
    u(h, a) = b(h, a) + (u(h a*) - b(h, a*)) / xi(h, a*)   if a = a*,
    u(h, a) = b(h, a)                                      otherwise,
    u(h) = sum_a sigma(h, a) u(h, a);
  at the update player's rows (Eq. 11 with Eq. 2)
    R_I(a) += pi_{-i}(h) / q(h) * (u(h, a) - u(h));
  stochastic averaging adds pi_i(h) sigma(I, a) / q(h) there; optimistic
  averaging adds (t - c_I) pi_owner(h) sigma(I, a) at the opponent's rows
  and sets c_I = t. With regret_plus (RM+, Tammelin 2014; VR-MCCFR+ in
  Schmid et al. 2019) R_I <- max(R_I, 0) after the update, and the average
  is linear: stochastic increments weigh t, optimistic ones the skipped
  iterations' weights c_I + 1 + ... + t = (t (t + 1) - c_I (c_I + 1)) / 2.
  Then sigma^{t+1}(I) is the regret matching of the new regrets, and the
  baseline of the sampled edge is updated (after its use, so the estimate
  stays unbiased). The predictive baseline (Davis et al. 2020) is reset
  along the path under sigma^{t+1} in the same bottom-up pass, once a
  node's own update is done: b(h, a*) <- u'(h a*), u'(h) = sum_a
  sigma^{t+1}(h, a) b(h, a). With the oracle baseline (kind 6) a tree's
  `baseline` is refilled before every episode (once, with `study`) with the
  exact values under sigma^t.

  The way up reads a row through offsets, the same code for both
  representations: regrets at rcells[r0 + a], the average's sums at
  acells[a0 + a], sigma (or chance's probabilities) at pr[p0 + a], the
  baselines of the node's edges at bcells[b0 + a] (b0 < 0: b = 0).

  Args:
    code: an engine's code (a compile-time constant: call with
      games/engines/common.py's `call_literal`); unread on a tree (0, a
      plain integer: a plain call from Python).
    game: None on an engine, or a tree's (kind, player, infoset,
      child_start, num_children, edge_prob, utility, num_actions, regrets,
      strategy, avg, avg_last, baseline, baseline_count, through,
      start_node): regrets, strategy (sigma^t, kept so), avg float64[I, A],
      avg_last int64[I] (optimistic averaging's c_I); baseline,
      baseline_count flat (module docstring); through int64[I] (DCFR's
      stamps).
    eng: None on a tree, or (params, tab, fmap, allow_insert,
      allow_history, in_flight, state, path_probs, path_sigma, path_key,
      block, claim): the infoset rows' (index, meta, words, cells, layout)
      (tables/hashed.py); fmap int64[FMAP_SIZE] (module docstring);
      rows are inserted while `allow_insert`, history rows while
      `allow_history`; in_flight: K, episodes played down in lockstep (a
      Hogwild worker: max(K // 2, 1) iterations, both episodes each);
      state int64[K, state size]; path_probs, path_sigma float64[K, D, A]
      (chance's probabilities and sigma on the path); path_key uint64[K,
      D, 2] (history keys, kinds 4 and 5); block: a Hogwild worker's arena
      block (tables/hashed.py, BLOCK_SIZE), or empty; claim: int64[1]
      shared by the Hogwild workers, the next iteration to claim.
    history: an engine's per-history baselines' rows (index, meta, words,
      cells, layout), of the infoset rows' precision, with kinds 4 and 5;
      None otherwise (the lookups are then not compiled: 2 s of an
      engine's first use, BUILD_NOTES "Outcome sampling written once").
    codes: (baseline_kind, averaging, regret_plus, epsilon, decay).
    weights: (weighting, linear_until, gamma, log_pos, log_neg): regret
      increments weigh w_t = t (or min(t, linear_until)) if linear, average
      increments w_t or t^gamma; discounted rows catch up lazily before
      sigma is read (with `records`: in `_apply_records`).
    learn_baselines: False leaves the baseline tables untouched.
    key: the key of the episodes' streams (`records`, Hogwild).
    worker, workers: this worker w and their number W (0 and 1 but with
      `records` or Hogwild).
    scratch: (path_row, path_info, path_reach, child_est): int64[S, D]
      (a tree's node; an engine's row offset, -1 if not stored), int64[S,
      D] (a tree's action; an engine's player + 2 | count << 8 | action <<
      32), float64[S, D, 4] (the reaches: the update player's, the others',
      the opponent's own, the sampling's), float64[S, A]: slot x of an
      episode: the worker (a tree), its place in the group (an engine), or
      worker * K + its place (Hogwild).
    study: None, or a tree's frozen episodes (the tables but baselines stay
      untouched): (regret_sum, regret_sq, value_sum, value_sq,
      root_values, start_stats): the regret increments and the sampled
      counterfactual action values pi_{-i}(h) / q(h) u(h, a), with their
      squares (float64[I, A]), u(root) of episode e; start_stats
      float64[2, A + 1], or empty: if not empty, every episode adds the
      start node's estimates u(h, a) (column a) and u(h) (column A), in
      the update player's utility, to row 0 and their squares to row 1.
    records: None, or phase 1 of `run_batches`'s records (rec_depth,
      rec_node, rec_row, rec_value, rec_avg, rec_scalar, rec_target).
    grown: None, or a grown tree's (slot_node, grown_io, leaf_value)
      (games/grown.py): the child of node n by action a is
      slot_node[child_start[n] + a], -1 if not stored. grown_io int64[4],
      in: [0] the first episode, [2] a pending leaf slot (-1: none), whose
      player-0 value leaf_value[0] ends an episode that reaches it
      (consumed: set to -1); out: [0] the episode reached, [1] the empty
      slot that stopped it (-1 if every episode ran; the generator is left
      at that episode's start, no table changed) and [3] its depth
      (path_row[0, :depth], path_info[0, :depth] lead to it).

  Returns:
    (the next episode this worker would run: num_episodes or beyond unless
    an engine's table ran short of room or a grown tree's child is
    missing, nodes touched, episodes run).
  """
  path_row = borrow(scratch[0])
  path_info = borrow(scratch[1])
  path_reach = borrow(scratch[2])
  child_est = borrow(scratch[3])
  baseline_kind, averaging, regret_plus, epsilon, decay = codes
  weighting, linear_until, gamma, log_pos, log_neg = weights
  log_pos = borrow(log_pos)
  log_neg = borrow(log_neg)
  max_depth = path_row.shape[1]
  max_moves = child_est.shape[1]
  num_players = 2
  table_sum = True  # Baselines in player 0's utility (player 1: sum - b).
  start_node = 0
  flight = 1
  per_history = baseline_kind == 4 or baseline_kind == 5
  if game is not None:
    (kind, player, infoset, child_start, num_children, edge_prob, utility,
     num_actions, regrets, strategy, avg, avg_last, baseline, baseline_count,
     through, start_node) = game
    (kind, player, infoset, child_start, num_children, edge_prob,
     utility) = borrowed_tree(kind, player, infoset, child_start,
                              num_children, edge_prob, utility)
    num_actions = borrow(num_actions)
    regrets, through, log_pos, log_neg = borrowed_discounts(
        regrets, through, log_pos, log_neg)
    strategy = borrow(strategy)
    avg_last = borrow(avg_last)
    baseline = borrow(baseline)
    baseline_count = borrow(baseline_count)
    num_infosets = regrets.shape[0]
    width = regrets.shape[1]
    rcells = borrow(regrets.reshape(regrets.size))
    acells = borrow(avg.reshape(avg.size))
    scells = borrow(strategy.reshape(strategy.size))
    bcells = baseline
    num_players = players_of(utility)
    stride = baseline_stride(utility, baseline_kind, baseline)
    table_sum = utility.ndim == 1
  if study is not None:
    regret_sum, regret_sq, value_sum, value_sq, root_values, start_stats = (
        study)
  if records is not None:
    (rec_depth, rec_node, rec_row, rec_value, rec_avg, rec_scalar,
     rec_target) = records
  if grown is not None:
    slot_node, grown_io, leaf_value = grown
    slot_node = borrow(slot_node)
  if eng is not None:
    # An engine's code is a compile-time constant (a tree's is unread: a
    # plain integer, and the kernel a plain call from Python).
    numba.literally(code)
    (params, tab, fmap, allow_insert, allow_history, in_flight, state,
     path_probs, path_sigma, path_key, block, claim) = eng
    index, meta, words, cells, layout = hashed.borrowed(tab)
    fmap = borrow(fmap)
    params = borrow(params)
    state = borrow(state)
    path_key = borrow(path_key)
    block = borrow(block)
    rcells = cells
    acells = cells
    bcells = cells
    header = layout[hashed.L_HEADER]
    per_word = layout[hashed.L_PER_WORD]
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
    atomic = workers > 1
    flight = in_flight
    # A Hogwild worker claims whole iterations, `per` at a time (its group
    # in flight: both episodes of each).
    per = max(flight // 2, 1)
    # Room for every worker's episodes and a fresh block of its own (whose
    # rows meta may not count yet).
    spare = block[2] if block.shape[0] > 0 else 0
    spare_rows = hashed.BLOCK_FLUSH if block.shape[0] > 0 else 0
    # Rows a worker may take before its next check: its group's paths (a
    # Hogwild worker's whole claim, checked when it starts, so that a
    # claimed iteration always runs whole).
    per_check = max_depth * (2 * per if workers > 1 else flight)
    # Views of borrowed arrays (episode states, below) cost no reference
    # counts; sigma and the chance probabilities are read through flat
    # views.
    flat_sigma = borrow(path_sigma.reshape(path_sigma.size))
    flat_probs = borrow(path_probs.reshape(path_probs.size))
    no_block = block[:0]
    step = np.zeros(flight, dtype=np.int64)
    keys = np.zeros((flight, 2), dtype=np.uint64)
    slots = np.zeros(flight, dtype=np.int64)
    streams = np.zeros(flight, dtype=np.uint64)  # Hogwild: each episode's.
  if history is not None:
    h_index, h_meta, h_words, h_cells, h_layout = hashed.borrowed(history)
    h_header = h_layout[hashed.L_HEADER]
    h_per_word = h_layout[hashed.L_PER_WORD]
    h_widest = hashed.row_words(max_moves, h_header,
                                h_layout[hashed.L_FIELDS], h_per_word)
  depth = np.zeros(flight, dtype=np.int64)
  s_hi = rng_state[0]
  s_lo = rng_state[1]
  inc_hi = rng_state[2]
  inc_lo = rng_state[3]
  acc = (0, 0.0, 0.0, 0)  # float32 cells' updates (rows.count_store).
  touched = 0
  ran = 0
  # This worker's slots of the scratch: a constant 0 in a tree's
  # sequential code (the branches below are pruned), which numba's LLVM
  # then folds into every scratch index.
  wk = np.int64(0)
  if records is not None:
    wk = np.int64(worker)
  if eng is not None:
    if workers > 1:
      wk = np.int64(worker) * flight
  span = num_episodes - first_episode
  e = first_episode + worker * span // workers
  end = first_episode + (worker + 1) * span // workers
  if grown is not None:
    e = grown_io[0]
    grown_io[1] = -1
  if eng is not None:
    end = num_episodes
    # With W > 1 workers (Hogwild; first_episode 0), each worker claims
    # the next `per` iterations from the shared counter and runs both
    # episodes of each: each worker alternates the update player as one
    # worker does, and a worker the OS deschedules runs fewer iterations
    # instead of holding the others up at the end of the call.
    e = 2 * atomic_add(claim, 0, per) if workers > 1 else first_episode
    claimed = min(e + 2 * per, num_episodes)  # Hogwild: the claim's end.
    starts_claim = True
  while e < end:
    group = 1
    if game is not None:
      # A tree's way down: one episode.
      x = wk
      update_player = e % num_players
      if start_node > 0:
        update_player = player[start_node]
      t = (first_iteration if study is not None
           else first_iteration + e // num_players)
      if baseline_kind == 6 and records is None and (study is None
                                                     or e == 0):
        if weighting == 2:
          for i in range(num_infosets):
            catch_up(regrets, i, num_actions[i], through, t, log_pos,
                     log_neg)
          regret_matching(regrets, num_actions, strategy)
        touched += oracle_values(kind, player, infoset, child_start,
                                 num_children, edge_prob, utility,
                                 utility_sum, strategy, baseline)
      if records is not None:
        stream = stream_start(key, e)
      episode_hi = s_hi
      episode_lo = s_lo
      n = start_node
      d = 0
      my_reach = 1.0
      opp_reach = 1.0
      opp_own_reach = 1.0
      sample_reach = 1.0
      missing = -1
      while kind[n] != 2:
        path_row[x, d] = n
        path_reach[x, d, 0] = my_reach
        path_reach[x, d, 1] = opp_reach
        path_reach[x, d, 2] = opp_own_reach
        path_reach[x, d, 3] = sample_reach
        s = child_start[n]
        c = num_children[n]
        if records is not None:
          stream, u = stream_uniform(stream)
        else:
          s_hi, s_lo, u = pcg64_next(s_hi, s_lo, inc_hi, inc_lo)
        if kind[n] == 0:
          a = sample_index(edge_prob, s, c, u, 0.0)
          sig = edge_prob[s + a]
          opp_reach *= sig
          sample_reach *= sig
        else:
          iset = infoset[n]
          if weighting == 2 and records is None:
            catch_up(regrets, iset, c, through, t, log_pos, log_neg)
            regret_matching_row(regrets, iset, c, strategy, iset)
          if player[n] == update_player:
            a = sample_index(scells, iset * width, c, u, epsilon)
            sig = strategy[iset, a]
            my_reach *= sig
            sample_reach *= epsilon / c + (1.0 - epsilon) * sig
          else:
            a = sample_index(scells, iset * width, c, u, 0.0)
            sig = strategy[iset, a]
            opp_reach *= sig
            opp_own_reach *= sig
            sample_reach *= sig
        path_info[x, d] = a
        d += 1
        if grown is not None:
          # A grown tree reaches children through slots (games/grown.py).
          if slot_node[s + a] < 0:
            missing = s + a
            break
          n = slot_node[s + a]
        else:
          n = s + a
      depth[0] = -1 - d
      if records is not None:
        rec_depth[e] = d
        rec_node[d, e] = n
      if grown is not None and missing >= 0:
        if missing != grown_io[2]:
          # A child not stored: stop before any table changes; the episode
          # runs again from the same generator state once it is stored.
          grown_io[0] = e
          grown_io[1] = missing
          grown_io[3] = d
          s_hi = episode_hi
          s_lo = episode_lo
          break
        grown_io[2] = -1
        terminal_value = (leaf_value[0] if update_player == 0
                          else utility_sum - leaf_value[0])
      else:
        terminal_value = payoff(utility, utility_sum, n, update_player)
    if eng is not None:
      if workers == 1 or starts_claim:
        if allow_insert and not hashed.has_room(
            meta, index, workers * (per_check + spare_rows),
            workers * (per_check * widest + spare)):
          meta[STOP] = 1
          break
        if history is not None:
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
      # An engine's way down: the group's episodes in lockstep. A node
      # takes four steps: arrive (its key, and a prefetch of its index
      # slot), locate (the slot whose tag matches, and a prefetch of the
      # row it names), confirm (the row's key; an insert if the key has
      # none) and play (sigma^t, the sample, the move); with K > 1 each
      # episode takes one step per turn, so that the misses of the K
      # lookups overlap; with K = 1 the four follow at once.
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
                  catch_up_cells(cells, start, c, words, o + h_through, t,
                                 log_pos, log_neg)
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
    # Up: one episode after the other, in episode order (written once).
    for k in range(group):
      x = wk + k
      ee = e + k
      if game is not None:
        # update_player and t as the way down computed them (a division by
        # P, not a constant on a tree, costs tens of cycles an episode).
        value = terminal_value
      if eng is not None:
        update_player = ee % 2
        t = first_iteration + ee // 2
        u0 = protocol.returns0(code, params, state[x])
        value = u0 if update_player == 0 else utility_sum - u0
      avg_w = iteration_weight(weighting, t, linear_until, gamma)
      regret_w = avg_w if weighting == 1 else 1.0
      if regret_plus:
        avg_w = float(t)
      ep_depth = -1 - depth[k]
      # The predictive baseline's v'(h a*) under sigma^{t+1}, in the update
      # player's utility. Stored baselines b are converted to that utility
      # as offset + sign * b (the thesis tables are kept in it already);
      # the same map converts back.
      predicted = value
      predictive = (baseline_kind == 5 and learn_baselines
                    and records is None)
      offset = 0.0
      sign = 1.0
      if update_player == 1 and baseline_kind != 1 and table_sum:
        offset = utility_sum
        sign = -1.0
      for d in range(ep_depth - 1, -1, -1):
        if game is not None:
          n = path_row[x, d]
          a_s = path_info[x, d]
          s = child_start[n]
          c = num_children[n]
          row = infoset[n]
          chance = kind[n] == 0
          own = kind[n] == 1 and player[n] == update_player
          has_row = not chance
          r0 = row * width
          a0 = r0
          pr = edge_prob if chance else scells
          p0 = s if chance else r0
          b0 = baseline_base(baseline_kind, kind[n], row, s, update_player,
                             num_infosets, width, stride)
          if records is not None:
            rec_node[d, ee] = n
            rec_row[ee, d] = -1 if chance else 2 * row + (1 if own else 0)
        if eng is not None:
          info = path_info[x, d]
          p = (info & 255) - 2
          c = (info >> 8) & 0xFFFFFF
          a_s = info >> 32
          row = path_row[x, d]
          chance = p == protocol.CHANCE
          own = p == update_player
          has_row = row >= 0
          first = hashed.first_cell(row, header, per_word) if has_row else 0
          r0 = first + f_regret * c
          a0 = first + f_avg * c
          pr = flat_probs if chance else flat_sigma
          p0 = (x * max_depth + d) * max_moves
          # The baseline's cells of b(h, 0): in the infoset row (kinds 1,
          # 3), or in the history's row (kinds 4, 5).
          b0 = -1
          bcells = cells
          if has_row and (baseline_kind == 1 or baseline_kind == 3):
            b0 = first + f_base * c
            if baseline_kind == 1:
              b0 += update_player * c
          elif per_history:
            if history is not None:
              ho, _ = hashed.row_of(h_index, h_meta, h_words, h_cells,
                                    h_layout, path_key[x, d, 0],
                                    path_key[x, d, 1], c, allow_history,
                                    no_block, atomic)
              if ho >= 0:
                b0 = hashed.first_cell(ho, h_header, h_per_word) + (
                    f_hvalue * c)
                bcells = h_cells
        mine = own and has_row
        if own:
          xi_s = epsilon / c + (1.0 - epsilon) * pr[p0 + a_s]
        else:
          xi_s = pr[p0 + a_s]
        if predictive:
          stored = offset + sign * predicted
          back = offset + sign * stored
          predicted = 0.0
        # u(h, a*) = b(h, a*) + (u(h a*) - b(h, a*)) / xi(h, a*), before
        # the loop so that the division is done once.
        b_s = 0.0
        if b0 >= 0:
          b_s = offset + sign * np.float64(bcells[b0 + a_s])
        corrected = b_s + (value - b_s) / xi_s
        est = 0.0
        for j in range(c):
          ce = 0.0
          if b0 >= 0:
            ce = offset + sign * np.float64(bcells[b0 + j])
          sj = pr[p0 + j]
          if predictive and not mine:
            predicted += sj * (back if j == a_s else ce)
          ce = corrected if j == a_s else ce
          child_est[x, j] = ce
          est += sj * ce
        if mine:
          weight = path_reach[x, d, 1] / path_reach[x, d, 3]
          total = 0.0
          for j in range(c):
            inc = weight * (child_est[x, j] - est)
            if study is not None:
              regret_sum[row, j] += inc
              regret_sq[row, j] += inc * inc
              y = weight * child_est[x, j]
              value_sum[row, j] += y
              value_sq[row, j] += y * y
            elif records is not None:
              rec_value[ee, d, j] = regret_w * inc
            else:
              old = rcells[r0 + j]
              rr = old + regret_w * inc
              if regret_plus and rr < 0.0:
                rr = 0.0
              rcells[r0 + j] = rr
              acc = count_store(acc, rcells, r0 + j, old, rr - old)
              if rr > 0.0:
                total += rr
          if study is None and averaging == 0:
            for j in range(c):
              inc = avg_w * (path_reach[x, d, 0] * pr[p0 + j]
                             / path_reach[x, d, 3])
              if records is not None:
                rec_avg[ee, d, j] = inc
              else:
                old = acells[a0 + j]
                acells[a0 + j] = old + inc
                acc = count_store(acc, acells, a0 + j, old, inc)
          if study is None and records is None:
            # sigma^{t+1}(I): a tree's strategy row; an engine's path copy
            # (read by the predictive pass only).
            if game is not None:
              # The regret matching of the float64 sums just stored.
              for j in range(c):
                rr = rcells[r0 + j]
                if total > 0.0:
                  pr[p0 + j] = rr / total if rr > 0.0 else 0.0
                else:
                  pr[p0 + j] = 1.0 / c
            if eng is not None and predictive:
              match_into(rcells, r0, c, pr, p0)
        elif has_row and study is None and averaging == 1:
          if records is not None:
            rec_scalar[ee, d] = path_reach[x, d, 2]
            for j in range(c):
              rec_avg[ee, d, j] = pr[p0 + j]
          else:
            if game is not None:
              last = avg_last[row]
            if eng is not None:
              last = hashed.stamp_of(words, row)
            if last < t:  # Always, but for Hogwild workers' races.
              if regret_plus:
                weight = linear_skipped(t, last) * path_reach[x, d, 2]
              else:
                weight = (t - last) * path_reach[x, d, 2]
              for j in range(c):
                inc = weight * pr[p0 + j]
                old = acells[a0 + j]
                acells[a0 + j] = old + inc
                acc = count_store(acc, acells, a0 + j, old, inc)
              if game is not None:
                avg_last[row] = t
              if eng is not None:
                hashed.set_stamp(words, row, t)
        if learn_baselines and b0 >= 0 and (
            baseline_kind == 1 or baseline_kind == 3 or baseline_kind == 4):
          if baseline_kind == 1:
            # Thesis Fig. 3.1: b <- (b k_i(I) + b + (u - b) / xi) /
            # (k_i(I) + 1), one visit counter per (update player, infoset).
            target = child_est[x, a_s]
          else:
            target = offset + sign * value
          if records is not None:
            rec_target[ee, d] = target
          else:
            if game is not None:
              _learn_baseline(baseline, baseline_count, baseline_kind,
                              b0 + a_s, update_player * num_infosets + row,
                              target, decay)
            if eng is not None:
              _learn_cells(bcells, b0 + a_s, words,
                           row + h_count + update_player, baseline_kind,
                           (f_count - f_base) * c if baseline_kind == 3
                           else (f_hcount - f_hvalue) * c, target, decay)
        if predictive:
          if b0 >= 0:
            bcells[b0 + a_s] = stored
          if mine:
            for j in range(c):
              predicted += pr[p0 + j] * (back if j == a_s
                                         else child_est[x, j])
        value = est
      if study is not None:
        if start_stats.shape[0] > 0:
          # child_est and value hold u(h, .) and u(h) of the start node.
          for j in range(num_children[start_node]):
            start_stats[0, j] += child_est[x, j]
            start_stats[1, j] += child_est[x, j] * child_est[x, j]
          start_stats[0, width] += value
          start_stats[1, width] += value * value
        root_values[ee] = value
      if predictive:  # The reset pass.
        touched += ep_depth
      touched += ep_depth + 1
      ran += 1
    e += group
    if eng is not None:
      starts_claim = False
      if workers > 1 and e >= claimed:
        e = 2 * atomic_add(claim, 0, per)
        claimed = min(e + 2 * per, num_episodes)
        starts_claim = True
  if grown is not None:
    if grown_io[1] < 0:
      grown_io[0] = num_episodes
  if eng is not None:
    hashed.flush_block(meta, block)
    flush_counts(meta, acc)
  if records is None and (eng is None or workers == 1):
    rng_state[0] = s_hi
    rng_state[1] = s_lo
  return e, touched, ran


@njit(cache=True, error_model="numpy", parallel=parallel_phases())
def run_batches(kind, player, infoset, child_start, num_children, edge_prob,
                utility, utility_sum, num_actions, regrets, strategy, avg,
                avg_last, baseline, baseline_count, baseline_kind, averaging,
                regret_plus, epsilon, decay, first_iteration, num_iterations,
                batch, through, weighting, linear_until, gamma, log_pos,
                log_neg, rng_state, workers, path_row, path_info,
                path_reach, child_est, rec_depth, rec_node, rec_row,
                rec_value, rec_avg, rec_scalar, rec_target, reset_mark,
                row_mark, row_list):
  """Training iterations in batches, episodes in parallel (module docstring).

  The batch of iteration t ends at the next multiple of `batch` (or at this
  call's last iteration). Per batch starting at iteration t0: one key from
  `rng_state`; phase 1, its 2B episodes (`episodes` with `records`:
  episode k updates player k % 2 at iteration t0 + k // 2, draws from the
  stream `stream_start(key, k)`, is run by one of the workers (contiguous
  blocks of episodes), and reads the tables as they were at the batch
  start; the oracle baseline is refilled there); phase 2, `_apply_records`
  by every worker; phase 3, the predictive baseline's reset b(h a*) <-
  sum_a' sigma^{t+1}(h a*, a') b(h a*, a') (u(z) at a terminal) for every
  sampled edge, one depth at a time from the deepest, in player 0's
  utility (general trees: in the episode's update player's block and
  utility).

  The arguments are a tree's training arguments of `episodes`, flat; the
  scratch has one slot per worker and the records one per episode k of a
  batch:

  Args:
    rec_depth: int64[2 batch], its depth.
    rec_node: int64[D + 1, 2 batch], its path (terminal last; by depth, so
      that a depth's nodes are contiguous).
    rec_row: int64[2 batch, D], 2 I + 1 at an update player's node of
      infoset I, 2 I at an opponent's, -1 at chance.
    rec_value, rec_avg: float64[2 batch, D, A], the regret increments of the
      update player's nodes, their stochastic average increments or, at
      opponent nodes with optimistic averaging, sigma.
    rec_scalar: float64[2 batch, D], the opponent's own reach there.
    rec_target: float64[2 batch, D], the baseline targets of sampled edges.
    reset_mark: int64[N] (predictive baseline; else empty), the batch that
      last reset each node.
    row_mark, row_list: int64[I] and int64[W, I // W + 1], the batch that
      last changed each row and the rows each worker changed (sigma is
      recomputed once per changed row).

  Returns:
    The number of nodes touched.
  """
  touched = 0
  last_iteration = first_iteration + num_iterations - 1
  empty = np.zeros((0, 0))
  t0 = first_iteration
  num_players = players_of(utility)
  stride = baseline_stride(utility, baseline_kind, baseline)
  while t0 <= last_iteration:
    t1 = batch_end(t0, batch, last_iteration)
    count = num_players * (t1 - t0 + 1)
    key = batch_key(rng_state)
    if baseline_kind == 6:
      if weighting == 2:
        for i in range(regrets.shape[0]):
          catch_up(regrets, i, num_actions[i], through, t0, log_pos, log_neg)
        regret_matching(regrets, num_actions, strategy)
      touched += oracle_values(kind, player, infoset, child_start,
                               num_children, edge_prob, utility, utility_sum,
                               strategy, baseline)
    for w in prange(workers):
      # The tuples are built inside the parallel loop: a parfor takes no
      # tuple of arrays from outside it.
      _, nodes, _ = episodes(
          0, (kind, player, infoset, child_start, num_children, edge_prob,
              utility, num_actions, regrets, strategy, avg, avg_last,
              baseline, baseline_count, through, 0), None, None, utility_sum,
          (baseline_kind, averaging, regret_plus, epsilon, decay),
          (weighting, linear_until, gamma, log_pos, log_neg), t0, 0, count,
          True, rng_state, key, w, workers,
          (path_row, path_info, path_reach, child_est), None,
          (rec_depth, rec_node, rec_row, rec_value, rec_avg, rec_scalar,
           rec_target), None)
      touched += nodes
    for part in prange(workers):
      _apply_records(kind, infoset, child_start, num_actions, regrets,
                     strategy, avg, avg_last, baseline, baseline_count,
                     baseline_kind, averaging, regret_plus, decay, t0, count,
                     True, through, weighting, log_pos, log_neg, part,
                     workers, num_players, stride, rec_depth, rec_node, rec_row,
                     rec_value, rec_avg, rec_scalar, rec_target, row_mark,
                     row_list[part])
    if baseline_kind == 5:
      deepest = 0
      for k in range(count):
        deepest = max(deepest, rec_depth[k])
        touched += rec_depth[k]
      for level in range(deepest, 0, -1):
        for part in prange(workers):
          for k in range(part * count // workers,
                         (part + 1) * count // workers):
            if rec_depth[k] < level:
              continue
            h = rec_node[level, k]
            # Player 0's table, or the update player's block (general).
            p = k % num_players if stride > 0 else 0
            o = p * stride
            if reset_mark[o + h] == t0:
              continue  # Already reset in this batch (the same value).
            reset_mark[o + h] = t0
            if kind[h] == 2:
              baseline[o + h] = payoff(utility, utility_sum, h, p)
              continue
            s = o + child_start[h]
            v = 0.0
            if kind[h] == 0:
              for j in range(num_children[h]):
                v += edge_prob[child_start[h] + j] * baseline[s + j]
            else:
              i = infoset[h]
              for j in range(num_children[h]):
                v += strategy[i, j] * baseline[s + j]
            baseline[o + h] = v
    t0 = t1 + 1
  return touched


@njit(cache=True, error_model="numpy")
def _apply_records(kind, infoset, child_start, num_actions, regrets,
                   strategy, avg, avg_last, baseline, baseline_count,
                   baseline_kind, averaging, regret_plus, decay,
                   first_iteration, num_episodes, learn_baselines, through,
                   weighting, log_pos, log_neg, part, parts, num_players,
                   stride, rec_depth, rec_node, rec_row, rec_value, rec_avg,
                   rec_scalar, rec_target, row_mark, row_list):
  """Phase 2 of a batch for the rows of worker `part` (row % parts == part):
  every record, in episode order, applied as the sequential `episodes`
  apply an episode's increments (RM+ clipping after each, optimistic
  averaging's catch-up with c_I, running means), then sigma of the row
  recomputed.

  Rows are infosets for the regrets, sigma and the average, and for the
  thesis and learned baselines; baseline slots (child node ids) for the
  history baseline.
  """
  regrets, through, log_pos, log_neg = borrowed_discounts(
      regrets, through, log_pos, log_neg)
  num_infosets = regrets.shape[0]
  max_actions = regrets.shape[1]
  changed = 0
  for k in range(num_episodes):
    update_player = k % num_players
    t = first_iteration + k // num_players
    for d in range(rec_depth[k]):
      code = rec_row[k, d]
      iset = code >> 1
      if code >= 0 and iset % parts == part:
        c = num_actions[iset]
        if code & 1:
          if weighting == 2:
            catch_up(regrets, iset, c, through, t, log_pos, log_neg)
          for j in range(c):
            regrets[iset, j] += rec_value[k, d, j]
            if regret_plus and regrets[iset, j] < 0.0:
              regrets[iset, j] = 0.0
          if averaging == 0:
            for j in range(c):
              avg[iset, j] += rec_avg[k, d, j]
          if row_mark[iset] != first_iteration:
            row_mark[iset] = first_iteration
            row_list[changed] = iset
            changed += 1
        elif averaging == 1:
          if regret_plus:
            last = avg_last[iset]
            w = linear_skipped(t, last) * rec_scalar[k, d]
          else:
            w = (t - avg_last[iset]) * rec_scalar[k, d]
          for j in range(c):
            avg[iset, j] += w * rec_avg[k, d, j]
          avg_last[iset] = t
      if learn_baselines and (baseline_kind == 1 or baseline_kind == 3
                              or baseline_kind == 4):
        n = rec_node[d, k]
        s = child_start[n]
        base = baseline_base(baseline_kind, kind[n], infoset[n], s,
                             update_player, num_infosets, max_actions,
                             stride)
        if base < 0:
          continue
        slot = base + rec_node[d + 1, k] - s
        owner = slot if baseline_kind == 4 else infoset[n]
        if owner % parts == part:
          _learn_baseline(baseline, baseline_count, baseline_kind, slot,
                          update_player * num_infosets + infoset[n],
                          rec_target[k, d], decay)
  for m in range(changed):
    iset = row_list[m]
    regret_matching_row(regrets, iset, num_actions[iset], strategy, iset)


@njit(cache=True, error_model="numpy", parallel=parallel_phases())
def hogwild_episodes(code, params, utility_sum, tab, history, fmap,
                     baseline_kind, averaging, regret_plus, epsilon, decay,
                     first_iteration, num_episodes, allow_insert,
                     allow_history, weighting, linear_until, gamma, log_pos,
                     log_neg, rng_state, workers, in_flight, state, path_row,
                     path_info, path_reach, path_probs, path_sigma, child_est,
                     path_key, blocks, done):
  """An engine's `episodes` on `workers` threads at once, lock-free
  (Hogwild): each worker claims iterations from a shared counter
  (max(in_flight // 2, 1) at a time, in flight together) and runs both of
  their episodes, each episode drawing from its own stream (keyed by the
  episode's index) under one key drawn from `rng_state`, and taking new
  rows from its own arena block, blocks[w] (int64[W, BLOCK_SIZE],
  tables/hashed.py; kept from call to call); done[w] is the number of
  episodes worker w ran (all of its share unless the table ran short of
  room, which stops every worker). The arguments are `episodes`'s, flat.

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
    # The tuples are built inside the parallel loop (see `run_batches`).
    _, nodes, ran = episodes(
        code, None,
        (params, tab, fmap, allow_insert, allow_history, in_flight, state,
         path_probs, path_sigma, path_key, blocks[w], claim), history,
        utility_sum, (baseline_kind, averaging, regret_plus, epsilon, decay),
        (weighting, linear_until, gamma, log_pos, log_neg), first_iteration,
        0, num_episodes, True, rng_state, key, w, workers,
        (path_row, path_info, path_reach, child_est), None, None, None)
    done[w] = ran
    touched += nodes
  return touched
