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
"""

import atexit
import os
import shutil
import tempfile
import warnings

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
