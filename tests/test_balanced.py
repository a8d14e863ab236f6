"""Balanced exploration (Farina, Kroer and Sandholm 2020) on compiled trees:
mccfrb/games/balanced.py and MCCFRbSolver(exploration="balanced")."""

import numpy as np
import pytest

import mccfrb
from mccfrb.games import balanced
from tests.conftest import table_digest
from tests.test_solvers import MCCFRb

G4 = "goofspiel(num_cards=4,imp_info=True,points_order=random,returns_type=point_difference)"


def test_kuhns_balanced_strategy_by_hand():
  """Kuhn: player 0's first move, pass leads to one more decision of its
  own (fold or call a bet), bet to none: 2 of its 3 terminal sequences
  lie below pass. Every other infoset has only terminal sequences."""
  tree = mccfrb.compile_tree("kuhn_poker")
  strategy = balanced.balanced_strategy(tree)
  first = [i for i in range(tree.num_infosets)
           if tree.infoset_player[i] == 0 and len(tree.infoset_key(i)) == 1]
  assert len(first) == 3
  for i in range(tree.num_infosets):
    expected = [2 / 3, 1 / 3] if i in first else [0.5, 0.5]
    np.testing.assert_allclose(strategy[i, :2], expected, rtol=1e-15)
    assert np.all(strategy[i, 2:] == 0.0)


def test_leducs_balanced_strategy_is_a_strategy_over_the_legal_moves():
  tree = mccfrb.compile_tree("leduc_poker")
  strategy = balanced.balanced_strategy(tree)
  legal = tree.legal_mask()
  np.testing.assert_allclose(strategy.sum(axis=1), 1.0, rtol=1e-12)
  assert np.all(strategy[~legal] == 0.0) and np.all(strategy[legal] > 0.0)
  # Not uniform: a raise leaves fewer decisions of one's own than a call.
  assert np.any(np.abs(strategy - legal / legal.sum(axis=1, keepdims=True))
                > 0.05)


@pytest.mark.slow
def test_balanced_exploration_is_unbiased():
  """As tests/test_solvers.py's unbiasedness check, with the balanced
  strategy mixed in: mean sampled regret = exact counterfactual regret."""
  solver = MCCFRb("leduc_poker", seed=0, exploration="balanced")
  solver.run(200)
  sample = solver.sample_estimates(1_000_000, seed=1)
  tree = solver.tree
  strategy = solver.current_policy_table()
  exact_regrets = mccfrb.counterfactual_regrets(tree, strategy)
  owner = sample.episodes[tree.infoset_player][:, None]
  checked = tree.legal_mask() & (mccfrb.evaluation.expected_visits(
      tree, strategy, solver._epsilon, sample.episodes,
      solver._explore) >= 2000)[:, None]
  assert checked.sum() > 100
  se = np.sqrt(np.maximum(sample.regret_var, 0.0) / owner)
  z = np.abs(sample.regret_mean - exact_regrets)[checked] / np.maximum(
      se[checked], 1e-12)
  assert z.max() < 6.0, z.max()
  assert np.mean(z**2) < 1.0 + 4.0 * np.sqrt(2.0 / (z.size / 2))


@pytest.mark.slow
def test_balanced_exploration_pays_on_leduc():
  """Measured (docs Results, "Balanced exploration"): on Leduc the mean
  exploitability over 5 seeds after 10^6 iterations is 0.032 balanced
  against 0.0375 uniform; here 3 seeds of 200,000 iterations."""
  tree = mccfrb.compile_tree("leduc_poker")

  def mean(exploration):
    out = []
    for seed in range(3):
      solver = mccfrb.MCCFRbSolver("leduc_poker", tree=tree, seed=seed,
                                   exploration=exploration)
      solver.run(200_000, progress=False)
      out.append(mccfrb.exploitability(tree, solver.average_policy_table()))
    return np.mean(out)

  assert mean("balanced") < 0.95 * mean("uniform")


def test_uniform_is_the_default_and_checkpoints_keep_the_choice(tmp_path):
  plain = mccfrb.MCCFRbSolver("kuhn_poker", seed=3)
  uniform = mccfrb.MCCFRbSolver("kuhn_poker", seed=3, exploration="uniform")
  plain.run(300)
  uniform.run(300)
  assert table_digest(plain) == table_digest(uniform)
  whole = mccfrb.MCCFRbSolver("kuhn_poker", seed=3, exploration="balanced")
  whole.run(300)
  assert table_digest(whole) != table_digest(plain)
  half = mccfrb.MCCFRbSolver("kuhn_poker", seed=3, exploration="balanced")
  half.run(100)
  path = str(tmp_path / "balanced.npz")
  half.save(path)
  loaded = mccfrb.load_solver(path)
  loaded.run(200)
  assert table_digest(loaded) == table_digest(whole)


@pytest.mark.parametrize("game,options,needs", [
    (G4, dict(representation="engine"), "its engine"),
    ("kuhn_poker(players=3)", {}, "more players"),
])
def test_other_representations_are_refused_in_one_line(game, options, needs):
  with pytest.raises(ValueError) as refusal:
    mccfrb.MCCFRbSolver(game, exploration="balanced", **options)
  message = str(refusal.value)
  assert "\n" not in message and needs in message, message
