"""Long runs in chunks: Ctrl-C answered between chunks, progress bars.

Every solver's `run(n)` (solvers/base.py) runs its iterations in chunks of
`_run_chunk(k)` calls sized so that one takes about CHUNK_SECONDS. During a
run, Ctrl-C (SIGINT) does not raise inside a chunk, where the tables and
the counters would be left half updated: it is noted, and the run raises
`KeyboardInterrupt` at the next chunk boundary, with every iteration
finished so far counted and the tables valid (`save()` works, and a
resumed run continues as if it had never stopped: `run(a); run(b)` equals
`run(a + b)`). A second Ctrl-C before that boundary raises at once, as
Python does by default. Outside the main thread, or when the program has
installed its own SIGINT handler, Ctrl-C is left alone.
"""

import contextlib
import signal
import threading
import time

# A chunk takes about this long (seconds): Ctrl-C is answered within about
# twice it, and the progress bar moves as often.
CHUNK_SECONDS = 0.1
# A run shows a tqdm progress bar once it has taken this many seconds and
# has iterations left (progress=None); progress=False shows none, also of
# the walks inside the run (`bars_allowed`): `iteration()`, OpenSpiel's
# one-iteration call that drop-in scripts make, runs with it.
PROGRESS_AFTER = 3.0


class _Request:
  """Whether Ctrl-C was pressed during the current run."""

  def __init__(self):
    self.pending = False

  def check(self, done, total):
    """Raises KeyboardInterrupt if Ctrl-C was pressed (the run is at a
    chunk boundary: `done` of `total` iterations finished)."""
    if self.pending:
      self.pending = False
      raise KeyboardInterrupt(
          f"stopped after {done:,} of {total:,} iterations; the solver is "
          "consistent (save() it, or run() again to go on)")


_ACTIVE = threading.local()
_QUIET = threading.local()


def bars_allowed():
  """False inside a run with progress=False (this thread): the walks it
  makes (streaming CFR on an engine) show no bar either."""
  return not getattr(_QUIET, "on", False)


@contextlib.contextmanager
def _quiet(on):
  """Within the block, `bars_allowed()` is False when `on` (or already)."""
  before = getattr(_QUIET, "on", False)
  _QUIET.on = before or on
  try:
    yield
  finally:
    _QUIET.on = before


@contextlib.contextmanager
def deferred_interrupts():
  """Within the block, SIGINT sets a request (yielded) instead of raising,
  in the main thread when SIGINT has Python's default handler; elsewhere
  (and in nested blocks) the request is never set."""
  request = _Request()
  nested = getattr(_ACTIVE, "request", None) is not None
  if (nested or threading.current_thread() is not threading.main_thread()
      or signal.getsignal(signal.SIGINT) is not signal.default_int_handler):
    yield request if not nested else _ACTIVE.request
    return

  def note(signum, frame):  # pylint: disable=unused-argument
    if request.pending:  # Pressed twice: stop now, as Python would.
      raise KeyboardInterrupt
    request.pending = True

  signal.signal(signal.SIGINT, note)
  _ACTIVE.request = request
  try:
    yield request
  finally:
    _ACTIVE.request = None
    signal.signal(signal.SIGINT, signal.default_int_handler)


class RunProgress:
  """A tqdm bar over a run's iterations, shown once the run has taken
  PROGRESS_AFTER seconds and has iterations left (at once with
  progress=True; never with False, or when `bars_allowed()` is False);
  `desc` and `unit` name what is counted."""

  def __init__(self, total, progress=None, desc="iterations", unit="it"):
    self._total = total
    self._progress = progress
    self._desc, self._unit = desc, unit
    self._started = time.perf_counter()
    self._bar = None

  def __enter__(self):
    return self

  def update(self, iterations, infosets=None):
    """The run is at `iterations` (with `infosets` stored, if given)."""
    if self._bar is None and self._progress is not False and (
        bars_allowed()) and (
            self._progress
            or (time.perf_counter() - self._started > PROGRESS_AFTER
                and iterations < self._total)):
      from tqdm import tqdm  # pylint: disable=import-outside-toplevel
      self._bar = tqdm(total=self._total, initial=iterations,
                       unit=self._unit, unit_scale=True, desc=self._desc,
                       leave=False)
    if self._bar is not None:
      self._bar.n = iterations
      if infosets is not None:
        self._bar.set_postfix(infosets=f"{infosets:,}", refresh=False)
      self._bar.refresh()

  def __exit__(self, *exc):
    if self._bar is not None:
      self._bar.close()


def run_in_chunks(run_chunk, num_iterations, unit=1, progress=None,
                  infosets=None, start=0):
  """Calls `run_chunk(k)` until `num_iterations` iterations have run.

  Chunks end at multiples of `unit` in the solver's iteration count (a
  batch size, or the iterations of a group of episodes in flight: a batch
  or group never spans two calls, so the tables equal one call's, whatever
  the chunk sizes) but for the last; they are doubled while a chunk takes
  under CHUNK_SECONDS / 2 and halved while it takes over 2 CHUNK_SECONDS.
  Ctrl-C raises KeyboardInterrupt between chunks (`deferred_interrupts`).

  Args:
    run_chunk: runs k iterations and leaves the solver consistent.
    progress: None (a bar after PROGRESS_AFTER seconds while iterations
      are left), True (at once) or False (none, of the walks inside the
      run neither).
    infosets: optional function giving the infosets stored, for the bar.
    start: the iterations the solver ran before (chunks align to them).
  """
  done = 0
  chunk = unit
  with deferred_interrupts() as request, _quiet(progress is False), (
      RunProgress(num_iterations, progress)) as bar:
    while done < num_iterations:
      k = min(chunk, num_iterations - done)
      # End the chunk at a multiple of unit (the first may be shorter).
      k = max(k - (start + done + k) % unit, min(k, unit - (start + done)
                                                  % unit))
      started = time.perf_counter()
      run_chunk(k)
      elapsed = time.perf_counter() - started
      done += k
      bar.update(done, None if infosets is None else infosets())
      request.check(done, num_iterations)
      if elapsed < CHUNK_SECONDS / 2:
        chunk *= 2
      elif elapsed > 2 * CHUNK_SECONDS and chunk > unit:
        chunk = max(unit, chunk // 2 // unit * unit)
