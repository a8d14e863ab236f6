"""Solvers with OpenSpiel's interface over the compiled game tree, one module
per traversal scheme (mirroring mccfrb/kernels/)."""

from mccfrb.solvers.base import EstimatorSample
from mccfrb.solvers.base import TabularSolverBase
from mccfrb.solvers.base import Weighting
from mccfrb.solvers.base import WEIGHTINGS
from mccfrb.solvers.base import check_num_iterations
from mccfrb.solvers.base import load_solver
from mccfrb.solvers.base import optimistic_average
from mccfrb.solvers.cfr import CFR_VARIANTS
from mccfrb.solvers.cfr import CFRSolver
from mccfrb.solvers.external import ES_AVERAGINGS
from mccfrb.solvers.external import AverageType
from mccfrb.solvers.external import PRUNINGS
from mccfrb.solvers.external import ExternalSamplingSolver
from mccfrb.solvers.outcome import AVERAGINGS
from mccfrb.solvers.outcome import BASELINES
from mccfrb.solvers.outcome import MCCFRbSolver
from mccfrb.solvers.outcome import OutcomeSamplingSolver
from mccfrb.solvers.outcome import REGRETS
from mccfrb.solvers.public import PUBLIC_BASELINES
from mccfrb.solvers.rules import RULES
from mccfrb.solvers.rules import RegretRule
from mccfrb.solvers.public import SAMPLINGS
from mccfrb.solvers.public import PublicSamplingSolver
from mccfrb.solvers.mcts import OPPONENTS
from mccfrb.solvers.mcts import SmoothUCTSolver
from mccfrb.solvers.mcts import UCTSolver
