"""mccfrb: Monte Carlo CFR with baselines for OpenSpiel, in numba."""

import os as _os

from mccfrb import numba_cache as _numba_cache
_numba_cache.ensure_cache(_os.path.dirname(__file__))
_numba_cache.lock_cache_files()
_numba_cache.stamp_with_sources(_os.path.dirname(__file__))

from mccfrb import numba_inline as _numba_inline
_numba_inline.install()
from mccfrb import numba_ssa as _numba_ssa
_numba_ssa.install()

from mccfrb.kernels import notice as _notice
_notice.install()

from mccfrb.games.engines import Engine
from mccfrb.games.engines import engine_for
from mccfrb.games.engines import engine_names
from mccfrb.evaluation.bound import approximate_exploitability
from mccfrb.evaluation import best_response
from mccfrb.evaluation import best_response_values
from mccfrb.evaluation import counterfactual_regrets
from mccfrb.evaluation import counterfactual_values
from mccfrb.evaluation import expected_value
from mccfrb.evaluation import exploitability
from mccfrb.evaluation import head_to_head
from mccfrb.evaluation import HeadToHead
from mccfrb.evaluation import nash_conv
from mccfrb.evaluation import policy_values
from mccfrb.games import load_game
from mccfrb import play
from mccfrb.solvers.normal_form import regret_matching
from mccfrb.tables.policy import table_from_policy
from mccfrb.tables.policy import to_pyspiel_dict
from mccfrb.tables.policy import to_pyspiel_policy
from mccfrb.tables.policy import to_tabular_policy
from mccfrb.tables.policy import uniform_table
from mccfrb.games.public import PublicTree
from mccfrb.games.public import public_states
from mccfrb.solvers import AVERAGINGS
from mccfrb.solvers import AverageType
from mccfrb.solvers import BASELINES
from mccfrb.solvers import CFR_VARIANTS
from mccfrb.solvers import CFRSolver
from mccfrb.solvers import ExternalSamplingSolver
from mccfrb.solvers import MCCFRbSolver
from mccfrb.solvers import OutcomeSamplingSolver
from mccfrb.solvers import PUBLIC_BASELINES
from mccfrb.solvers import PublicSamplingSolver
from mccfrb.solvers import REGRETS
from mccfrb.solvers import RegretRule
from mccfrb.solvers import RULES
from mccfrb.solvers import SAMPLINGS
from mccfrb.solvers import SmoothUCTSolver
from mccfrb.solvers import UCTSolver
from mccfrb.solvers.engine import EnginePolicy
from mccfrb.solvers.representation import REPRESENTATIONS
from mccfrb.solvers import load_solver
from mccfrb.games.tree import GameTree
from mccfrb.games.tree import compile_tree

from mccfrb.version import __version__
