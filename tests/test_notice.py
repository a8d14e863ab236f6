"""The one-line notice when kernels compile for the first time."""

import os
import subprocess
import sys

from mccfrb.kernels import notice

SCRIPT = """
import numpy as np
import mccfrb
from mccfrb.games.engines import common
common.hash_words(np.arange(3), 3, 7)  # an mccfrb kernel: compiles, or loads
"""


def _run(cache_dir):
  env = dict(os.environ, NUMBA_CACHE_DIR=str(cache_dir))
  done = subprocess.run([sys.executable, "-c", SCRIPT], env=env,
                        capture_output=True, text=True, timeout=300,
                        check=True)
  return done.stderr


def test_the_notice_shows_once_when_compiling_and_never_from_the_cache(
    tmp_path):
  first = _run(tmp_path)
  assert first.count(notice.NOTICE) == 1, first
  second = _run(tmp_path)  # The same cache folder: loaded, not compiled.
  assert notice.NOTICE not in second, second
