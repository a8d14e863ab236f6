"""The phantom_ttt engine plays OpenSpiel's phantom_ttt exactly.

The game does not compile (billions of histories): random play-outs side
by side with pyspiel (`check.compare_playouts`) for both game versions and
both observation types; the protocol's invariants on chosen histories;
MCCFRbSolver picks the engine ("auto") and its `EnginePolicy` answers
pyspiel states. The checks are shown to fail on a wrong engine.
"""

import numpy as np
import pytest

import mccfrb
from mccfrb.games.engines import check
from mccfrb.games.engines import engine_for
from mccfrb.games.engines import phantom_ttt
from mccfrb.games.engines import protocol
from mccfrb.games.engines.common import TERMINAL
from mccfrb.solvers import engine as engine_lib
from mccfrb.solvers import representation

CLASSICAL = "phantom_ttt"
ABRUPT = "phantom_ttt(gameversion=abrupt)"
NUMTURNS = "phantom_ttt(obstype=reveal-numturns)"
ABRUPT_NUMTURNS = "phantom_ttt(gameversion=abrupt,obstype=reveal-numturns)"


def _engine(spec):
  engine = engine_for(mccfrb.load_game(spec))
  assert engine.name == "phantom_ttt"
  assert engine.code == protocol.PHANTOM_TTT == phantom_ttt.CODE
  return engine


def _play(engine, actions):
  """(pyspiel state, engine state) after the OpenSpiel action ids
  `actions`."""
  ref = engine.game.new_initial_state()
  state = np.zeros(engine.state_size, dtype=np.int64)
  phantom_ttt.reset(engine.params, state)
  for a in actions:
    moves = [phantom_ttt.move_action(engine.params, state, j)
             for j in range(phantom_ttt.num_moves(engine.params, state))]
    assert moves == ref.legal_actions()
    ref.apply_action(a)
    phantom_ttt.apply(engine.params, state, moves.index(a))
  return ref, state


@pytest.mark.parametrize("spec,playouts", [
    (CLASSICAL, 6000), (ABRUPT, 6000), (NUMTURNS, 3000),
    (ABRUPT_NUMTURNS, 3000)])
def test_playouts_match_pyspiel(spec, playouts):
  engine = _engine(spec)
  steps = check.compare_playouts(engine, playouts, seed=11)
  # At least 5 moves a game (a line), at most 17 (MaxGameLength).
  assert 6 * playouts <= steps <= 18 * playouts


def test_engine_record():
  engine = _engine(ABRUPT_NUMTURNS)
  assert engine.params.tolist() == [1, 1]
  assert _engine(CLASSICAL).params.tolist() == [0, 0]
  assert engine.max_moves == 9
  assert engine.max_depth == engine.game.max_game_length() == 17
  assert engine.utility_sum == 0.0


def test_turns_and_returns():
  # Classical: a failed move keeps the turn; abrupt: it passes.
  ref, state = _play(_engine(CLASSICAL), [4, 4])
  assert phantom_ttt.player(_engine(CLASSICAL).params, state) == 1
  assert ref.current_player() == 1
  ref, state = _play(_engine(ABRUPT), [4, 4])
  assert phantom_ttt.player(_engine(ABRUPT).params, state) == 0
  assert ref.current_player() == 0
  # x fails on o's cell 1 and moves again: no line yet.
  engine = _engine(CLASSICAL)
  ref, state = _play(engine, [0, 1, 1, 3, 4, 7, 8])
  assert not ref.is_terminal()
  assert phantom_ttt.player(engine.params, state) == 0
  ref, state = _play(engine, [0, 4, 4, 1, 3, 2])  # x: 0 1 2.
  assert ref.is_terminal() and ref.returns() == [1.0, -1.0]
  assert phantom_ttt.player(engine.params, state) == TERMINAL
  assert phantom_ttt.returns0(engine.params, state) == 1.0
  # A full board without a line: 0.
  ref, state = _play(engine, [0, 1, 2, 4, 3, 5, 7, 6, 8])
  assert ref.is_terminal() and ref.returns() == [0.0, 0.0]
  assert phantom_ttt.returns0(engine.params, state) == 0.0


def test_infoset_keys_follow_openspiel_strings():
  engine = _engine(CLASSICAL)
  params = engine.params
  key = lambda s, p: phantom_ttt.infoset_hash(params, s, p)
  # Player 1 learns nothing of x's moves: its key stays the root's...
  ref0, s0 = _play(engine, [])
  ref1, s1 = _play(engine, [4])
  assert (ref0.information_state_string(1)
          == ref1.information_state_string(1))
  assert key(s0, 1) == key(s1, 1)
  # ...which is player 0's root string too, but the keys are per player.
  assert (ref0.information_state_string(0)
          == ref0.information_state_string(1))
  assert key(s0, 0) != key(s0, 1)
  # A failed move shows the opponent's mark: "o" at 0, not "x".
  ref2, s2 = _play(engine, [4, 0, 0])
  assert ref2.information_state_string(0).startswith("o..\n.x.")
  ref3, s3 = _play(engine, [4, 1, 0])
  assert ref3.information_state_string(0).startswith("x..\n.x.")
  assert key(s2, 0) != key(s3, 0)
  # Player 0 does not see o's failures (at 4): equal strings, equal keys.
  ref4, s4 = _play(engine, [4, 1])
  ref5, s5 = _play(engine, [4, 4, 1])
  assert (ref4.information_state_string(0)
          == ref5.information_state_string(0))
  assert key(s4, 0) == key(s5, 0)
  for _, s in ((ref4, s4), (ref5, s5), (ref0, s0)):
    for p in (0, 1):
      assert key(s, p) != (0, 0)
  # With reveal-numturns they differ (the move count is shown).
  numturns = _engine(NUMTURNS)
  _, n4 = _play(numturns, [4, 1])
  _, n5 = _play(numturns, [4, 4, 1])
  assert (phantom_ttt.infoset_hash(numturns.params, n4, 0)
          != phantom_ttt.infoset_hash(numturns.params, n5, 0))


def test_public_keys():
  # Classical, reveal-nothing: the number of marks, whatever the failed
  # moves; player 0's infoset [4, 1] / [4, 4, 1] lies in one public state.
  engine = _engine(CLASSICAL)
  public = lambda e, s: phantom_ttt.public_hash(e.params, s)
  _, s4 = _play(engine, [4, 1])
  _, s5 = _play(engine, [4, 4, 1])
  _, s6 = _play(engine, [4, 4])
  assert public(engine, s4) == public(engine, s5) != public(engine, s6)
  # Abrupt: the number of moves.
  abrupt = _engine(ABRUPT)
  _, a1 = _play(abrupt, [4, 4])
  _, a2 = _play(abrupt, [4, 1])
  _, a3 = _play(abrupt, [4, 1, 0])
  assert public(abrupt, a1) == public(abrupt, a2) != public(abrupt, a3)
  # Classical, reveal-numturns: the movers and the mover.
  numturns = _engine(NUMTURNS)
  _, n1 = _play(numturns, [0, 4, 4])  # x fails at 4: x moves again.
  _, n2 = _play(numturns, [0, 4, 1])  # x succeeds: o moves.
  _, n3 = _play(numturns, [0, 4, 4, 1])
  assert public(numturns, n1) != public(numturns, n2)
  assert public(numturns, n3) != public(numturns, n2)


def test_the_checks_catch_a_wrong_engine():
  # The classical game played by the abrupt engine: the turn after a
  # failed move differs.
  engine = _engine(CLASSICAL)
  wrong = engine._replace(params=_engine(ABRUPT).params)
  with pytest.raises(AssertionError, match="player of the engine"):
    check.compare_playouts(wrong, 200, seed=0)
  # reveal-numturns keys against reveal-nothing strings.
  wrong = engine._replace(params=_engine(NUMTURNS).params)
  with pytest.raises(AssertionError, match="infoset key"):
    check.compare_playouts(wrong, 200, seed=0)


@pytest.mark.parametrize("spec,error", [
    ("phantom_ttt(gameversion=blind)", "Unrecognized game version: blind"),
    ("phantom_ttt(obstype=reveal-all)",
     "Unrecognized observation type: reveal-all"),
])
def test_variants_openspiel_lacks_are_refused(spec, error):
  with pytest.raises(ValueError, match=error):
    mccfrb.MCCFRbSolver(spec, representation="engine")


def test_public_sampling_is_refused():
  # Its episodes would expand public states of billions of histories.
  with pytest.raises(ValueError, match="Use MCCFRbSolver"):
    mccfrb.PublicSamplingSolver(ABRUPT, seed=0)


class _FakeGame:
  """A phantom_ttt whose parameters OpenSpiel would refuse to load."""

  def __init__(self, **values):
    self.values = {"gameversion": "classical", "obstype": "reveal-nothing",
                   **values}

  def get_type(self):
    return mccfrb.load_game(CLASSICAL).get_type()

  def get_parameters(self):
    return self.values


@pytest.mark.parametrize("values,error", [
    ({"gameversion": "blind"}, "Unrecognized game version: blind"),
    ({"obstype": "reveal-all"}, "Unrecognized observation type: reveal-all"),
])
def test_make_engine_refuses_what_openspiel_refuses(values, error):
  with pytest.raises(ValueError, match=error):
    phantom_ttt.make_engine(_FakeGame(**values))
  with pytest.raises(ValueError, match="not phantom_ttt"):
    phantom_ttt.make_engine("tic_tac_toe")


def test_auto_picks_the_engine_and_its_policy_answers_pyspiel_states():
  for spec in (CLASSICAL, ABRUPT):
    kind, engine = representation.resolve(mccfrb.load_game(spec), "auto")
    assert kind == "engine" and engine.name == "phantom_ttt"
  solver = mccfrb.MCCFRbSolver(ABRUPT, seed=0)
  assert solver.representation == "engine"
  solver.run(3000, progress=False)
  assert solver.memory()["infosets"] > 1000
  policy = solver.average_policy()
  assert isinstance(policy, engine_lib.EnginePolicy)
  game = mccfrb.load_game(ABRUPT)
  rng = np.random.default_rng(0)
  learned = 0
  for _ in range(20):
    state = game.new_initial_state()
    while not state.is_terminal():
      probs = policy.action_probabilities(state)
      assert sorted(probs) == state.legal_actions()
      assert abs(sum(probs.values()) - 1.0) < 1e-6
      values = np.array(list(probs.values()))
      learned += not np.allclose(values, values[0])
      state.apply_action(int(rng.choice(state.legal_actions())))
  assert learned > 0
  # The root's infoset was updated: its policy is not uniform.
  root = policy.action_probabilities(game.new_initial_state())
  assert max(root.values()) > min(root.values())
  # No exact evaluation: its streaming walk would hold billions of
  # histories at once (games/walk_size.py).
  with pytest.raises(ValueError, match="head-to-head evaluation"):
    mccfrb.nash_conv(game, policy)
