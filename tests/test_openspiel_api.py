"""OpenSpiel's own tests of the CFR family (open_spiel/python/algorithms/
cfr_test.py, discounted_cfr_test.py), with mccfrb's CFRSolver in place of
OpenSpiel's classes: the calls (`evaluate_and_update_policy`,
`average_policy`, `current_policy`, `policy_for_key`) and the assertions
are theirs."""

import numpy as np
import pyspiel
import pytest
from open_spiel.python import policy
from open_spiel.python.algorithms import expected_game_score

import mccfrb

KUHN = pyspiel.load_game("kuhn_poker")
LEDUC = pyspiel.load_game("leduc_poker")


@pytest.mark.parametrize("variant, iterations", [
    ("cfr", 300), ("cfr+", 200), ("discounted", 300), ("pcfr+", 200),
    ("dcfr+", 200), ("pdcfr+", 200)])
def test_kuhn_value_is_the_nash_value(variant, iterations):
  """cfr_test.test_cfr_kuhn_poker, test_cfr_plus_kuhn_poker and
  discounted_cfr_test.test_discounted_cfr_on_kuhn (and the new variants)."""
  solver = mccfrb.CFRSolver(KUHN, variant=variant)
  for _ in range(iterations):
    solver.evaluate_and_update_policy()
  assert solver.num_iterations == iterations
  average_policy = solver.average_policy()
  values = expected_game_score.policy_value(KUHN.new_initial_state(),
                                            [average_policy] * 2)
  # 1/18 is the Nash value. See https://en.wikipedia.org/wiki/Kuhn_poker
  np.testing.assert_allclose(values, [-1 / 18, 1 / 18], atol=1e-3)


@pytest.mark.parametrize("variant", mccfrb.CFR_VARIANTS)
def test_policy_zero_is_uniform(variant):
  """cfr_test.test_policy_zero_is_uniform: Leduc has illegal actions."""
  uniform = policy.TabularPolicy(LEDUC)
  solver = mccfrb.CFRSolver(LEDUC, variant=variant)
  np.testing.assert_array_equal(uniform.action_probability_array,
                                solver.current_policy().action_probability_array)
  np.testing.assert_array_equal(uniform.action_probability_array,
                                solver.average_policy().action_probability_array)


def test_policy():
  """cfr_test.test_policy."""
  solver = mccfrb.CFRSolver(KUHN, variant="cfr+")
  tabular_policy = solver.current_policy()
  assert len(tabular_policy.state_lookup) == 12
  for info_state_str in tabular_policy.state_lookup.keys():
    np.testing.assert_equal(np.asarray([0.5, 0.5]),
                            tabular_policy.policy_for_key(info_state_str))


@pytest.mark.parametrize("game", [KUHN, LEDUC], ids=["kuhn", "leduc"])
@pytest.mark.parametrize("cpp_class, variant", [
    (pyspiel.CFRSolver, "cfr"), (pyspiel.CFRPlusSolver, "cfr+")])
def test_cpp_algorithms_identical(game, cpp_class, variant):
  """cfr_test.test_cpp_algorithms_identical_to_python_algorithm, with
  mccfrb's nash_conv for ours (equal to OpenSpiel's to rounding, not
  bit for bit: the sums run in another order)."""
  cpp_solver = cpp_class(game)
  ours = mccfrb.CFRSolver(game, variant=variant)
  for _ in range(5):
    cpp_solver.evaluate_and_update_policy()
    ours.evaluate_and_update_policy()
    assert mccfrb.nash_conv(game, ours.average_policy()) == pytest.approx(
        pyspiel.nash_conv(game, cpp_solver.average_policy()), abs=1e-12)
  assert mccfrb.nash_conv(game, ours.current_policy()) == pytest.approx(
      pyspiel.nash_conv(game, cpp_solver.current_policy()), abs=1e-12)


def test_discounted_cfr_runs_against_leduc():
  """discounted_cfr_test.test_discounted_cfr_runs_against_leduc."""
  solver = mccfrb.CFRSolver(LEDUC, variant="discounted")
  for _ in range(10):
    solver.evaluate_and_update_policy()
  solver.average_policy()
  assert solver.num_iterations == 10
