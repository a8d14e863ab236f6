"""`HashedTable`: rows found by a 128-bit key, in a compact arena (Python side).

The layout and the kernels' functions are in tables/hashed.py. This side
validates, reserves the arena, grows the index under `max_memory`, and
reads and writes rows from Python (policies, tests, checkpoints).

Memory: the arena is reserved once as virtual memory of `max_memory` bytes
(an anonymous memory map, which the OS commits page by page as rows are
written), so it is never copied; the index (8 bytes a slot, at most 3/4
full) doubles when it must, and `grow` admits a doubling only when the
old index, the new one and the arena in use fit in `max_memory` together.
At `max_memory` the table stops growing (`frozen`): infosets not stored by
then play uniform and are not updated; nothing is allocated past it.
"""

import contextlib
import mmap
import os

import numpy as np

from mccfrb import counts
from mccfrb.games import tree_size
from mccfrb.tables import hashed

PRECISIONS = {"float64": np.float64, "float32": np.float32}
INITIAL_SLOTS = 1 << 12
# Linux's MAP_NORESERVE (Python 3.11's mmap does not name it): the map is
# not counted against the overcommit heuristic, pages are committed on
# first write.
_MAP_NORESERVE = getattr(mmap, "MAP_NORESERVE", 0x4000)


def default_max_memory():
  """Half the memory available now (as `max_nodes` defaults for trees)."""
  return tree_size.available_memory() // 2


# The least max_memory a table takes.
MIN_MEMORY = 1 << 20


def check_max_memory(max_memory):
  if max_memory is None:
    return default_max_memory()
  return counts.check_count("max_memory", max_memory, MIN_MEMORY, 2**62,
                            what="a number of bytes >= 2**20 (1 MiB)")


def check_precision(precision):
  """The numpy dtype of a precision name.

  Raises:
    ValueError: not one of PRECISIONS.
  """
  if not isinstance(precision, str) or precision not in PRECISIONS:
    raise ValueError(f"precision must be one of {sorted(PRECISIONS)}, got "
                     f"{precision!r}.")
  return PRECISIONS[precision]


# Ask Linux for transparent huge pages on the arena (madvise): new rows
# fault in 2 MB at a time and the TLB covers more of a large arena
# (goofspiel 6, 2 M iterations from empty tables: 0.87x the wall time of
# 4 KB pages; BUILD_NOTES, "Compact tables"). A no-op where the kernel
# has them off; MCCFRB_HUGE_PAGES=0 in the environment declines them.
HUGE_PAGES = os.environ.get("MCCFRB_HUGE_PAGES", "1") != "0"


def _reserve_words(count):
  """int64[count] of zeros in an anonymous private map, committed page by
  page as it is written (and its map, which must outlive the array)."""
  size = 8 * int(count)
  flags = mmap.MAP_PRIVATE | getattr(mmap, "MAP_ANONYMOUS", 0x20)
  try:
    region = mmap.mmap(-1, size, flags=flags | _MAP_NORESERVE)
  except (OSError, ValueError):
    region = mmap.mmap(-1, size, flags=flags)
  if HUGE_PAGES and hasattr(mmap, "MADV_HUGEPAGE"):
    # Transparent huge pages where the kernel allows them; a kernel that
    # refuses the advice (EINVAL) leaves 4 KB pages, which work the same.
    with contextlib.suppress(OSError):
      region.madvise(mmap.MADV_HUGEPAGE)
  return np.frombuffer(region, dtype=np.int64), region


class HashedTable:
  """Rows keyed by (h1, h2), with named header words and cell fields.

  Args:
    max_moves: the widest row (the game's largest number of moves).
    fields: names of the cell fields, e.g. ("regret", "avg").
    header: names of header words beyond the key and the width/stamp word.
    precision: "float64" or "float32", the cells' type.
    max_memory: bytes the table may take, index and arena (None: half the
      memory available now).
    slots: the index's first size (a power of 2).
    init: a field set to 1 / c in every new row (a stored strategy), or None.

  Attributes:
    index, meta, words, cells, layout: the kernels' arrays (`args()`, a
      `hashed.Hashed`); the index is replaced when it grows.
    frozen: the table stopped growing at max_memory.
  """

  def __init__(self, max_moves, fields, header=(), precision="float64",
               max_memory=None, slots=INITIAL_SLOTS, init=None):
    self.max_moves = int(max_moves)
    if not 1 <= self.max_moves <= hashed.WIDTH_MASK:
      raise ValueError(f"rows hold 1 to {hashed.WIDTH_MASK} actions; the "
                       f"game has up to {self.max_moves}.")
    self.fields = tuple(fields)
    self.header_names = ("key", "info") + tuple(header)
    self.precision = precision
    self.dtype = np.dtype(check_precision(precision))
    self.max_memory = check_max_memory(max_memory)
    self.per_word = 8 // self.dtype.itemsize
    self.layout = np.array(
        [len(self.header_names), len(self.fields), self.per_word,
         self.fields.index(init) if init is not None else -1],
        dtype=np.int64)
    self.meta = np.zeros(hashed.META_SIZE, dtype=np.int64)
    self.meta[hashed.TOP] = 1
    self._capacity = self.max_memory // 8
    self.words, self._region = _reserve_words(self._capacity)
    self.cells = self.words.view(self.dtype)
    self.frozen = False
    slots = 1 << max(int(slots) - 1, 1).bit_length()
    self.index = np.zeros(slots, dtype=np.uint64)
    self._set_limit()

  # ---------------------------------------------------------------- kernels

  def args(self):
    """The arrays a kernel takes (`hashed.Hashed`)."""
    return hashed.Hashed(self.index, self.meta, self.words, self.cells,
                         self.layout)

  def field_number(self, name):
    return self.fields.index(name)

  def header_number(self, name):
    return self.header_names.index(name)

  def row_words(self, width):
    header, fields, per_word = (int(x) for x in self.layout[:3])
    return header + (fields * width + per_word - 1) // per_word

  # ----------------------------------------------------------------- growth

  def _set_limit(self):
    """meta[LIMIT]: the arena words max_memory leaves beside the index."""
    self.meta[hashed.LIMIT] = min(
        self._capacity, (self.max_memory - self.index.nbytes) // 8)

  def has_room(self, margin_rows, margin_words):
    return bool(hashed.has_room(self.meta, self.index, margin_rows,
                                margin_words))

  def grow(self, margin_rows, margin_words):
    """Makes room for `margin_rows` more rows of `margin_words` words in
    all: doubles the index while it would pass 3/4 full. Returns False
    (and freezes the table) if that does not fit in max_memory, counting
    the old and the new index together while it doubles."""
    need_rows = self.num_rows + int(margin_rows)
    need_words = int(self.meta[hashed.TOP]) + int(margin_words)
    size = len(self.index)
    new_size = size
    while hashed.LOAD_DEN * need_rows > hashed.LOAD_NUM * new_size:
      new_size *= 2
    peak = 8 * (size + new_size if new_size != size else size)
    if (8 * need_words + peak > self.max_memory
        or 8 * need_words + 8 * new_size > self.max_memory
        or need_words > self._capacity):
      self.frozen = True
      return False
    if new_size != size:
      new_index = np.zeros(new_size, dtype=np.uint64)
      hashed.rehash(self.index, self.words, new_index)
      self.index = new_index
      self._set_limit()
    return True

  # ------------------------------------------------------------ Python side

  def find(self, h1, h2):
    """The offset of the row of key (h1, h2), or -1."""
    return int(hashed.find(self.index, self.words, np.uint64(h1),
                           np.uint64(h2)))

  def insert(self, h1, h2, width):
    """The row of key (h1, h2), inserted with `width` cells per field if
    absent (growing the table).

    Raises:
      MemoryError: the row does not fit in max_memory.
      ValueError: the key has a row of another width (a collision).
    """
    if not self.grow(1, self.row_words(width)):
      raise MemoryError(f"the table reached max_memory={self.max_memory}.")
    o, _ = hashed.python_row_of(self.args(), np.uint64(h1), np.uint64(h2),
                                int(width))
    if o < 0:
      raise ValueError(f"key ({h1}, {h2}) has a row of another width than "
                       f"{width} (a hash collision).")
    return int(o)

  def width(self, o):
    return int(self.words[o + hashed.H_INFO] & hashed.WIDTH_MASK)

  def stamp(self, o):
    """The row's stamp (optimistic averaging's last iteration)."""
    return int(self.words[o + hashed.H_INFO] >> hashed.WIDTH_BITS)

  def set_stamp(self, o, t):
    self.words[o + hashed.H_INFO] = (int(t) << hashed.WIDTH_BITS) | self.width(o)

  def header(self, o, name):
    """A named header word of row o (an int64 view of one element)."""
    return self.words[o + self.header_number(name):][:1]

  def field(self, o, name):
    """The cells of field `name` of row o: a writable view."""
    c = self.width(o)
    base = (o + int(self.layout[hashed.L_HEADER])) * self.per_word
    f = self.field_number(name)
    return self.cells[base + f * c:base + (f + 1) * c]

  def offsets(self):
    """Every row's offset, in arena order."""
    return hashed.offsets(self.index)

  @property
  def num_rows(self):
    """Rows (infosets) stored."""
    return int(self.meta[hashed.ROWS])

  @property
  def num_cells(self):
    """Cells per field stored (infoset-actions)."""
    return int(self.meta[hashed.CELLS])

  @property
  def dropped(self):
    """Lookups of infosets not stored once the table stopped growing."""
    return int(self.meta[hashed.DROPPED])

  @property
  def collisions(self):
    """Lookups that met a row of their key with another width."""
    return int(self.meta[hashed.COLLISIONS])

  @property
  def lost_fraction(self):
    """float32 cells: the fraction of the magnitude of the additions made
    to cells that rounding lost (0.0 at float64, or before any update)."""
    masses = self.meta.view(np.float64)
    total = masses[hashed.MASS]
    return float(masses[hashed.LOST] / total) if total > 0 else 0.0

  @property
  def overflowed(self):
    """float32 cells: updates that left a non-finite value."""
    return int(self.meta[hashed.OVERFLOW])

  def nbytes(self):
    """Bytes in use: the index and the arena's words up to its top."""
    return self.index.nbytes + 8 * int(self.meta[hashed.TOP])

  # ------------------------------------------------------------ checkpoints

  def state(self):
    """The arrays a checkpoint holds: meta, index, the arena in use, and
    the layout."""
    return dict(meta=self.meta, index=self.index,
                arena=self.words[:int(self.meta[hashed.TOP])],
                layout=self.layout)

  def restore(self, meta, index, arena, layout):
    """Takes a checkpoint's arrays (copies the arena into this table's).

    Raises:
      ValueError: they do not fit this table (another layout or precision,
        sizes that disagree, rows outside the arena, non-finite cells).
    """
    for name, value, dtype in (("meta", meta, np.int64),
                               ("index", index, np.uint64),
                               ("arena", arena, np.int64),
                               ("layout", layout, np.int64)):
      if (not isinstance(value, np.ndarray) or value.dtype != dtype
          or value.ndim != 1):
        raise ValueError(f"a checkpoint's table {name!r} is not a 1-d "
                         f"{np.dtype(dtype).name} array.")
    if meta.shape != self.meta.shape:
      raise ValueError("a checkpoint's table 'meta' has another size.")
    if not np.array_equal(layout, self.layout):
      saved = ("float32" if layout.size > hashed.L_PER_WORD
               and layout[hashed.L_PER_WORD] == 2 else "float64")
      raise ValueError(
          f"the checkpoint's tables have another layout (cells of "
          f"{saved} with {int(layout[hashed.L_FIELDS])} fields and "
          f"{int(layout[hashed.L_HEADER])} header words) than this solver's "
          f"({self.precision}, {len(self.fields)} fields, "
          f"{len(self.header_names)} header words): load it with the "
          "options it was saved with (precision included).")
    top = int(meta[hashed.TOP])
    size = len(index)
    if (top != len(arena) or top < 1 or size < 2 or size & (size - 1)
        or not 0 <= meta[hashed.ROWS] <= size or top > self._capacity
        or 8 * top + index.nbytes > self.max_memory):
      raise ValueError("a checkpoint's table sizes disagree (meta, index, "
                       "arena) or pass this solver's max_memory.")
    old_top = int(self.meta[hashed.TOP])
    self.words[:top] = arena
    if old_top > top:
      self.words[top:old_top] = 0  # New rows take zero words.
    self.index = np.ascontiguousarray(index)
    self.meta[:] = meta
    self._set_limit()
    self.frozen = False
    self._check_restored()

  def _check_restored(self):
    problem = hashed.check_rows(self.args(), self.max_moves)
    if problem:
      raise ValueError("a checkpoint's table is damaged: " + {
          1: "its index and row count disagree.",
          2: "its rows point outside its arena.",
          3: "its cells hold non-finite values (NaN or infinity).",
      }[problem])
