"""External-sampling MCCFR with weighting and pruning (kernels/external.py)."""

import numpy as np
from open_spiel.python.algorithms.external_sampling_mccfr import AverageType
import pyspiel

from mccfrb import tree as tree_lib
from mccfrb.kernels import external
from mccfrb.solvers import base

ES_AVERAGINGS = {"simple": 0, "full": 1}
# The batch size of threads > 1 when no batch is given (README, "Threads").
DEFAULT_ES_BATCH = 8
PRUNINGS = {None: 0, "pluribus": 1, "probabilistic": 2}


def averaging_name(averaging):
  """Maps OpenSpiel's AverageType.SIMPLE / FULL (the Python enum, which
  mccfrb re-exports as `mccfrb.AverageType`, or pyspiel.MCCFRAverageType)
  to "simple" / "full"; returns any other value unchanged."""
  if isinstance(averaging, (AverageType, pyspiel.MCCFRAverageType)):
    return averaging.name.lower()
  return averaging


class ExternalSamplingSolver(base.WeightingMixin, base.TabularSolverBase):
  """External-sampling MCCFR with weighting and pruning (kernels/external.py).

  Args:
    game: a game string or `pyspiel.Game`.
    averaging: "simple" (at the opponent's nodes, OpenSpiel's default) or
      "full" (a full-tree pass per iteration with the owner's reach); or
      OpenSpiel's `AverageType.SIMPLE` / `FULL`, so that OpenSpiel's
      `ExternalSamplingSolver(game, AverageType.SIMPLE)` works unchanged.
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
    threads, batch: as for `MCCFRbSolver` (kernels/external.py,
      `es_batches`); batch=None with threads > 1 runs batches of
      DEFAULT_ES_BATCH iterations.
  """

  _table_names = ("_regrets", "_avg", "_through")

  def __init__(self, game, averaging="simple", weighting=None,
               linear_iterations=None, alpha=1.5, beta=0.0, gamma=2.0,
               pruning=None, prune_threshold=-200.0, prune_probability=0.95,
               prune_k=200.0, prune_floor=0.05, prune_after=1, seed=None,
               max_nodes=tree_lib.DEFAULT_MAX_NODES, tree=None, threads=1,
               batch=None):
    averaging = averaging_name(averaging)
    self._init_threads(threads, batch, default=DEFAULT_ES_BATCH)
    base.check_choice("averaging", averaging, ES_AVERAGINGS)
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
    base.check_unit_interval("prune_probability", prune_probability)
    base.check_unit_interval("prune_floor", prune_floor)
    if prune_k <= 0:
      raise ValueError(f"prune_k must be positive, got {prune_k}.")
    base.check_num_iterations(prune_after)
    self._init_rng(seed)
    self._settings = dict(
        averaging=averaging, pruning=pruning,
        prune_threshold=float(prune_threshold),
        prune_probability=float(prune_probability), prune_k=float(prune_k),
        prune_floor=float(prune_floor), prune_after=int(prune_after),
        **self._threads_option)
    self._init_game(game, max_nodes, tree)
    t = self._tree
    shape = (t.num_infosets, t.max_actions)
    self._regrets = np.zeros(shape)
    self._avg = np.zeros(shape)
    self._through = np.zeros(t.num_infosets, dtype=np.int64)
    self._counters = np.zeros(2, dtype=np.int64)
    self._scratch = self._frames(None)

  def _frames(self, workers):
    """The traversal's frames (`_traversals`), with a leading axis of
    `workers` rows unless None, and the full-averaging scratch."""
    t = self._tree
    lead = () if workers is None else (workers,)
    depth = max(t.max_depth, 1) + 1
    full = self._settings["averaging"] == "full"
    return (np.zeros(lead + (depth,), dtype=np.int64),
            np.zeros(lead + (depth,), dtype=np.int64),
            np.zeros(lead + (depth, t.max_actions)),
            np.zeros(lead + (depth, t.max_actions)),
            np.zeros(lead + (depth, t.max_actions)),
            np.zeros((t.num_infosets, t.max_actions) if full
                     else (0, t.max_actions)),
            np.zeros((t.num_nodes if full else 0, 3)))

  def _batch_scratch(self):
    """Frames, per-worker counters and records of `es_batches`."""
    if self._batch_buffers is None:
      t, workers, episodes = self._tree, self._threads, 2 * self._batch
      bound = external.traversal_bound(*t.kernel_args()[:5])
      self._batch_buffers = self._frames(workers) + (
          np.zeros((workers, 2), dtype=np.int64),
          np.zeros((episodes, bound), dtype=np.int64),
          np.zeros(episodes, dtype=np.int64),
          np.zeros((episodes, bound, t.max_actions)),
          np.zeros((episodes, bound, t.max_actions)))
    return self._batch_buffers

  def _options(self):
    return {**self._settings, **self._weighting}

  @property
  def subtrees_pruned(self):
    """Actions skipped by pruning so far."""
    return int(self._counters[1])

  def run(self, num_iterations):
    """Runs `num_iterations` iterations in one kernel call."""
    base.check_num_iterations(num_iterations)
    if num_iterations == 0:
      return
    s, t = self._settings, self._tree
    touched_before = self._counters[0]
    args = (*t.kernel_args(), t.utility_sum, t.infoset_num_actions,
            self._regrets, self._avg, self._through,
            ES_AVERAGINGS[s["averaging"]],
            *self._weighting_args(self._num_iterations + num_iterations),
            PRUNINGS[s["pruning"]], s["prune_threshold"],
            s["prune_probability"], s["prune_k"], s["prune_floor"],
            s["prune_after"], self._num_iterations + 1, num_iterations)
    if self._batch is None:
      external.es_iterations(*args, self._rng_words, *self._scratch,
                             self._counters)
    else:
      buffers = self._batch_scratch()
      counters = buffers[7]
      counters[:] = 0
      with base.numba_threads(self._threads):
        external.es_batches(*args, self._batch, self._rng_words,
                            self._threads, *buffers)
      self._counters += counters.sum(axis=0)
    self._nodes_touched += int(self._counters[0] - touched_before)
    self._num_iterations += num_iterations

