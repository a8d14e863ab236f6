"""Growing infoset tables for solvers on native engines (kernels/table.py).

`InfosetTables` allocates the hash table and the row and cell arrays,
grows them (doubling) while they fit in `max_memory`, and reports what
they hold. Past `max_memory` the tables stop growing: infosets not stored
by then play uniform and are not updated (`frozen`), and the solver
counts how often that happened (`dropped`). Tables never pass
`max_memory`, so a long run never takes the process down.
"""

import numpy as np

from mccfrb import counts
from mccfrb.kernels import table as table_kernels
from mccfrb.games import tree_size

ROWS = table_kernels.ROWS
CELLS = table_kernels.CELLS
DROPPED = table_kernels.DROPPED

# Three buffers hold the tables, so that what one lookup reads sits
# together (a lookup of a row in tables of hundreds of MB pays a cache miss
# for every separate array it touches):
#   slots int64[S, 3]: per hash slot the 16-byte key and the row;
#   rows int64[R, 4 + counts per row]: per row its first cell, its width,
#     its last averaging iteration and discount stamp (and the thesis
#     baseline's two visit counts);
#   cells float64[C, 3 + baseline cells + counts per cell]: per cell (an
#     infoset-action) its regret, current strategy, average (and baseline
#     values, the learned baseline's visit count as int64 bits).
# The named tables the kernels take (`regrets`, `keys`, ...) are strided
# views of columns of these buffers.
CELL_TABLES = ("regrets", "strategy", "avg")
ROW_TABLES = ("row_start", "row_actions", "avg_last", "through")
# Tables of baseline values only (kept per history: `strategy_cells=False`)
# have the first two row tables and no strategy cells.
VALUE_ROW_TABLES = ROW_TABLES[:2]
SLOTS_PER_ROW = 2
SLOT_WORDS = 3
BUFFERS = ("slots", "rows", "cells")
# What a checkpoint holds (solvers/engine.py).
SAVED = ("meta",) + BUFFERS
INITIAL_ROWS = 1 << 12
# A 2-d view standing in for an absent baseline table: strided like the
# real ones, so kernels are compiled once for every baseline kind.
_ABSENT_FLOATS = np.zeros((2, 2))[:, :1]
_ABSENT_INTS = np.zeros((2, 2), dtype=np.int64)[:, :1]
_ABSENT_FLOAT_COLUMN = _ABSENT_FLOATS[:, 0]
_ABSENT_INT_COLUMN = _ABSENT_INTS[:, 0]


def default_max_memory():
  """Half the memory available now (as `max_nodes` defaults for trees)."""
  return tree_size.available_memory() // 2


def check_max_memory(max_memory):
  if max_memory is None:
    return default_max_memory()
  return counts.check_count("max_memory", max_memory, 1 << 20, 2**62,
                            what="a number of bytes >= 2**20 (1 MiB)")


class InfosetTables:
  """The hash table and the row and cell tables of one solver.

  Attributes (numpy views of the three buffers, replaced when the tables
  grow):
    keys: uint64[S, 2], slot_row: int64[S], meta: int64[META_SIZE].
    row_start, row_actions, avg_last, through: int64[R].
    regrets, strategy, avg: float64[C].
    baseline: float64[C, baseline_cells]; baseline_count: int64[R, 2] (per
      row, counts_per_row=2) or int64[C, 1] (per cell, counts_per_cell=1).
    With strategy_cells=False (a table of baseline values kept per
    history), regrets, strategy, avg, avg_last and through are absent
    (empty stand-ins).
  """

  def __init__(self, max_moves, max_memory=None, baseline_cells=0,
               counts_per_row=0, counts_per_cell=0, rows=INITIAL_ROWS,
               strategy_cells=True):
    self.max_moves = int(max_moves)
    self._row_tables = ROW_TABLES if strategy_cells else VALUE_ROW_TABLES
    self._cell_tables = CELL_TABLES if strategy_cells else ()
    self.max_memory = check_max_memory(max_memory)
    self._baseline_cells = int(baseline_cells)
    self._counts_per_row = int(counts_per_row)
    self._counts_per_cell = int(counts_per_cell)
    self.frozen = False
    self.meta = np.zeros(table_kernels.META_SIZE, dtype=np.int64)
    rows = 1 << max(int(rows) - 1, 1).bit_length()
    self.slots = self.rows = self.cells = None
    self._allocate(rows, rows * max(1, self.max_moves // 2))
    self._set_slots(_empty_slots(SLOTS_PER_ROW * rows))

  @property
  def row_words(self):
    return len(self._row_tables) + self._counts_per_row

  @property
  def cell_words(self):
    return (len(self._cell_tables) + self._baseline_cells
            + self._counts_per_cell)

  def _allocate(self, rows, cells):
    self.rows = _resized(self.rows, (rows, self.row_words), np.int64)
    self.cells = _resized(self.cells, (cells, self.cell_words), np.float64)
    self._set_views()

  def _set_slots(self, slots):
    self.slots = slots
    self.keys = slots.view(np.uint64)[:, :2]
    self.slot_row = slots[:, 2]

  def _set_views(self):
    for name in ROW_TABLES:
      setattr(self, name, self.rows[:, self._row_tables.index(name)]
              if name in self._row_tables else _ABSENT_INT_COLUMN)
    for name in CELL_TABLES:
      setattr(self, name, self.cells[:, self._cell_tables.index(name)]
              if name in self._cell_tables else _ABSENT_FLOAT_COLUMN)
    first = len(self._cell_tables)
    self.baseline = (self.cells[:, first:first + self._baseline_cells]
                     if self._baseline_cells else _ABSENT_FLOATS)
    if self._counts_per_cell:
      column = first + self._baseline_cells
      self.baseline_count = self.cells.view(np.int64)[:, column:column + 1]
    elif self._counts_per_row:
      self.baseline_count = self.rows[:, len(self._row_tables):]
    else:
      self.baseline_count = _ABSENT_INTS

  def restore(self, slots, rows, cells):
    """Takes a checkpoint's buffers as the tables (no copy).

    Raises:
      ValueError: a buffer has another type or shape than these tables'.
    """
    for name, value, words in (("slots", slots, SLOT_WORDS),
                               ("rows", rows, self.row_words),
                               ("cells", cells, self.cell_words)):
      dtype = np.float64 if name == "cells" else np.int64
      if (not isinstance(value, np.ndarray) or value.dtype != dtype
          or value.ndim != 2 or value.shape[1] != words):
        raise ValueError(f"an engine checkpoint holds the table {name!r} "
                         f"with another type or shape than {dtype.__name__}"
                         f"[n, {words}].")
    self._set_slots(np.ascontiguousarray(slots))
    self.rows = np.ascontiguousarray(rows)
    self.cells = np.ascontiguousarray(cells)
    self._set_views()
    self._check_restored()

  def _check_restored(self):
    """ValueError unless restored tables are consistent (the kernels index
    with them unchecked): the counts in `meta` within the buffers, every
    used row's cells within the used cells, every slot's row a used row or
    -1, the values of the used cells finite."""
    rows, cells = self.num_rows, self.num_cells
    if not (0 <= rows <= len(self.rows) and 0 <= cells <= len(self.cells)
            and self.dropped >= 0
            and len(self.slots) == SLOTS_PER_ROW * len(self.rows)):
      raise ValueError("an engine checkpoint's table 'meta' does not fit its "
                       "buffers.")
    start, width = self.row_start[:rows], self.row_actions[:rows]
    if rows and (start.min() < 0 or width.min() < 1
                 or width.max() > self.max_moves
                 or (start + width).max() > cells):
      raise ValueError("an engine checkpoint's rows point outside its cells.")
    if len(self.slot_row) and (self.slot_row.min() < -1
                               or self.slot_row.max() >= rows):
      raise ValueError("an engine checkpoint's hash slots point outside its "
                       "rows.")
    floats = self.cells[:cells, :len(self._cell_tables) + self._baseline_cells]
    if not np.isfinite(floats).all():
      raise ValueError("an engine checkpoint's cells hold non-finite values "
                       "(NaN or infinity).")

  @property
  def num_rows(self):
    """Infosets stored."""
    return int(self.meta[ROWS])

  @property
  def num_cells(self):
    """Infoset-actions stored."""
    return int(self.meta[CELLS])

  @property
  def dropped(self):
    """Visits to infosets that were not stored (the tables were full)."""
    return int(self.meta[DROPPED])

  def nbytes(self):
    """Bytes the tables hold (allocated, not only used)."""
    return self.slots.nbytes + self.rows.nbytes + self.cells.nbytes

  def bytes_after_growth(self, rows, cells):
    per_row = 8 * (self.row_words + SLOT_WORDS * SLOTS_PER_ROW)
    return rows * per_row + cells * 8 * self.cell_words

  def grow(self, margin_rows, margin_cells):
    """Doubles what is short of room for `margin_*` more rows and cells;
    returns False (and freezes the tables) if that would pass max_memory."""
    rows = len(self.rows)
    cells = len(self.cells)
    need_rows = self.num_rows + margin_rows
    need_cells = self.num_cells + margin_cells
    new_rows, new_cells = rows, cells
    while new_rows < need_rows or SLOTS_PER_ROW * new_rows < 2 * need_rows:
      new_rows *= 2
    while new_cells < need_cells:
      new_cells *= 2
    if self.bytes_after_growth(new_rows, new_cells) > self.max_memory:
      self.frozen = True
      return False
    if new_cells != cells or new_rows != rows:
      self._allocate(new_rows, new_cells)
    if new_rows != rows:
      old_keys, old_slot_row = self.keys, self.slot_row
      self._set_slots(_empty_slots(SLOTS_PER_ROW * new_rows))
      table_kernels.rehash(old_keys, old_slot_row, self.keys, self.slot_row)
    return True

  def insert(self, h1, h2, count):
    """The first cell of the row of infoset key (h1, h2) with `count`
    actions, inserted (growing the tables) if absent, from Python.

    Raises:
      MemoryError: the row does not fit in max_memory.
    """
    if not self.grow(1, count):
      raise MemoryError(f"the tables reached max_memory={self.max_memory}.")
    r, _ = table_kernels.row_of(self.keys, self.slot_row, self.meta,
                                self.row_start, self.row_actions,
                                np.uint64(h1), np.uint64(h2), count, True)
    return int(self.row_start[r])

  def find(self, h1, h2):
    """The row of an infoset key, or -1."""
    found = table_kernels.find_row(self.keys, self.slot_row, np.uint64(h1),
                                   np.uint64(h2))
    return int(found) if found >= 0 else -1

  def lookup_args(self):
    """(keys, slot_row, row_start, row_actions): what a kernel needs to find
    rows."""
    return self.keys, self.slot_row, self.row_start, self.row_actions


def _empty_slots(count):
  slots = np.zeros((count, SLOT_WORDS), dtype=np.int64)
  slots[:, 2] = -1
  return slots


def _resized(old, shape, dtype):
  """A zero array of `shape` holding `old`'s rows at the front."""
  new = np.zeros(shape, dtype=dtype)
  if old is not None:
    n = min(len(old), shape[0])
    new[:n] = old[:n]
  return new
