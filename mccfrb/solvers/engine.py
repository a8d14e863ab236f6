"""Sampling solvers on native engines: runs, policies, memory, save/load.

`EngineSampling` is mixed into the sampling solvers (MCCFRbSolver,
OutcomeSamplingSolver and PublicSamplingSolver) and used when their
representation is "engine" (solvers/representation.py): the game is
played by an engine (mccfrb/games/engines), infoset tables grow as
episodes visit them (solvers/tables.py), and the kernel is
kernels/outcome.py (kernels/public.py's `episodes` with an engine).

`EnginePolicy` is an OpenSpiel `policy.Policy` that answers
`action_probabilities(state)` from the tables, for games whose
`TabularPolicy` would enumerate more states than memory holds.
"""

import math
from typing import NamedTuple
import warnings

import numpy as np
from open_spiel.python import policy as os_policy

from mccfrb import counts
from mccfrb.games import forms
from mccfrb.games.engines import protocol
from mccfrb.games.engines.common import call_literal
from mccfrb.kernels import baselines as baselines_lib
from mccfrb.kernels import outcome as outcome_kernel
from mccfrb.kernels import rng as rng_lib
from mccfrb.kernels import rows as row_kernels
from mccfrb.solvers import base
from mccfrb.solvers import representation as representation_lib
from mccfrb import tables as tables_lib
from mccfrb.tables import hashed

# Episodes per kernel call of a run's chunk (solvers/running.py): the
# tables grow between calls. Even, so a call never splits an iteration;
# the tables do not depend on it.
CHUNK_EPISODES = 1 << 14

# Precision of the cells of hashed tables when the solver is given None:
# float32 learned as float64 at equal iterations and was faster at equal
# seconds (docs: "Big games", experiments/precision.py).
DEFAULT_PRECISION = "float32"
# Episodes in flight (kernels/outcome.py) when given None: the
# misses of 8 lookups overlap (docs: "Big games").
DEFAULT_IN_FLIGHT = 8
MAX_IN_FLIGHT = 64
# A float32 run warns once more than this fraction of its cell updates was
# lost to rounding (cells that stopped moving).
STALL_WARNING = 0.01

# What a checkpoint holds of each hashed table (HashedTable.state()).
SAVED = ("meta", "index", "arena", "layout")

# Flush codes of the average strategy (kernels/stream.py): none, the
# optimistic catch-up (T - c_I), or its linear-weight form with RM+.
FLUSH_NONE, FLUSH_OPTIMISTIC, FLUSH_OPTIMISTIC_PLUS = 0, 1, 2


def current_row(tables, row, discount=None):
  """sigma^t of a row: the regret matching of its regrets (or its stored
  strategy field, where the table keeps one). `discount`: (log_pos,
  log_neg, T) of discounted weighting: the discounts the row has pending
  (iterations through + 1 .. T) are applied first, as the kernels' catch-up
  would (the table is not changed)."""
  if "strategy" in tables.fields:
    return tables.field(row, "strategy").astype(np.float64)
  regrets = tables.field(row, "regret").astype(np.float64)
  if discount is not None:
    log_pos, log_neg, last = discount
    through = int(tables.header(row, "through")[0])
    fp = math.exp(log_pos[last] - log_pos[through])
    fn = math.exp(log_neg[last] - log_neg[through])
    regrets = np.array([x * fp if x >= 0.0 else x * fn for x in regrets])
  out = np.zeros(len(regrets))
  row_kernels.match_into(regrets, 0, len(regrets), out, 0)
  return out


def average_row(tables, row, flush, t, reach):
  """The average strategy of a row (normalised; uniform if empty), with
  the optimistic catch-up for an infoset whose owner reaches it with
  probability `reach` under sigma^T."""
  cum = tables.field(row, "avg").astype(np.float64)
  count = len(cum)
  if flush != FLUSH_NONE:
    skipped = base.skipped_weight(t, tables.stamp(row),
                                  flush == FLUSH_OPTIMISTIC_PLUS)
    cum += skipped * reach * current_row(tables, row)
  total = cum.sum()
  if total <= 0.0:
    return np.full(count, 1.0 / count)
  return cum / total


def own_reach(engine, tables, history, player, state):
  """pi_p(h) of the OpenSpiel action ids `history` under the tables'
  current strategy (kernels/rows.py); `state` is scratch."""
  stored = "strategy" in tables.fields
  field = tables.field_number("strategy" if stored else "regret")
  return call_literal(row_kernels.own_reach, engine.code, engine.params,
                      state, np.asarray(history, dtype=np.int64), player,
                      tables.args(), field, stored)


class EnginePolicy(os_policy.Policy):
  """A policy read from an engine solver's tables, state by state.

  `action_probabilities(state)` takes a state of the solver's game (the
  turn-based form of a simultaneous-move game; a state of another game or
  form is refused, `mccfrb.games.forms`), replays its history in the engine,
  finds the acting player's infoset row by its key and returns the average
  (or current) strategy there; an infoset the solver never stored plays
  uniform. The tables are the solver's own arrays at the time of the call
  (not a copy): keep training and the policy follows.

  Attributes:
    engine: the `Engine`; tables: the `InfosetTables`; flush, iterations:
      how the average is read (the optimistic averaging's catch-up).
  """

  def __init__(self, game, engine, tables, current=False, flush=FLUSH_NONE,
               iterations=0, discount=None):
    super().__init__(game, [0, 1])
    self.engine = engine
    self.tables = tables
    self.current = current
    self.flush = flush
    self.iterations = iterations
    self.discount = discount
    self._state = np.zeros(engine.state_size, dtype=np.int64)
    self._check_state = forms.StateCheck(game, "EnginePolicy")

  def _row(self, state, player):
    e = self.engine
    history = np.asarray(state.history(), dtype=np.int64)
    bad = call_literal(protocol.replay, e.code, e.params, self._state,
                       history)
    if bad >= 0:
      raise ValueError(f"{state.history()} is not a history of {e.game} as "
                       "its engine plays it.")
    h1, h2 = protocol.infoset_hash(e.code, e.params, self._state, player)
    return self.tables.find(h1, h2), history

  def action_probabilities(self, state, player_id=None):
    self._check_state(state)
    player = state.current_player() if player_id is None else player_id
    legal = state.legal_actions(player)
    row, history = self._row(state, player)
    if row < 0:
      return {a: 1.0 / len(legal) for a in legal}
    t = self.tables
    if self.current:
      probs = current_row(t, row, self.discount)
    else:
      reach = 1.0
      if self.flush != FLUSH_NONE:
        reach = own_reach(self.engine, t, history, player, self._state)
      probs = average_row(t, row, self.flush, self.iterations, reach)
    return dict(zip(legal, (float(p) for p in probs)))


class EngineSampling:
  """The engine side of a sampling solver (see the module docstring).

  Needs from the solver: `_baseline_name`, `_kernel_codes`, `_decay`,
  `_weighting_args`, `_rng_words`, `_num_iterations`, `_nodes_touched`,
  `_threads`, `_hogwild`.
  """

  def _init_engine_game(self, game, engine):
    """The solver's game on `engine`: no tree, no iterations yet."""
    self._game, self._engine = game, engine
    self._tree = self._converter = None
    self._num_iterations = self._nodes_touched = 0

  def _init_engine(self, engine, max_memory, precision=None, in_flight=None):
    """The solver's hashed tables (tables/hashed.py) for its baseline,
    averaging and weighting, and the kernels' scratch."""
    self._engine = engine
    self._precision = check_precision(precision)
    self._in_flight = check_in_flight(in_flight)
    name = self._baseline_name
    entry = baselines_lib.BASELINES[name]
    running = baselines_lib.running_counts(name, self._decay)
    fields = ["regret", "avg"]
    header = []
    if self._weighting["weighting"] == "discounted":
      header.append("through")
    if entry.key == "infoset" or entry.fallback == "infoset":
      if entry.owner == baselines_lib.OWNER_UPDATE_PLAYER:
        fields += ["b0", "b1"]
        header += ["count0", "count1"]
      else:
        fields += ["baseline"] + (["count"] if running else [])
    keyed = baselines_lib.keyed_table(name)
    total = tables_lib.check_max_memory(max_memory)
    keyed_bytes = baselines_lib.keyed_share(name, total)
    if keyed and min(keyed_bytes, total - keyed_bytes) < tables_lib.MIN_MEMORY:
      raise ValueError(
          f"max_memory={total} is too small for baseline={name!r}, whose "
          f"second table takes {keyed_bytes / total:.0%} of it: each table "
          f"needs at least {tables_lib.MIN_MEMORY} bytes.")
    self._tables = tables_lib.HashedTable(
        engine.max_moves, fields, header, precision=self._precision,
        max_memory=total - keyed_bytes)
    # The keyed baselines' table (a value per key and move, and the running
    # mean's visit count; kernels/outcome.py) takes its key's share of
    # max_memory (kernels/baselines.py: half for histories, a quarter for
    # situations and public states), the infoset table the rest. (Saved
    # as "engine_history_*".)
    self._history = None
    k_fields = ["value"] + (["count"] if running else [])
    if keyed:
      self._history = tables_lib.HashedTable(
          engine.max_moves, k_fields, precision=self._precision,
          max_memory=keyed_bytes)
    t = self._tables
    number = lambda names, name: names.index(name) if name in names else -1
    fmap = np.full(outcome_kernel.FMAP_SIZE, -1, dtype=np.int64)
    fmap[outcome_kernel.F_REGRET] = t.field_number("regret")
    fmap[outcome_kernel.F_AVG] = t.field_number("avg")
    fmap[outcome_kernel.F_BASE] = number(t.fields, "b0" if "b0" in t.fields
                                         else "baseline")
    fmap[outcome_kernel.F_COUNT] = number(t.fields, "count")
    fmap[outcome_kernel.H_THROUGH] = number(t.header_names, "through")
    fmap[outcome_kernel.H_COUNT] = number(t.header_names, "count0")
    fmap[outcome_kernel.F_KEYED_VALUE] = 0
    fmap[outcome_kernel.F_KEYED_COUNT] = number(k_fields, "count")
    self._fmap = fmap
    slots = self._threads * self._in_flight
    depth, moves = max(engine.max_depth, 1), max(engine.max_moves, 1)
    self._engine_scratch = (
        np.zeros((slots, engine.state_size), dtype=np.int64),
        outcome_kernel.Scratch(
            np.zeros((slots, depth), dtype=np.int64),
            np.zeros((slots, depth), dtype=np.int64),
            np.zeros((slots, depth, 4)), np.zeros((slots, moves)),
            np.zeros((slots, moves))),
        np.zeros((slots, depth, moves)), np.zeros((slots, depth, moves)),
        np.zeros((slots, depth if keyed else 1, 2), dtype=np.uint64),
        np.zeros((slots, depth if keyed else 1), dtype=np.int64),
        np.zeros((slots, outcome_kernel.LANE_SIZE), dtype=np.int64),
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
    self._stall_warned = False

  def _history_args(self):
    """The kernels' `history` tuple: the per-history baselines' table, or
    a stand-in of the same precision."""
    h = self._history
    if h is None:
      h = _no_history(self._precision)
    return h.args()

  @property
  def engine(self):
    """The native engine playing the game (None on a compiled tree)."""
    return getattr(self, "_engine", None)

  @property
  def representation(self):
    return "tree" if self.engine is None else "engine"

  @property
  def precision(self):
    """The cells' precision: "float64" or "float32" (hashed tables)."""
    return getattr(self, "_precision", "float64")

  def memory(self):
    """What the tables hold: a dict with `infosets` stored, `cells`
    (infoset-actions), `bytes` in use (hashed tables: index and rows;
    `bytes_per_infoset` = bytes / infosets), `max_memory`, `frozen` (the
    tables stopped growing at max_memory), `dropped` (visits to infosets
    not stored since), `precision`, and `collisions` (lookups that met a
    row of their key with another width: a hash collision, detected)."""
    if self.engine is None:
      nbytes = sum(getattr(self, n).nbytes for n in self._table_names)
      return dict(infosets=self._tree.num_infosets,
                  cells=int(self._tree.infoset_num_actions.sum()),
                  bytes=nbytes + self._tree.nbytes(), max_memory=None,
                  frozen=False, dropped=0, precision="float64",
                  collisions=0)
    t, h = self._tables, getattr(self, "_history", None)
    report = dict(infosets=t.num_rows, cells=t.num_cells, bytes=t.nbytes(),
                  max_memory=t.max_memory, frozen=t.frozen,
                  dropped=t.dropped, precision=t.precision,
                  collisions=t.collisions)
    if h is not None:
      report.update(histories=h.num_rows, bytes=t.nbytes() + h.nbytes(),
                    max_memory=t.max_memory + h.max_memory,
                    frozen=t.frozen or h.frozen, dropped=t.dropped + h.dropped,
                    collisions=t.collisions + h.collisions)
    report["bytes_per_infoset"] = report["bytes"] / max(t.num_rows, 1)
    return report

  def _engine_margin(self, table):
    """Rows and arena words a kernel call needs free
    (kernels/outcome.py): each worker's episodes in flight, and
    with Hogwild a fresh block of rows per worker."""
    e = self._engine
    paths = (2 * max(self._in_flight // 2, 1) if self._threads > 1
             else self._in_flight)
    rows = self._threads * paths * max(e.max_depth, 1)
    widest = table.row_words(max(e.max_moves, 1))
    block = outcome_kernel.BLOCK_ROWS * widest if self._threads > 1 else 0
    uncounted = hashed.BLOCK_FLUSH if self._threads > 1 else 0
    return (rows + self._threads * uncounted,
            rows * widest + self._threads * block)

  def _infosets_stored(self):
    return None if self.engine is None else self._tables.num_rows

  def _chunk_unit(self):
    """Iterations whose episodes form whole groups in flight (K / 2 or K)."""
    k = getattr(self, "_in_flight", 1) if self.engine is not None else 1
    return (k // math.gcd(k, 2)) if k > 1 else super()._chunk_unit()

  def _run_engine(self, num_iterations):
    """`num_iterations` iterations on the engine, in kernel calls of
    CHUNK_EPISODES episodes, growing the tables between calls."""
    e, t = self._engine, self._tables
    first = self._num_iterations + 1
    start_iterations = self._num_iterations
    weighting = outcome_kernel.Weights(*self._weighting_args(
        self._num_iterations + num_iterations))
    total = 2 * num_iterations
    done = 0
    h = self._history
    for w in range(self._threads):
      self._blocks[w, 2] = (outcome_kernel.BLOCK_ROWS
                            * t.row_words(max(e.max_moves, 1)))
    while done < total:
      for table in (t, h):
        if table is not None and not table.frozen and not table.has_room(
            *self._engine_margin(table)):
          table.grow(*self._engine_margin(table))
      end = min(total, done + CHUNK_EPISODES * self._threads)
      k = self._in_flight
      if k > 1 and end < total:  # End at a whole group in flight.
        end -= (2 * start_iterations + end) % k
        end = end if end > done else min(total, done + k)
      # None without a keyed baseline: the kernel compiles no lookup.
      keyed = None if h is None else h.args()
      t.meta[outcome_kernel.STOP] = 0
      eng = self._engine_args(not t.frozen, h is not None and not h.frozen)
      scratch = self._engine_scratch[1]
      if self._threads > 1 and self._hogwild:
        finished = np.zeros(self._threads, dtype=np.int64)
        # The workers are a prange over self._threads: numba's pool must
        # run that many whatever the caller set (the experiment binaries
        # set one thread).
        with base.numba_threads(self._threads):
          touched = call_literal(
              outcome_kernel.hogwild_episodes, e.code, eng, keyed,
              self._kernel_codes(), weighting, e.utility_sum,
              first + done // 2, end - done, self._rng_words, self._threads,
              scratch, self._blocks, finished)
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
            outcome_kernel.engine_episodes, e.code, eng, keyed,
            self._kernel_codes(), weighting, e.utility_sum, first, done, end,
            self._rng_words, np.uint64(0), 0, 1, scratch)
      self._nodes_touched += int(touched)
      done = int(reached)
      self._num_iterations = start_iterations + done // 2
    self._warn_if_stalled()

  def _engine_args(self, allow_insert, allow_keyed, start=None,
                   start_key=None):
    """The engine and its infoset rows (kernels/outcome.py `EngineArgs`),
    episodes starting from `start` (an engine state; None: the initial
    state) with the history key `start_key`."""
    e = self._engine
    (state, _, path_probs, path_sigma, path_key, path_brow, lanes,
     lane_keys, streams) = self._engine_scratch
    if start_key is None:
      start_key = np.array(outcome_kernel.HISTORY_SEED, dtype=np.uint64)
    return outcome_kernel.EngineArgs(
        e.params, self._tables.args(), self._fmap, allow_insert, allow_keyed,
        self._in_flight, state, path_probs, path_sigma, path_key, path_brow,
        self._blocks[0, :0], self._blocks[0, :1],
        np.zeros(0, dtype=np.int64) if start is None else start, start_key,
        lanes, lane_keys, streams, *self._probe_scratch)

  def _engine_conditional_variance(self, continuations, seed, trajectories):
    """`conditional_variance` on the engine (kernels/outcome.py
    `engine_conditional`): the tables frozen, `trajectories` sampled
    episodes, `continuations` from every decision of their update player."""
    e, t = self._engine, self._tables
    keyed = None if self._history is None else self._history.args()
    depth = max(e.max_depth, 1)
    start = np.zeros((depth + 1, e.state_size), dtype=np.int64)
    moves = np.zeros(depth + 1, dtype=np.int64)
    out = np.zeros(5)
    # The frozen lookups count the infosets they miss: put the tables'
    # statistics back as they were.
    meta = [table.meta.copy() for table in (t, self._history) if table]
    try:
      call_literal(
          outcome_kernel.engine_conditional, e.code,
          self._engine_args(False, False), keyed, self._kernel_codes(),
          e.utility_sum, self._num_iterations + 1, trajectories,
          continuations, rng_lib.pcg64_state(np.random.default_rng(seed)),
          self._engine_scratch[1], start, moves, out)
    finally:
      for table, saved in zip((x for x in (t, self._history) if x), meta):
        table.meta[:] = saved
    histories = max(out[0], 1.0)
    return EngineConditionalVariance(
        float(out[1] / histories), float(out[2] / histories),
        float(out[3] / histories), int(out[0]), int(continuations),
        int(trajectories), float(out[4] / histories))

  def _warn_if_stalled(self):
    """Warns once when float32 cells stop meaning what they should: a
    non-finite value was stored, or rounding lost more than STALL_WARNING
    of the magnitude of the additions made to the cells (cells that
    stopped moving)."""
    t = self._tables
    if self._stall_warned or t.precision != "float32":
      return
    overflow, lost = t.overflowed, t.lost_fraction
    if overflow or lost > STALL_WARNING:
      self._stall_warned = True
      what = (f"{overflow} cell updates overflowed float32" if overflow else
              f"rounding lost {lost:.1%} of what was added to the cells "
              "(additions below float32's resolution leave a cell "
              "unchanged)")
      warnings.warn(
          f"precision='float32': {what} after {self._num_iterations} "
          "iterations; the tables no longer converge as float64 would. Run "
          "with precision='float64'.", RuntimeWarning, stacklevel=3)

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
      saved.update({prefix + n: a for n, a in t.state().items()})
    return saved

  def _engine_table_sets(self):
    """(checkpoint prefix, HashedTable) of every table set."""
    sets = [("engine_", self._tables)]
    if getattr(self, "_history", None) is not None:
      sets.append(("engine_history_", self._history))
    return sets

  def _engine_tables_loaded(self, saved):
    for prefix, t in self._engine_table_sets():
      missing = [n for n in SAVED if prefix + n not in saved]
      if missing:
        raise ValueError(f"an engine checkpoint lacks the tables "
                         f"{[prefix + n for n in missing]} (written by "
                         "another version of mccfrb?).")
      t.restore(**{n: saved[prefix + n] for n in SAVED})


class EngineConditionalVariance(NamedTuple):
  """The conditional variance of the estimates on an engine (Schmid et al.
  2019, Fig. 5), averaged over the update player's histories that sampled
  trajectories visit (each with its visit probability q(h)).

  Attributes:
    action_variance: mean over h of mean_a Var[u(h, a) | h].
    value_variance: mean over h of Var[u(h) | h].
    regret_variance: mean over h of mean_a Var[r(h, a) | h], the sampled
      counterfactual regret r(h, a) = pi_{-i}(h) / q(h) (u(h, a) - u(h))
      (Eq. 11), what the regret tables add.
    histories: the histories measured.
    continuations: M, episodes sampled from each.
    trajectories: the sampled episodes whose histories were measured.
    mean_weight: the mean of pi_{-i}(h) / q(h) over them.
  """
  action_variance: float
  value_variance: float
  regret_variance: float
  histories: int
  continuations: int
  trajectories: int
  mean_weight: float


def engine_policy_nash_conv(policy, progress=True):
  """NashConv of an `EnginePolicy` by the streaming walk (mccfrb/solvers/stream.py):
  the average strategy with its optimistic catch-up, or the current
  strategy (read as an average with no catch-up)."""
  from mccfrb.solvers import stream  # pylint: disable=import-outside-toplevel
  return stream.engine_nash_conv(policy.engine, policy.tables, policy.flush,
                                 policy.iterations, progress=progress,
                                 current=policy.current)


def flush_code(averaging_code, regret_code):
  """The flush code of an average strategy (see `average_row`)."""
  if averaging_code != 1:
    return FLUSH_NONE
  return FLUSH_OPTIMISTIC_PLUS if regret_code else FLUSH_OPTIMISTIC


def check_precision(precision):
  """The precision of a solver's hashed tables (None: DEFAULT_PRECISION).

  Raises:
    ValueError: not one of tables.PRECISIONS.
  """
  if precision is None:
    return DEFAULT_PRECISION
  tables_lib.check_precision(precision)
  return precision


def check_in_flight(in_flight):
  """Episodes in flight per worker (None: DEFAULT_IN_FLIGHT).

  Raises:
    ValueError: not an int in [1, MAX_IN_FLIGHT].
  """
  if in_flight is None:
    return DEFAULT_IN_FLIGHT
  return counts.check_count("in_flight", in_flight, 1, MAX_IN_FLIGHT + 1,
                            what=f"an int in [1, {MAX_IN_FLIGHT}]")


_NO_HISTORY = {}


def _no_history(precision):
  """A tiny stand-in history table of `precision` (kernels take one)."""
  if precision not in _NO_HISTORY:
    _NO_HISTORY[precision] = tables_lib.HashedTable(
        1, ("value",), precision=precision, max_memory=1 << 20, slots=2)
  return _NO_HISTORY[precision]


def refuse_hashed_options(kind, precision, in_flight):
  """Raises ValueError for options of hashed tables given to another
  representation (a compiled tree keeps float64 dense tables and runs one
  episode at a time)."""
  if precision not in (None, "float64"):
    check_precision(precision)
    representation_lib.refuse(
        f"precision={precision!r}", ("engine",), kind,
        "Its tables are float64.")
  if in_flight not in (None, 1):
    representation_lib.refuse(f"in_flight={in_flight!r}", ("engine",), kind)
