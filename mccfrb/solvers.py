"""Solvers with OpenSpiel's interface over the compiled game tree."""

import json
from typing import NamedTuple
import warnings

import numpy as np

from mccfrb import games
from mccfrb import policy as policy_lib
from mccfrb import tree as tree_lib
from mccfrb.kernels import cfr
from mccfrb.kernels import exact
from mccfrb.kernels import external
from mccfrb.kernels import outcome

# Baseline kind -> kernel code (see mccfrb/kernels/outcome.py).
BASELINES = {
    "none": 0,
    "thesis": 1,
    "thesis_exponential": 1,
    "learned": 3,
    "history": 4,
    "predictive": 5,
    "oracle": 6,
}
AVERAGINGS = {"stochastic": 0, "optimistic": 1}
# thesis_exponential without an explicit decay uses Schmid et al.'s alpha.
DEFAULT_EXPONENTIAL_DECAY = 0.5


def _check_choice(kind, value, allowed):
  if not isinstance(value, str) or value not in allowed:
    raise ValueError(f"Unknown {kind} {value!r}; allowed: {', '.join(allowed)}.")


def _check_unit_interval(name, value, allow_none=False):
  if value is None and allow_none:
    return
  if (isinstance(value, bool) or not isinstance(value, (int, float, np.floating))
      or not 0.0 < float(value) <= 1.0):
    raise ValueError(f"{name} must be a number in (0, 1]"
                     f"{' or None' if allow_none else ''}, got {value!r}.")


def check_num_iterations(num_iterations):
  """Raises ValueError unless `num_iterations` is an integer >= 0."""
  if (isinstance(num_iterations, bool)
      or not isinstance(num_iterations, (int, np.integer)) or num_iterations < 0):
    raise ValueError("num_iterations must be a non-negative integer, got "
                     f"{num_iterations!r}.")


def _rng_from_seed(seed):
  if seed is not None and (isinstance(seed, bool)
                           or not isinstance(seed, (int, np.integer))):
    raise ValueError(f"seed must be an integer or None, got {seed!r}.")
  return np.random.default_rng(seed)


class EstimatorSample(NamedTuple):
  """Statistics of sampled estimates under a frozen strategy.

  Attributes:
    root_values: float64[n], u(root) of episode e, in the utility of its
      update player e % 2.
    episodes: int64[2], the number of episodes each player updated.
    regret_mean, regret_var: float64[I, A], mean and variance over the owner's
      episodes of the sampled regret increment (0 where not sampled).
    value_mean, value_var: the same for the sampled counterfactual values.
  """
  root_values: np.ndarray
  episodes: np.ndarray
  regret_mean: np.ndarray
  regret_var: np.ndarray
  value_mean: np.ndarray
  value_var: np.ndarray


class TabularSolverBase:
  """Shared parts of the solvers: game, tree, policies, save and load.

  Subclasses allocate `self._regrets` and `self._avg` (float64[I, A]) and
  list every table to save in `_table_names`.
  """

  _table_names = ("_regrets", "_avg")

  def _init_game(self, game, max_nodes, tree=None):
    self._game = games.load_game(game)
    if tree is None:
      tree = tree_lib.compile_tree(self._game, max_nodes=max_nodes)
    elif not isinstance(tree, tree_lib.GameTree):
      raise ValueError(f"tree must be a GameTree, got {type(tree).__name__}.")
    self._tree = tree
    self._converter = None
    self._num_iterations = 0
    self._nodes_touched = 0

  @property
  def game(self):
    return self._game

  @property
  def tree(self):
    return self._tree

  @property
  def num_iterations(self):
    """Iterations run so far."""
    return self._num_iterations

  @property
  def nodes_touched(self):
    """Total number of tree nodes visited so far, for cost comparisons."""
    return self._nodes_touched

  def iteration(self):
    """Runs one iteration, like OpenSpiel's solvers."""
    self.run(1)

  def current_policy_table(self):
    """sigma^t by regret matching, as an mccfrb table."""
    out = np.zeros_like(self._regrets)
    exact.regret_matching(self._regrets, self._tree.infoset_num_actions, out)
    return out

  def average_policy_table(self):
    """The average strategy as an mccfrb table (uniform where never updated)."""
    out = np.zeros_like(self._avg)
    exact.normalize_rows(self._cumulative_average(), self._tree.infoset_num_actions,
                         out)
    return out

  def _cumulative_average(self):
    return self._avg

  def _to_tabular(self, table):
    if self._converter is None:
      self._converter = policy_lib.TabularPolicyConverter(self._game, self._tree)
    return self._converter(table)

  def average_policy(self):
    """The average strategy as an `open_spiel.python.policy.TabularPolicy`."""
    return self._to_tabular(self.average_policy_table())

  def current_policy(self):
    """The current strategy as an `open_spiel.python.policy.TabularPolicy`."""
    return self._to_tabular(self.current_policy_table())

  def _options(self):
    raise NotImplementedError

  def save(self, path):
    """Writes every table, the options and the generator state to `path`.

    The file is a numpy .npz archive; `load` resumes bit-identically.
    """
    meta = {
        "class": type(self).__name__,
        "game": str(self._game),
        "options": self._options(),
        "num_iterations": self._num_iterations,
        "nodes_touched": self._nodes_touched,
        "rng_state": self._rng.bit_generator.state,
    }
    tables = {name.lstrip("_"): getattr(self, name) for name in self._table_names}
    with open(path, "wb") as f:
      np.savez(f, meta=np.array(json.dumps(meta)), **tables)

  @classmethod
  def load(cls, path, game):
    """Restores a solver saved with `save`, for the same `game`.

    Raises:
      ValueError: the file was saved by another solver class or game.
    """
    with np.load(path, allow_pickle=False) as data:
      meta = json.loads(str(data["meta"]))
      tables = {k: data[k] for k in data.files if k != "meta"}
    if meta["class"] != cls.__name__:
      raise ValueError(f"{path} holds a {meta['class']}, not a {cls.__name__}.")
    game = games.load_game(game)
    if str(game) != meta["game"]:
      raise ValueError(f"{path} was saved for {meta['game']}, not {game}.")
    solver = cls(game, **meta["options"])
    for name in cls._table_names:
      saved = tables[name.lstrip("_")]
      target = getattr(solver, name)
      if saved.shape != target.shape:
        raise ValueError(f"{path}: table {name} has shape {saved.shape}, the "
                         f"game needs {target.shape}.")
      target[...] = saved
    solver._num_iterations = meta["num_iterations"]
    solver._nodes_touched = meta["nodes_touched"]
    solver._rng.bit_generator.state = meta["rng_state"]
    return solver


WEIGHTINGS = {None: 0, "linear": 1, "discounted": 2}


def _log_discount_prefix(power, size):
  """[0, sum_{k=1..m} log(k^power / (k^power + 1)) for m = 1..size-1]."""
  k = np.arange(1, size, dtype=np.float64)
  return np.concatenate([[0.0], np.cumsum(-np.log1p(k**-power))])


class _WeightingMixin:
  """Linear / discounted weighting of a sampling solver's iterations.

  "linear": iteration t contributes with weight t (or min(t,
  linear_iterations): linear for an initial phase only). "discounted": DCFR's
  (alpha, beta, gamma): after iteration t positive regrets are multiplied by
  t^a/(t^a + 1) and negative ones by t^b/(t^b + 1), lazily: a row catches up
  on the discounts it missed when next visited (kernels keep `_through`),
  through prefix sums of the log-factors; averages are weighted t^gamma.
  """

  def _init_weighting(self, weighting, linear_iterations, alpha, beta, gamma):
    if weighting not in WEIGHTINGS:
      raise ValueError(f"Unknown weighting {weighting!r}; allowed: None, "
                       "'linear', 'discounted'.")
    if linear_iterations is not None and (
        weighting != "linear" or isinstance(linear_iterations, bool)
        or not isinstance(linear_iterations, int) or linear_iterations < 1):
      raise ValueError("linear_iterations must be a positive integer, with "
                       f"weighting='linear'; got {linear_iterations!r}.")
    for name, value in (("alpha", alpha), ("beta", beta), ("gamma", gamma)):
      if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{name} must be a number, got {value!r}.")
    self._weighting = dict(weighting=weighting,
                           linear_iterations=linear_iterations,
                           alpha=float(alpha), beta=float(beta),
                           gamma=float(gamma))
    self._log_pos = self._log_neg = np.zeros(1)

  def _weighting_args(self, last_iteration):
    """The kernel arguments: code, linear_until, gamma, log_pos, log_neg."""
    w = self._weighting
    if w["weighting"] == "discounted" and len(self._log_pos) < last_iteration + 2:
      size = max(last_iteration + 2, 2 * len(self._log_pos))
      self._log_pos = _log_discount_prefix(w["alpha"], size)
      self._log_neg = _log_discount_prefix(w["beta"], size)
    return (WEIGHTINGS[w["weighting"]], w["linear_iterations"] or 0,
            w["gamma"], self._log_pos, self._log_neg)

  def _caught_up_regrets(self):
    """Regrets with every pending discount applied (a copy when needed)."""
    if self._weighting["weighting"] != "discounted" or self._num_iterations == 0:
      return self._regrets
    self._weighting_args(self._num_iterations)
    last = self._num_iterations
    fp = np.exp(self._log_pos[last] - self._log_pos[self._through])[:, None]
    fn = np.exp(self._log_neg[last] - self._log_neg[self._through])[:, None]
    return np.where(self._regrets >= 0, self._regrets * fp, self._regrets * fn)

  def current_policy_table(self):
    out = np.zeros_like(self._regrets)
    exact.regret_matching(self._caught_up_regrets(),
                          self._tree.infoset_num_actions, out)
    return out


class MCCFRbSolver(_WeightingMixin, TabularSolverBase):
  """Outcome-sampling MCCFR with baselines, with OpenSpiel's solver interface.

  Usage, as with `open_spiel.python.algorithms.outcome_sampling_mccfr`:

    solver = mccfrb.MCCFRbSolver("leduc_poker", seed=0)
    solver.run(100_000)            # or solver.iteration() in a loop
    exploitability.exploitability(game, solver.average_policy())

  Args:
    game: a game string or `pyspiel.Game` (see `mccfrb.load_game`).
    baseline: one of BASELINES (ALGORITHMS.md, "Baselines").
    epsilon: exploration of the update player's sampling policy, in (0, 1].
    averaging: "stochastic" (OpenSpiel's) or "optimistic" (the thesis's).
    baseline_decay: None for a running mean, or the weight in (0, 1] of an
      exponentially decaying average. thesis_exponential defaults to 0.5.
    seed: seed of the solver's `np.random.Generator`.
    max_nodes: size guard passed to `compile_tree`.
    tree: optional `GameTree` already compiled from this game (sweeps reuse
      one tree for many solvers); it is not checked against the game.
    weighting, linear_iterations, alpha, beta, gamma: None, "linear" or
      "discounted" weighting of iterations (see `_WeightingMixin`), with
      stochastic averaging.
  """

  _table_names = ("_regrets", "_avg", "_avg_last", "_baseline",
                  "_baseline_count", "_through")

  def __init__(self, game, baseline="learned", epsilon=0.6,
               averaging="stochastic", baseline_decay=None, seed=None,
               max_nodes=tree_lib.DEFAULT_MAX_NODES, tree=None,
               weighting=None, linear_iterations=None, alpha=1.5, beta=0.0,
               gamma=2.0):
    _check_choice("baseline", baseline, BASELINES)
    _check_choice("averaging", averaging, AVERAGINGS)
    self._init_weighting(weighting, linear_iterations, alpha, beta, gamma)
    if weighting is not None and averaging == "optimistic":
      raise ValueError(
          f"weighting={weighting!r} works with averaging='stochastic' only: "
          "optimistic averaging's (t - c_I) catch-up assumes equal weights.")
    _check_unit_interval("epsilon", epsilon)
    _check_unit_interval("baseline_decay", baseline_decay, allow_none=True)
    self._rng = _rng_from_seed(seed)
    self._baseline_name = baseline
    self._averaging_name = averaging
    self._epsilon = float(epsilon)
    self._decay_option = baseline_decay
    if baseline == "thesis_exponential" and baseline_decay is None:
      baseline_decay = DEFAULT_EXPONENTIAL_DECAY
    self._decay = 0.0 if baseline_decay is None else float(baseline_decay)
    self._baseline_code = BASELINES[baseline]
    self._averaging_code = AVERAGINGS[averaging]
    self._init_game(game, max_nodes, tree)
    tree = self._tree
    shape = (tree.num_infosets, tree.max_actions)
    self._regrets = np.zeros(shape)
    self._avg = np.zeros(shape)
    self._avg_last = np.zeros(tree.num_infosets, dtype=np.int64)
    self._through = np.zeros(tree.num_infosets, dtype=np.int64)
    size, count_size = self._baseline_sizes()
    self._baseline = np.zeros(size)
    self._baseline_count = np.zeros(count_size, dtype=np.int64)
    self._scratch = (
        np.zeros(tree.max_depth, dtype=np.int64),
        np.zeros(tree.max_depth, dtype=np.int64),
        np.zeros((tree.max_depth, tree.max_actions)),
        np.zeros((tree.max_depth, tree.max_actions)),
        np.zeros((tree.max_depth, 4)),
        np.zeros(tree.max_actions),
        np.zeros(shape if self._baseline_code == 6 else (0, tree.max_actions)),
    )

  def _baseline_sizes(self):
    tree, code = self._tree, self._baseline_code
    per_infoset = tree.num_infosets * tree.max_actions
    if code == 0:
      return 0, 0
    if code == 1:
      return 2 * per_infoset, 2 * tree.num_infosets
    if code == 3:
      return per_infoset, per_infoset
    return tree.num_nodes, tree.num_nodes

  def _options(self):
    return {"baseline": self._baseline_name, "epsilon": self._epsilon,
            "averaging": self._averaging_name,
            "baseline_decay": self._decay_option, **self._weighting}

  @property
  def baseline(self):
    return self._baseline_name

  @property
  def averaging(self):
    return self._averaging_name

  def run(self, num_iterations):
    """Runs `num_iterations` iterations in one kernel call.

    `run(a); run(b)` leaves exactly the tables of `run(a + b)`.
    """
    check_num_iterations(num_iterations)
    if num_iterations == 0:
      return
    tree = self._tree
    empty = self._regrets[:0]
    self._nodes_touched += outcome.run_episodes(
        *tree.kernel_args(), tree.utility_sum, tree.infoset_num_actions,
        self._regrets, self._avg, self._avg_last, self._baseline,
        self._baseline_count, self._baseline_code, self._averaging_code,
        self._epsilon, self._decay, self._num_iterations + 1,
        2 * num_iterations, False, True, self._through,
        *self._weighting_args(self._num_iterations + num_iterations),
        self._rng, *self._scratch, empty, empty, empty, empty, np.zeros(0))
    before = self._num_iterations
    self._num_iterations += num_iterations
    # Every ~1024 iterations, a cheap check that the tables are still finite.
    if before // 1024 != self._num_iterations // 1024 or before == 0:
      self._check_finite()

  def _check_finite(self):
    if (getattr(self, "_warned_non_finite", False)
        or (np.isfinite(self._baseline).all()
            and np.isfinite(self._regrets).all())):
      return
    self._warned_non_finite = True
    warnings.warn(
        f"MCCFRbSolver(baseline={self._baseline_name!r}): tables are no longer "
        f"finite after {self._num_iterations} iterations. The thesis's "
        "1/xi-corrected baseline target with a fixed decay overshoots when "
        "xi < decay / 2; use a smaller baseline_decay, or baseline='learned'.",
        RuntimeWarning, stacklevel=3)

  def sample_estimates(self, num_episodes, seed=0, learn_baselines=True):
    """Samples episodes under the current strategy, frozen, for studies.

    Nothing of the solver changes: the episodes run on copies of the baseline
    tables (which keep learning during the sample if `learn_baselines`) and
    draw from a fresh generator seeded with `seed`.

    Args:
      num_episodes: number of episodes; episode e updates player e % 2.
      seed: seed of the sample's own generator.
      learn_baselines: let the copied baselines learn as in training.

    Returns:
      An `EstimatorSample`.
    """
    check_num_iterations(num_episodes)
    tree = self._tree
    shape = self._regrets.shape
    regret_sum, regret_sq = np.zeros(shape), np.zeros(shape)
    value_sum, value_sq = np.zeros(shape), np.zeros(shape)
    root_values = np.zeros(num_episodes)
    # The frozen strategy is sigma^{T+1}: every pending discount applied.
    outcome.run_episodes(
        *tree.kernel_args(), tree.utility_sum, tree.infoset_num_actions,
        self._caught_up_regrets(), self._avg, self._avg_last,
        self._baseline.copy(), self._baseline_count.copy(),
        self._baseline_code, self._averaging_code, self._epsilon, self._decay,
        self._num_iterations + 1, num_episodes, True, bool(learn_baselines),
        self._through, 0, 0, 0.0, np.zeros(1), np.zeros(1),
        np.random.default_rng(seed), *self._scratch, regret_sum, regret_sq,
        value_sum, value_sq, root_values)
    episodes = np.array([(num_episodes + 1) // 2, num_episodes // 2])
    owner = np.maximum(episodes[tree.infoset_player], 1)[:, None]
    regret_mean, value_mean = regret_sum / owner, value_sum / owner
    return EstimatorSample(root_values, episodes, regret_mean,
                           regret_sq / owner - regret_mean**2, value_mean,
                           value_sq / owner - value_mean**2)

  def _cumulative_average(self):
    """The cumulative strategy; optimistic averaging is flushed to iteration T.

    Each infoset I last updated at c_I < T gets (T - c_I) pi_owner(I)
    sigma^T(I) added (Lanctot 2013 section 4; thesis section 3.4), on a copy:
    reading the average never changes the solver's state.
    """
    if self._averaging_code == 0 or self._num_iterations == 0:
      return self._avg
    tree = self._tree
    strategy = self.current_policy_table()
    reach = np.empty((tree.num_nodes, 3))
    exact.reach_probabilities(*tree.kernel_args()[:6], strategy, reach)
    decision = np.flatnonzero(tree.node_kind == tree_lib.DECISION)
    owner_reach = np.zeros(tree.num_infosets)
    owner_reach[tree.node_infoset[decision]] = reach[
        decision, tree.node_player[decision]]
    weight = (self._num_iterations - self._avg_last) * owner_reach
    return self._avg + weight[:, None] * strategy


class OutcomeSamplingSolver(MCCFRbSolver):
  """Plain outcome-sampling MCCFR: `MCCFRbSolver` with `baseline="none"`."""

  def __init__(self, game, epsilon=0.6, averaging="stochastic", seed=None,
               max_nodes=tree_lib.DEFAULT_MAX_NODES, baseline="none",
               baseline_decay=None, tree=None):
    if baseline != "none":
      raise ValueError("OutcomeSamplingSolver has no baseline; use "
                       f"MCCFRbSolver(baseline={baseline!r}).")
    super().__init__(game, baseline="none", epsilon=epsilon,
                     averaging=averaging, baseline_decay=baseline_decay,
                     seed=seed, max_nodes=max_nodes, tree=tree)


# variant -> (regret matching+, averaging power, discount, alpha, beta, gamma)
CFR_VARIANTS = {
    "cfr": (False, 0.0, False),
    "cfr+": (True, 1.0, False),
    "linear": (False, 1.0, True),
    "discounted": (False, None, True),
}


class CFRSolver(TabularSolverBase):
  """Exact CFR family on the full compiled tree, with OpenSpiel's interface.

  Variants, with OpenSpiel's update order (alternating updates):
    "cfr": vanilla CFR (pyspiel.CFRSolver);
    "cfr+": regret matching+ and linear averaging (pyspiel.CFRPlusSolver);
    "linear": Linear CFR, DCFR with alpha = beta = gamma = 1
      (open_spiel discounted_cfr.LCFRSolver);
    "discounted": DCFR(alpha, beta, gamma), default (1.5, 0, 2)
      (open_spiel discounted_cfr.DCFRSolver).

  Args:
    game: a game string or `pyspiel.Game`.
    variant: one of CFR_VARIANTS.
    alpha, beta, gamma: DCFR's parameters (variant "discounted" only).
    max_nodes, tree: as for `MCCFRbSolver`.
  """

  _table_names = ("_regrets", "_avg", "_strategy")

  def __init__(self, game, variant="cfr", alpha=1.5, beta=0.0, gamma=2.0,
               max_nodes=tree_lib.DEFAULT_MAX_NODES, tree=None):
    _check_choice("variant", variant, CFR_VARIANTS)
    for name, value in (("alpha", alpha), ("beta", beta), ("gamma", gamma)):
      if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{name} must be a number, got {value!r}.")
    if variant != "discounted" and (alpha, beta, gamma) != (1.5, 0.0, 2.0):
      raise ValueError("alpha, beta and gamma apply to variant='discounted' only.")
    self._variant = variant
    self._alpha, self._beta, self._gamma = float(alpha), float(beta), float(gamma)
    plus, power, discount = CFR_VARIANTS[variant]
    if variant == "linear":
      self._alpha = self._beta = 1.0
    self._plus, self._discount = plus, discount
    self._power = self._gamma if power is None else power
    self._rng = np.random.default_rng(0)  # Unused: exact; kept for save().
    self._init_game(game, max_nodes, tree)
    t = self._tree
    shape = (t.num_infosets, t.max_actions)
    self._regrets = np.zeros(shape)
    self._avg = np.zeros(shape)
    self._strategy = policy_lib.uniform_table(t)
    self._reach = np.zeros((t.num_nodes, 3))
    self._values = np.zeros(t.num_nodes)

  def _options(self):
    options = {"variant": self._variant}
    if self._variant == "discounted":
      options.update(alpha=self._alpha, beta=self._beta, gamma=self._gamma)
    return options

  def run(self, num_iterations):
    """Runs `num_iterations` exact iterations in one kernel call."""
    check_num_iterations(num_iterations)
    if num_iterations == 0:
      return
    t = self._tree
    self._nodes_touched += cfr.cfr_iterations(
        *t.kernel_args(), t.utility_sum, t.infoset_num_actions,
        t.infoset_player, self._regrets, self._avg, self._strategy,
        self._reach, self._values, self._plus, self._power, self._discount,
        self._alpha, self._beta, self._num_iterations + 1, num_iterations)
    self._num_iterations += num_iterations

  def current_policy_table(self):
    return self._strategy.copy()


ES_AVERAGINGS = {"simple": 0, "full": 1}
PRUNINGS = {None: 0, "pluribus": 1, "probabilistic": 2}


class ExternalSamplingSolver(_WeightingMixin, TabularSolverBase):
  """External-sampling MCCFR with weighting and pruning (kernels/external.py).

  Args:
    game: a game string or `pyspiel.Game`.
    averaging: "simple" (at the opponent's nodes, OpenSpiel's default) or
      "full" (a full-tree pass per iteration with the owner's reach).
    weighting: None, "linear" (iteration t weighs t, or min(t,
      linear_iterations) when that is set: linear for an initial phase only),
      or "discounted" (DCFR's alpha, beta, gamma; applied lazily per infoset).
    linear_iterations: see `weighting="linear"`.
    alpha, beta, gamma: DCFR parameters, default (1.5, 0, 2).
    pruning: None, "pluribus" (skip an action with regret below
      `prune_threshold` with probability `prune_probability`) or
      "probabilistic" (explore it with probability max(prune_floor,
      prune_k / (prune_k + prune_threshold - R)), weighted 1/q).
    prune_after: the first iteration at which pruning may happen (warm-up).
    seed, max_nodes, tree: as for `MCCFRbSolver`.
  """

  _table_names = ("_regrets", "_avg", "_through")

  def __init__(self, game, averaging="simple", weighting=None,
               linear_iterations=None, alpha=1.5, beta=0.0, gamma=2.0,
               pruning=None, prune_threshold=-200.0, prune_probability=0.95,
               prune_k=200.0, prune_floor=0.05, prune_after=1, seed=None,
               max_nodes=tree_lib.DEFAULT_MAX_NODES, tree=None):
    _check_choice("averaging", averaging, ES_AVERAGINGS)
    self._init_weighting(weighting, linear_iterations, alpha, beta, gamma)
    if pruning not in PRUNINGS:
      raise ValueError(f"Unknown pruning {pruning!r}; allowed: None, "
                       "'pluribus', 'probabilistic'.")
    for name, value in (("prune_threshold", prune_threshold),
                        ("prune_k", prune_k)):
      if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{name} must be a number, got {value!r}.")
    if prune_threshold >= 0:
      raise ValueError(f"prune_threshold must be negative, got {prune_threshold}.")
    _check_unit_interval("prune_probability", prune_probability)
    _check_unit_interval("prune_floor", prune_floor)
    if prune_k <= 0:
      raise ValueError(f"prune_k must be positive, got {prune_k}.")
    check_num_iterations(prune_after)
    self._rng = _rng_from_seed(seed)
    self._settings = dict(
        averaging=averaging, pruning=pruning,
        prune_threshold=float(prune_threshold),
        prune_probability=float(prune_probability), prune_k=float(prune_k),
        prune_floor=float(prune_floor), prune_after=int(prune_after))
    self._init_game(game, max_nodes, tree)
    t = self._tree
    shape = (t.num_infosets, t.max_actions)
    self._regrets = np.zeros(shape)
    self._avg = np.zeros(shape)
    self._through = np.zeros(t.num_infosets, dtype=np.int64)
    self._counters = np.zeros(2, dtype=np.int64)
    full = averaging == "full"
    self._scratch = (
        np.zeros(t.max_depth, dtype=np.int64),
        np.zeros(t.max_depth, dtype=np.int64),
        np.zeros((t.max_depth, t.max_actions)),
        np.zeros((t.max_depth, t.max_actions)),
        np.zeros((t.max_depth, t.max_actions)),
        np.zeros(shape if full else (0, t.max_actions)),
        np.zeros((t.num_nodes if full else 0, 3)),
    )

  def _options(self):
    return {**self._settings, **self._weighting}

  @property
  def subtrees_pruned(self):
    """Actions skipped by pruning so far."""
    return int(self._counters[1])

  def run(self, num_iterations):
    """Runs `num_iterations` iterations in one kernel call."""
    check_num_iterations(num_iterations)
    if num_iterations == 0:
      return
    s, t = self._settings, self._tree
    touched_before = self._counters[0]
    external.es_iterations(
        *t.kernel_args(), t.utility_sum, t.infoset_num_actions, self._regrets,
        self._avg, self._through, ES_AVERAGINGS[s["averaging"]],
        *self._weighting_args(self._num_iterations + num_iterations),
        PRUNINGS[s["pruning"]],
        s["prune_threshold"], s["prune_probability"], s["prune_k"],
        s["prune_floor"], s["prune_after"], self._num_iterations + 1,
        num_iterations, self._rng, *self._scratch, self._counters)
    self._nodes_touched += int(self._counters[0] - touched_before)
    self._num_iterations += num_iterations
