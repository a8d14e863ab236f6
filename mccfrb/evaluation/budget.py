"""Training and scoring responders for a budget of walks or seconds, one
after the other or side by side (mccfrb/evaluation/bound.py).

A route (the compiled tree, an engine, OpenSpiel states) gives one
trainer and one scorer per player:

- a trainer's `step(k)` runs k more training walks of its `player` and
  `finish()` returns the trained responder (numba compilation happens
  when it is made, not in the timed walks);
- a scorer's `play(lo, hi)` fills `returns[lo:hi]` with its `player`'s
  returns on fresh episodes, `chunk` at a time.

With a thread pool the two players' walks and episodes run side by side,
chunk by chunk (each chunk k walks of each player, the kernels releasing
the GIL), from one loop in the calling thread, which keeps the progress
bar and Ctrl-C. A player's walks draw from its own generator, so the two
ways give the same responders and the same scores for the same
`iterations`.
"""

import importlib
import time

from mccfrb.solvers import running

# The module (mccfrb.evaluation.head_to_head is the function of that name).
h2h = importlib.import_module("mccfrb.evaluation.head_to_head")

# A training chunk is doubled while it takes under this.
CHUNK_SECONDS = 0.05


def budget_loop(step, budget, iterations, progress, desc):
  """Calls `step(k)` (k walks) in growing chunks until `iterations` walks
  or `budget` seconds; returns (walks, seconds). A chunk is doubled while
  it takes under CHUNK_SECONDS, and cut so that the last one does not
  overrun the budget by much; Ctrl-C stops it between chunks."""
  done, chunk, elapsed = 0, 1, 0.0  # One walk first: on states a walk can take seconds.
  total = iterations if iterations is not None else budget
  with running.deferred_interrupts() as request, running.RunProgress(
      total, progress, desc=desc,
      unit="walk" if iterations is not None else "s") as bar:
    started = time.perf_counter()
    while True:
      k = chunk if iterations is None else min(chunk, iterations - done)
      if k <= 0:
        break
      t0 = time.perf_counter()
      step(k)
      took = time.perf_counter() - t0
      done += k
      elapsed = time.perf_counter() - started
      if took < CHUNK_SECONDS:
        chunk *= 2
      if iterations is None:
        bar.update(min(round(elapsed, 1), budget))
        if elapsed >= budget:
          break
        # The next chunk must not overrun the budget by much.
        rate = done / max(elapsed, 1e-9)
        chunk = max(1, min(chunk, int(rate * (budget - elapsed)) + 1))
      else:
        bar.update(done)
      if request.pending:
        raise KeyboardInterrupt(f"stopped after {done:,} training walks.")
  return done, elapsed


def each(items, f, pool):
  """[f(x) for x in items]: the first in this thread and the others on
  `pool`'s threads, side by side, when there is a pool."""
  if pool is None or len(items) < 2:
    return [f(x) for x in items]
  later = [pool.submit(f, x) for x in items[1:]]
  return [f(items[0])] + [job.result() for job in later]


def train_all(trainers, budget, iterations, progress, pool):
  """[(responder, walks, seconds)] per player: each trainer in turn for
  `budget` seconds or `iterations` walks, or with `pool` all of them side
  by side in one loop (the same walks each; seconds: the loop's)."""
  if pool is None:
    return [_train_together([t], budget, iterations, progress,
                            f"best response, player {t.player}", None)[0]
            for t in trainers]
  return _train_together(trainers, budget, iterations, progress,
                         "best responses", pool)


def _train_together(trainers, budget, iterations, progress, desc, pool):
  started = time.perf_counter()
  walks, _ = budget_loop(lambda k: each(trainers, lambda t: t.step(k), pool),
                         budget, iterations, progress, desc)
  responders = each(trainers, lambda t: t.finish(), pool)
  seconds = time.perf_counter() - started
  return [(r, walks, seconds) for r in responders]


def score_all(scorers, episodes, progress, pool):
  """[(mean, stderr)] of each scorer's `episodes` returns: in turn, or
  side by side with `pool`."""
  if pool is None:
    return [_score_together([s], episodes, progress,
                            f"scoring player {s.player}", None)[0]
            for s in scorers]
  return _score_together(scorers, episodes, progress, "scoring", pool)


def _score_together(scorers, episodes, progress, desc, pool):
  chunk = scorers[0].chunk
  with running.RunProgress(episodes, progress, desc=desc, unit="ep") as bar:
    for lo in range(0, episodes, chunk):
      hi = min(lo + chunk, episodes)
      each(scorers, lambda s: s.play(lo, hi), pool)
      bar.update(hi)
  return [h2h._mean_and_stderr(s.returns)  # pylint: disable=protected-access
          for s in scorers]
