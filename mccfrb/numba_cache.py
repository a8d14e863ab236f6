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

Numba keeps a function's cache entries while *its own* source file is
unchanged (a stamp of that file's content), but a kernel's machine code
also holds what it calls from other files (inlined by numba or LLVM, or
linked in): after an edit of goofspiel's `terminal_value` alone, the walks
of kernels/stream.py load their old code from the cache and run the old
leaf value. `stamp_with_sources()`, also called by mccfrb/__init__.py,
adds to the stamp of every function defined in mccfrb a digest of every
module of the folders that hold numba code (`NUMBA_FOLDERS`), so an edit
of any of them compiles mccfrb's kernels again.
"""

import atexit
import contextlib
import functools
import hashlib
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
# The folders of every module that defines numba functions (a test checks
# that no other module of the package does).
NUMBA_FOLDERS = ("kernels", "games", "tables", "evaluation")


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


def sources_digest(package_folder, folders=NUMBA_FOLDERS):
  """sha256 of the path and content of every .py file under `folders` of
  `package_folder`, in a fixed order."""
  digest = hashlib.sha256()
  for folder in folders:
    for root, dirs, files in os.walk(os.path.join(package_folder, folder)):
      dirs[:] = sorted(d for d in dirs if d != "__pycache__")
      for name in sorted(files):
        if name.endswith(".py"):
          path = os.path.join(root, name)
          digest.update(os.path.relpath(path, package_folder).encode())
          with open(path, "rb") as f:
            digest.update(b"\0" + f.read() + b"\0")
  return digest.digest()


# Package folders (real paths ending in os.sep) -> the folders digested;
# the digest is taken when numba first asks for the stamp of one of their
# functions, once a process (`_digest`).
_STAMPED = {}
_digest = functools.lru_cache(maxsize=None)(sources_digest)


def stamp_with_sources(package_folder, folders=NUMBA_FOLDERS):
  """Makes numba's cache stamp of each function defined under
  `package_folder` carry `sources_digest(package_folder, folders)`
  (module docstring). Idempotent; the digest is taken once per process.

  Returns:
    True when the stamp is installed (now or before); False when numba's
    source-backed locator class cannot be found.
  """
  from numba.core import caching  # pylint: disable=import-outside-toplevel
  mixin = getattr(caching, "_SourceFileBackedLocatorMixin", None)
  if mixin is None or "get_source_stamp" not in vars(mixin):
    return False
  root = os.path.join(os.path.realpath(package_folder), "")
  _STAMPED.setdefault(root, tuple(folders))
  if getattr(mixin, "_mccfrb_stamped", False):
    return True
  original = mixin.get_source_stamp

  def get_source_stamp(self):
    stamp = original(self)
    path = os.path.realpath(getattr(self, "_py_file", "") or "")
    for where, dirs in _STAMPED.items():
      if path.startswith(where):
        return (stamp, _digest(where, dirs))
    return stamp

  mixin.get_source_stamp = get_source_stamp
  mixin._mccfrb_stamped = True  # pylint: disable=protected-access
  return True
