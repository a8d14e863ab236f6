"""The goofspiel engine plays OpenSpiel's goofspiel exactly.

Small instances (num_cards <= 5): the engine's whole tree equals the
compiled tree (`check.compare_with_tree`), public states included. Large
ones (num_cards 6 and 13): random play-outs side by side with pyspiel
(`check.compare_playouts`). The checks themselves are shown to fail on
wrong engines and trees.
"""

import itertools

import numpy as np
import pytest

import mccfrb
from mccfrb.games import public
from mccfrb.games.engines import check
from mccfrb.games.engines import engine_for
from mccfrb.games.engines import goofspiel
from mccfrb.games.engines import protocol
from mccfrb.games.engines.common import TERMINAL

README_GOOFSPIEL5 = ("goofspiel(num_cards=5,imp_info=True,points_order=random,"
                     "returns_type=point_difference)")
GOOFSPIEL6 = ("goofspiel(num_cards=6,imp_info=True,points_order=random,"
              "returns_type=point_difference)")


def _spec(num_cards, imp_info, points_order, returns_type):
  return (f"goofspiel(num_cards={num_cards},imp_info={imp_info},"
          f"points_order={points_order},returns_type={returns_type})")


def _new_state(engine):
  state = np.zeros(engine.state_size, dtype=np.int64)
  goofspiel.reset(engine.params, state)
  return state


def _engine(spec):
  engine = engine_for(mccfrb.load_game(spec))
  assert engine.name == "goofspiel" and engine.code == protocol.GOOFSPIEL
  return engine


SMALL = [_spec(*c) for c in itertools.product(
    (2, 3, 4), (True, False), ("random", "descending", "ascending"),
    ("win_loss", "point_difference"))]


@pytest.mark.parametrize("spec", SMALL)
def test_whole_tree_equals_the_compiled_tree(spec):
  engine = _engine(spec)
  tree = mccfrb.compile_tree(engine.game)
  public_tree = None
  if "imp_info=True" in spec:
    # Without imp_info OpenSpiel's public states form no tree (the hands
    # are shown as sets), and public_states refuses them.
    public_tree = public.public_states(tree, "observer", game=engine.game)
  check.compare_with_tree(engine, tree, public_tree)


@pytest.mark.parametrize("spec", [
    "goofspiel(num_cards=1)", "goofspiel(num_cards=1,points_order=ascending)",
    "goofspiel(num_cards=3,imp_info=True,egocentric=True)",
    "goofspiel(num_cards=3,num_turns=3)"])
def test_corner_cases_equal_the_compiled_tree(spec):
  # One card: OpenSpiel plays no forced round. egocentric changes tensors
  # only; num_turns=num_cards is the default game.
  engine = _engine(spec)
  check.compare_with_tree(engine, mccfrb.compile_tree(engine.game))


def test_readme_goofspiel5_equals_the_compiled_tree():
  engine = _engine(README_GOOFSPIEL5)
  tree = mccfrb.compile_tree(engine.game)
  enumerated = check.compare_with_tree(engine, tree)
  assert enumerated.num_nodes == 3_346_656
  assert engine.max_depth == 12 and engine.max_moves == 5


@pytest.mark.parametrize("spec,playouts", [
    ("goofspiel(num_cards=6)", 1000),
    ("goofspiel", 600),
    (GOOFSPIEL6, 1000),
    ("goofspiel(num_cards=13,imp_info=True,points_order=descending)", 300),
])
def test_playouts_agree_with_pyspiel(spec, playouts):
  engine = _engine(spec)
  steps = check.compare_playouts(engine, playouts, seed=5)
  assert steps == playouts * (engine.max_depth + 1)


def test_forced_last_round_and_ties():
  # With 4 cards each player decides 3 times, then OpenSpiel plays the last
  # round; a tied round's point card is discarded.
  engine = _engine(_spec(4, True, "ascending", "point_difference"))
  params, state = engine.params, _new_state(engine)
  ref = engine.game.new_initial_state()
  # Moves (bids): 1 vs 0 (2 vs 1), 1 vs 1 (3 vs 3), 0 vs 0 (1 vs 2); the
  # forced round is 4 vs 4.
  for j in (1, 0, 1, 1, 0, 0):
    assert goofspiel.player(params, state) == ref.current_player() >= 0
    ref.apply_action(goofspiel.move_action(params, state, j))
    goofspiel.apply(params, state, j)
  assert ref.is_terminal() and goofspiel.player(params, state) == TERMINAL
  assert "Win sequence: 0 -3 1 -3 \nPoints: 1 3 \n" in (
      ref.information_state_string(0))
  assert goofspiel.returns0(params, state) == ref.returns()[0] == -1.0


@pytest.mark.parametrize("spec,match", [
    ("goofspiel(num_cards=4,num_turns=3)", "num_turns=3"),
    ("goofspiel(num_cards=63)", "num_cards=63"),
    ("goofspiel(num_cards=4,returns_type=total_points)", "GENERAL_SUM"),
    ("goofspiel(num_cards=4,players=3)", "3 players"),
])
def test_bad_parameters_are_refused(spec, match):
  with pytest.raises(ValueError, match=match):
    goofspiel.make_engine(spec)


def test_other_games_are_refused():
  with pytest.raises(ValueError, match="not goofspiel"):
    goofspiel.make_engine("kuhn_poker")


def _random_states(engine, count, seed):
  """(pyspiel state, engine state) pairs at every node of `count` random
  play-outs."""
  rng = np.random.default_rng(seed)
  params = engine.params
  for _ in range(count):
    ref, state = engine.game.new_initial_state(), _new_state(engine)
    while True:
      yield ref, state
      if ref.is_terminal():
        break
      j = int(rng.integers(goofspiel.num_moves(params, state)))
      ref.apply_action(goofspiel.move_action(params, state, j))
      state = state.copy()
      goofspiel.apply(params, state, j)


@pytest.mark.parametrize("spec", [
    GOOFSPIEL6, "goofspiel(num_cards=6)",
    "goofspiel(num_cards=13,imp_info=True,points_order=ascending)"])
def test_infoset_hash_from_string_round_trip(spec):
  engine = _engine(spec)
  for ref, state in _random_states(engine, 40, seed=2):
    for p in (0, 1):
      text = ref.information_state_string(p)
      assert (goofspiel.infoset_hash_from_string(engine, p, text)
              == goofspiel.infoset_hash(engine.params, state, p)), text


def test_infoset_hash_from_string_refuses_other_strings():
  engine = _engine(GOOFSPIEL6)
  ref = engine.game.new_initial_state()
  ref.apply_action(2)
  text = ref.information_state_string(0)
  with pytest.raises(ValueError, match="not a goofspiel information state"):
    goofspiel.infoset_hash_from_string(engine, 0, text.replace("Win", "Won"))
  with pytest.raises(ValueError, match="imp_info=False"):
    goofspiel.infoset_hash_from_string(_engine("goofspiel(num_cards=6)"), 0,
                                       text)


def test_the_checks_catch_wrong_engines_and_trees():
  spec = _spec(3, True, "random", "point_difference")
  engine = _engine(spec)
  tree = mccfrb.compile_tree(engine.game)
  enumerated = check.compare_with_tree(engine, tree)
  terminal = int(np.flatnonzero(tree.node_kind == 2)[7])
  utility = tree.utility.copy()
  utility[terminal] += 1e-9
  with pytest.raises(AssertionError, match=f"node {terminal}: utility"):
    check.compare_with_tree(engine, tree._replace(utility=utility),
                            enumerated=enumerated)
  win_loss = engine.params.copy()
  win_loss[goofspiel.P_RETURNS_TYPE] = goofspiel.WIN_LOSS
  with pytest.raises(AssertionError, match="utility"):
    check.compare_with_tree(engine._replace(params=win_loss), tree)
  # Two legal actions of one infoset swapped.
  actions = tree.infoset_actions.copy()
  wide = int(np.flatnonzero(tree.infoset_num_actions >= 2)[3])
  actions[wide, [0, 1]] = actions[wide, [1, 0]]
  with pytest.raises(AssertionError, match="action"):
    check.compare_with_tree(engine, tree._replace(infoset_actions=actions),
                            enumerated=enumerated)
  # Two infosets of player 0 merged.
  infoset = tree.node_infoset.copy()
  first, second = np.flatnonzero(tree.infoset_player == 0)[[1, 2]]
  infoset[infoset == second] = first
  with pytest.raises(AssertionError, match="infoset partition"):
    check.compare_with_tree(engine, tree._replace(node_infoset=infoset),
                            enumerated=enumerated)
  # A finer partition than the observer's public states.
  finer = public.public_states(tree, "common_knowledge", game=engine.game)
  with pytest.raises(AssertionError, match="public partition"):
    check.compare_with_tree(engine, tree, finer, enumerated=enumerated)
  # Play-outs: the engine of the perfect-information game, ascending.
  other = engine_for(mccfrb.load_game(_spec(3, False, "random",
                                            "point_difference")))
  with pytest.raises(AssertionError, match="infoset key"):
    check.compare_playouts(other._replace(game=engine.game), 50, seed=0)
  ascending = engine.params.copy()
  ascending[goofspiel.P_POINTS_ORDER] = goofspiel.ASCENDING
  with pytest.raises(AssertionError, match="player of the engine"):
    check.compare_playouts(engine._replace(params=ascending), 5, seed=0)
  with pytest.raises(ValueError, match="max_nodes"):
    check.enumerate_tree(engine, max_nodes=tree.num_nodes - 1)
