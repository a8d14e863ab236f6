"""OpenSpiel's `open_spiel.python.algorithms.discounted_cfr`, on mccfrb's
CFRSolver: `DCFRSolver(game, alpha, beta, gamma)`, `LCFRSolver(game)` and
the class both are built from, `_DCFRSolver(game, alternating_updates,
linear_averaging, regret_matching_plus, alpha, beta, gamma)`."""

from mccfrb.solvers import CFRSolver as _MCCFRbCFRSolver
from mccfrb.solvers import rules as _rules


def DCFRSolver(game, alpha=3 / 2, beta=0, gamma=2):  # pylint: disable=invalid-name
  """OpenSpiel's `discounted_cfr.DCFRSolver(game, alpha, beta, gamma)`."""
  return _MCCFRbCFRSolver(game, variant="discounted", alpha=alpha, beta=beta,
                          gamma=gamma)


def LCFRSolver(game):  # pylint: disable=invalid-name
  """OpenSpiel's `discounted_cfr.LCFRSolver(game)`: Linear CFR."""
  return _MCCFRbCFRSolver(game, variant="linear")


class _UniformlyAveragedDCFR(_rules.Discounted):
  """DCFR(alpha, beta, gamma)'s regret discounts with average weight 1:
  OpenSpiel's `_DCFRSolver(..., linear_averaging=False, ...)`."""

  def __init__(self, alpha, beta, gamma):
    super().__init__(alpha, beta, gamma)
    self.name = (f"openspiel_dcfr(alpha={self.alpha:g}, beta={self.beta:g}, "
                 "linear_averaging=False)")

  def average_weight(self, t):
    del t
    return 1.0


def _DCFRSolver(game, alternating_updates, linear_averaging,  # pylint: disable=invalid-name
                regret_matching_plus, alpha, beta, gamma):
  """OpenSpiel's `discounted_cfr._DCFRSolver`, with its signature.

  Args:
    game: a `pyspiel.Game` or game string.
    alternating_updates: must be True. OpenSpiel's `_DCFRSolver` runs no
      update at all with False (its `evaluate_and_update_policy` has only
      the alternating branch), which is not mirrored:
      `mccfrb.CFRSolver(game, variant="discounted",
      alternating_updates=False)` runs simultaneous DCFR.
    linear_averaging: average weights t^gamma; False: weight 1.
    regret_matching_plus: accepted and, as in OpenSpiel's `_DCFRSolver`,
      not applied (its regrets are discounted, never clipped).
    alpha, beta, gamma: DCFR's constants.

  Returns:
    An `mccfrb.CFRSolver` running DCFR(alpha, beta, gamma).

  Raises:
    ValueError: `alternating_updates` is False.
  """
  del regret_matching_plus  # OpenSpiel's _DCFRSolver does not apply it.
  if not alternating_updates:
    raise ValueError(
        "discounted_cfr._DCFRSolver(alternating_updates=False) is not "
        "mirrored: OpenSpiel's runs no update with it; "
        "mccfrb.CFRSolver(game, variant='discounted', "
        "alternating_updates=False) runs simultaneous DCFR.")
  if linear_averaging:
    return _MCCFRbCFRSolver(game, variant="discounted", alpha=alpha,
                            beta=beta, gamma=gamma)
  return _MCCFRbCFRSolver(game,
                          variant=_UniformlyAveragedDCFR(alpha, beta, gamma))
