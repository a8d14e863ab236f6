"""Public-state sampling MCCFR with baselines (kernels/public.py, on a
compiled tree or a native engine)."""

import numpy as np

from mccfrb import games
from mccfrb.games import public as public_lib
from mccfrb.games import tree as tree_lib
from mccfrb.kernels import exact
from mccfrb.games.engines import protocol
from mccfrb.games.engines.common import call_literal
from mccfrb.kernels import baselines as baselines_lib
from mccfrb.kernels import public as public_kernel
from mccfrb.kernels import rng as rng_lib
from mccfrb.solvers import base
from mccfrb.solvers import engine as engine_lib
from mccfrb.solvers import representation as representation_lib
from mccfrb.solvers import outcome

# The baselines public-state sampling takes: the registry's per-history
# kinds (kernels/baselines.py), each by its rule's kernel code.
PUBLIC_KEYS = ("none", "history")
PUBLIC_RULES = ("none", "child", "predictive", "oracle")
PUBLIC_BASELINES = {
    name: baselines_lib.codes(name)[2]
    for name, entry in baselines_lib.BASELINES.items()
    if entry.key in PUBLIC_KEYS and entry.rule in PUBLIC_RULES}
# The baselines on an engine (the oracle needs the whole game's values).
ENGINE_PUBLIC_BASELINES = tuple(
    k for k in baselines_lib.kinds("engine", PUBLIC_KEYS)
    if k in PUBLIC_BASELINES)
# baseline=None: the kind that measured best on each representation.
DEFAULT_PUBLIC_BASELINE = {"tree": "predictive", "engine": "none"}
SAMPLINGS = {"uniform": 0, "on_policy": 1, "chance": 2}
# The history baseline's default decay: Schmid et al.'s alpha = 0.5.
DEFAULT_HISTORY_DECAY = 0.5
# The batch size of threads > 1 when no batch is given (docs/pages/threads.md).
DEFAULT_PUBLIC_BATCH = 2
_EMPTY_STATS = np.zeros((0, 0, 0))
# Episodes per kernel call on an engine (progress bars and Ctrl-C come
# between calls; a goofspiel 6 episode takes about a millisecond).
PUBLIC_CHUNK_EPISODES = 64
# The engine's episode buffers (kernels/public.py, `episodes`' `eng`, in
# its order between allow_insert and allow_history), and its scratch.
_PUB_BUFFERS = ("pool_state", "pool_i", "pool_key", "e_child", "e_util",
                "e_group", "ps_i", "gkeys", "gstamp", "gval", "groups", "gxi",
                "scratch", "ctl")
_SCRATCH = ("pool_f", "ps_f", "visited", "stack", "child_est")


class PublicSamplingSolver(base.TabularSolverBase):
  """Public-state sampling MCCFR with baselines (docs/pages/algorithms.md).

  The vector form of VR-MCCFR (Schmid et al. 2019) and Davis et al.'s (2020)
  public outcome sampling: an episode walks one path of the public tree
  (`mccfrb.public_states`), evaluates every private history of each public
  state it visits, evaluates terminal children exactly and samples one
  non-terminal child public state; baseline-corrected values flow bottom-up
  and regrets are divided by the public state's sampling probability q(S).

  ```python
  solver = mccfrb.PublicSamplingSolver("leduc_poker", seed=0)
  solver.run(100_000)
  exploitability.exploitability(solver.game, solver.average_policy())
  ```

  Args:
    game: a game string or `pyspiel.Game` (see `mccfrb.load_game`).
    baseline: "none", "history" (per tree edge, decaying average of the
      child's estimate), "predictive" (Davis et al. 2020; zero variance with
      frozen strategies) or "oracle" (exact values under sigma^t; studies);
      None (the default): "predictive" on a compiled tree, "none" on an
      engine (where the per-history tables grow with every history an
      episode evaluates: on goofspiel 6 half the memory within seconds, and
      at 60 s they measured worse than none, docs "Big games").
    regret: "rm" or "rm+" (regret matching+ with linear averaging: iteration
      t weighs t in the average).
    averaging: "stochastic" (at the update player's infosets of the visited
      public states, divided by q(S)) or "optimistic" (at the opponent's).
    sampling: "uniform" over the non-terminal child public states,
      "on_policy" (proportional to the reach mass flowing into each, mixed
      with `epsilon` of uniform), or "chance": public chance sampling
      (Johanson et al. 2012) in vector form, visiting every child public
      state of the players' decisions and drawing one of chance's.
    epsilon: the uniform share of on-policy sampling, in (0, 1].
    baseline_decay: weight in (0, 1] of the history baseline's exponentially
      decaying average (default 0.5, Schmid et al.'s), or None for a running
      mean (the default of the other kinds, which do not use it).
    partition: the public partition, "auto", "observer" or
      "common_knowledge" (see `mccfrb.public_states`).
    seed: seed of the solver's `np.random.Generator`.
    max_nodes, tree: as for `MCCFRbSolver`.
    public_tree: optional `PublicTree` of `tree` (sweeps reuse one).
    threads, batch: as for `MCCFRbSolver` (kernels/public.py,
      `public_batches`); batch=None with threads > 1 runs batches of
      DEFAULT_PUBLIC_BATCH iterations. Each worker thread keeps its own
      scratch (40 bytes per tree node, about 90 per infoset). One thread
      on an engine.
    representation: "auto" (default), "tree" or "engine", as for
      `MCCFRbSolver`. On an engine (kernels/public.py) the public
      states an episode visits are built as it reaches them, from the
      engine's public keys (the observer partition), and infoset rows
      grow as they are visited; the per-history baselines are kept in a
      second table keyed by the history. On a game that compiles the
      engine run equals the tree run bit for bit. The public states an
      episode evaluates hold every history consistent with the public
      information, so the engine suits games whose public states stay
      small (goofspiel 6: at most a few thousand histories; 13-card
      goofspiel is out of reach).
    max_memory, precision: as for `MCCFRbSolver` (engine only).
  """

  _table_names = ("_regrets", "_avg", "_avg_last", "_baseline",
                  "_baseline_count")

  def __init__(self, game, baseline=None, regret="rm+",
               averaging="stochastic", sampling="uniform", epsilon=0.6,
               baseline_decay="default", partition="auto", seed=None,
               max_nodes=tree_lib.DEFAULT_MAX_NODES, tree=None,
               public_tree=None, threads=1, batch=None,
               representation="auto", max_memory=None, precision=None):
    if (tree is not None or public_tree is not None) and (
        representation == "auto"):
      representation = "tree"
    if baseline is not None:
      base.check_choice("baseline", baseline, PUBLIC_BASELINES)
    loaded = games.load_game(game)
    kind, engine = representation_lib.resolve(loaded, representation,
                                              max_nodes)
    if baseline is None:
      baseline = DEFAULT_PUBLIC_BASELINE[kind]
    if kind == "engine":
      from mccfrb.games import walk_size  # pylint: disable=import-outside-toplevel
      walk_size.check_whole_depth(
          loaded, f"PublicSamplingSolver cannot run {loaded} (an episode "
          "expands every history of the public states it visits)",
          walk_size.WHOLE_DEPTH_EPISODE_HISTORIES,
          "Use MCCFRbSolver, OutcomeSamplingSolver or ExternalSamplingSolver.")
      baselines_lib.check(baseline, "engine", PUBLIC_BASELINES)
      if threads != 1:
        raise ValueError(
            "PublicSamplingSolver runs on one thread on an engine; "
            "MCCFRbSolver and ExternalSamplingSolver take threads=k, "
            "hogwild=True there.")
      if partition not in ("auto", "observer"):
        raise ValueError(
            f"partition={partition!r}: on an engine the public states are "
            "the engine's public keys (the observer partition); use "
            "partition='auto' or 'observer'.")
    representation_lib.check_batch(
        kind, batch, "There episodes run one after the other.")
    self._init_threads(threads, batch, default=DEFAULT_PUBLIC_BATCH)
    base.check_choice("regret", regret, outcome.REGRETS)
    base.check_choice("averaging", averaging, outcome.AVERAGINGS)
    base.check_choice("sampling", sampling, SAMPLINGS)
    base.check_choice("partition", partition, public_lib.PARTITIONS)
    base.check_unit_interval("epsilon", epsilon)
    if baseline_decay == "default":
      baseline_decay = DEFAULT_HISTORY_DECAY if baseline == "history" else None
    base.check_unit_interval("baseline_decay", baseline_decay, allow_none=True)
    self._init_rng(seed)
    self._settings = dict(baseline=baseline, regret=regret,
                          averaging=averaging, sampling=sampling,
                          epsilon=float(epsilon),
                          baseline_decay=baseline_decay, partition=partition,
                          **self._threads_option)
    self._rule = PUBLIC_BASELINES[baseline]
    self._regret_code = outcome.REGRETS[regret]
    self._averaging_code = outcome.AVERAGINGS[averaging]
    self._decay = 0.0 if baseline_decay is None else float(baseline_decay)
    if kind != "engine":
      engine_lib.refuse_hashed_options(kind, precision, None)
    if kind == "engine":
      self._game = loaded
      self._init_public_engine(engine, max_memory, precision)
      return
    self._init_game(loaded, max_nodes, tree)
    t = self._tree
    if public_tree is None:
      public_tree = public_lib.public_states(t, partition=partition,
                                            game=self._game)
    elif not isinstance(public_tree, public_lib.PublicTree):
      raise ValueError("public_tree must be a PublicTree, got "
                       f"{type(public_tree).__name__}.")
    self._public = public_tree
    self._parent = public_lib.node_parents(t).astype(np.int32)
    sampled = ~public_tree.ps_terminal[public_tree.ps_children]
    owner = np.repeat(np.arange(public_tree.num_public_states),
                      np.diff(public_tree.ps_child_start))[sampled]
    self._candidate_start = np.zeros(public_tree.num_public_states + 1,
                                     dtype=np.int32)
    np.cumsum(np.bincount(owner, minlength=public_tree.num_public_states),
              out=self._candidate_start[1:])
    self._candidates = public_tree.ps_children[sampled]
    shape = (t.num_infosets, t.max_actions)
    self._regrets = np.zeros(shape)
    self._avg = np.zeros(shape)
    self._avg_last = np.zeros(t.num_infosets, dtype=np.int64)
    size = t.num_nodes if self._rule != baselines_lib.RULE_NONE else 0
    self._baseline = np.zeros(size)
    self._baseline_count = np.zeros(size, dtype=np.int64)
    self._scratch = self._worker_scratch(None)

  def _worker_scratch(self, workers):
    """The episode's scratch (kernels/public.py, `episodes`): hf
    (reaches, value, v'), sigma, infoset_mark, mass, child_est, visited,
    stack, ps_f (q, xi), strategy_scratch, increment; with a leading axis
    of `workers` rows unless None."""
    t = self._tree
    lead = () if workers is None else (workers,)
    num_ps = self._public.num_public_states
    shape = (t.num_infosets, t.max_actions)
    z = lambda *dims, dtype=np.float64: np.zeros(lead + dims, dtype=dtype)
    return (z(t.num_nodes, public_kernel.POOL_FLOATS), z(*shape),
            z(t.num_infosets, dtype=np.int64), z(num_ps), z(t.max_actions),
            z(num_ps, dtype=np.int64), z(num_ps, dtype=np.int64),
            z(num_ps, 2),
            z(*(shape if self._rule == baselines_lib.RULE_ORACLE
                 else (0, t.max_actions))),
            z(*shape))

  def _batch_scratch(self):
    """Scratch and records of `public_batches` (allocated once): the
    per-worker scratch, the record slots sized by `record_bounds`, and the
    public states' and workers' marks."""
    if self._batch_buffers is None:
      t, workers = self._tree, self._threads
      episodes = 2 * self._batch
      rows, edges, states = record_bounds(
          t, self._public, self._candidate_start, self._candidates,
          SAMPLINGS[self._settings["sampling"]] == 2)
      z = np.zeros
      self._batch_buffers = self._worker_scratch(workers) + (
          z((episodes, rows), dtype=np.int64),
          z((episodes, rows, t.max_actions)),
          z((episodes, rows, t.max_actions)), z((episodes, rows)),
          z((episodes, edges), dtype=np.int64), z((episodes, edges)),
          z((episodes, states), dtype=np.int64),
          z((episodes, 3), dtype=np.int64),
          z(self._public.num_public_states, dtype=np.int64),
          z((workers, t.num_infosets), dtype=np.int64))
    return self._batch_buffers

  # The engine (kernels/public.py).

  def _init_public_engine(self, engine, max_memory, precision=None):
    """The solver's backend on `engine`: the infoset tables, the
    per-history baselines' table and the episode's buffers, which grow
    when an episode needs more."""
    precision = engine_lib.check_precision(precision)
    name = self._settings["baseline"]
    running = baselines_lib.running_counts(name, self._decay)
    tables, history = engine_lib.engine_tables(
        engine, name, max_memory, public_kernel.FIELDS, public_kernel.HEADER,
        ("value",) + (("count",) if running else ()), precision,
        init=public_kernel.FIELDS[public_kernel.P_STRATEGY])
    self._init_backend(self._game, engine_lib.EngineBackend(
        self, engine, tables, history, precision,
        flush=engine_lib.flush_code(self._averaging_code, self._regret_code)))
    moves = max(engine.max_moves, 1)
    self._pub = dict(
        ctl=np.zeros(public_kernel.CTL_SIZE, dtype=np.int64),
        child_est=np.zeros(moves),
        scratch=np.zeros(engine.state_size, dtype=np.int64))
    self._pub_pool(64, 64 * moves, 64, 64 * moves)

  def _pub_pool(self, histories, edges, states, groups):
    """(Re)allocates the episode's buffers for at least these sizes."""
    e, b = self._backend.engine, self._pub
    z = np.zeros
    b.update(
        pool_state=z((histories, e.state_size), dtype=np.int64),
        pool_f=z((histories, public_kernel.POOL_FLOATS)),
        pool_i=z((histories, public_kernel.POOL_INTS), dtype=np.int64),
        pool_key=z((histories, 2), dtype=np.uint64),
        e_child=z(edges, dtype=np.int64), e_util=z(edges),
        e_group=z(edges, dtype=np.int64),
        ps_i=z((states, 2), dtype=np.int64), ps_f=z((states, 2)),
        visited=z(states, dtype=np.int64), stack=z(states, dtype=np.int64),
        gkeys=z((2 * groups, 2), dtype=np.uint64),
        gstamp=z(2 * groups, dtype=np.int64),
        gval=z(2 * groups, dtype=np.int64),
        groups=z((groups, 4), dtype=np.int64), gxi=z(groups))
    b["ctl"][public_kernel.C_STAMP] = 0

  def _grow_pub_pool(self):
    """Grows what the last episode was short of (doubling)."""
    b, ctl = self._pub, self._pub["ctl"]
    size = lambda name, need: max(len(b[name]), 1 << max(
        int(need) - 1, 1).bit_length())
    self._pub_pool(size("pool_state", ctl[public_kernel.C_NEED_POOL]),
                   size("e_child", ctl[public_kernel.C_NEED_EDGES]),
                   size("ps_i", ctl[public_kernel.C_NEED_STATES]),
                   size("groups", ctl[public_kernel.C_NEED_GROUPS]))

  def _run_public_engine(self, num_iterations):
    """`num_iterations` iterations on the engine, in kernel calls of
    PUBLIC_CHUNK_EPISODES episodes; what an episode is short of (buffers,
    table rows) grows between calls, and the episode is run again from the
    generator state it started from."""
    backend, b = self._backend, self._pub
    e, t, h = backend.engine, backend.tables, backend.history
    first = self._num_iterations + 1
    start_iterations = self._num_iterations
    total = 2 * num_iterations
    done = 0
    while done < total:
      end = min(total, done + PUBLIC_CHUNK_EPISODES)
      history = backend.history_args()
      tab = t.args()
      words, cells = tab.words, tab.cells
      reached, touched = call_literal(
          public_kernel.episodes, e.code, None,
          public_kernel.EngineArgs(e.params, tab, history, not t.frozen,
                                   *(b[name] for name in _PUB_BUFFERS),
                                   h is not None and not h.frozen),
          e.utility_sum,
          public_kernel.Rows(cells, cells, cells, words, words, 0,
                             public_kernel.P_AVG, public_kernel.P_STRATEGY,
                             public_kernel.H_MARK, history.cells,
                             history.cells, 0, 0),
          self._codes(), first, done, end, True, self._rng_words,
          np.uint64(0), 0, 1,
          public_kernel.Work(*(b[name] for name in _SCRATCH)), None, None)
      self._nodes_touched += int(touched)
      done = int(reached)
      self._num_iterations = start_iterations + done // 2
      status = b["ctl"][public_kernel.C_STATUS]
      if status == public_kernel.SHORT_POOL:
        self._grow_pub_pool()
      elif status == public_kernel.SHORT_TABLE:
        rows = len(b["pool_state"])  # kernels' has_room of a state.
        self._backend.make_room(t, rows,
                                rows * t.row_words(max(e.max_moves, 1)))
      elif status == public_kernel.SHORT_HISTORY:
        rows = len(b["pool_state"])
        self._backend.make_room(h, rows,
                                rows * h.row_words(max(e.max_moves, 1)))

  @property
  def public_tree(self):
    self._require_tree("public_tree")
    return self._public

  @property
  def baseline(self):
    return self._settings["baseline"]

  def _options(self):
    return {**self._settings, **self._backend.options()}

  def _tree_arrays(self):
    """The tree's and its public tree's arrays, in the order of
    kernels/public.py's `game` (before its scratch)."""
    t, p = self._tree, self._public
    return (*t.kernel_args(), t.infoset_num_actions, p.node_public_state,
            p.ps_history_start, p.ps_histories, self._parent,
            self._candidate_start, self._candidates)

  def _tree_args(self):
    """`_tree_arrays` with utility_sum after the utilities
    (`public_batches`' arguments)."""
    arrays = self._tree_arrays()
    return (*arrays[:7], self._tree.utility_sum, *arrays[7:])

  def _codes(self):
    s = self._settings
    return public_kernel.Codes(self._rule, self._averaging_code,
                               self._regret_code, SAMPLINGS[s["sampling"]],
                               s["epsilon"], self._decay)

  def _episodes(self, num_episodes, first_iteration, frozen, learn_baselines,
                rng_state, regrets, baseline, baseline_count, stats,
                start_ps=0, start_stats=None):
    (hf, sigma, infoset_mark, mass, child_est, visited, stack, ps_f,
     strategy_scratch, increment) = self._scratch
    study = None
    if frozen:
      study = public_kernel.Study(
          *stats, _EMPTY_STATS if start_stats is None else start_stats)
    return int(public_kernel.episodes(
        protocol.TREE,
        public_kernel.TreeArgs(*self._tree_arrays(), mass, strategy_scratch,
                               increment, int(start_ps)), None,
        self._tree.utility_sum,
        public_kernel.Rows(regrets.reshape(-1), self._avg.reshape(-1),
                           sigma.reshape(-1), infoset_mark, self._avg_last,
                           regrets.shape[1], 0, 0, 0, baseline,
                           baseline_count, 0, 0),
        self._codes(), first_iteration, 0, num_episodes, learn_baselines,
        rng_state, np.uint64(0), 0, 1,
        public_kernel.Work(hf, ps_f, visited, stack, child_est), study,
        None)[1])

  def _cumulative_average(self):
    """The cumulative strategy, flushed to iteration T when averaging is
    optimistic (`base.optimistic_average`)."""
    return base.optimistic_average(self)

  def _run_chunk(self, num_iterations):
    """`num_iterations` iterations (two episodes each) in one kernel call
    (on an engine, in calls that grow what is short between them)."""
    if self.representation == "engine":
      self._run_public_engine(num_iterations)
      return
    if self._batch is None:
      empty = self._regrets[:0]
      self._nodes_touched += self._episodes(
          2 * num_iterations, self._num_iterations + 1, False, True,
          self._rng_words, self._regrets, self._baseline,
          self._baseline_count, (empty, empty, np.zeros(0)))
    else:
      with base.numba_threads(self._threads):
        self._nodes_touched += public_kernel.public_batches(
            *self._tree_args(), self._public.ps_depth, self._regrets,
            self._avg, self._avg_last, self._baseline, self._baseline_count,
            *self._codes(), self._num_iterations + 1, num_iterations,
            self._batch, self._rng_words, self._threads,
            *self._batch_scratch())
    self._num_iterations += num_iterations

  def sample_estimates(self, num_episodes, seed=0, learn_baselines=True):
    """Samples episodes under the current strategy, frozen, for studies.

    The episodes run on copies of the baseline tables and draw from a fresh
    generator seeded with `seed`; the solver does not change.

    Returns:
      An `EstimatorSample` (its value statistics are zero: this solver
      records the regret increments and the root values).
    """
    self._require_tree("sample_estimates()")
    num_episodes = base.check_sample_size("num_episodes", num_episodes, 8)
    shape = self._regrets.shape
    regret_sum, regret_sq = np.zeros(shape), np.zeros(shape)
    root_values = np.zeros(num_episodes)
    self._episodes(num_episodes, self._num_iterations + 1, True,
                   bool(learn_baselines),
                   rng_lib.pcg64_state(np.random.default_rng(base.check_seed(seed, True))),
                   self._regrets, self._baseline.copy(),
                   self._baseline_count.copy(),
                   (regret_sum, regret_sq, root_values))
    episodes = np.array([(num_episodes + 1) // 2, num_episodes // 2])
    owner = np.maximum(episodes[self._tree.infoset_player], 1)[:, None]
    regret_mean = regret_sum / owner
    zeros = np.zeros(shape)
    return base.EstimatorSample(root_values, episodes, regret_mean,
                                regret_sq / owner - regret_mean**2, zeros,
                                zeros)

  def public_state_probabilities(self, strategy=None):
    """q(S): the probability that an episode visits each public state.

    Follows the kernel's sampling of child public states (uniform, on-policy
    with the full reaches of `strategy`, or public chance sampling); q does
    not depend on the update player.

    Args:
      strategy: float64[I, A], default the current strategy.

    Returns:
      float64[P].
    """
    self._require_tree("public_state_probabilities()")
    t, p = self._tree, self._public
    if strategy is None:
      strategy = self.current_policy_table()
    reach = np.empty((t.num_nodes, 3))
    exact.reach_probabilities(*t.kernel_args()[:6], strategy, reach)
    full = reach.prod(axis=1)
    sampling, eps = SAMPLINGS[self._settings["sampling"]], self._settings[
        "epsilon"]
    q = np.zeros(p.num_public_states)
    q[0] = 1.0
    # Child public states have larger ids than their parents'.
    for s in range(p.num_public_states):
      children = self._candidates[self._candidate_start[s]:
                                  self._candidate_start[s + 1]]
      if q[s] == 0.0 or len(children) == 0:
        continue
      xi = np.full(len(children), 1.0 / len(children))
      if sampling == 1:
        mass = np.array([full[p.histories(c)].sum() for c in children])
        if mass.sum() > 0.0:
          xi = eps / len(children) + (1.0 - eps) * mass / mass.sum()
      elif sampling == 2 and t.node_kind[p.histories(s)[0]] != tree_lib.CHANCE:
        xi = np.ones(len(children))
      q[children] = q[s] * xi
    return q

  def conditional_variance(self, continuations=1000, seed=0):
    """Conditional variance of u(h, a) and u(h) (Schmid et al. 2019, Fig. 5).

    The tables are frozen (copies; baselines do not learn). For every public
    state S of player i's decisions that an episode visits with probability
    q(S) > 0 (`public_state_probabilities`), `continuations` episodes start
    at S, with q(S) = 1 and the frozen strategy's reaches of its histories,
    and sample down from it as training does. Every history h of S of
    player i with pi_{-i}(h) > 0 is measured: the sample variances of
    u(h, a) and u(h) (docs/pages/algorithms.md, "Public-state sampling") are averaged
    over those histories with weight q(S), the frequency with which
    training's episodes evaluate h.

    Args:
      continuations: M >= 2, episodes sampled from every public state.
      seed: seed of the measurement's own generator.

    Returns:
      An `outcome.ConditionalVariance`.
    """
    self._require_tree("conditional_variance()")
    continuations = outcome.check_continuations(continuations)
    t, p = self._tree, self._public
    strategy = self.current_policy_table()
    q = self.public_state_probabilities(strategy)
    own = np.empty((t.num_nodes, 3))
    exact.reach_probabilities(*t.kernel_args()[:6], strategy, own)
    reach = self._scratch[0]
    shape = self._regrets.shape
    frozen = (np.zeros(shape), np.zeros(shape), np.zeros(continuations))
    baseline = self._baseline.copy()
    counts = self._baseline_count.copy()
    rng_state = rng_lib.pcg64_state(np.random.default_rng(base.check_seed(seed, True)))
    nodes, weights, sums, squares = [], [], [], []
    for s in range(1, p.num_public_states):
      histories = p.histories(s)
      first = histories[0]
      if (q[s] == 0.0 or p.ps_terminal[s]
          or t.node_kind[first] != tree_lib.DECISION):
        continue
      i = t.node_player[first]
      opponent = own[histories, 1 - i] * own[histories, 2]
      measured = ((t.node_kind[histories] == tree_lib.DECISION)
                  & (t.node_player[histories] == i) & (opponent > 0.0))
      if not measured.any():
        continue
      reach[histories, 0] = own[histories, i]
      reach[histories, 1] = opponent
      reach[histories, 2] = own[histories, 1 - i]
      stats = np.zeros((len(histories), 2, t.max_actions + 1))
      self._episodes(continuations, self._num_iterations + 1, True, False,
                     rng_state, self._regrets, baseline, counts, frozen, s,
                     stats)
      nodes.append(histories[measured])
      weights.append(np.full(measured.sum(), q[s]))
      sums.append(stats[measured, 0])
      squares.append(stats[measured, 1])
    return outcome.conditional_summary(
        t, np.concatenate(nodes), np.concatenate(weights),
        np.concatenate(sums), np.concatenate(squares), continuations)


def record_bounds(tree, public_tree, candidate_start, candidates, explore):
  """The most records one episode of `public_batches` can write: (infoset
  rows, history-baseline edges, visited public states).

  A dynamic programme over the public tree, children first: a public state
  contributes its infosets (rows), its histories (edges into it, but the
  root's) and itself; an episode continues into one candidate child (the
  maximum over them) or, with public chance sampling (`explore`) at a
  public state of decisions, into every candidate (the sum).
  """
  p = public_tree
  num_ps = p.num_public_states
  rows, edges, states = (np.zeros(num_ps, dtype=np.int64) for _ in range(3))
  decision = tree.node_kind[p.ps_histories] == tree_lib.DECISION
  owner = np.repeat(np.arange(num_ps), np.diff(p.ps_history_start))
  infosets = np.unique(np.stack([owner[decision],
                                 tree.node_infoset[p.ps_histories[decision]]]),
                       axis=1)
  own_rows = np.bincount(infosets[0], minlength=num_ps)
  own_edges = np.diff(p.ps_history_start)
  own_edges[0] = 0
  first_kind = tree.node_kind[p.ps_histories[p.ps_history_start[:-1]]]
  for s in range(num_ps - 1, -1, -1):  # Children have larger ids.
    children = candidates[candidate_start[s]:candidate_start[s + 1]]
    agg = np.sum if explore and first_kind[s] != tree_lib.CHANCE else np.max
    below = [0, 0, 0] if len(children) == 0 else [
        int(agg(table[children])) for table in (rows, edges, states)]
    rows[s] = own_rows[s] + below[0]
    edges[s] = own_edges[s] + below[1]
    states[s] = 1 + below[2]
  return int(max(rows[0], 1)), int(max(edges[0], 1)), int(states[0])
