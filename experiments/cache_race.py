r"""Two processes sharing one numba cache index: how often a load returns
another entry's data, with and without mccfrb's lock
(mccfrb/numba_cache.py; docs/pages/reliability.md, "Processes sharing
one kernel cache").

Each of two processes saves --entries entries of one function's index
with numba's own `IndexDataCacheFile` (20 kB of data each, no compiling)
and after each save loads one of the other process's recent entries,
checking that the data is that entry's. With --lock the processes
import mccfrb first, which installs the lock; with --nolock they use
numba's cache files as numba ships them.

  python experiments/cache_race.py --nolock --entries=2000
  python experiments/cache_race.py --lock --entries=2000
"""

import multiprocessing
import random
import tempfile
import time

from absl import app
from absl import flags

_ENTRIES = flags.DEFINE_integer("entries", 2000, "Entries each process saves.")
_LOCK = flags.DEFINE_bool("lock", True, "Import mccfrb (its lock) first.")


def _save_and_load(folder, worker, count, lock, out):
  """Worker `worker` (0 or 1): puts (loads, loads of another entry)."""
  if lock:
    import mccfrb  # pylint: disable=import-outside-toplevel,unused-import
  from numba.core import caching  # pylint: disable=import-outside-toplevel
  loads = wrong = 0
  for i in range(count):
    entries = caching.IndexDataCacheFile(folder, "f-1.py311", (1.0, 2))
    entries.save((f"w{worker}-{i}",), {"key": f"w{worker}-{i}",
                                       "pad": b"x" * 20000})
    other = f"w{1 - worker}-{max(i - random.randint(0, 3), 0)}"
    got = entries.load((other,))
    if got is not None:
      loads += 1
      wrong += got["key"] != other
  out.put((loads, wrong))


def exchange(folder, count, lock):
  """(loads, wrong loads) of the two processes' exchange in `folder`."""
  context = multiprocessing.get_context("fork")
  out = context.Queue()
  workers = [context.Process(target=_save_and_load,
                             args=(folder, w, count, lock, out))
             for w in (0, 1)]
  for p in workers:
    p.start()
  results = [out.get(timeout=600) for _ in workers]
  for p in workers:
    p.join(timeout=60)
  return (sum(loads for loads, _ in results),
          sum(wrong for _, wrong in results))


def main(argv):
  if len(argv) > 1:
    raise app.UsageError("Too many command-line arguments.")
  start = time.perf_counter()
  with tempfile.TemporaryDirectory() as folder:
    loads, wrong = exchange(folder, _ENTRIES.value, _LOCK.value)
  print(f"{'lock' if _LOCK.value else 'no lock'}: {loads} loads, {wrong} "
        f"returned another entry's data, {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
  app.run(main)
