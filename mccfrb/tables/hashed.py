"""Hashed rows, laid out for the cache: the kernels' side of `HashedTable`.

A game played by an engine (or a tree grown as it is sampled) has no
numbering of its infosets in advance: an infoset gets a row the first time
an episode reaches it. Rows live in an *arena*, one int64 array of words
appended to and never moved, each row one contiguous run of words:

  word 0        the key's first half, h1 (never 0)
  word 1        the row's width c (its legal actions, low 16 bits) and its
                stamp (the bits above: optimistic averaging's last
                iteration)
  words 2..H-1  further header words a solver asks for (DCFR's discount
                stamp, the thesis baseline's visit counts, ...)
  then          the cells: F fields of c values each, field-major (field f
                of action j at cell (o + H) P + f c + j, P cells per word:
                1 at float64, 2 at float32), in the table's precision.

So a row's key, header and cells sit together: one or two cache lines for
the rows of goofspiel (2-9 actions, 4 fields). A row is found through
the *index*, an open-addressing hash table of uint64 entries (linear
probing, at most LOAD_NUM / LOAD_DEN full):

  entry = (h2 >> 40) << 40 | o      the key's second half's top 24 bits
                                    (the tag) and the row's offset o
                                    (words, 40 bits: 8 TB of arena); 0 is
                                    an empty slot (o >= 1)

A lookup probes from slot h1 mod S, compares tags in the index (eight
entries per cache line), and reads the row only on a tag match, where it
compares h1: one miss for the slot, one for the row. A key matches when
its 64 bits of h1 and 24 bits of h2 do: two distinct infosets share a row
only if both agree (probability 2^-88 per pair: about 1.6e-9 over 10^9
infosets), and a row whose width differs from the state's number of moves
is a *detected* collision (counted in meta[COLLISIONS], played as an
unstored infoset).

Fresh arena words are zero (the arena is an anonymous memory map), so a
new row costs its two header words: zero regrets, averages and
baselines are zero bits. A row is published by one compare-and-swap on its
slot after its header is written, so Hogwild workers insert concurrently
and a reader never sees a half-written row; a worker whose swap loses to
an insert of the same key leaves its reserved words unused.

The index grows by doubling between kernel calls (`rehash`); the arena is
reserved once (virtual memory, committed by the OS as rows are written)
and never copied. meta[LIMIT] is the arena words max_memory allows beside
the index; the Python side (`HashedTable.grow`) keeps index and arena,
and the index's transient copy while it doubles, within max_memory.
"""

from typing import NamedTuple

import numpy as np
from numba import njit

from mccfrb.tables.atomics import atomic_add
from mccfrb.tables.atomics import atomic_cas
from mccfrb.tables.atomics import borrow
from mccfrb.tables.atomics import prefetch

# meta (int64[META_SIZE]).
ROWS = 0  # Rows stored.
TOP = 1  # Arena words in use (word 0 is never a row).
DROPPED = 2  # Lookups of infosets not stored once the table stopped growing.
STOP = 3  # A kernel found the table short of room (kernels set it).
COLLISIONS = 4  # Lookups that met a row of their key with another width.
CELLS = 5  # Cells of the stored rows (the sum of their widths).
LIMIT = 6  # Arena words the rows may use (max_memory beside the index).
UPDATES = 7  # Cell updates counted (float32 cells).
OVERFLOW = 8  # Cell updates that left a non-finite value (float32 cells).
LOST = 9  # float64 bits: the magnitude of additions rounding lost (float32).
MASS = 10  # float64 bits: the magnitude of every addition counted.
META_SIZE = 12

# layout (int64[LAYOUT_SIZE]).
L_HEADER = 0  # Header words per row (>= 2).
L_FIELDS = 1  # Cell fields per row.
L_PER_WORD = 2  # Cells per word: 1 (float64) or 2 (float32).
L_INIT = 3  # Field set to 1 / c in a new row (a stored strategy), or -1.
LAYOUT_SIZE = 4

H_KEY = 0
H_INFO = 1
# The key of a row whose reservation lost its slot to another worker's
# insert of the same key: never published, skipped by `next_row`. Real
# keys are never 0 (an empty word) nor DEAD (`_key1`).
DEAD = -1
WIDTH_BITS = 16
WIDTH_MASK = (1 << WIDTH_BITS) - 1
OFFSET_BITS = 40
OFFSET_MASK = (1 << OFFSET_BITS) - 1
# The index is kept at most LOAD_NUM / LOAD_DEN full.
LOAD_NUM = 3
LOAD_DEN = 4
# A Hogwild worker takes arena words from a block of its own and counts
# its new rows and cells there, adding them to meta's counts every
# BLOCK_FLUSH rows (`flush_block`), instead of atomic adds on meta's
# shared cache line per row (block: int64[BLOCK_SIZE] = next word, end
# word, words per block, rows and cells not yet counted in meta). meta's
# counts may so lag by BLOCK_FLUSH rows per worker: room checks add that.
BLOCK_SIZE = 5
BLOCK_FLUSH = 64


class Hashed(NamedTuple):
  """A table's arrays as kernels take them (`HashedTable.args`), read by
  name: the index (uint64[S]), meta (int64[META_SIZE]), the arena's words
  (int64) and the same memory as cells (float64 or float32), and the
  layout (int64[LAYOUT_SIZE]). The functions below that take the arrays
  one by one are the primitives the kernels call with these fields."""
  index: np.ndarray
  meta: np.ndarray
  words: np.ndarray
  cells: np.ndarray
  layout: np.ndarray


@njit(cache=True, inline="always")
def row_words(c, header, fields, per_word):
  """Words of a row of width c."""
  return header + (fields * c + per_word - 1) // per_word


@njit(cache=True, inline="always")
def layout_row_words(layout, c):
  """Words of a row of width c in a table of `layout`."""
  return row_words(c, layout[L_HEADER], layout[L_FIELDS], layout[L_PER_WORD])


@njit(cache=True, inline="always")
def first_cell(o, header, per_word):
  """Index in `cells` of the row's field 0, action 0."""
  return (o + header) * per_word


@njit(cache=True, inline="always")
def width_of(words, o):
  return words[o + H_INFO] & WIDTH_MASK


@njit(cache=True, inline="always")
def stamp_of(words, o):
  return words[o + H_INFO] >> WIDTH_BITS


@njit(cache=True, inline="always")
def set_stamp(words, o, t):
  words[o + H_INFO] = (np.int64(t) << WIDTH_BITS) | (
      words[o + H_INFO] & WIDTH_MASK)


@njit(cache=True, inline="always")
def _key1(h1):
  """h1 as stored: never 0 (an empty word) nor DEAD's bits."""
  if h1 == 0:
    return np.uint64(1)
  if h1 == np.uint64(0xFFFFFFFFFFFFFFFF):
    return np.uint64(0xFFFFFFFFFFFFFFFE)
  return h1


@njit(cache=True, inline="always")
def next_row(words, w, top, header, fields, per_word):
  """The first row at or after arena word w (< top if any): words of a
  worker's block left unused are 0 and skipped one by one, a DEAD row by
  its width. Walks the arena in order: `for` rows, call with the word
  after the last row (`row_words`)."""
  while w < top:
    k = words[w]
    if k == 0:
      w += 1
    elif k == DEAD:
      w += row_words(words[w + H_INFO] & WIDTH_MASK, header, fields,
                     per_word)
    else:
      return w
  return top


@njit(cache=True, inline="always")
def walk(tab):
  """The start of a walk of a table's arena in row order: (words, cells,
  header, fields, per_word, top, the first row's offset); the next row
  after row o of width c is `next_row(words, o + row_words(c, header,
  fields, per_word), top, header, fields, per_word)`."""
  words = tab.words
  header = tab.layout[L_HEADER]
  fields = tab.layout[L_FIELDS]
  per_word = tab.layout[L_PER_WORD]
  top = tab.meta[TOP]
  return (words, tab.cells, header, fields, per_word, top,
          next_row(words, 1, top, header, fields, per_word))


@njit(cache=True, inline="always")
def borrowed(tab):
  """A table's `Hashed` arrays, borrowed (atomics.borrow: no reference
  counts in the loops that use them)."""
  return Hashed(borrow(tab.index), borrow(tab.meta), borrow(tab.words),
                borrow(tab.cells), borrow(tab.layout))


@njit(cache=True, inline="always")
def candidate(index, h2, s):
  """The first slot from s on (probing on) that is empty or holds an entry
  with h2's tag: where a lookup of key (h1, h2) must read a row (or
  insert). Reads only the index: a kernel can prefetch the row it names
  before `row_at` reads it."""
  mask = np.uint64(index.shape[0] - 1)
  tag = h2 >> np.uint64(OFFSET_BITS)
  s = np.uint64(s) & mask
  while True:
    e = index[s]
    if e == 0 or e >> np.uint64(OFFSET_BITS) == tag:
      return np.int64(s)
    s = (s + np.uint64(1)) & mask


@njit(cache=True, inline="always")
def home_slot(index, h1):
  """The slot where the probe of key h1 starts."""
  return np.int64(_key1(h1) & np.uint64(index.shape[0] - 1))


@njit(cache=True, inline="always")
def locate(index, words, h1, h2):
  """The row of key (h1, h2): its offset o >= 1, or -1 - s with s the
  empty slot where the key would go. h1 must not be 0 (`_key1`)."""
  mask = np.uint64(index.shape[0] - 1)
  tag = h2 >> np.uint64(OFFSET_BITS)
  key = np.int64(h1)
  s = h1 & mask
  while True:
    e = index[s]
    if e == 0:
      return -1 - np.int64(s)
    if e >> np.uint64(OFFSET_BITS) == tag:
      o = np.int64(e & np.uint64(OFFSET_MASK))
      if words[o + H_KEY] == key:
        return o
    s = (s + np.uint64(1)) & mask


@njit(cache=True)
def find(index, words, h1, h2):
  """The offset of key (h1, h2)'s row, or -1 (no row)."""
  o = locate(index, words, _key1(h1), h2)
  return o if o > 0 else np.int64(-1)


@njit(cache=True, inline="always")
def find_at(index, words, h1, h2, s):
  """`find` from slot s, a `candidate` of the key (the probe of the slots
  before it is done): the row's offset, or -1. Reads only."""
  key = np.int64(_key1(h1))
  mask = np.uint64(index.shape[0] - 1)
  while True:
    e = index[s]
    if e == 0:
      return np.int64(-1)
    o = np.int64(e & np.uint64(OFFSET_MASK))
    if words[o + H_KEY] == key:
      return o
    s = candidate(index, h2, (np.uint64(s) + np.uint64(1)) & mask)


@njit(cache=True, inline="always")
def row_hint(index, words, s, widest):
  """Prefetches the row index slot s names, if any (`widest` words from its
  first); returns whether it names one."""
  e_at = index[s]
  if e_at == 0:
    return False
  o = np.int64(e_at & np.uint64(OFFSET_MASK))
  prefetch(words, o)
  prefetch(words, o + widest - 1)
  return True


@njit(cache=True, inline="always")
def slot_hint(index, h1):
  """Prefetches the index slot of key h1 (a lookup soon to come)."""
  prefetch(index, np.int64(_key1(h1) & np.uint64(index.shape[0] - 1)))


@njit(cache=True, inline="always")
def _reserve(meta, block, n, atomic):
  """The first of n fresh arena words (from the worker's block if `block`
  is not empty)."""
  if block.shape[0] == 0:
    if atomic:
      return atomic_add(meta, TOP, n)
    o = meta[TOP]
    meta[TOP] = o + n
    return o
  if block[0] + n > block[1]:
    block[0] = atomic_add(meta, TOP, block[2])
    block[1] = block[0] + block[2]
  o = block[0]
  block[0] = o + n
  return o


@njit(cache=True, inline="always")
def row_of(tab, h1, h2, c, allow_insert, block, atomic):
  """The row of key (h1, h2) for a state with c moves.

  In table `tab` (`Hashed`), a new row (header written, its
  `layout[L_INIT]` field uniform, the rest zero) if the key has none and
  `allow_insert`; else -1: the infoset is not stored (meta[DROPPED] + 1),
  or its key matched a row of another width (a detected collision,
  meta[COLLISIONS] + 1). `atomic`: other workers insert at the same time
  (Hogwild).

  Returns:
    (offset o or -1, True if the row is new).
  """
  return row_at(tab, h1, h2, c, allow_insert, block, atomic,
                candidate(tab.index, h2, home_slot(tab.index, h1)))


@njit(cache=True, inline="always")
def row_at(tab, h1, h2, c, allow_insert, block, atomic, s):
  """`row_of` from slot s, a `candidate` of the key (the probe of the slots
  before it is done)."""
  index, meta, words = tab.index, tab.meta, tab.words
  h1 = _key1(h1)
  key = np.int64(h1)
  mask = np.uint64(index.shape[0] - 1)
  while True:
    e = index[s]
    if e == 0:
      break
    o = np.int64(e & np.uint64(OFFSET_MASK))
    if words[o + H_KEY] == key:
      if (words[o + H_INFO] & WIDTH_MASK) != c:
        if atomic:
          atomic_add(meta, COLLISIONS, 1)
        else:
          meta[COLLISIONS] += 1
        return np.int64(-1), False
      return o, False
    s = candidate(index, h2, (np.uint64(s) + np.uint64(1)) & mask)
  if not allow_insert:
    if atomic:
      atomic_add(meta, DROPPED, 1)
    else:
      meta[DROPPED] += 1
    return np.int64(-1), False
  if atomic:
    return _insert_atomic(tab, h1, h2, c, block, s)
  o = _new_row(tab, h1, c, block, False)
  index[s] = _entry(h2, o)
  meta[ROWS] += 1
  meta[CELLS] += c
  return o, True


@njit(cache=True, inline="always")
def _new_row(tab, h1, c, block, atomic):
  """A fresh row of width c for key h1 (as stored): its header written,
  its `layout[L_INIT]` field uniform."""
  words, cells, layout = tab.words, tab.cells, tab.layout
  header = layout[L_HEADER]
  per_word = layout[L_PER_WORD]
  width = row_words(c, header, layout[L_FIELDS], per_word)
  o = _reserve(tab.meta, block, width, atomic)
  words[o + H_KEY] = np.int64(h1)
  words[o + H_INFO] = c
  init = layout[L_INIT]
  if init >= 0:
    base = first_cell(o, header, per_word) + init * c
    for j in range(c):
      cells[base + j] = 1.0 / c
  return o


@njit(cache=True, inline="always")
def _entry(h2, o):
  """The index entry of the row at offset o with key (., h2)."""
  return ((h2 >> np.uint64(OFFSET_BITS)) << np.uint64(OFFSET_BITS)) | (
      np.uint64(o))


@njit(cache=True)
def _insert_atomic(tab, h1, h2, c, block, s):
  """`row_at`'s insert of key (h1 as stored, h2) at the empty slot s while
  other workers insert too (Hogwild): a call, not inlined, so that the
  kernels do not type it at every lookup (first-use compile time); it
  runs once per row."""
  index, meta, words = tab.index, tab.meta, tab.words
  o = _new_row(tab, h1, c, block, True)
  entry = _entry(h2, o)
  while True:
    if atomic_cas(index, s, np.uint64(0), entry) == 0:
      if block.shape[0] == 0:
        atomic_add(meta, ROWS, 1)
        atomic_add(meta, CELLS, c)
      else:
        block[3] += 1
        block[4] += c
        if block[3] >= BLOCK_FLUSH:
          flush_block(meta, block)
      return o, True
    # Another worker took the slot: probe on from it.
    found = locate(index, words, h1, h2)
    if found > 0:
      words[o + H_KEY] = DEAD  # Our reserved row stays unused.
      if (words[found + H_INFO] & WIDTH_MASK) != c:
        atomic_add(meta, COLLISIONS, 1)
        return np.int64(-1), False
      return found, False
    s = -1 - found


@njit(cache=True, inline="always")
def flush_block(meta, block):
  """Adds the rows and cells a worker's block counted to meta's counts."""
  if block.shape[0] > 0 and block[3] > 0:
    atomic_add(meta, ROWS, block[3])
    atomic_add(meta, CELLS, block[4])
    block[3] = 0
    block[4] = 0


@njit(cache=True, inline="always")
def has_room(meta, index, margin_rows, margin_words):
  """True while `margin_rows` more rows of `margin_words` words in all fit:
  the index at most LOAD_NUM / LOAD_DEN full, the arena within
  meta[LIMIT]."""
  return (LOAD_DEN * (meta[ROWS] + margin_rows)
          <= LOAD_NUM * index.shape[0]
          and meta[TOP] + margin_words <= meta[LIMIT])


@njit(cache=True)
def rehash(index, words, new_index):
  """Moves every entry of `index` into the empty `new_index` (twice as
  large or more); a row's slot follows from its h1, read from the row (the
  reads run ahead by prefetch, so that their misses overlap)."""
  mask = np.uint64(new_index.shape[0] - 1)
  n = index.shape[0]
  ahead = 16
  for s in range(min(ahead, n)):
    e = index[s]
    if e != 0:
      prefetch(words, np.int64(e & np.uint64(OFFSET_MASK)))
  for s in range(n):
    if s + ahead < n:
      e = index[s + ahead]
      if e != 0:
        prefetch(words, np.int64(e & np.uint64(OFFSET_MASK)))
    e = index[s]
    if e == 0:
      continue
    o = np.int64(e & np.uint64(OFFSET_MASK))
    t = np.uint64(words[o + H_KEY]) & mask
    while new_index[t] != 0:
      t = (t + np.uint64(1)) & mask
    new_index[t] = e


@njit(cache=True)
def offsets(index):
  """The offsets of every stored row, in arena order (insertion order for
  one worker)."""
  out = np.empty(index.shape[0], dtype=np.int64)
  n = 0
  for s in range(index.shape[0]):
    e = index[s]
    if e != 0:
      out[n] = np.int64(e & np.uint64(OFFSET_MASK))
      n += 1
  return np.sort(out[:n])


@njit(cache=True)
def python_row_of(tab, h1, h2, c):
  """`row_of` with insertion, for the Python side (one thread)."""
  return row_of(tab, h1, h2, c, True, tab.meta[:0], False)


@njit(cache=True)
def check_rows(tab, max_moves):
  """0 if a restored table `tab` (`Hashed`) is consistent (the kernels
  index it unchecked), else 1 (index and meta disagree), 2 (a row outside
  the arena or of a bad width) or 3 (a non-finite cell)."""
  index, meta, words, cells, layout = (tab.index, tab.meta, tab.words,
                                       tab.cells, tab.layout)
  header = layout[L_HEADER]
  fields = layout[L_FIELDS]
  per_word = layout[L_PER_WORD]
  top = meta[TOP]
  rows = 0
  total = 0
  for s in range(index.shape[0]):
    e = index[s]
    if e == 0:
      continue
    rows += 1
    o = np.int64(e & np.uint64(OFFSET_MASK))
    if o < 1 or o + header > top:
      return 2
    c = words[o + H_INFO] & WIDTH_MASK
    if c < 1 or c > max_moves or o + row_words(c, header, fields,
                                               per_word) > top:
      return 2
    total += c
    base = first_cell(o, header, per_word)
    for i in range(fields * c):
      if not np.isfinite(cells[base + i]):
        return 3
  if rows != meta[ROWS] or total != meta[CELLS]:
    return 1
  return 0
