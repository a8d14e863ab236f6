r"""A lower bound on exploitability from trained best responders.

For a two-player zero-sum game, OpenSpiel's exploitability of a policy
$\pi$ is NashConv / 2 with

$$\mathrm{NashConv}(\pi) = \max_{\sigma_0} u_0(\sigma_0, \pi_1)
  + \max_{\sigma_1} u_1(\pi_0, \sigma_1) - \big(u_0(\pi) + u_1(\pi)\big),$$

and $u_0(\pi) + u_1(\pi)$ is the game's constant (0 when zero-sum). Any
responder $\beta_i$ gives $u_i(\beta_i, \pi_{-i}) \le \max_{\sigma_i}
u_i(\sigma_i, \pi_{-i})$, so

$$\hat e = \tfrac12\big(u_0(\beta_0, \pi_1) + u_1(\pi_0, \beta_1)
  - c\big) \le \mathrm{exploitability}(\pi),$$

with equality when both responders are best responses. The better the
responders, the tighter the bound: `approximate_exploitability` trains one
for each player against the fixed policy for a time budget, then scores
each by Monte Carlo on fresh episodes (never the training ones, whose
values are biased upwards by the maximum over noisy estimates).

**Training (a best response to the sampled game).** With the opponent
fixed, the responder's problem is a one-player game. Each training walk is
one external-sampling traversal: one chance outcome and one opponent
action drawn at their nodes (the opponent's from the fixed policy), every
action of the responder explored. The walks define a sampled game: the
same tree, with each chance and opponent edge given the frequency with
which the walks took it. The responder is the exact best response to the
sampled game (the infosets decided bottom-up, as `mccfrb.best_response`
decides them), which converges to a best response to the policy as the
walks grow. The policy is only sampled, never read as a whole; a walk
costs what an external-sampling iteration for one player costs.

On OpenSpiel states the sampled game is kept by the responder's sequences
instead of nodes: a terminal reached adds its return to the sum of the
responder's last sequence (its last information state and action), and
the best response is found by backward induction over the sequences,
$V(I) = \max_a [\hat c(I, a) + \sum_{I' \text{ after } (I, a)} V(I')]$.
That needs information state strings with perfect recall (each reached
after a single sequence of the responder's own actions); a game whose
strings merge histories the player could tell apart (goofspiel with
imp_info=False) is refused there and runs on the tree.

**Scoring.** `episodes` fresh episodes per player with the responder's
pure policy in its seat (on states, the policy's own play at information
states training never met) and the policy in the other give the mean and
standard error of each $u_i(\beta_i, \pi_{-i})$; the two are independent,
so the bound's standard error is $\tfrac12\sqrt{se_0^2 + se_1^2}$, and
its interval the normal approximation $\hat e \pm z\,se$, as in
`mccfrb.head_to_head`. The responder's true value is at most the best
response's, so the interval's upper end is not an upper bound on
exploitability: the *lower* end is a lower bound holding with probability
about $(1 + c) / 2$ (0.975 for c = 0.95).

**Representations.** On a game that compiles (`representation="tree"`),
training and scoring are numba loops over the compiled tree with the
policy as a dense table. The policy of a sampling solver on an engine (an
`EnginePolicy`, `"engine"`) is bounded by numba walks over the engine
that read the solver's own table (mccfrb/evaluation/respond.py).
Otherwise (`"states"`) they walk OpenSpiel states in Python, asking the
policy once per information state (the cache of `mccfrb.head_to_head`):
hundreds of times slower; its rate is reported in the result. The two
players' responders train and are scored one after the other, or on the
tree and engine routes side by side with `threads=2`
(mccfrb/evaluation/budget.py).
"""

import concurrent.futures
import contextlib
import functools
import importlib
import math
import statistics
from typing import NamedTuple

import numba
import numpy as np
import pyspiel

from mccfrb import games
from mccfrb.evaluation import budget as budget_lib
from mccfrb.evaluation import respond
from mccfrb.tables import policy as policy_lib
from mccfrb.games import tree as tree_lib
from mccfrb.kernels import exact
from mccfrb.kernels.rng import pcg64_next
from mccfrb.kernels.rng import pcg64_state
from mccfrb.solvers import engine as engine_solvers
from mccfrb import tables as tables_lib

# The module (mccfrb.evaluation.head_to_head is the function of that name):
# its samplers, checks and interval are reused.
h2h = importlib.import_module("mccfrb.evaluation.head_to_head")

REPRESENTATIONS = ("auto", "tree", "engine", "states")
# Default scoring episodes per player: numba on the tree, Python on states.
TREE_EPISODES = 1_000_000
STATES_EPISODES = 20_000
DEFAULT_SECONDS = 10.0


class ExploitabilityBound(NamedTuple):
  """The result of `approximate_exploitability`.

  Attributes:
    exploitability: the estimate of (u_0(beta_0, pi_1) + u_1(pi_0,
      beta_1) - c) / 2, a lower bound on the exploitability of the policy
      (up to Monte Carlo noise: see `low`).
    stderr: its standard error.
    low, high: the normal-approximation interval exploitability -/+ z
      stderr. `low` is a lower bound on exploitability with probability
      about (1 + confidence) / 2; `high` is not an upper bound on it.
    confidence: the interval's nominal coverage.
    values: (u_0(beta_0, pi_1), u_1(pi_0, beta_1)), the responders' mean
      returns on the scoring episodes.
    stderrs: their standard errors.
    episodes: scoring episodes per player (fresh, not the training ones).
    iterations: training samples (walks) per player.
    seconds: training time (wall clock), both players together (the walks
      and the final best response to the sampled game): with threads=2
      the time they trained side by side.
    representation: "tree" (compiled, numba) or "states" (OpenSpiel
      states, Python).
    responders: the two trained responders: on the tree, int32[I] arrays
      of the column each plays at every infoset (of its own; the rows of
      the other player are 0); on states, dicts {information state
      string: action} (at unlisted information states the responder
      plays as the policy does).
  """
  exploitability: float
  stderr: float
  low: float
  high: float
  confidence: float
  values: tuple
  stderrs: tuple
  episodes: int
  iterations: tuple
  seconds: float
  representation: str
  responders: tuple = ()

  def __str__(self):
    return (f"exploitability >= {self.exploitability:.4f} "
            f"({self.confidence:.0%} interval [{self.low:.4f}, "
            f"{self.high:.4f}]; {sum(self.iterations):,} training walks in "
            f"{self.seconds:.1f} s, {self.episodes:,} scoring episodes per "
            f"player, {self.representation})")


def approximate_exploitability(game, policy, seconds=None, seed=None,
                               episodes=None, iterations=None,
                               confidence=0.95, representation="auto",
                               progress=None, max_memory=None, threads=1):
  """A lower bound on the exploitability of `policy`, with an interval.

  Trains a best responder per player against the fixed `policy`, scores
  each on fresh episodes (mccfrb.evaluation.bound explains the estimator
  and the training). Exact where the tree fits: `mccfrb.exploitability`.

  Args:
    game: a game string or `pyspiel.Game`, two-player zero-sum.
    policy: on the tree, anything `mccfrb.table_from_policy` takes; on
      states, any policy `mccfrb.head_to_head` takes (`EnginePolicy`...).
    seconds: training time (wall clock) of both responders, > 0 (default
      10 unless `iterations` is given): half each, one after the other,
      or with threads=2 the whole of it each, side by side; numba
      compilation not counted. The closer `policy` is to an equilibrium,
      the more training the bound needs to find its exploitability: on
      goofspiel 6 a policy of ten CPU minutes of MCCFRb gets 0.67-0.76 of
      it from 60 s on one thread, 0.89-0.91 on two (docs: Exploitability
      bounds).
    seed: int >= 0 or None; equal seeds and `iterations` give equal results.
    episodes: scoring episodes per player (default 1,000,000 on the tree
      and on an engine, 20,000 on states).
    iterations: training walks per player instead of `seconds`.
    confidence: coverage of the interval, in (0, 1).
    representation: "auto" (an engine for an `EnginePolicy`, else the tree
      if the game compiles, else states), "tree", "engine" (the policy of
      an mccfrb sampling solver on an engine) or "states".
    progress: None (tqdm bars after a few seconds), True or False.
    max_memory: bytes the engine route's two responder tables may hold
      together (default: half the memory available); past it training goes
      on within the information states stored, with one warning.
    threads: 1, or 2 to train and score the two responders side by side
      on two threads (the tree and engine routes, whose numba kernels
      release the GIL): with two free cores, about twice the walks in the
      same seconds; the same result as one thread for the same
      `iterations` and `seed`.

  Returns:
    An `ExploitabilityBound`.

  Raises:
    ValueError: not two-player zero-sum, `seconds` <= 0, other bad
      arguments, a policy of another game.
  """
  game = games.load_game(game, general=True)
  games.refuse_general(game, "approximate_exploitability")
  if seconds is not None and iterations is not None:
    raise ValueError("approximate_exploitability: pass seconds= or "
                     "iterations=, not both.")
  if iterations is not None:
    iterations = h2h._check_int(  # pylint: disable=protected-access
        iterations, "iterations", "an integer >= 1", lambda n: n >= 1)
  elif seconds is None:
    seconds = DEFAULT_SECONDS
  elif (isinstance(seconds, bool) or not isinstance(
      seconds, (int, float, np.integer, np.floating))
        or not 0.0 < seconds < math.inf):
    raise ValueError(f"seconds must be a number > 0, got {seconds!r}.")
  if episodes is not None:
    episodes = h2h._check_int(  # pylint: disable=protected-access
        episodes, "episodes", "an integer >= 2", lambda n: n >= 2)
  confidence = h2h._check_confidence(  # pylint: disable=protected-access
      confidence)
  if seed is not None:
    seed = h2h._check_seed(seed)  # pylint: disable=protected-access
  if representation not in REPRESENTATIONS:
    raise ValueError(f"representation must be one of {REPRESENTATIONS}, got "
                     f"{representation!r}.")
  if max_memory is not None:
    tables_lib.check_max_memory(max_memory)
  threads = check_threads(threads)
  representation, tree = _route(game, policy, representation)
  if threads == 2 and representation == "states":
    raise ValueError(
        "threads=2 trains the two responders side by side on the tree and "
        "engine routes (numba); the states route walks OpenSpiel states in "
        "Python and runs on one thread: pass threads=1.")
  streams = [np.random.default_rng(s)
             for s in np.random.SeedSequence(seed).spawn(4)]
  # Each responder's share of the seconds: half one after the other, the
  # whole side by side.
  budget = None if seconds is None else float(seconds) / (3 - threads)
  with contextlib.ExitStack() as stack:
    pool = (stack.enter_context(concurrent.futures.ThreadPoolExecutor(1))
            if threads == 2 else None)
    if representation == "engine":
      trainer, scorer = respond.route(game, policy, max_memory)
      episodes = respond.EPISODES if episodes is None else episodes
    elif representation == "tree":
      strategy = policy_lib.table_from_policy(tree, policy, game=game)
      episodes = TREE_EPISODES if episodes is None else episodes
      trainer = functools.partial(_TreeTrainer, tree, strategy)
      scorer = functools.partial(_TreeScorer, tree, strategy)
    else:
      agent = h2h._agent(policy, "policy", True)  # pylint: disable=protected-access
      episodes = STATES_EPISODES if episodes is None else episodes
      trainer = functools.partial(_StatesTrainer, game, agent)
      scorer = functools.partial(_StatesScorer, game, agent)
    trained = budget_lib.train_all(
        [trainer(p, streams[p]) for p in (0, 1)], budget, iterations,
        progress, pool)
    if representation == "engine" and budget is not None:
      respond.check_walks(trained, seconds)
    scored = budget_lib.score_all(
        [scorer(p, trained[p][0], streams[2 + p], episodes)
         for p in (0, 1)], episodes, progress, pool)
  constant = _constant(game, tree)
  values = tuple(m for m, _ in scored)
  stderrs = tuple(s for _, s in scored)
  estimate = (values[0] + values[1] - constant) / 2.0
  stderr = math.sqrt(stderrs[0] ** 2 + stderrs[1] ** 2) / 2.0
  z = statistics.NormalDist().inv_cdf((1.0 + confidence) / 2.0)
  return ExploitabilityBound(
      exploitability=float(estimate), stderr=float(stderr),
      low=float(estimate - z * stderr), high=float(estimate + z * stderr),
      confidence=confidence, values=values, stderrs=stderrs,
      episodes=int(episodes), iterations=tuple(t[1] for t in trained),
      seconds=float(sum(t[2] for t in trained) if threads == 1
                    else max(t[2] for t in trained)),
      representation=representation,
      responders=tuple(t[0] for t in trained))


def check_threads(threads, name="threads"):
  """`threads` as an int if it is 1 or 2 (one responder a thread), else
  ValueError naming it `name`."""
  return h2h._check_int(  # pylint: disable=protected-access
      threads, name, "1 or 2 (one responder a thread)",
      lambda n: n in (1, 2) and not isinstance(threads, bool))


def route(game, policy, representation="auto"):
  """The route `approximate_exploitability` takes for `policy`: "tree",
  "engine" or "states" (`representation`'s "auto" resolved: an engine for
  an `EnginePolicy`, else the tree if the game compiles, else states).
  Only the tree and engine routes take threads=2."""
  return _route(games.load_game(game, general=True), policy,
                representation)[0]


def _route(game, policy, representation):
  """(route, the compiled tree or None) of `route`."""
  if representation == "auto" and isinstance(policy,
                                             engine_solvers.EnginePolicy):
    return "engine", None
  if representation not in ("auto", "tree"):
    return representation, None
  try:
    from mccfrb import evaluation  # pylint: disable=import-outside-toplevel
    return "tree", evaluation.as_tree(game)
  except ValueError:
    if representation == "tree":
      raise
  return "states", None


def _constant(game, tree):
  """u_0 + u_1 at every terminal (0 for zero-sum games)."""
  if tree is not None:
    return float(tree.utility_sum)
  if game.get_type().utility == pyspiel.GameType.Utility.ZERO_SUM:
    return 0.0
  return float(game.utility_sum())


# ---------------------------------------------------------------------------
# Compiled tree (numba).


class _TreeTrainer:
  """`player`'s responder on the compiled tree (budget.py's trainer): the
  best response to the sampled game, the compiled tree with the chance and
  opponent probabilities replaced by the frequencies of the walks
  (`_sample_walks`, `_empirical_best_response`); the responder: the best
  action column per infoset, int32[I]."""

  def __init__(self, tree, strategy, player, generator):
    self.player, self._tree = player, tree
    self._visits = np.zeros(tree.num_nodes, dtype=np.int64)
    self._rng = pcg64_state(generator)
    self._stack = np.empty(tree.max_depth * tree.max_actions + 2,
                           dtype=np.int64)
    self._args = (*tree.kernel_args()[:6], strategy, player)
    self.step(0)  # Compile (not timed).
    if not exact.best_response_value.signatures:
      # `finish`'s kernel too, compiled (or loaded from numba's cache)
      # here and not in the timed training: on Kuhn's tree, whose arrays
      # have the same types, so that no sweep of this tree is spent on it.
      from mccfrb import evaluation  # pylint: disable=import-outside-toplevel
      small = evaluation.as_tree("kuhn_poker")
      _empirical_best_response(small, player,
                               np.zeros(small.num_nodes, dtype=np.int64))

  def step(self, k):
    _sample_walks(*self._args, k, self._rng, self._visits, self._stack)

  def finish(self):
    return _empirical_best_response(self._tree, self.player, self._visits)


@numba.njit(cache=True, error_model="numpy")
def _sampled_child(is_chance, start, n, u, edge_prob, strategy, infoset):
  """The child of a chance node (by `edge_prob`) or an opponent's node (by
  `strategy[infoset]`) that the uniform `u` selects: the first whose
  cumulative probability passes `u`, the last if rounding leaves none."""
  total = 0.0
  for c in range(n):
    total += edge_prob[start + c] if is_chance else strategy[infoset, c]
    if u < total:
      return start + c
  return start + n - 1


@numba.njit(cache=True, error_model="numpy", nogil=True)
def _sample_walks(node_kind, node_player, node_infoset, child_start,
                  num_children, edge_prob, strategy, player, count, rng,
                  visits, stack):
  """`count` external-sampling walks for `player` against `strategy`: one
  chance outcome and one opponent action drawn at their nodes, every
  action of `player` explored; counts the visits of every node."""
  s_hi, s_lo, i_hi, i_lo = rng[0], rng[1], rng[2], rng[3]
  for _ in range(count):
    stack[0] = 0
    top = 1
    while top > 0:
      top -= 1
      node = stack[top]
      visits[node] += 1
      kind = node_kind[node]
      if kind == 2:  # Terminal.
        continue
      start = child_start[node]
      n = num_children[node]
      if kind == 1 and node_player[node] == player:
        for c in range(n):
          stack[top] = start + c
          top += 1
        continue
      child = start
      if n > 1:
        s_hi, s_lo, u = pcg64_next(s_hi, s_lo, i_hi, i_lo)
        child = _sampled_child(kind == 0, start, n, u, edge_prob, strategy,
                               node_infoset[node])
      stack[top] = child
      top += 1
  rng[0], rng[1] = s_hi, s_lo


def _empirical_best_response(tree, player, visits):
  """`player`'s best action column per infoset in the sampled game:
  opponent nodes become chance nodes, and every chance edge gets the
  frequency visits[child] / visits[parent] (0 below unvisited nodes); then
  mccfrb's exact best-response kernel (`mccfrb.best_response`'s) decides
  the infosets bottom-up. Infosets never visited play column 0."""
  kind = tree.node_kind.copy()
  kind[(kind == tree_lib.DECISION) & (tree.node_player != player)] = (
      tree_lib.CHANCE)
  parents = tree.node_parents()
  prob = np.ones(tree.num_nodes)
  inner = parents >= 0
  from_chance = np.zeros(tree.num_nodes, dtype=bool)
  from_chance[inner] = kind[parents[inner]] == tree_lib.CHANCE
  above = visits[parents[from_chance]]
  prob[from_chance] = np.where(
      above > 0, visits[from_chance] / np.maximum(above, 1), 0.0)
  n, i = tree.num_nodes, tree.num_infosets
  best = np.zeros(i, dtype=np.int32)
  exact.best_response_value(
      kind, tree.node_player, tree.node_infoset, tree.child_start,
      tree.num_children, prob, tree.payoffs, tree.utility_sum,
      tree.infoset_num_actions, np.zeros((i, tree.max_actions)), player,
      np.empty(n), np.empty(n, dtype=np.int32), np.empty(i, dtype=np.int32),
      best, np.empty((i, tree.max_actions)), np.empty(n))
  return best


class _TreeScorer:
  """`player`'s returns with `best` against `strategy` on the compiled tree
  (budget.py's scorer, `_play`)."""

  chunk = 1 << 16

  def __init__(self, tree, strategy, player, best, generator, episodes):
    self.player = player
    self._args = (*tree.kernel_args(), float(tree.utility_sum), strategy,
                  player, best, pcg64_state(generator))
    self.returns = np.empty(episodes)
    _play(*self._args, self.returns[:0])  # Compile.

  def play(self, lo, hi):
    _play(*self._args, self.returns[lo:hi])


@numba.njit(cache=True, error_model="numpy", nogil=True)
def _play(node_kind, node_player, node_infoset, child_start, num_children,
          edge_prob, utility, utility_sum, strategy, player, best, rng, out):
  """Fills `out` with `player`'s returns of episodes in which it plays the
  column `best[I]` and the opponent samples `strategy`."""
  s_hi, s_lo, i_hi, i_lo = rng[0], rng[1], rng[2], rng[3]
  for e in range(len(out)):
    node = 0
    while node_kind[node] != 2:
      start = child_start[node]
      n = num_children[node]
      if node_kind[node] == 1 and node_player[node] == player:
        node = start + best[node_infoset[node]]
        continue
      if n == 1:
        node = start
        continue
      s_hi, s_lo, u = pcg64_next(s_hi, s_lo, i_hi, i_lo)
      node = _sampled_child(node_kind[node] == 0, start, n, u, edge_prob,
                            strategy, node_infoset[node])
    out[e] = utility[node] if player == 0 else utility_sum - utility[node]
  rng[0], rng[1] = s_hi, s_lo


# ---------------------------------------------------------------------------
# OpenSpiel states (Python).


class _StatesTrainer:
  """`player`'s responder on OpenSpiel states (budget.py's trainer): the
  walks' returns summed by the responder's sequences, then backward
  induction over them (`_induction_states`); the responder:
  {information state string: best action}."""

  def __init__(self, game, agent, player, generator):
    self.player, self._game, self._agent = player, game, agent
    self._sums, self._parent = {}, {}
    self._chance = h2h._Uniforms(generator)  # pylint: disable=protected-access

  def _walk(self, state, seq):
    player, opponent, parent = self.player, 1 - self.player, self._parent
    while not state.is_terminal():
      if state.is_chance_node():
        state.apply_action(h2h._sample_pairs(  # pylint: disable=protected-access
            state.chance_outcomes(), self._chance()))
      elif state.current_player() == opponent:
        state.apply_action(self._agent.pick(state, opponent, self._chance))
      else:
        key = state.information_state_string(player)
        if parent.setdefault(key, seq) != seq:
          raise ValueError(
              f"{self._game}: information state {key!r} of player {player} "
              "is reached after two different sequences of its own actions "
              "(imperfect recall); representation='states' needs perfect "
              "recall: use representation='tree' where the game compiles.")
        legal = state.legal_actions(player)
        for action in legal[:-1]:
          self._walk(state.child(action), (key, action))
        seq = (key, legal[-1])
        state.apply_action(legal[-1])
    self._sums[seq] = self._sums.get(seq, 0.0) + state.returns()[player]

  def step(self, k):
    for _ in range(k):
      self._walk(self._game.new_initial_state(), None)

  def finish(self):
    return _induction_states(self._sums, self._parent)


def _induction_states(sums, parent):
  """{key: best action} by backward induction over the sequence sums."""
  actions = {}
  for seq in sums:
    if seq is not None:
      actions.setdefault(seq[0], set()).add(seq[1])
  for key, seq in parent.items():
    if seq is not None:
      actions.setdefault(seq[0], set()).add(seq[1])
  depth = {}
  for key in parent:
    d, seq = 0, parent[key]
    while seq is not None:
      d += 1
      seq = parent[seq[0]]
    depth[key] = d
  after = {}
  best = {}
  for key in sorted(parent, key=lambda k: -depth[k]):
    options = sorted(actions.get(key, ()))
    if not options:
      continue
    values = [sums.get((key, a), 0.0) + after.get((key, a), 0.0)
              for a in options]
    i = int(np.argmax(values))
    best[key] = options[i]
    if parent[key] is not None:
      after[parent[key]] = after.get(parent[key], 0.0) + values[i]
  return best


class _Responder:
  """The trained responder on states: its action where training decided
  one, the policy's own play at information states training never met
  (any strategy gives a lower bound; the policy's own play scores about
  what the policy does, where uniform play would lose)."""

  def __init__(self, best, agent):
    self._best, self._agent = best, agent

  def pick(self, state, player, moves):
    action = self._best.get(state.information_state_string(player))
    if action is None:
      return self._agent.pick(state, player, moves)
    return action


class _StatesScorer:
  """`player`'s returns with `best` (the policy's own play where `best` has
  no action) against the agent, on OpenSpiel states (budget.py's
  scorer)."""

  chunk = 1024

  def __init__(self, game, agent, player, best, generator, episodes):
    self.player, self._game = player, game
    self._moves = h2h._Uniforms(generator)  # pylint: disable=protected-access
    responder = _Responder(best, agent)
    self._seats = (responder, agent) if player == 0 else (agent, responder)
    self.returns = np.empty(episodes)

  def play(self, lo, hi):
    for e in range(lo, hi):
      self.returns[e] = h2h._episode(  # pylint: disable=protected-access
          self._game, self._seats, self._moves, self._moves)[self.player]
