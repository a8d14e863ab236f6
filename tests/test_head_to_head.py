"""Head-to-head evaluation (mccfrb/evaluation/head_to_head.py): the Monte
Carlo mean against the exact value on games small enough to compute it."""

import signal

import numpy as np
import pyspiel
import pytest
from open_spiel.python import policy as os_policy
from open_spiel.python.algorithms import expected_game_score

import mccfrb


def random_tabular(game, seed):
  """A TabularPolicy with random (Dirichlet) probabilities at every state."""
  policy = os_policy.TabularPolicy(game)
  rng = np.random.default_rng(seed)
  probs = rng.dirichlet(np.ones(policy.action_probability_array.shape[1]),
                        size=len(policy.action_probability_array))
  probs *= policy.legal_actions_mask
  policy.action_probability_array = probs / probs.sum(axis=1, keepdims=True)
  return policy


def exact(game, policy_a, policy_b):
  """(A's value over both seats, A's value as player 0, as player 1)."""
  root = game.new_initial_state()
  as_0 = expected_game_score.policy_value(root, [policy_a, policy_b])[0]
  as_1 = expected_game_score.policy_value(root, [policy_b, policy_a])[1]
  return (as_0 + as_1) / 2, as_0, as_1


def check_against_exact(result, values, max_half_width):
  mean, as_0, as_1 = values
  assert result.low <= mean <= result.high, (result, values)
  assert result.high - result.low < 2 * max_half_width
  for seat, value in enumerate((as_0, as_1)):
    assert abs(result.seat_means[seat] - value) < (
        3.5 * result.seat_stderrs[seat]), (seat, result, values)


@pytest.mark.parametrize("name,episodes,half_width", [
    ("kuhn_poker", 40_000, 0.02), ("leduc_poker", 20_000, 0.08)])
def test_the_mean_and_each_seat_match_the_exact_values(name, episodes,
                                                       half_width):
  game = mccfrb.load_game(name)
  a, b = random_tabular(game, 1), random_tabular(game, 2)
  values = exact(game, a, b)
  assert abs(values[1] - values[2]) > 0.05  # The seats differ: both count.
  # A 99% interval: the test fails by chance once in a hundred seeds.
  result = mccfrb.head_to_head(name, a, b, episodes, seed=3, confidence=0.99)
  check_against_exact(result, values, half_width)
  assert result.episodes == episodes and result.confidence == 0.99
  assert result.mean == pytest.approx(np.mean(result.seat_means))


def test_the_interval_shrinks_as_one_over_the_root_of_the_episodes():
  game = mccfrb.load_game("kuhn_poker")
  a, b = random_tabular(game, 4), os_policy.UniformRandomPolicy(game)
  widths = [mccfrb.head_to_head(game, a, b, n, seed=5)
            for n in (4_000, 64_000)]
  ratio = (widths[0].high - widths[0].low) / (widths[1].high - widths[1].low)
  assert 3.4 < ratio < 4.6
  assert widths[0].stderr / widths[1].stderr == pytest.approx(ratio)
  # 99% is wider than 95% by 2.576 / 1.960.
  wide = mccfrb.head_to_head(game, a, b, 4_000, seed=5, confidence=0.99)
  assert wide.mean == widths[0].mean
  assert (wide.high - wide.low) / (widths[0].high - widths[0].low) == (
      pytest.approx(2.5758 / 1.9600, rel=1e-4))


def test_kuhn_equilibrium_beats_uniform_with_an_interval_excluding_zero():
  game = mccfrb.load_game("kuhn_poker")
  solver = mccfrb.CFRSolver("kuhn_poker", variant="cfr+")
  solver.run(2000, progress=False)
  nash, uniform = solver.average_policy(), os_policy.UniformRandomPolicy(game)
  result = mccfrb.head_to_head(game, nash, uniform, 20_000, seed=0)
  assert result.low > 0
  check_against_exact(result, exact(game, nash, uniform), 0.03)
  # The other way round: the same game from B's side.
  back = mccfrb.head_to_head(game, uniform, nash, 20_000, seed=0)
  assert back.high < 0


def test_a_policy_against_itself_scores_about_zero_in_goofspiel():
  # goofspiel is simultaneous: load_game makes it turn-based.
  game = mccfrb.load_game("goofspiel(num_cards=4)")
  policy = random_tabular(game, 6)
  result = mccfrb.head_to_head("goofspiel(num_cards=4)", policy, policy,
                               20_000, seed=7)
  assert result.low < 0 < result.high
  assert abs(result.mean) < 3 * result.stderr
  for seat in (0, 1):  # Symmetric: each seat is worth 0 too.
    assert abs(result.seat_means[seat]) < 3.5 * result.seat_stderrs[seat]


def test_the_same_seed_gives_the_same_result_and_another_seed_another():
  game = mccfrb.load_game("leduc_poker")
  a, b = random_tabular(game, 8), os_policy.UniformRandomPolicy(game)
  first = mccfrb.head_to_head(game, a, b, 2_000, seed=11)
  assert mccfrb.head_to_head(game, a, b, 2_000, seed=11) == first
  assert mccfrb.head_to_head(game, a, b, 2_000, seed=12) != first


def test_the_uniform_shortcut_draws_as_an_asked_uniform_policy():
  """UniformRandomPolicy is sampled without asking it; the same uniform as
  a callable is asked and drawn by its cumulative probabilities: the same
  draws pick the same actions."""
  game = mccfrb.load_game("phantom_ttt")
  uniform = os_policy.UniformRandomPolicy(game)

  def asked(state):
    legal = state.legal_actions()
    return [(a, 1.0 / len(legal)) for a in legal]

  assert mccfrb.head_to_head(game, uniform, uniform, 2_000, seed=1) == (
      mccfrb.head_to_head(game, asked, asked, 2_000, seed=1))


def test_answers_are_kept_per_information_state_unless_cache_is_false():
  game = mccfrb.load_game("leduc_poker")
  table = random_tabular(game, 9)
  calls, infostates = [0], set()

  def counted(state):
    calls[0] += 1
    infostates.add(state.information_state_string())
    return table.action_probabilities(state)

  cached = mccfrb.head_to_head(game, counted, table, 4_000, seed=2)
  assert calls[0] == len(infostates)
  calls[0] = 0
  asked = mccfrb.head_to_head(game, counted, table, 4_000, seed=2,
                              cache=False)
  assert calls[0] > 2 * len(infostates)
  assert asked == cached


def test_the_answers_of_each_player_are_kept_apart():
  """phantom_ttt gives player 0's first information state and player 1's
  the same string ('...' three times): a cache keyed by the string alone
  would answer player 1 with player 0's answer."""
  game = mccfrb.load_game("phantom_ttt")
  first = game.new_initial_state()
  second = first.child(4)
  assert first.information_state_string(0) == (
      second.information_state_string(1))

  def by_player(state):  # Player 0 plays its lowest legal cell, 1 its highest.
    legal = state.legal_actions()
    return {legal[0] if state.current_player() == 0 else legal[-1]: 1.0}

  uniform = os_policy.UniformRandomPolicy(game)
  assert mccfrb.head_to_head(game, by_player, uniform, 2_000, seed=3) == (
      mccfrb.head_to_head(game, by_player, uniform, 2_000, seed=3,
                          cache=False))


def test_pyspiel_policies_of_cpp_solvers():
  game = mccfrb.load_game("kuhn_poker")
  solver = pyspiel.OutcomeSamplingMCCFRSolver(game, seed=3)
  for _ in range(5000):
    solver.run_iteration()
  cpp = solver.average_policy()
  assert isinstance(cpp, pyspiel.Policy)
  python = os_policy.tabular_policy_from_callable(
      game, lambda state: dict(cpp.get_state_policy(state)))
  uniform = os_policy.UniformRandomPolicy(game)
  result = mccfrb.head_to_head(game, cpp, uniform, 20_000, seed=4)
  check_against_exact(result, exact(game, python, uniform), 0.03)
  assert result.low > 0


def test_ctrl_c_stops_between_episodes_with_the_pairs_played():
  game = mccfrb.load_game("kuhn_poker")
  calls = [0]

  def interrupting(state):
    calls[0] += 1
    if calls[0] == 50:
      signal.raise_signal(signal.SIGINT)
    legal = state.legal_actions()
    return {a: 1.0 / len(legal) for a in legal}

  with pytest.raises(KeyboardInterrupt, match="stopped after") as caught:
    mccfrb.head_to_head(game, interrupting, interrupting, 10_000, seed=0,
                        cache=False)
  partial = caught.value.result
  assert 0 < partial.episodes < 10_000 and partial.episodes % 2 == 0
  assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_progress_bar_counts_episodes(capsys):
  game = mccfrb.load_game("kuhn_poker")
  uniform = os_policy.UniformRandomPolicy(game)
  mccfrb.head_to_head(game, uniform, uniform, 2_000, seed=0, progress=True)
  assert "episodes" in capsys.readouterr().err
  mccfrb.head_to_head(game, uniform, uniform, 2_000, seed=0, progress=False)
  assert capsys.readouterr().err == ""


UNIFORM = os_policy.UniformRandomPolicy(mccfrb.load_game("kuhn_poker"))


@pytest.mark.parametrize("kwargs,match", [
    (dict(episodes=0), "episodes must be a positive even integer"),
    (dict(episodes=3), "episodes must be a positive even integer .*got 3"),
    (dict(episodes=10.0), "episodes must be a positive even integer"),
    (dict(episodes="10"), "episodes must be a positive even integer"),
    (dict(confidence=1.0), r"confidence must be a number in \(0, 1\)"),
    (dict(confidence=0), r"confidence must be a number in \(0, 1\)"),
    (dict(confidence=float("nan")), r"confidence must be"),
    (dict(confidence="0.9"), r"confidence must be"),
    (dict(seed=-1), "seed must be an integer >= 0 or None, got -1"),
    (dict(seed=1.5), "seed must be an integer"),
    (dict(game="kuhn_poker(players=3)"),
     r"kuhn_poker\(players=3\) has 3 players; head_to_head is for two-"),
])
def test_bad_arguments_are_refused_in_one_line(kwargs, match):
  args = dict(game="kuhn_poker", policy_a=UNIFORM, policy_b=UNIFORM,
              episodes=10, seed=0)
  args.update(kwargs)
  with pytest.raises(ValueError, match=match) as caught:
    mccfrb.head_to_head(**args)
  assert "\n" not in str(caught.value)


def _fixed(answer):
  return lambda state: answer(state.legal_actions())


@pytest.mark.parametrize("answer,match", [
    (lambda legal: {9: 1.0}, r"policy_a gives probability 1.0 to action 9, "
     r"illegal at information state '\d'"),
    (lambda legal: {legal[0]: 0.9}, r"policy_a's probabilities sum to 0.9, "
     r"not 1, at information state '\d'\.$"),
    (lambda legal: {legal[0]: 1.5, legal[1]: -0.5},
     "probability -0.5 to action 1 at information state"),
    (lambda legal: [(legal[0], 0.5), (legal[0], 0.5)], "names action 0 twice"),
    (lambda legal: {}, "sum to 0, not 1"),
    (lambda legal: {legal[0]: float("nan"), legal[1]: 1.0},
     "probability nan"),
])
def test_bad_policy_answers_name_the_information_state(answer, match):
  # Kuhn's information states of player 0's first move: its card, '0'-'2'.
  with pytest.raises(ValueError, match=match):
    mccfrb.head_to_head("kuhn_poker", _fixed(answer), UNIFORM, 10, seed=0)


def test_zero_probabilities_of_illegal_actions_are_allowed_and_never_drawn():
  game = mccfrb.load_game("kuhn_poker")
  padded = lambda state: {0: 0.0, 1: 1.0, 7: 0.0}  # Always bet.
  result = mccfrb.head_to_head(game, padded, padded, 200, seed=0)
  always_bet = os_policy.tabular_policy_from_callable(
      game, lambda state: {1: 1.0})
  assert result == mccfrb.head_to_head(game, always_bet, always_bet, 200,
                                       seed=0)


def test_a_tabular_policy_of_another_game_is_refused_naming_the_state():
  leduc = os_policy.TabularPolicy(mccfrb.load_game("leduc_poker"))
  with pytest.raises(ValueError, match="policy_a has no answer at "
                     "information state '[0-2]' .*kuhn_poker"):
    mccfrb.head_to_head("kuhn_poker", leduc, UNIFORM, 10, seed=0)


def test_a_policy_of_an_unsupported_type_is_refused():
  with pytest.raises(TypeError, match="policy_b is a int"):
    mccfrb.head_to_head("kuhn_poker", UNIFORM, 42, 10, seed=0)
