"""OpenSpiel's `open_spiel.python.algorithms.cfr`, on mccfrb's CFRSolver.

`CFRSolver(game)` and `CFRPlusSolver(game)` are mccfrb's "cfr" and "cfr+"
variants. `_CFRSolver(game, alternating_updates, linear_averaging,
regret_matching_plus)` builds the variant OpenSpiel's flags name (its
tests build theirs this way): the cumulative regrets summed (regret
matching) or clipped at 0 after each update (regret matching+), the
average strategy weighted by 1 or, with linear averaging, by the
iteration number t, and the players updated in turn (alternating
updates) or, with `alternating_updates=False`, both from the same
strategy profile in one iteration (simultaneous updates). The eight
combinations are served, as `RegretRule`s (mccfrb/solvers/rules.py) run
by `mccfrb.CFRSolver(..., alternating_updates=...)`: (False, False) is
"cfr", (True, True) "cfr+", the other two are rules of their own.

`_InfoStateNode` and `_update_current_policy` are OpenSpiel's per-infoset
record and its regret-matching step on such records (its tests build
them by hand); mccfrb's solvers keep their tables in arrays and return
them as such records from `info_state_nodes()` (also under OpenSpiel's
attribute name `_info_state_nodes`).
"""

import numpy as np

from mccfrb.kernels import exact as _exact
from mccfrb.solvers import CFRSolver as _MCCFRbCFRSolver
from mccfrb.solvers import rules as _rules
from mccfrb.solvers.cfr import InfoStateNode as _InfoStateNode


def _update_current_policy(current_policy, info_state_nodes):
  """OpenSpiel's `cfr._update_current_policy`: each infoset's row of the
  `TabularPolicy` `current_policy` set in place to the regret matching of
  its node's cumulative regrets (mccfrb's `regret_matching_row`).

  Args:
    current_policy: an `open_spiel.python.policy.TabularPolicy`.
    info_state_nodes: {information state string: `_InfoStateNode`}.
  """
  for info_state, node in info_state_nodes.items():
    actions = list(node.legal_actions)
    regrets = np.array([[float(node.cumulative_regret.get(a, 0.0))
                         for a in actions]])
    row = np.empty_like(regrets)
    _exact.regret_matching_row(regrets, 0, len(actions), row, 0)
    state_policy = current_policy.policy_for_key(info_state)
    for a, probability in zip(actions, row[0]):
      state_policy[a] = probability


class _OpenSpielFlags(_rules.RegretRule):
  """The regret rule of OpenSpiel's `_CFRSolver` flags: regret matching
  (`clip` False) or regret matching+ (True), average weight 1 or t
  (`linear`)."""

  def __init__(self, regret_matching_plus, linear_averaging):
    self.clip = bool(regret_matching_plus)
    self.linear = bool(linear_averaging)
    self.name = (f"openspiel_cfr(regret_matching_plus={self.clip}, "
                 f"linear_averaging={self.linear})")

  def average_weight(self, t):
    return t if self.linear else 1.0

  def __repr__(self):
    return self.name


def CFRSolver(game):  # pylint: disable=invalid-name
  """OpenSpiel's `cfr.CFRSolver(game)`: vanilla CFR, alternating updates."""
  return _MCCFRbCFRSolver(game, variant="cfr")


def CFRPlusSolver(game):  # pylint: disable=invalid-name
  """OpenSpiel's `cfr.CFRPlusSolver(game)`: regret matching+, linear
  averaging, alternating updates."""
  return _MCCFRbCFRSolver(game, variant="cfr+")


def _CFRSolver(game, alternating_updates, linear_averaging,  # pylint: disable=invalid-name
               regret_matching_plus):
  """OpenSpiel's `cfr._CFRSolver`, with its signature and flags.

  Args:
    game: a `pyspiel.Game` or game string.
    alternating_updates: update the players in turn, each pass with the
      strategies the earlier players got in this iteration; False: every
      player from the same profile sigma^t, then every player's new
      strategy (simultaneous updates, Zinkevich et al. 2007).
    linear_averaging: weight iteration t's average-strategy terms by t.
    regret_matching_plus: clip the cumulative regrets at 0 after each
      update (regret matching+), instead of summing them.

  Returns:
    An `mccfrb.CFRSolver` running those flags: "cfr" for (False, False),
    "cfr+" for regret matching+ with linear averaging, else a regret rule
    of the two flags.
  """
  if regret_matching_plus and linear_averaging:
    variant = "cfr+"
  elif not regret_matching_plus and not linear_averaging:
    variant = "cfr"
  else:
    variant = _OpenSpielFlags(regret_matching_plus, linear_averaging)
  return _MCCFRbCFRSolver(game, variant=variant,
                          alternating_updates=bool(alternating_updates))
