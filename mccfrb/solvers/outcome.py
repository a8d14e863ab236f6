"""Outcome-sampling MCCFR with baselines (kernels/outcome.py)."""

from typing import NamedTuple
import warnings

import numpy as np

from mccfrb import games
from mccfrb.games import balanced as balanced_lib
from mccfrb.games import keys as keys_lib
from mccfrb.games import tree as tree_lib
from mccfrb.games.engines.common import call_literal
from mccfrb.kernels import baselines as baselines_lib
from mccfrb.kernels import exact
from mccfrb.kernels import outcome
from mccfrb.kernels import rng as rng_lib
from mccfrb.solvers import base
from mccfrb.solvers import engine as engine_lib
from mccfrb.solvers import grown as grown_lib
from mccfrb.solvers import representation as representation_lib
from mccfrb.tables import hashed

# Baseline kind -> its key, owner and rule (kernels/baselines.py, the
# registry every list of kinds derives from).
BASELINES = baselines_lib.BASELINES
AVERAGINGS = {"stochastic": 0, "optimistic": 1}
# What epsilon mixes in at the update player's nodes (games/balanced.py).
EXPLORATIONS = ("uniform", "balanced")
# Regret update -> kernel code: regret matching, or regret matching+ with
# linear averaging (MCCFRb+, docs/pages/algorithms.md).
REGRETS = {"rm": 0, "rm+": 1}
# The baselines an engine runs (the registry's: keys an engine computes,
# rules it runs).
ENGINE_BASELINES = baselines_lib.kinds("engine")
# baseline=None: the kind that measured best on each representation at
# equal seconds (docs: "Baselines" on trees and engines: on goofspiel 6 the
# situation-keyed baseline, whose cells many histories share).
DEFAULT_BASELINE = {"tree": "predictive", "engine": "situation",
                    "grown": "learned"}


class ConditionalVariance(NamedTuple):
  """Conditional variance of the baseline-corrected estimates (Schmid et al.
  2019, Fig. 5; docs/pages/algorithms.md, "Measuring as the papers do").

  For every measured history h, M continuations are sampled from h with the
  frozen tables; the sample variances (divisor M - 1) of u(h, a) and u(h)
  given h are averaged over the histories with weight w(h), the
  probability that an episode of h's player visits (evaluates) h.

  Attributes:
    action_variance: sum_h w(h) mean_a Var[u(h, a) | h] / sum_h w(h), the
      mean over h's legal actions.
    value_variance: sum_h w(h) Var[u(h) | h] / sum_h w(h).
    histories: the number of histories measured.
    continuations: M, episodes sampled from each history.
    nodes: int64[H], the measured histories (decision nodes).
    weights: float64[H], w(h).
    history_action_variance: float64[H, A], Var[u(h, a) | h] (NaN in the
      padding columns).
    history_value_variance: float64[H], Var[u(h) | h].
  """
  action_variance: float
  value_variance: float
  histories: int
  continuations: int
  nodes: np.ndarray
  weights: np.ndarray
  history_action_variance: np.ndarray
  history_value_variance: np.ndarray


def check_continuations(continuations):
  return base.check_sample_size("continuations", continuations, 8, 2,
                                what="an integer >= 2")


def conditional_summary(tree, nodes, weights, sums, squares, continuations):
  """A `ConditionalVariance` from per-history sums and sums of squares.

  Args:
    tree: the `GameTree`.
    nodes, weights: the measured histories and their weights.
    sums, squares: float64[H, A + 1], sums over the continuations of u(h, a)
      (columns a) and u(h) (column A), and of their squares.
    continuations: M.
  """
  m = continuations
  var = np.maximum((squares - sums * sums / m) / (m - 1), 0.0)
  actions = tree.infoset_num_actions[tree.node_infoset[nodes]]
  legal = np.arange(tree.max_actions)[None, :] < actions[:, None]
  action_var = np.where(legal, var[:, :-1], np.nan)
  total = weights.sum()
  return ConditionalVariance(
      float(weights @ np.nanmean(action_var, axis=1) / total),
      float(weights @ var[:, -1] / total), len(nodes), m,
      nodes.astype(np.int64), weights, action_var, var[:, -1].copy())


class MCCFRbSolver(base.TabularSolverBase):
  """Outcome-sampling MCCFR with baselines, with OpenSpiel's solver interface.

  Usage, as with `open_spiel.python.algorithms.outcome_sampling_mccfr`:

  ```python
  solver = mccfrb.MCCFRbSolver("leduc_poker", seed=0)
  solver.run(100_000)            # or solver.iteration() in a loop
  exploitability.exploitability(solver.game, solver.average_policy())
  ```

  The defaults are the per-history configuration that measured best on Leduc
  and goofspiel 4 at 10^6 iterations (docs/pages/baselines.md):
  the predictive baseline with regret matching+, linear averaging and
  optimistic averaging (MCCFRb+). OpenSpiel's own algorithm is
  `OutcomeSamplingSolver` (baseline="none", averaging="stochastic",
  regret="rm").

  Args:
    game: a game string or `pyspiel.Game` (see `mccfrb.load_game`).
    baseline: one of BASELINES (docs, "Baselines"; kernels/baselines.py),
      or None (the default): "predictive" on a compiled tree, "situation"
      on an engine, "learned" on a grown tree (DEFAULT_BASELINE). Each kind
      runs where its key and rule do (`mccfrb.baselines.serves`): the
      oracle on a compiled tree only, situation and public keys on trees
      and engines, observation keys on trees and grown trees. Games with
      more than two players or general-sum returns run every kind on
      their compiled tree, with one table per player (kernels/outcome.py).
    epsilon: exploration of the update player's sampling policy, in (0, 1].
    exploration: what epsilon mixes in at the update player's nodes:
      "uniform" (the default, OpenSpiel's) or, on a compiled two-player
      tree, "balanced" (Farina, Kroer and Sandholm 2020: each action in
      proportion to the player's terminal sequences below it,
      mccfrb/games/balanced.py).
    averaging: "optimistic" (the thesis's, Lanctot 2013) or "stochastic"
      (OpenSpiel's); None (the default): optimistic, but stochastic on
      games with more than two players, where optimistic averaging is not
      offered (its catch-up weighs by the owner's reach, which an episode
      of another player does not have apart from the third's).
    baseline_decay: None for a running mean, or the weight in (0, 1] of an
      exponentially decaying average (the rules that average: thesis,
      learned and the other "child" kinds). thesis_exponential defaults
      to 0.5.
    seed: seed of the solver's `np.random.Generator`.
    max_nodes: size guard passed to `compile_tree`.
    tree: optional `GameTree` already compiled from this game (sweeps reuse
      one tree for many solvers); it is not checked against the game.
    weighting, linear_iterations, alpha, beta, gamma: None, "linear" or
      "discounted" weighting of iterations (see `base.Weighting`), with
      stochastic averaging and regret="rm".
    regret: "rm" (regret matching) or "rm+" (MCCFRb+: regret matching+,
      cumulative regrets clipped at 0 after every update, and linear
      averaging: iteration t weighs t in the average strategy, with either
      averaging).
    threads: worker threads of `run` (numba's, capped by NUMBA_NUM_THREADS).
      1 with batch=None (the default) runs the episodes one after the
      other.
    batch: iterations per batch: the 2 batch episodes of a batch run in
      parallel against the tables of the batch start, each with its own
      random stream, and their increments are applied in a fixed order
      (kernels/outcome.py, `run_batches`). None: unbatched with threads=1,
      `base.DEFAULT_BATCH` otherwise. The tables depend on (seed, batch),
      not on `threads`. Batches end at multiples of `batch` in the
      iteration count, so `run(a); run(b)` equals `run(a + b)` when a is a
      multiple of `batch`.
    representation: "auto" (default), "tree", "engine" or "grown"
      (solvers/representation.py): "auto" compiles the tree when the game
      fits in max_nodes, uses a native engine when it does not and the
      game has one (`engine_names()`), and grows the tree as episodes
      reach new histories otherwise (two-player zero-sum games). On an
      engine or a grown tree infoset tables grow as episodes visit them; a
      run equals the tree's run with the same seed, bit for bit
      (threads=1, and on an engine precision="float64", in_flight=1).
    max_memory: bytes the engine's tables may take (default: half the
      memory available at construction); past it they stop growing, and
      infosets not stored by then play uniform and are not updated
      (`memory()` reports it).
    hogwild: with threads > 1 on an engine, workers run episodes against
      the shared tables without locks (Hogwild): fast, not reproducible run
      to run. Required for threads > 1 on an engine; not on a tree.
    precision: the cells of an engine's tables: "float32" (None, the
      default there: it learned as float64 did at equal iterations and ran
      faster at equal seconds, docs "Big games"; one warning if rounding
      stops too many of its cell updates) or "float64". A compiled or grown
      tree's tables are float64 (another value is refused there).
    in_flight: episodes each worker plays at once on an engine, taking
      turns so that their table lookups' memory misses overlap: None (8,
      DEFAULT_IN_FLIGHT) or an int in [1, 64]; 1 plays them one after the
      other, as the tree does. Engine only.
  """

  _table_names = ("_regrets", "_avg", "_avg_last", "_baseline",
                  "_baseline_count", "_through")

  def __init__(self, game, baseline=None, epsilon=0.6,
               averaging=None, baseline_decay=None, seed=None,
               max_nodes=tree_lib.DEFAULT_MAX_NODES, tree=None,
               weighting=None, linear_iterations=None, alpha=1.5, beta=0.0,
               gamma=2.0, regret="rm+", threads=1, batch=None,
               representation="auto", max_memory=None, hogwild=False,
               precision=None, in_flight=None, exploration="uniform"):
    if not isinstance(hogwild, bool):
      raise ValueError(f"hogwild must be True or False, got {hogwild!r}.")
    self._hogwild = hogwild
    self._init_threads(threads, None if hogwild else batch)
    if tree is not None and representation == "auto":
      representation = "tree"
    if baseline is not None:
      base.check_choice("baseline", baseline, BASELINES)
    loaded = games.load_game(game, general=True)
    kind, engine = representation_lib.resolve(loaded, representation,
                                              max_nodes, grown=True)
    if baseline is None:
      baseline = DEFAULT_BASELINE[kind]
    if averaging is None:
      averaging = "stochastic" if loaded.num_players() > 2 else "optimistic"
    if loaded.num_players() > 2 and averaging == "optimistic":
      raise ValueError(
          f"averaging='optimistic' weighs by the single opponent's reach; "
          f"{loaded} has {loaded.num_players()} players: use "
          "averaging='stochastic'.")
    baselines_lib.check(baseline, kind)
    representation_lib.check_hogwild(kind, self._threads, hogwild, batch)
    base.check_choice("averaging", averaging, AVERAGINGS)
    base.check_choice("regret", regret, REGRETS)
    if weighting is not None and regret == "rm+":
      raise ValueError(
          f"weighting={weighting!r} works with regret='rm' only: regret='rm+' "
          "brings its own (linear) averaging weights.")
    self._weights = base.Weighting(weighting, linear_iterations, alpha, beta,
                                   gamma)
    if weighting is not None and averaging == "optimistic":
      raise ValueError(
          f"weighting={weighting!r} works with averaging='stochastic' only: "
          "optimistic averaging's (t - c_I) catch-up assumes equal weights.")
    base.check_unit_interval("epsilon", epsilon)
    base.check_choice("exploration", exploration, EXPLORATIONS)
    if exploration != "uniform" and (kind != "tree"
                                     or loaded.num_players() != 2):
      raise ValueError(
          f"exploration={exploration!r} counts the sequences of a compiled "
          f"two-player tree; {loaded} is played on "
          f"{'its ' + kind if kind != 'tree' else 'a tree of more players'}"
          "; use exploration='uniform'.")
    self._exploration = exploration
    base.check_unit_interval("baseline_decay", baseline_decay, allow_none=True)
    self._init_rng(seed)
    self._baseline_name = baseline
    self._averaging_name = averaging
    self._epsilon = float(epsilon)
    self._decay_option = baseline_decay
    if baseline_decay is None:
      baseline_decay = BASELINES[baseline].decay
    self._decay = 0.0 if baseline_decay is None else float(baseline_decay)
    self._baseline_codes = baselines_lib.codes(baseline)
    self._averaging_code = AVERAGINGS[averaging]
    self._regret_name = regret
    self._regret_code = REGRETS[regret]
    if kind != "engine":
      engine_lib.refuse_hashed_options(kind, precision, in_flight)
    if kind == "engine":
      self._game = loaded
      self._init_engine(engine, max_memory, precision, in_flight)
      return
    if kind == "grown":
      self._init_backend(loaded, grown_lib.GrownBackend(
          self, loaded, max_memory, outcome_sampling=True))
      return
    self._init_game(loaded, max_nodes, tree, general=True)
    tree = self._tree
    self._key_ids = np.zeros(0, dtype=np.int64)
    self._explore = (balanced_lib.balanced_strategy(tree).reshape(-1)
                     if exploration == "balanced" else np.zeros(0))
    if tree.is_general and BASELINES[baseline].key == "public":
      raise ValueError(
          f"baseline={baseline!r} needs public states, which mccfrb builds "
          f"for two-player zero-sum games; {self._game} has "
          f"{tree.num_players} players or general-sum returns: use "
          "'situation' (or another kind).")
    if baselines_lib.per_node_ids(baseline):
      self._key_ids = keys_lib.node_key_ids(BASELINES[baseline].key, tree,
                                            self._game)
    shape = (tree.num_infosets, tree.max_actions)
    self._regrets = np.zeros(shape)
    self._avg = np.zeros(shape)
    self._avg_last = np.zeros(tree.num_infosets, dtype=np.int64)
    self._through = np.zeros(tree.num_infosets, dtype=np.int64)
    self._strategy = np.zeros(shape)
    self._tables_loaded()
    size, count_size = self._baseline_sizes()
    self._baseline = np.zeros(size)
    self._baseline_count = np.zeros(count_size, dtype=np.int64)
    self._scratch = self._path_scratch(1)

  def _path_scratch(self, workers):
    """The episode's scratch (kernels/outcome.py `Scratch`) for `workers`
    workers."""
    return scratch_of(workers, max(self._tree.max_depth, 1),
                      self._tree.max_actions)

  @staticmethod
  def _path_scratch_of(depth, actions):
    """One worker's scratch for paths of `depth` nodes and `actions`
    moves (a grown tree's)."""
    return scratch_of(1, depth, actions)

  def _kernel_codes(self):
    """The variant (kernels/outcome.py `Codes`)."""
    key, owner, rule = self._baseline_codes
    return outcome.Codes(key, owner, rule, self._averaging_code,
                         self._regret_code, self._epsilon, self._decay,
                         baselines_lib.falls_back(self._baseline_name))

  @property
  def _rule(self):
    """The baseline's rule code (kernels/baselines.py)."""
    return self._baseline_codes[2]

  @property
  def _probe(self):
    """The engine kernels' `probe`: True when the baseline is probing, else
    None (its rollouts compiled out)."""
    return True if self._rule == baselines_lib.RULE_PROBE else None

  def _tree_game(self, regrets, strategy, baseline, counts, start_node=0):
    """The compiled tree and its tables (kernels/outcome.py `TreeArgs`)."""
    tree = self._tree
    return outcome.TreeArgs(*tree.kernel_args(), tree.infoset_num_actions,
                            regrets, strategy, self._avg, self._avg_last,
                            baseline, counts, self._through, self._key_ids,
                            start_node, self._explore)

  def _records(self, batch):
    """The record slots of a batch of `batch` iterations (kernels/outcome.py
    `Records`)."""
    tree = self._tree
    episodes, depth = tree.num_players * batch, max(tree.max_depth, 1)
    return outcome.Records(
        np.zeros(episodes, dtype=np.int64),
        np.zeros((depth + 1, episodes), dtype=np.int64),
        np.zeros((episodes, depth), dtype=np.int64),
        np.zeros((episodes, depth, tree.max_actions)),
        np.zeros((episodes, depth, tree.max_actions)),
        np.zeros((episodes, depth)), np.zeros((episodes, depth)))

  def _batch_scratch(self):
    """(workers, scratch, records, the predictive baseline's per-node
    marks, the changed rows' marks and each worker's list) of a batched
    run (`run_batches`; allocated once)."""
    if self._batch_buffers is None:
      workers, tree = self._threads, self._tree
      predictive = self._rule == baselines_lib.RULE_PREDICTIVE
      self._batch_buffers = (
          workers, self._path_scratch(workers), self._records(self._batch),
          np.zeros(self._baseline.size if predictive else 0, dtype=np.int64),
          np.zeros(tree.num_infosets, dtype=np.int64),
          np.zeros((workers, tree.num_infosets // workers + 1),
                   dtype=np.int64))
    return self._batch_buffers

  def _tables_loaded(self):
    if self.representation != "tree":
      return  # The strategy cells are saved with the tables.
    exact.regret_matching(self._regrets, self._tree.infoset_num_actions,
                          self._strategy)

  def _cumulative_average(self):
    """The cumulative strategy, flushed to iteration T when averaging is
    optimistic (`base.optimistic_average`)."""
    return base.optimistic_average(self)

  # The engine (kernels/outcome.py).

  def _init_engine(self, engine, max_memory, precision=None, in_flight=None):
    """The solver's backend on `engine`: hashed tables (tables/hashed.py)
    for its baseline, averaging and weighting, and the kernels' scratch."""
    precision = engine_lib.check_precision(precision)
    in_flight = engine_lib.check_in_flight(in_flight)
    name = self._baseline_name
    entry = baselines_lib.BASELINES[name]
    running = baselines_lib.running_counts(name, self._decay)
    fields = ["regret", "avg"]
    header = []
    if self._weights.discounted:
      header.append("through")
    if entry.key == "infoset" or entry.fallback == "infoset":
      if entry.owner == baselines_lib.OWNER_UPDATE_PLAYER:
        fields += ["b0", "b1"]
        header += ["count0", "count1"]
      else:
        fields += ["baseline"] + (["count"] if running else [])
    k_fields = ["value"] + (["count"] if running else [])
    t, history = engine_lib.engine_tables(engine, name, max_memory, fields,
                                          header, k_fields, precision)
    self._init_backend(self._game, engine_lib.EngineBackend(
        self, engine, t, history, precision, in_flight,
        flush=engine_lib.flush_code(self._averaging_code, self._regret_code)))
    number = lambda names, name: names.index(name) if name in names else -1
    fmap = np.full(outcome.FMAP_SIZE, -1, dtype=np.int64)
    fmap[outcome.F_REGRET] = t.field_number("regret")
    fmap[outcome.F_AVG] = t.field_number("avg")
    fmap[outcome.F_BASE] = number(t.fields, "b0" if "b0" in t.fields
                                  else "baseline")
    fmap[outcome.F_COUNT] = number(t.fields, "count")
    fmap[outcome.H_THROUGH] = number(t.header_names, "through")
    fmap[outcome.H_COUNT] = number(t.header_names, "count0")
    fmap[outcome.F_KEYED_VALUE] = 0
    fmap[outcome.F_KEYED_COUNT] = number(k_fields, "count")
    self._fmap = fmap
    slots = self._threads * in_flight
    depth, moves = max(engine.max_depth, 1), max(engine.max_moves, 1)
    keyed_depth = depth if history is not None else 1
    self._engine_scratch = (
        np.zeros((slots, engine.state_size), dtype=np.int64),
        outcome.Scratch(
            np.zeros((slots, depth), dtype=np.int64),
            np.zeros((slots, depth), dtype=np.int64),
            np.zeros((slots, depth, 4)), np.zeros((slots, moves)),
            np.zeros((slots, moves))),
        np.zeros((slots, depth, moves)), np.zeros((slots, depth, moves)),
        np.zeros((slots, keyed_depth, 2), dtype=np.uint64),
        np.zeros((slots, keyed_depth), dtype=np.int64),
        np.zeros((slots, outcome.LANE_SIZE), dtype=np.int64),
        np.zeros((slots, 2), dtype=np.uint64),
        np.zeros(slots, dtype=np.uint64))
    # Probing's rollout returns and states, or a chain's baselines
    # (kernels/outcome.py `EngineArgs`); empty for every other baseline.
    probing = entry.rule == "probe" or bool(entry.fallback)
    self._probe_scratch = (
        np.zeros((slots, depth + 1, moves) if probing else (0, 1, 1)),
        np.zeros((slots, 2, engine.state_size) if probing else (0, 2, 1),
                 dtype=np.int64))
    self._blocks = np.zeros((self._threads, hashed.BLOCK_SIZE),
                            dtype=np.int64)

  def _run_engine(self, num_iterations):
    """`num_iterations` iterations on the engine, in kernel calls of
    CHUNK_EPISODES episodes, growing the tables between calls."""
    b = self._backend
    e, t, h = b.engine, b.tables, b.history
    first = self._num_iterations + 1
    start_iterations = self._num_iterations
    weighting = outcome.Weights(*self._weights.args(
        self._num_iterations + num_iterations))
    total = 2 * num_iterations
    done = 0
    for w in range(self._threads):
      self._blocks[w, 2] = (outcome.BLOCK_ROWS
                            * t.row_words(max(e.max_moves, 1)))
    while done < total:
      for table in (t, h):
        if table is not None:
          b.make_room(table, *self._engine_margin(table))
      end = min(total, done + engine_lib.CHUNK_EPISODES * self._threads)
      k = b.in_flight
      if k > 1 and end < total:  # End at a whole group in flight.
        end -= (2 * start_iterations + end) % k
        end = end if end > done else min(total, done + k)
      # None without a keyed baseline: the kernel compiles no lookup.
      keyed = None if h is None else h.args()
      t.meta[outcome.STOP] = 0
      eng = self._engine_args(not t.frozen, h is not None and not h.frozen)
      scratch = self._engine_scratch[1]
      if self._threads > 1 and self._hogwild:
        finished, touched = self._hogwild_run(
            eng, keyed, weighting, first + done // 2, end - done, scratch)
        self._hogwild_episodes = finished + getattr(
            self, "_hogwild_episodes", 0)  # Per worker, for the tests.
        # A worker claims whole iterations and checks for room before
        # each (kernels/outcome.py), so every claimed iteration
        # runs both episodes.
        ran = int(finished.sum())
        assert ran % 2 == 0, finished
        reached = done + ran
      else:
        reached, touched, _ = call_literal(
            outcome.engine_episodes, e.code, eng, keyed, self._probe,
            self._kernel_codes(), weighting, e.utility_sum, first, done, end,
            self._rng_words, np.uint64(0), 0, 1, scratch)
      self._nodes_touched += int(touched)
      done = int(reached)
      self._num_iterations = start_iterations + done // 2
    b.warn_if_stalled()

  def _hogwild_run(self, eng, keyed, weighting, first_iteration,
                   num_episodes, scratch):
    """Hogwild (Recht et al. 2011): `engine_episodes` on self._threads
    Python threads at once, lock-free. Each worker claims iterations from
    a shared counter (max(in_flight // 2, 1) at a time) and runs both of
    their episodes, each episode drawing from its own stream under one key
    drawn from the solver's generator, and takes new rows from its own
    arena block (self._blocks[w], kept from call to call); `eng`'s scratch
    holds W * K slots.

    Returns:
      (episodes each worker ran: all of its claims unless a table ran
      short of room, which stops every worker; nodes touched).
    """
    e = self._backend.engine
    # uint64 as in the one-thread call (a Python int would type the
    # kernel a second time, as int64).
    key = np.uint64(rng_lib.batch_key(self._rng_words))
    claim = np.zeros(1, dtype=np.int64)
    codes = self._kernel_codes()
    threads = self._threads

    def worker(w):
      return call_literal(
          outcome.engine_episodes, e.code,
          eng._replace(block=self._blocks[w], claim=claim), keyed,
          self._probe, codes,
          weighting, e.utility_sum, first_iteration, 0, num_episodes,
          self._rng_words, key, w, threads, scratch)

    results = base.on_threads(worker, threads)
    return (np.array([ran for _, _, ran in results], dtype=np.int64),
            sum(int(nodes) for _, nodes, _ in results))

  def _engine_margin(self, table):
    """Rows and arena words a kernel call needs free in `table`
    (kernels/outcome.py): each worker's episodes in flight, and with
    Hogwild a fresh block of rows per worker."""
    e, threads, in_flight = (self._backend.engine, self._threads,
                             self._backend.in_flight)
    paths = 2 * max(in_flight // 2, 1) if threads > 1 else in_flight
    rows = threads * paths * max(e.max_depth, 1)
    widest = table.row_words(max(e.max_moves, 1))
    block = outcome.BLOCK_ROWS * widest if threads > 1 else 0
    uncounted = hashed.BLOCK_FLUSH if threads > 1 else 0
    return (rows + threads * uncounted, rows * widest + threads * block)

  def _engine_args(self, allow_insert, allow_keyed, start=None,
                   start_key=None):
    """The engine and its infoset rows (kernels/outcome.py `EngineArgs`),
    episodes starting from `start` (an engine state; None: the initial
    state) with the history key `start_key`."""
    b = self._backend
    (state, _, path_probs, path_sigma, path_key, path_brow, lanes,
     lane_keys, streams) = self._engine_scratch
    if start_key is None:
      start_key = np.array(outcome.HISTORY_SEED, dtype=np.uint64)
    return outcome.EngineArgs(
        b.engine.params, b.tables.args(), self._fmap, allow_insert,
        allow_keyed, b.in_flight, state, path_probs, path_sigma, path_key,
        path_brow, self._blocks[0, :0], self._blocks[0, :1],
        np.zeros(0, dtype=np.int64) if start is None else start, start_key,
        lanes, lane_keys, streams, *self._probe_scratch)

  def _engine_conditional_variance(self, continuations, seed, trajectories):
    """`conditional_variance` on the engine (kernels/outcome.py
    `engine_conditional`): the tables frozen, `trajectories` sampled
    episodes, `continuations` from every decision of their update player."""
    b = self._backend
    e, t, h = b.engine, b.tables, b.history
    keyed = None if h is None else h.args()
    depth = max(e.max_depth, 1)
    start = np.zeros((depth + 1, e.state_size), dtype=np.int64)
    moves = np.zeros(depth + 1, dtype=np.int64)
    out = np.zeros(5)
    # The frozen lookups count the infosets they miss: put the tables'
    # statistics back as they were.
    meta = [table.meta.copy() for table in (t, h) if table]
    try:
      call_literal(
          outcome.engine_conditional, e.code,
          self._engine_args(False, False), keyed, self._probe,
          self._kernel_codes(),
          e.utility_sum, self._num_iterations + 1, trajectories,
          continuations, rng_lib.pcg64_state(np.random.default_rng(seed)),
          self._engine_scratch[1], start, moves, out)
    finally:
      for table, saved in zip((x for x in (t, h) if x), meta):
        table.meta[:] = saved
    histories = max(out[0], 1.0)
    return engine_lib.EngineConditionalVariance(
        float(out[1] / histories), float(out[2] / histories),
        float(out[3] / histories), int(out[0]), int(continuations),
        int(trajectories), float(out[4] / histories))

  def _baseline_sizes(self):
    """(baseline, baseline_count) sizes on the compiled tree, by the key
    (kernels/outcome.py, module docstring)."""
    tree = self._tree
    entry = BASELINES[self._baseline_name]
    per_infoset = tree.num_infosets * tree.max_actions
    if entry.key == "none":
      return 0, 0
    if entry.owner == baselines_lib.OWNER_UPDATE_PLAYER:
      return (tree.num_players * per_infoset,
              tree.num_players * tree.num_infosets)
    # One block per player on general trees (kernels/outcome.py).
    blocks = tree.num_players if tree.is_general else 1
    if entry.key == "infoset":
      size = per_infoset
    elif entry.key == "history":
      size = tree.num_nodes
    else:
      size = (int(self._key_ids.max(initial=-1)) + 1) * tree.max_actions
    return blocks * size, blocks * size

  def _options(self):
    options = {"baseline": self._baseline_name, "epsilon": self._epsilon,
               "exploration": self._exploration,
               "averaging": self._averaging_name,
               "baseline_decay": self._decay_option,
               "regret": self._regret_name,
               **self._weights.options, **self._threads_option,
               **self._backend.options()}
    if self.representation == "engine":
      options.update(hogwild=self._hogwild,
                     in_flight=self._backend.in_flight)
    return options

  @property
  def baseline(self):
    return self._baseline_name

  @property
  def averaging(self):
    return self._averaging_name

  @property
  def regret(self):
    return self._regret_name

  def _run_chunk(self, num_iterations):
    """`num_iterations` iterations in one kernel call (on an engine, in
    calls that grow the tables between them)."""
    if self.representation == "engine":
      self._run_engine(int(num_iterations))
      return
    if self.representation == "grown":
      self._backend.run_outcome(int(num_iterations))
      return
    tree = self._tree
    weighting = outcome.Weights(*self._weights.args(
        self._num_iterations + num_iterations))
    state = self._rng_words
    game = self._tree_game(self._regrets, self._strategy, self._baseline,
                           self._baseline_count)
    if self._batch is None:
      _, touched = outcome.tree_episodes(
          game, None, self._kernel_codes(), weighting, tree.utility_sum,
          self._num_iterations + 1, 0, tree.num_players * num_iterations,
          True, state, self._scratch, None)
      self._nodes_touched += touched
    else:
      workers, *buffers = self._batch_scratch()
      with base.numba_threads(workers):
        self._nodes_touched += outcome.run_batches(
            game, self._kernel_codes(), weighting, tree.utility_sum,
            self._num_iterations + 1, num_iterations, self._batch, state,
            workers, *buffers)
    before = self._num_iterations
    self._num_iterations += num_iterations
    # Every ~1024 iterations, a cheap check that the tables are still finite.
    if before // 1024 != self._num_iterations // 1024 or before == 0:
      self._check_finite()

  def _check_finite(self):
    if (getattr(self, "_warned_non_finite", False)
        or (np.isfinite(self._baseline).all()
            and np.isfinite(self._regrets).all())):
      return
    self._warned_non_finite = True
    warnings.warn(
        f"MCCFRbSolver(baseline={self._baseline_name!r}): tables are no longer "
        f"finite after {self._num_iterations} iterations. The thesis's "
        "1/xi-corrected baseline target with a fixed decay overshoots when "
        "xi < decay / 2; use a smaller baseline_decay, or baseline='learned'.",
        RuntimeWarning, stacklevel=3)

  def _require_two_player(self, what):
    """The compiled tree of a two-player zero-sum game, or ValueError."""
    self._require_tree(what)
    if self._tree.is_general:
      games.refuse_general(self._game, what)

  def _frozen_strategy(self, regrets):
    if regrets is self._regrets:
      return self._strategy
    out = np.zeros_like(regrets)
    exact.regret_matching(regrets, self._tree.infoset_num_actions, out)
    return out

  def _frozen_episodes(self, game, num_episodes, learn_baselines, state,
                       study):
    """The studies' episodes (kernels/outcome.py's `tree_episodes` with
    `study`): sigma frozen at iteration T + 1, single-threaded."""
    tree = self._tree
    outcome.tree_episodes(
        game, None, self._kernel_codes(),
        outcome.Weights(0, 0, 0.0, np.zeros(1), np.zeros(1)),
        tree.utility_sum, self._num_iterations + 1, 0, num_episodes,
        bool(learn_baselines), state, self._scratch, outcome.Study(*study))

  def sample_estimates(self, num_episodes, seed=0, learn_baselines=True):
    """Samples episodes under the current strategy, frozen, for studies.

    Runs single-threaded, episodes one after the other, whatever `threads`.
    Nothing of the solver changes: the episodes run on copies of the baseline
    tables (which keep learning during the sample if `learn_baselines`) and
    draw from a fresh generator seeded with `seed`.

    Args:
      num_episodes: number of episodes; episode e updates player e % 2.
      seed: seed of the sample's own generator.
      learn_baselines: let the copied baselines learn as in training.

    Returns:
      An `EstimatorSample`.
    """
    self._require_two_player("sample_estimates()")
    num_episodes = base.check_sample_size("num_episodes", num_episodes, 8)
    tree = self._tree
    shape = self._regrets.shape
    regret_sum, regret_sq = np.zeros(shape), np.zeros(shape)
    value_sum, value_sq = np.zeros(shape), np.zeros(shape)
    root_values = np.zeros(num_episodes)
    # The frozen strategy is sigma^{T+1}: every pending discount applied.
    regrets = self._caught_up_regrets()
    self._frozen_episodes(
        self._tree_game(regrets, self._frozen_strategy(regrets),
                        self._baseline.copy(), self._baseline_count.copy()),
        num_episodes, learn_baselines,
        rng_lib.pcg64_state(np.random.default_rng(base.check_seed(seed, True))),
        (regret_sum, regret_sq, value_sum, value_sq, root_values,
         np.zeros((0, 0))))
    episodes = np.array([(num_episodes + 1) // 2, num_episodes // 2])
    owner = np.maximum(episodes[tree.infoset_player], 1)[:, None]
    regret_mean, value_mean = regret_sum / owner, value_sum / owner
    return base.EstimatorSample(root_values, episodes, regret_mean,
                           regret_sq / owner - regret_mean**2, value_mean,
                           value_sq / owner - value_mean**2)

  def conditional_variance(self, continuations=1000, seed=0,
                           trajectories=200):
    """Conditional variance of u(h, a) and u(h) (Schmid et al. 2019, Fig. 5).

    The tables are frozen (copies; baselines do not learn). Every decision
    node h of player i that an episode updating i visits with probability
    q(h) > 0 (q: the product of the sampling probabilities xi above h, with
    the frozen sigma) is measured: `continuations` episodes start at h and
    sample down from it as training does (eps-uniform at i's nodes), and the
    sample variances of u(h, a) (Eqs. 9-10) and of u(h) are averaged over
    the histories with weight q(h), the frequency with which training's
    episodes visit h (docs/pages/algorithms.md, "Measuring as the papers do"). The
    exact weights stand for infinitely many sampled trajectories.

    On an engine, where no history can be enumerated, `trajectories`
    episodes are sampled as training samples them and every decision of
    their update player is measured (each history then counts with its
    visit probability q(h), as above), and the result is an
    `EngineConditionalVariance`, which also gives the variance of the
    sampled regrets pi_{-i}(h) / q(h) (u(h, a) - u(h)).

    Args:
      continuations: M >= 2, episodes sampled from every history.
      seed: seed of the measurement's own generator.
      trajectories: on an engine, the sampled episodes whose histories are
        measured (unused on a tree).

    Returns:
      A `ConditionalVariance` (on an engine, an `EngineConditionalVariance`).
    """
    if self.engine is not None:
      return self._engine_conditional_variance(
          check_continuations(continuations), base.check_seed(seed, True),
          base.check_sample_size("trajectories", trajectories, 1, 1))
    self._require_two_player("conditional_variance()")
    continuations = check_continuations(continuations)
    tree = self._tree
    regrets = self._caught_up_regrets()
    strategy = np.zeros_like(regrets)
    exact.regret_matching(regrets, tree.infoset_num_actions, strategy)
    nodes, weights = visit_probabilities(tree, strategy, self._epsilon,
                                         self._explore)
    shape = regrets.shape
    scratch = [np.zeros(shape) for _ in range(4)]
    baseline = self._baseline.copy()
    counts = self._baseline_count.copy()
    state = rng_lib.pcg64_state(
        np.random.default_rng(base.check_seed(seed, True)))
    root_values = np.zeros(continuations)
    stats = np.zeros((2, tree.max_actions + 1))
    sums = np.zeros((len(nodes), tree.max_actions + 1))
    squares = np.zeros_like(sums)
    for k, node in enumerate(nodes):
      stats[:] = 0.0
      self._frozen_episodes(
          self._tree_game(regrets, strategy, baseline, counts, int(node)),
          continuations, False, state, (*scratch, root_values, stats))
      sums[k], squares[k] = stats
    return conditional_summary(tree, nodes, weights, sums, squares,
                               continuations)


def scratch_of(workers, depth, actions):
  """An episode's scratch (kernels/outcome.py `Scratch`): `workers` slots
  of a path of `depth` nodes of at most `actions` moves."""
  return outcome.Scratch(np.zeros((workers, depth), dtype=np.int64),
                         np.zeros((workers, depth), dtype=np.int64),
                         np.zeros((workers, depth, 4)),
                         np.zeros((workers, actions)),
                         np.zeros((workers, actions)))


def visit_probabilities(tree, strategy, epsilon, explore=()):
  """Decision nodes h with q(h) > 0 in the episodes updating their player.

  q(h) is the product of the sampling probabilities xi above h
  (docs/pages/algorithms.md, "Notation"): eps-uniform (or eps times the
  flat `explore` strategy) mixed with sigma at the update player's nodes,
  sigma at the opponent's, chance's probabilities.

  Returns:
    (nodes int64[H], q float64[H]), nodes ascending.
  """
  n = tree.infoset_num_actions[:, None]
  mixed = (epsilon * np.reshape(explore, strategy.shape) if len(explore)
           else epsilon / n)
  xi = np.where(tree.legal_mask(), mixed + (1 - epsilon) * strategy, 0.0)
  reach = np.empty((tree.num_nodes, 3))
  q = np.zeros(tree.num_nodes)
  decision = tree.node_kind == tree_lib.DECISION
  for p in (0, 1):
    sampling = np.where((tree.infoset_player == p)[:, None], xi, strategy)
    exact.reach_probabilities(*tree.kernel_args()[:6], sampling, reach)
    mine = decision & (tree.node_player == p)
    q[mine] = reach.prod(axis=1)[mine]
  nodes = np.flatnonzero(decision & (q > 0.0))
  return nodes, q[nodes]


class OutcomeSamplingSolver(MCCFRbSolver):
  """Plain outcome-sampling MCCFR, OpenSpiel's algorithm: `MCCFRbSolver` with
  baseline="none", regret="rm" and (by default) stochastic averaging. The
  arguments not listed here are `MCCFRbSolver`'s.

  Args:
    baseline: "none" only (any other kind is refused: use `MCCFRbSolver`).
    representation: "auto" (default), "tree", "engine" or "grown", as for
      `MCCFRbSolver`.
  """

  def __init__(self, game, epsilon=0.6, averaging="stochastic", seed=None,
               max_nodes=tree_lib.DEFAULT_MAX_NODES, baseline="none",
               baseline_decay=None, tree=None, threads=1, batch=None,
               representation="auto", max_memory=None, hogwild=False,
               precision=None, in_flight=None):
    if baseline != "none":
      raise ValueError("OutcomeSamplingSolver has no baseline; use "
                       f"MCCFRbSolver(baseline={baseline!r}).")
    super().__init__(game, baseline="none", epsilon=epsilon,
                     averaging=averaging, baseline_decay=baseline_decay,
                     seed=seed, max_nodes=max_nodes, tree=tree, regret="rm",
                     threads=threads, batch=batch,
                     representation=representation, max_memory=max_memory,
                     hogwild=hogwild, precision=precision,
                     in_flight=in_flight)


