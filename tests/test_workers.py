"""The sweep's worker processes (mccfrb/experiment/workers.py): results,
errors, a worker that dies, and an interrupt that must not wait."""

import os
import time

import pytest

from mccfrb.experiment import workers


@pytest.fixture(name="started")
def fixture_started(monkeypatch):
  """The workers each `workers.run` of the test started."""
  started = []
  start = workers.start

  def recording(function, jobs):
    started.extend(start(function, jobs))
    return started[-jobs:]
  monkeypatch.setattr(workers, "start", recording)
  return started


def test_every_item_runs_once_and_the_workers_end(started):
  done = {}
  items = [(i, -i) for i in range(7)]
  workers.run(abs, items, 2, done.__setitem__)
  assert done == {i: i for i in range(7)}
  assert len(started) == 2
  assert not any(w.process.is_alive() for w in started)
  assert [w.process.exitcode for w in started] == [0, 0]


def test_no_more_workers_than_items(started):
  done = {}
  workers.run(abs, [(4, -3)], 2, done.__setitem__)
  assert done == {4: 3} and len(started) == 1


def test_an_exception_in_a_worker_is_raised_with_its_traceback(started):
  with pytest.raises(ValueError, match="invalid literal") as info:
    workers.run(int, [(0, "1"), (1, "x")], 2, lambda i, r: None)
  assert isinstance(info.value.__cause__, workers.RemoteTraceback)
  assert "ValueError" in str(info.value.__cause__)
  assert not any(w.process.is_alive() for w in started)


def test_a_worker_that_dies_ends_the_run_naming_its_item(started):
  """multiprocessing.Pool waits forever for a dead worker's result."""
  with pytest.raises(workers.WorkerDied,
                     match=r"^a worker process ended \(exit code 3\) while "
                     r"running item 5, without its result$") as info:
    workers.run(os._exit, [(5, 3)], 2, lambda i, r: None)  # pylint: disable=protected-access
  assert (info.value.index, info.value.exitcode) == (5, 3)
  assert not any(w.process.is_alive() for w in started)


def test_a_killed_worker_is_named_by_its_signal():
  assert workers.ended(-9) == "was killed by SIGKILL"
  assert workers.ended(1) == "ended (exit code 1)"


def test_an_interrupt_kills_the_workers_without_waiting(started):
  """Ctrl-C (a KeyboardInterrupt, here raised by the callback after the
  first result) kills a worker in a 600-second task at once."""
  def interrupt(index, result):
    raise KeyboardInterrupt
  tic = time.monotonic()
  with pytest.raises(KeyboardInterrupt):
    workers.run(time.sleep, [(0, 0.0), (1, 600.0)], 2, interrupt)
  assert time.monotonic() - tic < 60
  assert not any(w.process.is_alive() for w in started)
  assert sorted(w.process.exitcode for w in started) == [-9, -9]
