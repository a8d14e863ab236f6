"""The liars_dice engine plays OpenSpiel's liars_dice exactly.

Small instances: the engine's whole tree equals the compiled tree
(`check.compare_with_tree`). Large ones (numdice=2: 3.8e9 histories):
random play-outs side by side with pyspiel (`check.compare_playouts`, and
here play-outs of small raises, which reach the long bid sequences uniform
play-outs skip).
"""

import numpy as np
import pytest

import mccfrb
from mccfrb.games.engines import check
from mccfrb.games.engines import engine_for
from mccfrb.games.engines import liars_dice
from mccfrb.games.engines.common import CHANCE
from mccfrb.games.engines.common import TERMINAL


def _engine(spec):
  engine = engine_for(mccfrb.load_game(spec))
  assert engine.name == "liars_dice" and engine.code == 2
  return engine


def _new_state(engine):
  state = np.zeros(engine.state_size, dtype=np.int64)
  liars_dice.reset(engine.params, state)
  return state


def _playout_side_by_side(engine, choose, books):
  """Plays one play-out on the engine and on pyspiel in lockstep, asserting
  they agree at every state; `choose(n)` picks the move among n.

  `books` (four dicts, shared by the play-outs of a test) records the
  information states seen: infoset keys must be equal exactly when
  OpenSpiel's strings are (both players, during the deal too), a public
  key must keep its acting player and hold every infoset of it.

  Returns:
    The number of moves played.
  """
  params = engine.params
  key_of, text_of, player_of, public_of = books
  ref, state = engine.game.new_initial_state(), _new_state(engine)
  for depth in range(engine.max_depth + 1):
    who = liars_dice.player(params, state)
    public = liars_dice.public_hash(params, state)
    assert player_of.setdefault(public, who) == who
    for p in range(2):
      text = ref.information_state_string(p)
      key = liars_dice.infoset_hash(params, state, p)
      assert key != (0, 0)
      assert key_of.setdefault(text, key) == key, text
      assert text_of.setdefault(key, text) == text, (text, text_of[key])
    if ref.is_terminal():
      assert who == TERMINAL
      assert liars_dice.num_moves(params, state) == 0
      assert liars_dice.returns0(params, state) == ref.returns()[0]
      assert sum(ref.returns()) == engine.utility_sum
      return depth
    assert who == ref.current_player()
    n = liars_dice.num_moves(params, state)
    assert 0 < n <= engine.max_moves
    actions = [liars_dice.move_action(params, state, j) for j in range(n)]
    if who == CHANCE:
      outcomes = ref.chance_outcomes()
      assert actions == [a for a, _ in outcomes]
      assert [liars_dice.chance_prob(params, state, j)
              for j in range(n)] == [q for _, q in outcomes]
    else:
      assert actions == ref.legal_actions()
      text = ref.information_state_string(who)
      assert public_of.setdefault(text, public) == public
    j = choose(n)
    ref.apply_action(actions[j])
    liars_dice.apply(params, state, j)
  raise AssertionError(f"not terminal after max_depth={engine.max_depth}")


@pytest.mark.parametrize("spec", [
    "liars_dice(dice_sides=1)",
    "liars_dice(dice_sides=2)",
    "liars_dice(dice_sides=3)",
    "liars_dice(dice_sides=4)",
    "liars_dice(dice_sides=5)",
    "liars_dice",
    "liars_dice(dice_sides=4,bidding_rule=reset-quantity)",
    "liars_dice(numdice=2,dice_sides=2)",
    "liars_dice(numdice=2,dice_sides=2,bidding_rule=reset-quantity)",
    "liars_dice(numdice=2,dice_sides=3)",
])
def test_engine_tree_equals_compiled_tree(spec):
  game = mccfrb.load_game(spec)
  check.compare_with_tree(engine_for(game), mccfrb.compile_tree(game))


@pytest.mark.parametrize("spec,playouts", [
    ("liars_dice(numdice=2)", 5000),
    ("liars_dice(numdice=2,bidding_rule=reset-quantity)", 1000),
    ("liars_dice(numdice=3)", 3000),
    # Multi-digit faces: OpenSpiel's strings join the dice without
    # separators, so different dice can share a string.
    ("liars_dice(numdice=2,dice_sides=12)", 1000),
])
def test_playouts_match_pyspiel(spec, playouts):
  assert check.compare_playouts(_engine(spec), playouts, seed=3) > playouts


@pytest.mark.parametrize("spec", [
    "liars_dice(numdice=2)",
    "liars_dice(numdice=2,bidding_rule=reset-quantity)",
    "liars_dice(numdice=3,dice_sides=4)",
])
def test_small_raise_playouts_match_pyspiel(spec):
  engine = _engine(spec)
  rng = np.random.default_rng(7)
  books = ({}, {}, {}, {})
  longest = 0
  for _ in range(500):
    longest = max(longest, _playout_side_by_side(
        engine, lambda n: min(int(rng.geometric(0.5)) - 1, n - 1), books))
  assert longest > engine.max_depth // 2


def _play(spec, rolls, bids):
  """(information_state_string(0), infoset_hash(0)) after `rolls` (chance
  outcomes) and `bids` (action ids)."""
  engine = _engine(spec)
  ref, state = engine.game.new_initial_state(), _new_state(engine)
  for j in rolls:
    ref.apply_action(j)
    liars_dice.apply(engine.params, state, j)
  for action in bids:
    ref.apply_action(action)
    liars_dice.apply(engine.params, state,
                     action - liars_dice.move_action(engine.params, state, 0))
  return (ref.information_state_string(0),
          liars_dice.infoset_hash(engine.params, state, 0))


def test_infosets_follow_openspiel_strings():
  # The deal shows dice in roll order, then every player's dice sorted: the
  # two roll orders of a hand share an infoset once the deal is over.
  assert _play("liars_dice(numdice=2)", [4], [])[0] == "5-1"
  text, key = _play("liars_dice(numdice=2)", [4, 2, 0], [])
  assert text == "53"
  assert _play("liars_dice(numdice=2)", [2, 4, 0], [])[0] == "35"
  assert _play("liars_dice(numdice=2)", [2, 4, 0], [])[1] != key
  text, key = _play("liars_dice(numdice=2)", [4, 2, 0, 1], [7])
  assert text == "35 2-2"
  assert _play("liars_dice(numdice=2)", [2, 4, 5, 5], [7]) == (text, key)
  # Dice 1,112 and 11,12 print alike: OpenSpiel merges them, so do we.
  spec = "liars_dice(numdice=2,dice_sides=120)"
  text, key = _play(spec, [0, 111, 3, 3], [5])
  assert text == "1112 1-6"
  assert _play(spec, [10, 11, 3, 3], [5]) == (text, key)


def test_engine_record():
  engine = _engine("liars_dice(numdice=2,dice_sides=3)")
  assert engine.params.dtype == np.int64
  assert engine.state_size == 11 + 4
  assert engine.max_moves == 12
  assert engine.max_depth == 4 + 12 + 1
  assert engine.utility_sum == 0.0


@pytest.mark.parametrize("spec,value", [
    ("liars_dice(numdice=0)", "numdice=0"),
    ("liars_dice(numdice=-1)", "numdice=-1"),
])
def test_bad_parameters_raise(spec, value):
  with pytest.raises(ValueError, match=value):
    engine_for(mccfrb.load_game(spec))


class _FakeGame:
  """Parameters OpenSpiel itself would refuse to load."""

  def __init__(self, **values):
    self.values = {"bidding_rule": "reset-face", "dice_sides": 6,
                   "numdice": 1, "players": 2, **values}

  def get_parameters(self):
    return self.values


@pytest.mark.parametrize("values,named", [
    ({"bidding_rule": "reset-everything"}, "reset-everything"),
    ({"players": 3}, "players=3"),
    ({"dice_sides": 0}, "dice_sides=0"),
])
def test_unsupported_parameters_are_named(values, named):
  with pytest.raises(ValueError, match=named):
    liars_dice.make_engine(_FakeGame(**values))
