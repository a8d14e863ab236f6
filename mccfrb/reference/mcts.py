"""Pure-Python UCT and Smooth UCT over pyspiel states, for tests.

Written from Mac Manus's Algorithms 1-3 (Heinrich 2017) without the compiled
tree: one search tree per player as a dict keyed by the information state
string, pyspiel states walked with `child`. It draws its uniforms from a
`np.random.Generator` in the kernel's order (kernels/mcts.py), so with the
same seed it must produce the same tables as `SmoothUCTSolver` and
`UCTSolver`, bit for bit.
"""

import math

from mccfrb.reference import sample_index


class ReferenceMCTS:
  """Self-play or uniform-opponent UCT / Smooth UCT.

  Attributes:
    trees: [dict, dict], per player {infostate: Node}.
  """

  class Node:
    """N(u), N(u, a), Q(u, a) of one information state."""

    def __init__(self, num_actions):
      self.visits = 0
      self.counts = [0] * num_actions
      self.values = [0.0] * num_actions

  def __init__(self, game, smooth, c, gamma=0.0, eta0=1.0, d=0.0,
               opponent="self"):
    self.game = game
    self.smooth = smooth
    self.c, self.gamma, self.eta0, self.d = c, gamma, eta0, d
    self.opponent = opponent
    self.trees = [{}, {}]
    self.simulations = 0

  def _select(self, node, rng):
    if self.smooth:
      eta = max(self.gamma, self.eta0 / (1.0 + self.d * math.sqrt(node.visits)))
      if not rng.random() < eta:
        threshold = rng.random() * node.visits
        cumulative = 0
        for a, n in enumerate(node.counts):
          cumulative += n
          if threshold < cumulative:
            return a
        return len(node.counts) - 1
    best, best_value = 0, -math.inf
    for a, n in enumerate(node.counts):
      if n == 0:
        return a
      value = node.values[a] + self.c * math.sqrt(math.log(node.visits) / n)
      if value > best_value:
        best, best_value = a, value
    return best

  def simulate(self, rng):
    """One simulation from the root (Algorithm 1, SIMULATE)."""
    learner = self.simulations % 2
    self.simulations += 1
    out_of_tree = [False, False]
    path = []
    state = self.game.new_initial_state()
    while not state.is_terminal():
      if state.is_chance_node():
        outcomes = state.chance_outcomes()
        a = sample_index([p for _, p in outcomes], rng.random())
        state = state.child(outcomes[a][0])
        continue
      player = state.current_player()
      actions = state.legal_actions()
      uniform = (self.opponent == "uniform" and player != learner) or (
          out_of_tree[player])
      if uniform:
        a = min(int(rng.random() * len(actions)), len(actions) - 1)
      else:
        key = state.information_state_string(player)
        node = self.trees[player].get(key)
        if node is None:  # EXPANDTREE, then the rollout policy.
          node = self.trees[player][key] = self.Node(len(actions))
          a = min(int(rng.random() * len(actions)), len(actions) - 1)
          out_of_tree[player] = True
        else:
          a = self._select(node, rng)
        path.append((player, node, a))
      state = state.child(actions[a])
    returns = state.returns()
    for player, node, a in path:  # UPDATE (Algorithm 2).
      node.visits += 1
      node.counts[a] += 1
      node.values[a] += (returns[player] - node.values[a]) / node.counts[a]
    return returns
