"""Outcome-sampling MCCFR with baselines, in named pieces.

Equations cite Schmid et al. 2019 (VR-MCCFR, arXiv:1809.03057) and
Kuchar's thesis (2020, Fig. 3.1); see docs/pages/algorithms.md. An episode
is a way down and a way up:

- **the way down** is the representation's own: `tree_down` walks a
  compiled (or grown) tree's node arrays with dense float64 tables;
  `engine_down` plays a native engine (games/engines/protocol.py) from its
  initial state, several episodes in lockstep, finding hashed rows by their
  128-bit keys (tables/hashed.py). Both draw one uniform per node and leave
  the path in the scratch (`Scratch`).
- **the way up** is written once (`up_pass`, one episode): at every node of
  the path, bottom-up, `estimate` (Eqs. 9-10), `regret_increments` and
  `add_regrets` (Eq. 11, RM+ clipping), the average's `stochastic_increments`
  / `catch_up_average` (Lanctot 2013 section 4), the baseline's learning
  (kernels/baselines.py) and the predictive refresh (`predicted_value`,
  Davis et al. 2020). A node's row is read through offsets, the same code
  for both representations: regrets at rcells[r0 + a], the average's sums
  at acells[a0 + a], sigma (or chance's probabilities) at pr[p0 + a], the
  baselines of the node's edges at bcells[b0 + a] (b0 < 0: b = 0).
- **drivers** run episodes: `tree_episodes` (a tree or grown tree, one
  after the other; the studies), `record_episodes` and `apply_records`
  (a tree's batches: episodes in parallel record their increments, which
  `apply_records` applies with the same pieces), `engine_episodes` (an
  engine, K episodes in flight, or a Hogwild worker: several run at once
  on Python threads, solvers/outcome.py), and the parallel `run_batches`.

numba prunes the branch of a representation not given (None) before typing,
so each driver compiles only its own code. On a game that compiles, an
engine run on float64 rows equals the tree run with the same seed bit for
bit (tests/test_engine_solvers.py, tests/test_compiled_engine.py).

Variants are the codes of `Codes`:
  key, owner, rule: the baseline (kernels/baselines.py: a key, in whose
    utility, how it learns).
  averaging: 0 stochastic (OpenSpiel), 1 optimistic (Lanctot 2013 section 4,
    the thesis's choice).
  regret_plus: 0 regret matching, 1 regret matching+ (MCCFRb+,
    docs/pages/algorithms.md "MCCFRb+"): cumulative regrets are clipped at
    0 after every update and iteration t weighs t in the average strategy.
  epsilon: exploration of the update player's sampling.
  decay: the baselines' exponential average (0: running mean).
Weighting (`Weights`): 0 none, 1 linear, 2 discounted (rows catch up lazily,
kernels/weighting.py and kernels/rows.py).

A tree's tables: regrets, the current strategy sigma^t (`strategy`,
regret matching of every row, recomputed right after a row's regrets
change) and the average's sums, float64[I, A]; baselines flat: the thesis
tables (owner: the update player) indexed (player, infoset, action) in
that player's utility; the others in player 0's utility (the value for
player 1 is utility_sum - b): infoset keys as (infoset, action), history
keys by the id of the child node the edge leads to, the per-node keys
(situation, public, observation) as (key_ids[node], action). On general
trees (more than two players or general-sum: utility float64[N, P],
kernels/exact.py `payoff`) the player-0 kinds keep one block per player,
each in its own player's utility, player p's at p * stride
(`baseline_stride`); an iteration is one episode per player in player
order, u(z) the update player's own return and pi_{-i} the product of
every other player's and chance's probabilities, as in OpenSpiel's
outcome_sampling_mccfr.py (with more than two players averaging is
stochastic only: optimistic averaging's pi_owner is the single opponent's
reach).

An engine's rows (tables/hashed.py) hold the fields `fmap` names: regrets
(F_REGRET), the average's sums (F_AVG), and the infoset-keyed baseline's
values and counts (F_BASE: the learned baseline's b(I, a), or the thesis
baseline's for update player p at F_BASE + p; F_COUNT: the running mean's
counts); header words: the row's stamp (the last iteration of its
optimistic average), DCFR's discount stamp (H_THROUGH) and the thesis
baseline's visit counts per update player (H_COUNT + p). sigma^t(I) is not
stored: it is the regret matching of the row's regrets, computed when the
episode reaches the row and kept along the path for the way up. Baselines
keyed by history, situation or public state are kept in a second hashed
table (`keyed`) whose row for key k holds b(k, a) for each move a (and the
running mean's counts): the key of a history is the running hash of its
move indices (`history_step`), of a situation the engine's
`situation_hash`, of a public state its `public_hash`. Their rows are found
on the way down with the infoset rows (their misses overlap in flight) and
inserted while `allow_keyed`; where one is not stored b = 0 and nothing is
learned there.

Perfect recall (OpenSpiel's information states) is assumed: an infoset
occurs at most once on a path, so sigma^t of a row still holds when the up
pass reaches it; and no baseline key repeats along a path (the history's
hash grows with it; situations and public states change with every move,
tests/test_baseline_keys.py), so an episode never reads a cell it wrote
below.
"""

from typing import NamedTuple

import numba
import numpy as np
from numba import njit
from numba import prange

from mccfrb.games.engines import protocol
from mccfrb.games.engines.common import hash_step
from mccfrb.kernels import baselines
from mccfrb.kernels.baselines import KEY_HISTORY
from mccfrb.kernels.baselines import KEY_INFOSET
from mccfrb.kernels.baselines import KEY_NONE
from mccfrb.kernels.baselines import KEY_PUBLIC
from mccfrb.kernels.baselines import KEY_SITUATION
from mccfrb.kernels.baselines import OWNER_PLAYER0
from mccfrb.kernels.baselines import OWNER_UPDATE_PLAYER
from mccfrb.kernels.baselines import RULE_CHILD
from mccfrb.kernels.baselines import RULE_CORRECTED
from mccfrb.kernels.baselines import RULE_ORACLE
from mccfrb.kernels.baselines import RULE_PREDICTIVE
from mccfrb.kernels.baselines import RULE_PROBE
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
from mccfrb.kernels.rows import Counts
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
from mccfrb.tables.atomics import flat

# Kept importable here: the public-state kernel and studies use them.
averaged = baselines.averaged

# fmap (int64[FMAP_SIZE]): where the kernel finds its fields and header
# words in an engine's infoset rows (-1: absent), and in the keyed rows.
F_REGRET = 0
F_AVG = 1
F_BASE = 2
F_COUNT = 3
H_THROUGH = 4
H_COUNT = 5
F_KEYED_VALUE = 6
F_KEYED_COUNT = 7
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

# An episode's lane on an engine's way down (EngineArgs.lanes[x, .]).
L_STEP = 0
L_SLOT = 1
L_BSLOT = 2
L_DEPTH = 3
LANE_SIZE = 4

# The reaches kept per node of the path (Scratch.reach[x, d, .]).
R_OWN = 0  # pi_i(h), the update player's.
R_OPP = 1  # pi_{-i}(h), the others' and chance's.
R_OPP_OWN = 2  # The opponent's own (optimistic averaging's pi_owner).
R_SAMPLE = 3  # q(h), the sampling policy's.


class Codes(NamedTuple):
  """The variant (module docstring)."""
  key: int
  owner: int
  rule: int
  averaging: int
  regret_plus: int
  epsilon: float
  decay: float
  fallback: bool


class Weights(NamedTuple):
  """Weighting of iterations: weighting 0 none, 1 linear (up to
  linear_until, 0: always), 2 discounted (log_pos, log_neg: the cumulative
  log-factors, kernels/weighting.py; gamma: the average's exponent)."""
  weighting: int
  linear_until: int
  gamma: float
  log_pos: np.ndarray
  log_neg: np.ndarray


class Scratch(NamedTuple):
  """An episode's path, slot x of each array: the worker (a tree), its place
  in the group (an engine), or worker * K + its place (Hogwild).

  Attributes:
    row: int64[S, D], a tree's node; an engine's infoset row (-1 if not
      stored).
    info: int64[S, D], a tree's action; an engine's player + 2 | count << 8 |
      action << 32.
    reach: float64[S, D, 4], the reaches R_OWN, R_OPP, R_OPP_OWN, R_SAMPLE.
    child_est: float64[S, A], u(h, a) of the node in hand.
    incs: float64[S, A], the increments of the node in hand.
  """
  row: np.ndarray
  info: np.ndarray
  reach: np.ndarray
  child_est: np.ndarray
  incs: np.ndarray


class TreeArgs(NamedTuple):
  """A compiled (or grown) tree and its dense tables.

  Attributes:
    kind, player, infoset, child_start, num_children, edge_prob, utility:
      `GameTree.kernel_args()`; num_actions: int32[I].
    regrets, strategy, avg: float64[I, A] (strategy: sigma^t, kept so);
    avg_last: int64[I], optimistic averaging's c_I; through: int64[I],
      DCFR's stamps.
    baseline, baseline_count: flat (module docstring).
    key_ids: int64[N], the per-node key of situation, public and
      observation baselines (else empty).
    start_node: the node episodes start at (> 0: the studies' conditional
      episodes, which update its player).
    explore: float64[I * A], the update player's exploration strategy
      (games/balanced.py), mixed in with epsilon; empty: uniform.
  """
  kind: np.ndarray
  player: np.ndarray
  infoset: np.ndarray
  child_start: np.ndarray
  num_children: np.ndarray
  edge_prob: np.ndarray
  utility: np.ndarray
  num_actions: np.ndarray
  regrets: np.ndarray
  strategy: np.ndarray
  avg: np.ndarray
  avg_last: np.ndarray
  baseline: np.ndarray
  baseline_count: np.ndarray
  through: np.ndarray
  key_ids: np.ndarray
  start_node: int
  explore: np.ndarray


class Grown(NamedTuple):
  """A grown tree's (games/grown.py): the child of node n by action a is
  slot_node[child_start[n] + a], -1 if not stored. io int64[4], in: [0] the
  first episode, [2] a pending leaf slot (-1: none), whose player-0 value
  leaf_value[0] ends an episode that reaches it (consumed: set to -1); out:
  [0] the episode reached, [1] the empty slot that stopped it (-1 if every
  episode ran; the generator is left at that episode's start, no table
  changed) and [3] its depth (Scratch.row[0, :depth], Scratch.info[0,
  :depth] lead to it)."""
  slot_node: np.ndarray
  io: np.ndarray
  leaf_value: np.ndarray


class EngineArgs(NamedTuple):
  """An engine's game and hashed rows.

  Attributes:
    params: the engine's parameters.
    tab: the infoset rows (`hashed.Hashed`).
    fmap: int64[FMAP_SIZE] (module docstring).
    allow_insert, allow_keyed: rows are inserted while these hold.
    in_flight: K, episodes played down in lockstep (a Hogwild worker:
      max(K // 2, 1) iterations, both episodes each).
    state: int64[S, state size].
    path_probs, path_sigma: float64[S, D, A], chance's probabilities and
      sigma on the path.
    path_key: uint64[S, D, 2], the keyed baseline's key of each node.
    path_brow: int64[S, D], its keyed row (-1: none).
    block: a Hogwild worker's arena block (tables/hashed.py, BLOCK_SIZE),
      or empty.
    claim: int64[1], shared by the Hogwild workers, the next iteration to
      claim.
    start: the state episodes start from (int64[state size]), or empty
      (the initial state); start_key: the history key there.
    lanes: int64[S, 4], each episode's step on the way down (L_STEP), its
      index slots (L_SLOT, L_BSLOT) and its depth (L_DEPTH); lane_keys:
      uint64[S, 2], its infoset key; streams: uint64[S], its random
      stream (several workers).
    probes: float64[S, D + 1, A], probing's rollout returns (player 0's)
      from the update player's unsampled moves at depth d ([x, d, a]); [x,
      D] holds a rollout's sigma; with a chain of keys, the node's
      baselines as the chain picks them; probe_state: int64[S, 2, state
      size], a node's state before its move and a rollout's. Empty arrays
      unless the baseline is `probe` or a chain.
  """
  params: np.ndarray
  tab: hashed.Hashed
  fmap: np.ndarray
  allow_insert: bool
  allow_keyed: bool
  in_flight: int
  state: np.ndarray
  path_probs: np.ndarray
  path_sigma: np.ndarray
  path_key: np.ndarray
  path_brow: np.ndarray
  block: np.ndarray
  claim: np.ndarray
  start: np.ndarray
  start_key: np.ndarray
  lanes: np.ndarray
  lane_keys: np.ndarray
  streams: np.ndarray
  probes: np.ndarray
  probe_state: np.ndarray


class Records(NamedTuple):
  """Phase 1 of `run_batches`: one slot per episode k of a batch.

  Attributes:
    depth: int64[2B], its depth.
    node: int64[D + 1, 2B], its path (terminal last; by depth, so that a
      depth's nodes are contiguous).
    row: int64[2B, D], 2 I + 1 at an update player's node of infoset I,
      2 I at an opponent's, -1 at chance.
    value, avg: float64[2B, D, A], the regret increments of the update
      player's nodes, their stochastic average increments or, at opponent
      nodes with optimistic averaging, sigma.
    scalar: float64[2B, D], the opponent's own reach there.
    target: float64[2B, D], the baseline targets of sampled edges.
  """
  depth: np.ndarray
  node: np.ndarray
  row: np.ndarray
  value: np.ndarray
  avg: np.ndarray
  scalar: np.ndarray
  target: np.ndarray


class Study(NamedTuple):
  """A tree's frozen episodes (the tables but baselines stay untouched): the
  regret increments and the sampled counterfactual action values
  pi_{-i}(h) / q(h) u(h, a), with their squares (float64[I, A]); u(root) of
  episode e; start_stats float64[2, A + 1], or empty: if not empty, every
  episode adds the start node's estimates u(h, a) (column a) and u(h)
  (column A), in the update player's utility, to row 0 and their squares
  to row 1."""
  regret_sum: np.ndarray
  regret_sq: np.ndarray
  value_sum: np.ndarray
  value_sq: np.ndarray
  root_values: np.ndarray
  start_stats: np.ndarray


# ---------------------------------------------------------------------------
# Small pieces shared by every driver.


@njit(cache=True, error_model="numpy")
def sample_index(probs, start, count, u, epsilon, mix=None, m0=0):
  """Inverse-CDF sampling of an index in [0, count) from `u`, under the
  probabilities xi(a) = epsilon / count + (1 - epsilon) probs[start + a]
  (epsilon = 0: probs itself, exactly), or with `mix` xi(a) = epsilon
  mix[m0 + a] + (1 - epsilon) probs[start + a] (balanced exploration).

  Never returns an index of probability 0, even when rounding leaves
  `u` above the cumulative sum.
  """
  uniform = epsilon / count
  cumulative = 0.0
  last_positive = -1
  for a in range(count):
    p = probs[start + a]
    if epsilon > 0.0:
      if mix is None:
        p = uniform + (1.0 - epsilon) * p
      else:
        p = epsilon * mix[m0 + a] + (1.0 - epsilon) * p
    if p > 0.0:
      last_positive = a
      cumulative += p
      if u < cumulative:
        return a
  return last_positive


@njit(cache=True, inline="always")
def history_step(g1, g2, move):
  """The 128-bit key of a history extended by move index `move` (two
  independent running hashes, as engines key information states)."""
  return hash_step(g1, move), hash_step(g2, move ^ 0x5A5A5A5A)


@njit(cache=True, error_model="numpy")
def baseline_stride(utility, owner, key, baseline):
  """The offset between two players' blocks of a tree's baseline table: 0
  (one table in player 0's utility, or the thesis's own layout) but for
  player-0 kinds on general trees."""
  if utility.ndim == 1 or owner == OWNER_UPDATE_PLAYER or key == KEY_NONE:
    return 0
  return baseline.shape[0] // players_of(utility)


@njit(cache=True, error_model="numpy", inline="always")
def tree_baseline_base(codes, node_kind, node, row, child_start_n, key_ids,
                       update_player, num_infosets, width, stride):
  """A tree's index into the flat baseline table of edge (node, action 0),
  -1 if b = 0. The edge of action j is at the returned index + j for every
  key; `stride` (`baseline_stride`) selects the update player's block."""
  key = codes.key
  if key == KEY_NONE:
    return -1
  if key == KEY_INFOSET:
    if node_kind != 1:
      return -1
    if codes.owner == OWNER_UPDATE_PLAYER:
      return (update_player * num_infosets + row) * width
    return row * width + update_player * stride
  if key == KEY_HISTORY:
    return child_start_n + update_player * stride
  return key_ids[node] * width + update_player * stride


@njit(cache=True, error_model="numpy")
def oracle_values(kind, player, infoset, child_start, num_children,
                  edge_prob, utility, utility_sum, strategy, baseline):
  """The oracle baseline: every node's exact value under `strategy`, in
  player 0's utility, or on general trees every player's block in its own
  utility. Returns the nodes touched."""
  if utility.ndim == 1:
    node_values(kind, player, infoset, child_start, num_children,
                edge_prob, utility, strategy, baseline)
    return kind.shape[0]
  stride = baseline.shape[0] // players_of(utility)
  num_players = players_of(utility)
  for p in range(num_players):
    player_values(kind, player, infoset, child_start, num_children,
                  edge_prob, utility, utility_sum, p, strategy,
                  baseline[p * stride:(p + 1) * stride])
  return num_players * kind.shape[0]


@njit(cache=True, error_model="numpy")
def refill_oracle(game, utility_sum, weights, t):
  """The oracle baseline under sigma^t (after the pending discounts);
  returns the nodes touched."""
  regrets, strategy, num_actions = game.regrets, game.strategy, \
      game.num_actions
  if weights.weighting == 2:
    for i in range(regrets.shape[0]):
      catch_up(regrets, i, num_actions[i], game.through, t, weights.log_pos,
               weights.log_neg)
    regret_matching(regrets, num_actions, strategy)
  return oracle_values(game.kind, game.player, game.infoset,
                       game.child_start, game.num_children, game.edge_prob,
                       game.utility, utility_sum, strategy, game.baseline)


@njit(cache=True, inline="always")
def borrowed_game(game, start_node):
  """`game` (`TreeArgs`) with every array borrowed (tables/atomics.py: the
  helpers inlined in a kernel's loops then count no references), starting
  at `start_node`."""
  return TreeArgs(*borrowed_tree(game.kind, game.player, game.infoset,
                                 game.child_start, game.num_children,
                                 game.edge_prob, game.utility),
                  borrow(game.num_actions), borrow(game.regrets),
                  borrow(game.strategy), borrow(game.avg),
                  borrow(game.avg_last), borrow(game.baseline),
                  borrow(game.baseline_count), borrow(game.through),
                  borrow(game.key_ids), start_node, borrow(game.explore))


@njit(cache=True, inline="always")
def borrowed_scratch(scratch):
  """`scratch` with every array borrowed."""
  return Scratch(borrow(scratch.row), borrow(scratch.info),
                 borrow(scratch.reach), borrow(scratch.child_est),
                 borrow(scratch.incs))


@njit(cache=True, inline="always")
def borrowed_engine(eng):
  """`eng` (`EngineArgs`) with every array borrowed, its tables' too: an
  array a kernel's loop binds from a tuple that is not borrowed counts a
  reference with an atomic instruction, a full memory barrier, which also
  keeps the misses of episodes in flight from overlapping."""
  return EngineArgs(borrow(eng.params), hashed.borrowed(eng.tab),
                    borrow(eng.fmap), eng.allow_insert, eng.allow_keyed,
                    eng.in_flight, borrow(eng.state), borrow(eng.path_probs),
                    borrow(eng.path_sigma), borrow(eng.path_key),
                    borrow(eng.path_brow), borrow(eng.block),
                    borrow(eng.claim), borrow(eng.start),
                    borrow(eng.start_key), borrow(eng.lanes),
                    borrow(eng.lane_keys), borrow(eng.streams),
                    borrow(eng.probes), borrow(eng.probe_state))


@njit(cache=True, inline="always")
def borrowed_weights(weights):
  """`weights` with its discount arrays borrowed."""
  return Weights(weights.weighting, weights.linear_until, weights.gamma,
                 borrow(weights.log_pos), borrow(weights.log_neg))


# ---------------------------------------------------------------------------
# The way up, per node: written once, called by every driver.


@njit(cache=True, error_model="numpy", inline="always")
def estimate(value, c, a_s, xi_s, pr, p0, bcells, b0, offset, sign,
             child_est, x, back):
  """The node's baseline-corrected estimates (Schmid et al. 2019, Eqs. 9-10):

      u(h, a) = b(h, a) + (u(h a*) - b(h, a*)) / xi(h, a*)   if a = a*,
      u(h, a) = b(h, a)                                      otherwise,
      u(h)    = sum_a sigma(h, a) u(h, a),

  with `value` = u(h a*) and sigma (or chance's probabilities) at
  pr[p0 + a]; stored baselines b are read in the update player's utility
  as offset + sign * bcells[b0 + a] (b0 < 0: b = 0). Writes u(h, a) to
  child_est[x, a].

  Returns:
    (u(h), and in the same loop `predicted_value` under the same sigma
    with b'(h, a*) = `back`: the predictive baseline's v'(h) where sigma
    does not change).
  """
  b_s = 0.0
  if b0 >= 0:
    b_s = offset + sign * np.float64(bcells[b0 + a_s])
  corrected = b_s + (value - b_s) / xi_s  # One division a node.
  est = 0.0
  predicted = 0.0
  for j in range(c):
    ce = 0.0
    if b0 >= 0:
      ce = offset + sign * np.float64(bcells[b0 + j])
    sj = pr[p0 + j]
    predicted += sj * (back if j == a_s else ce)
    ce = corrected if j == a_s else ce
    child_est[x, j] = ce
    est += sj * ce
  return est, predicted


@njit(cache=True, error_model="numpy", inline="always")
def probed_estimate(value, c, a_s, pr, p0, probes, q0, offset, sign,
                    child_est, x):
  """Probing's estimates at the update player's node (Gibson et al. 2012,
  Sec. 4): the sampled move keeps the value from below, not divided by
  xi; every other move's is its rollout's return (probes[q0 + a], player
  0's, read in the update player's utility as offset + sign * probe):

      u(h, a) = u(h a*)                           if a = a*,
      u(h, a) = u(z_a), z_a ~ sigma from h a      otherwise,
      u(h)    = sum_a sigma(h, a) u(h, a).

  Unbiased: a is sampled with probability xi(h, a), or else rolled out
  from, and both give u(h a) in expectation. Writes u(h, a) to
  child_est[x, a]; returns u(h)."""
  est = 0.0
  for j in range(c):
    ce = value if j == a_s else offset + sign * probes[q0 + j]
    child_est[x, j] = ce
    est += pr[p0 + j] * ce
  return est


@njit(cache=True, error_model="numpy", inline="always")
def chained(kcells, b0, kspan, cells, f0, c, out, q0):
  """A chain of keys' baselines b(h, a) into out[q0 + a]: the keyed cell
  kcells[b0 + a] where its count kcells[b0 + kspan + a] is positive (it
  has learned), else the infoset row's cells[f0 + a] (0 where a link has
  no row: b0 or f0 < 0). Which link serves depends on the past only, so
  the estimate stays unbiased."""
  for j in range(c):
    v = 0.0
    if b0 >= 0 and kcells[b0 + kspan + j] > 0:
      v = np.float64(kcells[b0 + j])
    elif f0 >= 0:
      v = np.float64(cells[f0 + j])
    out[q0 + j] = v


@njit(cache=True, error_model="numpy", inline="always")
def regret_increments(child_est, x, c, est, weight, regret_w, out, o0):
  """The sampled counterfactual regrets (Eq. 11 with Eq. 2), times the
  iteration's regret weight: out[o0 + a] = w_t pi_{-i}(h) / q(h) (u(h, a)
  - u(h)), `weight` = pi_{-i}(h) / q(h)."""
  for j in range(c):
    out[o0 + j] = regret_w * (weight * (child_est[x, j] - est))


@njit(cache=True, error_model="numpy", inline="always")
def add_regrets(rcells, r0, c, incs, i0, regret_plus, acc):
  """R_I(a) += incs[i0 + a], then R_I <- max(R_I, 0) with RM+ (Tammelin
  2014). Returns (the sum of the positive regrets, in float64 before
  they are stored, and the float32 counts `acc`, kernels/rows.py)."""
  total = 0.0
  for j in range(c):
    old = rcells[r0 + j]
    rr = old + incs[i0 + j]
    if regret_plus and rr < 0.0:
      rr = 0.0
    rcells[r0 + j] = rr
    acc = count_store(acc, rcells, r0 + j, old, rr - old)
    if rr > 0.0:
      total += rr
  return total, acc


@njit(cache=True, error_model="numpy", inline="always")
def sigma_from_total(rcells, r0, c, total, out, o0):
  """sigma^{t+1}(I): the regret matching of float64 regrets just stored,
  whose positive sum `total` is known (`add_regrets`)."""
  for j in range(c):
    rr = rcells[r0 + j]
    if total > 0.0:
      out[o0 + j] = rr / total if rr > 0.0 else 0.0
    else:
      out[o0 + j] = 1.0 / c


@njit(cache=True, error_model="numpy", inline="always")
def stochastic_increments(pr, p0, c, own_reach, sample_reach, avg_w, out,
                          o0):
  """Stochastic averaging (OpenSpiel's): S_I(a) += w_t pi_i(h) sigma(I, a) /
  q(h), into out[o0 + a]."""
  for j in range(c):
    out[o0 + j] = avg_w * (own_reach * pr[p0 + j] / sample_reach)


@njit(cache=True, error_model="numpy", inline="always")
def add_sums(acells, a0, c, incs, i0, acc):
  """S_I(a) += incs[i0 + a]; returns the float32 counts `acc`."""
  for j in range(c):
    old = acells[a0 + j]
    acells[a0 + j] = old + incs[i0 + j]
    acc = count_store(acc, acells, a0 + j, old, incs[i0 + j])
  return acc


@njit(cache=True, error_model="numpy", inline="always")
def catch_up_average(acells, a0, c, sigma, s0, t, last, own_reach,
                     regret_plus, acc):
  """Optimistic averaging at an opponent's row (Lanctot 2013 section 4):
  S_I(a) += (t - c_I) pi_owner(h) sigma(I, a), or with RM+'s linear
  averaging the skipped iterations' weights c_I + 1 + ... + t; the caller
  then sets c_I = t. Returns the float32 counts `acc`."""
  if regret_plus:
    weight = linear_skipped(t, last) * own_reach
  else:
    weight = (t - last) * own_reach
  for j in range(c):
    inc = weight * sigma[s0 + j]
    old = acells[a0 + j]
    acells[a0 + j] = old + inc
    acc = count_store(acc, acells, a0 + j, old, inc)
  return acc


@njit(cache=True, error_model="numpy", inline="always")
def predicted_value(pr, p0, c, a_s, back, child_est, x):
  """The predictive baseline's v'(h) = sum_a sigma^{t+1}(h, a) b'(h, a)
  (Davis et al. 2020), with b'(h, a*) = `back` (just refreshed) and the
  other edges' baselines in child_est[x, a]; sigma^{t+1} differs from
  sigma^t only at the update player's rows just updated."""
  v = 0.0
  for j in range(c):
    v += pr[p0 + j] * (back if j == a_s else child_est[x, j])
  return v


@njit(cache=True, error_model="numpy", inline="always")
def iteration_weights(weights, t, regret_plus):
  """(average weight, regret weight) of iteration t."""
  avg_w = iteration_weight(weights.weighting, t, weights.linear_until,
                           weights.gamma)
  regret_w = avg_w if weights.weighting == 1 else 1.0
  if regret_plus:
    avg_w = float(t)
  return avg_w, regret_w


# ---------------------------------------------------------------------------
# The node in hand on the way up, as each representation keeps it.


@njit(cache=True, error_model="numpy", inline="always")
def tree_node(game, codes, scratch, x, d, update_player, stride):
  """(node, action sampled, moves, row, chance, own, pr, p0, b0) of a
  tree's node at depth d of the path."""
  n = scratch.row[x, d]
  a_s = scratch.info[x, d]
  s = game.child_start[n]
  c = game.num_children[n]
  row = game.infoset[n]
  node_kind = game.kind[n]
  chance = node_kind == 0
  own = node_kind == 1 and game.player[n] == update_player
  width = game.regrets.shape[1]
  b0 = tree_baseline_base(codes, node_kind, n, row, s, game.key_ids,
                          update_player, game.regrets.shape[0], width,
                          stride)
  return n, a_s, c, row, chance, own, s if chance else row * width, b0


@njit(cache=True, error_model="numpy", inline="always")
def engine_node(eng, codes, scratch, keyed_header, keyed_per_word, x, d,
                update_player):
  """(row, action sampled, moves, chance, own, first cell, p0, b0, keyed,
  f0) of an engine's node at depth d of the path; `keyed`: b0 indexes the
  keyed table's cells (else the infoset row's); f0: with a chain, the
  infoset row's baseline cells (-1: none)."""
  info = scratch.info[x, d]
  p = (info & 255) - 2
  c = (info >> 8) & 0xFFFFFF
  a_s = info >> 32
  row = scratch.row[x, d]
  layout = eng.tab.layout
  has_row = row >= 0
  first = (hashed.first_cell(row, layout[hashed.L_HEADER],
                             layout[hashed.L_PER_WORD]) if has_row else 0)
  max_depth = scratch.row.shape[1]
  p0 = (x * max_depth + d) * scratch.child_est.shape[1]
  b0 = -1
  keyed = False
  if codes.key == KEY_INFOSET:
    if has_row:
      b0 = first + eng.fmap[F_BASE] * c
      if codes.owner == OWNER_UPDATE_PLAYER:
        b0 += update_player * c
  elif codes.key != KEY_NONE:
    brow = eng.path_brow[x, d]
    if brow >= 0:
      b0 = hashed.first_cell(brow, keyed_header, keyed_per_word) + (
          eng.fmap[F_KEYED_VALUE] * c)
      keyed = True
  f0 = -1
  if codes.fallback and has_row:
    f0 = first + eng.fmap[F_BASE] * c
  return (row, a_s, c, p == protocol.CHANCE, p == update_player, first, p0,
          b0, keyed, f0)


# ---------------------------------------------------------------------------
# The way up of one episode.


@njit(cache=True, error_model="numpy", inline="always")
def _update_own_row(game, eng, codes, study, records, scratch, x, d, ee,
                    row, c, est, pr, p0, rcells, r0, acells, a0, avg_w,
                    regret_w, predictive, acc):
  """At an update player's row on the way up: the sampled regrets (Eq. 11)
  added with RM+'s clipping, stochastic averaging, and sigma^{t+1} (a
  tree's strategy row from the float64 sums just stored; an engine's path
  copy, which only the predictive refresh reads); or, with `records`,
  their increments recorded; or, with `study`, summed. Returns the
  float32 counts `acc`."""
  child_est, reach = scratch.child_est, scratch.reach
  weight = reach[x, d, R_OPP] / reach[x, d, R_SAMPLE]
  if records is not None:
    at = (ee * records.value.shape[1] + d) * records.value.shape[2]
    regret_increments(child_est, x, c, est, weight, regret_w,
                      flat(records.value), at)
    if codes.averaging == 0:
      stochastic_increments(pr, p0, c, reach[x, d, R_OWN],
                            reach[x, d, R_SAMPLE], avg_w, flat(records.avg),
                            at)
    return acc
  incs = flat(scratch.incs)
  i0 = x * scratch.incs.shape[1]
  if study is not None:
    regret_increments(child_est, x, c, est, weight, 1.0, incs, i0)
    for j in range(c if study.regret_sum.shape[0] > 0 else 0):
      inc = incs[i0 + j]
      study.regret_sum[row, j] += inc
      study.regret_sq[row, j] += inc * inc
      y = weight * child_est[x, j]
      study.value_sum[row, j] += y
      study.value_sq[row, j] += y * y
    return acc
  regret_increments(child_est, x, c, est, weight, regret_w, incs, i0)
  total, acc = add_regrets(rcells, r0, c, incs, i0, codes.regret_plus, acc)
  if codes.averaging == 0:
    stochastic_increments(pr, p0, c, reach[x, d, R_OWN],
                          reach[x, d, R_SAMPLE], avg_w, incs, i0)
    acc = add_sums(acells, a0, c, incs, i0, acc)
  if game is not None:
    sigma_from_total(rcells, r0, c, total, pr, p0)
  if eng is not None and predictive:
    match_into(rcells, r0, c, pr, p0)
  return acc


@njit(cache=True, error_model="numpy", inline="always")
def _average_opponent_row(game, eng, codes, records, scratch, x, d, ee, row,
                          c, pr, p0, acells, a0, t, acc):
  """At an opponent's row with optimistic averaging: `catch_up_average`
  and c_I = t (a tree's avg_last, an engine's row stamp), or with
  `records` sigma and the opponent's own reach recorded. Returns the
  float32 counts `acc`."""
  reach = scratch.reach
  if records is not None:
    records.scalar[ee, d] = reach[x, d, R_OPP_OWN]
    at = (ee * records.avg.shape[1] + d) * records.avg.shape[2]
    rec_avg = flat(records.avg)
    for j in range(c):
      rec_avg[at + j] = pr[p0 + j]
    return acc
  if game is not None:
    last = game.avg_last[row]
  if eng is not None:
    words = eng.tab.words
    last = hashed.stamp_of(words, row)
  if last < t:  # Always, but for Hogwild workers' races.
    acc = catch_up_average(acells, a0, c, pr, p0, t, last,
                           reach[x, d, R_OPP_OWN], codes.regret_plus, acc)
    if game is not None:
      game.avg_last[row] = t
    if eng is not None:
      hashed.set_stamp(words, row, t)
  return acc


@njit(cache=True, error_model="numpy", inline="always")
def _learn_edge(game, eng, codes, records, ee, d, row, c, update_player,
                bcells, slot, in_keyed, target):
  """The sampled edge's baseline b = bcells[slot] learns `target`
  (`baselines.learn`) with its count where the rule keeps it: the thesis's
  per (update player, infoset) (a tree's baseline_count, an engine's row
  header), the child rule's per cell (a tree's baseline_count, an
  engine's count field); or, with `records`, the target is recorded."""
  if records is not None:
    records.target[ee, d] = target
  elif game is not None:
    cslot = slot
    if codes.rule == RULE_CORRECTED:
      cslot = update_player * game.regrets.shape[0] + row
    baselines.learn(bcells, slot, game.baseline_count, cslot, target,
                    codes.decay)
  elif eng is not None:
    fmap = eng.fmap
    if codes.rule == RULE_CORRECTED:
      baselines.learn(bcells, slot, eng.tab.words,
                      row + fmap[H_COUNT] + update_player, target,
                      codes.decay)
    else:
      count_at = fmap[F_KEYED_COUNT] if in_keyed else fmap[F_COUNT]
      span = (count_at - (fmap[F_KEYED_VALUE] if in_keyed
                          else fmap[F_BASE])) * c
      baselines.learn(bcells, slot, bcells,
                      slot + span if count_at >= 0 else -1, target,
                      codes.decay)


@njit(cache=True, error_model="numpy", inline="always")
def up_pass(game, eng, keyed, codes, weights, utility_sum, scratch, x, ee,
            ep_depth, value, update_player, t, learn_baselines, study,
            records, acc):
  """One episode's way up (module docstring), at the nodes of its path
  bottom-up from u(z) = `value` (the update player's return): the
  estimates, then at the update player's rows the regret update and
  stochastic averaging and sigma^{t+1}, at the opponent's the optimistic
  average, then the baseline's learning (kernels/baselines.py) after its
  use, so the estimate stays unbiased. The predictive baseline (Davis et
  al. 2020) is refreshed along the path under sigma^{t+1} in the same
  pass, once a node's own update is done: b(h, a*) <- v'(h a*), v'(h) =
  sum_a sigma^{t+1}(h, a) b(h, a).

  With `study` (a tree) the regret increments are summed there instead;
  with `records` (a tree's batches) they are recorded for `apply_records`.

  Returns:
    (u at the path's first node, the float32 counts `acc`).
  """
  avg_w, regret_w = iteration_weights(weights, t, codes.regret_plus)
  child_est = scratch.child_est
  table_sum = True
  stride = 0
  if game is not None:
    width = game.regrets.shape[1]
    rcells = flat(game.regrets)
    acells = flat(game.avg)
    scells = flat(game.strategy)
    bcells = game.baseline
    table_sum = game.utility.ndim == 1
    stride = baseline_stride(game.utility, codes.owner, codes.key,
                             game.baseline)
  if eng is not None:
    cells = eng.tab.cells
    rcells = cells
    acells = cells
    flat_sigma = flat(eng.path_sigma)
    flat_probs = flat(eng.path_probs)
    fmap = eng.fmap
    k_cells = cells
    k_header = 0
    k_per_word = 1
    if keyed is not None:
      k = hashed.borrowed(keyed)
      k_cells, k_layout = k.cells, k.layout
      k_header = k_layout[hashed.L_HEADER]
      k_per_word = k_layout[hashed.L_PER_WORD]
  predictive = (codes.rule == RULE_PREDICTIVE and learn_baselines
                and records is None)
  learns = learn_baselines and (codes.rule == RULE_CORRECTED
                                or codes.rule == RULE_CHILD)
  # Stored baselines b are converted to the update player's utility as
  # offset + sign * b (the thesis tables are kept in it already); the same
  # map converts back.
  offset = 0.0
  sign = 1.0
  if update_player == 1 and codes.owner == OWNER_PLAYER0 and table_sum:
    offset = utility_sum
    sign = -1.0
  # The predictive baseline's v'(h a*) under sigma^{t+1}, in the update
  # player's utility.
  predicted = value
  epsilon = codes.epsilon
  for d in range(ep_depth - 1, -1, -1):
    if game is not None:
      n, a_s, c, row, chance, own, p0, b0 = tree_node(
          game, codes, scratch, x, d, update_player, stride)
      has_row = not chance
      r0 = row * width
      a0 = r0
      pr = game.edge_prob if chance else scells
      in_keyed = False
      if records is not None:
        records.node[d, ee] = n
        records.row[ee, d] = -1 if chance else 2 * row + (1 if own else 0)
    if eng is not None:
      row, a_s, c, chance, own, first, p0, b0, in_keyed, f0 = engine_node(
          eng, codes, scratch, k_header, k_per_word, x, d, update_player)
      has_row = row >= 0
      r0 = first + fmap[F_REGRET] * c
      a0 = first + fmap[F_AVG] * c
      pr = flat_probs if chance else flat_sigma
      bcells = k_cells if in_keyed else cells
    mine = own and has_row
    if own:
      xi_s = epsilon / c + (1.0 - epsilon) * pr[p0 + a_s]
      if game is not None:
        if game.explore.shape[0] > 0:
          xi_s = (epsilon * game.explore[p0 + a_s]
                  + (1.0 - epsilon) * pr[p0 + a_s])
    else:
      xi_s = pr[p0 + a_s]
    back = 0.0
    if predictive:
      stored = offset + sign * predicted
      back = offset + sign * stored
    probed = False
    if eng is not None:
      if own and codes.rule == RULE_PROBE:
        span = eng.probes.shape[1]
        est = probed_estimate(value, c, a_s, pr, p0, flat(eng.probes),
                              (x * span + d) * eng.probes.shape[2], offset,
                              sign, child_est, x)
        predicted_here = 0.0
        probed = True
      elif codes.fallback and (b0 >= 0 or f0 >= 0):
        span = eng.probes.shape[1]
        q0 = (x * span + d) * eng.probes.shape[2]
        chain = flat(eng.probes)
        chained(k_cells, b0, (fmap[F_KEYED_COUNT] - fmap[F_KEYED_VALUE]) * c,
                cells, f0, c, chain, q0)
        est, predicted_here = estimate(value, c, a_s, xi_s, pr, p0, chain,
                                       q0, offset, sign, child_est, x, back)
        probed = True
    if not probed:
      est, predicted_here = estimate(value, c, a_s, xi_s, pr, p0, bcells,
                                     b0, offset, sign, child_est, x, back)
    if mine:
      acc = _update_own_row(game, eng, codes, study, records, scratch, x, d,
                            ee, row, c, est, pr, p0, rcells, r0, acells, a0,
                            avg_w, regret_w, predictive, acc)
    elif has_row and study is None and codes.averaging == 1:
      acc = _average_opponent_row(game, eng, codes, records, scratch, x, d,
                                  ee, row, c, pr, p0, acells, a0, t, acc)
    if learns and b0 >= 0:
      # Thesis Fig. 3.1: b <- (b k_i(I) + b + (u - b) / xi) / (k_i(I) + 1),
      # the corrected value; else the child's estimate, in the table's
      # utility.
      target = (child_est[x, a_s] if codes.rule == RULE_CORRECTED
                else offset + sign * value)
      _learn_edge(game, eng, codes, records, ee, d, row, c, update_player,
                  bcells, b0 + a_s, in_keyed, target)
    if eng is not None:
      if learns and codes.fallback and f0 >= 0:  # The chain's second link.
        _learn_edge(game, eng, codes, records, ee, d, row, c, update_player,
                    cells, f0 + a_s, False, offset + sign * value)
    if predictive:
      if b0 >= 0:
        bcells[b0 + a_s] = stored
      # Under sigma^{t+1}: recomputed where this node's row just changed.
      predicted = (predicted_value(pr, p0, c, a_s, back, child_est, x)
                   if mine else predicted_here)
    value = est
  return value, acc


# ---------------------------------------------------------------------------
# A tree's way down and its drivers.


@njit(cache=True, error_model="numpy", inline="always")
def tree_down(game, grown, codes, weights, scratch, x, update_player, t,
              records, rng, stream):
  """One episode's way down a compiled (or grown) tree from
  game.start_node: at every node sigma^t (DCFR rows catch up first,
  unless `records`), the sampling policy xi (eps-uniform mixed with sigma
  at the update player's nodes, sigma at the opponent's, chance's
  probabilities) and one uniform from the PCG64 `rng` (s_hi, s_lo, inc_hi,
  inc_lo) or, with `records`, from the counter-based `stream`.

  Returns:
    (depth, the node reached, the grown slot that stopped the walk (-1 if
    none), rng's new (s_hi, s_lo), stream).
  """
  kind, player, infoset = game.kind, game.player, game.infoset
  child_start, num_children = game.child_start, game.num_children
  edge_prob, regrets, strategy = game.edge_prob, game.regrets, game.strategy
  width = regrets.shape[1]
  scells = flat(strategy)
  epsilon = codes.epsilon
  s_hi, s_lo, inc_hi, inc_lo = rng
  n = game.start_node
  d = 0
  my_reach = 1.0
  opp_reach = 1.0
  opp_own_reach = 1.0
  sample_reach = 1.0
  missing = -1
  while kind[n] != 2:
    scratch.row[x, d] = n
    scratch.reach[x, d, R_OWN] = my_reach
    scratch.reach[x, d, R_OPP] = opp_reach
    scratch.reach[x, d, R_OPP_OWN] = opp_own_reach
    scratch.reach[x, d, R_SAMPLE] = sample_reach
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
      if weights.weighting == 2 and records is None:
        catch_up(regrets, iset, c, game.through, t, weights.log_pos,
                 weights.log_neg)
        regret_matching_row(regrets, iset, c, strategy, iset)
      if player[n] == update_player:
        if game.explore.shape[0] > 0:
          a = sample_index(scells, iset * width, c, u, epsilon, game.explore,
                           iset * width)
          sig = strategy[iset, a]
          sample_reach *= (epsilon * game.explore[iset * width + a]
                           + (1.0 - epsilon) * sig)
        else:
          a = sample_index(scells, iset * width, c, u, epsilon)
          sig = strategy[iset, a]
          sample_reach *= epsilon / c + (1.0 - epsilon) * sig
        my_reach *= sig
      else:
        a = sample_index(scells, iset * width, c, u, 0.0)
        sig = strategy[iset, a]
        opp_reach *= sig
        opp_own_reach *= sig
        sample_reach *= sig
    scratch.info[x, d] = a
    d += 1
    if grown is not None:
      # A grown tree reaches children through slots (games/grown.py).
      if grown.slot_node[s + a] < 0:
        missing = s + a
        break
      n = grown.slot_node[s + a]
    else:
      n = s + a
  return d, n, missing, s_hi, s_lo, stream


@njit(cache=True, error_model="numpy")
def tree_episodes(game, grown, codes, weights, utility_sum, first_iteration,
                  first_episode, num_episodes, learn_baselines, rng_state,
                  scratch, study):
  """A tree's (or grown tree's) episodes first_episode .. num_episodes - 1,
  one after the other, every table changed in place.

  Episode e updates player e % P at iteration t = first_iteration + e // P
  (P = 2 but on general trees), or at t = first_iteration throughout with
  `study`. Episodes start at the root, or, for the conditional variance
  (docs/pages/algorithms.md, "Measuring as the papers do"; Schmid et al.
  2019, Fig. 5), at a decision node game.start_node > 0, and then update
  its player; reaches start at 1 there. With the oracle baseline the
  baseline table is refilled with the exact values under sigma^t before
  each episode (once, with `study`). `rng_state`: the solver's PCG64
  (advanced in place). `grown`: a grown tree's slots (`Grown`), or None.

  Returns:
    (the next episode: num_episodes unless a grown tree's child is
    missing, nodes touched).
  """
  game = borrowed_game(game, game.start_node)
  weights = borrowed_weights(weights)
  scratch = borrowed_scratch(scratch)
  num_players = players_of(game.utility)
  rng = (rng_state[0], rng_state[1], rng_state[2], rng_state[3])
  touched = 0
  acc = Counts(0, 0.0, 0.0, 0)
  e = first_episode
  if grown is not None:
    e = grown.io[0]
    grown.io[1] = -1
  # The scratch slot: a constant 0, which LLVM folds into every index.
  x = 0
  while e < num_episodes:
    update_player = e % num_players
    if game.start_node > 0:
      update_player = game.player[game.start_node]
    t = (first_iteration if study is not None
         else first_iteration + e // num_players)
    if codes.rule == RULE_ORACLE and (study is None or e == 0):
      touched += refill_oracle(game, utility_sum, weights, t)
    d, n, missing, s_hi, s_lo, _ = tree_down(
        game, grown, codes, weights, scratch, x, update_player, t, None, rng,
        np.uint64(0))
    if grown is not None and missing >= 0:
      if missing != grown.io[2]:
        # A child not stored: stop before any table changes; the episode
        # runs again from the same generator state once it is stored.
        grown.io[0] = e
        grown.io[1] = missing
        grown.io[3] = d
        break
      grown.io[2] = -1
      terminal = (grown.leaf_value[0] if update_player == 0
                  else utility_sum - grown.leaf_value[0])
    else:
      terminal = payoff(game.utility, utility_sum, n, update_player)
    rng = (s_hi, s_lo, rng[2], rng[3])
    value, acc = up_pass(game, None, None, codes, weights, utility_sum,
                         scratch, x, e, d, terminal, update_player, t,
                         learn_baselines, study, None, acc)
    if study is not None:
      stats = study.start_stats
      if stats.shape[0] > 0:
        # child_est and value hold u(h, .) and u(h) of the start node.
        width = game.regrets.shape[1]
        for j in range(game.num_children[game.start_node]):
          ce = scratch.child_est[x, j]
          stats[0, j] += ce
          stats[1, j] += ce * ce
        stats[0, width] += value
        stats[1, width] += value * value
      study.root_values[e] = value
    touched += _touched(codes, learn_baselines, d)
    e += 1
  if grown is not None and grown.io[1] < 0:
    grown.io[0] = num_episodes
  rng_state[0] = rng[0]
  rng_state[1] = rng[1]
  return e, touched


@njit(cache=True, inline="always")
def _touched(codes, learn_baselines, depth):
  """Nodes an episode of `depth` touches: its path and the terminal, and the
  predictive baseline's refresh along the path."""
  if codes.rule == RULE_PREDICTIVE and learn_baselines:
    return 2 * depth + 1
  return depth + 1


@njit(cache=True, error_model="numpy")
def record_episodes(game, codes, weights, utility_sum, first_iteration,
                    num_episodes, key, worker, workers, scratch, records):
  """Phase 1 of a batch (`run_batches`): episodes of the worker-th of
  `workers` contiguous blocks of 0 .. num_episodes - 1, episode k drawing
  from the stream `stream_start(key, k)`, updating player k % P at
  iteration first_iteration + k // P, against the tables as they were at
  the batch start; their increments go to `records`. Returns the nodes
  touched."""
  game = borrowed_game(game, 0)
  weights = borrowed_weights(weights)
  scratch = borrowed_scratch(scratch)
  num_players = players_of(game.utility)
  touched = 0
  acc = Counts(0, 0.0, 0.0, 0)
  rng = (np.uint64(0), np.uint64(0), np.uint64(0), np.uint64(0))
  for e in range(worker * num_episodes // workers,
                 (worker + 1) * num_episodes // workers):
    update_player = e % num_players
    t = first_iteration + e // num_players
    d, n, _, _, _, _ = tree_down(game, None, codes, weights, scratch, worker,
                                 update_player, t, records, rng,
                                 stream_start(key, e))
    records.depth[e] = d
    records.node[d, e] = n
    up_pass(game, None, None, codes, weights, utility_sum, scratch, worker,
            e, d, payoff(game.utility, utility_sum, n, update_player),
            update_player, t, True, None, records, acc)
    touched += d + 1
  return touched


@njit(cache=True, error_model="numpy")
def apply_records(game, codes, weights, first_iteration, num_episodes,
                  part, parts, num_players, stride, records, row_mark,
                  row_list):
  """Phase 2 of a batch for the rows of worker `part` (row % parts ==
  part): every record, in episode order, applied with the pieces of the
  way up (`add_regrets`, `add_sums`, `catch_up_average`, the baselines'
  `learn`), as the sequential episodes apply an episode's increments;
  then sigma of each changed row recomputed.

  Rows are infosets for the regrets, sigma and the average, and for the
  thesis and infoset-keyed baselines; baseline slots for the other keys.
  """
  regrets, through, log_pos, log_neg = borrowed_discounts(
      game.regrets, game.through, weights.log_pos, weights.log_neg)
  num_actions = game.num_actions
  num_infosets = regrets.shape[0]
  width = regrets.shape[1]
  rcells = flat(regrets)
  acells = flat(game.avg)
  rec_value = flat(records.value)
  rec_avg = flat(records.avg)
  depth = records.value.shape[1]
  acc = Counts(0, 0.0, 0.0, 0)
  learns = codes.rule == RULE_CORRECTED or codes.rule == RULE_CHILD
  changed = 0
  for k in range(num_episodes):
    update_player = k % num_players
    t = first_iteration + k // num_players
    for d in range(records.depth[k]):
      code = records.row[k, d]
      iset = code >> 1
      i0 = (k * depth + d) * width
      if code >= 0 and iset % parts == part:
        c = num_actions[iset]
        if code & 1:
          if weights.weighting == 2:
            catch_up(regrets, iset, c, through, t, log_pos, log_neg)
          _, acc = add_regrets(rcells, iset * width, c, rec_value, i0,
                               codes.regret_plus, acc)
          if codes.averaging == 0:
            acc = add_sums(acells, iset * width, c, rec_avg, i0, acc)
          if row_mark[iset] != first_iteration:
            row_mark[iset] = first_iteration
            row_list[changed] = iset
            changed += 1
        elif codes.averaging == 1:
          acc = catch_up_average(acells, iset * width, c, rec_avg, i0, t,
                                 game.avg_last[iset], records.scalar[k, d],
                                 codes.regret_plus, acc)
          game.avg_last[iset] = t
      if learns:
        n = records.node[d, k]
        s = game.child_start[n]
        base = tree_baseline_base(codes, game.kind[n], n, game.infoset[n], s,
                                  game.key_ids, update_player, num_infosets,
                                  width, stride)
        if base < 0:
          continue
        slot = base + records.node[d + 1, k] - s
        owner = game.infoset[n] if codes.key == KEY_INFOSET else slot
        if owner % parts == part:
          cslot = slot
          if codes.rule == RULE_CORRECTED:
            cslot = update_player * num_infosets + game.infoset[n]
          baselines.learn(game.baseline, slot, game.baseline_count, cslot,
                          records.target[k, d], codes.decay)
  for m in range(changed):
    iset = row_list[m]
    regret_matching_row(regrets, iset, num_actions[iset], game.strategy,
                        iset)


@njit(cache=True, error_model="numpy")
def reset_level(game, utility_sum, num_players, stride, first, last, level,
                t0, records, reset_mark):
  """Phase 3 of a batch with the predictive baseline, at one depth, for the
  episodes first .. last - 1: b(h a*) <- sum_a' sigma^{t+1}(h a*, a')
  b(h a*, a') (u(z) at a terminal) for the edge into the episode's node at
  depth `level`, in player 0's utility (general trees: in the episode's
  update player's block and utility). `run_batches` resets the depths
  from the deepest up."""
  for k in range(first, last):
    if records.depth[k] < level:
      continue
    h = records.node[level, k]
    # Player 0's table, or the update player's block (general).
    p = k % num_players if stride > 0 else 0
    o = p * stride
    if reset_mark[o + h] == t0:
      continue  # Already reset in this batch (the same value).
    reset_mark[o + h] = t0
    if game.kind[h] == 2:
      game.baseline[o + h] = payoff(game.utility, utility_sum, h, p)
      continue
    s = o + game.child_start[h]
    v = 0.0
    if game.kind[h] == 0:
      for j in range(game.num_children[h]):
        v += game.edge_prob[game.child_start[h] + j] * game.baseline[s + j]
    else:
      i = game.infoset[h]
      for j in range(game.num_children[h]):
        v += game.strategy[i, j] * game.baseline[s + j]
    game.baseline[o + h] = v


@njit(cache=True, error_model="numpy", parallel=parallel_phases())
def run_batches(game, codes, weights, utility_sum, first_iteration,
                num_iterations, batch, rng_state, workers, scratch, records,
                reset_mark, row_mark, row_list):
  """A tree's training iterations in batches, episodes in parallel.

  The batch of iteration t ends at the next multiple of `batch` (or at this
  call's last iteration). Per batch starting at iteration t0: one key from
  `rng_state`; phase 1, its P B episodes (`record_episodes`, contiguous
  blocks per worker) against the tables of the batch start (the oracle
  baseline refilled before it); phase 2, `apply_records` by every worker,
  rows partitioned row % workers; phase 3 (predictive baseline),
  `reset_level` one depth at a time from the deepest. The tables depend on the generator's state and the batch size, not on the number of
  workers.

  Args:
    game: `TreeArgs`; scratch: `Scratch` with one slot per worker; records:
      `Records` with one slot per episode of a batch.
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
  t0 = first_iteration
  num_players = players_of(game.utility)
  stride = baseline_stride(game.utility, codes.owner, codes.key,
                           game.baseline)
  while t0 <= last_iteration:
    t1 = batch_end(t0, batch, last_iteration)
    count = num_players * (t1 - t0 + 1)
    key = batch_key(rng_state)
    if codes.rule == RULE_ORACLE:
      touched += refill_oracle(game, utility_sum, weights, t0)
    for w in prange(workers):
      touched += record_episodes(game, codes, weights, utility_sum, t0,
                                 count, key, np.int64(w), workers, scratch,
                                 records)
    for part in prange(workers):
      apply_records(game, codes, weights, t0, count, np.int64(part),
                    workers, num_players, stride, records, row_mark,
                    row_list[part])
    if codes.rule == RULE_PREDICTIVE:
      deepest = 0
      for k in range(count):
        deepest = max(deepest, records.depth[k])
        touched += records.depth[k]
      for level in range(deepest, 0, -1):
        for part in prange(workers):
          reset_level(game, utility_sum, num_players, stride,
                      np.int64(part) * count // workers,
                      (np.int64(part) + 1) * count // workers,
                      level, t0, records, reset_mark)
    t0 = t1 + 1
  return touched


# ---------------------------------------------------------------------------
# An engine's way down and its drivers.


@njit(cache=True, error_model="numpy", inline="always")
def key_hash(code, params, st, key, d):
  """The (h1, h2) key of an engine's state `st` at depth d under key code
  `key` (KEY_SITUATION or KEY_PUBLIC): a situation's from the engine, a
  public state's from the engine and the depth."""
  if key == KEY_SITUATION:
    return protocol.situation_hash(code, params, st)
  # With the depth: some engines' public states span several depths
  # (phantom_ttt, classical, reveal-nothing), and a key must not repeat
  # along a path.
  h1, h2 = protocol.public_hash(code, params, st)
  return hash_step(h1, d), hash_step(h2, d ^ 0x5A5A5A5A)


@njit(cache=True, error_model="numpy", inline="always")
def baseline_key(code, eng, codes, st, x, d):
  """The keyed baseline's key of the node at depth d (state `st`), written
  to eng.path_key[x, d] (`key_hash`); a history's running hash is already
  there (written by the move into it)."""
  if codes.key == KEY_SITUATION or codes.key == KEY_PUBLIC:
    h1, h2 = key_hash(code, eng.params, st, codes.key, d)
    eng.path_key[x, d, 0] = h1
    eng.path_key[x, d, 1] = h2


@njit(cache=True, error_model="numpy", inline="always")
def _arrive(code, eng, keyed, codes, scratch, st, x, d, uses_keyed, flight):
  """An engine's node, step 1: the player, the moves and the keys (the
  infoset's, and the keyed baseline's), with a prefetch of their index
  slots when episodes are in flight; the next step set. Returns whether
  the node is terminal."""
  p = protocol.player(code, eng.params, st)
  if p == protocol.TERMINAL:
    return True
  scratch.info[x, d] = (p + 2) | (protocol.num_moves(code, eng.params, st)
                                  << 8)
  if keyed is not None:
    if uses_keyed:
      baseline_key(code, eng, codes, st, x, d)
      if flight > 1:
        hashed.slot_hint(hashed.borrowed(keyed).index, eng.path_key[x, d, 0])
  if p == protocol.CHANCE:
    scratch.row[x, d] = -1
  else:
    h1, h2 = protocol.infoset_hash(code, eng.params, st, p)
    eng.lane_keys[x, 0] = h1
    eng.lane_keys[x, 1] = h2
    if flight > 1:
      hashed.slot_hint(eng.tab.index, h1)
  eng.lanes[x, L_STEP] = (LOCATE if p != protocol.CHANCE or uses_keyed
                          else PLAY)
  return False


@njit(cache=True, error_model="numpy", inline="always")
def _locate(eng, keyed, scratch, x, d, uses_keyed, flight, widest):
  """Step 2: the index slots whose tags match the node's keys (a decision's
  infoset row, the keyed row), with a prefetch of the rows they name when
  episodes are in flight. Returns whether a row is on its way (the episode
  waits a turn)."""
  pending = False
  if (scratch.info[x, d] & 255) != 1:  # A decision (not chance).
    index = eng.tab.index
    s = hashed.candidate(index, eng.lane_keys[x, 1],
                         hashed.home_slot(index, eng.lane_keys[x, 0]))
    eng.lanes[x, L_SLOT] = s
    if flight > 1:
      pending = hashed.row_hint(index, eng.tab.words, s, widest[0])
  if keyed is not None:
    if uses_keyed:
      k = hashed.borrowed(keyed)
      k_index, k_words = k.index, k.words
      s = hashed.candidate(k_index, eng.path_key[x, d, 1],
                           hashed.home_slot(k_index, eng.path_key[x, d, 0]))
      eng.lanes[x, L_BSLOT] = s
      if flight > 1:
        pending |= hashed.row_hint(k_index, k_words, s, widest[1])
  eng.lanes[x, L_STEP] = CONFIRM
  return pending


@njit(cache=True, error_model="numpy", inline="always")
def _confirm(eng, keyed, scratch, x, d, uses_keyed, atomic):
  """Step 3: the rows (inserted where a key has none, while allowed):
  scratch.row[x, d] (the infoset's) and eng.path_brow[x, d] (the keyed
  baseline's); -1 where none."""
  c = (scratch.info[x, d] >> 8) & 0xFFFFFF
  if (scratch.info[x, d] & 255) != 1:  # A decision (not chance).
    o, _ = hashed.row_at(eng.tab, eng.lane_keys[x, 0], eng.lane_keys[x, 1],
                         c, eng.allow_insert, eng.block, atomic,
                         eng.lanes[x, L_SLOT])
    scratch.row[x, d] = o
  if keyed is not None:
    if uses_keyed:
      o, _ = hashed.row_at(hashed.borrowed(keyed), eng.path_key[x, d, 0],
                           eng.path_key[x, d, 1], c, eng.allow_keyed,
                           eng.block[:0], atomic, eng.lanes[x, L_BSLOT])
      eng.path_brow[x, d] = o
  eng.lanes[x, L_STEP] = PLAY


@njit(cache=True, error_model="numpy", inline="always")
def row_sigma(eng, weights, o, c, t, out, at):
  """sigma^t of the engine's infoset row o (c moves) into out[at:at + c]:
  regret matching of its regrets, after DCFR's pending discounts."""
  words, cells, layout = eng.tab.words, eng.tab.cells, eng.tab.layout
  start = hashed.first_cell(o, layout[hashed.L_HEADER],
                            layout[hashed.L_PER_WORD]) + (
                                eng.fmap[F_REGRET] * c)
  if weights.weighting == 2:
    catch_up_cells(cells, start, c, words, o + eng.fmap[H_THROUGH], t,
                   weights.log_pos, weights.log_neg)
  match_into(cells, start, c, out, at)


@njit(cache=True, error_model="numpy", inline="always")
def _play(code, eng, codes, weights, scratch, flat_sigma, flat_probs, st, x,
          d, update_player, t, u):
  """Step 4: sigma^t at the node (the regret matching of its row, after
  DCFR's pending discounts; uniform where it has none; chance's
  probabilities), the sample from uniform `u` under xi, the reaches and
  the move. Returns the move."""
  info = scratch.info[x, d]
  p = (info & 255) - 2
  c = (info >> 8) & 0xFFFFFF
  o = scratch.row[x, d]
  epsilon = codes.epsilon
  my_reach = scratch.reach[x, d, R_OWN]
  opp_reach = scratch.reach[x, d, R_OPP]
  opp_own_reach = scratch.reach[x, d, R_OPP_OWN]
  sample_reach = scratch.reach[x, d, R_SAMPLE]
  max_depth = scratch.row.shape[1]
  at = (x * max_depth + d) * scratch.child_est.shape[1]
  if p == protocol.CHANCE:
    for j in range(c):
      flat_probs[at + j] = protocol.chance_prob(code, eng.params, st, j)
    a = sample_index(flat_probs, at, c, u, 0.0)
    sig = flat_probs[at + a]
    opp_reach *= sig
    sample_reach *= sig
  else:
    if o >= 0:
      row_sigma(eng, weights, o, c, t, flat_sigma, at)
      a = sample_index(flat_sigma, at, c, u,
                       epsilon if p == update_player else 0.0)
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
  scratch.info[x, d] = info | (np.int64(a) << 32)
  if codes.key == KEY_HISTORY and d + 1 < max_depth:
    g1, g2 = history_step(eng.path_key[x, d, 0], eng.path_key[x, d, 1], a)
    eng.path_key[x, d + 1, 0] = g1
    eng.path_key[x, d + 1, 1] = g2
  protocol.apply(code, eng.params, st, a)
  if d + 1 < max_depth:
    scratch.reach[x, d + 1, R_OWN] = my_reach
    scratch.reach[x, d + 1, R_OPP] = opp_reach
    scratch.reach[x, d + 1, R_OPP_OWN] = opp_own_reach
    scratch.reach[x, d + 1, R_SAMPLE] = sample_reach
  eng.lanes[x, L_DEPTH] = d + 1
  eng.lanes[x, L_STEP] = ARRIVE
  return a


@njit(cache=True, error_model="numpy", inline="always")
def _uniform(eng, x, workers, rng):
  """The next uniform of episode lane x: from its stream (several
  workers) or the PCG64 `rng` (one). Returns (rng, u)."""
  if workers > 1:
    eng.streams[x], u = stream_uniform(eng.streams[x])
    return rng, u
  s_hi, s_lo, u = pcg64_next(rng[0], rng[1], rng[2], rng[3])
  return (s_hi, s_lo, rng[2], rng[3]), u


@njit(cache=True, error_model="numpy", inline="always")
def _rollout(code, eng, weights, st, x, t, workers, rng):
  """Probing's rollout from state `st` (changed) to the end: both players
  sample sigma^t (regret matching of their rows, after DCFR's pending
  discounts; uniform where a row is not stored; no row is inserted),
  chance its probabilities. Returns (player 0's return, rng)."""
  buf = flat(eng.probes)
  span = eng.probes.shape[1]
  b0 = (x * span + span - 1) * eng.probes.shape[2]
  index, words = eng.tab.index, eng.tab.words
  while True:
    p = protocol.player(code, eng.params, st)
    if p == protocol.TERMINAL:
      return protocol.returns0(code, eng.params, st), rng
    c = protocol.num_moves(code, eng.params, st)
    rng, u = _uniform(eng, x, workers, rng)
    if p == protocol.CHANCE:
      for j in range(c):
        buf[b0 + j] = protocol.chance_prob(code, eng.params, st, j)
      a = sample_index(buf, b0, c, u, 0.0)
    else:
      h1, h2 = protocol.infoset_hash(code, eng.params, st, p)
      o = hashed.find(index, words, h1, h2)
      if o >= 0 and hashed.width_of(words, o) == c:
        row_sigma(eng, weights, o, c, t, buf, b0)
        a = sample_index(buf, b0, c, u, 0.0)
      else:
        a = min(int(u * c), c - 1)
    protocol.apply(code, eng.params, st, a)


@njit(cache=True, error_model="numpy", inline="always")
def _probe_moves(code, eng, weights, scratch, x, d, t, workers, rng):
  """Probing (Gibson et al. 2012, Sec. 4) at the update player's node at
  depth d, whose state before its move is eng.probe_state[x, 0]: one
  rollout from each move but the sampled one, its return to
  eng.probes[x, d, a] (read by `probed_estimate`). Returns rng."""
  info = scratch.info[x, d]
  c = (info >> 8) & 0xFFFFFF
  a_s = info >> 32
  for j in range(c):
    if j == a_s:
      continue
    st = eng.probe_state[x, 1]
    for i in range(st.shape[0]):
      st[i] = eng.probe_state[x, 0, i]
    protocol.apply(code, eng.params, st, j)
    value, rng = _rollout(code, eng, weights, st, x, t, workers, rng)
    eng.probes[x, d, j] = value
  return rng


@njit(cache=True, error_model="numpy", inline="always")
def engine_down(code, eng, keyed, probe, codes, weights, scratch, wk, e,
                group, first_iteration, workers, rng, key, atomic):
  """The way down of a group of `group` episodes e .. e + group - 1, in
  lockstep (module docstring): a node takes four steps, `_arrive` (its
  keys, and a prefetch of their index slots), `_locate` (the slots whose
  tags match, and a prefetch of the rows they name), `_confirm` (the rows;
  inserts where a key has none) and `_play` (sigma^t, the sample, the
  move); with K > 1 each episode takes one step per turn, so that the
  misses of the K lookups overlap; with K = 1 the four follow at once.
  The infoset row and, with a keyed baseline, the keyed row are found
  together. Each episode's lane x = wk + k (eng.lanes[x],
  eng.lane_keys[x], eng.streams[x]) keeps its step, index slots, depth and
  infoset key between turns; episode e + k leaves eng.lanes[x, L_DEPTH] =
  -1 - its depth. One uniform per node: from the PCG64 `rng` (one worker)
  or each episode's stream under `key` (several). `probe` is None unless
  the baseline is probing (True): None compiles its rollouts out, as
  `keyed` None does the keyed lookups (inlined, they cost the way down a
  quarter of its speed without a baseline).

  Returns:
    rng's new (s_hi, s_lo).
  """
  state = eng.state
  lanes = eng.lanes
  layout = eng.tab.layout
  max_moves = scratch.child_est.shape[1]
  widest = (hashed.layout_row_words(layout, max_moves), 0)
  if keyed is not None:
    widest = (widest[0], hashed.layout_row_words(
        hashed.borrowed(keyed).layout, max_moves))
  flat_sigma = flat(eng.path_sigma)
  flat_probs = flat(eng.path_probs)
  flight = eng.in_flight
  uses_keyed = codes.key != KEY_INFOSET and codes.key != KEY_NONE
  s_hi, s_lo, inc_hi, inc_lo = rng
  for k in range(group):
    x = wk + k
    if eng.start.shape[0] > 0:
      for i in range(eng.start.shape[0]):
        state[x, i] = eng.start[i]
    else:
      protocol.reset(code, eng.params, state[x])
    lanes[x, L_DEPTH] = 0
    lanes[x, L_STEP] = ARRIVE
    for f in range(4):
      scratch.reach[x, 0, f] = 1.0
    eng.path_key[x, 0, 0] = eng.start_key[0]
    eng.path_key[x, 0, 1] = eng.start_key[1]
  live = group
  while live > 0:
    for k in range(group):
      x = wk + k
      d = lanes[x, L_DEPTH]
      if d < 0:
        continue
      st = state[x]
      while True:
        if lanes[x, L_STEP] == ARRIVE:
          if _arrive(code, eng, keyed, codes, scratch, st, x, d, uses_keyed,
                     flight):
            lanes[x, L_DEPTH] = -1 - d
            live -= 1
            break
          if flight > 1 and lanes[x, L_STEP] == LOCATE:
            break
        if lanes[x, L_STEP] == LOCATE:
          if _locate(eng, keyed, scratch, x, d, uses_keyed, flight, widest):
            break
        if lanes[x, L_STEP] == CONFIRM:
          _confirm(eng, keyed, scratch, x, d, uses_keyed, atomic)
        ee = e + k
        if workers > 1:
          if d == 0:
            eng.streams[x] = stream_start(key, ee)
          eng.streams[x], u = stream_uniform(eng.streams[x])
        else:
          s_hi, s_lo, u = pcg64_next(s_hi, s_lo, inc_hi, inc_lo)
        if probe is not None:  # Pruned before typing when None.
          probing = (scratch.info[x, d] & 255) - 2 == ee % 2
          if probing:
            for i in range(st.shape[0]):
              eng.probe_state[x, 0, i] = st[i]
        _play(code, eng, codes, weights, scratch, flat_sigma, flat_probs, st,
              x, d, ee % 2, first_iteration + ee // 2, u)
        if probe is not None:
          if probing:
            s_hi, s_lo, _, _ = _probe_moves(
                code, eng, weights, scratch, x, d, first_iteration + ee // 2,
                workers, (s_hi, s_lo, inc_hi, inc_lo))
        d += 1
        if flight > 1:
          break
  return s_hi, s_lo


@njit(cache=True, error_model="numpy", nogil=True, _nrt=False)
def engine_episodes(code, eng, keyed, probe, codes, weights, utility_sum,
                    first_iteration, first_episode, num_episodes, rng_state,
                    key, worker, workers, scratch):
  """An engine's episodes first_episode .. num_episodes - 1 (a Hogwild
  worker, `workers` > 1: both episodes of the iterations it claims from
  eng.claim), K = eng.in_flight at a time, every table changed in place.

  Episode e updates player e % 2 at iteration first_iteration + e // 2. One
  worker draws from the solver's PCG64 `rng_state` (advanced in place),
  several each episode from the stream `stream_start(key, e)`. Groups in
  flight are the episodes gK .. gK + K - 1, cut at a call's first and last
  episode, so a run is reproducible for a given K, calls that start at
  multiples of K episodes compose, and K = 1 is the one-by-one run. The
  way down of a group (`engine_down`) reads the tables as the group found
  them; then their ways up (`up_pass`) run one after the other, in episode
  order. Before each group (a Hogwild worker: each claim) the tables must
  have room for its paths (and a worker's fresh arena block); if not,
  meta[STOP] is set and the call returns. `probe` is True when the
  baseline is probing (codes.rule == RULE_PROBE), else None
  (`engine_down`).

  Returns:
    (the next episode this worker would run: num_episodes or beyond unless
    a table ran short of room, nodes touched, episodes run).
  """
  numba.literally(code)
  tab = hashed.borrowed(eng.tab)
  index, meta, layout = tab.index, tab.meta, tab.layout
  scratch = borrowed_scratch(scratch)
  weights = borrowed_weights(weights)
  eng = borrowed_engine(eng)
  header = layout[hashed.L_HEADER]
  per_word = layout[hashed.L_PER_WORD]
  max_depth = scratch.row.shape[1]
  max_moves = scratch.child_est.shape[1]
  widest = hashed.row_words(max_moves, header, layout[hashed.L_FIELDS],
                            per_word)
  if keyed is not None:
    k = hashed.borrowed(keyed)
    k_index, k_meta, k_layout = k.index, k.meta, k.layout
    k_widest = hashed.row_words(max_moves, k_layout[hashed.L_HEADER],
                                k_layout[hashed.L_FIELDS],
                                k_layout[hashed.L_PER_WORD])
  atomic = workers > 1
  flight = eng.in_flight
  # A Hogwild worker claims whole iterations, `per` at a time.
  per = max(flight // 2, 1)
  block = eng.block
  # Room for every worker's episodes and a fresh block of its own (whose
  # rows meta may not count yet).
  spare = block[2] if block.shape[0] > 0 else 0
  spare_rows = hashed.BLOCK_FLUSH if block.shape[0] > 0 else 0
  # Rows a worker may take before its next check: its group's paths (a
  # Hogwild worker's whole claim, checked when it starts, so that a
  # claimed iteration always runs whole).
  per_check = max_depth * (2 * per if workers > 1 else flight)
  rng = (rng_state[0], rng_state[1], rng_state[2], rng_state[3])
  acc = Counts(0, 0.0, 0.0, 0)
  touched = 0
  ran = 0
  wk = np.int64(worker) * flight if workers > 1 else np.int64(0)
  e = 2 * atomic_add(eng.claim, 0, per) if workers > 1 else first_episode
  claimed = min(e + 2 * per, num_episodes)  # Hogwild: the claim's end.
  starts_claim = True
  while e < num_episodes:
    if workers == 1 or starts_claim:
      if eng.allow_insert and not hashed.has_room(
          meta, index, workers * (per_check + spare_rows),
          workers * (per_check * widest + spare)):
        meta[STOP] = 1
        break
      if keyed is not None:
        if eng.allow_keyed and not hashed.has_room(
            k_meta, k_index, workers * per_check,
            workers * per_check * k_widest):
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
    s_hi, s_lo = engine_down(code, eng, keyed, probe, codes, weights,
                             scratch, wk, e, group, first_iteration, workers,
                             rng, key, atomic)
    rng = (s_hi, s_lo, rng[2], rng[3])
    # Up: one episode after the other, in episode order.
    for k in range(group):
      ee = e + k
      update_player = ee % 2
      u0 = protocol.returns0(code, eng.params, eng.state[wk + k])
      ep_depth = -1 - eng.lanes[wk + k, L_DEPTH]
      _, acc = up_pass(None, eng, keyed, codes, weights, utility_sum,
                       scratch, wk + k, ee, ep_depth,
                       u0 if update_player == 0 else utility_sum - u0,
                       update_player, first_iteration + ee // 2, True, None,
                       None, acc)
      touched += _touched(codes, True, ep_depth)
      ran += 1
    e += group
    starts_claim = False
    if workers > 1 and e >= claimed:
      e = 2 * atomic_add(eng.claim, 0, per)
      claimed = min(e + 2 * per, num_episodes)
      starts_claim = True
  hashed.flush_block(meta, block)
  flush_counts(meta, acc)
  if workers == 1:
    rng_state[0] = rng[0]
    rng_state[1] = rng[1]
  return e, touched, ran


# ---------------------------------------------------------------------------
# Studies on an engine.


@njit(cache=True, error_model="numpy")
def engine_conditional(code, eng, keyed, probe, codes, utility_sum, t,
                       trajectories, continuations, rng_state, scratch,
                       start, moves, out):
  """The conditional variance of the estimates on an engine (Schmid et al.
  2019, Fig. 5; docs/pages/algorithms.md, "Measuring as the papers do"),
  with the tables frozen (no row is inserted, nothing learns).

  `trajectories` episodes are sampled from the root as training samples
  them at iteration t (episode k updates player k % 2); at every decision
  node h of the update player on the way, `continuations` episodes start
  from h's state (reaches 1 there) and give u(h, a) and u(h); per h, the
  sample variances (divisor M - 1) of u(h, a), of u(h) and of the sampled
  regret r(h, a) = w(h) (u(h, a) - u(h)), w(h) = pi_{-i}(h) / q(h) from the
  trajectory, are added to out: [0] histories measured, [1] sum over h of
  mean_a Var[u(h, a)], [2] of Var[u(h)], [3] of mean_a Var[r(h, a)], [4]
  of w(h). A trajectory visits h with probability q(h), so these sums over
  the histories visited, divided by [0], are the q-weighted averages of
  the tree's `conditional_variance`.

  Args:
    eng: `EngineArgs` with allow_insert and allow_keyed False, in_flight 1;
      its start and start_key are overwritten.
    start: int64[D, state size], the trajectory's states by depth.
    moves: int64[D], its moves.
    out: float64[5], added to.
  """
  numba.literally(code)
  max_moves = scratch.child_est.shape[1]
  sums = np.zeros(max_moves + 1)
  squares = np.zeros(max_moves + 1)
  rsums = np.zeros(max_moves)
  rsquares = np.zeros(max_moves)
  rng = (rng_state[0], rng_state[1], rng_state[2], rng_state[3])
  acc = Counts(0, 0.0, 0.0, 0)
  no_study = Study(np.zeros((0, 0)), np.zeros((0, 0)), np.zeros((0, 0)),
                   np.zeros((0, 0)), np.zeros(continuations),
                   np.zeros((0, 0)))
  weights = Weights(0, 0, 0.0, np.zeros(1), np.zeros(1))
  root = EngineArgs(eng.params, eng.tab, eng.fmap, False, False, 1,
                    eng.state, eng.path_probs, eng.path_sigma, eng.path_key,
                    eng.path_brow, eng.block, eng.claim, eng.start,
                    eng.start_key, eng.lanes, eng.lane_keys, eng.streams,
                    eng.probes, eng.probe_state)
  for k in range(trajectories):
    i = k % 2
    # The trajectory (episode index i: player i updates, iteration t).
    s_hi, s_lo = engine_down(code, root, keyed, probe, codes, weights,
                             scratch, 0, i + 2 * (t - 1), 1, 1, 1, rng,
                             np.uint64(0), False)
    rng = (s_hi, s_lo, rng[2], rng[3])
    d_end = -1 - eng.lanes[0, L_DEPTH]
    for d in range(d_end):
      moves[d] = scratch.info[0, d] >> 32
    # The states along it, replayed, and the decisions of player i.
    if root.start.shape[0] > 0:
      start[0, :] = root.start
    else:
      protocol.reset(code, eng.params, start[0])
    path_w = np.zeros(d_end)
    path_keys = np.zeros((d_end, 2), dtype=np.uint64)
    for d in range(d_end):
      path_w[d] = scratch.reach[0, d, R_OPP] / scratch.reach[0, d, R_SAMPLE]
      if d < eng.path_key.shape[1]:  # Keyed baselines only.
        path_keys[d, 0] = eng.path_key[0, d, 0]
        path_keys[d, 1] = eng.path_key[0, d, 1]
      if d + 1 < d_end:
        start[d + 1, :] = start[d]
        protocol.apply(code, eng.params, start[d + 1], moves[d])
    for d in range(d_end):
      if protocol.player(code, eng.params, start[d]) != i:
        continue
      c = protocol.num_moves(code, eng.params, start[d])
      here = EngineArgs(eng.params, eng.tab, eng.fmap, False, False, 1,
                        eng.state, eng.path_probs, eng.path_sigma,
                        eng.path_key, eng.path_brow, eng.block, eng.claim,
                        start[d], path_keys[d], eng.lanes, eng.lane_keys,
                        eng.streams, eng.probes, eng.probe_state)
      sums[:] = 0.0
      squares[:] = 0.0
      rsums[:] = 0.0
      rsquares[:] = 0.0
      for m in range(continuations):
        s_hi, s_lo = engine_down(code, here, keyed, probe, codes, weights,
                                 scratch, 0, i + 2 * (t - 1), 1, 1, 1, rng,
                                 np.uint64(0), False)
        rng = (s_hi, s_lo, rng[2], rng[3])
        u0 = protocol.returns0(code, eng.params, eng.state[0])
        value, acc = up_pass(None, here, keyed, codes, weights, utility_sum,
                             scratch, 0, i, -1 - eng.lanes[0, L_DEPTH],
                             u0 if i == 0 else utility_sum - u0, i, t, False,
                             no_study, None, acc)
        for j in range(c):
          ce = scratch.child_est[0, j]
          sums[j] += ce
          squares[j] += ce * ce
          r = path_w[d] * (ce - value)
          rsums[j] += r
          rsquares[j] += r * r
        sums[max_moves] += value
        squares[max_moves] += value * value
      action_var = 0.0
      regret_var = 0.0
      for j in range(c):
        action_var += _sample_variance(sums[j], squares[j], continuations)
        regret_var += _sample_variance(rsums[j], rsquares[j], continuations)
      out[0] += 1.0
      out[1] += action_var / c
      out[2] += _sample_variance(sums[max_moves], squares[max_moves],
                                 continuations)
      out[3] += regret_var / c
      out[4] += path_w[d]
  rng_state[0] = rng[0]
  rng_state[1] = rng[1]


@njit(cache=True, error_model="numpy", inline="always")
def _sample_variance(total, squares, m):
  """The sample variance (divisor m - 1) from a sum and a sum of squares,
  never below 0."""
  return max((squares - total * total / m) / (m - 1), 0.0)
