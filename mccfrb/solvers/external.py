"""External-sampling MCCFR with weighting and pruning, on a compiled tree,
a grown tree or a native engine (kernels/external.py: one traversal for
all three)."""

import numpy as np
from open_spiel.python.algorithms.external_sampling_mccfr import AverageType
import pyspiel

from mccfrb import games
from mccfrb.games import tree as tree_lib
from mccfrb.kernels import baselines as baselines_lib
from mccfrb.kernels import external
from mccfrb.kernels import rng as rng_lib
from mccfrb.games.engines.common import call_literal
from mccfrb.solvers import base
from mccfrb.solvers import engine as engine_lib
from mccfrb.solvers import grown as grown_lib
from mccfrb.solvers import representation as representation_lib

ES_AVERAGINGS = {"simple": 0, "full": 1}
# The batch size of threads > 1 when no batch is given (docs/pages/threads.md).
DEFAULT_ES_BATCH = 8
PRUNINGS = {None: 0, "pluribus": 1, "probabilistic": 2}
# Nodes a worker visits per kernel call on an engine: a call returns after
# a few tens of milliseconds, for the progress bar and Ctrl-C, even on a
# game whose single traversal takes minutes (13-card goofspiel); a run's
# result does not depend on it (a traversal is suspended and resumed).
ENGINE_CALL_NODES = 1 << 20
# Iterations per Hogwild worker and block (threads > 1 on an engine): the
# workers wait for each other at the end of a block.
HOGWILD_BLOCK = 64
# Baselines at the sampled (opponent's and chance) nodes, on engines: the
# registry's kinds with a situation or public key and the running mean of
# the child's value (kernels/baselines.py; kernels/external.py
# `keyed_correct`).
ES_BASELINES = ("none",) + tuple(
    k for k in baselines_lib.kinds("engine", ("situation", "public"))
    if baselines_lib.BASELINES[k].rule == "child"
    and not baselines_lib.falls_back(k))
# The keyed table's room made before each kernel call (rows).
KEYED_MARGIN_ROWS = 1 << 16
# The checkpoint's entries of a traversal suspended on an engine.
_ES_STATE = ("progress", "streams", "states", "frame_row", "frame_count",
             "frame_child", "frame_sigma", "frame_values", "frame_weight")


def averaging_name(averaging):
  """Maps OpenSpiel's AverageType.SIMPLE / FULL (the Python enum, which
  mccfrb re-exports as `mccfrb.AverageType`, or pyspiel.MCCFRAverageType)
  to "simple" / "full"; returns any other value unchanged."""
  if isinstance(averaging, (AverageType, pyspiel.MCCFRAverageType)):
    return averaging.name.lower()
  return averaging


class ExternalSamplingSolver(base.TabularSolverBase):
  """External-sampling MCCFR with weighting and pruning (kernels/external.py).

  Args:
    game: a game string or `pyspiel.Game`.
    averaging: "simple" (at the opponent's nodes, OpenSpiel's default) or
      "full" (a full-tree pass per iteration with the owner's reach; needs
      the compiled tree); or OpenSpiel's `AverageType.SIMPLE` / `FULL`, so
      that OpenSpiel's `ExternalSamplingSolver(game, AverageType.SIMPLE)`
      works unchanged.
    weighting: None, "linear" (iteration t weighs t, or min(t,
      linear_iterations) when that is set: linear for an initial phase only),
      or "discounted" (DCFR's alpha, beta, gamma; applied lazily per infoset).
    linear_iterations: see `weighting="linear"`.
    alpha, beta, gamma: DCFR parameters, default (1.5, 0, 2).
    pruning: None, "pluribus" (skip an action with regret below
      `prune_threshold` with probability `prune_probability`) or
      "probabilistic" (explore it with probability max(prune_floor,
      prune_k / (prune_k + prune_threshold - R)), weighted 1/q).
    prune_threshold: the regret below which an action may be pruned, < 0
      (default -200, Pluribus's).
    prune_probability: "pluribus"'s probability of skipping such an
      action, in (0, 1] (default 0.95).
    prune_k, prune_floor: "probabilistic"'s constants, prune_k > 0 (default
      200) and prune_floor in (0, 1] (default 0.05).
    prune_after: the first iteration at which pruning may happen (warm-up).
    seed, max_nodes, tree: as for `MCCFRbSolver`.
    threads, batch: as for `MCCFRbSolver` (kernels/external.py,
      `es_batches`); batch=None with threads > 1 runs batches of
      DEFAULT_ES_BATCH iterations.
    representation: "auto" (default), "tree", "engine" or "grown"
      (solvers/representation.py): "auto" compiles the tree when the game
      fits in max_nodes, plays a native engine (`engine_names()`)
      when it does not and the game has one, and grows the tree as
      traversals reach new histories otherwise (two-player zero-sum
      games). On an engine (kernels/external.py) or a grown tree
      infoset tables grow as traversals visit them, averaging is "simple",
      and a run equals the tree's run with the same seed bit for bit
      (threads=1).
    max_memory: bytes the engine's tables may take (default: half the
      memory available at construction); past it they stop growing, and
      infosets not stored by then play uniform and are not updated
      (`memory()` reports it).
    hogwild: with threads > 1 on an engine, workers run traversals against
      the shared tables without locks (Hogwild): not reproducible run to
      run. Required for threads > 1 on an engine; not on a tree.
    precision: the cells of an engine's tables, as for `MCCFRbSolver`.
    baseline: "none" (default), or on an engine with one thread
      "situation" or "public": a baseline at the sampled nodes (the
      opponent's and chance's), keyed by the game's situation or public
      state, learning the running mean of the child's value; the estimate
      stays unbiased (VR-MCCFR, Schmid et al. 2019, applied to external
      sampling). Its table takes a quarter of max_memory.
  """

  _table_names = ("_regrets", "_avg", "_through")

  def __init__(self, game, averaging="simple", weighting=None,
               linear_iterations=None, alpha=1.5, beta=0.0, gamma=2.0,
               pruning=None, prune_threshold=-200.0, prune_probability=0.95,
               prune_k=200.0, prune_floor=0.05, prune_after=1, seed=None,
               max_nodes=tree_lib.DEFAULT_MAX_NODES, tree=None, threads=1,
               batch=None, representation="auto", max_memory=None,
               hogwild=False, precision=None, baseline="none"):
    averaging = averaging_name(averaging)
    base.check_choice("baseline", baseline, ES_BASELINES)
    if not isinstance(hogwild, bool):
      raise ValueError(f"hogwild must be True or False, got {hogwild!r}.")
    self._hogwild = hogwild
    self._init_threads(threads, None if hogwild else batch,
                       default=DEFAULT_ES_BATCH)
    base.check_choice("averaging", averaging, ES_AVERAGINGS)
    self._weights = base.Weighting(weighting, linear_iterations, alpha, beta,
                                   gamma)
    if pruning not in PRUNINGS:
      raise ValueError(f"Unknown pruning {pruning!r}; allowed: None, "
                       "'pluribus', 'probabilistic'.")
    for name, value in (("prune_threshold", prune_threshold),
                        ("prune_k", prune_k)):
      if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{name} must be a number, got {value!r}.")
    if prune_threshold >= 0:
      raise ValueError(f"prune_threshold must be negative, got {prune_threshold}.")
    base.check_unit_interval("prune_probability", prune_probability)
    base.check_unit_interval("prune_floor", prune_floor)
    if prune_k <= 0:
      raise ValueError(f"prune_k must be positive, got {prune_k}.")
    prune_after = base.check_num_iterations(prune_after, "prune_after")
    if tree is not None and representation == "auto":
      representation = "tree"
    loaded = games.load_game(game, general=True)
    kind, engine = representation_lib.resolve(loaded, representation,
                                              max_nodes, grown=True)
    if kind in ("engine", "grown") and averaging == "full":
      chose = (" (representation='auto' chose it: the game is too large to "
               "compile)") if representation == "auto" else ""
      raise ValueError(
          "averaging='full' walks the whole game tree every iteration and "
          f"needs the compiled tree; {loaded} is played on its {kind}"
          f"{' tree' if kind == 'grown' else ''}{chose}. Use "
          "averaging='simple' there.")
    representation_lib.check_hogwild(kind, self._threads, hogwild, batch)
    if baseline != "none" and (kind != "engine" or self._threads > 1):
      raise ValueError(
          f"baseline={baseline!r} in external sampling runs on an engine "
          "with threads=1 (its situation_hash or public_hash); here "
          f"{loaded} is played on {'its ' + kind if kind != 'tree' else 'a compiled tree'}"
          f"{' tree' if kind == 'grown' else ''}"
          f"{' with threads=' + str(self._threads) if kind == 'engine' else ''}"
          "; use baseline='none'.")
    self._init_rng(seed)
    self._settings = dict(
        averaging=averaging, pruning=pruning, baseline=baseline,
        prune_threshold=float(prune_threshold),
        prune_probability=float(prune_probability), prune_k=float(prune_k),
        prune_floor=float(prune_floor), prune_after=int(prune_after),
        **self._threads_option)
    self._counters = np.zeros(2, dtype=np.int64)
    if kind != "engine":
      engine_lib.refuse_hashed_options(kind, precision, None)
    if kind == "engine":
      self._game = loaded
      self._init_es_engine(engine, max_memory, precision)
      return
    if kind == "grown":
      self._init_backend(loaded, grown_lib.GrownBackend(
          self, loaded, max_memory, outcome_sampling=False))
      return
    self._init_game(loaded, max_nodes, tree, general=True)
    t = self._tree
    shape = (t.num_infosets, t.max_actions)
    self._regrets = np.zeros(shape)
    self._avg = np.zeros(shape)
    self._through = np.zeros(t.num_infosets, dtype=np.int64)
    self._scratch = self._frames(None)

  def _frames(self, workers):
    """The traversal's frames (`_traversals`), with a leading axis of
    `workers` rows unless None, and the full-averaging scratch."""
    t = self._tree
    lead = () if workers is None else (workers,)
    depth = max(t.max_depth, 1) + 1
    full = self._settings["averaging"] == "full"
    return (np.zeros(lead + (depth,), dtype=np.int64),
            np.zeros(lead + (depth,), dtype=np.int64),
            np.zeros(lead + (depth, t.max_actions)),
            np.zeros(lead + (depth, t.max_actions)),
            np.zeros(lead + (depth, t.max_actions)),
            np.zeros((t.num_infosets, t.max_actions) if full
                     else (0, t.max_actions)),
            np.zeros((t.num_nodes if full else 0, t.num_players + 1)))

  def _batch_scratch(self):
    """Frames, per-worker counters and records of `es_batches`."""
    if self._batch_buffers is None:
      t, workers = self._tree, self._threads
      episodes = t.num_players * self._batch
      bound = external.traversal_bound(*t.kernel_args()[:5], t.num_players)
      self._batch_buffers = self._frames(workers) + (
          np.zeros((workers, 2), dtype=np.int64),
          np.zeros((episodes, bound), dtype=np.int64),
          np.zeros(episodes, dtype=np.int64),
          np.zeros((episodes, bound, t.max_actions)),
          np.zeros((episodes, bound, t.max_actions)))
    return self._batch_buffers

  def _options(self):
    options = {**self._settings, **self._weights.options,
               **self._backend.options()}
    if self.representation == "engine":
      options.update(hogwild=self._hogwild)
    return options

  def _pruning_code(self):
    return PRUNINGS[self._settings["pruning"]]

  @property
  def subtrees_pruned(self):
    """Actions skipped by pruning so far."""
    return int(self._counters[1])

  def _run_chunk(self, num_iterations):
    """`num_iterations` iterations: in one kernel call on a compiled tree;
    on an engine in calls of ENGINE_CALL_NODES nodes per worker, growing
    the tables between calls."""
    if self.representation == "engine":
      self._run_es_engine(num_iterations)
      return
    if self.representation == "grown":
      self._backend.run_external(int(num_iterations))
      return
    s, t = self._settings, self._tree
    touched_before = self._counters[0]
    args = (*t.kernel_args(), t.utility_sum, t.infoset_num_actions,
            self._regrets, self._avg, self._through,
            ES_AVERAGINGS[s["averaging"]],
            *self._weights.args(self._num_iterations + num_iterations),
            PRUNINGS[s["pruning"]], s["prune_threshold"],
            s["prune_probability"], s["prune_k"], s["prune_floor"],
            s["prune_after"], self._num_iterations + 1, num_iterations)
    if self._batch is None:
      external.es_iterations(*args, self._rng_words, *self._scratch,
                             self._counters)
    else:
      buffers = self._batch_scratch()
      counters = buffers[7]
      counters[:] = 0
      with base.numba_threads(self._threads):
        external.es_batches(*args, self._batch, self._rng_words,
                            self._threads, *buffers)
      self._counters += counters.sum(axis=0)
    self._nodes_touched += int(self._counters[0] - touched_before)
    self._num_iterations += num_iterations

  # The engine (kernels/external.py).

  def _init_es_engine(self, engine, max_memory, precision=None):
    """The solver's backend on `engine`: the tables (and a baseline's) and
    each worker's traversal state: its block of traversals (`progress`),
    streams, stack of engine states and frames (kernels/external.py),
    saved with the tables."""
    precision = engine_lib.check_precision(precision)
    header = ("through",) if self._weights.discounted else ()
    tables, history = engine_lib.engine_tables(
        engine, self._settings["baseline"], max_memory, ("regret", "avg"),
        header, ("value", "count"), precision)
    self._init_backend(self._game, engine_lib.EngineBackend(
        self, engine, tables, history, precision, weights=self._weights))
    workers = self._threads
    depth = max(engine.max_depth, 1) + 1
    moves = max(engine.max_moves, 1)
    self._es_state = dict(
        progress=np.zeros((workers, external.PROGRESS_SIZE),
                          dtype=np.int64),
        streams=np.zeros((workers, 2), dtype=np.uint64),
        states=np.zeros((workers, depth + 1, engine.state_size),
                        dtype=np.int64),
        frame_row=np.zeros((workers, depth), dtype=np.int64),
        frame_count=np.zeros((workers, depth), dtype=np.int64),
        frame_child=np.zeros((workers, depth), dtype=np.int64),
        frame_sigma=np.zeros((workers, depth, moves)),
        frame_values=np.zeros((workers, depth, moves)),
        frame_weight=np.zeros((workers, depth, moves)))
    # Each depth's baseline row and sampled move (saved with a baseline
    # only, so that checkpoints without one keep their entries).
    self._es_keyed_frames = dict(
        frame_brow=np.zeros((workers, depth), dtype=np.int64),
        frame_act=np.zeros((workers, depth), dtype=np.int64))
    if history is not None:
      self._es_state.update(self._es_keyed_frames)
    self._es_counters = np.zeros((workers, 2), dtype=np.int64)
    self._backend.extra = {"es_" + k: v for k, v in self._es_state.items()}

  def _episodes_done(self):
    """Traversals finished: all before the current block, and those of the
    block the workers finished."""
    progress = self._es_state["progress"]
    return int(progress[0, external.BEGIN]
               + progress[:, external.RAN].sum())

  def _blocks_done(self):
    progress = self._es_state["progress"]
    return not (progress[:, external.PENDING].any() or (
        progress[:, external.NEXT]
        < progress[:, external.END]).any())

  def _assign_blocks(self, first, target):
    """The block of traversals first .. target - 1 (Hogwild: at most
    HOGWILD_BLOCK iterations a worker), shared among the workers
    (`es_engine_traversals`); draws the block's key."""
    progress, streams = self._es_state["progress"], self._es_state["streams"]
    workers = self._threads
    end = target if workers == 1 else min(
        target, first + 2 * workers * HOGWILD_BLOCK)
    for w in range(workers):
      progress[w] = 0
      progress[w, external.NEXT] = first + 2 * w
      progress[w, external.BEGIN] = first
      progress[w, external.END] = end
    if workers > 1:
      streams[:, external.KEY] = rng_lib.batch_key(self._rng_words)

  def _run_es_engine(self, num_iterations):
    """Traversals up to iteration num_iterations + the iterations done
    (each iteration: player 0's traversal, then player 1's), in kernel
    calls, growing the tables when a call stops short of room. A traversal
    left suspended by an interrupted run (Ctrl-C) is finished first."""
    b, st = self._backend, self._es_state
    e, t, h = b.engine, b.tables, b.history
    s = self._settings
    workers = self._threads
    target = 2 * (self._num_iterations + num_iterations)
    # Blocks of an interrupted Hogwild run may end past the target.
    last = max(target, int(st["progress"][:, external.END].max()))
    weighting = self._weights.args(last // 2 + 1)
    margin = (workers, workers * t.row_words(max(e.max_moves, 1)))
    if workers == 1:
      if self._blocks_done():
        self._assign_blocks(self._episodes_done(), target)
      st["progress"][0, external.END] = target
    while True:
      if self._blocks_done():
        done = self._episodes_done()
        if done >= target:
          break
        self._assign_blocks(done, target)
      self._backend.make_room(t, *margin)
      if h is not None:
        self._backend.make_room(
            h, KEYED_MARGIN_ROWS,
            KEYED_MARGIN_ROWS * h.row_words(max(e.max_moves, 1)))
        h.meta[external.STOP] = 0
      t.meta[external.STOP] = 0
      self._es_counters[:] = 0
      through = t.header_number("through") if "through" in t.header_names \
          else -1
      args = (e.code, e.params, e.utility_sum, t.args(), through,
              *weighting, PRUNINGS[s["pruning"]], s["prune_threshold"],
              s["prune_probability"], s["prune_k"], s["prune_floor"],
              s["prune_after"], not t.frozen, ENGINE_CALL_NODES,
              self._rng_words)
      frames = tuple(st[name] for name in _ES_STATE)
      if workers == 1:
        k = self._es_keyed_frames
        call_literal(external.es_engine_traversals, *args, 0, 1,
                     *frames, self._es_counters,
                     None if h is None else h.args(),
                     baselines_lib.codes(self._settings["baseline"])[0],
                     h is not None and not h.frozen, k["frame_brow"],
                     k["frame_act"])
      else:
        # Hogwild: each worker's share of the block on its own thread.
        base.on_threads(
            lambda w: call_literal(
                external.es_engine_traversals, *args, w, workers, *frames,
                self._es_counters, None, 0, False, st["frame_row"],
                st["frame_row"]), workers)
      total = self._es_counters.sum(axis=0)
      self._counters += total
      self._nodes_touched += int(total[external.TOUCHED])
      self._num_iterations = self._episodes_done() // 2
    b.warn_if_stalled()
