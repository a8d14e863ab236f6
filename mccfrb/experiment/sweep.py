"""Running (game, algorithm, seed) sweeps with checkpoints, locally or on Ray.

A task trains one algorithm on one game with one seed, for a number of
iterations or of training seconds, and evaluates the average strategy at
log-spaced checkpoints. Every task seeds its own generator, so a task's rows
(except wall-clock seconds) are the same whatever process or machine runs it.
Rows are plain dicts (one per checkpoint), ready for a tidy CSV.

A `RunStore` keeps every finished task's rows in a file of its own as the
task completes, so an interrupted sweep keeps them and a rerun of the same
tasks skips them; a stored run that is damaged (cut short, values missing
or not finite, rows not the task's) is not taken as finished, so it runs
again. `RunStore.lock` keeps a second sweep out of the same folder.
"""

import functools
import io
import json
import math
import os
import shutil
import time
from typing import NamedTuple, Optional

import numpy as np
import pandas as pd
import pyspiel

from mccfrb import counts
from mccfrb import evaluation
from mccfrb import files
from mccfrb import games
from mccfrb.experiment import lock as lock_lib
from mccfrb.tables import policy as policy_lib
from mccfrb.experiment import registry
from mccfrb.experiment import time_left
from mccfrb.experiment import workers
from mccfrb.games import tree as tree_lib
from mccfrb.games import tree_size

EVALUATORS = ("openspiel", "mccfrb")
BACKENDS = ("local", "ray")
COLUMNS = ("game", "algorithm", "seed", "iteration", "seconds",
           "nodes_touched", "exploitability", "nash_conv", "evaluator",
           "iterations", "num_checkpoints", "setup_seconds", "budget_seconds")
# Columns every stored row has a value in, and those whose values are
# finite numbers. `exploitability` only on two-player zero-sum games: on
# games with more players or general-sum it is empty (NaN) and `nash_conv`
# alone scores the run (`scored_by_exploitability`).
REQUIRED = ("game", "algorithm", "seed", "iteration", "seconds",
            "exploitability", "nash_conv", "evaluator", "num_checkpoints",
            "setup_seconds")
FINITE = ("seed", "iteration", "seconds", "exploitability", "nash_conv",
          "num_checkpoints", "setup_seconds")


class Task(NamedTuple):
  """One run: `iterations` iterations, or (when `seconds` is set and
  `iterations` is None) `seconds` of training wall clock."""
  game: str
  algorithm: str
  seed: int
  iterations: Optional[int]
  num_checkpoints: int
  evaluator: str = "openspiel"
  seconds: Optional[float] = None


def log_checkpoints(iterations, num_checkpoints):
  """Log-spaced distinct iteration counts from 1 to `iterations` inclusive."""
  iterations = counts.check_count("iterations", iterations, 1,
                                  what="an integer >= 1")
  num_checkpoints = counts.check_count("num_checkpoints", num_checkpoints, 1,
                                       what="an integer >= 1")
  if num_checkpoints == 1:
    return [int(iterations)]
  points = np.unique(np.round(np.logspace(0, np.log10(iterations),
                                          num_checkpoints)).astype(np.int64))
  points[-1] = iterations
  return [int(p) for p in points]


def time_checkpoints(seconds, num_checkpoints):
  """Log-spaced training times from `seconds` / 1000 to `seconds` inclusive."""
  if num_checkpoints == 1:
    return [float(seconds)]
  return [float(t) for t in np.logspace(np.log10(seconds / 1000.0),
                                        np.log10(seconds), num_checkpoints)]


def validate(games_list, algorithms, iterations, num_checkpoints, evaluator,
             backend="local", jobs=1, seconds=None):
  """Raises ValueError for any bad sweep option, before any work starts.

  Exactly one of `iterations` and `seconds` (a training time budget per
  run) is given; the other is None.
  """
  registry.check_algorithms(algorithms)
  for g in games_list:
    games.load_game(g, general=True)
    try:  # Exploitability by iteration walks the whole tree.
      tree_size.check_estimated_size(g, tree_size.default_max_nodes())
    except ValueError as e:
      raise ValueError(
          f"{e} Exploitability curves need the compiled tree; for goofspiel "
          "and liars_dice too large to compile, python -m "
          "experiments.big_games trains on native engines and evaluates by "
          "a streaming walk.") from None
  if seconds is not None:
    if iterations is not None:
      raise ValueError("give iterations or seconds, not both (got "
                       f"{iterations!r} and {seconds!r}).")
    if (isinstance(seconds, bool) or not isinstance(seconds, (int, float))
        or not 0 < seconds < math.inf):
      raise ValueError(f"seconds must be a positive number, got {seconds!r}.")
  else:
    counts.check_count("iterations", iterations, 1, what="an integer >= 1")
  counts.check_count("num_checkpoints", num_checkpoints, 1,
                     what="an integer >= 1")
  if evaluator not in EVALUATORS:
    raise ValueError(f"Unknown evaluator {evaluator!r}; allowed: {EVALUATORS}.")
  if backend not in BACKENDS:
    raise ValueError(f"Unknown backend {backend!r}; allowed: {BACKENDS}.")
  counts.check_count("jobs", jobs, 1, what="an integer >= 1")


def make_tasks(games_list, algorithms, seeds, iterations, num_checkpoints,
               evaluator="openspiel", seconds=None):
  """Every (game, algorithm, seed), in that order; `iterations` None and
  `seconds` set for runs with a time budget."""
  iterations = None if iterations is None else int(iterations)
  seconds = None if seconds is None else float(seconds)
  return [Task(g, a, counts.check_count("seed", s, 0, None), iterations,
               int(num_checkpoints), evaluator, seconds)
          for g in games_list for a in algorithms for s in seeds]


@functools.lru_cache(maxsize=2)
def _game_and_tree(game_string):
  game = games.load_game(game_string, general=True)
  return game, tree_lib.compile_tree(game)


@functools.lru_cache(maxsize=None)
def scored_by_exploitability(game_string):
  """Whether runs on the game are scored by exploitability (two-player
  zero- or constant-sum games) or by NashConv alone (more players or
  general-sum: exploitability does not apply)."""
  return games.is_two_player_zero_sum(
      games.load_game(game_string, general=True))


def unsupported(games_list, algorithms):
  """[(game, algorithm, why)] of the pairs that cannot run: on a game with
  more than two players or general-sum, the algorithms that refuse it (each
  is built once on the game to ask it; `why` is its one-line error). Every
  algorithm runs the two-player zero-sum games."""
  out = []
  for g in games_list:
    if scored_by_exploitability(g):
      continue
    game, tree = _game_and_tree(g)
    for a in algorithms:
      try:
        registry.make(a, game, 0, tree=tree)
      except ValueError as e:
        out.append((g, a, str(e).splitlines()[0]))
  return out


@functools.lru_cache(maxsize=None)
def _warm_up(algorithm, general=False):
  """Compiles numba kernels (or loads them from cache) outside the timing;
  `general`: for games with more than two players or general-sum, whose
  kernels are compiled for other array types."""
  kuhn = pyspiel.load_game("kuhn_poker(players=3)" if general
                           else "kuhn_poker")
  runner = registry.make(algorithm, kuhn, 0)
  runner.run(1)
  if general:
    return
  kuhn_tree = tree_lib.compile_tree(kuhn)
  evaluation.exploitability(kuhn_tree, runner.average_policy_table(kuhn_tree))


def evaluate(game, tree, runner, evaluator):
  """(exploitability, NashConv) of the runner's average strategy.

  Exploitability (NashConv / 2) on two-player zero-sum games; on games with
  more players or general-sum it does not apply (NaN) and NashConv alone
  is computed, by pyspiel.nash_conv of the tree's table (which every
  runner gives: the policies of OpenSpiel's C++ MCCFR solvers cannot be
  read by infoset string) or by mccfrb's `nash_conv`.
  """
  if not games.is_two_player_zero_sum(game):
    table = runner.average_policy_table(tree)
    if evaluator == "openspiel":
      return math.nan, float(pyspiel.nash_conv(
          game, policy_lib.to_pyspiel_dict(tree, table)))
    return math.nan, float(evaluation.nash_conv(tree, table))
  if evaluator == "openspiel":
    expl = float(pyspiel.exploitability(game, runner.openspiel_policy(tree)))
  else:
    expl = evaluation.exploitability(tree, runner.average_policy_table(tree))
  return expl, 2.0 * expl


def _next_chunk(done, seconds, target):
  """Iterations to run next towards `target` training seconds: the
  estimate at the rate so far, at most doubling the iterations run (the
  rate of the first, short calls is a rough guess), at least 1."""
  if done == 0 or seconds <= 0:
    return max(done, 1)
  need = math.ceil((target - seconds) * done / seconds)
  return int(max(1, min(need, done)))


def run_task(task):
  """Trains and evaluates one task; returns one row per checkpoint.

  With `task.seconds` set, the runner is called in growing chunks until
  its training time passes each of `time_checkpoints(seconds,
  num_checkpoints)`, and evaluated there (once when a chunk passes several);
  the rows say the iterations reached (`iteration`) and the training time
  (`seconds`). `seconds` counts training only (run calls), not evaluation,
  compilation of the tree (`setup_seconds`) or numba's warm-up. Runners
  with `metrics()` (the MCTS solvers) add its columns to every row.
  """
  start = time.perf_counter()
  game, tree = _game_and_tree(task.game)
  _warm_up(task.algorithm, not scored_by_exploitability(task.game))
  runner = registry.make(task.algorithm, game, task.seed, tree=tree)
  setup = time.perf_counter() - start
  rows, done, seconds = [], 0, 0.0

  def train(num_iterations):
    nonlocal done, seconds
    tic = time.perf_counter()
    runner.run(num_iterations)
    seconds += time.perf_counter() - tic
    done += num_iterations

  def record():
    expl, nash_conv = evaluate(game, tree, runner, task.evaluator)
    rows.append({
        "game": task.game, "algorithm": task.algorithm, "seed": task.seed,
        "iteration": done, "seconds": seconds,
        "nodes_touched": runner.nodes_touched, "exploitability": expl,
        "nash_conv": nash_conv, "evaluator": task.evaluator,
        "iterations": task.iterations, "num_checkpoints": task.num_checkpoints,
        "setup_seconds": setup, "budget_seconds": task.seconds,
        **getattr(runner, "metrics", dict)()})

  if task.seconds is None:
    for checkpoint in log_checkpoints(task.iterations, task.num_checkpoints):
      train(checkpoint - done)
      record()
    return rows
  for target in time_checkpoints(task.seconds, task.num_checkpoints):
    if seconds >= target:
      continue  # Passed with an earlier checkpoint, and evaluated there.
    while seconds < target:
      train(_next_chunk(done, seconds, target))
    record()
  return rows


class RunStore:
  """The finished runs of one sweep: a CSV file per task, in a folder.

  The folder holds `settings.json` (the sweep's tasks, in order) and
  `run_{i}.csv` with the rows of task i, written whole (a temporary file,
  then a rename) as soon as the task finishes, so an interrupted sweep
  keeps every finished run and never half a file. A sweep of the same
  tasks into the same folder resumes: `finished()` says which to skip.

  Args:
    folder: the folder (created by `reset`).
    tasks: the sweep's tasks.
    extra: constant columns added to every row written (such as the
      backend that ran it).
  """

  SETTINGS = "settings.json"
  FORMAT = "mccfrb-sweep-runs"

  def __init__(self, folder, tasks, extra=None):
    self.folder = os.fspath(folder)
    self.tasks = list(tasks)
    self.extra = dict(extra or {})
    self._settings = {"format": self.FORMAT,
                      "tasks": [t._asdict() for t in self.tasks]}
    self._lock = None

  def _path(self, index):
    return os.path.join(self.folder, f"run_{index:05d}.csv")

  def lock(self):
    """Takes the lock of the folder (one sweep at a time in it;
    `lock.FolderLock`), held until `remove()` or the process ends.

    Returns:
      The store.

    Raises:
      lock.FolderBusy: another running sweep holds it (a ValueError).
    """
    self._lock = lock_lib.FolderLock(self.folder).acquire()
    return self

  def exists(self):
    """True when the folder holds anything (an earlier sweep's files)."""
    return os.path.isdir(self.folder) and bool(os.listdir(self.folder))

  def matches(self):
    """True when the folder records this sweep's tasks (so it can resume)."""
    try:
      with open(os.path.join(self.folder, self.SETTINGS),
                encoding="utf-8") as f:
        recorded = json.load(f)
    except (OSError, ValueError):
      return False
    return recorded == json.loads(json.dumps(self._settings))

  def reset(self):
    """Deletes the folder's files (but its lock) and records this sweep's
    settings."""
    os.makedirs(self.folder, exist_ok=True)
    for name in os.listdir(self.folder):
      if name != lock_lib.LOCK_NAME:
        path = os.path.join(self.folder, name)
        if os.path.isdir(path) and not os.path.islink(path):
          shutil.rmtree(path)
        else:
          os.remove(path)
    files.write_atomically(os.path.join(self.folder, self.SETTINGS),
                           json.dumps(self._settings, indent=1))

  def remove(self):
    """Deletes the folder (once the sweep's outputs are written) and
    releases the lock."""
    shutil.rmtree(self.folder, ignore_errors=True)
    if self._lock is not None:
      self._lock.release()
      self._lock = None

  def write(self, index, rows):
    """Stores the rows of task `index` (called as it finishes): COLUMNS,
    then any metrics columns the runner added, then the `extra` ones."""
    df = pd.DataFrame(rows)
    metrics = [c for c in df.columns if c not in COLUMNS]
    df = df.reindex(columns=list(COLUMNS) + metrics).assign(**self.extra)
    files.write_atomically(self._path(index), df.to_csv(index=False))

  def _load(self, index):
    """(rows, None) for task `index`'s stored run as a DataFrame; (None,
    None) when none is stored; (None, why) when the stored file is
    damaged or not this task's."""
    path = self._path(index)
    try:
      with open(path, "rb") as f:
        data = f.read()
    except FileNotFoundError:
      return None, None
    except OSError as e:
      return None, f"unreadable ({e.strerror})"
    if not data.endswith(b"\n"):
      return None, "cut short (it does not end with a line end)"
    try:
      df = pd.read_csv(io.BytesIO(data))
    except (ValueError, UnicodeDecodeError) as e:
      return None, f"not a CSV table ({type(e).__name__})"
    why = _damage(df, self.tasks[index], self.extra)
    return (None, why) if why else (df, None)

  def rows(self, index):
    """Task `index`'s stored rows as dicts, as `run_task` returned them
    (None if not stored)."""
    df = self._load(index)[0]
    if df is None:
      return None
    return df.drop(columns=list(self.extra)).to_dict("records")

  def finished(self):
    """Indices of the tasks whose rows are stored (and sound)."""
    return [i for i in range(len(self.tasks)) if self._load(i)[0] is not None]

  def discard_damaged(self):
    """Deletes the stored runs that are damaged, so they run again.

    Returns:
      {path: why} of the files deleted.
    """
    damaged = {}
    for i in range(len(self.tasks)):
      why = self._load(i)[1]
      if why:
        damaged[self._path(i)] = why
        os.remove(self._path(i))
    return damaged

  def dataframe(self):
    """Every task's rows in task order (ValueError if one is missing)."""
    frames = [self._load(i)[0] for i in range(len(self.tasks))]
    missing = [i for i, f in enumerate(frames) if f is None]
    if missing:
      raise ValueError(f"{self.folder}: {len(missing)} of {len(self.tasks)} "
                       "runs have no stored rows.")
    df = pd.concat(frames, ignore_index=True)
    df["nodes_touched"] = df["nodes_touched"].astype("Int64")
    return df


def _damage(df, task, extra):
  """Why the rows `df` read back are not a sound stored run of `task` (with
  the `extra` columns), or None."""
  columns = list(df.columns)
  if (columns[:len(COLUMNS)] != list(COLUMNS)
      or columns[len(columns) - len(extra):] != list(extra)):
    return "its columns are not a run's"
  if df.empty:
    return "it has no rows"
  scored = scored_by_exploitability(task.game)
  skip = () if scored else ("exploitability",)
  for column in REQUIRED + tuple(extra):
    if column not in skip and df[column].isna().any():
      return f"values are missing in column {column!r}"
  if not scored and df["exploitability"].notna().any():
    return ("it has exploitability values on a game where only NashConv "
            "applies")
  for column in (c for c in FINITE if c not in skip):
    values = pd.to_numeric(df[column], errors="coerce")
    if not np.isfinite(values.to_numpy(dtype=float, na_value=np.nan)).all():
      return f"column {column!r} holds values that are not finite numbers"
  if scored and not np.allclose(df["nash_conv"], 2 * df["exploitability"],
                                rtol=1e-9, atol=0.0):
    return "its nash_conv is not twice its exploitability"
  # The extra columns (the backend) are not settings: a sweep started on
  # Ray resumes on local processes, keeping the runs Ray finished.
  expected = {"game": task.game, "algorithm": task.algorithm,
              "seed": task.seed, "evaluator": task.evaluator,
              "num_checkpoints": task.num_checkpoints}
  for column, value in expected.items():
    if df[column].astype(str).tolist() != [str(value)] * len(df):
      return f"its column {column!r} is not the task's {value!r}"
  for column, value in (("iterations", task.iterations),
                        ("budget_seconds", task.seconds)):
    values = pd.to_numeric(df[column], errors="coerce").to_numpy(
        dtype=float, na_value=np.nan)
    if (not np.isnan(values).all() if value is None
        else not np.allclose(values, value, rtol=1e-12)):
      return f"its column {column!r} is not the task's {value!r}"
  iterations = df["iteration"].tolist()
  if task.seconds is None:
    wanted = log_checkpoints(task.iterations, task.num_checkpoints)
    if iterations != wanted:
      return (f"it has {len(df)} rows at iterations {iterations[:3]}..., the "
              f"task's checkpoints are {len(wanted)}")
  elif len(df) > task.num_checkpoints or sorted(set(iterations)) != iterations:
    return "its rows are not the task's checkpoints"
  return None


def _run_timed(task):
  """(rows of `run_task(task)`, the seconds it took)."""
  tic = time.perf_counter()
  rows = run_task(task)
  return rows, time.perf_counter() - tic


def _run_local(items, jobs, on_done):
  if jobs == 1:
    for index, task in items:
      on_done(index, *_run_timed(task))
    return
  # The workers are killed at once on an exception (KeyboardInterrupt
  # included), so an interrupted sweep does not wait for the runs in
  # progress.
  try:
    workers.run(_run_timed, items, jobs,
                lambda index, result: on_done(index, *result))
  except workers.WorkerDied as e:
    task = dict(items)[e.index]
    raise workers.WorkerDied(
        e.index, e.exitcode, f"{task.algorithm} on {task.game} with seed "
        f"{task.seed}") from None


def _run_ray(items, jobs, ray_address, on_done):
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
  pending = []
  try:
    remote = ray.remote(num_cpus=1)(_run_timed)
    index = {remote.remote(task): i for i, task in items}
    pending = list(index)
    while pending:
      ready, pending = ray.wait(pending, num_returns=1)
      on_done(index[ready[0]], *ray.get(ready[0]))
  finally:
    # Interrupted or failed: stop the other runs. A cluster started here
    # goes down with them; on a cluster joined, they are cancelled (not
    # with force=True: Ray 2.60 aborts the driver when a force-cancelled
    # task's reply arrives as it is cancelled).
    if started_here:
      ray.shutdown()
    else:
      for ref in pending:
        ray.cancel(ref)


def run_sweep(tasks, jobs=1, backend="local", ray_address=None,
              progress=None, store=None):
  """Runs `tasks`; returns all rows in task order.

  Args:
    tasks: a list of `Task`.
    jobs: worker processes (local) or CPUs of a new local Ray cluster.
    backend: "local" (processes) or "ray".
    ray_address: join this Ray cluster instead of starting one.
    progress: optional callback(done, total, elapsed_seconds, left), called
      as each run finishes, counting the runs of this call (those `store`
      already holds are not run); `left` is `time_left.TimeLeft`'s
      estimate of the seconds to go. Runs are handed out seed by seed
      (`time_left.dispatch_order`); rows come back in task order.
    store: optional `RunStore` of these tasks: each finished task's rows are
      written to it at once, tasks it already holds are skipped, and the
      rows returned are those stored (read back). A KeyboardInterrupt ends
      the sweep (worker processes are killed, Ray tasks cancelled) and
      propagates; the store keeps what finished.
  """
  if store is not None and store.tasks != list(tasks):
    raise ValueError("the store was made for other tasks.")
  skip = set(store.finished()) if store is not None else set()
  items = time_left.dispatch_order(
      [(i, t) for i, t in enumerate(tasks) if i not in skip])
  results = [None] * len(tasks)
  start, done = time.time(), [0]
  left = time_left.TimeLeft(items, jobs)

  def on_done(index, rows, seconds):
    if store is not None:
      store.write(index, rows)
    results[index] = rows
    done[0] += 1
    left.finished(index, seconds, rows[0]["setup_seconds"] if rows else 0.0)
    if progress is not None:
      progress(done[0], len(items), time.time() - start, left.seconds())

  if not items:
    pass  # Every run finished before: no workers to start.
  elif backend == "ray":
    _run_ray(items, jobs, ray_address, on_done)
  else:
    _run_local(items, jobs, on_done)
  if store is not None:  # Every task's rows as stored (and read back).
    results = [store.rows(i) for i in range(len(tasks))]
  return [row for rows in results for row in rows]
