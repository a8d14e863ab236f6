"""Files written whole: a temporary file beside the target, then a rename."""

import os
import uuid


def write_atomically(path, write):
  """Calls `write(binary file)` on a temporary file beside `path`, then
  renames it to `path`; on any failure (KeyboardInterrupt included) the
  temporary file is removed and `path` is left as it was.

  Args:
    path: the file to write.
    write: a function of one argument, the open binary file; or a `str`,
      written as UTF-8 text.
  """
  if isinstance(write, str):
    text = write
    write = lambda f: f.write(text.encode("utf-8"))
  path = os.fspath(path)
  folder, base_name = os.path.split(os.path.abspath(path))
  tmp = os.path.join(folder, f"{TEMPORARY_PREFIX}{base_name}.{os.getpid()}."
                     f"{uuid.uuid4().hex[:8]}.tmp")
  try:
    with open(tmp, "xb") as f:
      write(f)
      f.flush()
      os.fsync(f.fileno())
    os.replace(tmp, path)
  except BaseException:
    try:
      os.unlink(tmp)
    except OSError:
      pass
    raise


# Temporary files start with this (a process killed with SIGKILL while
# writing can leave one behind; such leftovers are safe to delete).
TEMPORARY_PREFIX = "."
