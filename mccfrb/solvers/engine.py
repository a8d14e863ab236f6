"""Sampling solvers on native engines: runs, policies, memory, save/load.

`EngineSampling` is mixed into the sampling solvers (MCCFRbSolver,
OutcomeSamplingSolver and PublicSamplingSolver) and used when their
representation is "engine" (solvers/representation.py): the game is
played by an engine (mccfrb/games/engines), infoset tables grow as
episodes visit them (solvers/tables.py), and the kernel is
kernels/outcome_engine.py (kernels/public_engine.py).

`EnginePolicy` is an OpenSpiel `policy.Policy` that answers
`action_probabilities(state)` from the tables, for games whose
`TabularPolicy` would enumerate more states than memory holds.
"""

import copy

import numpy as np
from open_spiel.python import policy as os_policy

from mccfrb.games.engines import protocol
from mccfrb.games.engines.common import call_literal
from mccfrb.kernels import outcome_engine
from mccfrb.kernels import table as table_kernels
from mccfrb.solvers import base
from mccfrb.solvers import tables as tables_lib

# Episodes per kernel call of a run's chunk (solvers/running.py): the
# tables grow between calls. Even, so a call never splits an iteration;
# the tables do not depend on it.
CHUNK_EPISODES = 1 << 14

# Baseline codes kept per history (kernels/outcome_engine.py): a second
# hash table keyed by the history.
HISTORY_BASELINES = (4, 5)
# The `history` tuple of a solver without per-history baselines.
_NO_HISTORY = tables_lib.InfosetTables(1, 1 << 20, baseline_cells=1,
                                       counts_per_cell=1, rows=2,
                                       strategy_cells=False)

# Flush codes of the average strategy (kernels/stream.py): none, the
# optimistic catch-up (T - c_I), or its linear-weight form with RM+.
FLUSH_NONE, FLUSH_OPTIMISTIC, FLUSH_OPTIMISTIC_PLUS = 0, 1, 2


def average_row(tables, row, flush, t, reach):
  """The average strategy of a row (normalised; uniform if empty), with
  the optimistic catch-up for an infoset whose owner reaches it with
  probability `reach` under sigma^T."""
  start, count = tables.row_start[row], tables.row_actions[row]
  cum = tables.avg[start:start + count].copy()
  if flush != FLUSH_NONE:
    skipped = base.skipped_weight(t, tables.avg_last[row],
                                  flush == FLUSH_OPTIMISTIC_PLUS)
    cum += skipped * reach * tables.strategy[start:start + count]
  total = cum.sum()
  if total <= 0.0:
    return np.full(count, 1.0 / count)
  return cum / total


class EnginePolicy(os_policy.Policy):
  """A policy read from an engine solver's tables, state by state.

  `action_probabilities(state)` replays the state's history in the engine,
  finds the acting player's infoset row by its key and returns the average
  (or current) strategy there; an infoset the solver never stored plays
  uniform. The tables are the solver's own arrays at the time of the call
  (not a copy): keep training and the policy follows.

  Attributes:
    engine: the `Engine`; tables: the `InfosetTables`; flush, iterations:
      how the average is read (the optimistic averaging's catch-up).
  """

  def __init__(self, game, engine, tables, current=False, flush=FLUSH_NONE,
               iterations=0):
    super().__init__(game, [0, 1])
    self.engine = engine
    self.tables = tables
    self.current = current
    self.flush = flush
    self.iterations = iterations
    self._state = np.zeros(engine.state_size, dtype=np.int64)

  def _row(self, state, player):
    e = self.engine
    history = np.asarray(state.history(), dtype=np.int64)
    bad = call_literal(protocol.replay, e.code, e.params, self._state,
                       history)
    if bad >= 0:
      raise ValueError(f"{state.history()} is not a history of {e.game} as "
                       "its engine plays it.")
    h1, h2 = call_literal(protocol.infoset_hash, e.code, e.params,
                          self._state, player)
    return self.tables.find(h1, h2), history

  def action_probabilities(self, state, player_id=None):
    player = state.current_player() if player_id is None else player_id
    legal = state.legal_actions(player)
    row, history = self._row(state, player)
    if row < 0:
      return {a: 1.0 / len(legal) for a in legal}
    t = self.tables
    if self.current:
      start = t.row_start[row]
      probs = t.strategy[start:start + t.row_actions[row]]
    else:
      reach = 1.0
      if self.flush != FLUSH_NONE:
        e = self.engine
        reach = call_literal(protocol.own_reach, e.code, e.params,
                             self._state, history, player, t.keys,
                             t.slot_row, t.row_start, t.strategy)
      probs = average_row(t, row, self.flush, self.iterations, reach)
    return dict(zip(legal, (float(p) for p in probs)))


class EngineSampling:
  """The engine side of a sampling solver (see the module docstring).

  Needs from the solver: `_baseline_code`, `_averaging_code`,
  `_regret_code`, `_epsilon`, `_decay`, `_weighting_args`, `_rng_words`,
  `_num_iterations`, `_nodes_touched`, `_threads`, `_hogwild`.
  """

  def _init_engine_game(self, game, engine):
    """The solver's game on `engine`: no tree, no iterations yet."""
    self._game, self._engine = game, engine
    self._tree = self._converter = None
    self._num_iterations = self._nodes_touched = 0

  def _init_engine(self, engine, max_memory):
    self._engine = engine
    code = self._baseline_code
    self._tables = tables_lib.InfosetTables(
        engine.max_moves, max_memory,
        baseline_cells={1: 2, 3: 1}.get(code, 0),
        counts_per_row=2 if code == 1 else 0,
        counts_per_cell=1 if code == 3 else 0)
    self._history = None
    if code in HISTORY_BASELINES:
      # The per-history baselines' table (a value and a visit count per
      # history and move; the predictive baseline leaves the count unused,
      # which keeps the table's views strided alike, one compiled kernel)
      # shares max_memory with the infoset tables, half each.
      total = self._tables.max_memory
      self._history = tables_lib.InfosetTables(
          engine.max_moves, total, baseline_cells=1, counts_per_cell=1,
          strategy_cells=False)
      self._tables.max_memory = self._history.max_memory = total // 2
    workers = self._threads
    depth, moves = max(engine.max_depth, 1), max(engine.max_moves, 1)
    self._engine_scratch = (
        np.zeros((workers, engine.state_size), dtype=np.int64),
        np.zeros((workers, depth), dtype=np.int64),
        np.zeros((workers, depth), dtype=np.int64),
        np.zeros((workers, depth, 4)), np.zeros((workers, depth, moves)),
        np.zeros((workers, moves)),
        np.zeros((workers, depth if self._history else 1, 2),
                 dtype=np.uint64))
    self._blocks = np.zeros((workers, table_kernels.BLOCK_SIZE),
                            dtype=np.int64)

  def _history_args(self):
    """The kernels' `history` tuple: the per-history baselines' table, or
    stand-ins."""
    h = self._history if self._history is not None else _NO_HISTORY
    return (h.keys, h.slot_row, h.meta, h.row_start, h.row_actions,
            h.baseline, h.baseline_count)

  @property
  def engine(self):
    """The native engine playing the game (None on a compiled tree)."""
    return getattr(self, "_engine", None)

  @property
  def representation(self):
    return "tree" if self.engine is None else "engine"

  def memory(self):
    """What the tables hold: a dict with `infosets` stored, `cells`
    (infoset-actions), `bytes` allocated, `max_memory`, `frozen` (the
    tables stopped growing at max_memory) and `dropped` (visits to
    infosets not stored since)."""
    if self.engine is None:
      nbytes = sum(getattr(self, n).nbytes for n in self._table_names)
      return dict(infosets=self._tree.num_infosets,
                  cells=int(self._tree.infoset_num_actions.sum()),
                  bytes=nbytes + self._tree.nbytes(), max_memory=None,
                  frozen=False, dropped=0)
    t, h = self._tables, getattr(self, "_history", None)
    report = dict(infosets=t.num_rows, cells=t.num_cells, bytes=t.nbytes(),
                  max_memory=t.max_memory, frozen=t.frozen,
                  dropped=t.dropped)
    if h is not None:
      report.update(histories=h.num_rows, bytes=t.nbytes() + h.nbytes(),
                    max_memory=t.max_memory + h.max_memory,
                    frozen=t.frozen or h.frozen, dropped=t.dropped + h.dropped)
    return report

  def _engine_margin(self):
    """Rows and cells a kernel call needs free (kernels/outcome_engine.py):
    each worker's episode, and with Hogwild a fresh block of rows."""
    e = self._engine
    spare = table_kernels.BLOCK_ROWS if self._threads > 1 else 0
    # A Hogwild worker checks for room once per iteration (two episodes).
    paths = 2 if self._threads > 1 else 1
    rows = self._threads * (paths * max(e.max_depth, 1) + spare)
    return rows, rows * max(e.max_moves, 1)

  def _infosets_stored(self):
    return None if self.engine is None else self._tables.num_rows

  def _run_engine(self, num_iterations):
    """`num_iterations` iterations on the engine, in kernel calls of
    CHUNK_EPISODES episodes, growing the tables between calls."""
    e, t = self._engine, self._tables
    first = self._num_iterations + 1
    start_iterations = self._num_iterations
    weighting = self._weighting_args(self._num_iterations + num_iterations)
    total = 2 * num_iterations
    done = 0
    h = self._history
    while done < total:
      if not t.frozen and not outcome_engine.has_room(
          t.meta, t.row_start, t.regrets, t.slot_row,
          *self._engine_margin()):
        t.grow(*self._engine_margin())
      if h is not None and not h.frozen and not outcome_engine.has_room(
          h.meta, h.row_start, h.baseline[:, 0], h.slot_row,
          *self._engine_margin()):
        h.grow(*self._engine_margin())
      end = min(total, done + CHUNK_EPISODES * self._threads)
      allow = not t.frozen
      allow_history = h is not None and not h.frozen
      history = self._history_args()
      t.meta[outcome_engine.STOP] = 0
      if self._threads > 1 and self._hogwild:
        finished = np.zeros(self._threads, dtype=np.int64)
        # The workers are a prange over self._threads: numba's pool must
        # run that many whatever the caller set (the experiment binaries
        # set one thread).
        with base.numba_threads(self._threads):
          touched = call_literal(
              outcome_engine.hogwild_episodes, e.code, e.params,
              e.utility_sum, t.keys, t.slot_row, t.meta,
              t.row_start, t.row_actions, t.avg_last, t.through, t.regrets,
              t.strategy, t.avg, t.baseline, t.baseline_count, history,
              self._baseline_code, self._averaging_code, self._regret_code,
              self._epsilon, self._decay, first + done // 2, end - done,
              allow, allow_history, *weighting, self._rng_words,
              self._threads, *self._engine_scratch, self._blocks, finished)
        self._hogwild_episodes = finished + getattr(
            self, "_hogwild_episodes", 0)  # Per worker, for the tests.
        # A worker claims whole iterations and checks for room before
        # each (kernels/outcome_engine.py), so every claimed iteration
        # runs both episodes.
        ran = int(finished.sum())
        assert ran % 2 == 0, finished
        reached = done + ran
      else:
        reached, touched, _ = call_literal(
            outcome_engine.engine_episodes, e.code, e.params,
            e.utility_sum, t.keys, t.slot_row, t.meta,
            t.row_start, t.row_actions, t.avg_last, t.through, t.regrets,
            t.strategy, t.avg, t.baseline, t.baseline_count, history,
            self._baseline_code, self._averaging_code, self._regret_code,
            self._epsilon, self._decay, first, done, end, allow,
            allow_history, *weighting, self._rng_words, np.uint64(0), 0,
            1, *self._engine_scratch, self._blocks[0, :0], self._blocks[0, :1])
      self._nodes_touched += int(touched)
      done = int(reached)
      self._num_iterations = start_iterations + done // 2

  def _require_tree(self, what):
    if self.engine is not None:
      raise ValueError(
          f"{what} needs the compiled tree; this solver plays "
          f"{self._game} on its engine. Use representation='tree' for a "
          "game that fits, or average_policy() / current_policy() here.")

  def average_policy(self):
    """The average strategy: a `TabularPolicy` on a compiled tree, an
    `EnginePolicy` (answering state by state) on an engine."""
    if self.engine is None:
      return super().average_policy()
    return self._engine_policy(False)

  def current_policy(self):
    """The current strategy (`TabularPolicy` or `EnginePolicy`)."""
    if self.engine is None:
      return super().current_policy()
    return self._engine_policy(True)

  def average_policy_table(self):
    self._require_tree("average_policy_table()")
    return super().average_policy_table()

  def current_policy_table(self):
    self._require_tree("current_policy_table()")
    return super().current_policy_table()

  def _tables_to_save(self):
    if self.engine is None:
      return super()._tables_to_save()
    return self._engine_tables_to_save()

  def _restore_tables(self, tables, path):
    if self.engine is None:
      super()._restore_tables(tables, path)
    else:
      self._engine_tables_loaded(
          {k: v for k, v in tables.items() if k.startswith("engine_")})

  def _engine_policy(self, current):
    flush = flush_code(self._averaging_code, self._regret_code)
    return EnginePolicy(self._game, self._engine, self._tables,
                        current=current, flush=0 if current else flush,
                        iterations=self._num_iterations)

  def _engine_tables_to_save(self):
    saved = {}
    for prefix, t in self._engine_table_sets():
      saved.update({prefix + n: getattr(t, n) for n in tables_lib.SAVED})
    return saved

  def _engine_table_sets(self):
    """(checkpoint prefix, InfosetTables) of every table set."""
    sets = [("engine_", self._tables)]
    if getattr(self, "_history", None) is not None:
      sets.append(("engine_history_", self._history))
    return sets

  def _engine_tables_loaded(self, saved):
    for prefix, t in self._engine_table_sets():
      missing = [n for n in tables_lib.SAVED if prefix + n not in saved]
      if missing:
        raise ValueError(f"an engine checkpoint lacks the tables "
                         f"{[prefix + n for n in missing]} (written by an "
                         "earlier release of mccfrb?).")
      meta = saved[prefix + "meta"]
      if meta.dtype != t.meta.dtype or meta.shape != t.meta.shape:
        raise ValueError(f"an engine checkpoint holds the table "
                         f"'{prefix}meta' with another type or shape.")
      t.meta = meta
      t.restore(*(saved[prefix + n] for n in tables_lib.BUFFERS))
      t.frozen = False  # The next growth past max_memory freezes it again.


def engine_policy_nash_conv(policy, progress=True):
  """NashConv of an `EnginePolicy` by the streaming walk (mccfrb/evaluation/stream.py):
  the average strategy with its optimistic catch-up, or the current
  strategy (read as an average with no catch-up)."""
  from mccfrb.evaluation import stream  # pylint: disable=import-outside-toplevel
  tables = policy.tables
  if policy.current:
    tables = copy.copy(tables)
    tables.avg = tables.strategy
  return stream.engine_nash_conv(policy.engine, tables, policy.flush,
                                 policy.iterations, progress=progress)


def flush_code(averaging_code, regret_code):
  """The flush code of an average strategy (see `average_row`)."""
  if averaging_code != 1:
    return FLUSH_NONE
  return FLUSH_OPTIMISTIC_PLUS if regret_code else FLUSH_OPTIMISTIC
