"""UCT and Smooth UCT: information-set MCTS as solvers (kernels/mcts.py)."""

import numpy as np

from mccfrb.tables import policy as policy_lib
from mccfrb.games import tree as tree_lib
from mccfrb.kernels import exact
from mccfrb.kernels import mcts
from mccfrb.solvers import base

OPPONENTS = {"self": 0, "uniform": 1}

# Constants for Leduc hold'em of a public reimplementation of Heinrich &
# Silver (2015) (docs/pages/mcts.md): Smooth UCT c = 18, gamma =
# 0.1, eta0 = 0.9, d = 0.002; UCT c = 20.
SMOOTH_UCT_DEFAULTS = {"c": 18.0, "gamma": 0.1, "eta0": 0.9, "d": 0.002}
UCT_DEFAULT_C = 20.0
# The batch size of threads > 1 when no batch is given (docs/pages/threads.md).
DEFAULT_MCTS_BATCH = 256


def _check_number(name, value, low, high=np.inf, low_open=False):
  """float(value); ValueError unless low <= value <= high (low < value if
  `low_open`)."""
  ok = (not isinstance(value, bool)
        and isinstance(value, (int, float, np.integer, np.floating))
        and (value > low if low_open else value >= low) and value <= high)
  if not ok:
    bounds = f"{'(' if low_open else '['}{low}, {high}{']' if high < np.inf else ')'}"
    raise ValueError(f"{name} must be a number in {bounds}, got {value!r}.")
  return float(value)


class SmoothUCTSolver(base.TabularSolverBase):
  """Smooth UCT (Heinrich & Silver 2015; Mac Manus's Leduc thesis, Algorithms 1 and 3).

  Information-set MCTS in self-play with one search tree per player keyed by
  that player's infosets of the compiled tree. At an in-tree infoset u,
  with probability eta = max(gamma, eta0 / (1 + d sqrt(N(u)))) the UCB
  action argmax Q(u, a) + c sqrt(log N(u) / N(u, a)), else an action of the
  average strategy N(u, a) / N(u); one node is expanded per player and
  simulation, then that player rolls out uniformly (kernels/mcts.py).

  ```python
  solver = mccfrb.SmoothUCTSolver("leduc_poker", seed=0)
  solver.run(1_000_000)            # an iteration is two simulations
  exploitability.exploitability(solver.game, solver.average_policy())
  ```

  Args:
    game: a game string or `pyspiel.Game` (see `mccfrb.load_game`).
    c: UCB exploration constant (> 0), on the scale of the game's payoffs;
      the defaults are for Leduc hold'em (payoffs up to 13).
    gamma, eta0, d: the mixing schedule, gamma and eta0 in [0, 1], d >= 0.
    opponent: "self" (self-play: every simulation trains both players) or
      "uniform" (simulation k trains player k % 2 against an opponent that
      plays uniformly at random; Mac Manus's Leduc thesis, Experiment 1).
    seed: seed of the solver's `np.random.Generator`.
    max_nodes, tree: as for `MCCFRbSolver`.
    threads, batch: as for `MCCFRbSolver`: threads=1, batch=None (the
      default) runs the simulations one after the other (the seed's
      algorithm); otherwise batches of `batch` iterations (2 batch
      simulations) run in parallel against the tables of the batch start
      (kernels/mcts.py, `simulation_batches`; batch=None with threads > 1:
      DEFAULT_MCTS_BATCH). The tables depend on (seed, batch), not on
      `threads`.
  """

  _table_names = ("_visits", "_counts", "_values", "_reward_sum")
  _smooth = 1

  def __init__(self, game, c=SMOOTH_UCT_DEFAULTS["c"],
               gamma=SMOOTH_UCT_DEFAULTS["gamma"],
               eta0=SMOOTH_UCT_DEFAULTS["eta0"], d=SMOOTH_UCT_DEFAULTS["d"],
               opponent="self", seed=None,
               max_nodes=tree_lib.DEFAULT_MAX_NODES, tree=None, threads=1,
               batch=None):
    self._init_mcts(game, c, gamma, eta0, d, opponent, seed, max_nodes, tree,
                    threads, batch)

  def _init_mcts(self, game, c, gamma, eta0, d, opponent, seed, max_nodes,
                 tree, threads, batch):
    self._c = _check_number("c", c, 0.0, low_open=True)
    self._gamma = _check_number("gamma", gamma, 0.0, 1.0)
    self._eta0 = _check_number("eta0", eta0, 0.0, 1.0)
    self._d = _check_number("d", d, 0.0)
    base.check_choice("opponent", opponent, OPPONENTS)
    self._opponent = opponent
    self._init_threads(threads, batch, default=DEFAULT_MCTS_BATCH)
    self._init_rng(seed)
    self._init_game(game, max_nodes, tree)
    t = self._tree
    self._visits = np.zeros(t.num_infosets, dtype=np.int64)
    self._counts = np.zeros((t.num_infosets, t.max_actions), dtype=np.int64)
    self._values = np.zeros((t.num_infosets, t.max_actions))
    self._reward_sum = np.zeros(2)
    self._path = (np.zeros(t.max_depth, dtype=np.int64),
                  np.zeros(t.max_depth, dtype=np.int64))

  def _options(self):
    return {"c": self._c, "gamma": self._gamma, "eta0": self._eta0,
            "d": self._d, "opponent": self._opponent, **self._threads_option}

  def _batch_scratch(self):
    """Per-worker scratch and the records of a batch (allocated once)."""
    if self._batch_buffers is None:
      workers = self._threads
      span, depth = 2 * self._batch, max(self._tree.max_depth, 1)
      # A worker runs at most span // workers + 1 simulations of a batch.
      pairs = (span // workers + 1) * depth
      self._batch_buffers = (
          workers, np.zeros((workers, workers, pairs), dtype=np.int32),
          np.zeros((workers, workers, pairs), dtype=np.int32),
          np.zeros((workers, workers), dtype=np.int64),
          np.zeros(workers, dtype=np.int64),
          np.zeros((span, depth), dtype=np.int64),
          np.zeros((span, depth), dtype=np.int64), np.zeros(span))
    return self._batch_buffers

  @property
  def opponent(self):
    return self._opponent

  @property
  def num_simulations(self):
    """Simulations run so far: two per iteration."""
    return 2 * self._num_iterations

  def _run_chunk(self, num_iterations):
    """`num_iterations` iterations (2 simulations each) in one call
    (batches never span two calls)."""
    t = self._tree
    args = (*t.kernel_args(), t.utility_sum, t.infoset_player, self._visits,
            self._counts, self._values, self._smooth, self._c, self._gamma,
            self._eta0, self._d, OPPONENTS[self._opponent],
            2 * self._num_iterations, 2 * num_iterations)
    if self._batch is None:
      self._nodes_touched += mcts.simulations(
          *args, self._rng_words, *self._path, self._reward_sum)
    else:
      buffers = self._batch_scratch()
      with base.numba_threads(buffers[0]):
        self._nodes_touched += mcts.simulation_batches(
            *args, self._batch, self._rng_words, *buffers, self._reward_sum)
    self._num_iterations += num_iterations

  def average_policy_table(self):
    """The average strategy N(u, a) / N(u) (every selection counted), as an
    mccfrb table; uniform at infosets not in the tree."""
    out = np.zeros(self._values.shape)
    exact.normalize_rows(self._counts.astype(np.float64),
                         self._tree.infoset_num_actions, out)
    return out

  def current_policy_table(self):
    """The policy SELECT would play next: in the tree eta times the UCB
    action plus (1 - eta) times the average strategy (UCT: the UCB action);
    uniform (the rollout policy) at infosets not yet in the tree."""
    out = np.zeros(self._values.shape)
    mcts.selection_policy(self._visits, self._counts, self._values,
                          self._tree.infoset_num_actions, self._smooth,
                          self._c, self._gamma, self._eta0, self._d, out)
    return out

  def mean_reward(self):
    """float64[2]: each seat's mean return over the simulations it played
    (self-play: all; opponent="uniform": those in which it learned)."""
    played = self.num_simulations if self._opponent == "self" else (
        np.array([(self.num_simulations + 1) // 2,
                  self.num_simulations // 2]))
    return self._reward_sum / np.maximum(played, 1)

  def value_against_uniform(self):
    """float64[2]: each seat's exact expected return when it plays its
    average strategy and the other seat plays uniformly at random."""
    t = self._tree
    table = self.average_policy_table()
    uniform = policy_lib.uniform_table(t)
    values = np.zeros(2)
    node_values = np.empty(t.num_nodes)
    for seat in (0, 1):
      mixed = np.where((t.infoset_player == seat)[:, None], table, uniform)
      exact.node_values(*t.kernel_args(), mixed, node_values)
      v0 = float(node_values[0])
      values[seat] = v0 if seat == 0 else t.utility_sum - v0
    return values

  def metrics(self):
    """Per-checkpoint numbers for experiment rows (Mac Manus's Figures
    4.1-4.3): simulations, each seat's mean training reward, exact value
    against a uniform opponent and search-tree size."""
    reward = self.mean_reward()
    value = self.value_against_uniform()
    sizes = self.tree_sizes()
    return {"simulations": self.num_simulations,
            **{f"reward_{p}": reward[p] for p in (0, 1)},
            **{f"value_vs_uniform_{p}": value[p] for p in (0, 1)},
            **{f"tree_size_{p}": int(sizes[p]) for p in (0, 1)}}

  def tree_sizes(self):
    """int64[2]: the number of infosets in each player's search tree."""
    t = self._tree
    return np.bincount(t.infoset_player[self._visits > 0].astype(np.int64),
                       minlength=2)


class UCTSolver(SmoothUCTSolver):
  """Extensive-form UCT (Mac Manus's Leduc thesis, Algorithms 1 and 2): Smooth UCT that
  always takes the UCB branch (no random draw at selections).

  Args:
    game: a game string or `pyspiel.Game`.
    c: UCB exploration constant (> 0); the default is for Leduc hold'em.
    opponent: "self" (self-play; Mac Manus's Leduc thesis, Experiment 2) or "uniform"
      (against a uniformly random opponent; Experiment 1).
    seed, max_nodes, tree, threads, batch: as for `SmoothUCTSolver`.
  """

  _smooth = 0

  def __init__(self, game, c=UCT_DEFAULT_C, opponent="self", seed=None,
               max_nodes=tree_lib.DEFAULT_MAX_NODES, tree=None, threads=1,
               batch=None):
    self._init_mcts(game, c, 0.0, 1.0, 0.0, opponent, seed, max_nodes, tree,
                    threads, batch)

  def _options(self):
    return {"c": self._c, "opponent": self._opponent, **self._threads_option}

