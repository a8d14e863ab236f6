"""Slow pure-Python reference implementations, for tests.

They walk `pyspiel` states, never the compiled tree, and take their random
numbers as uniforms from a `np.random.Generator` in the same order as the
kernels (one uniform per node on the way down), so with the same generator
seed they must produce the same tables as the numba kernels. Arithmetic is
written in the kernels' order so the agreement is to rounding.
"""

import collections

import numpy as np

from mccfrb import tree as tree_lib


def regret_matching(regrets):
  """sigma = R+ / sum R+, uniform if the sum is 0 (ALGORITHMS.md)."""
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
  baseline_decay). Tables are dicts: regrets/avg keyed by information state
  string, history baselines keyed by the history (tuple of actions) of the
  child node an edge leads to.
  """

  def __init__(self, game, baseline, epsilon=0.6, averaging="stochastic",
               baseline_decay=None):
    self.game = game
    self.baseline = baseline
    self.epsilon = epsilon
    self.averaging = averaging
    if baseline == "thesis_exponential" and baseline_decay is None:
      baseline_decay = 0.5
    self.decay = 0.0 if baseline_decay is None else baseline_decay
    self.utility_sum = game.utility_sum()
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

  def _regret_row(self, key, n):
    return self.regrets.setdefault(key, [0.0] * n)

  def _strategy(self, key, n):
    return regret_matching(self._regret_row(key, n))

  def _to_player(self, b0, player):
    return b0 if player == 0 else self.utility_sum - b0

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
          key, [0.0] * len(state.legal_actions()))
      return self._to_player(row[j], update_player)
    if kind == "oracle":
      return self._to_player(self.oracle_values[child_history], update_player)
    return self._to_player(self.edge_baseline[child_history], update_player)

  def _compute_oracle(self):
    self.oracle_values = {}

    def walk(state):
      if state.is_terminal():
        v = state.returns()[0]
      elif state.is_chance_node():
        v = sum(p * walk(state.child(a)) for a, p in state.chance_outcomes())
      else:
        sigma = self._strategy(state.information_state_string(),
                               len(state.legal_actions()))
        v = sum(s * walk(state.child(a))
                for s, a in zip(sigma, state.legal_actions()))
      self.oracle_values[tuple(state.history())] = v
      return v

    walk(self.game.new_initial_state())

  def iteration(self, t, rng):
    """Iteration t (1-based): one episode per player, drawing from `rng`."""
    for player in (0, 1):
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
          row[j] += w * (est_children[j] - est)
        if self.averaging == "stochastic":
          avg = self.avg.setdefault(key, [0.0] * len(children))
          for j in range(len(children)):
            avg[j] += step["my"] * step["sigma"][j] / step["q"]
      elif step["owner"] >= 0 and self.averaging == "optimistic":
        avg = self.avg.setdefault(key, [0.0] * len(children))
        w = (t - self.avg_last[key]) * step["opp_own"]
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
        self.edge_baseline[history + (step["actions"][step["a"]],)] = (
            self._to_player(v, i))
        sigma = (step["sigma"] if step["owner"] == -1 else
                 self._strategy(step["key"], len(step["actions"])))
        v = 0.0
        for s, act in zip(sigma, step["actions"]):
          v += s * self._to_player(self.edge_baseline[history + (act,)], i)
    return value

  def _update_baseline(self, key, a_s, child, i, value, est_children):
    kind = self.baseline
    if kind in ("thesis", "thesis_exponential") and key is not None:
      row = self.infoset_baseline[(i, key)]
      row[a_s] = averaged(row[a_s], self.infoset_count[(i, key)],
                          est_children[a_s], self.decay)
      self.infoset_count[(i, key)] += 1
    elif kind == "learned" and key is not None:
      row = self.infoset_baseline[key]
      row[a_s] = averaged(row[a_s], self.action_count[(key, a_s)],
                          self._to_player(value, i), self.decay)
      self.action_count[(key, a_s)] += 1
    elif kind == "history":
      self.edge_baseline[child] = averaged(
          self.edge_baseline[child], self.edge_count[child],
          self._to_player(value, i), self.decay)
      self.edge_count[child] += 1


def node_histories(tree):
  """The history (tuple of OpenSpiel actions) of every node of `tree`."""
  histories = [()] * tree.num_nodes
  for n in range(tree.num_nodes):
    if tree.node_kind[n] == tree_lib.TERMINAL:
      continue
    s = tree.child_start[n]
    for c in range(s, s + tree.num_children[n]):
      histories[c] = histories[n] + (int(tree.edge_action[c]),)
  return histories
