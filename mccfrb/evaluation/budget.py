"""Training responders for a budget of walks or seconds (mccfrb/evaluation/bound.py)."""

import time

from mccfrb.solvers import running

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
