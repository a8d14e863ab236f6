"""Exploitability and exact CFR on native engines, by streaming walks.

A game with a native engine (mccfrb/games/engines) but too large to compile is
walked public state by public state (kernels/stream.py): memory is the
histories of the public states along the current path, never the game.
Infoset tables are hashed rows keyed by the engine's 128-bit infoset keys
(`HashedTable`, tables/hashed.py), as the sampling solvers on engines keep
them.

  engine_best_response_values(engine, tables, flush_code, T)
      [BR_0(sigma_1), BR_1(sigma_0)] of the tables' average policy.
  engine_nash_conv / engine_exploitability
      NashConv = BR_0 + BR_1 - (u_0 + u_1); exploitability = NashConv / 2
      (OpenSpiel's definitions).
  StreamingCFR(engine, variant)
      the exact CFR family (kernels/cfr.py's variants and update order)
      with the tables in a `HashedTable`.
  tables_from_policy(engine, policy_fn), policy_dict(engine, tables),
  infoset_keys(engine)
      conversions on small games (a walk of the pyspiel tree in lockstep
      with the engine).

A walk first estimates the game's size (mccfrb/games/walk_size.py)
and refuses, in a fraction of a second, a game it cannot finish.
Walks that take more than a few seconds show a tqdm progress bar (the
kernel pauses every BUDGET children and resumes where it stopped).
`threads` > 1 walks the groups of the first public state on a path that
has that many child public states on Python threads (the kernels release
the GIL); results do not depend on it.
"""

import concurrent.futures
import queue
import threading
import time

import numpy as np

from mccfrb import counts
from mccfrb import games
from mccfrb.games import walk_size
from mccfrb.games.engines import Engine
from mccfrb.games.engines import engine_for
from mccfrb.games.engines import protocol
from mccfrb.games.engines.common import call_literal
from mccfrb.kernels import stream as kernels
from mccfrb.solvers import base
from mccfrb.solvers import rules as rules_lib
from mccfrb.solvers import running
from mccfrb.tables import HashedTable

# Optimistic-averaging catch-up codes of `engine_best_response_values`.
FLUSH_NONE = 0
FLUSH_UNIFORM = 1  # (T - L) pi_own sigma^T (regret matching).
FLUSH_LINEAR = 2  # (T (T + 1) - L (L + 1)) / 2 pi_own sigma^T (RM+).
FLUSH_CODES = (FLUSH_NONE, FLUSH_UNIFORM, FLUSH_LINEAR)
# The exact CFR family's rows: fields and header words (kernels/stream.py).
CFR_FIELDS = ("regret", "avg", "strategy", "pending")
CFR_SPLIT_FIELDS = CFR_FIELDS + ("stash",)
CFR_HEADER = ("player",)

# Children expanded per kernel call (a progress bar's step, ~0.1-0.5 s).
BUDGET = 1 << 23
# A walk shows a progress bar once it has run this many seconds.
PROGRESS_AFTER = 3.0


def as_engine(engine_or_game):
  """The `Engine` of an `Engine`, a game string or a `pyspiel.Game`.

  Raises:
    ValueError: the game has no native engine.
  """
  if isinstance(engine_or_game, Engine):
    return engine_or_game
  game = games.load_game(engine_or_game)
  engine = engine_for(game)
  if engine is None:
    raise ValueError(f"{game} has no native engine (mccfrb/games/engines); "
                     "compile its tree and use the tree solvers instead.")
  return engine


class _Walk:
  """The state and arenas of a kernel walk (kernels/stream.py), kept from
  one walk to the next so that arenas grow only once."""

  def __init__(self, engine, mode, level=kernels.NO_LEVEL):
    self.engine = engine
    self.mode = mode
    self.level = level
    self.kr, self.kv, self.ki = kernels.widths(mode, level)
    self.ctl = np.zeros(kernels.CTL_SIZE, dtype=np.int64)
    self.frames = np.zeros((engine.max_depth + 3, kernels.FRAME_SIZE),
                           dtype=np.int64)
    self.ints = np.zeros(1 << 12, dtype=np.int64)
    self.floats = np.zeros(1 << 12)
    self.states = np.zeros((1 << 8, engine.state_size), dtype=np.int64)
    self.ukeys = np.zeros((1 << 8, 2), dtype=np.uint64)
    self._new_table(1 << 9)
    self.pub = np.zeros((1 << 10, 2), dtype=np.uint64)

  def _new_table(self, size):
    self.tkeys = np.zeros((size, 2), dtype=np.uint64)
    self.tstamp = np.zeros(size, dtype=np.int64)
    self.tval = np.zeros(size, dtype=np.int64)

  def args(self):
    return kernels.Arenas(self.ctl, self.frames, self.ints, self.floats,
                          self.states, self.ukeys, self.tkeys, self.tstamp,
                          self.tval, self.pub)

  def nbytes(self):
    return sum(a.nbytes for a in self.args())

  def grow(self, status):
    """Grows what the kernel found short (status SHORT_ARENA, SHORT_PUBLIC,
    SHORT_FRAMES), keeping the content."""
    ctl = self.ctl
    if status == kernels.SHORT_PUBLIC:
      pub = np.zeros((2 * len(self.pub), 2), dtype=np.uint64)
      kernels.rehash_public(self.pub, pub)
      self.pub = pub
    elif status == kernels.SHORT_FRAMES:
      self.frames = _grown(self.frames, 2 * len(self.frames))
    else:
      self.ints = _grown(self.ints, ctl[kernels.C_NEED_INTS])
      self.floats = _grown(self.floats, ctl[kernels.C_NEED_FLOATS])
      self.states = _grown(self.states, ctl[kernels.C_NEED_STATES])
      need = int(ctl[kernels.C_NEED_KEYS])
      self.ukeys = _grown(self.ukeys, need)
      size = 2
      while size < 2 * need:
        size *= 2
      if size > len(self.tkeys):
        self._new_table(size)  # Its content lives within one frame's entry.

  def start(self, utility_sum, p=0):
    """Resets the walk; False if the root is terminal."""
    e = self.engine
    # The root's pseudo-frame: 3 + KI ints, KR + KV floats, one state.
    self.ints = _grown(self.ints, 3 + self.ki)
    self.floats = _grown(self.floats, self.kr + self.kv)
    self.states = _grown(self.states, 1)
    self.frames = _grown(self.frames, 2)
    return call_literal(kernels.start_walk, e.code, e.params, self.mode,
                         self.level, float(utility_sum), p, self.args())

  def reset_public(self):
    """Empties the public set (a worker keeps it over the groups it walks
    in one walk) and the counters kept with it."""
    self.pub[:] = 0
    for field in (kernels.C_PUBLIC, kernels.C_DAG, kernels.C_WORK,
                  kernels.C_FRAMES, kernels.C_MISSING):
      self.ctl[field] = 0

  def merge_public(self, other):
    """Adds another walk's public keys to this one's; True if one was in
    both (a public state reached from two groups: they merge)."""
    need = int(self.ctl[kernels.C_PUBLIC] + other.ctl[kernels.C_PUBLIC])
    size = len(self.pub)
    while size < 2 * need + 2:
      size *= 2
    if size > len(self.pub):
      pub = np.zeros((size, 2), dtype=np.uint64)
      kernels.rehash_public(self.pub, pub)
      self.pub = pub
    dup = kernels.merge_public(other.pub, self.pub)
    self.ctl[kernels.C_PUBLIC] = need - dup
    return dup > 0

  def values(self):
    """The root's value columns once the walk is done."""
    return self.floats[self.kr:self.kr + self.kv].copy()

  def progress(self, split_done=None):
    """The fraction of the walk done, counting the children of the frames
    along the path (an estimate: subtrees differ in size); split_done: the
    fraction of the current frame's children that workers walked."""
    frames, ints = self.frames, self.ints
    depth = int(self.ctl[kernels.C_DEPTH])
    done, share = 0.0, 1.0
    for f in range(depth + 1):
      ng, g = int(frames[f, kernels.F_NG]), int(frames[f, kernels.F_G])
      g = min(max(g, 0), ng)  # Read while a worker runs: keep in range.
      if frames[f, kernels.F_PHASE] == 0 or ng == 0:
        break
      gs = ints[frames[f, kernels.F_GSTART]:frames[f, kernels.F_GSTART]
                + ng + 1]
      total = float(gs[ng]) if len(gs) == ng + 1 and gs[ng] > 0 else 0.0
      if total == 0.0:
        break
      if f == depth and split_done is not None:
        done += share * split_done
        break
      if f == depth or g == 0:
        done += share * gs[g] / total
        break
      done += share * gs[g - 1] / total
      share *= (gs[g] - gs[g - 1]) / total
    return min(max(done, 0.0), 1.0)


def _grown(array, need):
  """`array`, or a copy at least twice as long (at least `need` rows) with
  its content in front."""
  need = int(need)
  if need <= len(array):
    return array
  size = max(need, 2 * len(array))
  new = np.zeros((size,) + array.shape[1:], dtype=array.dtype)
  new[:len(array)] = array
  return new


def stream_map(tables):
  """smap (kernels/stream.py): where the walk finds each field and header
  word of `tables` (-1: absent)."""
  smap = np.full(kernels.SMAP_SIZE, -1, dtype=np.int64)
  for index, name in ((kernels.S_REGRET, "regret"), (kernels.S_AVG, "avg"),
                      (kernels.S_STRATEGY, "strategy"),
                      (kernels.S_PENDING, "pending"),
                      (kernels.S_STASH, "stash")):
    if name in tables.fields:
      smap[index] = tables.field_number(name)
  if "player" in tables.header_names:
    smap[kernels.S_PLAYER] = tables.header_number("player")
  return smap


def _table_args(tables, reserve=None):
  """The `tab` of kernels/stream.py's walk, an `InfosetRows` (reserve: the
  workers' shared reservation counters, int64[2])."""
  if reserve is None:
    reserve = np.zeros(2, dtype=np.int64)
  return kernels.InfosetRows(tables.args(), stream_map(tables), reserve)


def _dec_args(dec):
  """The `dec` of kernels/stream.py's walk: the decision rows' arrays."""
  return dec.args()


def decision_table(engine):
  """The level mode's decision rows (kernels/stream.py, DEC_HEADER)."""
  return HashedTable(engine.max_moves, ("cfv",), kernels.DEC_HEADER,
                     max_memory=None)


class _Gate:
  """Kernel calls of several threads share the infoset tables: a call runs
  between `enter` and `leave`; `grow` waits until no call runs, grows, and
  lets calls in again (a thread that finds another growing waits for it)."""

  def __init__(self):
    self._cond = threading.Condition()
    self._active = 0
    self._growing = False

  def enter(self):
    with self._cond:
      while self._growing:
        self._cond.wait()
      self._active += 1

  def leave(self):
    with self._cond:
      self._active -= 1
      self._cond.notify_all()

  def grow(self, grow_fn):
    with self._cond:
      if self._growing:
        while self._growing:
          self._cond.wait()
        return
      self._growing = True
      try:
        while self._active > 0:
          self._cond.wait()
        grow_fn()
      finally:
        self._growing = False
        self._cond.notify_all()


def _grow_tables(target, ctl):
  """Grows `target` (a HashedTable) for the rows and arena words a kernel
  asked for."""
  if not target.grow(int(ctl[kernels.C_NEED_ROWS]),
                     int(ctl[kernels.C_NEED_CELLS])):
    raise MemoryError(
        f"the infoset tables would pass max_memory={target.max_memory} "
        f"bytes ({target.num_rows} rows stored); pass a larger max_memory.")


class _Bar:
  """A tqdm bar (per mille of the walk) that appears once a walk has run
  PROGRESS_AFTER seconds."""

  def __init__(self, desc, enabled):
    self._desc = desc
    self._enabled = enabled and running.bars_allowed()
    self._begin = time.time()
    self._bar = None

  def update(self, fraction):
    if (self._bar is None and self._enabled
        and time.time() - self._begin > PROGRESS_AFTER):
      from tqdm.auto import tqdm  # pylint: disable=import-outside-toplevel
      self._bar = tqdm(total=1000, desc=self._desc, unit="‰", leave=False)
    if self._bar is not None:
      self._bar.n = int(1000 * fraction)
      self._bar.refresh()

  def close(self):
    if self._bar is not None:
      self._bar.close()


def _run(walk, tables, dec, p=0, flush=0, big_t=0.0, weight=0.0,
         own_weight=0.0, prune=True, insert=True, desc="walk", progress=True,
         workers=()):
  """One whole walk; grows what runs short; returns the root's values.

  With two or more `workers` (_Walk of the same mode), the first frame on
  a path with at least as many groups as workers hands its groups to them,
  on as many threads (the kernels release the GIL); the walks' public sets
  are merged at the end to flag merging public states (walk.ctl[C_DAG]).
  """
  e = walk.engine
  if not walk.start(e.utility_sum, p):
    return walk.values()
  threads = len(workers)
  split = threads if threads > 1 else 0
  reserve = np.zeros(2, dtype=np.int64)
  gate = _Gate()
  bar = _Bar(desc, progress)

  def call(w, split_at):
    gate.enter()
    try:
      return call_literal(
          kernels.walk, e.code, e.params, w.mode, p, w.level, flush,
          float(big_t), e.utility_sum, float(weight), float(own_weight),
          bool(prune), bool(insert), split_at, e.max_moves, BUDGET,
          w.args(), _table_args(tables, reserve), _dec_args(dec))
    finally:
      gate.leave()

  def handle(w, status):
    """Grows what a call found short."""
    if status == kernels.SHORT_TABLE:
      gate.grow(lambda: _grow_tables(tables, w.ctl))
    elif status == kernels.SHORT_DEC:
      gate.grow(lambda: _grow_tables(dec, w.ctl))
    else:
      w.grow(status)

  for w in workers:
    w.reset_public()
  pool = (concurrent.futures.ThreadPoolExecutor(threads) if threads > 1
          else None)
  try:
    while True:
      status = call(walk, split)
      if status == kernels.DONE:
        break
      if status == kernels.PAUSED:
        bar.update(walk.progress())
      elif status == kernels.SPLIT:
        _walk_split(walk, workers, pool, call, handle, bar)
      else:
        handle(walk, status)
  finally:
    bar.close()
    if pool is not None:
      pool.shutdown()
  for w in workers:
    if w.ctl[kernels.C_DAG] or walk.merge_public(w):
      walk.ctl[kernels.C_DAG] = 1
    walk.ctl[kernels.C_MISSING] += w.ctl[kernels.C_MISSING]
    walk.ctl[kernels.C_WORK] += w.ctl[kernels.C_WORK]
    walk.ctl[kernels.C_FRAMES] += w.ctl[kernels.C_FRAMES]
  return walk.values()


def _walk_split(walk, workers, pool, call, handle, bar):
  """Walks the groups of walk's current frame on the workers' threads,
  largest group first, and marks them walked."""
  frames, ints = walk.frames, walk.ints
  d = int(walk.ctl[kernels.C_DEPTH])
  ng = int(frames[d, kernels.F_NG])
  gs = ints[frames[d, kernels.F_GSTART]:frames[d, kernels.F_GSTART] + ng + 1]
  sizes = np.diff(gs)
  free = queue.SimpleQueue()
  for w in workers:
    free.put(w)
  done = [0]
  running = {}  # Group -> the worker walking it (progress bars).
  lock = threading.Lock()

  def task(g):
    w = free.get()
    with lock:
      running[g] = w
    try:
      while not kernels.seed_walk(walk.args(), d, g, w.args(), w.mode,
                                  w.level):
        w.grow(kernels.SHORT_ARENA)
      while True:
        status = call(w, 0)
        if status == kernels.DONE:
          break
        if status != kernels.PAUSED:
          handle(w, status)
      kernels.return_values(w.args(), walk.args(), d, g, w.mode, w.level)
      with lock:
        done[0] += sizes[g]
    finally:
      with lock:
        running.pop(g, None)
      free.put(w)

  futures = [pool.submit(task, g) for g in np.argsort(-sizes, kind="stable")]
  total = float(gs[ng]) or 1.0
  while True:
    finished, _ = concurrent.futures.wait(futures, timeout=0.5)
    with lock:
      # Racy reads of the running workers' frames: an estimate to show.
      partial = sum(sizes[g] * w.progress() for g, w in running.items())
    bar.update(walk.progress(split_done=(done[0] + partial) / total))
    if len(finished) == len(futures):
      break
  for f in futures:
    f.result()  # Raises what a task raised.
  frames[d, kernels.F_G] = ng


def _empty_tables(engine):
  """Tables with no rows: the uniform policy."""
  return HashedTable(engine.max_moves, ("regret", "avg"), max_memory=1 << 20,
                     slots=2)


def _check_threads(threads):
  return counts.check_count("threads", threads, 1, what="an int >= 1")


# Whether an engine's public states merge (kernels/stream.py, C_DAG), by
# (name, params): a property of the game that every walk observes.
_DAG = {}


def _engine_id(engine):
  return engine.name, engine.params.tobytes()


def _remember_dag(engine, walk):
  _DAG[_engine_id(engine)] = bool(walk.ctl[kernels.C_DAG])


def _check_flush(flush_code, big_t):
  if flush_code not in FLUSH_CODES:
    raise ValueError(f"flush_code must be one of {FLUSH_CODES}, got "
                     f"{flush_code!r}.")
  if flush_code and big_t < 0:
    raise ValueError(f"T must be >= 0, got {big_t!r}.")


def engine_best_response_values(engine, tables=None, flush_code=FLUSH_NONE,
                                big_t=0, progress=True, threads=1,
                                current=False):
  """[BR_0(sigma_1), BR_1(sigma_0)] of the average policy in `tables`.

  sigma is read from the tables' rows (kernels/stream.py, mode BR): for the
  row r of an infoset I of player p,
    cum_a = avg[r, a] + W pi_p^cur(h) strategy[r, a],
    W = 0 (flush_code 0), T - L (1) or (T (T + 1) - L (L + 1)) / 2 (2),
    L = avg_last[r],
    sigma(I, a) = cum_a / sum_b cum_b,
  uniform if the sum is <= 0 or I has no row; pi_p^cur(h) is p's own reach
  under the current strategy `strategy` (optimistic averaging's lazy
  catch-up to iteration T, as `base.optimistic_average` flushes on a tree).
  One walk of the game by public states computes both best responses; on
  games whose public states merge (goofspiel without imp_info) a walk per
  responder level follows (the tree's level order).

  Args:
    engine: an `Engine`, or a game string / `pyspiel.Game` with one.
    tables: a `HashedTable` (None: the uniform policy) with fields "avg"
      and "strategy" (or "regret": sigma^T is their regret matching).
    flush_code: 0, 1 or 2 (above).
    big_t: T, the iteration the averages are caught up to.
    progress: show a tqdm bar when the walk takes more than a few seconds.
    threads: Python threads walking public subtrees at once (the kernels
      release the GIL); the values do not depend on it.
    current: evaluate the tables' current strategy sigma^T instead of
      their average (flush_code and big_t are then unused).

  Returns:
    float64[2], in each responder's own utility.
  """
  engine = as_engine(engine)
  _check_flush(flush_code, big_t)
  threads = _check_threads(threads)
  walk_size.check_streaming_walk(engine.game, "The best-response walk")
  if tables is None:
    tables = _empty_tables(engine)
  if current:
    flush_code = kernels.FLUSH_CURRENT
  dec = _empty_tables(engine)
  walk = _Walk(engine, kernels.BR)
  workers = [_Walk(engine, kernels.BR) for _ in range(threads)
             ] if threads > 1 else []
  values = _run(walk, tables, dec, flush=flush_code, big_t=big_t,
                desc="best response", progress=progress, workers=workers)
  _remember_dag(engine, walk)
  if not walk.ctl[kernels.C_DAG]:
    return values
  return _level_best_responses(engine, tables, flush_code, big_t, progress)


def _level_best_responses(engine, tables, flush_code, big_t, progress):
  """Best responses when public states merge: one walk to find the deepest
  responder level, one per level deciding its infosets with the deeper ones
  decided (kernels/exact.py's `best_response_value` order), a final one."""
  dec = decision_table(engine)
  walk = _Walk(engine, kernels.BR, level=1 << 40)
  _run(walk, tables, dec, flush=flush_code, big_t=big_t,
       desc="best response levels", progress=progress)
  max_level = int(walk.ctl[kernels.C_MAX_LEVEL])
  for level in range(max_level, -2, -1):
    walk = _Walk(engine, kernels.BR, level=level)
    values = _run(walk, tables, dec, flush=flush_code, big_t=big_t,
                  desc=f"best response level {level}", progress=progress)
    if level >= 0:
      kernels.decide_level(_dec_args(dec), level)
  return values


def engine_nash_conv(engine, tables=None, flush_code=FLUSH_NONE, big_t=0,
                     progress=True, threads=1, current=False):
  """NashConv = BR_0(sigma_1) + BR_1(sigma_0) - (u_0 + u_1) of the average
  policy in `tables` (or its current one; see
  `engine_best_response_values`)."""
  engine = as_engine(engine)
  values = engine_best_response_values(engine, tables, flush_code, big_t,
                                       progress, threads, current)
  return float(values.sum() - engine.utility_sum)


def engine_exploitability(engine, tables=None, flush_code=FLUSH_NONE,
                          big_t=0, progress=True, threads=1, current=False):
  """NashConv / 2, OpenSpiel's exploitability for two-player games."""
  return engine_nash_conv(engine, tables, flush_code, big_t, progress,
                          threads, current) / 2.0


class StreamingCFR:
  """The exact CFR family on a native engine, without a tree.

  Iterations of kernels/cfr.py's variants with OpenSpiel's alternating
  updates: at iteration t, player 0's pass then player 1's with the updated
  sigma (with `alternating_updates=False`, both passes with sigma^t and
  then both players' rows updated: simultaneous updates), each player's
  terms
    R(I, a) += sum_{h in I} pi_{-p}(h) (v_p(h a) - v_p(h)),
    S(I, a) += sum_{h in I} pi_p(h) sigma^t(I, a) w_t,
  with w_t and the rest of the update given by the regret rule
  (solvers/rules.py): after p's regret terms `finish_pass` clips (RM+) or
  discounts (DCFR) p's rows and regret-matches them; for a split rule
  (DCFR+, PCFR+, PDCFR+) R_{t-1} is set aside before the pass (a second
  pending cell), the walk sums r_t alone, and `finish_pass` forms
  R_t = max(R_{t-1} d_t + r_t, 0) and the (predicted) strategy. The tables
  equal `CFRSolver`'s up to the order of the sums.

  A pass is one walk of the game by public states (kernels/stream.py, mode
  CFR) that skips every history the opponent q = 1 - p never reaches
  (pi_q(h) = 0: p's regret terms are 0 there): p's regret terms, and the
  *opponent's* average terms, whose sigma_q is current in p's pass:
  player 1's S terms of iteration t in player 0's pass, player 0's terms of
  iteration t + 1 in player 1's pass of iteration t (into pending cells,
  the tables' `baseline`, added to `avg` when iteration t + 1 starts;
  player 0's terms of iteration 1 in its own first pass). With
  simultaneous updates sigma_0 is still sigma_0^t in player 1's pass, so
  player 0's terms of iteration t go straight to `avg` there (the tables
  have no pending cells), and `finish_pass` updates both players' rows
  after the two passes. Rows are
  inserted as the walks meet infosets (the first iteration grows the
  tables); infosets with one legal action have none.

  Args:
    engine: an `Engine`, or a game string / `pyspiel.Game` with one.
    variant: a variant name of solvers/rules.py or a `RegretRule`.
    max_memory: bytes the tables may take (`HashedTable`); MemoryError
      if a walk needs more.
    progress: tqdm bars for walks longer than a few seconds.
    threads: Python threads walking public subtrees at once (the kernels
      release the GIL; the tables do not depend on it). Used once a walk
      has shown the game's public states never merge (else two workers
      could update one infoset at once).
    alternating_updates: False for simultaneous updates (the rules of
      `rules.SIMULTANEOUS_RULES`; ValueError for the others).
    **constants: the named variant's alpha, beta, gamma.

  Attributes:
    engine: the `Engine`.
    tables: the `HashedTable`: fields "regret", "avg" (cumulative average
      weights), "strategy" (sigma^t), "pending" (player 0's pending
      average terms; not with simultaneous updates) and for a split rule
      "stash" (R_{t-1}); header word
      "player" (the row's player).
    num_iterations: iterations run.
    variant: the rule's name; rule: the `RegretRule` (its constants).
    threads: workers of the sweeps.
  """

  def __init__(self, engine, variant="cfr", max_memory=None, progress=True,
               threads=1, alternating_updates=True, **constants):
    self.rule = rules_lib.rule_of(variant, **constants)
    self.simultaneous = not rules_lib.check_alternating(alternating_updates,
                                                        self.rule)
    self.engine = as_engine(engine)
    walk_size.check_streaming_walk(self.engine.game, "Exact CFR's walk")
    self.variant = self.rule.name
    self._flags = rules_lib.kernel_flags(self.rule)
    self.progress = progress
    self.threads = _check_threads(threads)
    # Pending cells: player 0's average terms (alternating updates only),
    # and for a split rule R_{t-1} of the updated player while its pass
    # sums r_t into the regrets.
    fields = CFR_SPLIT_FIELDS if self._flags.split else CFR_FIELDS
    if self.simultaneous:
      fields = tuple(f for f in fields if f != "pending")
    self.tables = HashedTable(self.engine.max_moves, fields, CFR_HEADER,
                              max_memory=max_memory, init="strategy")
    self.num_iterations = 0
    self._walk = _Walk(self.engine, kernels.CFR)
    self._workers = [_Walk(self.engine, kernels.CFR)
                     for _ in range(self.threads)] if self.threads > 1 else []
    self._dec = _empty_tables(self.engine)

  def run(self, num_iterations):
    """Runs `num_iterations` iterations (two walks each)."""
    num_iterations = counts.check_count("num_iterations", num_iterations)
    clip, post, split, predictive = self._flags
    for _ in range(int(num_iterations)):
      t = self.num_iterations + 1
      coef = self.rule.coefficients(t, 2)  # Rows t and t + 1.
      tables = self.tables
      smap = stream_map(tables)
      simultaneous = self.simultaneous
      if t > 1 and not simultaneous:  # Player 0's terms of iteration t,
        kernels.fold_pending(tables.args(), smap)  # found in the last pass.
      # The weight of the other player's average terms in p's pass: w_t,
      # and w_{t+1} for player 0's terms found in player 1's pass (those of
      # iteration t with simultaneous updates).
      weights = (coef[0, rules_lib.C_WEIGHT],
                 coef[0 if simultaneous else 1, rules_lib.C_WEIGHT])
      for p in (0, 1):
        if split:  # R_{t-1} aside; the walk sums r_t into the regrets.
          kernels.stash_regrets(self.tables.args(), smap, p)
        # Workers may update one infoset at once only if public states
        # never merge: until a single-threaded walk has shown it, one thread.
        dag = _DAG.get(_engine_id(self.engine))
        workers = self._workers if dag is False else []
        first = t == 1 and p == 0 and not simultaneous
        _run(self._walk, tables, self._dec, p=p, weight=weights[p],
             own_weight=weights[0] if first else 0.0,
             desc=f"CFR iteration {t}, player {p}", progress=self.progress,
             workers=workers)
        _remember_dag(self.engine, self._walk)
        if not simultaneous:
          kernels.finish_pass(self.tables.args(), smap, p, clip, post, split,
                              predictive, coef[0, :4])
      for p in (0, 1) if simultaneous else ():
        kernels.finish_pass(self.tables.args(), smap, p, clip, post, split,
                            predictive, coef[0, :4])
      self.num_iterations = t

  def best_response_values(self):
    """[BR_0, BR_1] of the average policy."""
    return engine_best_response_values(self.engine, self.tables,
                                       progress=self.progress,
                                       threads=self.threads)

  def nash_conv(self):
    """NashConv of the average policy."""
    return engine_nash_conv(self.engine, self.tables, progress=self.progress,
                            threads=self.threads)

  def exploitability(self):
    """Exploitability (NashConv / 2) of the average policy."""
    return self.nash_conv() / 2.0

  def average_strategy(self, key):
    """The average strategy at infoset key (h1, h2) (None: no row)."""
    return _row_probabilities(self.tables, key, "avg")

  def current_strategy(self, key):
    """sigma^t at infoset key (h1, h2) (None: no row)."""
    return _row_probabilities(self.tables, key, "strategy")


def _row_probabilities(tables, key, field):
  """The normalised cells of a row's field (uniform if they sum to <= 0),
  None if the key has no row."""
  r = tables.find(*key)
  if r < 0:
    return None
  x = tables.field(r, field).astype(np.float64)
  total = x.sum()
  return x / total if total > 0 else np.full(len(x), 1.0 / len(x))


# --------------------------------------------------------------------------
# Small games: the pyspiel tree in lockstep with the engine.


def _lockstep(engine):
  """Yields (pyspiel state, engine state, moves' action ids) at every
  decision node of the game, walking the pyspiel tree and the engine
  together (and checking they agree on the moves)."""
  code, params = engine.code, engine.params
  root = engine.game.new_initial_state()
  stack = [(root, engine.new_state())]
  while stack:
    state, es = stack.pop()
    if state.is_terminal():
      if protocol.player(code, params, es) != protocol.TERMINAL:
        raise AssertionError(f"engine not terminal at {state.history()}")
      continue
    if state.is_chance_node():
      actions = [a for a, _ in state.chance_outcomes()]
    else:
      actions = state.legal_actions()
    count = protocol.num_moves(code, params, es)
    moves = [int(protocol.move_action(code, params, es, j))
             for j in range(count)]
    if moves != list(actions):
      raise AssertionError(f"engine moves {moves} != OpenSpiel's {actions} "
                           f"at {state.history()}")
    if not state.is_chance_node():
      yield state, es, moves
    for j, a in enumerate(actions):
      child = es.copy()
      protocol.apply(code, params, child, j)
      stack.append((state.child(a), child))


def infoset_keys(engine):
  """{information state string: (player, (h1, h2))} of every decision of a
  small game, by walking its pyspiel tree with the engine."""
  code, params = engine.code, engine.params
  keys = {}
  for state, es, _ in _lockstep(engine):
    p = state.current_player()
    h1, h2 = protocol.infoset_hash(code, params, es, p)
    keys[state.information_state_string(p)] = (p, (int(h1), int(h2)))
  return keys


def tables_from_policy(engine, policy_fn, max_memory=None):
  """A `HashedTable` whose rows hold a policy: avg = strategy = the
  probabilities policy_fn(state) gives (dict action -> probability, e.g. an
  OpenSpiel TabularPolicy's `action_probabilities`), for every infoset
  with more than one legal action, by walking a small game's pyspiel tree
  in lockstep with the engine. policy_fn returning None leaves the infoset
  without a row (uniform)."""
  engine = as_engine(engine)
  code, params = engine.code, engine.params
  tables = HashedTable(engine.max_moves, ("regret", "avg", "strategy"),
                       max_memory=max_memory)
  for state, es, moves in _lockstep(engine):
    if len(moves) < 2:
      continue
    p = state.current_player()
    h1, h2 = protocol.infoset_hash(code, params, es, p)
    if tables.find(h1, h2) >= 0:
      continue
    probs = policy_fn(state)
    if probs is None:
      continue
    r = tables.insert(h1, h2, len(moves))
    x = [float(probs.get(a, 0.0)) for a in moves]
    tables.field(r, "avg")[:] = x
    tables.field(r, "strategy")[:] = x
  return tables


def _current_row(tables, r):
  """sigma^T of row r: its strategy field, or the regret matching of its
  regrets."""
  from mccfrb.solvers import engine as engine_lib  # pylint: disable=import-outside-toplevel
  return engine_lib.current_row(tables, r)


def policy_dict(engine, tables, flush_code=FLUSH_NONE, big_t=0):
  """{information state string: [(action, probability)]}: the average
  policy of `tables` (as the best responses read it, the optimistic
  catch-up included) at every infoset of a small game; a policy that
  `mccfrb.nash_conv` accepts."""
  engine = as_engine(engine)
  _check_flush(flush_code, big_t)
  code, params = engine.code, engine.params
  out = {}
  # Own reaches under the current strategy ride down the lockstep walk.
  root = engine.game.new_initial_state()
  stack = [(root, engine.new_state(), 1.0, 1.0)]
  while stack:
    state, es, c0, c1 = stack.pop()
    if state.is_terminal():
      continue
    count = int(protocol.num_moves(code, params, es))
    if state.is_chance_node():
      for j, (a, _) in enumerate(state.chance_outcomes()):
        child = es.copy()
        protocol.apply(code, params, child, j)
        stack.append((state.child(a), child, c0, c1))
      continue
    p = state.current_player()
    moves = [int(protocol.move_action(code, params, es, j))
             for j in range(count)]
    h1, h2 = protocol.infoset_hash(code, params, es, p)
    r = tables.find(h1, h2) if count > 1 else -1
    if r >= 0:
      cur = _current_row(tables, r)
      last = float(tables.stamp(r))
      w = (base.skipped_weight(big_t, last, flush_code == FLUSH_LINEAR)
           if flush_code else 0.0)
      reach = c0 if p == 0 else c1
      cum = tables.field(r, "avg") + (w * reach * cur if w else 0.0)
      total = cum.sum()
      sigma = cum / total if total > 0 else np.full(count, 1.0 / count)
    else:
      cur = np.full(count, 1.0 / count)
      sigma = cur
    out[state.information_state_string(p)] = list(zip(moves, map(float, sigma)))
    for j, a in enumerate(moves):
      child = es.copy()
      protocol.apply(code, params, child, j)
      stack.append((state.child(a), child,
                    c0 * cur[j] if p == 0 else c0,
                    c1 * cur[j] if p == 1 else c1))
  return out


__all__ = ["StreamingCFR", "engine_best_response_values", "engine_nash_conv",
           "engine_exploitability", "tables_from_policy", "policy_dict",
           "infoset_keys", "as_engine", "FLUSH_CODES"]
