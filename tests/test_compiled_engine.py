"""The compiled tree as an implementation of the engine protocol
(mccfrb/games/engines/compiled.py): the engine kernels run on it and equal
the tree kernels bit for bit."""

import numpy as np
import pytest

import mccfrb
from mccfrb.games.engines import check
from mccfrb.games.engines import compiled
from tests.test_engine_solvers import assert_same_tables
from tests.test_external_engine import _cells
from tests.test_public_engine import assert_same_public_tables

G3 = "goofspiel(num_cards=3,imp_info=True,points_order=random,returns_type=point_difference)"
LIARS = "liars_dice(numdice=1,dice_sides=3)"
GAMES = [G3, LIARS, "kuhn_poker", "leduc_poker"]


def tree_engine(game):
  """(GameTree, its compiled engine with public states) of a game."""
  tree = mccfrb.compile_tree(game)
  public = mccfrb.public_states(tree, game=game)
  return tree, compiled.make_engine(tree, mccfrb.load_game(game), public)


@pytest.mark.parametrize("game", GAMES)
def test_the_compiled_engine_enumerates_its_own_tree(game):
  tree = mccfrb.compile_tree(game)
  public = mccfrb.public_states(tree, game=game)
  engine = compiled.make_engine(tree, mccfrb.load_game(game), public)
  check.compare_with_tree(engine, tree, public_tree=public)


def pair_on_the_tree(cls, init_engine, game, iterations, **kwargs):
  """Two solvers of `cls` on the game's tree, the second switched to the
  tree's engine kernels (its `init_engine` method), each run
  `iterations`; returns (on the tree, on the engine) and the tree."""
  tree, engine = tree_engine(game)
  on_tree = cls(game, tree=tree, **kwargs)
  on_engine = cls(game, tree=tree, **kwargs)
  # The tree's numbers: float64 cells, and (outcome sampling) one episode
  # at a time.
  exact = dict(in_flight=1) if init_engine == "_init_engine" else {}
  getattr(on_engine, init_engine)(engine, None, precision="float64", **exact)
  on_tree.run(iterations)
  on_engine.run(iterations)
  return on_tree, on_engine, tree


@pytest.mark.parametrize("game", GAMES)
@pytest.mark.parametrize("baseline", ["learned", "predictive"])
def test_outcome_engine_kernel_on_the_tree_is_the_tree_kernel(game, baseline):
  """MCCFRb's episode with an engine (kernels/outcome.py, the compiled
  tree played through the engine protocol) equals it with the tree's
  arrays, bit for bit, and its policy's NashConv by the streaming walk
  equals the tree evaluator's."""
  on_tree, on_engine, tree = pair_on_the_tree(
      mccfrb.MCCFRbSolver, "_init_engine", game, 300, baseline=baseline,
      seed=5)
  assert_same_tables(on_tree, on_engine, baseline)
  np.testing.assert_array_equal(on_engine._rng_words, on_tree._rng_words)
  assert mccfrb.nash_conv(game, on_engine.average_policy()) == pytest.approx(
      mccfrb.nash_conv(tree, on_tree.average_policy_table()), abs=1e-12)


@pytest.mark.parametrize("game", [G3, "kuhn_poker"])
def test_public_engine_kernel_on_the_tree_is_the_tree_kernel(game):
  on_tree, on_engine, _ = pair_on_the_tree(
      mccfrb.PublicSamplingSolver, "_init_public_engine", game, 100,
      baseline="history", sampling="on_policy", seed=5)
  assert_same_public_tables(on_tree, on_engine)
  assert on_engine.nodes_touched == on_tree.nodes_touched


@pytest.mark.parametrize("game", [G3, "leduc_poker"])
def test_external_engine_kernel_on_the_tree_is_the_tree_kernel(game):
  tree, engine = tree_engine(game)
  on_tree = mccfrb.ExternalSamplingSolver(game, tree=tree, seed=5)
  on_engine = mccfrb.ExternalSamplingSolver(game, tree=tree, seed=5)
  on_engine._init_es_engine(engine, None, precision="float64")
  on_tree.run(50)
  on_engine.run(50)
  cells = _cells(on_engine)
  rows = np.array([on_engine._backend.tables.find(i + 1, 0)
                   for i in range(tree.num_infosets)])
  for i, r in enumerate(rows):
    c = tree.infoset_num_actions[i]
    if r < 0:
      assert not on_tree._regrets[i].any()
      continue
    np.testing.assert_array_equal(on_engine._backend.tables.field(r, "regret"),
                                  on_tree._regrets[i, :c])
    np.testing.assert_array_equal(on_engine._backend.tables.field(r, "avg"),
                                  on_tree._avg[i, :c])
  assert len(cells["regret"]) > 0
