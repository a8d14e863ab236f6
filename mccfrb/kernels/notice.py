"""A one-line notice when numba compiles mccfrb's kernels.

The first use of a solver compiles its kernels (1-26 s; the
getting-started page lists them); later uses load them from numba's
on-disk cache at once. Numba announces a real compilation (not a cache
load) with its "numba:compile" event; `install()` registers a
listener that prints one line to standard error the first time a kernel of
mccfrb starts compiling in a process, so a user knows why the first call is
slow and that it will not be next time.
"""

import sys
import threading

from numba.core import event

NOTICE = ("mccfrb: compiling numba kernels for first use (up to about 30 s "
          "per solver kind; cached on disk afterwards)...")


class _FirstCompile(event.Listener):
  """Prints `NOTICE` once, at the first compilation of an mccfrb kernel."""

  def __init__(self):
    self.shown = False
    self._lock = threading.Lock()

  def on_start(self, ev):
    dispatcher = (ev.data or {}).get("dispatcher")
    module = getattr(getattr(dispatcher, "py_func", None), "__module__", "")
    if not module.startswith("mccfrb."):
      return
    with self._lock:
      if self.shown:
        return
      self.shown = True
    sys.stderr.write(NOTICE + "\n")
    sys.stderr.flush()

  def on_end(self, ev):
    """Nothing to do when a compile ends (numba's Listener requires the
    method; the notice is printed at the start)."""


_LISTENER = _FirstCompile()


def install():
  """Registers the listener (once per process)."""
  if not getattr(install, "done", False):
    event.register("numba:compile", _LISTENER)
    install.done = True
