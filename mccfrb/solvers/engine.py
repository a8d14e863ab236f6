"""Native engines as a solver's representation: policies, memory, save/load.

`EngineBackend` is the backend of a solver whose representation is
"engine" (solvers/representation.py): the game is played by an engine
(mccfrb/games/engines), infoset tables grow as episodes visit them
(mccfrb/tables/hashed.py), and the solver runs its kernel on them
(kernels/outcome.py, kernels/external.py, kernels/public.py's `episodes`
with an engine, kernels/stream.py).

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
from mccfrb.kernels import rows as row_kernels
from mccfrb.solvers import base
from mccfrb.solvers import representation as representation_lib
from mccfrb import tables as tables_lib

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


class EngineBackend:
  """A native engine as a solver's representation (see the module
  docstring): the engine, the solver's hashed infoset tables and its keyed
  baselines' table, their precision, and what a checkpoint holds of them.

  The solver builds the tables for its algorithm (their fields) and runs
  its own kernel on them; the backend reads policies from them, reports
  their memory, saves and restores them.

  Attributes:
    engine: the `Engine`; tables: the infoset `HashedTable`; history: the
      keyed baselines' `HashedTable`, or None; precision; in_flight:
      episodes in flight per worker; extra: {checkpoint name: array} of the
      solver's own resumable state (external sampling's traversals), saved
      and restored with the tables.
  """

  kind = "engine"
  grown = None

  def __init__(self, solver, engine, tables, history=None,
               precision=DEFAULT_PRECISION, in_flight=1, flush=FLUSH_NONE,
               weights=None):
    self._solver = solver
    self.engine, self.tables, self.history = engine, tables, history
    self.precision, self.in_flight = precision, in_flight
    self.extra = {}
    self._flush, self._weights = flush, weights
    self._stall_warned = False
    self._frozen_said = set()  # Tables that said they froze.

  @property
  def max_memory(self):
    """max_memory of the tables together (what the solver was given)."""
    return self.tables.max_memory + (
        0 if self.history is None else self.history.max_memory)

  def options(self):
    """What a checkpoint records of the representation."""
    return dict(representation="engine", max_memory=self.max_memory,
                precision=self.precision)

  def history_args(self):
    """The kernels' `history` tuple: the keyed baselines' table, or a
    stand-in of the same precision."""
    h = self.history
    if h is None:
      h = _no_history(self.precision)
    return h.args()

  def memory(self):
    """What the tables hold: a dict with `infosets` stored, `cells`
    (infoset-actions), `bytes` in use (hashed tables: index and rows;
    `bytes_per_infoset` = bytes / infosets), `max_memory`, `frozen` (the
    tables stopped growing at max_memory), `dropped` (visits to infosets
    not stored since), `precision`, and `collisions` (lookups that met a
    row of their key with another width: a hash collision, detected)."""
    t, h = self.tables, self.history
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

  def infosets_stored(self):
    """Infosets stored (shown by progress bars)."""
    return self.tables.num_rows

  def chunk_unit(self):
    """Iterations whose episodes form whole groups in flight (K / 2 or K)."""
    k = self.in_flight
    if k > 1:
      return k // math.gcd(k, 2)
    return self._solver._batch or 1  # pylint: disable=protected-access

  def make_room(self, table, margin_rows, margin_words):
    """Room in `table` (the infoset rows or the keyed table) for
    `margin_rows` more rows of `margin_words` words in all, growing it.
    Where that would pass its max_memory the table freezes (module
    docstring of tables/hashed_table.py) and says so once."""
    if table.frozen or table.has_room(margin_rows, margin_words):
      return
    infosets = table is self.tables
    if not table.grow(margin_rows, margin_words) and (
        infosets not in self._frozen_said):
      self._frozen_said.add(infosets)
      if infosets:
        what = ("infoset table", "infosets without a row play uniform and "
                "are not updated")
      else:
        what = ("baseline table", "keys without a row get the baseline "
                "b = 0 (the plain estimate)")
      warnings.warn(
          f"mccfrb: the engine solver's {what[0]} reached max_memory="
          f"{table.max_memory:,} bytes at {table.num_rows:,} rows after "
          f"{self._solver.num_iterations:,} iterations; it stops growing: "
          f"{what[1]} (counted in memory()['dropped']). Pass a larger "
          "max_memory to store more.", RuntimeWarning,
          stacklevel=6)

  def warn_if_stalled(self):
    """Warns once when float32 cells stop meaning what they should: a
    non-finite value was stored, or rounding lost more than STALL_WARNING
    of the magnitude of the additions made to the cells (cells that
    stopped moving)."""
    t = self.tables
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
          f"precision='float32': {what} after "
          f"{self._solver.num_iterations} iterations; the tables no longer "
          "converge as float64 would. Run with precision='float64'.",
          RuntimeWarning, stacklevel=4)

  def require_tree(self, what):
    s = self._solver
    raise ValueError(
        f"{what} needs the compiled tree; this solver plays "
        f"{s.game} on its engine. Use representation='tree' for a "
        "game that fits, or average_policy() / current_policy() here.")

  def policy(self, current):
    """An `EnginePolicy` of the average (with the solver's catch-up) or of
    sigma by regret matching of the regrets, with the discounts a row has
    pending applied first (discounted weighting)."""
    iterations = self._solver.num_iterations
    discount = None
    if current and self._weights is not None and (
        self._weights.discounted and iterations > 0):
      w = self._weights.args(iterations)
      discount = (w[3], w[4], iterations)
    return EnginePolicy(self._solver.game, self.engine, self.tables,
                        current=current,
                        flush=FLUSH_NONE if current else self._flush,
                        iterations=iterations, discount=discount)

  def table_sets(self):
    """(checkpoint prefix, HashedTable) of every table set."""
    sets = [("engine_", self.tables)]
    if self.history is not None:
      sets.append(("engine_history_", self.history))
    return sets

  def tables_to_save(self):
    saved = {}
    for prefix, t in self.table_sets():
      saved.update({prefix + n: a for n, a in t.state().items()})
    saved.update(self.extra)
    return saved

  def restore_tables(self, tables, path):
    """The hashed tables as saved, then `extra`, each checked."""
    saved = {k: v for k, v in tables.items() if k.startswith("engine_")}
    for prefix, t in self.table_sets():
      missing = [n for n in SAVED if prefix + n not in saved]
      if missing:
        raise ValueError(f"an engine checkpoint lacks the tables "
                         f"{[prefix + n for n in missing]} (written by "
                         "another version of mccfrb?).")
      t.restore(**{n: saved[prefix + n] for n in SAVED})
    for name, target in self.extra.items():
      base.restore_table(tables, name, target, path,
                         self._solver.num_iterations, signed=True)


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


def engine_policy_nash_conv(policy, progress=True, threads=1):
  """NashConv of an `EnginePolicy` by the streaming walk (mccfrb/solvers/stream.py):
  the average strategy with its optimistic catch-up, or the current
  strategy (read as an average with no catch-up); `threads` Python threads
  walk public subtrees at once (the value does not depend on it)."""
  from mccfrb.solvers import stream  # pylint: disable=import-outside-toplevel
  return stream.engine_nash_conv(policy.engine, policy.tables, policy.flush,
                                 policy.iterations, progress=progress,
                                 threads=threads, current=policy.current)


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


def engine_tables(engine, baseline, max_memory, fields, header=(),
                  keyed_fields=("value",), precision=None, init=None):
  """A sampling solver's hashed tables on `engine`: the infoset rows and,
  for a baseline keyed by history, situation or public state, the keyed
  table (None for the others; saved as "engine_history_*").

  The keyed table takes its key's share of max_memory
  (`baselines.keyed_share`: half for histories, a quarter for situations
  and public states), the infoset rows the rest.

  Raises:
    ValueError: either table would get less than tables.MIN_MEMORY.
  """
  precision = check_precision(precision)
  total = tables_lib.check_max_memory(max_memory)
  keyed_bytes = baselines_lib.keyed_share(baseline, total)
  if keyed_bytes and min(keyed_bytes,
                         total - keyed_bytes) < tables_lib.MIN_MEMORY:
    raise ValueError(
        f"max_memory={total} is too small for baseline={baseline!r}, whose "
        f"second table takes {keyed_bytes / total:.0%} of it: each table "
        f"needs at least {tables_lib.MIN_MEMORY} bytes.")
  table = tables_lib.HashedTable(
      engine.max_moves, fields, header, precision=precision,
      max_memory=total - keyed_bytes, init=init)
  keyed = None
  if keyed_bytes:
    keyed = tables_lib.HashedTable(engine.max_moves, keyed_fields,
                                   precision=precision,
                                   max_memory=keyed_bytes)
  return table, keyed


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
