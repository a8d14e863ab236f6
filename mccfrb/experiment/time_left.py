"""How long a sweep has left, from the runs that finished.

The runs of a sweep differ a lot in cost (on goofspiel 4, OpenSpiel's
Python outcome sampling takes a few hundred times mccfrb's seconds for the
same iterations), so the time left is not the mean run times the runs
left. `TimeLeft` estimates each run left from the finished runs of the
same game and algorithm (their training and evaluation; the numba
compile of a first run is counted once per worker, not for every run),
and schedules the runs left on the workers in the order they are handed
out. `dispatch_order` hands out the first seed of every game and
algorithm before the second seeds, so that every kind of run is measured
early (and, on a cold numba cache, the workers compile different kernels
at once instead of the same ones).
"""

import heapq


def dispatch_order(items):
  """`items` ((index, task) pairs, in the sweep's order) reordered: every
  task of a seed's first appearance before those of the next seed."""
  seeds = {}
  for _, task in items:
    seeds.setdefault(task.seed, len(seeds))
  return sorted(items, key=lambda item: (seeds[item[1].seed], item[0]))


class TimeLeft:
  """Estimates the seconds a sweep has left.

  Args:
    items: the (index, task) pairs to run, in the order they are handed
      out.
    jobs: how many run at once.
  """

  def __init__(self, items, jobs):
    self._pending = {index: task for index, task in items}
    self._order = [index for index, _ in items]
    self._jobs = max(1, int(jobs))
    self._work = {}   # (game, algorithm) -> [seconds past the setup]
    self._setup = {}  # (game, algorithm) -> [setup seconds]

  def finished(self, index, seconds, setup_seconds):
    """Records that run `index` took `seconds`, `setup_seconds` of them
    before training (building the solver and, first in a worker, compiling
    its kernels)."""
    task = self._pending.pop(index)
    key = (task.game, task.algorithm)
    self._work.setdefault(key, []).append(max(seconds - setup_seconds, 0.0))
    self._setup.setdefault(key, []).append(setup_seconds)

  def _cost(self, task):
    """The seconds a run should take: like the finished runs of its game
    and algorithm (with their smallest setup, a compile paid already),
    else the mean of all finished runs; None before any finished."""
    key = (task.game, task.algorithm)
    if key in self._work:
      work = self._work[key]
      return sum(work) / len(work) + min(self._setup[key])
    if not self._work:
      return None
    costs = [sum(w) / len(w) + min(self._setup[k])
             for k, w in self._work.items()]
    return sum(costs) / len(costs)

  def seconds(self):
    """The estimate: the runs left, in hand-out order, each on the worker
    that frees first (None before a run finished)."""
    left = [self._pending[i] for i in self._order if i in self._pending]
    if not left:
      return 0.0
    costs = [self._cost(task) for task in left]
    if costs[0] is None:
      return None
    workers = [0.0] * min(self._jobs, len(left))
    for cost in costs:
      heapq.heapreplace(workers, workers[0] + cost)
    return max(workers)
