"""Slow pure-Python reference implementations, for tests.

They walk `pyspiel` states, never the compiled tree, and take their random
numbers as uniforms from a `np.random.Generator` in the same order as the
kernels (one uniform per node on the way down), so with the same generator
seed they must produce the same tables as the numba kernels. Arithmetic is
written in the kernels' order so the agreement is to rounding.
"""

import collections

import numpy as np

from mccfrb import games
from mccfrb.games import tree as tree_lib


def regret_matching(regrets):
  """sigma = R+ / sum R+, uniform if the sum is 0 (docs/pages/algorithms.md)."""
  total = 0.0
  for r in regrets:
    if r > 0.0:
      total += r
  if total > 0.0:
    return [r / total if r > 0.0 else 0.0 for r in regrets]
  return [1.0 / len(regrets)] * len(regrets)


def sample_index(probs, u):
  """Inverse-CDF sampling; never an index of probability 0."""
  cumulative, last_positive = 0.0, -1
  for a, p in enumerate(probs):
    if p > 0.0:
      last_positive = a
      cumulative += p
      if u < cumulative:
        return a
  return last_positive


def averaged(old, count, target, decay):
  if decay > 0.0:
    return (1.0 - decay) * old + decay * target
  return (old * count + target) / (count + 1.0)


def exact_value(state, strategy_of):
  """Player 0's expected utility below `state` when both play `strategy_of`."""
  if state.is_terminal():
    return state.returns()[0]
  if state.is_chance_node():
    return sum(p * exact_value(state.child(a), strategy_of)
               for a, p in state.chance_outcomes())
  sigma = strategy_of(state.information_state_string(), len(state.legal_actions()))
  return sum(s * exact_value(state.child(a), strategy_of)
             for s, a in zip(sigma, state.legal_actions()))


class ReferenceMCCFRb:
  """Outcome-sampling MCCFR with baselines, written directly from the math.

  Same options as `mccfrb.MCCFRbSolver` (baseline, epsilon, averaging,
  baseline_decay, weighting, regret). Tables are dicts: regrets/avg keyed by information state
  string, history baselines keyed by the history (tuple of actions) of the
  child node an edge leads to. On games with more than two players or
  general-sum returns every baseline key starts with the player whose
  utility it holds (one table per player). Kinds keyed per node by a
  label other than the history (situation, public, observation:
  `mccfrb.kernels.baselines`) take `key_of(history)`, the label of a
  history (a tuple of actions), and keep (label, action) -> baseline.
  """

  def __init__(self, game, baseline, epsilon=0.6, averaging="stochastic",
               baseline_decay=None, weighting=None, linear_iterations=None,
               alpha=1.5, beta=0.0, gamma=2.0, regret="rm", key_of=None):
    self.game = game
    self.plus = regret == "rm+"
    self.weighting, self.linear_iterations = weighting, linear_iterations
    self.alpha, self.beta, self.gamma = alpha, beta, gamma
    self.through = collections.defaultdict(int)
    self._t = 1
    self.baseline = baseline
    self.epsilon = epsilon
    self.averaging = averaging
    if baseline == "thesis_exponential" and baseline_decay is None:
      baseline_decay = 0.5
    self.decay = 0.0 if baseline_decay is None else baseline_decay
    self.num_players = game.num_players()
    self.general = not games.is_two_player_zero_sum(game)
    self.utility_sum = game.utility_sum() if not self.general else 0.0
    self.regrets = {}
    self.avg = {}
    self.avg_last = collections.defaultdict(int)
    # Thesis: (player, infoset) -> list of baselines; counts per (player, I).
    self.infoset_baseline = {}
    self.infoset_count = collections.defaultdict(int)
    self.action_count = collections.defaultdict(int)
    # History kinds: child history -> baseline (player 0's utility).
    self.edge_baseline = collections.defaultdict(float)
    self.edge_count = collections.defaultdict(int)
    self.oracle_values = {}
    # Kinds keyed per node (label of the history, action) -> baseline.
    self.key_of = key_of
    self.keyed_baseline = collections.defaultdict(float)
    self.keyed_count = collections.defaultdict(int)

  def _regret_row(self, key, n):
    return self.regrets.setdefault(key, [0.0] * n)

  def _strategy(self, key, n):
    row = self._regret_row(key, n)
    if self.weighting == "discounted":
      _catch_up(row, key, self.through, self._t, self.alpha, self.beta)
    return regret_matching(row)

  def _to_player(self, b0, player):
    if self.general:
      return b0  # Each player's table holds its own utility.
    return b0 if player == 0 else self.utility_sum - b0

  def _own(self, player, key):
    """A baseline table's key: per player on general games."""
    return (player, key) if self.general else key

  def _baseline(self, state, key, j, child_history, update_player):
    """b(h, a_j) in the update player's utility."""
    kind = self.baseline
    if kind == "none":
      return 0.0
    if kind in ("thesis", "thesis_exponential"):
      if key is None:
        return 0.0
      row = self.infoset_baseline.setdefault(
          (update_player, key), [0.0] * len(state.legal_actions()))
      return row[j]
    if kind == "learned":
      if key is None:
        return 0.0
      row = self.infoset_baseline.setdefault(
          self._own(update_player, key), [0.0] * len(state.legal_actions()))
      return self._to_player(row[j], update_player)
    if self.key_of is not None:
      own = self._own(update_player, self.key_of(child_history[:-1]))
      return self._to_player(self.keyed_baseline[(own, j)], update_player)
    own = self._own(update_player, child_history)
    if kind == "oracle":
      return self._to_player(self.oracle_values[own], update_player)
    return self._to_player(self.edge_baseline[own], update_player)

  def _compute_oracle(self):
    self.oracle_values = {}

    def walk(state, p):
      if state.is_terminal():
        v = state.returns()[p]
      elif state.is_chance_node():
        v = sum(q * walk(state.child(a), p) for a, q in state.chance_outcomes())
      else:
        sigma = self._strategy(state.information_state_string(),
                               len(state.legal_actions()))
        v = sum(s * walk(state.child(a), p)
                for s, a in zip(sigma, state.legal_actions()))
      self.oracle_values[self._own(p, tuple(state.history()))] = v
      return v

    for p in range(self.num_players if self.general else 1):
      walk(self.game.new_initial_state(), p)

  def iteration(self, t, rng):
    """Iteration t (1-based): one episode per player, drawing from `rng`."""
    self._t = t
    if self.weighting == "linear":
      self._w = float(min(t, self.linear_iterations)) if (
          self.linear_iterations) else float(t)
    elif self.weighting == "discounted":
      self._w = float(t) ** self.gamma
    else:
      self._w = 1.0
    self._regret_w = self._w if self.weighting == "linear" else 1.0
    if self.plus:
      self._w = float(t)  # MCCFRb+: linear averaging.
    for player in range(self.num_players):
      if self.baseline == "oracle":
        self._compute_oracle()
      self.episode(t, player, rng)

  def episode(self, t, i, rng):
    path = []
    state = self.game.new_initial_state()
    my_reach = opp_reach = opp_own_reach = sample_reach = 1.0
    while not state.is_terminal():
      if state.is_chance_node():
        actions, probs = zip(*state.chance_outcomes())
        sigma = xi = list(probs)
        key = None
        owner = -1
      else:
        key = state.information_state_string()
        actions = state.legal_actions()
        owner = state.current_player()
        sigma = self._strategy(key, len(actions))
        if owner == i:
          xi = [self.epsilon / len(actions) + (1.0 - self.epsilon) * s
                for s in sigma]
        else:
          xi = list(sigma)
      a = sample_index(xi, rng.random())
      path.append(dict(state=state, key=key, owner=owner, actions=actions,
                       sigma=sigma, xi=xi, a=a, my=my_reach, opp=opp_reach,
                       opp_own=opp_own_reach, q=sample_reach))
      if owner == -1:
        opp_reach *= sigma[a]
      elif owner == i:
        my_reach *= sigma[a]
      else:
        opp_reach *= sigma[a]
        opp_own_reach *= sigma[a]
      sample_reach *= xi[a]
      state = state.child(actions[a])
    terminal_value = state.returns()[i]
    value = terminal_value
    for step in reversed(path):
      h, key, a_s = step["state"], step["key"], step["a"]
      history = tuple(h.history())
      children = [history + (act,) for act in step["actions"]]
      est_children = [self._baseline(h, key, j, children[j], i)
                      for j in range(len(children))]
      b_s = est_children[a_s]
      est_children[a_s] = b_s + (value - b_s) / step["xi"][a_s]
      est = 0.0
      for s, c in zip(step["sigma"], est_children):
        est += s * c
      if step["owner"] == i:
        w = step["opp"] / step["q"]
        row = self._regret_row(key, len(children))
        for j in range(len(children)):
          row[j] += self._regret_w * (w * (est_children[j] - est))
          if self.plus:
            row[j] = max(row[j], 0.0)
        if self.averaging == "stochastic":
          avg = self.avg.setdefault(key, [0.0] * len(children))
          for j in range(len(children)):
            avg[j] += self._w * (step["my"] * step["sigma"][j] / step["q"])
      elif step["owner"] >= 0 and self.averaging == "optimistic":
        avg = self.avg.setdefault(key, [0.0] * len(children))
        last = self.avg_last[key]
        skipped = (t * (t + 1) - last * (last + 1)) / 2 if self.plus else (
            t - last)
        w = skipped * step["opp_own"]
        for j in range(len(children)):
          avg[j] += w * step["sigma"][j]
        self.avg_last[key] = t
      self._update_baseline(key, a_s, children[a_s], i, value, est_children)
      value = est
    if self.baseline == "predictive":
      v = terminal_value
      for step in reversed(path):
        h = step["state"]
        history = tuple(h.history())
        self.edge_baseline[self._own(
            i, history + (step["actions"][step["a"]],))] = self._to_player(v, i)
        sigma = (step["sigma"] if step["owner"] == -1 else
                 self._strategy(step["key"], len(step["actions"])))
        v = 0.0
        for s, act in zip(sigma, step["actions"]):
          v += s * self._to_player(
              self.edge_baseline[self._own(i, history + (act,))], i)
    return value

  def _update_baseline(self, key, a_s, child, i, value, est_children):
    kind = self.baseline
    if kind in ("thesis", "thesis_exponential") and key is not None:
      row = self.infoset_baseline[(i, key)]
      row[a_s] = averaged(row[a_s], self.infoset_count[(i, key)],
                          est_children[a_s], self.decay)
      self.infoset_count[(i, key)] += 1
    elif kind == "learned" and key is not None:
      own = self._own(i, key)
      row = self.infoset_baseline[own]
      row[a_s] = averaged(row[a_s], self.action_count[(own, a_s)],
                          self._to_player(value, i), self.decay)
      self.action_count[(own, a_s)] += 1
    elif self.key_of is not None:
      own = (self._own(i, self.key_of(child[:-1])), a_s)
      self.keyed_baseline[own] = averaged(
          self.keyed_baseline[own], self.keyed_count[own],
          self._to_player(value, i), self.decay)
      self.keyed_count[own] += 1
    elif kind == "history":
      own = self._own(i, child)
      self.edge_baseline[own] = averaged(
          self.edge_baseline[own], self.edge_count[own],
          self._to_player(value, i), self.decay)
      self.edge_count[own] += 1


def node_histories(tree):
  """The history (tuple of OpenSpiel actions) of every node of `tree`."""
  histories = [()] * tree.num_nodes
  edge_actions = tree.edge_actions().tolist()
  for n in range(tree.num_nodes):
    if tree.node_kind[n] == tree_lib.TERMINAL:
      continue
    s = int(tree.child_start[n])
    for c in range(s, s + int(tree.num_children[n])):
      histories[c] = histories[n] + (edge_actions[c],)
  return histories


class ReferenceExternalSampling:
  """External-sampling MCCFR written recursively, as OpenSpiel's Python.

  Same options as `mccfrb.ExternalSamplingSolver`; random numbers are drawn
  as uniforms from `rng` in the kernel's order (pre-order: one per chance or
  opponent node, one per pruning candidate at the update player's nodes).
  """

  def __init__(self, game, averaging="simple", weighting=None,
               linear_iterations=None, alpha=1.5, beta=0.0, gamma=2.0,
               pruning=None, prune_threshold=-200.0, prune_probability=0.95,
               prune_k=200.0, prune_floor=0.05, prune_after=1):
    self.game = game
    self.averaging, self.weighting = averaging, weighting
    self.linear_iterations = linear_iterations
    self.alpha, self.beta, self.gamma = alpha, beta, gamma
    self.pruning, self.prune_threshold = pruning, prune_threshold
    self.prune_probability, self.prune_k = prune_probability, prune_k
    self.prune_floor, self.prune_after = prune_floor, prune_after
    self.regrets, self.avg = {}, {}
    self.through = collections.defaultdict(int)
    self.pruned = 0

  def _strategy(self, key, n, t):
    row = self.regrets.setdefault(key, [0.0] * n)
    if self.weighting == "discounted":
      _catch_up(row, key, self.through, t, self.alpha, self.beta)
    return regret_matching(row)

  def iteration(self, t, rng):
    if self.weighting == "linear":
      w = float(min(t, self.linear_iterations)) if self.linear_iterations else float(t)
    elif self.weighting == "discounted":
      w = float(t) ** self.gamma
    else:
      w = 1.0
    self._w, self._regret_w = w, (w if self.weighting == "linear" else 1.0)
    for p in (0, 1):
      self._traverse(self.game.new_initial_state(), p, t, rng)
    if self.averaging == "full":
      self._full_average(self.game.new_initial_state(), [1.0, 1.0], t)

  def _full_average(self, state, reach, t):
    if state.is_terminal():
      return
    if state.is_chance_node():
      for a, _ in state.chance_outcomes():
        self._full_average(state.child(a), reach, t)
      return
    p = state.current_player()
    key = state.information_state_string()
    actions = state.legal_actions()
    sigma = self._strategy(key, len(actions), t + 1)
    row = self.avg.setdefault(key, [0.0] * len(actions))
    for j, a in enumerate(actions):
      row[j] += self._w * reach[p] * sigma[j]
      child_reach = list(reach)
      child_reach[p] *= sigma[j]
      self._full_average(state.child(a), child_reach, t)

  def _traverse(self, state, p, t, rng):
    if state.is_terminal():
      return state.returns()[p]
    if state.is_chance_node():
      actions, probs = zip(*state.chance_outcomes())
      a = sample_index(probs, rng.random())
      return self._traverse(state.child(actions[a]), p, t, rng)
    key = state.information_state_string()
    actions = state.legal_actions()
    sigma = self._strategy(key, len(actions), t)
    if state.current_player() != p:
      a = sample_index(sigma, rng.random())
      if self.averaging == "simple":
        row = self.avg.setdefault(key, [0.0] * len(actions))
        for j in range(len(actions)):
          row[j] += self._w * sigma[j]
      return self._traverse(state.child(actions[a]), p, t, rng)
    regrets = self.regrets[key]
    weights = [1.0] * len(actions)
    for j, a in enumerate(actions):
      if (self.pruning and t >= self.prune_after
          and regrets[j] < self.prune_threshold
          and not state.child(a).is_terminal()):
        u = rng.random()
        if self.pruning == "pluribus":
          if u < self.prune_probability:
            weights[j] = 0.0
        else:
          q = max(self.prune_k / (self.prune_k + self.prune_threshold - regrets[j]),
                  self.prune_floor)
          weights[j] = 1.0 / q if u < q else 0.0
    if not any(weights):
      weights = [1.0] * len(actions)
    else:
      self.pruned += weights.count(0.0)
    values = [0.0] * len(actions)
    for j, a in enumerate(actions):
      if weights[j] > 0.0:
        values[j] = self._traverse(state.child(a), p, t, rng)
    v = 0.0
    for j in range(len(actions)):
      if weights[j] > 0.0:
        v += sigma[j] * values[j]
    for j in range(len(actions)):
      if weights[j] > 0.0:
        regrets[j] += self._regret_w * weights[j] * (values[j] - v)
    return v


def _catch_up(row, key, through, t, alpha, beta):
  """Applies the discounts of iterations through[key] + 1 .. t - 1 to `row`,
  with the kernel's arithmetic (exp of a difference of prefix sums)."""
  d = through[key]
  if d >= t - 1:
    return
  lp, ln = _prefix(alpha, t), _prefix(beta, t)
  fp, fn = np.exp(lp[t - 1] - lp[d]), np.exp(ln[t - 1] - ln[d])
  for j, r in enumerate(row):
    row[j] = r * fp if r >= 0.0 else r * fn
  through[key] = t - 1


def _prefix(power, size):
  """The kernel's prefix sums of log(k^p / (k^p + 1)), length >= size + 1."""
  k = np.arange(1, size + 1, dtype=np.float64)
  return np.concatenate([[0.0], np.cumsum(-np.log1p(k**-power))])
