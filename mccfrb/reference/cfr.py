"""Pure-Python PCFR+, DCFR+ and PDCFR+ on pyspiel states, for tests.

Written as the authors of DCFR+/PDCFR+ wrote their reference code
(github.com/rpSebastian/PDCFRPlus, `pdcfrplus/cfr/*.py`), not through
mccfrb's rule module: per iteration t and player i, a recursive walk of
the game sums each of i's infosets' instantaneous regrets r_t and own reach;
then, per infoset,
  pcfr+:  R = max(R + r, 0); strategy from max(R + r, 0);
  dcfr+:  R = max(R (t-1)^a / ((t-1)^a + 1.5) + r, 0); strategy from R+;
  pdcfr+: R = max(R d(t) + r, 0), d(t) = (t-1)^a / ((t-1)^a + 1);
          strategy from max(R d(t+1) + r, 0);
and the cumulative policy S = S ((t-1)/t)^gamma + reach sigma_t (S = reach
sigma_1 at t = 1) with the strategy played at t.
"""

from mccfrb import games

DEFAULTS = {"pcfr+": {"gamma": 2.0}, "dcfr+": {"alpha": 1.5, "gamma": 4.0},
            "pdcfr+": {"alpha": 2.3, "gamma": 5.0}}


def _normalise(values):
  total = sum(max(v, 0.0) for v in values)
  if total == 0:
    return [1.0 / len(values)] * len(values)
  return [max(v, 0.0) / total for v in values]


class ReferenceCFR:
  """One of DEFAULTS' variants, tables keyed by info-state strings.

  Attributes:
    regrets, policy, cumulative: dicts info-state string -> list over the
      legal actions (in OpenSpiel's order).
    actions: info-state string -> its legal actions.
  """

  def __init__(self, game, variant, **constants):
    # Simultaneous-move games turn-based, as mccfrb's solvers see them.
    self.game = games.load_game(game)
    self.variant = variant
    self.constants = {**DEFAULTS[variant], **constants}
    self.regrets, self.policy, self.cumulative = {}, {}, {}
    self.actions = {}
    self._inst, self._reach = {}, {}
    self.t = 0

  def _lookup(self, state, player):
    key = state.information_state_string(player)
    if key not in self.policy:
      n = len(state.legal_actions())
      self.regrets[key] = [0.0] * n
      self.policy[key] = [1.0 / n] * n
      self.cumulative[key] = [0.0] * n
      self.actions[key] = state.legal_actions()
    return key

  def _walk(self, state, i, my_reach, opp_reach):
    if state.is_terminal():
      return state.returns()[i]
    if state.is_chance_node():
      return sum(p * self._walk(state.child(a), i, my_reach, opp_reach * p)
                 for a, p in state.chance_outcomes())
    player = state.current_player()
    key = self._lookup(state, player)
    policy = self.policy[key]
    actions = state.legal_actions()
    if player != i:
      return sum(p * self._walk(state.child(a), i, my_reach, opp_reach * p)
                 for a, p in zip(actions, policy))
    child = [self._walk(state.child(a), i, my_reach * p, opp_reach)
             for a, p in zip(actions, policy)]
    v = sum(p * c for p, c in zip(policy, child))
    inst = self._inst.setdefault(key, [0.0] * len(actions))
    for j, c in enumerate(child):
      inst[j] += opp_reach * (c - v)
    self._reach[key] = self._reach.get(key, 0.0) + my_reach
    return v

  def _discount(self, t):
    a = self.constants.get("alpha", 0.0)
    ta = float(t - 1) ** a
    if self.variant == "dcfr+":
      return ta / (ta + 1.5)
    if self.variant == "pdcfr+":
      return ta / (ta + 1.0)
    return 1.0

  def iteration(self):
    """One iteration: player 0's walk and update, then player 1's."""
    self.t += 1
    t, gamma = self.t, self.constants["gamma"]
    for i in range(2):
      self._inst, self._reach = {}, {}
      self._walk(self.game.new_initial_state(), i, 1.0, 1.0)
      for key, inst in self._inst.items():
        d = self._discount(t)
        regrets = [max(r * d + x, 0.0)
                   for r, x in zip(self.regrets[key], inst)]
        self.regrets[key] = regrets
        reach = self._reach[key]
        played = self.policy[key]
        scale = 0.0 if t == 1 else ((t - 1) / t) ** gamma
        self.cumulative[key] = [s * scale + reach * p for s, p in
                                zip(self.cumulative[key], played)]
        if self.variant == "dcfr+":
          self.policy[key] = _normalise(regrets)
        else:
          d_next = self._discount(t + 1)
          self.policy[key] = _normalise(
              [r * d_next + x for r, x in zip(regrets, inst)])

  def average_policy(self, key):
    """The normalised cumulative policy at an info-state string."""
    return _normalise(self.cumulative[key])
