"""Running (game, algorithm, seed) sweeps with checkpoints, locally or on Ray.

A task trains one algorithm on one game with one seed and evaluates the
average strategy at log-spaced checkpoints. Every task seeds its own
generator, so a task's rows (except wall-clock seconds) are the same whatever
process or machine runs it. Rows are plain dicts (one per checkpoint), ready
for a tidy CSV.
"""

import concurrent.futures
import functools
import multiprocessing
import os
import time
from typing import NamedTuple

import numpy as np
import pyspiel

from mccfrb import evaluation
from mccfrb import games
from mccfrb import registry
from mccfrb import tree as tree_lib

EVALUATORS = ("openspiel", "mccfrb")
BACKENDS = ("local", "ray")
COLUMNS = ("game", "algorithm", "seed", "iteration", "seconds",
           "nodes_touched", "exploitability", "nash_conv", "evaluator",
           "iterations", "num_checkpoints", "setup_seconds")


class Task(NamedTuple):
  game: str
  algorithm: str
  seed: int
  iterations: int
  num_checkpoints: int
  evaluator: str = "openspiel"


def log_checkpoints(iterations, num_checkpoints):
  """Log-spaced distinct iteration counts from 1 to `iterations` inclusive."""
  if iterations < 1 or num_checkpoints < 1:
    raise ValueError("iterations and num_checkpoints must be at least 1, got "
                     f"{iterations} and {num_checkpoints}.")
  if num_checkpoints == 1:
    return [int(iterations)]
  points = np.unique(np.round(np.logspace(0, np.log10(iterations),
                                          num_checkpoints)).astype(np.int64))
  points[-1] = iterations
  return [int(p) for p in points]


def validate(games_list, algorithms, iterations, num_checkpoints, evaluator,
             backend="local", jobs=1):
  """Raises ValueError for any bad sweep option, before any work starts."""
  registry.check_algorithms(algorithms)
  for g in games_list:
    games.load_game(g)
  if isinstance(iterations, bool) or not isinstance(iterations, (int, np.integer)) \
      or iterations < 1:
    raise ValueError(f"iterations must be an integer >= 1, got {iterations!r}.")
  if num_checkpoints < 1:
    raise ValueError(f"num_checkpoints must be >= 1, got {num_checkpoints}.")
  if evaluator not in EVALUATORS:
    raise ValueError(f"Unknown evaluator {evaluator!r}; allowed: {EVALUATORS}.")
  if backend not in BACKENDS:
    raise ValueError(f"Unknown backend {backend!r}; allowed: {BACKENDS}.")
  if jobs < 1:
    raise ValueError(f"jobs must be >= 1, got {jobs}.")


def make_tasks(games_list, algorithms, seeds, iterations, num_checkpoints,
               evaluator="openspiel"):
  return [Task(g, a, int(s), int(iterations), int(num_checkpoints), evaluator)
          for g in games_list for a in algorithms for s in seeds]


@functools.lru_cache(maxsize=2)
def _game_and_tree(game_string):
  game = games.load_game(game_string)
  return game, tree_lib.compile_tree(game)


@functools.lru_cache(maxsize=None)
def _warm_up(algorithm):
  """Compiles numba kernels (or loads them from cache) outside the timing."""
  kuhn = pyspiel.load_game("kuhn_poker")
  runner = registry.make(algorithm, kuhn, 0)
  runner.run(1)
  kuhn_tree = tree_lib.compile_tree(kuhn)
  evaluation.exploitability(kuhn_tree, runner.average_policy_table(kuhn_tree))


def evaluate(game, tree, runner, evaluator):
  """Exploitability (NashConv / 2) of the runner's average strategy."""
  if evaluator == "openspiel":
    return float(pyspiel.exploitability(game, runner.openspiel_policy(tree)))
  return evaluation.exploitability(tree, runner.average_policy_table(tree))


def run_task(task):
  """Trains and evaluates one task; returns one row per checkpoint.

  `seconds` counts training only (run calls), not evaluation, compilation of
  the tree (`setup_seconds`) or numba's warm-up. Runners with `metrics()`
  (the MCTS solvers) add its columns to every row.
  """
  start = time.perf_counter()
  game, tree = _game_and_tree(task.game)
  _warm_up(task.algorithm)
  runner = registry.make(task.algorithm, game, task.seed, tree=tree)
  setup = time.perf_counter() - start
  rows, done, seconds = [], 0, 0.0
  for checkpoint in log_checkpoints(task.iterations, task.num_checkpoints):
    tic = time.perf_counter()
    runner.run(checkpoint - done)
    seconds += time.perf_counter() - tic
    done = checkpoint
    expl = evaluate(game, tree, runner, task.evaluator)
    rows.append({
        "game": task.game, "algorithm": task.algorithm, "seed": task.seed,
        "iteration": checkpoint, "seconds": seconds,
        "nodes_touched": runner.nodes_touched, "exploitability": expl,
        "nash_conv": 2.0 * expl, "evaluator": task.evaluator,
        "iterations": task.iterations, "num_checkpoints": task.num_checkpoints,
        "setup_seconds": setup, **getattr(runner, "metrics", dict)()})
  return rows


def _run_local(tasks, jobs, on_done):
  results = [None] * len(tasks)
  if jobs == 1:
    for i, task in enumerate(tasks):
      results[i] = run_task(task)
      on_done()
    return results
  os.environ["NUMBA_NUM_THREADS"] = "1"  # Inherited by the workers.
  context = multiprocessing.get_context("spawn")
  with concurrent.futures.ProcessPoolExecutor(jobs, mp_context=context) as pool:
    futures = {pool.submit(run_task, t): i for i, t in enumerate(tasks)}
    for future in concurrent.futures.as_completed(futures):
      results[futures[future]] = future.result()
      on_done()
  return results


def _run_ray(tasks, jobs, ray_address, on_done):
  try:
    import ray  # pylint: disable=g-import-not-at-top
  except ImportError as e:
    raise ValueError("backend='ray' needs Ray: pip install -e '.[ray]'") from e
  env = {"NUMBA_NUM_THREADS": "1"}
  if "NUMBA_CACHE_DIR" in os.environ:
    env["NUMBA_CACHE_DIR"] = os.environ["NUMBA_CACHE_DIR"]
  started_here = not ray.is_initialized()
  if started_here:
    ray.init(address=ray_address or None,
             num_cpus=None if ray_address else jobs,
             include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": env})
  try:
    remote = ray.remote(num_cpus=1)(run_task)
    refs = [remote.remote(t) for t in tasks]
    index = {ref: i for i, ref in enumerate(refs)}
    results, pending = [None] * len(tasks), list(refs)
    while pending:
      ready, pending = ray.wait(pending, num_returns=1)
      results[index[ready[0]]] = ray.get(ready[0])
      on_done()
    return results
  finally:
    if started_here:
      ray.shutdown()


def run_sweep(tasks, jobs=1, backend="local", ray_address=None,
              progress=None):
  """Runs `tasks`; returns all rows in task order.

  Args:
    tasks: a list of `Task`.
    jobs: worker processes (local) or CPUs of a new local Ray cluster.
    backend: "local" (processes) or "ray".
    ray_address: join this Ray cluster instead of starting one.
    progress: optional callback(done, total, elapsed_seconds).
  """
  start, done = time.time(), [0]

  def on_done():
    done[0] += 1
    if progress is not None:
      progress(done[0], len(tasks), time.time() - start)

  if backend == "ray":
    results = _run_ray(tasks, jobs, ray_address, on_done)
  else:
    results = _run_local(tasks, jobs, on_done)
  return [row for rows in results for row in rows]
