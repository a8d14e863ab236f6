"""A writable place for numba's cache of mccfrb's kernels, or a fallback.

Numba keeps a kernel compiled with `cache=True` in the first writable of:
NUMBA_CACHE_DIR, the `__pycache__` folder beside the kernel's source file,
and the user-wide cache folder (~/.cache/numba, or $XDG_CACHE_HOME/numba).
With none writable (a read-only home and install, NUMBA_CACHE_DIR unset),
numba refuses at import: "cannot cache function ...: no locator
available". `ensure_cache()`, called by mccfrb/__init__.py before any kernel
is defined, asks numba's own locators whether one works for mccfrb's kernel
folders; if none does, numba caches into a new temporary folder, removed
when the process ends (so kernels compile again in every process), with one
warning naming NUMBA_CACHE_DIR.

Processes that share a cache folder (pytest-xdist's workers, a sweep's
process pool, Ray) also share numba's index of each function's compiled
signatures, which numba reads and rewrites without a lock (numba issues
#4807 and #10128). Two processes that save two signatures of one
function at once can both number their entry 1; for a moment the index
names a data file that holds the other signature's machine code, and a
process that loads then runs code compiled for other argument types.
`lock_cache_files()`, also called by mccfrb/__init__.py, makes numba hold
a lock on a file beside the index (`<index>.lock`, fcntl.flock) while it
saves an entry (index and data, exclusive) and while it loads one
(shared). Compiling itself takes no lock.
"""

import atexit
import contextlib
import os
import shutil
import tempfile
import warnings

try:
  import fcntl
except ImportError:  # Not POSIX: numba's cache stays as it is.
  fcntl = None

# The folders of mccfrb's cached kernels, relative to the package.
KERNEL_FOLDERS = ("kernels", os.path.join("games", "engines"))


def _probe():
  """A function for numba's locators to place (they read its line number)."""


def _locators():
  """Numba's cache locator classes, or None when they cannot be read (a
  numba release that moved them) or were chosen by the user
  (NUMBA_CACHE_LOCATOR_CLASSES)."""
  from numba.core import caching  # pylint: disable=import-outside-toplevel
  from numba.core import config  # pylint: disable=import-outside-toplevel
  if config.CACHE_LOCATOR_CLASSES:
    return None
  impl = getattr(caching, "CacheImpl", getattr(caching, "_CacheImpl", None))
  return getattr(impl, "_locator_classes", None)


def cache_is_writable(package_folder):
  """Whether numba finds a cache location for every kernel folder."""
  classes = _locators()
  if classes is None:
    return True  # Nothing known to check: numba decides.
  for folder in KERNEL_FOLDERS:
    source = os.path.join(package_folder, folder, "__init__.py")
    found = False
    for cls in classes:
      try:
        found = cls.from_function(_probe, source) is not None
      except Exception:  # pylint: disable=broad-except
        found = False
      if found:
        break
    if not found:
      return False
  return True


def ensure_cache(package_folder):
  """Points numba at a temporary cache folder, with one warning, when no
  cache location is writable for mccfrb's kernels.

  Returns:
    The temporary folder, or None when numba's own choice works.
  """
  if cache_is_writable(package_folder):
    return None
  from numba.core import config  # pylint: disable=import-outside-toplevel
  given = os.environ.get("NUMBA_CACHE_DIR")
  try:
    folder = tempfile.mkdtemp(prefix="mccfrb-numba-cache-")
  except OSError:
    return None  # No temporary folder either: numba's own error follows.
  atexit.register(shutil.rmtree, folder, ignore_errors=True)
  config.CACHE_DIR = folder
  # Worker processes (sweeps) inherit it, and share the kernels compiled.
  os.environ["NUMBA_CACHE_DIR"] = folder
  where = (f"NUMBA_CACHE_DIR={given} is not writable" if given else
           "NUMBA_CACHE_DIR is not set")
  warnings.warn(
      f"mccfrb: numba cannot cache its kernels ({where}, and neither "
      "mccfrb's __pycache__ folders nor the user cache folder can be "
      "written): kernels compile in every process, cached in a temporary "
      "folder until it ends; set NUMBA_CACHE_DIR to a writable folder to "
      "keep them.", RuntimeWarning, stacklevel=2)
  return folder


@contextlib.contextmanager
def _locked(index_path, mode):
  """Holds flock `mode` on `index_path` + ".lock" (no lock where that
  file cannot be opened, e.g. a read-only cache folder)."""
  try:
    handle = open(index_path + ".lock", "a+b")  # pylint: disable=consider-using-with
  except OSError:
    yield
    return
  with handle:
    fcntl.flock(handle.fileno(), mode)
    try:
      yield
    finally:
      fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def lock_cache_files():
  """Makes numba save and load its cache entries under a file lock
  (module docstring). Idempotent.

  Returns:
    True when the lock is installed (now or before); False without fcntl
    or when numba's cache file class cannot be found.
  """
  from numba.core import caching  # pylint: disable=import-outside-toplevel
  cls = getattr(caching, "IndexDataCacheFile", None)
  if fcntl is None or cls is None:
    return False
  if getattr(cls, "_mccfrb_locked", False):
    return True
  save, load = cls.save, cls.load

  def locked_save(self, key, data):
    with _locked(self._index_path, fcntl.LOCK_EX):  # pylint: disable=protected-access
      return save(self, key, data)

  def locked_load(self, key):
    with _locked(self._index_path, fcntl.LOCK_SH):  # pylint: disable=protected-access
      return load(self, key)

  cls.save, cls.load = locked_save, locked_load
  cls._mccfrb_locked = True  # pylint: disable=protected-access
  return True
