"""numba's cache entries are saved and loaded under a file lock
(mccfrb/numba_cache.py, `lock_cache_files`): processes sharing a cache
folder never read an index entry whose data file another process is
still writing."""

import fcntl

from numba.core import caching
import pytest

from experiments import cache_race
import mccfrb  # pylint: disable=unused-import  # Installs the lock.
from mccfrb import numba_cache


def lock_is_held(index_path, mode):
  """Whether another open file description is refused lock `mode`."""
  with open(index_path + ".lock", "a+b") as other:
    try:
      fcntl.flock(other.fileno(), mode | fcntl.LOCK_NB)
    except BlockingIOError:
      return True
    fcntl.flock(other.fileno(), fcntl.LOCK_UN)
    return False


def test_importing_mccfrb_installs_the_lock_once():
  cls = caching.IndexDataCacheFile
  assert getattr(cls, "_mccfrb_locked", False)
  save, load = cls.save, cls.load
  assert numba_cache.lock_cache_files()
  assert (cls.save, cls.load) == (save, load)  # Not wrapped twice.


@pytest.fixture
def cache_file(tmp_path):
  return caching.IndexDataCacheFile(str(tmp_path), "f-1.py311", (1.0, 2))


def test_an_entry_is_saved_under_an_exclusive_lock(cache_file, monkeypatch):
  seen = []
  write = caching.IndexDataCacheFile._save_data  # pylint: disable=protected-access

  def save_data(self, name, data):
    # Between the index and the data: nobody may read or write the entry.
    seen.append(lock_is_held(self._index_path, fcntl.LOCK_SH))  # pylint: disable=protected-access
    write(self, name, data)

  monkeypatch.setattr(caching.IndexDataCacheFile, "_save_data", save_data)
  cache_file.save(("sig",), {"code": 1})
  assert seen == [True]
  assert not lock_is_held(cache_file._index_path, fcntl.LOCK_EX)  # pylint: disable=protected-access
  assert cache_file.load(("sig",)) == {"code": 1}


def test_an_entry_is_loaded_under_a_shared_lock(cache_file, monkeypatch):
  cache_file.save(("sig",), {"code": 2})
  seen = []
  read = caching.IndexDataCacheFile._load_data  # pylint: disable=protected-access

  def load_data(self, name):
    path = self._index_path  # pylint: disable=protected-access
    # Writers wait; other readers do not.
    seen.append((lock_is_held(path, fcntl.LOCK_EX),
                 lock_is_held(path, fcntl.LOCK_SH)))
    return read(self, name)

  monkeypatch.setattr(caching.IndexDataCacheFile, "_load_data", load_data)
  assert cache_file.load(("sig",)) == {"code": 2}
  assert seen == [(True, False)]


def test_two_processes_saving_one_index_never_load_another_entry(tmp_path):
  """Without the lock, numba's own cache files gave another entry's data
  in 45 to 108 loads of this exchange in each of five runs."""
  loads, wrong = cache_race.exchange(str(tmp_path), 1000, lock=True)
  assert loads > 100  # The two processes did overlap.
  assert wrong == 0
