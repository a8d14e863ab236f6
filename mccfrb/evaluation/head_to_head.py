r"""Head-to-head evaluation: policy A against policy B by Monte Carlo.

For games whose exploitability cannot be computed (phantom_ttt, dark_hex,
liars_dice with 3 dice, oshi_zumo), two policies are compared by playing
them against each other. `head_to_head` estimates

$$\bar u_A = \tfrac12\,\big(u_0(A, B) + u_1(B, A)\big),$$

A's expected return averaged over the two seats: $u_0(A, B)$ is player 0's
expected return when A plays player 0 and B player 1, $u_1(B, A)$ player
1's when the seats are swapped. Both seats are needed because most games
are not symmetric (in Kuhn poker the second player wins 1/18 a hand at
equilibrium): one seat alone measures the seat as much as the policy. In a
two-player zero-sum game $\bar u_A(A, A) = 0$ for every A, and a Nash
equilibrium policy has $\bar u_A \ge 0$ against every B.

Episodes are played in pairs: in pair k, A plays player 0 in one episode
and player 1 in the other, with the same chance outcomes (common random
numbers: the same uniform draws at the chance nodes, so in a card game the
same cards go to the same seats; "duplicate" play). Each episode alone is
a sample of its seat's return, so nothing is biased, and the luck of the
deal largely cancels in the pair. With $x_k$ the mean of A's two returns
in pair k and n pairs (2n episodes),

$$\hat u = \frac1n \sum_k x_k,\qquad
  \mathrm{se} = \frac{s}{\sqrt n},\qquad
  s^2 = \frac{1}{n-1}\sum_k (x_k - \hat u)^2,$$

and the confidence interval is the normal approximation
$\hat u \pm z\,\mathrm{se}$ with $z = \Phi^{-1}((1 + c) / 2)$ (1.96 for
c = 0.95): the pairs are independent and identically distributed, and the
returns bounded, so by the central limit theorem the interval covers the
true value with probability close to c once n is more than a few dozen.
Its half-width shrinks as $1/\sqrt{n}$: four times the episodes halve it.

Policies: any OpenSpiel Python `policy.Policy` (`action_probabilities(
state)`: `TabularPolicy`, `UniformRandomPolicy`, mccfrb's `EnginePolicy`,
the solvers' `average_policy()`), any `pyspiel.Policy` (the C++ solvers'
policies: `get_state_policy(state)`), or a callable state -> {action:
prob} or [(action, prob), ...]. A policy's answer at an information state
is asked once and kept (keyed by the player and the information state
string, which is what a policy of an imperfect-information game may depend
on; pass `cache=False` for a policy that looks at more of the state). The
uniform policy samples from the legal actions without asking.
"""

import array
import bisect
import itertools
import math
import operator
import statistics
import time
from typing import NamedTuple

import numpy as np
import pyspiel
from open_spiel.python import policy as os_policy

from mccfrb import games
from mccfrb.solvers import running

# Answers kept per policy and player (about 300 bytes each); past it new
# information states are asked every time they are met.
MAX_CACHED = 2_000_000
# Sum of a policy's probabilities at an information state: 1 within this.
ATOL = 1e-6
_CHANCE = int(pyspiel.PlayerId.CHANCE)
_BLOCK = 4096  # Uniform draws taken from the generator at a time.


class HeadToHead(NamedTuple):
  """The result of `head_to_head`; returns are A's.

  Attributes:
    mean: A's mean return over both seats (pairs of episodes).
    stderr: standard error of `mean` (NaN with a single pair).
    low, high: the normal-approximation interval mean -/+ z stderr.
    confidence: its nominal coverage (for example 0.95).
    episodes: episodes played (twice the number of pairs).
    seat_means: (A's mean return as player 0, as player 1).
    seat_stderrs: their standard errors.
  """
  mean: float
  stderr: float
  low: float
  high: float
  confidence: float
  episodes: int
  seat_means: tuple
  seat_stderrs: tuple


def head_to_head(game, policy_a, policy_b, episodes, seed, confidence=0.95,
                 progress=None, cache=True):
  """A's expected return against B in both seats, with a confidence interval.

  The math (the estimator, its standard error, the interval and why both
  seats) is in the module docstring.

  Args:
    game: a game string or `pyspiel.Game`, two-player zero-sum (constant-
      sum games are accepted: A's returns are reported as they are).
      Simultaneous-move games are converted to turn-based by
      `mccfrb.games.load_game`; the policies must be of that game.
    policy_a, policy_b: OpenSpiel Python policies, `pyspiel.Policy`
      objects or callables state -> {action: prob} / [(action, prob)].
    episodes: episodes to play, a positive even integer: half with A as
      player 0, half with A as player 1, in pairs sharing chance outcomes.
    seed: seed of the numpy Generator that draws chance outcomes and
      actions (an int >= 0, or None for fresh entropy); equal seeds give
      equal results.
    confidence: coverage of the interval, in (0, 1).
    progress: None (a tqdm bar after 3 s), True (at once) or False.
    cache: keep each policy's answer per player and information state
      string.

  Returns:
    A `HeadToHead`.

  Raises:
    ValueError: bad arguments, a game that is not two-player zero-sum
      (named), or a policy answering with an illegal action or with
      probabilities that are negative or do not sum to 1 within 1e-6 (the
      information state is named).
    TypeError: a policy of an unsupported type.
    KeyboardInterrupt: Ctrl-C, answered between pairs of episodes; its
      `result` attribute holds the `HeadToHead` of the pairs finished.
  """
  episodes = _check_episodes(episodes)
  confidence = _check_confidence(confidence)
  game = games.load_game(game, general=True)
  games.refuse_general(game, "head_to_head")
  if seed is not None:
    seed = _check_seed(seed)
  generator = np.random.default_rng(seed)
  chance = _Replay(_Uniforms(generator))
  moves = _Uniforms(generator)
  agent_a = _agent(policy_a, "policy_a", cache)
  agent_b = _agent(policy_b, "policy_b", cache)
  seats = ((agent_a, agent_b), (agent_b, agent_a))
  pairs = episodes // 2
  returns = (array.array("d"), array.array("d"))  # A's, by A's seat.
  shown = time.perf_counter()
  with running.deferred_interrupts() as request, running.RunProgress(
      episodes, progress, desc="episodes", unit="ep") as bar:
    for k in range(pairs):
      for a_seat in (0, 1):
        chance.rewind(fresh=a_seat == 0)
        returns[a_seat].append(
            _episode(game, seats[a_seat], chance, moves)[a_seat])
      if request.pending:  # Ctrl-C: stop between pairs, keep the result.
        request.pending = False
        done = _summary(returns, confidence)
        error = KeyboardInterrupt(
            f"stopped after {done.episodes:,} of {episodes:,} episodes; A's "
            f"mean so far {done.mean:.4f} in [{done.low:.4f}, "
            f"{done.high:.4f}]")
        error.result = done
        raise error
      if k % 16 == 15 and time.perf_counter() - shown > 0.1:
        bar.update(2 * (k + 1))
        shown = time.perf_counter()
    bar.update(episodes)
  return _summary(returns, confidence)


def _summary(returns, confidence):
  """The `HeadToHead` of A's returns by seat (equal lengths, paired)."""
  seat0 = np.frombuffer(returns[0], dtype=np.float64)
  seat1 = np.frombuffer(returns[1], dtype=np.float64)
  pairs = (seat0 + seat1) / 2.0
  n = len(pairs)
  mean, se = _mean_and_stderr(pairs)
  z = statistics.NormalDist().inv_cdf((1.0 + confidence) / 2.0)
  seat_means, seat_stderrs = zip(_mean_and_stderr(seat0),
                                 _mean_and_stderr(seat1))
  return HeadToHead(mean=mean, stderr=se, low=mean - z * se,
                    high=mean + z * se, confidence=confidence,
                    episodes=2 * n, seat_means=tuple(seat_means),
                    seat_stderrs=tuple(seat_stderrs))


def _mean_and_stderr(x):
  if len(x) < 2:
    return float(np.mean(x)), math.nan
  return float(np.mean(x)), float(np.std(x, ddof=1) / math.sqrt(len(x)))


def _episode(game, agents, chance, moves):
  """Plays one episode on one state (apply_action, no clones); returns."""
  state = game.new_initial_state()
  while True:
    player = state.current_player()
    if player >= 0:
      action = agents[player].pick(state, player, moves)
    elif player == _CHANCE:
      action = _sample_pairs(state.chance_outcomes(), chance())
    else:  # Terminal (load_game made simultaneous games turn-based).
      return state.returns()
    state.apply_action(action)


def _sample_pairs(outcomes, u):
  """The action of [(action, prob)] whose cumulative interval holds u."""
  total = 0.0
  for action, prob in outcomes:
    total += prob
    if u < total:
      return action
  return outcomes[-1][0]  # u in the rounding gap below 1.


class _Uniforms:
  """Floats in [0, 1) from a numpy Generator, drawn a block at a time."""

  def __init__(self, generator):
    self._generator = generator
    self._buffer = []
    self._next = 0

  def __call__(self):
    i = self._next
    if i == len(self._buffer):
      self._buffer = self._generator.random(_BLOCK).tolist()
      i = 0
    self._next = i + 1
    return self._buffer[i]


class _Replay:
  """Uniforms that the second episode of a pair reads again: the same
  chance draws in both seats (drawing new ones past the first's)."""

  def __init__(self, source):
    self._source = source
    self._drawn = []
    self._next = 0

  def rewind(self, fresh):
    if fresh:
      self._drawn.clear()
    self._next = 0

  def __call__(self):
    i = self._next
    self._next = i + 1
    if i < len(self._drawn):
      return self._drawn[i]
    u = self._source()
    self._drawn.append(u)
    return u


class _Uniform:
  """The uniform policy: a legal action drawn without asking anyone."""

  @staticmethod
  def pick(state, player, moves):
    legal = state.legal_actions(player)
    if len(legal) == 1:  # No draw, as for an asked policy.
      return legal[0]
    return legal[int(moves() * len(legal))]


class _Asked:
  """A policy asked through `answer(state, player)`, answers validated and
  (with `cache`) kept by information state string."""

  def __init__(self, answer, name, cache):
    self._answer = answer
    self._name = name
    # One dict per player: some games (phantom_ttt) give both players
    # equal strings at different information states.
    self._caches = ({}, {}) if cache else None

  def pick(self, state, player, moves):
    if self._caches is None:
      actions, cumulative = self._ask(state, player, None)
    else:
      key = state.information_state_string(player)
      cache = self._caches[player]
      entry = cache.get(key)
      if entry is None:
        entry = self._ask(state, player, key)
        if len(cache) < MAX_CACHED:
          cache[key] = entry
      actions, cumulative = entry
    if len(actions) == 1:
      return actions[0]
    return actions[bisect.bisect_right(cumulative, moves())]

  def _ask(self, state, player, key):
    """(actions with positive probability, their cumulative probabilities
    ending at exactly 1.0), after checking the answer."""
    try:
      answer = self._answer(state, player)
    except (KeyError, IndexError) as e:  # A TabularPolicy of another game.
      raise ValueError(
          f"{self._name} has no answer at information state "
          f"{self._where(state, player, key)} ({type(e).__name__}: {e}): is "
          f"it a policy of {state.get_game()}?") from None
    if isinstance(answer, dict):
      actions, probs = list(answer), [float(p) for p in answer.values()]
    else:
      pairs = list(answer)
      actions, probs = [a for a, _ in pairs], [float(p) for _, p in pairs]
    legal = state.legal_actions(player)
    total = sum(probs)
    if (not set(actions).issubset(legal) or not math.isfinite(total)
        or (probs and min(probs) < 0.0) or len(set(actions)) < len(actions)
        or abs(total - 1.0) > ATOL):
      self._refuse(state, player, key, actions, probs, legal, total)
    if min(probs) == 0.0:  # Never drawn: dropped (illegal ones included).
      kept = [(a, p) for a, p in zip(actions, probs) if p > 0.0]
      actions, probs = [a for a, _ in kept], [p for _, p in kept]
    cumulative = list(itertools.accumulate(probs))
    cumulative[-1] = 1.0  # Draws are < 1: rounding never falls past the end.
    return actions, cumulative

  def _refuse(self, state, player, key, actions, probs, legal, total):
    """Raises the ValueError naming what is wrong with an answer."""
    where = f"at information state {self._where(state, player, key)}"
    for i, (action, prob) in enumerate(zip(actions, probs)):
      if action in actions[:i]:
        raise ValueError(f"{self._name} names action {action} twice {where}.")
      if not 0.0 <= prob < math.inf:
        raise ValueError(f"{self._name} gives probability {prob} to action "
                         f"{action} {where}.")
      if prob > 0.0 and action not in legal:
        raise ValueError(f"{self._name} gives probability {prob} to action "
                         f"{action}, illegal {where}.")
    if abs(total - 1.0) > ATOL:
      raise ValueError(f"{self._name}'s probabilities sum to {total}, not 1, "
                       f"{where}.")

  @staticmethod
  def _where(state, player, key):
    return repr(key if key is not None
                else state.information_state_string(player))


def _agent(policy, name, cache):
  """The sampler of a policy (see the module docstring for the kinds)."""
  if isinstance(policy, os_policy.UniformRandomPolicy):
    return _Uniform()
  if isinstance(policy, os_policy.Policy):
    return _Asked(lambda state, player: policy.action_probabilities(
        state, player), name, cache)
  if isinstance(policy, pyspiel.Policy):
    return _Asked(lambda state, player: policy.get_state_policy(state), name,
                  cache)
  if callable(policy):
    return _Asked(lambda state, player: policy(state), name, cache)
  raise TypeError(
      f"{name} is a {type(policy).__name__}: pass an OpenSpiel policy.Policy, "
      "a pyspiel.Policy or a callable state -> {action: prob}.")


def _check_episodes(episodes):
  return _check_int(episodes, "episodes", "a positive even integer",
                    lambda n: n >= 2 and n % 2 == 0,
                    " (half with A as player 0)")


def _check_confidence(confidence):
  if isinstance(confidence, bool) or not isinstance(
      confidence, (int, float, np.integer, np.floating)) or not (
          0.0 < confidence < 1.0):
    raise ValueError(f"confidence must be a number in (0, 1), got "
                     f"{confidence!r}.")
  return float(confidence)


def _check_seed(seed):
  return _check_int(seed, "seed", "an integer >= 0 or None",
                    lambda n: n >= 0)


def _check_int(value, name, what, ok, why=""):
  """`value` as an int (`operator.index`) if `ok` of it, else ValueError
  "{name} must be {what}{why}, got ..."."""
  try:
    number = operator.index(value)
  except TypeError:
    raise ValueError(f"{name} must be {what}, got {value!r}.") from None
  if not ok(number):
    raise ValueError(f"{name} must be {what}{why}, got {number}.")
  return number
