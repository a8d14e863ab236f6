"""Stand-ins for OpenSpiel's Python solver modules, for scripts and tests
written against OpenSpiel: swap

    from open_spiel.python.algorithms import outcome_sampling_mccfr

for

    from mccfrb.compat import outcome_sampling_mccfr

and the same calls run mccfrb's solvers (docs, "OpenSpiel's API"). Each
name below is a namespace with the classes and functions of the OpenSpiel
module of that name that mccfrb mirrors, with OpenSpiel's signatures;
OpenSpiel's private classes (`cfr._CFRSolver`, ...) are not mirrored.
"""

import types

from mccfrb import evaluation
from mccfrb.solvers import AverageType
from mccfrb.solvers import CFRSolver
from mccfrb.solvers import ExternalSamplingSolver
from mccfrb.solvers import OutcomeSamplingSolver


def _cfr(game):
  """OpenSpiel's `cfr.CFRSolver(game)`: vanilla CFR, alternating updates."""
  return CFRSolver(game, variant="cfr")


def _cfr_plus(game):
  """OpenSpiel's `cfr.CFRPlusSolver(game)`."""
  return CFRSolver(game, variant="cfr+")


def _dcfr(game, alpha=3 / 2, beta=0, gamma=2):
  """OpenSpiel's `discounted_cfr.DCFRSolver(game, alpha, beta, gamma)`."""
  return CFRSolver(game, variant="discounted", alpha=alpha, beta=beta,
                   gamma=gamma)


def _lcfr(game):
  """OpenSpiel's `discounted_cfr.LCFRSolver(game)`."""
  return CFRSolver(game, variant="linear")


def _external(game, average_type=AverageType.SIMPLE):
  """OpenSpiel's `external_sampling_mccfr.ExternalSamplingSolver(game,
  average_type)`; the seed comes from numpy's global generator."""
  return ExternalSamplingSolver(game, averaging=average_type)


def _outcome(game):
  """OpenSpiel's `outcome_sampling_mccfr.OutcomeSamplingSolver(game)`
  (epsilon 0.6, stochastic averaging); the seed comes from numpy's global
  generator."""
  return OutcomeSamplingSolver(game)


cfr = types.SimpleNamespace(CFRSolver=_cfr, CFRPlusSolver=_cfr_plus)
discounted_cfr = types.SimpleNamespace(DCFRSolver=_dcfr, LCFRSolver=_lcfr)
external_sampling_mccfr = types.SimpleNamespace(
    ExternalSamplingSolver=_external, AverageType=AverageType)
outcome_sampling_mccfr = types.SimpleNamespace(OutcomeSamplingSolver=_outcome)
exploitability = types.SimpleNamespace(
    nash_conv=evaluation.nash_conv, exploitability=evaluation.exploitability,
    best_response=evaluation.best_response)
