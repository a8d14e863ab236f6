"""A test that hangs fails instead of stalling the suite (tests/conftest.py's
watchdogs), even spinning in a numba kernel that holds the GIL, and a test
that waits says where, at the end of its output."""

import os
import pathlib
import re
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


WAITING_TEST = '''
import threading


def test_waits_on_a_lock():
  lock = threading.Lock()
  lock.acquire()
  lock.acquire()  # Waits here.
'''


def _run_hanging(tmp_path, name, text):
  """The pytest run of the test file `name` holding `text`, with a 3-s
  timeout and faulthandler's watchdog 2 s after it."""
  shutil.copy(pathlib.Path(__file__).with_name("conftest.py"), tmp_path)
  (tmp_path / name).write_text(text)
  env = dict(os.environ, MCCFRB_TEST_TIMEOUT_SECONDS="3",
             MCCFRB_TEST_HANG_BACKSTOP_SECONDS="2")
  return subprocess.run(
      [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
       str(tmp_path / name)], cwd=tmp_path, env=env,
      capture_output=True, text=True, timeout=120, check=False)


def test_a_test_spinning_in_a_numba_kernel_fails_at_the_timeout(tmp_path):
  done = _run_hanging(tmp_path, "test_spin.py", SPINNING_TEST)
  assert done.returncode != 0
  # The Python timer cannot run while the kernel holds the GIL:
  # faulthandler's watchdog ends it, 2 s later.
  assert "Timeout (0:00:05)!" in done.stdout + done.stderr
  assert "test_spins_in_a_kernel" in done.stdout + done.stderr


def test_a_waiting_test_ends_its_output_with_where_it_waits(tmp_path):
  done = _run_hanging(tmp_path, "test_wait.py", WAITING_TEST)
  assert done.returncode == 1
  assert "Timeout (0:00" not in done.stderr  # No faulthandler dump.
  tail = done.stderr.rstrip("\n").splitlines()[-3:]
  assert re.fullmatch(r'  File ".*test_wait\.py", line 8, in '
                      "test_waits_on_a_lock", tail[0]), tail
  assert tail[1:] == [
      "    lock.acquire()  # Waits here.",
      "Timeout: test_wait.py::test_waits_on_a_lock ran past 3 s: it waits "
      "in the call above"]
