"""Tests of mccfrb.approximate_exploitability (mccfrb/evaluation/bound.py)."""

import importlib
import os
import subprocess
import sys

import numpy as np
import pyspiel
import pytest
from open_spiel.python import policy as os_policy
from open_spiel.python.algorithms import exploitability as os_exploitability

import mccfrb
from mccfrb import evaluation
from mccfrb.evaluation import budget

bound = importlib.import_module("mccfrb.evaluation.bound")


def _trained(game, iterations, seed=0):
  solver = mccfrb.MCCFRbSolver(game, seed=seed)
  solver.run(iterations, progress=False)
  return solver.tree, solver.average_policy_table()


def _train_tree(tree, table, player, generator, iterations):
  """(best action column per infoset, walks, seconds) of `player`'s
  responder on the tree, trained for `iterations` walks."""
  return budget.train_all([bound._TreeTrainer(tree, table, player, generator)],
                          None, iterations, False, None)[0]


def _score_tree(tree, table, player, best, generator, episodes):
  """(mean, stderr) of `player`'s return with `best` against `table`."""
  return budget.score_all([bound._TreeScorer(tree, table, player, best,
                                             generator, episodes)],
                          episodes, False, None)[0]


def _check_lower_bound(result, exact):
  """The bound does not exceed the exact value beyond its interval."""
  assert result.low <= exact, (result, exact)
  assert result.low < result.exploitability < result.high


def _responder_value(tree, table, player, best):
  """`player`'s exact value playing the columns `best` against `table`."""
  mixed = table.copy()
  mine = np.flatnonzero(tree.infoset_player == player)
  mixed[mine] = 0.0
  mixed[mine, best[mine]] = 1.0
  value0 = mccfrb.expected_value(tree, mixed)
  return value0 if player == 0 else tree.utility_sum - value0


@pytest.mark.parametrize("game", ["kuhn_poker", "leduc_poker"])
def test_uniform_policy_bound_is_below_and_close(game):
  tree = evaluation.as_tree(game)
  table = mccfrb.uniform_table(tree)
  exact = mccfrb.exploitability(game, table)
  result = mccfrb.approximate_exploitability(
      game, table, seconds=2, seed=0, episodes=400_000, progress=False)
  _check_lower_bound(result, exact)
  assert result.exploitability >= 0.9 * exact, (result, exact)
  assert result.representation == "tree"


@pytest.mark.slow
@pytest.mark.parametrize("game,iterations", [("kuhn_poker", 2_000),
                                             ("leduc_poker", 20_000)])
def test_trained_policy_bound_is_below_and_close(game, iterations):
  tree, table = _trained(game, iterations)
  exact = mccfrb.exploitability(tree, table)
  result = mccfrb.approximate_exploitability(
      game, table, seconds=3, seed=1, episodes=1_000_000, progress=False)
  _check_lower_bound(result, exact)
  assert result.exploitability >= 0.85 * exact, (result, exact)


def test_definition_matches_openspiel_on_leduc():
  """The quantity bounded is OpenSpiel's exploitability (NashConv / 2)."""
  game = pyspiel.load_game("leduc_poker")
  tree, table = _trained("leduc_poker", 5_000)
  tabular = mccfrb.to_tabular_policy(game, tree, table)
  exact = os_exploitability.exploitability(game, tabular)
  assert exact == pytest.approx(mccfrb.exploitability(tree, table), abs=1e-9)
  result = mccfrb.approximate_exploitability(
      game, tabular, seconds=2, seed=2, episodes=1_000_000, progress=False)
  _check_lower_bound(result, exact)
  assert result.exploitability >= 0.9 * exact


@pytest.mark.parametrize("game", ["kuhn_poker", "leduc_poker"])
def test_responder_is_below_best_response_and_scored_without_bias(game):
  """Exactly: each trained responder's value is at most the best
  response's, and the Monte Carlo score's interval covers its exact value."""
  tree, table = _trained(game, 3_000)
  best_values = mccfrb.best_response_values(tree, table)
  streams = [np.random.default_rng(s) for s in (5, 6)]
  for p in (0, 1):
    best, walks, _ = _train_tree(tree, table, p, streams[0], 20_000)
    assert walks == 20_000
    value = _responder_value(tree, table, p, best)
    assert value <= best_values[p] + 1e-9
    assert value >= best_values[p] - 0.1 * abs(best_values[p]) - 0.02
    mean, stderr = _score_tree(tree, table, p, best, streams[1], 400_000)
    assert abs(mean - value) < 4.5 * stderr, (p, mean, stderr, value)


def test_states_representation_on_kuhn():
  game = pyspiel.load_game("kuhn_poker")
  exact = mccfrb.exploitability(game, mccfrb.uniform_table(
      evaluation.as_tree(game)))
  result = mccfrb.approximate_exploitability(
      game, os_policy.UniformRandomPolicy(game), iterations=3_000, seed=0,
      episodes=20_000, representation="states", progress=False)
  assert result.representation == "states"
  _check_lower_bound(result, exact)
  assert result.exploitability >= 0.85 * exact


@pytest.mark.parametrize("representation", ["tree", "states"])
def test_reproducible_with_the_same_seed(representation):
  game = "kuhn_poker"
  policy = (mccfrb.uniform_table(evaluation.as_tree(game))
            if representation == "tree"
            else os_policy.UniformRandomPolicy(pyspiel.load_game(game)))
  kwargs = dict(iterations=500, episodes=2_000, progress=False,
                representation=representation)
  first = mccfrb.approximate_exploitability(game, policy, seed=7, **kwargs)
  again = mccfrb.approximate_exploitability(game, policy, seed=7, **kwargs)
  other = mccfrb.approximate_exploitability(game, policy, seed=8, **kwargs)
  assert (first._replace(seconds=0, responders=())
          == again._replace(seconds=0, responders=()))
  for mine, theirs in zip(first.responders, again.responders):
    if representation == "tree":
      np.testing.assert_array_equal(mine, theirs)
    else:
      assert mine == theirs
  assert first.values != other.values


def test_seconds_leave_out_compiling_on_an_empty_numba_cache(tmp_path):
  """On an empty numba cache (a process of its own), the tree route's
  training seconds are the budget's: compiling the final best response's
  kernel (about half a second) happens before the timed walks."""
  script = (
      "import numpy as np, mccfrb\n"
      "tree = mccfrb.compile_tree('leduc_poker')\n"
      "table = np.zeros((tree.num_infosets, tree.max_actions))\n"
      "for i, n in enumerate(tree.infoset_num_actions):\n"
      "  table[i, :n] = 1.0 / n\n"
      "r = mccfrb.approximate_exploitability('leduc_poker', table, "
      "seconds=0.3, seed=0, episodes=1000, progress=False)\n"
      "print(r.seconds)\n")
  done = subprocess.run(
      [sys.executable, "-c", script], capture_output=True, text=True,
      timeout=300, env=dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path)))
  assert done.returncode == 0, done.stderr
  assert any(tmp_path.rglob("*.nbi"))  # It compiled into the empty cache.
  assert 0.3 <= float(done.stdout.split()[-1]) < 0.4, done.stdout


def test_two_threads_give_the_one_thread_result_on_the_tree():
  """Side by side (threads=2) the responders see the same walks and the
  same scoring episodes as one after the other, and a time budget gives
  each the whole of it (the same walks each)."""
  tree, table = _trained("leduc_poker", 2_000)
  kwargs = dict(iterations=20_000, episodes=50_000, seed=3, progress=False)
  one = mccfrb.approximate_exploitability("leduc_poker", table, **kwargs)
  two = mccfrb.approximate_exploitability("leduc_poker", table, threads=2,
                                          **kwargs)
  assert (one._replace(seconds=0, responders=())
          == two._replace(seconds=0, responders=()))
  for mine, theirs in zip(one.responders, two.responders):
    np.testing.assert_array_equal(mine, theirs)
  timed = mccfrb.approximate_exploitability(
      "leduc_poker", table, seconds=0.5, episodes=1_000, seed=3, threads=2,
      progress=False)
  assert timed.iterations[0] == timed.iterations[1] > 0
  assert 0.5 <= timed.seconds < 5
  # The kernels the threads run release the GIL.
  assert bound._sample_walks.targetoptions["nogil"]
  assert bound._play.targetoptions["nogil"]


@pytest.mark.parametrize("game,kwargs,match", [
    ("kuhn_poker(players=3)", {}, "two-player zero-sum"),
    ("kuhn_poker", dict(seconds=0), "seconds must be a number > 0"),
    ("kuhn_poker", dict(seconds=-1.0), "seconds must be a number > 0"),
    ("kuhn_poker", dict(seconds=1, iterations=5), "not both"),
    ("kuhn_poker", dict(iterations=0), "iterations must be"),
    ("kuhn_poker", dict(episodes=1), "episodes must be"),
    ("kuhn_poker", dict(confidence=1.0), "confidence must be"),
    ("kuhn_poker", dict(representation="grown"), "representation must be"),
    ("kuhn_poker", dict(seed=-1), "seed must be"),
    ("kuhn_poker", dict(threads=3), "threads must be 1 or 2"),
    ("kuhn_poker", dict(threads=True), "threads must be 1 or 2"),
    ("kuhn_poker", dict(threads=2, representation="states", iterations=5),
     "states route .* one thread"),
])
def test_bad_input_is_refused_in_one_line(game, kwargs, match):
  policy = os_policy.UniformRandomPolicy(pyspiel.load_game("kuhn_poker"))
  with pytest.raises(ValueError, match=match) as info:
    mccfrb.approximate_exploitability(game, policy, progress=False,
                                      **kwargs)
  assert "\n" not in str(info.value)


def test_policy_of_another_game_is_refused():
  leduc = os_policy.TabularPolicy(pyspiel.load_game("leduc_poker"))
  with pytest.raises(ValueError, match="another game") as info:
    mccfrb.approximate_exploitability("kuhn_poker", leduc, iterations=10,
                                      episodes=10, progress=False)
  assert "\n" not in str(info.value)
  table = mccfrb.uniform_table(evaluation.as_tree("leduc_poker"))
  with pytest.raises(ValueError, match="shape") as info:
    mccfrb.approximate_exploitability("kuhn_poker", table, iterations=10,
                                      episodes=10, progress=False)
  assert "\n" not in str(info.value)


def test_merged_information_states_on_the_tree():
  """goofspiel with imp_info=False merges histories in one information
  state string (the same hands after different orders of play): the
  responder is the best response to the sampled game, node by node, and
  converges to the exact best response there too."""
  game = "goofspiel(num_cards=4)"
  tree, table = _trained(game, 5_000)
  best_values = mccfrb.best_response_values(tree, table)
  for p in (0, 1):
    best, _, _ = _train_tree(tree, table, p, np.random.default_rng(p),
                             200_000)
    value = _responder_value(tree, table, p, best)
    assert best_values[p] - 0.01 <= value <= best_values[p] + 1e-9, (
        p, value, best_values[p])


def test_states_refuses_merged_information_states():
  game = pyspiel.load_game("goofspiel(num_cards=4)")
  with pytest.raises(ValueError, match="perfect recall") as info:
    mccfrb.approximate_exploitability(
        game, os_policy.UniformRandomPolicy(game), iterations=200,
        episodes=10, representation="states", progress=False)
  assert "\n" not in str(info.value)
