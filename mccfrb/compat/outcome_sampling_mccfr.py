"""OpenSpiel's `open_spiel.python.algorithms.outcome_sampling_mccfr`, on
mccfrb's OutcomeSamplingSolver."""

from mccfrb.solvers import OutcomeSamplingSolver as _MCCFRbOutcomeSampling


def OutcomeSamplingSolver(game):  # pylint: disable=invalid-name
  """OpenSpiel's `outcome_sampling_mccfr.OutcomeSamplingSolver(game)`
  (epsilon 0.6, stochastic averaging); the seed comes from numpy's global
  generator."""
  return _MCCFRbOutcomeSampling(game)
