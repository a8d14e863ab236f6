"""A test that hangs fails instead of stalling the suite (tests/conftest.py's
watchdog), even spinning in a numba kernel that holds the GIL."""

import os
import pathlib
import shutil
import subprocess
import sys

SPINNING_TEST = '''
from numba import njit


@njit
def spin(n):
  x = 0
  while n > 0:
    x += 1
  return x


def test_spins_in_a_kernel():
  spin(1)
'''


def test_a_test_spinning_in_a_numba_kernel_fails_at_the_timeout(tmp_path):
  shutil.copy(pathlib.Path(__file__).with_name("conftest.py"), tmp_path)
  (tmp_path / "test_spin.py").write_text(SPINNING_TEST)
  env = dict(os.environ, MCCFRB_TEST_TIMEOUT_SECONDS="3")
  done = subprocess.run(
      [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
       str(tmp_path / "test_spin.py")], cwd=tmp_path, env=env,
      capture_output=True, text=True, timeout=120, check=False)
  assert done.returncode != 0
  assert "Timeout (0:00:03)!" in done.stdout + done.stderr
  assert "test_spins_in_a_kernel" in done.stdout + done.stderr
