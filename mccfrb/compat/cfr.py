"""OpenSpiel's `open_spiel.python.algorithms.cfr`, on mccfrb's CFRSolver.

`CFRSolver(game)` and `CFRPlusSolver(game)` are mccfrb's "cfr" and "cfr+"
variants. `_CFRSolver(game, alternating_updates, linear_averaging,
regret_matching_plus)` builds the variant OpenSpiel's flags name (its
tests build theirs this way): the cumulative regrets summed (regret
matching) or clipped at 0 after each player's update (regret matching+),
and the average strategy weighted by 1 or, with linear averaging, by the
iteration number t. The four combinations with alternating updates are
served, as `RegretRule`s (mccfrb/solvers/rules.py): (False, False) is
"cfr", (True, True) "cfr+", the other two are rules of their own.
Simultaneous updates (`alternating_updates=False`) are refused: mccfrb's
CFR kernels update the players in turn.
"""

from mccfrb.solvers import CFRSolver as _MCCFRbCFRSolver
from mccfrb.solvers import rules as _rules


class _OpenSpielFlags(_rules.RegretRule):
  """The regret rule of OpenSpiel's `_CFRSolver` flags (with alternating
  updates): regret matching (`clip` False) or regret matching+ (True),
  average weight 1 or t (`linear`)."""

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
    alternating_updates: must be True: the players are updated in turn,
      each pass with the other's strategy of the same iteration.
    linear_averaging: weight iteration t's average-strategy terms by t.
    regret_matching_plus: clip the cumulative regrets at 0 after each
      update (regret matching+), instead of summing them.

  Returns:
    An `mccfrb.CFRSolver` running those flags: "cfr" for (False, False),
    "cfr+" for regret matching+ with linear averaging, else a regret rule
    of the two flags.

  Raises:
    ValueError: `alternating_updates` is False.
  """
  if not alternating_updates:
    raise ValueError(
        "alternating_updates=False (simultaneous updates) is not mirrored: "
        "mccfrb's CFR family updates the players in turn; pass "
        "alternating_updates=True, or run OpenSpiel's own cfr._CFRSolver "
        "for simultaneous updates.")
  if regret_matching_plus and linear_averaging:
    variant = "cfr+"
  elif not regret_matching_plus and not linear_averaging:
    variant = "cfr"
  else:
    variant = _OpenSpielFlags(regret_matching_plus, linear_averaging)
  return _MCCFRbCFRSolver(game, variant=variant)
