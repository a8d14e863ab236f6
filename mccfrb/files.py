"""Files written whole: a temporary file beside the target, then a rename."""

import contextlib
import glob
import os
import uuid


def write_atomically(path, write):
  """Calls `write(binary file)` on a temporary file beside `path`, then
  renames it to `path`; on any failure (KeyboardInterrupt included) the
  temporary file is removed and `path` is left as it was (an OSError, such
  as a full disk, is raised naming `path`). Temporary files that killed
  writes of `path` left are removed first (`remove_leftovers`).

  Args:
    path: the file to write.
    write: a function of one argument, the open binary file; or a `str`,
      written as UTF-8 text.
  """
  if isinstance(write, str):
    text = write
    write = lambda f: f.write(text.encode("utf-8"))
  path = os.fspath(path)
  remove_leftovers(path)
  folder, base_name = os.path.split(os.path.abspath(path))
  tmp = os.path.join(folder, f"{TEMPORARY_PREFIX}{base_name}.{os.getpid()}."
                     f"{uuid.uuid4().hex[:8]}.tmp")
  try:
    with open(tmp, "xb") as f:
      write(f)
      f.flush()
      os.fsync(f.fileno())
    os.replace(tmp, path)
  except BaseException as e:
    # The temporary file may not exist (open failed); the first error is
    # the one to raise.
    with contextlib.suppress(OSError):
      os.unlink(tmp)
    if isinstance(e, OSError) and e.filename != path:
      # Name the file being written, not the temporary one.
      raise OSError(e.errno, e.strerror or str(e), path) from e
    raise


# Temporary files start with this (a process killed with SIGKILL while
# writing can leave one behind; such leftovers are safe to delete).
TEMPORARY_PREFIX = "."


def remove_leftovers(path):
  """Removes the temporary files that writes of `path` by processes no
  longer running left beside it (a process killed while it wrote);
  those of running processes (this one included) are left alone.

  Returns:
    The paths removed.
  """
  folder, base_name = os.path.split(os.path.abspath(os.fspath(path)))
  removed = []
  pattern = f"{glob.escape(TEMPORARY_PREFIX + base_name)}.*.*.tmp"
  for leftover in glob.glob(os.path.join(glob.escape(folder), pattern)):
    pid = os.path.basename(leftover)[len(TEMPORARY_PREFIX + base_name) + 1:]
    pid = pid.split(".")[0]
    if not pid.isdigit() or int(pid) < 1 or process_alive(int(pid)):
      continue
    try:
      os.unlink(leftover)
      removed.append(leftover)
    except OSError:
      pass  # Removed by another process at the same time, or not ours.
  return removed


def process_alive(pid):
  """Whether process `pid` runs (on this machine)."""
  try:
    os.kill(pid, 0)
  except ProcessLookupError:
    return False
  except PermissionError:
    return True  # It runs, as another user.
  return True
