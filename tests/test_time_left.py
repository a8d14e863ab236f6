"""A sweep's estimate of its time left (mccfrb/experiment/time_left.py)."""

import pytest

from mccfrb.experiment import sweep
from mccfrb.experiment import time_left


def items():
  """(index, task): algorithms "a" and "b" on one game, seeds 0-2, in the
  sweep's order (a0 a1 a2 b0 b1 b2)."""
  return list(enumerate(sweep.make_tasks(["g"], ["a", "b"], [0, 1, 2], 10,
                                         2)))


def test_the_first_seed_of_every_run_is_handed_out_first():
  order = time_left.dispatch_order(items())
  assert [i for i, _ in order] == [0, 3, 1, 4, 2, 5]
  assert [(t.algorithm, t.seed) for _, t in order][:2] == [("a", 0),
                                                          ("b", 0)]


def test_runs_left_are_costed_by_their_own_kind_and_scheduled_on_the_jobs():
  left = time_left.TimeLeft(time_left.dispatch_order(items()), jobs=2)
  assert left.seconds() is None  # Nothing finished: no estimate.
  left.finished(0, 10.0, 4.0)  # a: 6 s of work after a 4 s setup.
  # b not measured yet: the mean of the finished runs (10 s) for each.
  assert left.seconds() == pytest.approx(30.0)
  left.finished(3, 1.0, 0.5)
  # a1 10, b1 1, a2 10, b2 1 on two workers: (10 | 1 + 10 | ...) = 11.
  assert left.seconds() == pytest.approx(11.0)
  # A second run of a without the first one's compile: 6 s of work after
  # 0.1 s, so a run of a costs 6.1 s from now on.
  left.finished(1, 6.1, 0.1)
  assert left.seconds() == pytest.approx(6.1)
  for index in (4, 2, 5):
    left.finished(index, 1.0, 0.0)
  assert left.seconds() == 0.0


def test_one_job_adds_the_runs_up():
  left = time_left.TimeLeft(items(), jobs=1)
  left.finished(0, 3.0, 1.0)
  left.finished(3, 2.0, 0.0)
  # a1, a2 at 3 s each; b1, b2 at 2 s each.
  assert left.seconds() == pytest.approx(10.0)
