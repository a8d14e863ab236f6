"""tests/compile_times.py, the plugin that lists a run's numba compiles."""

import os
import pathlib
import subprocess
import sys

from tests import compile_times

ROOT = pathlib.Path(__file__).resolve().parents[1]

KERNELS = '''
from numba import njit


@njit(cache=True)
def inner(x):
  return x + 1


@njit(cache=True)
def outer(x):
  return 2 * inner(x)


def test_two_signatures():
  assert outer(3) == 8
  assert outer(2.5) == 7.0
'''


def _rows(tmp_path, cache):
  """The plugin's rows from a pytest run of KERNELS with numba's cache in
  `cache`, and what the run printed. The file is written once: numba's
  cache is stale for a source file whose modification time changed. The
  rootdir is given: pytest would otherwise take the common ancestor of the
  checkout and tmp_path (/tmp for a checkout under /tmp), and the test ids
  would carry tmp_path's folders."""
  if not (tmp_path / "test_kernels.py").exists():
    (tmp_path / "test_kernels.py").write_text(KERNELS)
  folder = tmp_path / "times"
  env = dict(os.environ, NUMBA_CACHE_DIR=str(cache),
             **{compile_times.FOLDER: str(folder)})
  done = subprocess.run(
      [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
       "-p", "tests.compile_times", "--rootdir", str(tmp_path),
       str(tmp_path / "test_kernels.py")],
      cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
      check=False)
  assert done.returncode == 0, done.stdout + done.stderr
  return compile_times.rows(folder), done.stdout


def test_a_cold_run_lists_each_outermost_compile_and_a_warm_one_none(
    tmp_path):
  cache = tmp_path / "cache"
  rows, out = _rows(tmp_path, cache)
  # outer's two signatures, each with inner compiled inside its row.
  assert sorted(r["kernel"] for r in rows) == ["test_kernels.outer"] * 2
  assert len({r["signature"] for r in rows}) == 2
  assert {r["test"] for r in rows} == {
      "test_kernels.py::test_two_signatures"}
  assert all(float(r["cpu_s"]) > 0 for r in rows)
  assert "in 2 compiles" in out
  # From the cache: nothing compiled, and the first run's rows are gone.
  rows, out = _rows(tmp_path, cache)
  assert not rows
  assert "numba compiles" not in out
