"""Importing mccfrb where numba cannot cache (mccfrb/numba_cache.py, issue
22 item 6): one warning naming NUMBA_CACHE_DIR, then kernels run."""

import grp
import os
import pathlib
import pwd
import shutil
import subprocess
import sys
import tempfile

import pytest

import mccfrb
from tests.conftest import skip_unless_ci

PACKAGE = pathlib.Path(mccfrb.__file__).parent

USE_A_KERNEL = """
import warnings
warnings.simplefilter("always")
import numpy as np
import mccfrb
from mccfrb.kernels import exact
out = np.zeros((1, 2))
exact.normalize_rows(np.array([[1.0, 3.0]]), np.array([2], np.int8), out)
print(out.tolist())
"""

NUMBA_ALONE = """
import sys
sys.path.insert(0, sys.argv[1])
import probe
"""


def _as_nobody():
  """The command prefix running a program as the user nobody (group
  nogroup, no supplementary groups), or None where that cannot be done."""
  try:
    pwd.getpwnam("nobody")
    grp.getgrnam("nogroup")
  except KeyError:
    return None
  if shutil.which("setpriv") is None:
    return None
  return ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]


@pytest.fixture(name="read_only")
def fixture_read_only():
  """run(code, *args): `code` run by Python with a read-only home and a
  read-only copy of mccfrb, NUMBA_CACHE_DIR unset; returns the completed
  process."""
  root = pathlib.Path(tempfile.mkdtemp(prefix="mccfrb-ro-"))
  os.chmod(root, 0o755)
  ro = root / "ro"
  shutil.copytree(PACKAGE, ro / "site" / "mccfrb",
                  ignore=shutil.ignore_patterns("__pycache__"))
  (ro / "home").mkdir()
  (ro / "site" / "probe.py").write_text(
      "import numba\n@numba.njit(cache=True)\ndef f():\n  return 1\n")
  env = {k: v for k, v in os.environ.items()
         if k not in ("NUMBA_CACHE_DIR", "XDG_CACHE_HOME")}
  env.update(HOME=str(ro / "home"), PYTHONPATH=str(ro / "site"),
             PYTHONDONTWRITEBYTECODE="1", TMPDIR=str(root))
  for folder, _, _ in os.walk(ro):
    os.chmod(folder, 0o555)
  prefix = []
  if os.geteuid() == 0:
    # Root writes anywhere: run Python as the unprivileged user nobody, for
    # whom the copy (owned by root, mode 555) is read-only; where setpriv
    # or nobody is missing, mount the copy read-only (unshare -m).
    prefix = _as_nobody() or ["unshare", "-m", "sh", "-c",
                              'mount --bind -o ro "$0" "$0" && exec "$@"',
                              str(ro)]

  def run(code, *args):
    return subprocess.run([*prefix, sys.executable, "-c", code, *args],
                          env=env, cwd=root, capture_output=True, text=True,
                          timeout=600)

  check = run("import pathlib, sys; pathlib.Path(sys.argv[1]).write_text('x')",
              str(ro / "home" / "x"))
  if check.returncode == 0 or "Read-only" not in check.stderr and (
      "Permission" not in check.stderr):
    # CI runs as root with setpriv: never skipped there.
    skip_unless_ci(
        f"cannot make a read-only folder here: {check.stderr[-200:]}")
  yield run
  for folder, _, _ in os.walk(root):
    os.chmod(folder, 0o755)
  shutil.rmtree(root, ignore_errors=True)


def test_numba_alone_fails_there(read_only):
  """The setting reproduces the issue: numba refuses to cache."""
  done = read_only(NUMBA_ALONE, str(pathlib.Path("ro") / "site"))
  assert done.returncode != 0
  assert "no locator available" in done.stderr


def test_mccfrb_imports_with_one_warning_and_its_kernels_run(read_only):
  done = read_only(USE_A_KERNEL)
  assert done.returncode == 0, done.stderr
  assert done.stdout.splitlines()[-1] == "[[0.25, 0.75]]"
  warnings = [l for l in done.stderr.splitlines() if "RuntimeWarning" in l]
  assert len(warnings) == 1, done.stderr
  assert "numba cannot cache its kernels (NUMBA_CACHE_DIR is not set" in (
      warnings[0])
  assert "set NUMBA_CACHE_DIR to a writable folder" in warnings[0]


def test_no_warning_where_numba_can_cache(tmp_path):
  env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path))
  done = subprocess.run([sys.executable, "-W", "error::RuntimeWarning", "-c",
                         "import mccfrb"], env=env, capture_output=True,
                        text=True, timeout=600)
  assert done.returncode == 0, done.stderr
  assert "NUMBA_CACHE_DIR" not in done.stderr
