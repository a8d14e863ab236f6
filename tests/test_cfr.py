"""Exact CFR family against OpenSpiel; regret matching's worked example."""

import numpy as np
import pyspiel
import pytest
from open_spiel.python.algorithms import cfr as os_cfr
from open_spiel.python.algorithms import discounted_cfr

import mccfrb

REFERENCES = {
    "cfr": (pyspiel.CFRSolver, os_cfr.CFRSolver),
    "cfr+": (pyspiel.CFRPlusSolver, os_cfr.CFRPlusSolver),
    "linear": (None, discounted_cfr.LCFRSolver),
    "discounted": (None, discounted_cfr.DCFRSolver),
}


def _raw_tables(tree, python_solver):
  regrets, avg = np.zeros((2, tree.num_infosets, tree.max_actions))
  index = tree.infoset_index()
  for key, node in python_solver._info_state_nodes.items():  # pylint: disable=protected-access
    i = index[key]
    actions = list(tree.infoset_actions[i, :tree.infoset_num_actions[i]])
    for a, r in node.cumulative_regret.items():
      regrets[i, actions.index(a)] = r
    for a, s in node.cumulative_policy.items():
      avg[i, actions.index(a)] = s
  return regrets, avg


@pytest.mark.parametrize("game_name", ["kuhn_poker", "leduc_poker"])
@pytest.mark.parametrize("variant", sorted(REFERENCES))
def test_cfr_family_equals_openspiel(game_name, variant):
  game = pyspiel.load_game(game_name)
  cpp_class, python_class = REFERENCES[variant]
  python_solver = python_class(game)
  cpp_solver = cpp_class(game) if cpp_class else None
  ours = mccfrb.CFRSolver(game, variant=variant)
  tree, done = ours.tree, 0
  for checkpoint in (1, 10, 100):
    for _ in range(checkpoint - done):
      python_solver.evaluate_and_update_policy()
      if cpp_solver:
        cpp_solver.evaluate_and_update_policy()
    ours.run(checkpoint - done)
    done = checkpoint
    regrets, avg = _raw_tables(tree, python_solver)
    np.testing.assert_allclose(ours._regrets, regrets, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(ours._avg, avg, rtol=1e-9, atol=1e-9)
    expected = pyspiel.exploitability(
        game, mccfrb.to_pyspiel_policy(tree, mccfrb.table_from_policy(
            tree, python_solver.average_policy())))
    assert mccfrb.exploitability(tree, ours.average_policy_table()) == (
        pytest.approx(expected, abs=1e-9))
    if cpp_solver:
      average = getattr(cpp_solver, "tabular_average_policy",
                        cpp_solver.average_policy)()
      np.testing.assert_allclose(
          ours.average_policy_table(),
          mccfrb.table_from_policy(tree, average, game=game), atol=1e-9)
      current = getattr(cpp_solver, "tabular_current_policy",
                        cpp_solver.current_policy)()
      np.testing.assert_allclose(
          ours.current_policy_table(),
          mccfrb.table_from_policy(tree, current, game=game), atol=1e-9)
  assert ours.num_iterations == 100


def test_cfr_plus_converges_and_saves(tmp_path):
  solver = mccfrb.CFRSolver("leduc_poker", variant="cfr+")
  solver.run(200)
  assert mccfrb.exploitability(solver.tree, solver.average_policy_table()) < 0.01
  solver.save(tmp_path / "cfr.npz")
  loaded = mccfrb.CFRSolver.load(tmp_path / "cfr.npz", "leduc_poker")
  solver.run(5)
  loaded.run(5)
  np.testing.assert_array_equal(loaded._regrets, solver._regrets)


def test_cfr_bad_options():
  with pytest.raises(ValueError, match=r"Unknown variant 'cfr\+\+'"):
    mccfrb.CFRSolver("kuhn_poker", variant="cfr++")
  with pytest.raises(ValueError, match="discounted' only"):
    mccfrb.CFRSolver("kuhn_poker", variant="cfr", alpha=2.0)


RPS_LIKE = ([[0, -1, 1], [1, 0, -2], [-2, 3, 0]],
            [[0, 3, -2], [-2, 0, 1], [1, -1, 0]])


def test_regret_matching_worked_example():
  """ALGORITHMS.md, seed 004: regret matching on the 3x3 game."""
  result = mccfrb.regret_matching(*RPS_LIKE, iterations=2)
  (rx, ry) = result.regrets
  np.testing.assert_allclose(rx[0], [0, -1 / 3, 1 / 3], atol=1e-12)
  np.testing.assert_allclose(ry[0], [-1 / 3, 2 / 3, -1 / 3], atol=1e-12)
  xs, ys = result.strategies
  np.testing.assert_allclose(xs[1], [0, 0, 1], atol=1e-12)  # sigma_1^2 = S
  np.testing.assert_allclose(ys[1], [0, 1, 0], atol=1e-12)  # sigma_2^2 = P
  np.testing.assert_allclose(rx[1], [-4, -10 / 3, 1 / 3], atol=1e-12)
  np.testing.assert_allclose(ry[1], [5 / 3, 2 / 3, 2 / 3], atol=1e-12)


def test_regret_matching_plus_and_matrix_games():
  plus = mccfrb.regret_matching(*RPS_LIKE, iterations=2, plus=True)
  np.testing.assert_allclose(plus.regrets[0][0], [0, 0, 1 / 3], atol=1e-12)
  assert (plus.regrets[0] >= 0).all() and (plus.regrets[1] >= 0).all()
  game = pyspiel.load_matrix_game("matrix_rps")
  result = mccfrb.regret_matching(game, iterations=20_000, plus=True)
  np.testing.assert_allclose(result.average[0], [1 / 3] * 3, atol=0.01)
  with pytest.raises(ValueError, match="iterations"):
    mccfrb.regret_matching(*RPS_LIKE, iterations=0)
