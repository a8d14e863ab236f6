"""Named algorithms for experiments: mccfrb's solvers and OpenSpiel's.

Every entry builds an object with `run(num_iterations)`,
`average_policy_table(tree)` (the average strategy as an mccfrb table),
`openspiel_policy(tree)` (something `pyspiel.exploitability` accepts),
`nodes_touched` (None where OpenSpiel does not count) and optionally
`metrics()` (extra numbers for each checkpoint row). Adding an algorithm is
one entry in `ALGORITHMS`.
"""

from typing import Callable, NamedTuple

import numpy as np
import pyspiel
from open_spiel.python.algorithms import mccfr as os_mccfr_base
from open_spiel.python.algorithms import outcome_sampling_mccfr as os_mccfr

from mccfrb.tables import policy as policy_lib
from mccfrb import solvers


class Algorithm(NamedTuple):
  """A registry entry: `make(game, seed, tree)` builds a runnable solver."""
  name: str
  description: str
  make: Callable
  deterministic: bool = True  # Same seed, same tables.


class _MccfrbRunner:
  """Adapter for mccfrb solvers."""

  def __init__(self, solver):
    self.solver = solver

  def run(self, num_iterations):
    # The sweep prints its own progress ("finished k/N runs"): no bar per
    # run (a first call that compiles would show one).
    self.solver.run(num_iterations, progress=False)

  def average_policy_table(self, tree):
    del tree
    return self.solver.average_policy_table()

  def openspiel_policy(self, tree):
    return policy_lib.to_pyspiel_dict(tree, self.solver.average_policy_table())

  @property
  def nodes_touched(self):
    return self.solver.nodes_touched

  def metrics(self):
    """Solver-specific numbers for each checkpoint row (MCTS solvers)."""
    return getattr(self.solver, "metrics", dict)()


class _OpenSpielCppRunner:
  """Adapter for pyspiel's C++ solvers: MCCFR (`run_iteration`) and CFR
  (`evaluate_and_update_policy`), one iteration per call."""

  def __init__(self, game, solver):
    self.game = game
    self.solver = solver
    self._step = getattr(solver, "run_iteration", None) or (
        solver.evaluate_and_update_policy)

  def run(self, num_iterations):
    for _ in range(num_iterations):
      self._step()

  def average_policy_table(self, tree):
    return policy_lib.table_from_policy(tree, self.solver.average_policy(),
                                        game=self.game)

  def openspiel_policy(self, tree):
    del tree
    return self.solver.average_policy()

  nodes_touched = None


class _OpenSpielPythonOSRunner:
  """Adapter for OpenSpiel's Python OutcomeSamplingSolver.

  It draws from numpy's global generator, so the seed is set when it is
  built and tasks of one process must run one after another.
  """

  def __init__(self, game, seed, tree=None):
    del tree
    np.random.seed(seed)
    self.solver = os_mccfr.OutcomeSamplingSolver(game)

  def run(self, num_iterations):
    for _ in range(num_iterations):
      self.solver.iteration()

  def average_policy_table(self, tree):
    table = policy_lib.uniform_table(tree)
    index = tree.infoset_index()
    for key, info in self.solver._infostates.items():  # pylint: disable=protected-access
      sums = info[os_mccfr_base.AVG_POLICY_INDEX]
      if sums.sum() > 0:
        table[index[key], :len(sums)] = sums / sums.sum()
    return table

  def openspiel_policy(self, tree):
    return policy_lib.to_pyspiel_dict(tree, self.average_policy_table(tree))

  nodes_touched = None


def _nfsp(game, seed, tree=None):
  from mccfrb.experiment import nfsp  # pylint: disable=g-import-not-at-top
  return nfsp.NFSPRunner(game, seed, tree=tree)


def _cfr(variant):
  return lambda game, seed, tree=None: _MccfrbRunner(solvers.CFRSolver(
      game, variant=variant, tree=tree))


def _cpp(cls, **kwargs):
  return lambda game, seed, tree=None: _OpenSpielCppRunner(
      game, cls(game, **{k: (seed if v == "seed" else v)
                         for k, v in kwargs.items()}))


def _es(**kwargs):
  return lambda game, seed, tree=None: _MccfrbRunner(
      solvers.ExternalSamplingSolver(game, seed=seed, tree=tree, **kwargs))


def _public(baseline, **kwargs):
  return lambda game, seed, tree=None: _MccfrbRunner(
      solvers.PublicSamplingSolver(game, baseline=baseline, seed=seed,
                                   tree=tree, **kwargs))


def _mcts(cls, **kwargs):
  return lambda game, seed, tree=None: _MccfrbRunner(cls(
      game, seed=seed, tree=tree, **kwargs))


def _mccfrb(baseline, averaging="stochastic", regret="rm", **kwargs):
  return lambda game, seed, tree=None: _MccfrbRunner(solvers.MCCFRbSolver(
      game, baseline=baseline, averaging=averaging, regret=regret, seed=seed,
      tree=tree, **kwargs))


ALGORITHMS = {a.name: a for a in [
    Algorithm("os", "mccfrb outcome sampling, no baseline (OpenSpiel's "
              "algorithm)", _mccfrb("none")),
    Algorithm("os_optimistic", "no baseline, optimistic averaging (the "
              "thesis's 'no updates')", _mccfrb("none", "optimistic")),
    Algorithm("mccfrb_thesis", "thesis Fig. 3.1: direct average of the "
              "1/xi target, optimistic averaging", _mccfrb("thesis",
                                                           "optimistic")),
    Algorithm("mccfrb_thesis_exponential", "thesis exponentially decaying "
              "average (alpha 0.5), optimistic averaging",
              _mccfrb("thesis_exponential", "optimistic")),
    Algorithm("mccfrb_learned", "infoset baseline, child-value target",
              _mccfrb("learned")),
    Algorithm("mccfrb_history", "history baseline per tree edge (VR-MCCFR)",
              _mccfrb("history")),
    Algorithm("mccfrb_predictive", "predictive baseline (Davis et al. 2020)",
              _mccfrb("predictive")),
    Algorithm("mccfrb_learned_optimistic", "mccfrb_learned with optimistic "
              "averaging", _mccfrb("learned", "optimistic")),
    Algorithm("mccfrb_history_optimistic", "mccfrb_history with optimistic "
              "averaging", _mccfrb("history", "optimistic")),
    Algorithm("mccfrb_predictive_optimistic", "mccfrb_predictive with "
              "optimistic averaging", _mccfrb("predictive", "optimistic")),
    Algorithm("mccfrb_oracle", "exact values of the current strategy "
              "(studies only: a full tree walk per episode)",
              _mccfrb("oracle")),
    *[Algorithm(f"mccfrb_plus_{kind}", f"MCCFRb+ ({kind} baseline): regret "
                "matching+, linear optimistic averaging",
                _mccfrb(kind, "optimistic", regret="rm+"))
      for kind in ("none", "history", "predictive")],
    Algorithm("mccfrb_plus_predictive_balanced", "mccfrb_plus_predictive "
              "(MCCFRbSolver's defaults on a tree) with balanced exploration "
              "(Farina et al. 2020)", _mccfrb("predictive", "optimistic",
                                              regret="rm+",
                                              exploration="balanced")),
    *[Algorithm(f"public_{kind}", f"public-state sampling, {kind} baseline, "
                "regret matching, stochastic averaging",
                _public(kind, regret="rm"))
      for kind in ("none", "history", "predictive", "oracle")],
    *[Algorithm(f"public_plus_{kind}", f"public-state sampling, {kind} "
                "baseline, regret matching+, linear stochastic averaging",
                _public(kind, regret="rm+"))
      for kind in ("none", "history", "predictive", "oracle")],
    Algorithm("public_plus_predictive_ck", "public_plus_predictive on the "
              "common-knowledge partition", _public(
                  "predictive", regret="rm+", partition="common_knowledge")),
    Algorithm("public_plus_predictive_on_policy", "public_plus_predictive, "
              "on-policy sampling of child public states (eps = 0.6)",
              _public("predictive", regret="rm+", sampling="on_policy")),
    Algorithm("public_plus_predictive_chance", "public_plus_predictive with "
              "public chance sampling (every decision child visited)",
              _public("predictive", regret="rm+", sampling="chance")),
    Algorithm("public_plus_none_chance", "public chance sampling without a "
              "baseline (regret matching+, linear averaging): no predictive "
              "pass", _public("none", regret="rm+", sampling="chance")),
    Algorithm("openspiel_os_python", "OpenSpiel Python OutcomeSamplingSolver",
              _OpenSpielPythonOSRunner),
    Algorithm("openspiel_nfsp", "OpenSpiel's JAX NFSP (Heinrich & Silver "
              "2016), one iteration = one training episode; needs the nfsp "
              "extra", _nfsp),
    Algorithm("openspiel_os_cpp", "pyspiel.OutcomeSamplingMCCFRSolver",
              _cpp(pyspiel.OutcomeSamplingMCCFRSolver, seed="seed")),
    Algorithm("openspiel_es_cpp", "pyspiel.ExternalSamplingMCCFRSolver",
              _cpp(pyspiel.ExternalSamplingMCCFRSolver, seed="seed")),
    Algorithm("es", "mccfrb external sampling, simple averaging", _es()),
    Algorithm("es_linear", "external sampling, linear weighting",
              _es(weighting="linear")),
    Algorithm("es_discounted", "external sampling, DCFR(1.5, 0, 2) weighting",
              _es(weighting="discounted")),
    Algorithm("es_pruned", "external sampling, Pluribus pruning (C = -300, "
              "from iteration 1000; stalls on long Leduc runs, "
              "docs/pages/external.md)",
              _es(pruning="pluribus", prune_threshold=-300.0, prune_after=1000)),
    Algorithm("es_linear_pruned", "external sampling, linear weighting and "
              "Pluribus pruning (C = -300, from iteration 1000)",
              _es(weighting="linear", pruning="pluribus",
                  prune_threshold=-300.0, prune_after=1000)),
    Algorithm("es_pruned_probabilistic", "external sampling, probabilistic "
              "pruning (C = K = -300 / 300, floor 0.05, from iteration 1000)",
              _es(pruning="probabilistic", prune_threshold=-300.0,
                  prune_k=300.0, prune_after=1000)),
    Algorithm("smooth_uct", "Smooth UCT self-play (Heinrich & Silver 2015; "
              "c 18, gamma 0.1, eta0 0.9, d 0.002); an iteration is two "
              "simulations", _mcts(solvers.SmoothUCTSolver)),
    Algorithm("smooth_uct_d01", "smooth_uct with Mac Manus's d = 0.1",
              _mcts(solvers.SmoothUCTSolver, d=0.1)),
    Algorithm("uct", "UCT self-play (c 20; Mac Manus's Leduc thesis Experiment 2)",
              _mcts(solvers.UCTSolver)),
    Algorithm("uct_vs_uniform", "UCT against a uniform opponent, one seat "
              "per simulation (Mac Manus's Leduc thesis Experiment 1)",
              _mcts(solvers.UCTSolver, opponent="uniform")),
    Algorithm("cfr", "mccfrb exact CFR (alternating updates)", _cfr("cfr")),
    Algorithm("cfr_plus", "mccfrb exact CFR+", _cfr("cfr+")),
    Algorithm("lcfr", "mccfrb exact Linear CFR", _cfr("linear")),
    Algorithm("dcfr", "mccfrb exact DCFR(1.5, 0, 2)", _cfr("discounted")),
    Algorithm("pcfr_plus", "mccfrb exact PCFR+ (Farina et al. 2021; gamma 2)",
              _cfr("pcfr+")),
    Algorithm("dcfr_plus", "mccfrb exact DCFR+ (Xu et al. 2024; alpha 1.5, "
              "gamma 4)", _cfr("dcfr+")),
    Algorithm("pdcfr_plus", "mccfrb exact PDCFR+ (Xu et al. 2024; alpha 2.3, "
              "gamma 5)", _cfr("pdcfr+")),
    Algorithm("openspiel_cfr_cpp", "pyspiel.CFRSolver",
              _cpp(pyspiel.CFRSolver)),
    Algorithm("openspiel_cfr_plus_cpp", "pyspiel.CFRPlusSolver",
              _cpp(pyspiel.CFRPlusSolver)),
]}


def check_algorithms(names):
  """Raises ValueError naming every unknown algorithm and the known ones."""
  unknown = [n for n in names if n not in ALGORITHMS]
  if unknown:
    raise ValueError(f"Unknown algorithm(s) {', '.join(map(repr, unknown))}; "
                     f"known: {', '.join(ALGORITHMS)}.")


def make(name, game, seed, tree=None):
  """Builds algorithm `name` for `game` (a pyspiel.Game) with `seed`.

  `tree`, the game's compiled `GameTree`, saves mccfrb solvers a compile.
  """
  check_algorithms([name])
  return ALGORITHMS[name].make(game, seed, tree)
