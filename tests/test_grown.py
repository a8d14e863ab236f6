"""The grown tree (representation="grown"): equal to the compiled tree bit
for bit on games that compile, resumable, capped by max_memory, and its
policies, refusals and choice by "auto"."""

import numpy as np
import pyspiel
import pytest

from open_spiel.python import policy

import mccfrb
from mccfrb.games import grown as grown_lib

GAMES = ["kuhn_poker", "leduc_poker", "goofspiel(num_cards=3)"]
CONFIGS = [
    dict(baseline="none", averaging="stochastic", regret="rm"),
    dict(baseline="thesis", averaging="optimistic", regret="rm"),
    dict(baseline="learned"),
    dict(baseline="history", averaging="stochastic", regret="rm+"),
    dict(baseline="predictive"),
    dict(baseline="none", averaging="stochastic", regret="rm",
         weighting="discounted"),
    dict(baseline="observation", averaging="optimistic", regret="rm+"),
]


def _pair(game, iterations, **options):
  tree = mccfrb.MCCFRbSolver(game, representation="tree", seed=11, **options)
  grown = mccfrb.MCCFRbSolver(game, representation="grown", seed=11,
                              **options)
  tree.run(iterations, progress=False)
  grown.run(iterations, progress=False)
  return tree, grown


def _assert_equal_tables(tree, grown):
  """Every table row of the compiled solver equals the grown solver's row
  of the same infoset (infosets the grown tree never stored: never
  updated), bit for bit, and so does the generator."""
  t = tree.tree
  rows = np.array([grown.grown_tree.find(k, int(p)) for k, p in zip(
      t.infoset_strings(), t.infoset_player)])
  stored = rows >= 0
  width = t.max_actions
  for name in ("_regrets", "_avg", "_strategy"):
    ours, theirs = getattr(tree, name), getattr(grown, name)
    np.testing.assert_array_equal(ours[stored], theirs[rows[stored], :width])
    assert not np.any(ours[~stored] != 0.0) or name == "_strategy"
  for name in ("_avg_last", "_through"):
    np.testing.assert_array_equal(getattr(tree, name)[stored],
                                  getattr(grown, name)[rows[stored]])
  np.testing.assert_array_equal(tree._rng_words, grown._rng_words)  # pylint: disable=protected-access
  assert tree.nodes_touched == grown.nodes_touched
  assert grown.grown_tree.num_nodes <= t.num_nodes


@pytest.mark.parametrize("game", GAMES)
@pytest.mark.parametrize("options", CONFIGS, ids=lambda o: "-".join(
    str(v) for v in o.values()))
def test_grown_run_equals_the_compiled_run(game, options):
  tree, grown = _pair(game, 400, **options)
  _assert_equal_tables(tree, grown)


def test_grown_average_policy_equals_the_compiled_one():
  tree, grown = _pair("leduc_poker", 2000, baseline="learned")
  assert mccfrb.nash_conv("leduc_poker", grown.average_policy()) == (
      pytest.approx(mccfrb.nash_conv("leduc_poker", tree.average_policy()),
                    abs=1e-12))
  assert mccfrb.nash_conv("leduc_poker", grown.current_policy()) == (
      pytest.approx(mccfrb.nash_conv("leduc_poker", tree.current_policy()),
                    abs=1e-12))


def test_split_runs_equal_one_run():
  one = mccfrb.MCCFRbSolver("leduc_poker", representation="grown", seed=2)
  two = mccfrb.MCCFRbSolver("leduc_poker", representation="grown", seed=2)
  one.run(700, progress=False)
  two.run(123, progress=False)
  two.run(577, progress=False)
  for name in ("_regrets", "_avg", "_baseline"):
    np.testing.assert_array_equal(getattr(one, name), getattr(two, name))
  assert one.grown_tree.num_nodes == two.grown_tree.num_nodes


def test_growth_stops_at_max_memory_and_episodes_play_out():
  limit = 1_600_000  # The first allocation takes 1.42 MB.
  solver = mccfrb.MCCFRbSolver("leduc_poker", representation="grown",
                               seed=0, max_memory=limit, baseline="learned")
  with pytest.warns(UserWarning, match="reached max_memory") as said:
    solver.run(20_000, progress=False)
    solver.run(1_000, progress=False)
  assert len([w for w in said if "max_memory" in str(w.message)]) == 1
  report = solver.memory()
  assert report["frozen"] and report["dropped"] > 0
  assert report["bytes"] <= limit
  assert report["nodes"] < mccfrb.compile_tree("leduc_poker").num_nodes
  # Still learning from the stored part: better than uniform.
  game = pyspiel.load_game("leduc_poker")
  assert mccfrb.nash_conv(game, solver.average_policy()) < mccfrb.nash_conv(
      game, policy.UniformRandomPolicy(game))


def test_auto_grows_a_game_without_engine_that_does_not_compile():
  solver = mccfrb.MCCFRbSolver("leduc_poker", max_nodes=1000, seed=0)
  assert solver.representation == "grown"
  solver.run(50, progress=False)
  assert mccfrb.MCCFRbSolver("leduc_poker", seed=0).representation == "tree"


def test_phantom_ttt_runs_and_its_policy_answers():
  # "auto" picks phantom_ttt's engine (tests/test_engine_phantom_ttt.py).
  solver = mccfrb.MCCFRbSolver("phantom_ttt", representation="grown", seed=0)
  assert solver.representation == "grown"
  solver.run(300, progress=False)
  report = solver.memory()
  assert report["nodes"] > 1000 and report["infosets"] > 100
  state = pyspiel.load_game("phantom_ttt").new_initial_state()
  probs = solver.average_policy().action_probabilities(state)
  assert sorted(probs) == state.legal_actions()
  assert sum(probs.values()) == pytest.approx(1.0)
  # Two players share the empty board's string; their infosets differ.
  key = state.information_state_string(0)
  assert solver.grown_tree.find(key, 0) >= 0
  assert solver.grown_tree.find(key, 0) != solver.grown_tree.find(key, 1)


def test_refusals():
  with pytest.raises(ValueError, match="on a grown tree use one of"):
    mccfrb.MCCFRbSolver("kuhn_poker", representation="grown",
                        baseline="oracle")
  with pytest.raises(ValueError, match="runs episodes one after the other .threads=1."):
    mccfrb.MCCFRbSolver("kuhn_poker", representation="grown", threads=2)
  with pytest.raises(ValueError, match="runs outcome sampling"):
    mccfrb.CFRSolver("kuhn_poker", representation="grown")
  with pytest.raises(ValueError, match="averaging='simple' there"):
    mccfrb.ExternalSamplingSolver("kuhn_poker", representation="grown",
                                  averaging="full")
  with pytest.raises(ValueError, match="two-player zero-sum"):
    mccfrb.MCCFRbSolver("kuhn_poker(players=3)", representation="grown")
  solver = mccfrb.MCCFRbSolver("kuhn_poker", representation="grown", seed=0)
  with pytest.raises(ValueError, match="grows the tree"):
    solver.average_policy_table()
  with pytest.raises(ValueError, match="below the first allocation"):
    mccfrb.MCCFRbSolver("leduc_poker", representation="grown",
                        max_memory=1 << 20)


def test_a_disagreeing_infoset_is_reported_with_its_string():
  game = pyspiel.load_game("kuhn_poker")
  tree = grown_lib.GrownTree(game, 1 << 24)
  tree._infoset("0", 0, 2)  # pylint: disable=protected-access
  with pytest.raises(ValueError, match="'0' was stored with 2 actions"):
    tree._infoset("0", 0, 3)  # pylint: disable=protected-access


def test_exact_evaluation_of_phantom_ttt_points_to_head_to_head():
  solver = mccfrb.MCCFRbSolver("phantom_ttt", seed=0)
  solver.run(20, progress=False)
  with pytest.raises(ValueError, match="head to head"):
    mccfrb.nash_conv("phantom_ttt", solver.average_policy())


def test_save_and_load_resume_bit_for_bit(tmp_path):
  path = tmp_path / "grown.npz"
  for options in ({"baseline": "thesis"}, {"baseline": "history"},
                  {"baseline": "observation"},
                  {"baseline": "none", "max_memory": 1_600_000}):
    whole = mccfrb.MCCFRbSolver("leduc_poker", representation="grown", seed=4,
                                **options)
    whole.run(3000, progress=False)
    part = mccfrb.MCCFRbSolver("leduc_poker", representation="grown", seed=4,
                               **options)
    part.run(1000, progress=False)
    part.save(path)
    loaded = mccfrb.load_solver(path)
    assert loaded.representation == "grown"
    loaded.run(2000, progress=False)
    for name in ("_regrets", "_avg", "_baseline", "_avg_last"):
      np.testing.assert_array_equal(getattr(whole, name),
                                    getattr(loaded, name))
    assert {k: v for k, v in whole.memory().items() if k != "max_memory"} == {
        k: v for k, v in loaded.memory().items() if k != "max_memory"}
    assert loaded.memory()["max_memory"] == part.memory()["max_memory"]


def test_a_damaged_grown_checkpoint_is_refused(tmp_path):
  solver = mccfrb.MCCFRbSolver("kuhn_poker", representation="grown", seed=0)
  solver.run(50, progress=False)
  tables = solver._tables_to_save()  # pylint: disable=protected-access
  tables["grown_child_start"] = tables["grown_child_start"].copy()
  tables["grown_child_start"][0] = 10**6
  solver._tables_to_save = lambda: tables  # pylint: disable=protected-access
  solver.save(tmp_path / "bad.npz")
  with pytest.raises(ValueError, match="bad.npz.*point outside"):
    mccfrb.load_solver(tmp_path / "bad.npz")


ES_CONFIGS = [
    {}, dict(weighting="linear"), dict(weighting="discounted"),
    dict(pruning="pluribus", prune_threshold=-0.5, prune_after=3),
    dict(pruning="probabilistic", prune_threshold=-0.5, prune_after=3),
]


@pytest.mark.parametrize("game", GAMES)
@pytest.mark.parametrize("options", ES_CONFIGS, ids=lambda o: "-".join(
    str(v) for v in o.values()) or "default")
def test_grown_external_sampling_equals_the_compiled_run(game, options):
  tree = mccfrb.ExternalSamplingSolver(game, representation="tree", seed=7,
                                       **options)
  grown = mccfrb.ExternalSamplingSolver(game, representation="grown", seed=7,
                                        **options)
  tree.run(60, progress=False)
  grown.run(25, progress=False)
  grown.run(35, progress=False)
  t = tree.tree
  rows = np.array([grown.grown_tree.find(k, int(p)) for k, p in zip(
      t.infoset_strings(), t.infoset_player)])
  stored = rows >= 0
  for name in ("_regrets", "_avg"):
    np.testing.assert_array_equal(
        getattr(tree, name)[stored],
        getattr(grown, name)[rows[stored], :t.max_actions])
    assert not np.any(getattr(tree, name)[~stored])
  np.testing.assert_array_equal(tree._through[stored],  # pylint: disable=protected-access
                                grown._through[rows[stored]])  # pylint: disable=protected-access
  np.testing.assert_array_equal(tree._rng_words, grown._rng_words)  # pylint: disable=protected-access
  assert tree.nodes_touched == grown.nodes_touched
  assert tree.subtrees_pruned == grown.subtrees_pruned


def test_grown_external_sampling_saves_and_loads(tmp_path):
  whole = mccfrb.ExternalSamplingSolver("leduc_poker", representation="grown",
                                        seed=1)
  whole.run(40, progress=False)
  part = mccfrb.ExternalSamplingSolver("leduc_poker", representation="grown",
                                       seed=1)
  part.run(15, progress=False)
  part.save(tmp_path / "es.npz")
  loaded = mccfrb.load_solver(tmp_path / "es.npz")
  loaded.run(25, progress=False)
  np.testing.assert_array_equal(whole._regrets, loaded._regrets)  # pylint: disable=protected-access
  game = pyspiel.load_game("leduc_poker")
  assert mccfrb.nash_conv(game, loaded.average_policy()) == pytest.approx(
      mccfrb.nash_conv(game, whole.average_policy()), abs=1e-12)


def test_only_the_nodes_episodes_reach_are_stored():
  solver = mccfrb.OutcomeSamplingSolver("leduc_poker", representation="grown",
                                        seed=0)
  solver.run(1, progress=False)  # Two episodes, one per player.
  g = solver.grown_tree
  # Each episode stores at most its path: never a sibling it did not take.
  assert g.num_nodes <= 2 * (g.max_depth - 1) + 1
  stored = g.slot_node[:g.num_slots]
  assert np.sum(stored >= 0) == g.num_nodes - 1  # Every node but the root.
  children = np.sort(stored[stored >= 0])
  np.testing.assert_array_equal(children, np.arange(1, g.num_nodes))
  for node in range(1, g.num_nodes):
    assert g.slot_node[g.slot(g.node_parent[node], g.node_action[node])] == node
  solver.run(2000, progress=False)
  report = solver.memory()
  tree = mccfrb.compile_tree("leduc_poker")
  assert report["nodes"] < tree.num_nodes
  assert report["slots"] == int(g.num_children[:g.num_nodes].sum())
  # memory() bounds: a node and its slots, at most doubled by capacity.
  per_node = grown_lib.BYTES_PER_NODE + grown_lib.BYTES_PER_SLOT * (
      report["slots"] / report["nodes"])
  assert per_node <= report["bytes_per_node"] <= 2 * per_node + 1e-9
  assert report["bytes_per_infoset"] >= grown_lib.BYTES_PER_INFOSET
