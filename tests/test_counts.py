"""Counts given to the public API (mccfrb/counts.py, issue 22 item 2):
integers of any type, bounded, kept as Python ints."""

import json

import numpy as np
import pytest

import mccfrb
from mccfrb import counts
from mccfrb.experiment import sweep
from mccfrb.kernels import weighting
from mccfrb.solvers import base


@pytest.mark.parametrize("value", [5, np.int64(5), np.uint8(5), np.int32(5)])
def test_integers_of_any_type_become_python_ints(value):
  got = counts.check_count("n", value)
  assert got == 5 and type(got) is int


@pytest.mark.parametrize("value", [True, np.True_, 2.0, np.float64(2), "2",
                                   None, [2]])
def test_non_integers_and_bools_are_refused(value):
  with pytest.raises(ValueError, match=r"^n must be an integer in \[0, 2\*\*53"
                     r"\), got "):
    counts.check_count("n", value)


def test_bounds_are_named_in_the_message():
  with pytest.raises(ValueError, match=r"n must be an integer in \[3, 10\), "
                     "got 10"):
    counts.check_count("n", 10, 3, 10)
  with pytest.raises(ValueError, match="k must be a positive integer below "
                     r"2\*\*53, got 9007199254740992"):
    counts.check_count("k", 2**53, 1, what="a positive integer")
  with pytest.raises(ValueError, match="k must be a positive integer or None, "
                     "got 0"):
    counts.check_count("k", 0, 1, allow_none=True, what="a positive integer")
  assert counts.check_count("k", None, allow_none=True) is None
  assert counts.check_count("seed", 2**80, 0, None) == 2**80
  assert counts.limit_text(2**31) == "2**31" and counts.limit_text(1000) == (
      "1,000")


@pytest.fixture(name="solver")
def fixture_solver():
  return mccfrb.MCCFRbSolver("kuhn_poker", seed=0)


def test_run_takes_numpy_counts_and_save_works(solver, tmp_path):
  solver.run(np.int64(5))
  solver.run(np.uint16(3))
  assert solver.num_iterations == 8 and type(solver.num_iterations) is int
  solver.save(tmp_path / "s.npz")
  assert mccfrb.load_solver(tmp_path / "s.npz").num_iterations == 8


@pytest.mark.parametrize("count", [np.uint64(2**64 - 1), np.uint64(2**62),
                                   2**63, 2**53, -1, True, 2.5])
def test_run_refuses_counts_past_the_limit_and_changes_nothing(solver, count):
  with pytest.raises(ValueError, match=r"num_iterations must be an integer in "
                     r"\[0, 2\*\*53\)"):
    solver.run(count)
  assert solver.num_iterations == 0 and not solver._regrets.any()  # pylint: disable=protected-access


def test_the_total_of_iterations_stays_below_the_limit(solver):
  solver.run(3)
  solver._num_iterations = base.MAX_ITERATIONS - 4  # pylint: disable=protected-access
  with pytest.raises(ValueError, match=r"4 more after the 9,007,199,254,740,988"
                     r" already run would reach the limit of 2\*\*53"):
    solver.run(4)
  solver.run(3)
  assert solver.num_iterations == base.MAX_ITERATIONS - 1


def test_constructor_counts_are_python_ints_in_saved_options(tmp_path):
  solver = mccfrb.MCCFRbSolver("kuhn_poker", seed=np.int64(1),
                               threads=np.int64(2), batch=np.uint8(4))
  options = solver._options()  # pylint: disable=protected-access
  assert (type(options["threads"]), type(options["batch"])) == (int, int)
  solver.run(8)
  solver.save(tmp_path / "s.npz")
  assert mccfrb.load_solver(tmp_path / "s.npz")._options() == options  # pylint: disable=protected-access
  es = mccfrb.ExternalSamplingSolver("kuhn_poker", weighting="linear",
                                     linear_iterations=np.int64(10))
  assert type(es._options()["linear_iterations"]) is int  # pylint: disable=protected-access


@pytest.mark.parametrize("make,match", [
    (lambda: mccfrb.MCCFRbSolver("kuhn_poker", threads=True),
     "threads must be a positive integer, got True"),
    (lambda: mccfrb.MCCFRbSolver("kuhn_poker", threads=2, batch=2**60),
     r"batch must be a positive integer below 2\*\*53 or None"),
    (lambda: mccfrb.MCCFRbSolver("kuhn_poker", seed=np.float64(1)),
     "seed must be an integer >= 0 or None"),
    (lambda: mccfrb.compile_tree("kuhn_poker", max_nodes=2**40),
     r"max_nodes must be a positive integer below 2\*\*31"),
    (lambda: mccfrb.ExternalSamplingSolver("kuhn_poker", weighting="linear",
                                           linear_iterations=1.5),
     "linear_iterations must be a positive integer"),
    (lambda: mccfrb.ExternalSamplingSolver("kuhn_poker", prune_after=-3),
     "prune_after must be an integer in"),
    (lambda: mccfrb.regret_matching([[1.0]], [[1.0]], True),
     "iterations must be an integer >= 1"),
    (lambda: mccfrb.MCCFRbSolver("kuhn_poker").sample_estimates(2**52),
     "num_episodes=4,503,599,627,370,496 needs 33,554,432.0 GiB"),
    (lambda: mccfrb.MCCFRbSolver("kuhn_poker").sample_estimates(10, seed="x"),
     "seed must be an integer >= 0 or None, got 'x'"),
    (lambda: mccfrb.MCCFRbSolver("kuhn_poker").conditional_variance(2**52),
     "continuations=4,503,599,627,370,496 needs"),
    (lambda: sweep.log_checkpoints(np.int64(10), 1.0),
     "num_checkpoints must be an integer >= 1, got 1.0"),
])
def test_every_public_count_is_checked(make, match):
  with pytest.raises(ValueError, match=match):
    make()


def test_numpy_counts_of_a_sweep_are_json_ints():
  tasks = sweep.make_tasks(["kuhn_poker"], ["os"], np.arange(2),
                           np.int64(10), np.int64(2))
  assert json.loads(json.dumps([t._asdict() for t in tasks]))[1]["seed"] == 1
  with pytest.raises(ValueError, match="seed must be an integer >= 0"):
    sweep.make_tasks(["kuhn_poker"], ["os"], [1.5], 10, 2)


def test_optimistic_rm_plus_weights_do_not_overflow_past_3e9_iterations():
  """(T (T + 1) - c (c + 1)) / 2 in int64 wraps past T = 3.04e9. Each
  infoset last averaged at c < T = 4e9 is owed last + 1 + ... + T (exact
  in Python ints) times its owner's reach times sigma; at c = T nothing."""
  solver = mccfrb.MCCFRbSolver("kuhn_poker", regret="rm+",
                               averaging="optimistic", seed=0)
  solver.run(10)
  big_t = 4 * 10**9
  solver._num_iterations = big_t  # pylint: disable=protected-access
  behind = np.arange(len(solver._avg_last)) % 7  # pylint: disable=protected-access
  behind[-1] = 12345
  solver._avg_last[:] = big_t - behind  # pylint: disable=protected-access
  owed = [(big_t * (big_t + 1) - c * (c + 1)) // 2
          for c in map(int, solver._avg_last)]  # pylint: disable=protected-access
  assert all(w < 2**53 for w in owed)  # Exact in float64.
  weights = base.skipped_weight(big_t, solver._avg_last, True)  # pylint: disable=protected-access
  assert [int(w) for w in weights] == owed and (weights == owed).all()
  # The flushed average adds owed x owner's reach x sigma, row by row.
  tree = solver._tree  # pylint: disable=protected-access
  strategy = solver.current_policy_table()
  reach = np.empty((tree.num_nodes, tree.num_players + 1))
  mccfrb.kernels.exact.reach_probabilities(*tree.kernel_args()[:6], strategy,
                                           reach)
  owner = np.zeros(tree.num_infosets)
  decision = np.flatnonzero(tree.node_kind == mccfrb.games.tree.DECISION)
  owner[tree.node_infoset[decision]] = reach[decision,
                                             tree.node_player[decision]]
  expected = solver._avg + (np.array(owed, float) * owner)[:, None] * strategy  # pylint: disable=protected-access
  got = solver._cumulative_average()  # pylint: disable=protected-access
  np.testing.assert_allclose(got, expected, rtol=1e-15, atol=0)
  assert (got[behind == 0] == solver._avg[behind == 0]).all()  # pylint: disable=protected-access
  assert (got[behind > 0] > solver._avg[behind > 0]).any()  # pylint: disable=protected-access


def test_linear_skipped_weight_is_exact_and_does_not_wrap():
  for t, last in [(1, 0), (10, 3), (10**7, 17), (2**26, 2**26 - 1)]:
    assert weighting.linear_skipped(t, last) == (
        t * (t + 1) - last * (last + 1)) / 2
  assert weighting.linear_skipped(5 * 10**9, 5 * 10**9 - 1) == 5e9


@pytest.mark.parametrize("make", [
    lambda: mccfrb.MCCFRbSolver("kuhn_poker", regret="rm+",
                                averaging="optimistic", seed=0),
    lambda: mccfrb.PublicSamplingSolver("kuhn_poker", regret="rm+",
                                        averaging="optimistic", seed=0),
    lambda: mccfrb.MCCFRbSolver("kuhn_poker", regret="rm+",
                                averaging="optimistic", seed=0, batch=4)],
                         ids=["outcome", "public", "outcome_batches"])
def test_rm_plus_optimistic_kernels_do_not_wrap_past_3e9_iterations(make):
  """At t = 4e9 + 1 a row last averaged at 4e9 - 1 is owed 4e9 + (4e9 + 1)
  times its owner's reach times sigma: int64 t (t + 1) would wrap
  negative. The same solver at t = 11, last 9, is owed 10 + 11 for the
  same sample and reach: every row's increment scales by the exact ratio
  of the owed weights (Python ints)."""
  def added_at(t):
    solver = make()
    solver.run(8, progress=False)
    solver._num_iterations = t - 1  # pylint: disable=protected-access
    solver._avg_last[:] = t - 2  # pylint: disable=protected-access
    before = solver._avg.copy()  # pylint: disable=protected-access
    solver.run(1, progress=False)
    return solver._avg - before  # pylint: disable=protected-access

  owed = lambda t: (t * (t + 1) - (t - 2) * (t - 1)) // 2
  big_t, small_t = 4 * 10**9 + 1, 11
  assert (owed(big_t), owed(small_t)) == (8 * 10**9 + 1, 21)
  big, small = added_at(big_t), added_at(small_t)
  assert small.min() >= 0.0 and small.max() > 0.0
  np.testing.assert_array_equal(big > 0, small > 0)
  np.testing.assert_allclose(big, small * (owed(big_t) / owed(small_t)),
                             rtol=1e-12, atol=0)
