"""OpenSpiel's `open_spiel.python.algorithms.discounted_cfr`, on mccfrb's
CFRSolver: `DCFRSolver(game, alpha, beta, gamma)` and `LCFRSolver(game)`."""

from mccfrb.solvers import CFRSolver as _MCCFRbCFRSolver


def DCFRSolver(game, alpha=3 / 2, beta=0, gamma=2):  # pylint: disable=invalid-name
  """OpenSpiel's `discounted_cfr.DCFRSolver(game, alpha, beta, gamma)`."""
  return _MCCFRbCFRSolver(game, variant="discounted", alpha=alpha, beta=beta,
                          gamma=gamma)


def LCFRSolver(game):  # pylint: disable=invalid-name
  """OpenSpiel's `discounted_cfr.LCFRSolver(game)`: Linear CFR."""
  return _MCCFRbCFRSolver(game, variant="linear")
