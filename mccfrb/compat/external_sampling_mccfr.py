"""OpenSpiel's `open_spiel.python.algorithms.external_sampling_mccfr`, on
mccfrb's ExternalSamplingSolver."""

from mccfrb.solvers import AverageType
from mccfrb.solvers import ExternalSamplingSolver as _MCCFRbExternalSampling

__all__ = ["AverageType", "ExternalSamplingSolver"]


def ExternalSamplingSolver(game, average_type=AverageType.SIMPLE):  # pylint: disable=invalid-name
  """OpenSpiel's `external_sampling_mccfr.ExternalSamplingSolver(game,
  average_type)`; the seed comes from numpy's global generator."""
  return _MCCFRbExternalSampling(game, averaging=average_type)
