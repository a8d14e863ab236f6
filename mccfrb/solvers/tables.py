"""Growing infoset tables for solvers on native engines (kernels/table.py).

`InfosetTables` allocates the hash table and the row and cell arrays,
grows them (doubling) while they fit in `max_memory`, and reports what
they hold. Past `max_memory` the tables stop growing: infosets not stored
by then play uniform and are not updated (`frozen`), and the solver
counts how often that happened (`dropped`). Tables never pass
`max_memory`, so a long run never takes the process down.
"""

import numpy as np

from mccfrb.kernels import table as table_kernels
from mccfrb.games import tree_size

ROWS = table_kernels.ROWS
CELLS = table_kernels.CELLS
DROPPED = table_kernels.DROPPED

# Per-cell float64 tables of every solver on an engine (regrets, strategy,
# average), per-row int64 tables (start, actions, last average update,
# discount catch-up), per slot a 16-byte key and an 8-byte row.
CELL_TABLES = ("regrets", "strategy", "avg")
ROW_TABLES = ("row_start", "row_actions", "avg_last", "through")
SLOTS_PER_ROW = 2
# What a checkpoint holds (solvers/engine.py).
SAVED = ("keys", "slot_row", "meta") + ROW_TABLES + CELL_TABLES + (
    "baseline", "baseline_count")
INITIAL_ROWS = 1 << 12


def default_max_memory():
  """Half the memory available now (as `max_nodes` defaults for trees)."""
  return tree_size.available_memory() // 2


def check_max_memory(max_memory):
  if max_memory is None:
    return default_max_memory()
  if (isinstance(max_memory, bool) or not isinstance(max_memory, (int, np.integer))
      or max_memory < 1 << 20):
    raise ValueError("max_memory must be a number of bytes >= 2**20 (1 MiB) "
                     f"or None, got {max_memory!r}.")
  return int(max_memory)


class InfosetTables:
  """The hash table and the row and cell tables of one solver.

  Attributes (numpy arrays, replaced when the tables grow):
    keys: uint64[S, 2], slot_row: int64[S], meta: int64[META_SIZE].
    row_start, row_actions, avg_last, through: int64[R].
    regrets, strategy, avg: float64[C].
    baseline: float64[C * baseline_cells_per_cell]; baseline_count:
      int64[R * counts_per_row + C * counts_per_cell].
  """

  def __init__(self, max_moves, max_memory=None, baseline_cells=0,
               counts_per_row=0, counts_per_cell=0, rows=INITIAL_ROWS):
    self.max_moves = int(max_moves)
    self.max_memory = check_max_memory(max_memory)
    self._baseline_cells = baseline_cells
    self._counts_per_row = counts_per_row
    self._counts_per_cell = counts_per_cell
    self.frozen = False
    self.meta = np.zeros(table_kernels.META_SIZE, dtype=np.int64)
    rows = 1 << max(int(rows) - 1, 1).bit_length()
    self._allocate(rows, rows * max(1, self.max_moves // 2))
    self.keys = np.zeros((SLOTS_PER_ROW * rows, 2), dtype=np.uint64)
    self.slot_row = np.full(SLOTS_PER_ROW * rows, -1, dtype=np.int64)

  def _allocate(self, rows, cells):
    for name in ROW_TABLES:
      setattr(self, name, _resized(getattr(self, name, None), rows, np.int64))
    for name in CELL_TABLES:
      setattr(self, name, _resized(getattr(self, name, None), cells,
                                   np.float64))
    self.baseline = _resized(getattr(self, "baseline", None),
                             self._baseline_cells * cells, np.float64)
    counts = self._counts_per_row * rows + self._counts_per_cell * cells
    self.baseline_count = _resized(getattr(self, "baseline_count", None),
                                   counts, np.int64)

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
    return sum(getattr(self, name).nbytes for name in (
        ROW_TABLES + CELL_TABLES + ("keys", "slot_row", "baseline",
                                    "baseline_count")))

  def bytes_after_growth(self, rows, cells):
    per_row = 8 * len(ROW_TABLES) + 24 * SLOTS_PER_ROW + 8 * self._counts_per_row
    per_cell = 8 * (len(CELL_TABLES) + self._baseline_cells
                    + self._counts_per_cell)
    return rows * per_row + cells * per_cell

  def grow(self, margin_rows, margin_cells):
    """Doubles what is short of room for `margin_*` more rows and cells;
    returns False (and freezes the tables) if that would pass max_memory."""
    rows = len(self.row_start)
    cells = len(self.regrets)
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
      keys = np.zeros((SLOTS_PER_ROW * new_rows, 2), dtype=np.uint64)
      slot_row = np.full(SLOTS_PER_ROW * new_rows, -1, dtype=np.int64)
      table_kernels.rehash(self.keys, self.slot_row, keys, slot_row)
      self.keys, self.slot_row = keys, slot_row
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


def _resized(old, size, dtype):
  """A zero array of `size` holding `old`'s entries at the front."""
  new = np.zeros(size, dtype=dtype)
  if old is not None:
    n = min(len(old), size)
    new[:n] = old[:n]
  return new
