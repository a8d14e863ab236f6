"""Games with more than two players and general-sum games ("general" trees):
the compiled returns, NashConv and best responses against OpenSpiel's,
the CFR family's tables against OpenSpiel's Python solvers, outcome and
external sampling against OpenSpiel's in distribution, and the refusals
of what stays two-player zero-sum only."""

import numpy as np
import pyspiel
import pytest
from open_spiel.python import policy
from open_spiel.python.algorithms import cfr
from open_spiel.python.algorithms import discounted_cfr
from open_spiel.python.algorithms import exploitability
from open_spiel.python.algorithms import external_sampling_mccfr
from open_spiel.python.algorithms import outcome_sampling_mccfr

import mccfrb
from mccfrb.games import tree as tree_lib

KUHN3 = "kuhn_poker(players=3)"
# Two-player general-sum: goofspiel scored by total points, turn-based.
GOOF_GS = ("turn_based_simultaneous_game(game=goofspiel(num_cards=3,"
           "points_order=descending,returns_type=total_points))")
GENERAL = [KUHN3, "kuhn_poker(players=4)", "matrix_pd", "matrix_bos", GOOF_GS]


def _histories(tree):
  """The OpenSpiel action sequence of every node, by walking the tree."""
  parents, actions = tree.node_parents(), tree.edge_actions()
  out = [[] for _ in range(tree.num_nodes)]
  for n in range(1, tree.num_nodes):  # Parents have smaller ids.
    out[n] = out[parents[n]] + [int(actions[n])]
  return out


@pytest.mark.parametrize("spec", GENERAL)
def test_general_tree_holds_every_players_returns(spec):
  game = mccfrb.load_game(spec, general=True)
  tree = mccfrb.compile_tree(game)
  assert tree.is_general and tree.num_players == game.num_players()
  np.testing.assert_array_equal(tree.returns[:, 0], tree.utility)
  terminals = np.flatnonzero(tree.node_kind == tree_lib.TERMINAL)
  histories = _histories(tree)
  for n in terminals[::max(1, len(terminals) // 50)]:
    state = game.new_initial_state()
    for a in histories[n]:
      state.apply_action(a)
    assert state.is_terminal()
    np.testing.assert_array_equal(tree.returns[n], state.returns())
  assert not np.any(tree.returns[tree.node_kind != tree_lib.TERMINAL])
  assert not mccfrb.compile_tree("kuhn_poker").is_general


def _trained(game, iterations=7):
  solver = cfr.CFRSolver(game)
  for _ in range(iterations):
    solver.evaluate_and_update_policy()
  return solver.average_policy()


@pytest.mark.parametrize("spec", GENERAL)
def test_nash_conv_and_best_responses_equal_openspiels(spec):
  game = pyspiel.load_game(spec)
  loaded = mccfrb.load_game(spec, general=True)
  for pol in (policy.UniformRandomPolicy(loaded),
              policy.FirstActionPolicy(loaded), _trained(loaded)):
    assert mccfrb.nash_conv(game, pol) == pytest.approx(
        exploitability.nash_conv(loaded, pol), abs=1e-12)
    for p in range(game.num_players()):
      ours = mccfrb.best_response(game, pol, p)
      theirs = exploitability.best_response(loaded, pol, p)
      assert ours["nash_conv"] == pytest.approx(theirs["nash_conv"],
                                                abs=1e-12)
      np.testing.assert_allclose(ours["on_policy_values"],
                                 theirs["on_policy_values"], atol=1e-12)
      assert ours["best_response_action"] == theirs["best_response_action"]


def test_exploitability_is_refused_where_openspiel_refuses_it():
  game = pyspiel.load_game(KUHN3)
  with pytest.raises(ValueError, match="two-player zero-sum.*nash_conv"):
    mccfrb.exploitability(game, policy.UniformRandomPolicy(game))
  with pytest.raises(ValueError, match="nash_conv"):
    mccfrb.exploitability(mccfrb.compile_tree("matrix_pd"),
                          np.full((2, 2), 0.5))


@pytest.mark.parametrize("spec", [KUHN3, GOOF_GS])
@pytest.mark.parametrize("variant, theirs", [
    ("cfr", cfr.CFRSolver), ("cfr+", cfr.CFRPlusSolver),
    ("discounted", discounted_cfr.DCFRSolver),
    ("linear", discounted_cfr.LCFRSolver)])
def test_cfr_family_equals_openspiels_python_solvers(spec, variant, theirs):
  """Alternating updates over every player, as OpenSpiel's cfr.py and
  discounted_cfr.py run games of any number of players."""
  game = mccfrb.load_game(spec, general=True)
  ours, reference = mccfrb.CFRSolver(game, variant=variant), theirs(game)
  for _ in range(12):
    ours.evaluate_and_update_policy()
    reference.evaluate_and_update_policy()
  for mine, other in ((ours.average_policy(), reference.average_policy()),
                      (ours.current_policy(), reference.current_policy())):
    np.testing.assert_allclose(mine.action_probability_array,
                               other.action_probability_array, atol=1e-12)


@pytest.mark.parametrize("variant", ["pcfr+", "dcfr+", "pdcfr+"])
def test_new_rules_converge_on_a_three_player_game(variant):
  game = mccfrb.load_game(KUHN3, general=True)
  solver = mccfrb.CFRSolver(game, variant=variant)
  solver.run(10, progress=False)
  early = mccfrb.nash_conv(game, solver.average_policy())
  solver.run(190, progress=False)
  assert mccfrb.nash_conv(game, solver.average_policy()) < early / 5


def _nash_convs(game, make, iterations, seeds):
  values = []
  for seed in seeds:
    np.random.seed(seed)
    solver = make(seed)
    for _ in range(iterations):
      solver.iteration()
    values.append(mccfrb.nash_conv(game, solver.average_policy()))
  return np.array(values)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["outcome", "external_simple",
                                  "external_full"])
def test_sampling_matches_openspiel_in_distribution(name):
  """30 seeds each on 3-player Kuhn: mccfrb's mean NashConv is OpenSpiel's
  within 4 standard errors (their random streams differ)."""
  game = mccfrb.load_game(KUHN3, general=True)
  if name == "outcome":
    iterations = 300
    theirs = lambda _: outcome_sampling_mccfr.OutcomeSamplingSolver(game)
    ours = lambda seed: mccfrb.OutcomeSamplingSolver(game, seed=seed)
  else:
    iterations = 5
    kind = external_sampling_mccfr.AverageType[name.split("_")[1].upper()]
    theirs = lambda _: external_sampling_mccfr.ExternalSamplingSolver(
        game, kind)
    ours = lambda seed: mccfrb.ExternalSamplingSolver(game, averaging=kind,
                                                      seed=seed)
  a = _nash_convs(game, theirs, iterations, range(30))
  b = _nash_convs(game, ours, iterations, range(30))
  error = np.sqrt((a.var(ddof=1) + b.var(ddof=1)) / 30)
  assert abs(a.mean() - b.mean()) < 4 * error, (a.mean(), b.mean(), error)


def _tables(solver):
  return [solver._regrets.copy(), solver._avg.copy()]  # pylint: disable=protected-access


@pytest.mark.parametrize("make", [
    lambda g, **k: mccfrb.OutcomeSamplingSolver(g, seed=3, **k),
    lambda g, **k: mccfrb.MCCFRbSolver(g, baseline="thesis", seed=3, **k),
    lambda g, **k: mccfrb.ExternalSamplingSolver(g, seed=3, **k),
    lambda g, **k: mccfrb.ExternalSamplingSolver(g, averaging="full", seed=3,
                                                 **k),
], ids=["outcome", "mccfrb_thesis", "external", "external_full"])
@pytest.mark.slow
def test_sampling_runs_split_and_batched_on_three_players(make):
  """run(a); run(b) equals run(a + b); batches equal on 1 and 2 threads."""
  whole, parts = make(KUHN3), make(KUHN3)
  whole.run(60, progress=False)
  parts.run(25, progress=False)
  parts.run(35, progress=False)
  for x, y in zip(_tables(whole), _tables(parts)):
    np.testing.assert_array_equal(x, y)
  one, two = make(KUHN3, batch=8), make(KUHN3, batch=8, threads=2)
  one.run(40, progress=False)
  two.run(40, progress=False)
  for x, y in zip(_tables(one), _tables(two)):
    np.testing.assert_array_equal(x, y)
  assert mccfrb.nash_conv(KUHN3, two.average_policy()) < mccfrb.nash_conv(
      KUHN3, policy.UniformRandomPolicy(pyspiel.load_game(KUHN3)))


def test_three_player_episodes_update_every_player():
  """An iteration is one episode per player: each player's infosets get
  regret updates (an update order of e % 2 would leave player 2 at 0)."""
  solver = mccfrb.OutcomeSamplingSolver(KUHN3, seed=0)
  solver.run(200, progress=False)
  tree = solver.tree
  for p in range(3):
    rows = tree.infoset_player == p
    assert np.any(solver._regrets[rows] != 0.0)  # pylint: disable=protected-access


def test_two_player_zero_sum_only_methods_refuse_general_games():
  with pytest.raises(ValueError, match="averaging='stochastic'"):
    mccfrb.MCCFRbSolver(KUHN3, averaging="optimistic")
  with pytest.raises(ValueError, match="two-player zero-sum games only"):
    mccfrb.PublicSamplingSolver(KUHN3)
  with pytest.raises(ValueError, match="four sweeps on one thread"):
    mccfrb.CFRSolver(KUHN3, threads=2)
  with pytest.raises(ValueError, match="two-player zero-sum"):
    mccfrb.MCCFRbSolver(KUHN3, seed=0).sample_estimates(10)
  with pytest.raises(ValueError, match="two-player zero-sum"):
    mccfrb.PublicSamplingSolver("kuhn_poker",
                                tree=mccfrb.compile_tree(KUHN3))
  # Two-player general-sum games keep optimistic averaging.
  solver = mccfrb.MCCFRbSolver("matrix_pd", seed=0)
  assert solver.averaging == "optimistic"
  assert mccfrb.MCCFRbSolver(KUHN3).baseline == "predictive"
  solver.run(50, progress=False)


@pytest.mark.parametrize("make", [
    lambda: mccfrb.ExternalSamplingSolver(KUHN3, seed=1),
    lambda: mccfrb.MCCFRbSolver(KUHN3, baseline="history", seed=1)],
                         ids=["external", "mccfrb_history"])
def test_save_and_load_a_three_player_solver(tmp_path, make):
  solver = make()
  solver.run(20, progress=False)
  solver.save(tmp_path / "solver.npz")
  loaded = type(solver).load(tmp_path / "solver.npz")
  solver.run(10, progress=False)
  loaded.run(10, progress=False)
  for x, y in zip(_tables(solver), _tables(loaded)):
    np.testing.assert_array_equal(x, y)
  if isinstance(solver, mccfrb.MCCFRbSolver):  # One block per player.
    np.testing.assert_array_equal(solver._baseline, loaded._baseline)  # pylint: disable=protected-access
    assert solver._baseline.size == 3 * solver.tree.num_nodes  # pylint: disable=protected-access
