"""Simultaneous updates (`alternating_updates=False`) against OpenSpiel.

OpenSpiel's `cfr._CFRSolver(game, alternating_updates=False, ...)` is the
reference for CFR and CFR+ (and its other two flag combinations).
OpenSpiel's `discounted_cfr._DCFRSolver` takes `alternating_updates` but
its `evaluate_and_update_policy` has only the alternating branch (with
False an iteration updates nothing), so LCFR and DCFR are checked against
`_SimultaneousDCFR`: OpenSpiel's own `_DCFRSolver` given the simultaneous
branch `_CFRSolver` has (one traversal with player=None, then OpenSpiel's
discount of every player's regrets, then its regret matching).
"""

import numpy as np
import pyspiel
import pytest
from open_spiel.python import policy as os_policy
from open_spiel.python.algorithms import cfr as os_cfr
from open_spiel.python.algorithms import discounted_cfr as os_dcfr

import mccfrb
from mccfrb.compat import cfr as compat_cfr
from mccfrb.compat import discounted_cfr as compat_dcfr
from mccfrb.kernels import cfr as cfr_kernels
from mccfrb.solvers import stream

GOOFSPIEL4 = ("goofspiel(num_cards=4,imp_info=True,points_order=random,"
              "returns_type=point_difference)")
GAMES = ("kuhn_poker", "leduc_poker", GOOFSPIEL4)
ITERATIONS = 3
TOLERANCE = 1e-12


class _SimultaneousDCFR(os_dcfr._DCFRSolver):  # pylint: disable=protected-access
  """OpenSpiel's `_DCFRSolver` with the simultaneous branch of
  `cfr._CFRSolver.evaluate_and_update_policy`, its discount as in its
  alternating branch."""

  def evaluate_and_update_policy(self):
    assert not self._alternating_updates
    self._iteration += 1
    self._compute_counterfactual_regret_for_player(
        self._root_node, policies=None,
        reach_probabilities=np.ones(self._game.num_players() + 1),
        player=None)
    t = self._iteration
    for nodes in self._player_nodes:
      for info_state in nodes:
        for action in info_state.cumulative_regret.keys():
          if info_state.cumulative_regret[action] >= 0:
            info_state.cumulative_regret[action] *= (
                t**self.alpha / (t**self.alpha + 1))
          else:
            info_state.cumulative_regret[action] *= (
                t**self.beta / (t**self.beta + 1))
    os_cfr._update_current_policy(self._current_policy,  # pylint: disable=protected-access
                                  self._info_state_nodes)


# variant -> OpenSpiel's solver with simultaneous updates.
REFERENCES = {
    "cfr": lambda g: os_cfr._CFRSolver(  # pylint: disable=protected-access
        g, alternating_updates=False, linear_averaging=False,
        regret_matching_plus=False),
    "cfr+": lambda g: os_cfr._CFRSolver(  # pylint: disable=protected-access
        g, alternating_updates=False, linear_averaging=True,
        regret_matching_plus=True),
    "linear": lambda g: _SimultaneousDCFR(g, False, True, False, 1, 1, 1),
    "discounted": lambda g: _SimultaneousDCFR(g, False, True, False, 1.5, 0,
                                              2),
}


class Reference:
  """OpenSpiel's tables after each of ITERATIONS iterations (run once per
  game and variant: OpenSpiel's Python CFR takes seconds an iteration on
  goofspiel 4)."""
  _cache = {}

  @classmethod
  def of(cls, game_name, variant):
    key = (game_name, variant)
    if key not in cls._cache:
      game = mccfrb.load_game(game_name, general=True)
      solver = REFERENCES[variant](game)
      steps = []
      for _ in range(ITERATIONS):
        solver.evaluate_and_update_policy()
        steps.append(_snapshot(solver))
      cls._cache[key] = (game, steps)
    return cls._cache[key]


def _snapshot(solver):
  """(average, current policy arrays, {key: (regrets, sums)}) of an
  OpenSpiel solver (or an mccfrb solver on a tree)."""
  nodes = solver._info_state_nodes  # pylint: disable=protected-access
  return (solver.average_policy().action_probability_array.copy(),
          solver.current_policy().action_probability_array.copy(),
          {k: (dict(n.cumulative_regret), dict(n.cumulative_policy))
           for k, n in nodes.items()})


def _assert_nodes_equal(ours, theirs):
  assert set(ours) == set(theirs)
  for key, (regrets, sums) in theirs.items():
    for mine, expected in zip(ours[key], (regrets, sums)):
      actions = sorted(expected)
      np.testing.assert_allclose([mine[a] for a in actions],
                                 [expected[a] for a in actions],
                                 rtol=TOLERANCE, atol=TOLERANCE, err_msg=key)


@pytest.mark.parametrize("variant", sorted(REFERENCES))
@pytest.mark.parametrize("game_name", GAMES)
def test_simultaneous_updates_equal_openspiel(game_name, variant):
  """Average and current policies, cumulative regrets and average sums
  equal OpenSpiel's to 1e-12 after each iteration, with both pass
  structures; the alternating solver differs (the test can fail)."""
  game, steps = Reference.of(game_name, variant)
  tree = mccfrb.compile_tree(game)
  solvers = [mccfrb.CFRSolver(game, variant=variant, tree=tree, passes=p,
                              alternating_updates=False)
             for p in ("four_sweeps", "sweeps")]
  for average, current, nodes in steps:
    for solver in solvers:
      solver.run(1)
      got = _snapshot(solver)
      np.testing.assert_allclose(got[0], average, rtol=0, atol=TOLERANCE)
      np.testing.assert_allclose(got[1], current, rtol=0, atol=TOLERANCE)
      _assert_nodes_equal(got[2], nodes)
  alternating = mccfrb.CFRSolver(game, variant=variant, tree=tree)
  alternating.run(ITERATIONS)
  assert np.abs(alternating.average_policy().action_probability_array
                - steps[-1][0]).max() > 1e-6


@pytest.mark.parametrize("variant", sorted(REFERENCES))
def test_simultaneous_updates_stream_on_an_engine(variant):
  """The streaming walk (goofspiel 4's engine, no tree) equals OpenSpiel's
  average and current policies to 1e-12."""
  game, steps = Reference.of(GOOFSPIEL4, variant)
  solver = mccfrb.CFRSolver(game, variant=variant, representation="engine",
                            alternating_updates=False)
  for average, current, _ in steps:
    solver.run(1)
    for policy, expected in ((solver.average_policy(), average),
                             (solver.current_policy(), current)):
      got = os_policy.tabular_policy_from_callable(game, policy)
      np.testing.assert_allclose(got.action_probability_array, expected,
                                 rtol=0, atol=TOLERANCE)


@pytest.mark.parametrize("regret_matching_plus", [False, True])
@pytest.mark.parametrize("linear_averaging", [False, True])
@pytest.mark.parametrize("players", [2, 3])
def test_compat_cfr_solver_flags(players, linear_averaging,
                                 regret_matching_plus):
  """`mccfrb.compat.cfr._CFRSolver` with alternating_updates=False, every
  flag combination, on Kuhn with 2 and 3 players (a general tree: one
  value sweep per player), equals OpenSpiel's after each iteration."""
  game = pyspiel.load_game("kuhn_poker", {"players": players})
  flags = dict(alternating_updates=False, linear_averaging=linear_averaging,
               regret_matching_plus=regret_matching_plus)
  theirs = os_cfr._CFRSolver(game, **flags)  # pylint: disable=protected-access
  ours = compat_cfr._CFRSolver(game, **flags)  # pylint: disable=protected-access
  assert not ours.alternating_updates
  for _ in range(5):
    theirs.evaluate_and_update_policy()
    ours.evaluate_and_update_policy()
    expected, got = _snapshot(theirs), _snapshot(ours)
    np.testing.assert_allclose(got[0], expected[0], rtol=0, atol=TOLERANCE)
    np.testing.assert_allclose(got[1], expected[1], rtol=0, atol=TOLERANCE)
    _assert_nodes_equal(got[2], expected[2])


def test_compat_update_current_policy_and_nodes():
  """`_InfoStateNode` and `_update_current_policy` as OpenSpiel's: regret
  matching of hand-made records, including a row without positive regret
  (uniform) and one with a negative regret."""
  game = pyspiel.load_game("kuhn_poker")
  theirs, ours = os_policy.TabularPolicy(game), os_policy.TabularPolicy(game)
  keys = list(theirs.state_lookup)
  rows = [{0: 3.0, 1: 1.0}, {0: -2.0, 1: 0.5}, {0: -1.0, 1: 0.0}]
  for module, target in ((os_cfr, theirs), (compat_cfr, ours)):
    nodes = {k: module._InfoStateNode(  # pylint: disable=protected-access
        legal_actions=[0, 1], index_in_tabular_policy=None,
        cumulative_regret=dict(r), cumulative_policy=None)
             for k, r in zip(keys, rows)}
    module._update_current_policy(target, nodes)  # pylint: disable=protected-access
  np.testing.assert_array_equal(ours.action_probability_array,
                                theirs.action_probability_array)
  assert ours.policy_for_key(keys[1]).tolist() == [0.0, 1.0]
  assert ours.policy_for_key(keys[2]).tolist() == [0.5, 0.5]
  # The solver's records carry OpenSpiel's index and legal actions.
  solver = compat_cfr.CFRSolver(game)
  expected = os_cfr.CFRSolver(game)._info_state_nodes  # pylint: disable=protected-access
  for key, node in solver.info_state_nodes().items():
    assert node.legal_actions == expected[key].legal_actions
    assert (node.index_in_tabular_policy
            == expected[key].index_in_tabular_policy)


def test_compat_dcfr_solver():
  """`mccfrb.compat.discounted_cfr._DCFRSolver`: linear_averaging=False
  averages with weight 1 and regret_matching_plus is not applied, as in
  OpenSpiel's; alternating_updates=False (which runs no update in
  OpenSpiel's) is refused in one line."""
  game = pyspiel.load_game("kuhn_poker")
  args = (True, False, True, 1.5, 0.5, 2.0)
  theirs = os_dcfr._DCFRSolver(game, *args)  # pylint: disable=protected-access
  ours = compat_dcfr._DCFRSolver(game, *args)  # pylint: disable=protected-access
  for _ in range(5):
    theirs.evaluate_and_update_policy()
    ours.evaluate_and_update_policy()
  _assert_nodes_equal(_snapshot(ours)[2], _snapshot(theirs)[2])
  with pytest.raises(ValueError, match="runs no update") as error:
    compat_dcfr._DCFRSolver("no_such_game", False, True, False, 1.5, 0, 2)  # pylint: disable=protected-access
  assert "\n" not in str(error.value)
  # OpenSpiel's own: its tables do not move.
  idle = os_dcfr._DCFRSolver(game, False, True, False, 1.5, 0, 2)  # pylint: disable=protected-access
  idle.evaluate_and_update_policy()
  assert all(not n.cumulative_policy
             for n in idle._info_state_nodes.values())  # pylint: disable=protected-access


class Predictive(mccfrb.RegretRule):
  name = "my predictive rule"
  clip = True
  predictive = True


@pytest.mark.parametrize("variant", ["pcfr+", "dcfr+", "pdcfr+",
                                     Predictive()])
def test_rules_without_a_simultaneous_form_are_refused(variant):
  """One line naming the rules that run, before any work: the game (which
  does not exist) is never loaded."""
  with pytest.raises(ValueError) as error:
    mccfrb.CFRSolver("no_such_game", variant=variant,
                     alternating_updates=False)
  message = str(error.value)
  assert "\n" not in message
  assert message.startswith("alternating_updates=False (simultaneous "
                            "updates) runs the regret rules cfr, cfr+, "
                            "linear, discounted")
  with pytest.raises(ValueError, match="alternating_updates=False"):
    stream.StreamingCFR("no_such_game", variant=variant,
                        alternating_updates=False)
  for bad in (0, None, "False"):
    with pytest.raises(ValueError, match="must be True or False"):
      mccfrb.CFRSolver("kuhn_poker", alternating_updates=bad)


def test_rule_of_ones_own_runs_simultaneously():
  """A rule of one's own without prediction or early discount runs: RM+
  with average weight 1 is OpenSpiel's (True, False) flags."""

  class PlusUniform(mccfrb.RegretRule):
    name = "rm+ with uniform averaging"
    clip = True

  game = pyspiel.load_game("leduc_poker")
  ours = mccfrb.CFRSolver(game, variant=PlusUniform(),
                          alternating_updates=False)
  theirs = os_cfr._CFRSolver(game, alternating_updates=False,  # pylint: disable=protected-access
                             linear_averaging=False, regret_matching_plus=True)
  for _ in range(2):
    ours.run(1)
    theirs.evaluate_and_update_policy()
  _assert_nodes_equal(_snapshot(ours)[2], _snapshot(theirs)[2])


@pytest.mark.parametrize("variant", ["cfr+", "discounted"])
def test_passes_threads_and_resume_agree(variant):
  """On goofspiel 4: the four sweeps, the two sweeps on one and two
  threads, and runs split into calls give the same tables bit for bit
  (DCFR up to the sign of a zero regret)."""
  tree = mccfrb.compile_tree(GOOFSPIEL4)
  make = lambda **kw: mccfrb.CFRSolver(GOOFSPIEL4, variant=variant, tree=tree,
                                       alternating_updates=False, **kw)
  four, one, two, split = (make(passes="four_sweeps"), make(passes="sweeps"),
                           make(threads=2), make())
  assert split._passes == cfr_kernels.SWEEPS
  for solver in (four, one, two):
    solver.run(25)
  for n in (1, 9, 15):
    split.run(n)
  for solver in (one, two, split):
    for name in ("_regrets", "_avg", "_strategy"):
      a, b = getattr(four, name), getattr(solver, name)
      np.testing.assert_array_equal(a, b, err_msg=name)
      if variant != "discounted" or name != "_regrets":
        assert (a.view(np.int64) == b.view(np.int64)).all(), name


@pytest.mark.parametrize("representation", ["tree", "engine"])
def test_save_and_load_keep_simultaneous_updates(representation, tmp_path):
  """The option is saved: a loaded solver resumes with simultaneous
  updates, its tables equal to an unbroken run's."""
  game = "leduc_poker" if representation == "tree" else GOOFSPIEL4
  whole = mccfrb.CFRSolver(game, variant="cfr+", alternating_updates=False,
                           representation=representation)
  part = mccfrb.CFRSolver(game, variant="cfr+", alternating_updates=False,
                          representation=representation)
  whole.run(6)
  part.run(3)
  path = str(tmp_path / "simultaneous.npz")
  part.save(path)
  loaded = mccfrb.load_solver(path)
  assert not loaded.alternating_updates
  loaded.run(3)
  if representation == "tree":
    for name in ("_regrets", "_avg", "_strategy"):
      np.testing.assert_array_equal(getattr(loaded, name),
                                    getattr(whole, name))
  else:
    pyspiel_game = mccfrb.load_game(game)
    for policy in ("average_policy", "current_policy"):
      a, b = (os_policy.tabular_policy_from_callable(
          pyspiel_game, getattr(s, policy)()) for s in (loaded, whole))
      np.testing.assert_array_equal(a.action_probability_array,
                                    b.action_probability_array)
  # An alternating solver's file loads as alternating.
  plain = mccfrb.CFRSolver(game, variant="cfr+",
                           representation=representation)
  plain.save(path)
  assert mccfrb.load_solver(path).alternating_updates
