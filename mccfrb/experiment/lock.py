"""One sweep at a time in a folder: an advisory lock file.

`FolderLock(folder).acquire()` takes an exclusive `fcntl.flock` on
`{folder}/.mccfrb-sweep.lock` and writes the process id and command into
it. The kernel releases the lock when the process ends, however it ends
(SIGKILL included), so a lock file left by a dead process is taken over by
the next sweep; a live holder makes `acquire` raise `FolderBusy`, one line
naming the holder's pid and command. Within one process the lock is
shared: a second `acquire` of a folder the process holds succeeds. POSIX
only (fcntl).
"""

import contextlib
import fcntl
import os
import sys

LOCK_NAME = ".mccfrb-sweep.lock"
# {lock file path: descriptor} of the locks this process holds.
_HELD = {}


class FolderBusy(ValueError):
  """Another running process holds the folder's lock."""


class FolderLock:
  """The lock of one folder (created if needed); also a context manager."""

  def __init__(self, folder):
    self.folder = os.fspath(folder)
    self.path = os.path.join(os.path.abspath(self.folder), LOCK_NAME)
    self._fd = None

  def acquire(self):
    """Takes the lock (at once, never waiting).

    Raises:
      FolderBusy: another running process holds it.
      OSError: the lock file cannot be created.
    """
    os.makedirs(self.folder, exist_ok=True)
    self._fd = _HELD.get(self.path)
    while self._fd is None:
      fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
      try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
      except BlockingIOError:
        holder = os.read(fd, 4096).decode("utf-8", "replace").strip()
        os.close(fd)
        raise FolderBusy(
            f"{self.folder} is in use by another sweep (pid "
            f"{holder or 'unknown'}); wait for it to end, or stop it, then "
            "rerun (it resumes)") from None
      except BaseException:
        os.close(fd)
        raise
      try:  # The file may have been released and removed in between.
        same = os.stat(self.path).st_ino == os.fstat(fd).st_ino
      except FileNotFoundError:
        same = False
      if not same:
        os.close(fd)
        continue
      command = " ".join(os.path.basename(a) if i == 0 else a
                         for i, a in enumerate(sys.argv))
      os.ftruncate(fd, 0)
      os.write(fd, f"{os.getpid()}: {command}"[:4000].encode("utf-8"))
      self._fd = _HELD[self.path] = fd
    return self

  def release(self):
    """Removes the lock file and releases the lock (if held)."""
    fd, self._fd = self._fd, None
    if fd is None or _HELD.get(self.path) != fd:
      return
    del _HELD[self.path]
    # Already gone (removed by hand, or by a cleanup): nothing to remove.
    with contextlib.suppress(FileNotFoundError):
      os.unlink(self.path)
    os.close(fd)

  @property
  def held(self):
    return self._fd is not None

  def __enter__(self):
    return self.acquire()

  def __exit__(self, *exc):
    self.release()
