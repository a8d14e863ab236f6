"""Worker processes for a local sweep: one pipe each, nothing shared.

`run(function, items, jobs, on_done)` calls `function(task)` for each
`(index, task)` of `items` in `jobs` spawned processes, handing the items
out in their order as workers come free, and calls `on_done(index, result)`
in the caller's thread as each one finishes.

Each worker has a pipe of its own to the caller and no lock shared with
it, so stopping the workers cannot wait on them: on an exception in the
caller (Ctrl-C's KeyboardInterrupt included, or one raised by `on_done`)
they are killed at once and the exception propagates. multiprocessing's
`Pool` shares its task and result queues' locks with its workers, and its
`terminate()` can wait forever on a lock a worker held when it was
stopped (CPython's gh-96995 and gh-78178). A worker that dies without an
answer (killed, or out of memory) ends the run with an error naming the
task, instead of a wait without end; an exception raised by `function` is
raised in the caller, with the worker's traceback as its cause.
"""

import multiprocessing
from multiprocessing import connection
import os
import signal
import threading
import traceback


class RemoteTraceback(Exception):
  """The traceback of an exception raised in a worker process (its text)."""

  def __str__(self):
    return self.args[0]


class WorkerDied(RuntimeError):
  """A worker process ended without returning its task's result.

  Attributes:
    index: the index of the item it was running.
    exitcode: the process's exit code (negative: the signal that killed
      it).
  """

  def __init__(self, index, exitcode, what=None):
    self.index = index
    self.exitcode = exitcode
    super().__init__(f"a worker process {ended(exitcode)} while running "
                     f"{what or f'item {index}'}, without its result")


def ended(exitcode):
  """How a process with this exit code ended, in words."""
  if exitcode is not None and exitcode < 0:
    try:
      return f"was killed by {signal.Signals(-exitcode).name}"
    except ValueError:
      pass  # A signal without a name: said by the exit code below.
  return f"ended (exit code {exitcode})"


def _serve(conn, function):
  """A worker's loop: (index, task) in, (ok, result) out; None ends it."""
  signal.signal(signal.SIGINT, signal.SIG_IGN)
  while True:
    item = conn.recv()
    if item is None:
      return
    _, task = item
    try:
      answer = (True, function(task))
    except Exception as e:  # pylint: disable=broad-except
      text = "".join(traceback.format_exception(e))
      answer = (False, (e, text))
    try:
      conn.send(answer)
    except Exception as e:  # pylint: disable=broad-except
      # The result or the exception did not pickle: say so instead.
      conn.send((False, (TypeError(
          f"the worker could not send its answer back: {e}"), "")))


class Worker:
  """One spawned process and the caller's end of its pipe."""

  def __init__(self, context, function):
    self.conn, theirs = context.Pipe()
    self.process = context.Process(target=_serve, args=(theirs, function),
                                    daemon=True)
    self.process.start()
    theirs.close()
    self.index = None  # The item it runs, or None when idle.

  def give(self, item):
    self.index = item[0]
    self.conn.send(item)

  def stop(self, kill):
    """Ends the process: at once (`kill`), or by asking it to return."""
    if kill:
      self.process.kill()
    else:
      try:
        self.conn.send(None)
      except OSError:
        pass  # Its pipe is closed (it ended): joined or killed below.
    self.process.join(timeout=None if kill else 60)
    if self.process.is_alive():
      self.process.kill()
      self.process.join()
    self.conn.close()


def start(function, jobs):
  """`jobs` spawned workers of `function` that ignore Ctrl-C from their
  first instruction.

  The workers inherit NUMBA_NUM_THREADS=1 when they are spawned; the
  caller's value is restored at once (numba refuses to see it change once
  its threads run). SIGINT is ignored in this process while the workers
  start, so that they inherit the ignored signal through exec: Python then
  installs no KeyboardInterrupt handler in them, and a Ctrl-C while a
  worker still imports its modules does not print that worker's traceback.
  A Ctrl-C in that short window is lost; outside the main thread, where
  signals cannot be set, the worker's own first line ignores it.
  """
  context = multiprocessing.get_context("spawn")
  previous = os.environ.get("NUMBA_NUM_THREADS")
  os.environ["NUMBA_NUM_THREADS"] = "1"
  main = threading.current_thread() is threading.main_thread()
  handler = signal.signal(signal.SIGINT, signal.SIG_IGN) if main else None
  workers = []
  try:
    for _ in range(jobs):
      workers.append(Worker(context, function))
    return workers
  except BaseException:
    for worker in workers:
      worker.stop(kill=True)
    raise
  finally:
    if main:
      signal.signal(signal.SIGINT,
                    signal.SIG_DFL if handler is None else handler)
    if previous is None:
      del os.environ["NUMBA_NUM_THREADS"]
    else:
      os.environ["NUMBA_NUM_THREADS"] = previous


def _answer(worker):
  """(index, result): the item `worker` ran and the result it sent;
  raises what its task raised, or WorkerDied when it ended without an
  answer."""
  index = worker.index
  try:
    ok, result = worker.conn.recv()
  except (EOFError, OSError):
    worker.process.join(timeout=10)
    raise WorkerDied(index, worker.process.exitcode) from None
  worker.index = None
  if not ok:
    error, text = result
    if text:
      raise error from RemoteTraceback(text)
    raise error
  return index, result


def run(function, items, jobs, on_done):
  """Runs `function(task)` for each `(index, task)` of `items` on
  min(`jobs`, len(items)) spawned workers; calls `on_done(index, result)`
  as each finishes (in the order they finish). The workers are stopped
  before it returns or raises; on an exception, at once."""
  items = list(items)
  if not items:
    return
  workers = start(function, min(jobs, len(items)))
  killed = True
  try:
    waiting = iter(items)
    for worker in workers:
      item = next(waiting, None)
      if item is not None:
        worker.give(item)
    while any(w.index is not None for w in workers):
      busy = [w for w in workers if w.index is not None]
      ready = connection.wait([w.conn for w in busy])
      for worker in busy:
        if worker.conn in ready:
          index, result = _answer(worker)
          item = next(waiting, None)
          if item is not None:
            worker.give(item)
          on_done(index, result)
    killed = False
  finally:
    for worker in workers:
      worker.stop(kill=killed)
