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


def remove_earlier_outputs(folder, patterns):
  """Deletes the files in `folder` matching any of `patterns`.

  Every binary calls it with glob patterns of everything it writes (such as
  'convergence_[0-9]*.png'), once its results are ready and right before it
  writes them, so the outputs of an earlier run into the same folder are
  replaced as a whole: a folder never mixes files of two runs. Other files
  are left alone.

  Returns:
    The removed paths.
  """
  import glob  # pylint: disable=g-import-not-at-top
  import os  # pylint: disable=g-import-not-at-top
  removed = []
  for pattern in patterns:
    for path in sorted(glob.glob(os.path.join(glob.escape(folder), pattern))):
      if os.path.isfile(path):
        os.remove(path)
        removed.append(path)
  if removed:
    print(f"removed {len(removed)} output file(s) of an earlier run from "
          f"{folder}", flush=True)
  return removed


def write_atomically(path, text):
  """Writes `text` to `path` through a temporary file and a rename."""
  import os  # pylint: disable=g-import-not-at-top
  tmp = f"{path}.tmp{os.getpid()}"
  with open(tmp, "w", encoding="utf-8") as f:
    f.write(text)
  os.replace(tmp, path)


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
