"""Probing (Gibson et al. 2012): the registry's `probe` kind on engines.

At the update player's node every unsampled move's value is one on-policy
rollout from it; the sampled move's is its estimate from below, not
divided by xi (kernels/outcome.py `probed_estimate`).
"""

import numpy as np
import pytest

import mccfrb
from mccfrb.kernels import baselines
from mccfrb.solvers import engine as engine_lib
from tests.test_engine_solvers import G4
from tests.test_engine_solvers import assert_same_arena
from tests.conftest import check_hogwild_converges_as_one_thread
from tests.conftest import engine_exploitabilities


def _solver(game, seed, **options):
  return mccfrb.MCCFRbSolver(game, representation="engine", seed=seed,
                             baseline="probe", **options)


def test_probing_is_an_engine_kind_and_elsewhere_a_one_line_refusal():
  assert "probe" in baselines.kinds("engine")
  assert "probe" not in baselines.kinds("tree") + baselines.kinds("grown")
  assert "probe" not in mccfrb.PUBLIC_BASELINES
  with pytest.raises(ValueError) as refusal:
    mccfrb.MCCFRbSolver("kuhn_poker", baseline="probe")
  message = str(refusal.value)
  assert "\n" not in message and "engine" in message, message


# Rollouts draw from the episode's generator: runs split at whole groups
# still equal one run.
@pytest.mark.parametrize("in_flight,splits", [(1, (1, 99, 200, 300)),
                                              (8, (4, 96, 200, 300))])
def test_probing_runs_in_parts_equal_one_run(monkeypatch, in_flight, splits):
  whole = _solver(G4, 3, in_flight=in_flight)
  whole.run(600)
  monkeypatch.setattr(engine_lib, "CHUNK_EPISODES", 6)
  parts = _solver(G4, 3, in_flight=in_flight)
  for n in splits:
    parts.run(n)
  assert parts.num_iterations == whole.num_iterations == 600
  assert_same_arena(whole._backend.tables, parts._backend.tables)
  # Another seed, other rollouts.
  other = _solver(G4, 4, in_flight=in_flight)
  other.run(600)
  assert not np.array_equal(other._backend.tables.words, whole._backend.tables.words)


@pytest.mark.slow
def test_probing_converges_faster_per_iteration_than_no_baseline():
  """Unbiased and of lower variance: after 20,000 iterations on goofspiel
  4, each seed's exploitability is below no baseline's with the same seed
  and the mean below 0.6 of it (measured: 0.116-0.137 against
  0.272-0.288). A biased estimate (a rollout read in the wrong player's
  utility, the sampled move divided by xi, a rollout off sigma) stalls
  well above."""
  probe = engine_exploitabilities(lambda seed: _solver(G4, seed), G4,
                                  20_000, range(3))
  plain = engine_exploitabilities(
      lambda seed: mccfrb.MCCFRbSolver(G4, representation="engine",
                                       seed=seed, baseline="none"),
      G4, 20_000, range(3))
  assert np.all(probe < plain), (probe, plain)
  assert probe.mean() < 0.6 * plain.mean(), (probe, plain)


@pytest.mark.slow
def test_probing_cuts_the_variance_of_the_sampled_regrets():
  """Measured on goofspiel 4 after 2,000 iterations, 30 trajectories of 50
  continuations: about 50x lower than without a baseline."""
  variances = {}
  for kind in ("probe", "none"):
    solver = mccfrb.MCCFRbSolver(G4, representation="engine", seed=0,
                                 baseline=kind)
    solver.run(2_000, progress=False)
    variances[kind] = solver.conditional_variance(
        continuations=50, seed=1, trajectories=30).regret_variance
  assert variances["probe"] < variances["none"] / 10, variances


@pytest.mark.slow
def test_hogwild_probing_converges_as_one_thread():
  check_hogwild_converges_as_one_thread(
      lambda seed, **options: _solver(G4, seed, **options), G4, 20_000)


@pytest.mark.parametrize("baseline,probe", [("probe", True),
                                            ("none", None),
                                            ("situation", None)])
def test_only_probing_compiles_the_rollouts(monkeypatch, baseline, probe):
  """The engine kernel's `probe` is None unless the baseline is probing,
  so that every other run compiles the rollouts out (inlined into the way
  down, they cost it a quarter of its speed without a baseline). The spy
  stops each call before the kernel runs: what is checked is the argument,
  and compiling `engine_conditional` for three signatures no other test
  of the fast loop needs took about two CPU minutes of a cold run."""
  from mccfrb.solvers import outcome as outcome_solvers  # pylint: disable=import-outside-toplevel
  seen = []

  class Called(Exception):
    pass

  def spy(function, code, *args):
    del code
    seen.append((function.py_func.__name__, args[2]))
    raise Called

  monkeypatch.setattr(outcome_solvers, "call_literal", spy)
  solver = mccfrb.MCCFRbSolver(G4, representation="engine", seed=0,
                               baseline=baseline)
  with pytest.raises(Called):
    solver.run(20)
  with pytest.raises(Called):
    solver.conditional_variance(continuations=2, trajectories=2)
  assert [name for name, _ in seen] == ["engine_episodes",
                                        "engine_conditional"], seen
  assert all(flag is probe for _, flag in seen), seen
