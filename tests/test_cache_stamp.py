"""A kernel's cache entry goes stale with the modules it calls
(mccfrb/numba_cache.py, `stamp_with_sources`): numba checks only the
kernel's own file, so an edit of an engine alone left the walks running
the old engine code from the cache."""

import os
import pathlib
import re
import subprocess
import sys

import mccfrb
from mccfrb import numba_cache
from mccfrb.kernels import stream

PACKAGE = pathlib.Path(mccfrb.__file__).parent

CALLER = """import numba
from pkg.games import callee


@numba.njit(cache=True)
def f():
  return callee.g()
"""
CALLEE = """import numba


@numba.njit(cache=True)
def g():
  return {value}
"""
STAMPED = ("import os\nfrom mccfrb import numba_cache\n"
           "numba_cache.stamp_with_sources(os.path.dirname(__file__), "
           "('kernels', 'games'))\n")


def _package(root, init):
  """pkg/kernels/caller.py calls pkg/games/callee.py's g (returning 1)."""
  for folder in ("pkg", "pkg/kernels", "pkg/games"):
    (root / folder).mkdir(parents=True)
    (root / folder / "__init__.py").write_text("")
  (root / "pkg" / "__init__.py").write_text(init)
  (root / "pkg" / "kernels" / "caller.py").write_text(CALLER)
  (root / "pkg" / "games" / "callee.py").write_text(CALLEE.format(value=1))


def _call(root):
  env = dict(os.environ, NUMBA_CACHE_DIR=str(root / "cache"),
             PYTHONPATH=str(root))
  done = subprocess.run(
      [sys.executable, "-c",
       "from pkg.kernels import caller; print(caller.f())"],
      env=env, capture_output=True, text=True, timeout=600, check=False)
  assert done.returncode == 0, done.stderr
  return done.stdout.split()[-1]


def test_an_edit_of_a_called_module_compiles_the_caller_again(tmp_path):
  _package(tmp_path, STAMPED)
  assert _call(tmp_path) == "1"
  (tmp_path / "pkg" / "games" / "callee.py").write_text(
      CALLEE.format(value=2))
  assert _call(tmp_path) == "2"


def test_numba_alone_runs_the_old_callee_from_its_cache(tmp_path):
  """The hazard itself: without the stamp the cached caller keeps g's old
  code (if a numba release checks dependencies, this fails and the stamp
  can go)."""
  _package(tmp_path, "")
  assert _call(tmp_path) == "1"
  (tmp_path / "pkg" / "games" / "callee.py").write_text(
      CALLEE.format(value=2))
  assert _call(tmp_path) == "1"


def test_digest_follows_the_numba_folders_only(tmp_path):
  _package(tmp_path, "")
  pkg = tmp_path / "pkg"
  first = numba_cache.sources_digest(pkg, ("kernels", "games"))
  (pkg / "__init__.py").write_text("# outside the folders\n")
  (pkg / "games" / "__pycache__").mkdir()
  (pkg / "games" / "__pycache__" / "x.py").write_text("# cache\n")
  assert numba_cache.sources_digest(pkg, ("kernels", "games")) == first
  (pkg / "games" / "callee.py").write_text(CALLEE.format(value=3))
  assert numba_cache.sources_digest(pkg, ("kernels", "games")) != first
  (pkg / "games" / "callee.py").write_text(CALLEE.format(value=1))
  assert numba_cache.sources_digest(pkg, ("kernels", "games")) == first


def test_mccfrbs_kernels_carry_the_digest():
  stamp = stream.walk._cache._cache_file._source_stamp  # pylint: disable=protected-access
  assert isinstance(stamp, tuple) and len(stamp) == 2
  assert stamp[1] == numba_cache.sources_digest(PACKAGE)


def test_every_module_with_numba_code_is_in_the_digest():
  """A module outside NUMBA_FOLDERS that defined numba functions would not
  make the kernels that call it compile again."""
  numba_code = re.compile(r"@(numba\.)?(njit|jit|intrinsic|overload|"
                          r"generated_jit)\b|\bnjit\(")
  outside = []
  for path in PACKAGE.rglob("*.py"):
    part = path.relative_to(PACKAGE).parts
    if len(part) > 1 and part[0] in numba_cache.NUMBA_FOLDERS:
      continue
    if numba_code.search(path.read_text()):
      outside.append(str(path.relative_to(PACKAGE)))
  assert not outside, outside
