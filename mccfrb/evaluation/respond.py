"""The exploitability bound on a native engine: responders in numba.

`approximate_exploitability` (mccfrb/evaluation/bound.py) comes here for
the policy of a sampling solver on an engine (an `EnginePolicy`): each
responder is trained by kernels/respond.py's walks, which play the
engine's own game (games/engines/protocol.py) and read the policy from
the solver's own hashed table by the engine's infoset keys, so no
OpenSpiel state is made and no Python runs per move; then it is scored
on fresh episodes by the same walks. The responder's rows live in a
`HashedTable` of their own (a visit count and a return total per action),
within `max_memory` (half each); at the cap the search stops adding
information states, the training goes on, and one warning says so.
"""

import functools
import threading
import warnings

import numpy as np

from mccfrb.games.engines.common import call_literal
from mccfrb.kernels import respond
from mccfrb.kernels.rng import pcg64_state
from mccfrb.solvers import engine as engine_solvers
from mccfrb import tables as tables_lib

# Scoring episodes per player by default.
EPISODES = 1_000_000
# The search's constants (kernels/respond.py): visits that put an
# information state inside the searched tree, and PUCT's C (times the
# standard deviation of the walks' returns).
EXPAND = 1.0
EXPLORE = 1.5
# Responder decisions with at most this many moves explore every move.
EXPLORE_MOVES = 2
# Visits from which the trained responder plays a row's best move (else
# the policy's own play).
TRUST = 1.0
# The uniform share of PUCT's prior (the rest: the policy's own strategy).
MIX = 0.25
# Walks in flight by engine (else one): their lanes take turns, so that
# their lookups' memory misses overlap (kernels/respond.py `train`); on
# phantom_ttt, whose rows near the root stay in cache, the turns cost more
# than they save (BUILD_NOTES.md, "Evaluation and bounds").
IN_FLIGHT = {"goofspiel": 8}
# Rows the table is grown by beyond what it holds (a walk that finds no
# room for a row goes on without it, and the table grows before the next).
ROOM_ROWS = 1 << 12
# A time budget that trains fewer walks than this per player is refused:
# the responder would be the policy's own play with a few changes.
MIN_WALKS = 1000
# Scoring episodes per kernel call (a progress bar's step).
SCORE_CHUNK = 1 << 16


class PolicyRows:
  """What the kernels read of an `EnginePolicy`: its engine, the table's
  arrays, pmap (kernels/respond.py) and the discounts' prefix sums."""

  def __init__(self, game, policy):
    if not isinstance(policy, engine_solvers.EnginePolicy):
      raise ValueError(
          "representation='engine' bounds the policy of an mccfrb sampling "
          "solver on an engine (its average_policy() or current_policy(), "
          f"an EnginePolicy); got {type(policy).__name__}. Use "
          "representation='states' for other policies.")
    engine = policy.engine
    if str(engine.game) != str(game):
      raise ValueError(
          f"the policy's tables belong to another game ({engine.game}), "
          f"not {game}: bound it on the game its solver played.")
    self.engine = engine
    self.tables = tables = policy.tables
    pmap = np.full(respond.PMAP_SIZE, -1, dtype=np.int64)
    for slot, name in ((respond.P_REGRET, "regret"), (respond.P_AVG, "avg"),
                       (respond.P_STRATEGY, "strategy")):
      if name in tables.fields:
        pmap[slot] = tables.field_number(name)
    self.log_pos = self.log_neg = np.zeros(1)
    if policy.current:
      pmap[respond.P_FLUSH] = respond.FLUSH_CURRENT
      if policy.discount is not None:
        self.log_pos, self.log_neg, _ = policy.discount
        pmap[respond.P_THROUGH] = tables.header_number("through")
    else:
      pmap[respond.P_FLUSH] = policy.flush
    self.pmap = pmap
    self.big_t = float(policy.iterations)


def route(game, policy, max_memory):
  """The engine route of `approximate_exploitability`: budget.py's
  `trainer(player, generator)` and `scorer(player, table, generator,
  episodes)` for the policy of a sampling solver on an engine; a policy
  or a `max_memory` it cannot serve is refused here, before any work."""
  rows = PolicyRows(game, policy)
  engine = rows.engine
  total = tables_lib.check_max_memory(max_memory)
  if total < 2 << 20:
    raise ValueError(f"max_memory must be at least 2**21 bytes (2 MiB: 1 MiB "
                     f"for each responder's table), got {max_memory!r}.")
  opts = np.zeros(respond.OPTS_SIZE)
  opts[respond.O_EXPAND] = EXPAND
  opts[respond.O_EXPLORE] = EXPLORE
  opts[respond.O_SCALE] = game.max_utility() - game.min_utility()
  opts[respond.O_UTILITY_SUM] = engine.utility_sum
  opts[respond.O_BIG_T] = rows.big_t
  opts[respond.O_EXPLORE_MOVES] = EXPLORE_MOVES
  opts[respond.O_TRUST] = TRUST
  opts[respond.O_MIX] = MIX
  warned = _Once()  # Shared: one warning for both responders.

  def trainer(player, generator):
    # A copy of opts each: the kernel keeps its walks' statistics in it.
    return Trainer(rows, player, tables_lib.HashedTable(
        engine.max_moves, respond.RESPONDER_FIELDS, max_memory=total // 2),
                   opts.copy(), generator, warned)

  return trainer, functools.partial(Scorer, rows, opts)


def check_walks(trained, seconds):
  """Refuses the bound of a `seconds` budget that trained fewer than
  MIN_WALKS walks for a player (`trained`: budget.train_all's)."""
  for p, (_, walks, took) in enumerate(trained):
    if walks < MIN_WALKS:
      raise ValueError(
          f"seconds={seconds:g} trained {walks:,} "
          f"walk{'' if walks == 1 else 's'} for player {p} "
          f"in {took:.3f} s; a bound needs at least {MIN_WALKS:,} a "
          f"player: pass seconds >= "
          f"{MIN_WALKS * seconds / max(walks, 1):.2g}.")


def _kernel_args(rows, table, opts):
  return (rows.tables.args(), rows.pmap, rows.log_pos, rows.log_neg,
          table.args(), opts)


def _scratch(engine):
  """The kernels' two float64[max moves] work rows (a thread's own)."""
  moves = max(engine.max_moves, 1)
  return np.zeros(moves), np.zeros(moves)


def _lanes(engine):
  """The walks in flight (kernels/respond.py `train`): lanes, lane_words,
  rets, cursor and the lanes' stacks, IN_FLIGHT's number of each."""
  k, depth = IN_FLIGHT.get(engine.name, 1), engine.max_depth + 1
  moves = max(engine.max_moves, 1)
  frames = respond.Stacks(
      np.zeros((k, depth + 1, engine.state_size), dtype=np.int64),
      *(np.zeros((k, depth), dtype=np.int64) for _ in range(4)),
      np.zeros((k, depth, 2)), np.zeros((k, depth, moves)),
      np.zeros((k, depth, moves)), np.zeros((k, depth), dtype=np.uint64))
  return (np.zeros((k, respond.LANE_FIELDS), dtype=np.int64),
          np.zeros((k, respond.LANE_WORDS), dtype=np.uint64), np.zeros(k),
          np.zeros(2, dtype=np.int64), frames)


class _Once:
  """`first()` is True at its first call only, from whichever thread."""

  def __init__(self):
    self._lock = threading.Lock()
    self._done = False

  def first(self):
    with self._lock:
      done, self._done = self._done, True
    return not done


class Trainer:
  """`player`'s responder on an engine (budget.py's trainer): `step(k)`
  starts k more walks of kernels/respond.py `train`, `finish()` ends the
  walks in flight and returns the responder's table."""

  def __init__(self, rows, player, table, opts, generator, warned):
    self._rows, self.player, self._table = rows, player, table
    self._opts, self._warned = opts, warned
    self._key = np.uint64(generator.integers(1 << 63))
    self._lanes = _lanes(rows.engine)
    self._scratch = _scratch(rows.engine)
    self._margin = ROOM_ROWS * table.row_words(max(rows.engine.max_moves, 1))
    self._run(0)  # Compile (not timed).

  def _run(self, count, drain=False):
    e, table, cursor = self._rows.engine, self._table, self._lanes[3]
    while True:
      pol, pmap, log_pos, log_neg, resp, _ = _kernel_args(self._rows, table,
                                                          self._opts)
      status = call_literal(
          respond.train, e.code, e.params, self.player, pol, pmap, log_pos,
          log_neg, resp, self._opts, not table.frozen, count, drain,
          self._key, *self._lanes, *self._scratch)
      if status == respond.RAN:
        return
      if not table.grow(ROOM_ROWS, self._margin) and self._warned.first():
        warnings.warn(
            f"approximate_exploitability: a responder's table reached "
            f"max_memory={table.max_memory:,} bytes (half of max_memory) "
            f"after {int(cursor[1]):,} walks of player {self.player}; "
            "training goes on within the information states searched so "
            "far.", RuntimeWarning, stacklevel=2)

  def step(self, k):
    self._run(int(self._lanes[3][1]) + k)

  def finish(self):
    self._run(int(self._lanes[3][1]), drain=True)  # The walks in flight end.
    return self._table


class Scorer:
  """`player`'s returns with its trained responder `table` on fresh
  episodes (budget.py's scorer): kernels/respond.py `score`."""

  chunk = SCORE_CHUNK

  def __init__(self, rows, opts, player, table, generator, episodes):
    self._rows, self.player = rows, player
    self._args = _kernel_args(rows, table, opts)
    self._rng = pcg64_state(generator)
    self._state = np.zeros(rows.engine.state_size, dtype=np.int64)
    self._scratch = _scratch(rows.engine)
    self.returns = np.empty(episodes)

  def play(self, lo, hi):
    e = self._rows.engine
    call_literal(respond.score, e.code, e.params, self.player, *self._args,
                 self._rng, self._state, *self._scratch, self.returns[lo:hi])


def responder_policy(policy, table, player, trust=None):
  """{information state string: [(action, probability)]}: the policy with
  `player`'s trained responder in its seat (the best move of every row
  with at least `trust` visits, TRUST by default; the policy's own play
  elsewhere), on a small game (a walk of its pyspiel tree in lockstep
  with the engine): a profile `mccfrb.expected_value` takes, to compute
  the responder's exact value.

  Args:
    policy: the average `EnginePolicy` the responder was trained against.
    table: the responder's `HashedTable` (ExploitabilityBound.responders).
    player: the responder's seat.
    trust: visits from which a row's best move is played.
  """
  from mccfrb.games.engines import protocol  # pylint: disable=import-outside-toplevel
  from mccfrb.solvers import stream  # pylint: disable=import-outside-toplevel
  engine = policy.engine
  trust = TRUST if trust is None else trust
  out = stream.policy_dict(engine, policy.tables, policy.flush,
                           policy.iterations)
  for state, es, moves in stream._lockstep(engine):  # pylint: disable=protected-access
    if state.current_player() != player or len(moves) < 2:
      continue
    h1, h2 = protocol.infoset_hash(engine.code, engine.params, es, player)
    row = table.find(h1, h2)
    if row < 0 or table.width(row) != len(moves):
      continue
    counts = table.field(row, "count")
    if counts.sum() < trust:
      continue
    base = (row + int(table.layout[0])) * table.per_word
    best = int(respond.greedy_move(table.cells, base, len(moves)))
    out[state.information_state_string(player)] = [
        (a, 1.0 if j == best else 0.0) for j, a in enumerate(moves)]
  return out
