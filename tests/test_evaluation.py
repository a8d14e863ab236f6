"""Exact evaluation against OpenSpiel and closed-form values."""

import numba
import numpy as np
import pyspiel
import pytest
from open_spiel.python import policy as os_policy
from open_spiel.python.algorithms import best_response as os_best_response

import mccfrb
from mccfrb import reference
from mccfrb.kernels import exact
from tests import test_cfr


def random_table(tree, seed):
  rng = np.random.default_rng(seed)
  legal = np.arange(tree.max_actions)[None, :] < tree.infoset_num_actions[:, None]
  table = np.where(legal, rng.random(legal.shape) ** 3, 0.0)
  return table / table.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("seed", [None, 0, 1])
def test_exploitability_equals_pyspiel(game_name, seed):
  game = mccfrb.load_game(game_name)
  tree = mccfrb.compile_tree(game)
  table = mccfrb.uniform_table(tree) if seed is None else random_table(tree, seed)
  expected = pyspiel.exploitability(game, mccfrb.to_pyspiel_policy(tree, table))
  assert mccfrb.exploitability(tree, table) == pytest.approx(expected, abs=1e-9)
  expected_nc = pyspiel.nash_conv(game, mccfrb.to_pyspiel_dict(tree, table))
  assert mccfrb.nash_conv(game, table) == pytest.approx(expected_nc, abs=1e-9)


def kuhn_equilibrium():
  """A Kuhn poker equilibrium (alpha = 0); its value for player 0 is -1/18."""
  bet = {"0": 0, "1": 0, "2": 0, "0pb": 0, "1pb": 1 / 3, "2pb": 1,
         "0p": 1 / 3, "0b": 0, "1p": 0, "1b": 1 / 3, "2p": 1, "2b": 1}
  return {k: [(0, 1 - p), (1, p)] for k, p in bet.items()}


def test_kuhn_equilibrium_value_and_zero_exploitability():
  tree = mccfrb.compile_tree("kuhn_poker")
  table = mccfrb.table_from_policy(tree, kuhn_equilibrium())
  assert mccfrb.expected_value(tree, table) == pytest.approx(-1 / 18, abs=1e-12)
  assert mccfrb.exploitability(tree, table) == pytest.approx(0.0, abs=1e-12)
  np.testing.assert_allclose(mccfrb.best_response_values(tree, table),
                             [-1 / 18, 1 / 18], atol=1e-12)


def test_best_response_values_match_openspiel_python():
  game = mccfrb.load_game("leduc_poker")
  tree = mccfrb.compile_tree(game)
  table = random_table(tree, 7)
  tabular = mccfrb.to_tabular_policy(game, tree, table)
  for player in (0, 1):
    expected = os_best_response.BestResponsePolicy(game, player, tabular).value(
        game.new_initial_state())
    assert mccfrb.best_response_values(tree, table)[player] == pytest.approx(
        expected, abs=1e-9)


def test_counterfactual_values_match_a_pyspiel_recursion():
  game = mccfrb.load_game("kuhn_poker")
  tree = mccfrb.compile_tree(game)
  table = random_table(tree, 3)
  keys = tree.infoset_index()
  strategy_of = lambda key, n: table[keys[key], :n]
  expected = np.zeros_like(table)

  def walk(state, reach):  # reach = [pi_0, pi_1, pi_chance]
    if state.is_terminal():
      return
    if state.is_chance_node():
      for a, p in state.chance_outcomes():
        walk(state.child(a), [reach[0], reach[1], reach[2] * p])
      return
    player = state.current_player()
    i = keys[state.information_state_string()]
    for j, a in enumerate(state.legal_actions()):
      child = state.child(a)
      v0 = reference.exact_value(child, strategy_of)
      expected[i, j] += reach[1 - player] * reach[2] * (v0 if player == 0 else -v0)
      r = list(reach)
      r[player] *= table[i, j]
      walk(child, r)

  walk(game.new_initial_state(), [1.0, 1.0, 1.0])
  np.testing.assert_allclose(mccfrb.counterfactual_values(tree, table), expected,
                             atol=1e-12)
  legal = np.arange(tree.max_actions)[None, :] < tree.infoset_num_actions[:, None]
  expected_regrets = np.where(
      legal, expected - np.sum(table * expected, axis=1, keepdims=True), 0.0)
  np.testing.assert_allclose(mccfrb.counterfactual_regrets(tree, table),
                             expected_regrets, atol=1e-12)


def test_accepts_every_policy_type():
  game = mccfrb.load_game("leduc_poker")
  tree = mccfrb.compile_tree(game)
  table = random_table(tree, 11)
  expected = mccfrb.exploitability(tree, table)
  for policy in (mccfrb.to_tabular_policy(game, tree, table),
                 mccfrb.to_pyspiel_policy(tree, table),
                 mccfrb.to_pyspiel_dict(tree, table)):
    assert mccfrb.exploitability(game, policy) == pytest.approx(expected, abs=1e-12)
  uniform = pyspiel.UniformRandomPolicy(game)
  assert mccfrb.exploitability("leduc_poker", uniform) == pytest.approx(
      mccfrb.exploitability(tree, mccfrb.uniform_table(tree)), abs=1e-12)


def test_bad_tables_are_refused():
  tree = mccfrb.compile_tree("kuhn_poker")
  with pytest.raises(ValueError, match="shape"):
    mccfrb.exploitability(tree, np.ones((3, 2)))
  with pytest.raises(ValueError, match="sums to"):
    mccfrb.exploitability(tree, 2 * mccfrb.uniform_table(tree))
  with pytest.raises(ValueError, match="beyond"):
    mccfrb.exploitability(tree, np.ones((12, 3)) / 3)
  with pytest.raises(TypeError, match="Unsupported policy type"):
    mccfrb.exploitability(tree, [[0.5, 0.5]])


def test_any_python_policy_is_tabulated_state_by_state():
  """OpenSpiel's Python policies (here the uniform one and a subclass that
  always plays the first action) are asked for one state per infoset."""
  game = pyspiel.load_game("kuhn_poker")
  tree = mccfrb.compile_tree(game)
  assert mccfrb.exploitability(
      tree, os_policy.UniformRandomPolicy(game)) == pytest.approx(
          mccfrb.exploitability(tree, mccfrb.uniform_table(tree)), abs=1e-15)
  first = os_policy.FirstActionPolicy(game)
  table = np.zeros((tree.num_infosets, tree.max_actions))
  table[:, 0] = 1.0
  assert mccfrb.exploitability(game, first) == pytest.approx(
      mccfrb.exploitability(tree, table), abs=1e-15)


def test_cpp_mccfr_policy_needs_and_uses_the_game():
  game = mccfrb.load_game("leduc_poker")
  tree = mccfrb.compile_tree(game)
  solver = pyspiel.OutcomeSamplingMCCFRSolver(game, seed=1)
  for _ in range(500):
    solver.run_iteration()
  policy = solver.average_policy()
  with pytest.raises(TypeError, match="pass game="):
    mccfrb.exploitability(tree, policy)
  assert mccfrb.exploitability(game, policy) == pytest.approx(
      pyspiel.exploitability(game, policy), abs=1e-9)


def four_sweep_best_responses(tree, table):
  """The former kernel, `exact.best_response_value` (levels + 2 sweeps)."""
  n, i = tree.num_nodes, tree.num_infosets
  scratch = (np.empty(n), np.empty(n, dtype=np.int32),
             np.empty(i, dtype=np.int32), np.empty(i, dtype=np.int32),
             np.empty((i, tree.max_actions)), np.empty(n))
  return np.array([
      exact.best_response_value(*tree.kernel_args(), tree.utility_sum,
                                tree.infoset_num_actions, table, p,
                                *scratch) for p in (0, 1)])


def cfr_plus_table(tree, game_name, iterations):
  solver = mccfrb.CFRSolver(game_name, variant="cfr+", tree=tree)
  solver.run(iterations)
  return solver.average_policy_table()


@pytest.mark.parametrize("game_name", ["kuhn_poker", "leduc_poker",
                                       test_cfr.GOOFSPIEL4])
def test_best_responses_with_threads_and_any_numbering(game_name):
  """Bit for bit equal to the former kernel, with 1 and 2 threads, on the
  compiled tree and on the same tree numbered breadth first; equal to
  pyspiel.exploitability."""
  game = mccfrb.load_game(game_name)
  tree = mccfrb.compile_tree(game)
  renumbered = test_cfr.bfs_tree(tree)
  threads = [1, 2] if numba.config.NUMBA_NUM_THREADS >= 2 else [1]
  for table in (random_table(tree, 5), cfr_plus_table(tree, game_name, 30)):
    expected = four_sweep_best_responses(tree, table)
    for t in (tree, renumbered):
      for k in threads:
        np.testing.assert_array_equal(
            mccfrb.best_response_values(t, table, threads=k), expected)
    theirs = pyspiel.exploitability(game, mccfrb.to_pyspiel_policy(tree, table))
    for k in threads:
      assert mccfrb.exploitability(tree, table, threads=k) == pytest.approx(
          theirs, abs=1e-9)
      assert mccfrb.nash_conv(game, table, threads=k) == pytest.approx(
          2 * theirs, abs=1e-9)


@test_cfr.needs_two_threads
def test_exploitability_with_two_threads_is_the_same_value():
  game = mccfrb.load_game("leduc_poker")
  tree = mccfrb.compile_tree(game)
  table = random_table(tree, 9)
  assert (mccfrb.exploitability(tree, table, threads=2)
          == mccfrb.exploitability(tree, table))


def test_exploitability_threads_are_checked():
  tree = mccfrb.compile_tree("kuhn_poker")
  table = mccfrb.uniform_table(tree)
  for bad in (0, 2.0, None):
    with pytest.raises(ValueError, match="threads must be a positive integer"):
      mccfrb.exploitability(tree, table, threads=bad)
  # More threads than numba's pool runs on the pool (base.numba_threads).
  np.testing.assert_array_equal(
      mccfrb.best_response_values(
          tree, table, threads=numba.config.NUMBA_NUM_THREADS + 1),
      mccfrb.best_response_values(tree, table))
