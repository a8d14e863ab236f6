"""Policy conversion both ways."""

import numpy as np
import pytest

import mccfrb
from tests.test_evaluation import random_table


def test_round_trip_through_tabular_policy(game_name):
  game = mccfrb.load_game(game_name)
  tree = mccfrb.compile_tree(game)
  table = random_table(tree, 5)
  tabular = mccfrb.to_tabular_policy(game, tree, table)
  np.testing.assert_array_equal(mccfrb.table_from_policy(tree, tabular), table)
  state = game.new_initial_state()
  while state.is_chance_node():
    state.apply_action(state.chance_outcomes()[0][0])
  i = tree.infoset_index()[state.information_state_string()]
  probs = tabular.action_probabilities(state)
  for j, a in enumerate(state.legal_actions()):
    assert probs[a] == table[i, j]


def test_round_trip_through_pyspiel_policy():
  tree = mccfrb.compile_tree("leduc_poker")
  table = random_table(tree, 6)
  np.testing.assert_allclose(
      mccfrb.table_from_policy(tree, mccfrb.to_pyspiel_policy(tree, table)),
      table, atol=1e-15)


def test_missing_infosets_are_uniform():
  tree = mccfrb.compile_tree("kuhn_poker")
  table = mccfrb.table_from_policy(tree, {"0": [(0, 1.0), (1, 0.0)]})
  i = tree.infoset_index()["0"]
  np.testing.assert_array_equal(table[i], [1.0, 0.0, 0.0])
  others = np.delete(table, i, axis=0)
  np.testing.assert_array_equal(others[:, :2], 0.5)
  np.testing.assert_array_equal(others[:, 2], 0.0)  # padding column


def test_illegal_action_mass_is_refused():
  tree = mccfrb.compile_tree("kuhn_poker")
  with pytest.raises(ValueError, match="illegal"):
    mccfrb.table_from_policy(tree, {"0": [(5, 1.0)]})
