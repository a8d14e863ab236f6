"""The dark_hex engine plays OpenSpiel's dark_hex exactly.

Small boards (2x2, 2x3, 3x2): the engine's whole tree equals the compiled
tree (`check.compare_with_tree`), both game versions and both observation
types. Larger boards (3x3, 4x4 and more): random play-outs side by side with
pyspiel (`check.compare_playouts`). The solvers pick the engine for 3x3
and answer pyspiel states through it.
"""

import numpy as np
import pytest

import mccfrb
from mccfrb.games.engines import check
from mccfrb.games.engines import dark_hex
from mccfrb.games.engines import engine_for
from mccfrb.games.engines import protocol
from mccfrb.games.engines.common import TERMINAL
from mccfrb.solvers import engine as engine_lib

DARK_HEX3 = "dark_hex(num_rows=3,num_cols=3)"


def _engine(spec):
  engine = engine_for(mccfrb.load_game(spec))
  assert engine.name == "dark_hex" and engine.code == protocol.DARK_HEX
  return engine


@pytest.mark.parametrize("spec", [
    "dark_hex(num_rows=2,num_cols=2)",
    "dark_hex(num_rows=2,num_cols=2,gameversion=adh)",
    "dark_hex(num_rows=2,num_cols=2,obstype=reveal-numturns)",
    "dark_hex(num_rows=2,num_cols=2,gameversion=adh,obstype=reveal-numturns)",
    "dark_hex(num_rows=2,num_cols=3)",
    "dark_hex(num_rows=2,num_cols=3,gameversion=adh)",
    "dark_hex(num_rows=3,num_cols=2,obstype=reveal-numturns)",
    "dark_hex(num_rows=3,num_cols=2,gameversion=adh)",
])
def test_whole_tree_equals_the_compiled_tree(spec):
  engine = _engine(spec)
  tree = mccfrb.compile_tree(engine.game)
  walked = check.compare_with_tree(engine, tree)
  # The longest game (every try but the winning stone's finds a stone or
  # places one) is reached.
  assert walked.max_depth == engine.max_depth == 2 * engine.max_moves - 1


@pytest.mark.parametrize("spec,playouts", [
    (DARK_HEX3, 3000),
    ("dark_hex(num_rows=3,num_cols=3,gameversion=adh)", 3000),
    ("dark_hex(num_rows=3,num_cols=3,obstype=reveal-numturns)", 1000),
    ("dark_hex(num_rows=4,num_cols=4)", 400),
    ("dark_hex(num_rows=4,num_cols=4,gameversion=adh)", 300),
    ("dark_hex(num_rows=3,num_cols=5,gameversion=adh,"
     "obstype=reveal-numturns)", 200),
    ("dark_hex(board_size=9)", 30),
])
def test_playouts_match_pyspiel(spec, playouts):
  assert check.compare_playouts(_engine(spec), playouts, seed=3) > playouts


def _play(spec, actions):
  """The pyspiel state and the engine state after `actions`."""
  engine = _engine(spec)
  ref = engine.game.new_initial_state()
  state = engine.new_state()
  for action in actions:
    moves = [dark_hex.move_action(engine.params, state, j)
             for j in range(dark_hex.num_moves(engine.params, state))]
    assert moves == ref.legal_actions()
    dark_hex.apply(engine.params, state, moves.index(action))
    ref.apply_action(action)
  return engine, ref, state


def test_tries_on_stones_follow_the_game_version():
  # Classical: white's try on black's stone shows it, and white tries again.
  engine, ref, state = _play(DARK_HEX3, [4, 4])
  assert dark_hex.player(engine.params, state) == ref.current_player() == 1
  assert ref.information_state_string(1) == "...\n.x.\n...\n2\n1,4 "
  # Abrupt: the turn passes to black.
  spec = "dark_hex(num_rows=3,num_cols=3,gameversion=adh)"
  engine, ref, state = _play(spec, [4, 4])
  assert dark_hex.player(engine.params, state) == ref.current_player() == 0
  # Black wins on the north-south line 1, 4, 7 (white's try on 1 fails).
  engine, ref, state = _play(DARK_HEX3, [1, 1, 0, 4, 3, 7])
  assert ref.is_terminal() and ref.returns() == [1.0, -1.0]
  assert dark_hex.player(engine.params, state) == TERMINAL
  assert dark_hex.returns0(engine.params, state) == 1.0


def test_equal_strings_share_a_key_across_histories():
  # White's information state is the same whichever cell black took.
  keys = set()
  for first in range(9):
    engine, ref, state = _play(DARK_HEX3, [first])
    assert ref.information_state_string(1) == "...\n...\n...\n1\n"
    keys.add(dark_hex.infoset_hash(engine.params, state, 1))
  assert len(keys) == 1
  # Black does not see when white failed a try (one failed, one placed
  # stone either way), unless the turns are revealed.
  (engine, ref, state), (_, ref2, state2) = (_play(DARK_HEX3, [0, 0, 4, 1]),
                                             _play(DARK_HEX3, [0, 4, 1, 2]))
  assert ref.information_state_string(0) == ref2.information_state_string(0)
  assert (dark_hex.infoset_hash(engine.params, state, 0)
          == dark_hex.infoset_hash(engine.params, state2, 0))
  spec = "dark_hex(num_rows=3,num_cols=3,obstype=reveal-numturns)"
  (engine, ref, state), (_, ref2, state2) = (_play(spec, [0, 0, 4, 1]),
                                             _play(spec, [0, 4, 1, 2]))
  assert ref.information_state_string(0) != ref2.information_state_string(0)
  assert (dark_hex.infoset_hash(engine.params, state, 0)
          != dark_hex.infoset_hash(engine.params, state2, 0))


def test_engine_record():
  engine = _engine("dark_hex(num_rows=3,num_cols=4,gameversion=adh)")
  params = engine.params.tolist()
  assert params[:dark_hex.P_CELL] == [3, 4, 12, dark_hex.ADH,
                                      dark_hex.REVEAL_NOTHING, 1]
  assert len(params) == dark_hex.NUM_PARAMS + 7 * 12
  # Cell 4 (row 1, column 0): west edge; north, north-east, east, south,
  # no south-west (12: past the board), no west.
  assert params[dark_hex.P_CELL + 7 * 4:][:7] == [4 * 1, 0, 1, 5, 8, 12, 12]
  # Cell 11 (row 2, column 3): south and east edges.
  assert params[dark_hex.P_CELL + 7 * 11:][:7] == [2 + 4 * 2, 7, 12, 12, 12,
                                                   12, 10]
  assert engine.max_moves == 12
  assert engine.max_depth == 23 == engine.game.max_game_length()
  assert engine.state_size == dark_hex.S_BOARD + 2 * (12 + 1) + 1
  board = dark_hex.make_engine(mccfrb.load_game("dark_hex(board_size=9)"))
  assert board.params[dark_hex.P_WORDS] == 2
  assert engine.utility_sum == 0.0


@pytest.mark.parametrize("spec,message", [
    ("dark_hex(gameversion=xdh)", "Unrecognized game version: xdh"),
    ("dark_hex(obstype=reveal-all)", "Unrecognized observation type"),
])
def test_variants_openspiel_does_not_offer_get_its_error(spec, message):
  # load_game passes OpenSpiel's message on.
  with pytest.raises(ValueError, match=message):
    mccfrb.MCCFRbSolver(spec, representation="engine")


class _FakeGame:
  """Parameters OpenSpiel itself would refuse to load."""

  def __init__(self, **values):
    self.values = {"board_size": 3, "gameversion": "cdh", "num_cols": 3,
                   "num_rows": 3, "obstype": "reveal-nothing", **values}

  def get_parameters(self):
    return self.values


@pytest.mark.parametrize("values,message", [
    ({"gameversion": "xdh"}, "Unrecognized game version: xdh"),
    ({"obstype": "reveal-all"}, "Unrecognized observation type: reveal-all"),
    ({"num_rows": 1}, "num_rows=1"),
    ({"num_cols": 1}, "num_cols=1"),
])
def test_unsupported_parameters_are_refused(values, message):
  with pytest.raises(ValueError, match=message):
    dark_hex.make_engine(_FakeGame(**values))


def test_single_row_boards_are_refused():
  # OpenSpiel's hex never ends on one row: states with no legal action.
  with pytest.raises(ValueError, match="num_rows >= 2 and num_cols >= 2"):
    engine_for(mccfrb.load_game("dark_hex(num_rows=1,num_cols=3)"))


@pytest.mark.slow
def test_solver_picks_the_engine_and_its_policy_answers_pyspiel_states():
  assert mccfrb.MCCFRbSolver(
      "dark_hex(num_rows=2,num_cols=3)").representation == "tree"
  solver = mccfrb.MCCFRbSolver(DARK_HEX3, seed=0)
  assert solver.representation == "engine"
  solver.run(3000, progress=False)
  memory = solver.memory()
  assert memory["infosets"] > 1000 and memory["dropped"] == 0
  policy = solver.average_policy()
  assert isinstance(policy, engine_lib.EnginePolicy)
  game = solver.game
  # White's first infoset is the same after every black move: so is its
  # policy, and it has learnt something.
  answers = []
  for first in range(9):
    state = game.new_initial_state()
    state.apply_action(first)
    probs = policy.action_probabilities(state)
    assert sorted(probs) == state.legal_actions()
    answers.append([probs[a] for a in range(9)])
  assert np.allclose(answers, answers[0], rtol=0, atol=0)
  assert sum(answers[0]) == pytest.approx(1.0)
  assert max(answers[0]) > 1 / 9 + 1e-3
  # Random states: a distribution over the legal actions.
  rng = np.random.default_rng(0)
  for _ in range(50):
    state = game.new_initial_state()
    while not state.is_terminal():
      probs = policy.action_probabilities(state)
      assert sorted(probs) == state.legal_actions()
      assert sum(probs.values()) == pytest.approx(1.0)
      state.apply_action(int(rng.choice(state.legal_actions())))
