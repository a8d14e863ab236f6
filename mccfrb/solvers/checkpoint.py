"""Reading solver checkpoints without trusting them.

A checkpoint (written by a solver's `save`, solvers/base.py) is a numpy
.npz archive, written uncompressed: a `meta` member (JSON text) and one
.npy member per table. `CheckpointFile` reads it member by member: nothing
is unpickled, only plain numeric dtypes are taken, and before an array is
allocated its header must agree with the bytes the archive holds for it
(an archive of N bytes never makes the reader allocate much more than N),
and, for the tables whose size the game fixes, with the game's size.
Every meta field is checked for type and range (`check_meta`). Whatever
goes wrong, the answer is one ValueError naming the file and the field or
member; only a file that cannot be opened raises OSError.
"""

import collections.abc
import json
import os
import zipfile

import numpy as np

from mccfrb import counts

FORMAT = "mccfrb-checkpoint"
META_KEYS = ("format", "class", "game", "options", "num_iterations",
             "nodes_touched", "rng_state")
# The meta member's JSON text is far smaller than this.
MAX_META_CHARS = 1 << 20
# Table dtypes a checkpoint may hold: signed and unsigned integers, floats.
TABLE_KINDS = "iuf"
# Tables holding iteration numbers, each in [0, num_iterations].
ITERATION_TABLES = ("avg_last", "through")


def foreign(path, reason):
  """The ValueError for a file that is not a readable mccfrb checkpoint."""
  return ValueError(f"{path} is not an mccfrb checkpoint (a .npz archive "
                    f"written by a solver's save()) or is damaged: {reason}.")


def field_error(path, name, problem):
  """The ValueError for a bad field of a checkpoint."""
  return ValueError(f"{path}: checkpoint field {name!r} {problem}.")


class CheckpointFile:
  """An open checkpoint: `meta` (checked) and `tables` (read on access).

  Use as a context manager, or call `close()`.

  Raises:
    OSError: the file cannot be opened.
    ValueError: anything else (not an archive, a damaged member, a bad
      meta field); one line naming the file.
  """

  def __init__(self, path):
    self.path = os.fspath(path)
    self._file = open(self.path, "rb")  # pylint: disable=consider-using-with
    try:
      self._zip = self._guard("the archive", lambda: zipfile.ZipFile(
          self._file))
      self._members = {}
      for info in self._guard("the archive", self._zip.infolist):
        name = info.filename
        if not name.endswith(".npy") or name[:-4] in self._members:
          raise foreign(self.path, f"unexpected member {name!r}")
        if info.compress_type != zipfile.ZIP_STORED:
          raise foreign(self.path, f"member {name!r} is compressed (save() "
                        "stores members uncompressed)")
        self._members[name[:-4]] = info
      self.meta = check_meta(self._read_meta(), self.path)
      self.tables = _Tables(self)
    except BaseException:
      self.close()
      raise

  def __enter__(self):
    return self

  def __exit__(self, *exc):
    self.close()

  def close(self):
    self._file.close()

  def _guard(self, what, read):
    """`read()`, any exception of the zip or npy readers as a ValueError."""
    try:
      return read()
    except ValueError as e:
      if str(e).startswith(self.path):
        raise
      raise foreign(self.path, f"{what} is unreadable ({_reason(e)})") from None
    except Exception as e:  # pylint: disable=broad-except
      raise foreign(self.path, f"{what} is unreadable ({_reason(e)})") from None

  def _read_meta(self):
    if "meta" not in self._members:
      raise foreign(self.path, "the archive has no 'meta' member (members: "
                    f"{', '.join(self._members) or 'none'})")
    shape, dtype = self.header("meta")
    if (shape != () or dtype.kind != "U"
        or dtype.itemsize > 4 * MAX_META_CHARS):
      raise foreign(self.path, "its 'meta' member is not JSON text")
    text = str(self.array("meta"))
    try:
      return json.loads(text)
    except (ValueError, RecursionError) as e:
      raise foreign(self.path,
                    f"its 'meta' member is not JSON ({_reason(e)})") from None

  def names(self):
    """The members other than meta (the tables)."""
    return [n for n in self._members if n != "meta"]

  def header(self, name):
    """(shape, dtype) a member declares, checked against the bytes the
    archive holds for it, without reading its data."""
    def read():
      f, shape, dtype, _ = self._open(name)
      f.close()
      return shape, dtype
    return self._guard(f"member {name!r}", read)

  def array(self, name):
    """The array of member `name`, read after its header is checked."""
    def read():
      f, shape, dtype, fortran = self._open(name)
      with f:
        out = np.empty(shape[::-1] if fortran else shape, dtype)
        view = memoryview(out.reshape(-1).view(np.uint8))
        done = 0
        while done < len(view):
          got = f.readinto(view[done:])
          if not got:
            raise EOFError(f"{len(view) - done} bytes missing")
          done += got
        if f.read(1):  # Reading to the end also checks the member's CRC.
          raise ValueError("bytes past the declared array")
      return out.T if fortran else out
    return self._guard(f"member {name!r}", read)

  def _open(self, name):
    """(open member, shape, dtype, fortran order), the header checked."""
    info = self._members[name]
    f = self._zip.open(info)
    try:
      version = np.lib.format.read_magic(f)
      if version == (1, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
      elif version == (2, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
      else:
        raise ValueError(f"npy format version {version}")
      if dtype.hasobject or dtype.fields is not None or (
          dtype.kind not in TABLE_KINDS and name != "meta"):
        raise ValueError(f"dtype {dtype} (tables are integers or floats)")
      stored = info.file_size - f.tell()
      declared = int(np.prod(shape, dtype=object)) * dtype.itemsize
      if declared != stored:
        raise ValueError(f"it declares {shape} x {dtype} ({declared:,} "
                         f"bytes) and holds {stored:,} bytes")
    except BaseException:
      f.close()
      raise
    return f, tuple(shape), dtype, fortran


class _Tables(collections.abc.Mapping):
  """The tables of a checkpoint by name; each read when first asked for."""

  def __init__(self, checkpoint):
    self._checkpoint = checkpoint
    self._read = {}

  def header(self, name):
    return self._checkpoint.header(name)

  def __getitem__(self, name):
    if name not in self._read:
      if name not in self._checkpoint.names():
        raise KeyError(name)
      self._read[name] = self._checkpoint.array(name)
    return self._read[name]

  def __iter__(self):
    return iter(self._checkpoint.names())

  def __len__(self):
    return len(self._checkpoint.names())


def _reason(error):
  text = str(error).strip().splitlines()
  return f"{type(error).__name__}: {text[0]}" if text else type(error).__name__


def check_meta(meta, path):
  """`meta` with every field checked (types and ranges); the counts as
  Python ints. ValueError naming the field otherwise."""
  if not isinstance(meta, dict):
    raise foreign(path, f"its 'meta' member is a JSON {type(meta).__name__}, "
                  "not an object")
  if not any(k in meta for k in META_KEYS):
    raise foreign(path, "its 'meta' member does not describe a solver")
  if "format" not in meta:
    raise field_error(path, "format", f"is missing (it must be {FORMAT!r})")
  if meta["format"] != FORMAT:
    raise field_error(path, "format",
                      f"is {meta['format']!r}, not {FORMAT!r}")
  missing = [k for k in META_KEYS if k not in meta]
  if missing:
    raise field_error(path, missing[0], "is missing")
  for name, kind in (("class", str), ("game", str), ("options", dict),
                     ("rng_state", dict)):
    if not isinstance(meta[name], kind):
      raise field_error(path, name, f"must be a JSON "
                        f"{'string' if kind is str else 'object'}, got "
                        f"{_short(meta[name])}")
  if not all(isinstance(k, str) for k in meta["options"]):
    raise field_error(path, "options", "must have string keys")
  checked = dict(meta)
  for name, limit in (("num_iterations", counts.MAX_COUNT),
                      ("nodes_touched", 2**63)):
    try:
      checked[name] = counts.check_count(name, meta[name], 0, limit)
    except ValueError:
      raise field_error(path, name, f"must be an integer in [0, "
                        f"{counts.limit_text(limit)}), got "
                        f"{_short(meta[name])}") from None
  return checked


def _short(value):
  text = repr(value)
  return text if len(text) <= 60 else text[:57] + "..."


def check_values(path, name, values, num_iterations, signed=False):
  """Raises ValueError unless floats are finite, integers >= 0 (unless
  `signed`) and, in ITERATION_TABLES, at most `num_iterations`."""
  if values.dtype.kind == "f":
    if not np.isfinite(values).all():
      raise ValueError(f"{path}: table {name!r} holds non-finite values "
                       "(NaN or infinity).")
    return
  if not signed and values.size and values.min() < 0:
    raise ValueError(f"{path}: table {name!r} holds negative values.")
  if name.lstrip("_") in ITERATION_TABLES and values.size and (
      values.max() > num_iterations):
    raise ValueError(f"{path}: table {name!r} holds iteration numbers past "
                     f"the checkpoint's num_iterations ({num_iterations}).")
