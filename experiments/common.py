"""Helpers shared by the experiment binaries (no flags are defined here)."""

GOOFSPIEL4 = ("goofspiel(num_cards=4,imp_info=True,points_order=random,"
              "returns_type=point_difference)")
GOOFSPIEL5 = ("goofspiel(num_cards=5,imp_info=True,points_order=random,"
              "returns_type=point_difference)")


def rejoin_game_list(items):
  """Re-joins the items of a comma-split flag that belong inside parentheses.

  absl's list flags split 'goofspiel(num_cards=4,imp_info=True)' at every
  comma; this puts the pieces of one game string back together.

  Raises:
    ValueError: the parentheses do not balance.
  """
  games, current = [], ""
  for item in items:
    current = f"{current},{item}" if current else item
    if current.count("(") == current.count(")"):
      games.append(current.strip())
      current = ""
  if current:
    raise ValueError(f"Unbalanced parentheses in game list: {current!r}")
  return games


def parse_seeds(items):
  """'--seeds=5' means seeds 0..4; '--seeds=3,7,11' those seeds."""
  try:
    seeds = [int(s) for s in items]
  except ValueError as e:
    raise ValueError(f"seeds must be integers, got {items}") from e
  if len(seeds) == 1:
    if seeds[0] < 1:
      raise ValueError(f"a seed count must be >= 1, got {seeds[0]}")
    return list(range(seeds[0]))
  return seeds


def check_writable_dir(path):
  """Creates `path` if needed; raises ValueError unless files can be made in it."""
  import os  # pylint: disable=g-import-not-at-top
  import tempfile  # pylint: disable=g-import-not-at-top
  try:
    os.makedirs(path, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=path):
      pass
  except OSError as e:
    raise ValueError(f"cannot write to output folder {path!r}: {e.strerror}") from e


def remove_earlier_outputs(folder, patterns, quiet=False):
  """Deletes the files in `folder` matching any of `patterns`.

  Every binary calls it with glob patterns of everything it writes (such as
  'convergence_[0-9]*.png'), once its results are ready and right before it
  writes them, so the outputs of an earlier run into the same folder are
  replaced as a whole: a folder never mixes files of two runs. Other files
  are left alone.

  Returns:
    The removed paths (one line says how many, unless `quiet`).
  """
  import glob  # pylint: disable=g-import-not-at-top
  import os  # pylint: disable=g-import-not-at-top
  removed = []
  for pattern in patterns:
    for path in sorted(glob.glob(os.path.join(glob.escape(folder), pattern))):
      if os.path.isfile(path):
        os.remove(path)
        removed.append(path)
  if removed and not quiet:
    print(f"removed {len(removed)} output file(s) of an earlier run from "
          f"{folder}", flush=True)
  return removed


def print_progress(done, total, elapsed, left):
  """`sweep.run_sweep`'s progress callback: one line per finished run, with
  the sweep's estimate of the seconds left (`time_left.TimeLeft`)."""
  rest = "" if done == total or left is None else f", about {left:.0f}s left"
  print(f"finished {done}/{total} runs, elapsed {elapsed:.0f}s{rest}",
        flush=True)


def open_runs(out_dir, name, tasks, outputs, extra=None):
  """The `sweep.RunStore` of a binary's sweep: `{out_dir}/{name}/`, locked.

  The lock (`RunStore.lock`) keeps a second sweep out of `out_dir` until
  this one ends. If the store records the same tasks (an interrupted run
  of the same command), the sweep resumes: one line says how many runs
  finished before and are skipped, and one line per damaged stored run
  that it runs again. Otherwise everything an earlier run left in
  `out_dir` (the files matching `outputs` and the store's folder) is
  removed as a whole first, with one line saying so, so the folder never
  mixes two runs.

  Raises:
    ValueError: another sweep runs in `out_dir` (`lock.FolderBusy`).
    OSError: the store cannot be made.
  """
  import os  # pylint: disable=g-import-not-at-top
  from mccfrb.experiment import analysis  # pylint: disable=g-import-not-at-top
  from mccfrb.experiment import sweep  # pylint: disable=g-import-not-at-top
  store = sweep.RunStore(os.path.join(out_dir, name), tasks, extra).lock()
  if store.matches():
    for path, why in store.discard_damaged().items():
      print(f"{path} is damaged ({why}); running it again", flush=True)
    kept = len(store.finished())
    print(f"resuming the interrupted run in {store.folder}: {kept} of "
          f"{len(tasks)} runs finished before, skipping them", flush=True)
    return store
  runs = (len([f for f in os.listdir(store.folder) if f.startswith("run_")])
          if store.exists() else 0)
  removed = remove_earlier_outputs(out_dir, outputs, quiet=True)
  store.reset()
  if removed or runs:
    count = analysis.count_text
    parts = [count(len(removed), "output file")] if removed else []
    parts += [f"{count(runs, 'finished run')} of an interrupted sweep"
              ] if runs else []
    print(f"replacing the outputs of an earlier run in {out_dir} (a finished "
          f"run, or one with other settings): removed {' and '.join(parts)}",
          flush=True)
  return store


class ExitOnFault:
  """`with ExitOnFault(program, store):` turns Ctrl-C, an OSError (a full
  disk, a folder removed) and a worker process that died (`WorkerDied`:
  killed, or out of memory) into one line on standard error saying what
  went wrong and what `store` (if not None) kept, and exit status 130
  (Ctrl-C) or 1."""

  def __init__(self, program, store):
    self.program, self.store = program, store

  def __enter__(self):
    return self

  def __exit__(self, kind, value, traceback):
    del traceback
    from mccfrb.experiment import workers  # pylint: disable=g-import-not-at-top
    if kind is KeyboardInterrupt:
      what, then, status = "interrupted", ": ", 130
    elif kind is not None and issubclass(kind, OSError):
      where = f"cannot write {value.filename}: " if value.filename else ""
      what, then, status = f"error: {where}{value.strerror or value}", "; ", 1
    elif kind is not None and issubclass(kind, workers.WorkerDied):
      what, then, status = f"error: {value}", "; ", 1
    else:
      return False
    import sys  # pylint: disable=g-import-not-at-top
    if self.store is not None:
      total, kept = len(self.store.tasks), len(self.store.finished())
      rest = (f"finish the other {total - kept}" if kept < total
              else "write the outputs")
      what += (f"{then}kept {kept} of {total} runs in {self.store.folder}; "
               f"rerun the same command to {rest}")
    print(f"{self.program}: {what}", file=sys.stderr, flush=True)
    raise SystemExit(status)


def write_atomically(path, text):
  """Writes `text` to `path` through a temporary file and a rename."""
  from mccfrb import files  # pylint: disable=g-import-not-at-top
  files.write_atomically(path, text)


def read_csv_with_columns(path, columns, flag):
  """Rows of a CSV named by `flag`; ValueError if unreadable or lacking `columns`."""
  import os  # pylint: disable=g-import-not-at-top
  import pandas as pd  # pylint: disable=g-import-not-at-top
  if not os.path.isfile(path):
    raise ValueError(f"{flag}: no such file {path!r}")
  try:
    df = pd.read_csv(path)
  except (OSError, UnicodeDecodeError, pd.errors.ParserError,
          pd.errors.EmptyDataError) as e:
    lines = str(e).strip().splitlines()
    reason = lines[0] if lines else type(e).__name__
    raise ValueError(f"{flag}: cannot read {path!r}: {reason}") from e
  missing = [c for c in columns if c not in df.columns]
  if missing:
    raise ValueError(f"{flag}: {path!r} lacks column(s) {', '.join(missing)}")
  return df


def fail(program, error):
  """Exits with status 1 and a one-line message on standard error."""
  raise SystemExit(f"{program}: error: {error}")


def hashed_tree_solver(game, seed, precision=None, in_flight=None, **options):
  """MCCFRbSolver running the engine kernels (hashed tables, episodes in
  flight) over a game's compiled tree, as tests/test_compiled_engine.py
  runs them: the engine representation on a game that has no engine.
  `game`: a pyspiel.Game; `options`: MCCFRbSolver's."""
  # pylint: disable=protected-access,import-outside-toplevel
  import mccfrb
  from mccfrb.games.engines import compiled
  tree = mccfrb.compile_tree(game)
  engine = compiled.make_engine(tree, game, mccfrb.public_states(
      tree, game=game))
  solver = mccfrb.MCCFRbSolver(game, seed=seed, tree=tree, **options)
  solver._init_engine(engine, None, precision, in_flight)
  return solver
