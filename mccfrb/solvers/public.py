"""Public-state sampling MCCFR with baselines (kernels/public.py)."""

import numpy as np

from mccfrb import public as public_lib
from mccfrb import tree as tree_lib
from mccfrb.kernels import public as public_kernel
from mccfrb.solvers import base
from mccfrb.solvers import outcome

# Baseline kind -> kernel code (the codes of kernels/outcome.py).
PUBLIC_BASELINES = {"none": 0, "history": 4, "predictive": 5, "oracle": 6}
SAMPLINGS = {"uniform": 0, "on_policy": 1, "chance": 2}
# The history baseline's default decay: Schmid et al.'s alpha = 0.5.
DEFAULT_HISTORY_DECAY = 0.5


class PublicSamplingSolver(base.OptimisticAverageMixin, base.TabularSolverBase):
  """Public-state sampling MCCFR with baselines (ALGORITHMS.md).

  The vector form of VR-MCCFR (Schmid et al. 2019) and Davis et al.'s (2020)
  public outcome sampling: an episode walks one path of the public tree
  (`mccfrb.public_states`), evaluates every private history of each public
  state it visits, evaluates terminal children exactly and samples one
  non-terminal child public state; baseline-corrected values flow bottom-up
  and regrets are divided by the public state's sampling probability q(S).

    solver = mccfrb.PublicSamplingSolver("leduc_poker", seed=0)
    solver.run(100_000)
    exploitability.exploitability(solver.game, solver.average_policy())

  Args:
    game: a game string or `pyspiel.Game` (see `mccfrb.load_game`).
    baseline: "none", "history" (per tree edge, decaying average of the
      child's estimate), "predictive" (Davis et al. 2020; zero variance with
      frozen strategies) or "oracle" (exact values under sigma^t; studies).
    regret: "rm" or "rm+" (regret matching+ with linear averaging: iteration
      t weighs t in the average).
    averaging: "stochastic" (at the update player's infosets of the visited
      public states, divided by q(S)) or "optimistic" (at the opponent's).
    sampling: "uniform" over the non-terminal child public states,
      "on_policy" (proportional to the reach mass flowing into each, mixed
      with `epsilon` of uniform), or "chance": public chance sampling
      (Johanson et al. 2012) in vector form, visiting every child public
      state of the players' decisions and drawing one of chance's.
    epsilon: the uniform share of on-policy sampling, in (0, 1].
    baseline_decay: weight in (0, 1] of the history baseline's exponentially
      decaying average (default 0.5, Schmid et al.'s), or None for a running
      mean (the default of the other kinds, which do not use it).
    partition: the public partition, "auto", "observer" or
      "common_knowledge" (see `mccfrb.public_states`).
    seed: seed of the solver's `np.random.Generator`.
    max_nodes, tree: as for `MCCFRbSolver`.
    public_tree: optional `PublicTree` of `tree` (sweeps reuse one).
  """

  _table_names = ("_regrets", "_avg", "_avg_last", "_baseline",
                  "_baseline_count")

  def __init__(self, game, baseline="predictive", regret="rm+",
               averaging="stochastic", sampling="uniform", epsilon=0.6,
               baseline_decay="default", partition="auto", seed=None,
               max_nodes=tree_lib.DEFAULT_MAX_NODES, tree=None,
               public_tree=None):
    base.check_choice("baseline", baseline, PUBLIC_BASELINES)
    base.check_choice("regret", regret, outcome.REGRETS)
    base.check_choice("averaging", averaging, outcome.AVERAGINGS)
    base.check_choice("sampling", sampling, SAMPLINGS)
    base.check_choice("partition", partition, public_lib.PARTITIONS)
    base.check_unit_interval("epsilon", epsilon)
    if baseline_decay == "default":
      baseline_decay = DEFAULT_HISTORY_DECAY if baseline == "history" else None
    base.check_unit_interval("baseline_decay", baseline_decay, allow_none=True)
    self._rng = base.rng_from_seed(seed)
    self._settings = dict(baseline=baseline, regret=regret,
                          averaging=averaging, sampling=sampling,
                          epsilon=float(epsilon),
                          baseline_decay=baseline_decay, partition=partition)
    self._baseline_code = PUBLIC_BASELINES[baseline]
    self._regret_code = outcome.REGRETS[regret]
    self._averaging_code = outcome.AVERAGINGS[averaging]
    self._decay = 0.0 if baseline_decay is None else float(baseline_decay)
    self._init_game(game, max_nodes, tree)
    t = self._tree
    if public_tree is None:
      public_tree = public_lib.public_states(t, partition=partition,
                                            game=self._game)
    elif not isinstance(public_tree, public_lib.PublicTree):
      raise ValueError("public_tree must be a PublicTree, got "
                       f"{type(public_tree).__name__}.")
    self._public = public_tree
    self._parent = public_lib.node_parents(t).astype(np.int32)
    sampled = ~public_tree.ps_terminal[public_tree.ps_children]
    owner = np.repeat(np.arange(public_tree.num_public_states),
                      np.diff(public_tree.ps_child_start))[sampled]
    self._candidate_start = np.zeros(public_tree.num_public_states + 1,
                                     dtype=np.int32)
    np.cumsum(np.bincount(owner, minlength=public_tree.num_public_states),
              out=self._candidate_start[1:])
    self._candidates = public_tree.ps_children[sampled]
    shape = (t.num_infosets, t.max_actions)
    self._regrets = np.zeros(shape)
    self._avg = np.zeros(shape)
    self._avg_last = np.zeros(t.num_infosets, dtype=np.int64)
    size = t.num_nodes if self._baseline_code else 0
    self._baseline = np.zeros(size)
    self._baseline_count = np.zeros(size, dtype=np.int64)
    num_ps = public_tree.num_public_states
    self._scratch = (
        np.zeros((t.num_nodes, 3)), np.zeros(t.num_nodes), np.zeros(shape),
        np.zeros(t.num_infosets, dtype=np.int64), np.zeros(num_ps),
        np.zeros(t.max_actions), np.zeros(num_ps, dtype=np.int64),
        np.zeros(num_ps, dtype=np.int64), np.zeros(num_ps), np.zeros(num_ps),
        np.zeros(shape if self._baseline_code == 6 else (0, t.max_actions)))

  @property
  def public_tree(self):
    return self._public

  @property
  def baseline(self):
    return self._settings["baseline"]

  def _options(self):
    return dict(self._settings)

  def _episodes(self, num_episodes, first_iteration, frozen, learn_baselines,
                rng, regrets, baseline, baseline_count, stats):
    t, p, s = self._tree, self._public, self._settings
    return public_kernel.public_episodes(
        *t.kernel_args(), t.utility_sum, t.infoset_num_actions,
        p.node_public_state, p.ps_history_start, p.ps_histories,
        self._parent, self._candidate_start, self._candidates, regrets,
        self._avg, self._avg_last, baseline, baseline_count,
        self._baseline_code, self._averaging_code, self._regret_code,
        SAMPLINGS[s["sampling"]], s["epsilon"], self._decay, first_iteration,
        num_episodes, frozen, learn_baselines, rng, *self._scratch, *stats)

  def run(self, num_iterations):
    """Runs `num_iterations` iterations (two episodes each) in one kernel call.

    `run(a); run(b)` leaves exactly the tables of `run(a + b)`.
    """
    base.check_num_iterations(num_iterations)
    if num_iterations == 0:
      return
    empty = self._regrets[:0]
    self._nodes_touched += self._episodes(
        2 * num_iterations, self._num_iterations + 1, False, True, self._rng,
        self._regrets, self._baseline, self._baseline_count,
        (empty, empty, empty, np.zeros(0)))
    self._num_iterations += num_iterations

  def sample_estimates(self, num_episodes, seed=0, learn_baselines=True):
    """Samples episodes under the current strategy, frozen, for studies.

    The episodes run on copies of the baseline tables and draw from a fresh
    generator seeded with `seed`; the solver does not change.

    Returns:
      An `EstimatorSample` (its value statistics are zero: this solver
      records the regret increments and the root values).
    """
    base.check_num_iterations(num_episodes)
    shape = self._regrets.shape
    regret_sum, regret_sq = np.zeros(shape), np.zeros(shape)
    root_values = np.zeros(num_episodes)
    self._episodes(num_episodes, self._num_iterations + 1, True,
                   bool(learn_baselines), np.random.default_rng(seed),
                   self._regrets, self._baseline.copy(),
                   self._baseline_count.copy(),
                   (np.zeros(shape), regret_sum, regret_sq, root_values))
    episodes = np.array([(num_episodes + 1) // 2, num_episodes // 2])
    owner = np.maximum(episodes[self._tree.infoset_player], 1)[:, None]
    regret_mean = regret_sum / owner
    zeros = np.zeros(shape)
    return base.EstimatorSample(root_values, episodes, regret_mean,
                                regret_sq / owner - regret_mean**2, zeros,
                                zeros)
