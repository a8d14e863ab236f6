"""The `openspiel_nfsp` comparator: OpenSpiel's JAX NFSP behind the nfsp extra."""

import os
import subprocess
import sys

import numpy as np
import pyspiel
import pytest

import mccfrb
from mccfrb.experiment import nfsp
from mccfrb.tables import policy as policy_lib
from mccfrb.experiment import registry

# A study or a long check: left out of the fast loop (tests/conftest.py).
pytestmark = pytest.mark.slow

SKIP_REASON = f"needs the nfsp extra: {nfsp.INSTALL}"
KUHN_UNIFORM = 0.4583333333333333  # Exploitability of Kuhn's uniform policy.


@pytest.fixture(scope="module")
def os_nfsp():
  nfsp._set_single_thread_flags()  # pylint: disable=protected-access
  if os.environ.get("CI"):  # CI installs the nfsp extra: never skip there.
    import open_spiel.python.jax.nfsp as module  # pylint: disable=g-import-not-at-top
    return module
  return pytest.importorskip("open_spiel.python.jax.nfsp", reason=SKIP_REASON)


@pytest.fixture(scope="module")
def kuhn():
  game = mccfrb.load_game("kuhn_poker")
  return game, mccfrb.compile_tree(game)


@pytest.fixture(scope="module")
def leduc():
  game = mccfrb.load_game("leduc_poker")
  return game, mccfrb.compile_tree(game)


@pytest.fixture(scope="module")
def kuhn_run(os_nfsp, kuhn):  # pylint: disable=redefined-outer-name
  """Seed 0 through the registry: tables at 0 and 3000 episodes."""
  del os_nfsp
  game, tree = kuhn
  runner = registry.make("openspiel_nfsp", game, 0, tree=tree)
  tables = {0: runner.average_policy_table(tree)}
  runner.run(3000)
  tables[3000] = runner.average_policy_table(tree)
  return runner, tables


def test_kuhn_exploitability_falls_clearly_below_uniform(kuhn, kuhn_run):  # pylint: disable=redefined-outer-name
  # Measured with seeds 0-5 (`experiments.measurements --sets=nfsp_kuhn`):
  # 0.445-0.568 before the first supervised step (the random average-policy
  # network; the reservoir holds a batch after about 1,000 episodes), then
  # 0.321-0.371 at 3,000 episodes. The thresholds sit between the two.
  _, tree = kuhn
  _, tables = kuhn_run
  assert mccfrb.exploitability(tree, tables[0]) > 0.42
  assert mccfrb.exploitability(tree, tables[3000]) < 0.40 < KUHN_UNIFORM


def test_same_seed_same_run_split_or_not(os_nfsp, kuhn):  # pylint: disable=redefined-outer-name
  del os_nfsp
  game, tree = kuhn
  # Batches of 16 so the supervised steps start within 300 episodes and the
  # equality covers the networks' training, not only their initialisation.
  small = dict(batch_size=16, min_buffer_size_to_learn=16)
  whole = nfsp.NFSPRunner(game, 0, tree, **small)
  start = whole.average_policy_table(tree)
  whole.run(300)
  table = whole.average_policy_table(tree)
  assert not np.allclose(table, start, atol=1e-3)
  split = nfsp.NFSPRunner(game, 0, tree, **small)
  split.run(120)
  split.run(180)
  np.testing.assert_array_equal(split.average_policy_table(tree), table)
  other = nfsp.NFSPRunner(game, 1, tree, **small)
  assert not np.allclose(other.average_policy_table(tree), start, atol=1e-3)


def _network_step_probs(os_nfsp, runner, state):  # pylint: disable=redefined-outer-name
  """NFSP's own action probabilities (its evaluation step) at `state`."""
  from open_spiel.python import rl_environment  # pylint: disable=g-import-not-at-top
  player = state.current_player()
  obs = {"info_state": [None, None], "legal_actions": [None, None],
         "current_player": player}
  obs["info_state"][player] = state.information_state_tensor(player)
  obs["legal_actions"][player] = state.legal_actions()
  step = rl_environment.TimeStep(observations=obs, rewards=None,
                                 discounts=None, step_type=None)
  agent = runner.agents[player]
  with agent.temp_mode_as(os_nfsp.MODE.AVERAGE_POLICY):
    return np.asarray(agent.step(step, is_evaluation=True).probs)


@pytest.mark.parametrize("which", ["kuhn", "leduc"])
def test_table_is_the_average_networks_policy(os_nfsp, kuhn_run, leduc, kuhn,  # pylint: disable=redefined-outer-name
                                               which):
  if which == "kuhn":
    (game, tree), (runner, _) = kuhn, kuhn_run
  else:
    game, tree = leduc
    runner = nfsp.NFSPRunner(game, 2, tree, reservoir_buffer_capacity=10_000)
    runner.run(30)
  table = runner.average_policy_table(tree)
  policy_lib.validate_table(tree, table)
  states = policy_lib._representative_states(str(game))  # pylint: disable=protected-access
  sample = np.random.default_rng(0).choice(
      tree.num_infosets, size=min(40, tree.num_infosets), replace=False)
  for i in sample:
    probs = _network_step_probs(os_nfsp, runner, states[tree.infoset_key(i)])
    n = tree.infoset_num_actions[i]
    # Float32 network; the table is renormalised in float64.
    np.testing.assert_allclose(table[i, :n],
                               probs[tree.infoset_actions[i, :n]], atol=1e-6)
  # The two players' networks differ, and the table follows each.
  assert len(np.unique(table.round(6), axis=0)) > tree.num_infosets // 2


def test_guard_lets_a_crashing_seed_run(os_nfsp, leduc):  # pylint: disable=redefined-outer-name
  # With seed 1 on Leduc, player 0's first 64 steps (its first learning step,
  # in episode 20) all follow the average policy, so its reservoir is still
  # None and OpenSpiel 2.0.2's _learn raises (a small reservoir: the crash
  # does not depend on its capacity, allocation does take time).
  game, tree = leduc
  unguarded = nfsp.NFSPRunner(game, 1, tree, agent_class=os_nfsp.NFSP,
                              reservoir_buffer_capacity=10_000)
  with pytest.raises(TypeError, match="'NoneType' has no len"):
    unguarded.run(60)
  assert unguarded.num_iterations == 0 and unguarded.agents[0].step_counter == 64
  guarded = nfsp.NFSPRunner(game, 1, tree, reservoir_buffer_capacity=10_000)
  guarded.run(60)
  assert guarded.num_iterations == 60
  assert guarded.agents[0].step_counter > 64
  policy_lib.validate_table(tree, guarded.average_policy_table(tree))


def test_missing_extra_says_how_to_install(monkeypatch, kuhn):  # pylint: disable=redefined-outer-name
  game, tree = kuhn
  for name in nfsp.REQUIRED_MODULES:
    monkeypatch.setitem(sys.modules, name, None)  # import raises ImportError
  nfsp._openspiel_nfsp.cache_clear()  # pylint: disable=protected-access
  try:
    with pytest.raises(ValueError, match=r'pip install -e "\.\[nfsp\]"'):
      registry.make("openspiel_nfsp", game, 0, tree=tree)
  finally:
    nfsp._openspiel_nfsp.cache_clear()  # pylint: disable=protected-access


def test_mccfrb_and_the_registry_do_not_import_jax():
  code = ("import sys, mccfrb, mccfrb.experiment.registry, mccfrb.experiment.sweep, mccfrb.experiment.nfsp; "
          "print('jax' in sys.modules)")
  out = subprocess.run([sys.executable, "-c", code], capture_output=True,
                       text=True, check=True)
  assert out.stdout.strip() == "False"


def test_unknown_hyperparameter_and_unsupported_game(kuhn):  # pylint: disable=redefined-outer-name
  game, tree = kuhn
  with pytest.raises(ValueError, match="Unknown NFSP hyperparameter.*'lr'"):
    nfsp.NFSPRunner(game, 0, tree, lr=0.1)
  with pytest.raises(ValueError, match="two-player sequential"):
    nfsp.check_game(pyspiel.load_game("kuhn_poker(players=3)"))
