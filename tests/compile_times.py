"""What a cold run of the suite compiles, test by test: a pytest plugin.

    python -m pytest -q -n 2 -m "not slow" -p tests.compile_times tests

writes, for each process (each pytest-xdist worker), a CSV under the
folder named by the environment variable MCCFRB_COMPILE_TIMES
(`compile_times` by default): one row per kernel numba compiled instead of
loading it from its cache, outside another kernel's compile (a callee
compiled for its caller counts in the caller's row), with the test that
asked for it, the kernel, a digest of its signature (equal digests: the
same signature) and the process's CPU seconds. The run ends with the
kernels' totals. With an empty NUMBA_CACHE_DIR it says which tests pay
for which compiles (tests/conftest.py, SLOW_BEYOND_THE_CORE); it reads
numba's compile events (`numba.core.event`), so the kernels are unchanged.
"""

import collections
import csv
import hashlib
import os
import pathlib
import threading
import time

from numba.core import event

FIELDS = ("test", "kernel", "signature", "cpu_s")
FOLDER = "MCCFRB_COMPILE_TIMES"


def _folder():
  return pathlib.Path(os.environ.get(FOLDER, "compile_times"))


class _Compiles(event.Listener):
  """Writes a row at the end of each outermost compile of a thread."""

  def __init__(self, writer, handle):
    self.test = "(collection)"
    self._writer = writer
    self._handle = handle
    self._local = threading.local()

  def on_start(self, ev):
    depth = getattr(self._local, "depth", 0)
    if depth == 0:
      self._local.start = time.process_time()
    self._local.depth = depth + 1

  def on_end(self, ev):
    self._local.depth -= 1
    dispatcher = ev.data["dispatcher"]
    # A callee's compile, or one that failed (numba retries it with literal
    # arguments; numba 0.68's Event.is_failed answers the opposite).
    if self._local.depth or tuple(ev.data["args"]) not in dispatcher.overloads:
      return
    signature = str(tuple(ev.data["args"]))
    self._writer.writerow((
        self.test,
        f"{dispatcher.py_func.__module__}.{dispatcher.py_func.__qualname__}",
        hashlib.sha1(signature.encode()).hexdigest()[:12],
        f"{time.process_time() - self._local.start:.3f}"))
    self._handle.flush()


_LISTENER = []


def pytest_configure(config):
  """Opens this process's CSV and listens to numba's compiles; the first
  process (pytest-xdist's controller, or the only one) first removes the
  CSVs of an earlier run."""
  folder = _folder()
  folder.mkdir(parents=True, exist_ok=True)
  # pytest-xdist's workers carry `workerinput` (its environment variable
  # would also name a worker in a pytest a test starts).
  worker = getattr(config, "workerinput", {}).get("workerid", "main")
  if worker == "main":
    for old in folder.glob("*.csv"):
      old.unlink()
  handle = open(folder / f"{worker}-{os.getpid()}.csv", "w", newline="",
                encoding="utf-8")
  writer = csv.writer(handle)
  writer.writerow(FIELDS)
  handle.flush()
  listener = _Compiles(writer, handle)
  event.register("numba:compile", listener)
  _LISTENER.append((listener, handle))


def pytest_runtest_setup(item):
  for listener, _ in _LISTENER:
    listener.test = item.nodeid


def pytest_unconfigure(config):
  del config
  while _LISTENER:
    listener, handle = _LISTENER.pop()
    event.unregister("numba:compile", listener)
    handle.close()


def rows(folder):
  """Every process's rows in `folder`, as dicts keyed by FIELDS."""
  out = []
  for path in sorted(pathlib.Path(folder).glob("*.csv")):
    with open(path, newline="", encoding="utf-8") as handle:
      out += list(csv.DictReader(handle))
  return out


def totals(folder):
  """{kernel: (compiles, CPU seconds)} over the CSVs in `folder`."""
  out = collections.defaultdict(lambda: [0, 0.0])
  for row in rows(folder):
    out[row["kernel"]][0] += 1
    out[row["kernel"]][1] += float(row["cpu_s"])
  return {kernel: (n, s) for kernel, (n, s) in out.items()}


def pytest_terminal_summary(terminalreporter):
  """The kernels' compiles and CPU seconds, the costliest first (on the
  pytest-xdist controller, every worker's)."""
  found = totals(_folder())
  if not found:
    return
  terminalreporter.section("numba compiles (tests/compile_times.py)")
  for kernel, (n, seconds) in sorted(found.items(),
                                     key=lambda kv: -kv[1][1])[:15]:
    terminalreporter.write_line(f"{seconds:8.1f} CPU s  {n:3d}  {kernel}")
  terminalreporter.write_line(
      f"{sum(s for _, s in found.values()):8.1f} CPU s in "
      f"{sum(n for n, _ in found.values())} compiles; rows in {_folder()}/")
