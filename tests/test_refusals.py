"""Bad input is refused in one line that names the cause and the fix.

Each test here caught a silent wrong answer or a misleading error: a
policy answering a state of another game form, a walk that could never
finish, an error blaming a symptom, OpenSpiel's error printed twice, the
compat modules importable one way only, CFRSolver refusing `seed`.
"""

import importlib
import re
import time

import numpy as np
import pyspiel
import pytest
from open_spiel.python.algorithms import cfr as os_cfr

import mccfrb

SMALL = "goofspiel(num_cards=4)"


def _first_decision(state):
  while state.is_chance_node():
    state.apply_action(state.chance_outcomes()[0][0])
  return state


def _one_line(error):
  message = str(error.value)
  assert "\n" not in message.strip(), message
  return message


@pytest.fixture(scope="module")
def engine_solver():
  solver = mccfrb.MCCFRbSolver(SMALL, representation="engine", seed=0)
  solver.run(50, progress=False)
  return solver


@pytest.fixture(scope="module")
def grown_solver():
  solver = mccfrb.MCCFRbSolver(SMALL, representation="grown", seed=0)
  solver.run(50, progress=False)
  return solver


@pytest.mark.parametrize("kind", ["engine", "grown"])
@pytest.mark.parametrize("which", ["average", "current"])
def test_policies_refuse_a_state_of_the_simultaneous_game(
    kind, which, engine_solver, grown_solver):
  solver = engine_solver if kind == "engine" else grown_solver
  policy = getattr(solver, f"{which}_policy")()
  simultaneous = _first_decision(pyspiel.load_game(SMALL).new_initial_state())
  assert simultaneous.is_simultaneous_node()
  with pytest.raises(ValueError, match="convert_to_turn_based") as error:
    policy.action_probabilities(simultaneous)
  assert "simultaneous" in _one_line(error)
  # The turn-based form of the same game is answered, as before.
  turn_based = _first_decision(
      pyspiel.load_game_as_turn_based(SMALL).new_initial_state())
  probs = policy.action_probabilities(turn_based)
  assert sorted(probs) == turn_based.legal_actions()
  assert sum(probs.values()) == pytest.approx(1.0)


@pytest.mark.parametrize("kind", ["engine", "grown"])
def test_policies_refuse_a_state_of_another_game(kind, engine_solver,
                                                 grown_solver):
  solver = engine_solver if kind == "engine" else grown_solver
  other = pyspiel.load_game_as_turn_based("goofspiel(num_cards=5)")
  with pytest.raises(ValueError, match="num_cards=5") as error:
    solver.average_policy().action_probabilities(
        _first_decision(other.new_initial_state()))
  _one_line(error)


def _refused_fast(call):
  begin = time.perf_counter()
  with pytest.raises(ValueError) as error:
    call()
  seconds = time.perf_counter() - begin
  message = _one_line(error)
  assert "head-to-head evaluation" in message and "mccfrb.head_to_head" in (
      message), message
  assert "exploitability" in message
  assert seconds < 1.5, seconds
  return message


@pytest.mark.parametrize("evaluate", ["nash_conv", "exploitability"])
def test_streaming_walk_of_13_card_goofspiel_is_refused_at_once(evaluate):
  solver = mccfrb.MCCFRbSolver("goofspiel", representation="engine", seed=0,
                               max_memory=1 << 24)
  policy = solver.average_policy()
  getattr(mccfrb, evaluate)("goofspiel(num_cards=3)", mccfrb.MCCFRbSolver(
      "goofspiel(num_cards=3)", representation="engine",
      seed=0).average_policy())  # Kernels compiled: time the refusal only.
  message = _refused_fast(lambda: getattr(mccfrb, evaluate)("goofspiel",
                                                            policy))
  assert "histories" in message


def test_streaming_exact_cfr_of_13_card_goofspiel_is_refused_at_once():
  _refused_fast(lambda: mccfrb.CFRSolver("goofspiel",
                                         representation="engine"))


def test_exact_walk_of_13_card_goofspiel_is_refused_at_once():
  _refused_fast(lambda: mccfrb.nash_conv("goofspiel", {}))


def test_phantom_ttt_leads_with_its_size():
  with pytest.raises(ValueError) as error:
    mccfrb.exploitability("phantom_ttt", {})
  message = _one_line(error)
  assert "too large" in message and "disagree" not in message, message
  assert "head-to-head evaluation" in message


@pytest.mark.parametrize("spec, name", [
    ("goofspiel(num_crads=6)", "num_crads"),
    ("goofspiel(num_cards=six)", "num_cards"),
])
def test_openspiel_error_is_raised_once(capfd, spec, name):
  capfd.readouterr()
  with pytest.raises(ValueError, match=name) as error:
    mccfrb.MCCFRbSolver(spec)
  message = _one_line(error)
  out, err = capfd.readouterr()
  assert name not in out + err, err
  if name == "num_crads":
    assert "num_cards" in message  # The fix: the name meant.


@pytest.mark.parametrize("module, name", [
    ("cfr", "CFRSolver"), ("cfr", "CFRPlusSolver"), ("cfr", "_CFRSolver"),
    ("discounted_cfr", "DCFRSolver"), ("discounted_cfr", "LCFRSolver"),
    ("outcome_sampling_mccfr", "OutcomeSamplingSolver"),
    ("external_sampling_mccfr", "ExternalSamplingSolver"),
    ("external_sampling_mccfr", "AverageType"),
    ("exploitability", "nash_conv"), ("exploitability", "exploitability"),
    ("exploitability", "best_response"),
])
def test_compat_imports_both_ways(module, name):
  submodule = importlib.import_module(f"mccfrb.compat.{module}")
  compat = importlib.import_module("mccfrb.compat")
  assert getattr(compat, module) is submodule
  assert callable(getattr(submodule, name))


def _policy_array(solver_policy):
  return np.asarray(solver_policy.action_probability_array)


@pytest.mark.parametrize("rm_plus, linear", [
    (False, False), (True, True), (True, False), (False, True)])
def test_compat_private_cfr_solver_equals_openspiel(rm_plus, linear):
  from mccfrb.compat import cfr  # pylint: disable=import-outside-toplevel
  game = pyspiel.load_game("kuhn_poker")
  theirs = os_cfr._CFRSolver(  # pylint: disable=protected-access
      game, regret_matching_plus=rm_plus, alternating_updates=True,
      linear_averaging=linear)
  ours = cfr._CFRSolver(  # pylint: disable=protected-access
      game, regret_matching_plus=rm_plus, alternating_updates=True,
      linear_averaging=linear)
  for _ in range(7):
    theirs.evaluate_and_update_policy()
    ours.evaluate_and_update_policy()
  for which in ("average_policy", "current_policy"):
    a = getattr(theirs, which)()
    b = getattr(ours, which)()
    for key in a.state_lookup:
      np.testing.assert_allclose(
          b.policy_for_key(key), a.policy_for_key(key), rtol=0, atol=1e-12,
          err_msg=f"{which} at {key!r}")
  # Positional order as OpenSpiel's: game, alternating, linear, rm+.
  positional = cfr._CFRSolver(game, True, linear, rm_plus)  # pylint: disable=protected-access
  assert positional.rule.clip == rm_plus


@pytest.mark.parametrize("variant", ["pcfr+", "dcfr+", "pdcfr+"])
def test_simultaneous_updates_refuse_rules_without_that_form(variant):
  """Simultaneous updates name the rules that run them; OpenSpiel's
  `_DCFRSolver(alternating_updates=False)`, which updates nothing, is not
  mirrored and names what runs simultaneous DCFR."""
  with pytest.raises(ValueError, match=r"runs the regret rules cfr, cfr\+, "
                     r"linear, discounted .* not '" + re.escape(variant)
                     ) as error:
    mccfrb.CFRSolver("kuhn_poker", variant=variant, alternating_updates=False)
  _one_line(error)
  from mccfrb.compat import discounted_cfr  # pylint: disable=import-outside-toplevel
  with pytest.raises(ValueError, match="alternating_updates=False") as error:
    discounted_cfr._DCFRSolver(pyspiel.load_game("kuhn_poker"), False, True,  # pylint: disable=protected-access
                               False, 1.5, 0, 2)
  _one_line(error)


def test_cfr_solver_takes_a_seed():
  seeded = mccfrb.CFRSolver("kuhn_poker", variant="cfr+", seed=0)
  other = mccfrb.CFRSolver("kuhn_poker", variant="cfr+", seed=123)
  plain = mccfrb.CFRSolver("kuhn_poker", variant="cfr+")
  for solver in (seeded, other, plain):
    solver.run(20, progress=False)
  # Exact CFR is deterministic: the seed changes nothing.
  np.testing.assert_array_equal(seeded.average_policy_table(),
                                plain.average_policy_table())
  np.testing.assert_array_equal(other.average_policy_table(),
                                plain.average_policy_table())
  assert "seed" in mccfrb.CFRSolver.__doc__


DARK_HEX_LARGE = ["dark_hex(num_rows=3,num_cols=3)",
                  "dark_hex(num_rows=3,num_cols=3,gameversion=adh)",
                  "dark_hex(num_rows=4,num_cols=4)"]
DARK_HEX_SMALL = ["dark_hex(num_rows=2,num_cols=2)",
                  "dark_hex(num_rows=2,num_cols=3)",
                  "dark_hex(num_rows=3,num_cols=2,gameversion=adh)"]


def _names_what_fits(message):
  assert "dark_hex boards of up to 6 cells" in message, message
  assert "histories" in message, message


@pytest.mark.parametrize("spec", DARK_HEX_LARGE + ["phantom_ttt"])
def test_public_sampling_refuses_large_whole_depth_games_at_once(spec):
  begin = time.perf_counter()
  with pytest.raises(ValueError, match="PublicSamplingSolver cannot run") as (
      error):
    mccfrb.PublicSamplingSolver(spec, representation="engine")
  assert time.perf_counter() - begin < 1.0
  message = _one_line(error)
  _names_what_fits(message)
  assert "MCCFRbSolver" in message


@pytest.mark.parametrize("spec", DARK_HEX_LARGE + ["phantom_ttt"])
def test_streaming_walk_refuses_large_whole_depth_games_at_once(spec):
  from mccfrb.games import walk_size  # pylint: disable=import-outside-toplevel
  begin = time.perf_counter()
  with pytest.raises(ValueError, match="cannot finish") as error:
    walk_size.check_streaming_walk(mccfrb.load_game(spec))
  assert time.perf_counter() - begin < 1.0
  message = _one_line(error)
  _names_what_fits(message)
  assert "head-to-head evaluation" in message


@pytest.mark.parametrize("spec", DARK_HEX_SMALL)
def test_small_dark_hex_boards_pass_the_size_checks(spec):
  from mccfrb.games import walk_size  # pylint: disable=import-outside-toplevel
  game = mccfrb.load_game(spec)
  estimate = walk_size.check_streaming_walk(game)
  assert 100 < estimate < walk_size.WHOLE_DEPTH_EPISODE_HISTORIES
  solver = mccfrb.PublicSamplingSolver(spec, representation="engine", seed=0)
  assert solver.representation == "engine"


def test_small_dark_hex_walks_and_samples_public_states_on_its_engine():
  spec = "dark_hex(num_rows=2,num_cols=2)"
  solver = mccfrb.PublicSamplingSolver(spec, representation="engine", seed=0)
  solver.run(20, progress=False)
  exact = mccfrb.exploitability(spec, solver.average_policy())
  assert 0.0 <= exact < 1.0


# An option the chosen representation cannot serve: (solver, representation,
# options, the representations that serve it). Before, batch= on an engine
# was accepted and did nothing.
_UNSERVED = [
    ("MCCFRbSolver", "engine", dict(batch=64), ("tree",)),
    ("ExternalSamplingSolver", "engine", dict(batch=64), ("tree",)),
    ("PublicSamplingSolver", "engine", dict(batch=64), ("tree",)),
    ("MCCFRbSolver", "grown", dict(batch=64), ("tree",)),
    ("ExternalSamplingSolver", "grown", dict(batch=64), ("tree",)),
    ("OutcomeSamplingSolver", "grown", dict(threads=2), ("tree", "engine")),
    ("MCCFRbSolver", "tree", dict(hogwild=True, threads=2), ("engine",)),
    ("MCCFRbSolver", "tree", dict(precision="float32"), ("engine",)),
    ("MCCFRbSolver", "tree", dict(in_flight=8), ("engine",)),
    ("MCCFRbSolver", "grown", dict(in_flight=8), ("engine",)),
]


@pytest.mark.parametrize("solver,representation,options,serving", _UNSERVED)
def test_an_option_the_representation_cannot_serve_names_those_that_do(
    solver, representation, options, serving):
  game = SMALL if representation == "engine" else "kuhn_poker"
  with pytest.raises(ValueError) as error:
    getattr(mccfrb, solver)(game, representation=representation, seed=0,
                            **options)
  message = _one_line(error)
  option, value = next(iter(options.items()))
  assert message.startswith(f"{option}={value!r} runs on "), message
  for r in ("tree", "engine", "grown"):
    named = f"(representation='{r}')"
    # Names the representations that serve it and the solver's own, only.
    assert (named in message) == (r in serving or r == representation), (
        message)


@pytest.mark.parametrize("solver,baseline", [
    ("MCCFRbSolver", "history"), ("MCCFRbSolver", "situation"),
    ("ExternalSamplingSolver", "situation"),
    ("PublicSamplingSolver", "history")])
def test_a_max_memory_too_small_for_the_keyed_table_names_the_baseline(
    solver, baseline):
  # 1.5 MiB: at least MIN_MEMORY in all, but the keyed table's share (a
  # half or a quarter) is below it.
  with pytest.raises(ValueError) as error:
    getattr(mccfrb, solver)(SMALL, representation="engine", seed=0,
                            baseline=baseline, max_memory=3 << 19)
  message = _one_line(error)
  assert message.startswith("max_memory=1572864 is too small for "
                            f"baseline={baseline!r}"), message
  # Twice MIN_MEMORY for the keyed table is enough.
  getattr(mccfrb, solver)(SMALL, representation="engine", seed=0,
                          baseline=baseline, max_memory=1 << 23)
