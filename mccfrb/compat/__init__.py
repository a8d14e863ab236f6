"""Stand-ins for OpenSpiel's Python solver modules, for scripts and tests
written against OpenSpiel: swap

    from open_spiel.python.algorithms import outcome_sampling_mccfr

for

    from mccfrb.compat import outcome_sampling_mccfr

(or `from mccfrb.compat.outcome_sampling_mccfr import
OutcomeSamplingSolver`) and the same calls run mccfrb's solvers (docs,
"OpenSpiel's API"). Each submodule holds the classes and functions of the
OpenSpiel module of that name that mccfrb mirrors, with OpenSpiel's
signatures: `cfr` (`CFRSolver`, `CFRPlusSolver` and `_CFRSolver`, the
class OpenSpiel's tests build their variants with), `discounted_cfr`,
`outcome_sampling_mccfr`, `external_sampling_mccfr` and `exploitability`.
"""

from mccfrb.compat import cfr
from mccfrb.compat import discounted_cfr
from mccfrb.compat import exploitability
from mccfrb.compat import external_sampling_mccfr
from mccfrb.compat import outcome_sampling_mccfr

__all__ = ["cfr", "discounted_cfr", "exploitability",
           "external_sampling_mccfr", "outcome_sampling_mccfr"]
