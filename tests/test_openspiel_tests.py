"""OpenSpiel's own unit tests of the modules mccfrb mirrors, run on mccfrb.

The installed test files (open_spiel/python/algorithms/*_test.py) are read
and executed with each `from open_spiel.python.algorithms import X` of a
mirrored solver module swapped for `from mccfrb.compat import X`, and
nothing else changed: their calls, seeds (`np.random.seed`) and assertions
are OpenSpiel's, and so is the evaluator that scores mccfrb's solvers
(OpenSpiel's `exploitability` module is not swapped in the solvers' test
files, so `assertEqual(conv, conv2)` compares OpenSpiel's NashConv of
mccfrb's policy and of its `to_tabular()` copy). exploitability_test.py
alone swaps the `exploitability` module: it checks mccfrb's evaluator
against OpenSpiel's own numbers. The tests whose body reaches into a
private name of a swapped module run too: mccfrb.compat mirrors the
private names they use (`cfr._CFRSolver` with every flag, simultaneous
updates included, `cfr._InfoStateNode`, `cfr._update_current_policy`);
`test_private_names_are_mirrored` pins that list, so a change of
OpenSpiel's tests shows up here.

Two are left out because their threshold holds for OpenSpiel's own
random stream only: external sampling on Leduc after 10 iterations must
reach NashConv < 5, which some of OpenSpiel's own seeds miss; mccfrb's
solver draws other samples from the same `np.random.seed` and got 5.16.
`test_external_sampling_leduc_matches_openspiel_in_distribution` checks
instead that the NashConv of mccfrb's runs has OpenSpiel's mean over 30
seeds, and that OpenSpiel's own runs miss the threshold too.
"""

import inspect
import pathlib
import re
import types
import unittest

import numpy as np
import pyspiel
import pytest
from open_spiel.python import algorithms
from open_spiel.python import policy as os_policy
from open_spiel.python.algorithms import exploitability
from open_spiel.python.algorithms import external_sampling_mccfr

import mccfrb
from mccfrb.compat import external_sampling_mccfr as mccfrb_es

# A study or a long check: left out of the fast loop (tests/conftest.py).
pytestmark = pytest.mark.slow

SOLVERS = ("cfr", "discounted_cfr", "external_sampling_mccfr",
           "outcome_sampling_mccfr")
# Each test file and the modules swapped in it: the solvers' tests keep
# OpenSpiel's evaluator; the evaluator's test swaps the evaluator.
SWAPPED = {"cfr_test": SOLVERS, "discounted_cfr_test": SOLVERS,
           "exploitability_test": ("exploitability",),
           "external_sampling_mccfr_test": SOLVERS,
           "outcome_sampling_mccfr_test": SOLVERS}
FILES = tuple(SWAPPED)


def _import(names):
  return re.compile(r"^from open_spiel\.python\.algorithms import "
                    rf"({'|'.join(names)})$", re.MULTILINE)


def _private(names):
  return re.compile(rf"\b(?:{'|'.join(names)})\._\w+")


def _swapped_module(name):
  """OpenSpiel's test module `name`, its mirrored imports swapped."""
  path = pathlib.Path(algorithms.__path__[0]) / f"{name}.py"
  source, count = _import(SWAPPED[name]).subn(r"from mccfrb.compat import \1",
                                              path.read_text())
  assert count, f"{path} imports none of {SWAPPED[name]}"
  module = types.ModuleType(f"swapped_{name}")
  module.__file__ = str(path)
  exec(compile(source, str(path), "exec"), module.__dict__)  # pylint: disable=exec-used
  return module, source


def _cases():
  """{test id: (TestCase instance, the private names of swapped modules
  its body uses)}."""
  found = {}
  for name in FILES:
    module, source = _swapped_module(name)
    lines = source.splitlines(keepends=True)
    suite = unittest.TestLoader().loadTestsFromModule(module)
    stack = [suite]
    while stack:
      item = stack.pop()
      if isinstance(item, unittest.TestSuite):
        stack.extend(item)
        continue
      # absl's parameterized tests are named by their method plus an index.
      method = item._testMethodName  # pylint: disable=protected-access
      base = method if f"def {method}(" in source else method.rstrip(
          "0123456789")
      start = next(i for i, line in enumerate(lines)
                   if line.lstrip().startswith(f"def {base}("))
      end = start + len(inspect.getblock(lines[start:]))
      body = "".join(lines[start:end])
      found[f"{name}::{item.id().split('.', 1)[1]}"] = (
          item, frozenset(_private(SWAPPED[name]).findall(body)))
  return found


SEED_LUCK = ("external_sampling_mccfr_test::ExternalSamplingMCCFRTest."
             "test_external_sampling_leduc_2p_simple",
             "external_sampling_mccfr_test::ExternalSamplingMCCFRTest."
             "test_external_sampling_leduc_2p_full")
CASES = _cases()
RUN = sorted(k for k in CASES if k not in SEED_LUCK)


@pytest.mark.parametrize("case", RUN)
def test_openspiel_test_passes_on_mccfrb(case):
  test, _ = CASES[case]
  result = unittest.TestResult()
  test.run(result)
  problems = result.failures + result.errors
  assert not problems, problems[0][1]
  assert result.testsRun == 1 and not result.skipped


def test_solver_tests_score_with_openspiels_evaluator():
  """Only exploitability_test.py runs mccfrb's evaluator; every other file
  imports OpenSpiel's own (its NashConv thresholds are OpenSpiel's
  evaluator scoring mccfrb's solver)."""
  for name in FILES:
    module, source = _swapped_module(name)
    evaluator = getattr(module, "exploitability", None)
    if name == "exploitability_test":
      assert evaluator is not None and evaluator is not exploitability
    else:
      assert "from mccfrb.compat import exploitability" not in source
      if evaluator is not None:
        assert evaluator is exploitability


def test_private_names_are_mirrored():
  """The tests that use private names of the swapped modules, and those
  names: each is in mccfrb.compat (and run above)."""
  using = {re.sub(r"\d+( \(.*\))?$", "", k.split("::")[1])
           for k, (_, private) in CASES.items() if private}
  assert sorted(using) == [
      "CFRTest.test_cfr_kuhn_poker_runs_with_multiple_players",
      "CFRTest.test_policy_zero_is_uniform",
      "CFRTest.test_simultaneous_two_step_avg_1b_seq_in_kuhn_poker",
      "CorrDistTest.test_cce_dist_kuhn_3p",
      "ModuleLevelFunctionTest.test__update_current_policy",
  ]
  names = set().union(*(private for _, private in CASES.values()))
  assert sorted(names) == ["cfr._CFRSolver", "cfr._InfoStateNode",
                           "cfr._update_current_policy"]
  for name in names:
    module, attribute = name.split(".")
    assert hasattr(getattr(mccfrb.compat, module), attribute), name
  assert set(RUN) == set(CASES) - set(SEED_LUCK)
  assert all(k in CASES and not CASES[k][1] for k in SEED_LUCK)
  # Every file's tests are run, among them the 3-player ones.
  assert {k.split("::")[0] for k in RUN} == set(FILES)
  assert {k.split(".")[-1] for k in RUN if "sampling_kuhn_3p" in k} == {
      "test_outcome_sampling_kuhn_3p", "test_external_sampling_kuhn_3p_simple",
      "test_external_sampling_kuhn_3p_full"}


@pytest.mark.parametrize("averaging", ["simple", "full"])
def test_external_sampling_leduc_matches_openspiel_in_distribution(averaging):
  """The left-out Leduc tests, over 30 seeds each: mccfrb's mean NashConv
  after 10 iterations is OpenSpiel's within 4 standard errors, and the
  left-out threshold (< 5) is seed luck: OpenSpiel's own runs miss it."""
  game = pyspiel.load_game("leduc_poker")
  average_type = external_sampling_mccfr.AverageType[averaging.upper()]
  theirs, ours = [], []
  for seed in range(30):
    np.random.seed(seed)
    solver = external_sampling_mccfr.ExternalSamplingSolver(game, average_type)
    for _ in range(10):
      solver.iteration()
    theirs.append(mccfrb.nash_conv(game, solver.average_policy()))
    solver = mccfrb.ExternalSamplingSolver(game, averaging=averaging,
                                           seed=seed)
    solver.run(10, progress=False)
    ours.append(mccfrb.nash_conv(game, solver.average_policy()))
  error = np.sqrt((np.var(theirs, ddof=1) + np.var(ours, ddof=1)) / 30)
  assert abs(np.mean(theirs) - np.mean(ours)) < 4 * error
  assert max(theirs) > 5


# OpenSpiel's Kuhn external-sampling tests require NashConv < 1 after 10
# iterations, which uniform play (11/12) meets. Over 30 seeds the mean is
# held to a bound uniform fails; OpenSpiel's own solver's mean is 0.62
# (simple) and 0.57 (full), mccfrb's 0.65 and 0.60.
KUHN_ES_MEAN_BOUND = 0.75


@pytest.mark.parametrize("averaging", ["SIMPLE", "FULL"])
def test_external_sampling_kuhn_beats_uniform_play(averaging):
  game = pyspiel.load_game("kuhn_poker")
  uniform = exploitability.nash_conv(game, os_policy.UniformRandomPolicy(game))
  assert uniform == pytest.approx(11 / 12)
  assert uniform > KUHN_ES_MEAN_BOUND  # Uniform play fails the bound.
  means = {}
  for name, module in (("openspiel", external_sampling_mccfr),
                       ("mccfrb", mccfrb_es)):
    convs = []
    for seed in range(30):
      np.random.seed(seed)
      solver = module.ExternalSamplingSolver(
          game, module.AverageType[averaging])
      for _ in range(10):
        solver.iteration()
      convs.append(exploitability.nash_conv(game, solver.average_policy()))
    means[name] = np.mean(convs)
  assert means["openspiel"] < KUHN_ES_MEAN_BOUND, means
  assert means["mccfrb"] < KUHN_ES_MEAN_BOUND, means
