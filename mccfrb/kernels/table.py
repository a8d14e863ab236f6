"""Infoset tables that grow: an open-addressing hash table of arrays.

On a native engine (mccfrb/games/engines) there is no tree to number infosets
in advance: an infoset gets a row the first time an episode reaches it.
Rows are found by the engine's 128-bit infoset key (two uint64 words) in
an open-addressing table with linear probing (`keys`: uint64[S, 2],
`slot_row`: int64[S], -1 where empty, S a power of two, kept at most half
full). Row r owns the cells `row_start[r] .. row_start[r] + row_actions[r]
- 1` of the flat per-action tables (regrets, strategy, average, learned
baselines), so a row costs exactly its legal actions: no padding to the
widest infoset.

`meta` (int64[META_SIZE]) holds the counts the kernels advance: rows used,
cells used, and lookups of unstored infosets once the table may no longer
grow (`max_memory`, solvers/engine.py). Inserts use atomic operations
(`atomic_add`, `atomic_cas`), so Hogwild workers may insert concurrently;
a key being written by one worker is waited for by the others.
"""

import numpy as np
from numba import njit
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

ROWS = 0
CELLS = 1
DROPPED = 2
META_SIZE = 4

# A Hogwild worker takes rows (and cells) for new infosets from a block of
# its own, BLOCK_ROWS at a time (`reserve_row_of`), instead of an atomic add
# on the shared counters per insert, which made both cores fight over
# their cache line. A worker's block: int64[BLOCK_SIZE] = (next row, end
# row, next cell, end cell, cells per block).
BLOCK_ROWS = 64
BLOCK_SIZE = 5


@intrinsic
def atomic_add(typingctx, array, index, value):
  """Atomically adds `value` to array[index] (int64); returns the old value."""
  if not (isinstance(array, types.Array) and array.dtype == types.int64):
    return None
  sig = types.int64(array, types.intp, types.int64)

  def codegen(context, builder, signature, args):
    arr = context.make_array(signature.args[0])(context, builder, args[0])
    ptr = cgutils.get_item_pointer(context, builder, signature.args[0], arr,
                                   [args[1]])
    return builder.atomic_rmw("add", ptr, args[2], "seq_cst")

  return sig, codegen


@intrinsic
def atomic_cas(typingctx, array, row, column, expected, value):
  """Atomically sets array[row, column] (uint64, 2-d) to `value` if it holds
  `expected`; returns the value it held (== expected on success)."""
  if not (isinstance(array, types.Array) and array.dtype == types.uint64
          and array.ndim == 2):
    return None
  sig = types.uint64(array, types.intp, types.intp, types.uint64,
                     types.uint64)

  def codegen(context, builder, signature, args):
    arr = context.make_array(signature.args[0])(context, builder, args[0])
    ptr = cgutils.get_item_pointer(context, builder, signature.args[0], arr,
                                   [args[1], args[2]])
    pair = builder.cmpxchg(ptr, args[3], args[4], "seq_cst", "seq_cst")
    return builder.extract_value(pair, 0)

  return sig, codegen


@intrinsic
def atomic_read(typingctx, array, index):
  """array[index] (int64) read atomically: a load the compiler may not
  hoist out of a loop that waits for another worker's write."""
  if not (isinstance(array, types.Array) and array.dtype == types.int64):
    return None
  sig = types.int64(array, types.intp)

  def codegen(context, builder, signature, args):
    arr = context.make_array(signature.args[0])(context, builder, args[0])
    ptr = cgutils.get_item_pointer(context, builder, signature.args[0], arr,
                                   [args[1]])
    return builder.load_atomic(ptr, "seq_cst", 8)

  return sig, codegen


@njit(cache=True)
def find_row(keys, slot_row, h1, h2):
  """The row of key (h1, h2), or -1 - s where s is the empty slot where it
  would go."""
  if h1 == 0:
    h1 = np.uint64(1)
  mask = np.uint64(slot_row.shape[0] - 1)
  s = np.int64(h1 & mask)
  while True:
    r = slot_row[s]
    k1 = keys[s, 0]
    if k1 == 0 and r < 0:
      return -1 - s
    if k1 == h1:
      while r < 0:  # Another worker is writing this slot: wait for it.
        r = atomic_read(slot_row, s)
      if keys[s, 1] == h2:
        return r
    s = np.int64((np.uint64(s) + np.uint64(1)) & mask)


@njit(cache=True)
def row_of(keys, slot_row, meta, row_start, row_actions, h1, h2, count,
           allow_insert):
  """`uniform_row_of` without a strategy to initialise (single-threaded
  callers that fill a new row's cells themselves).

  Returns:
    (row, True if the row is new).
  """
  return reserve_row_of(keys, slot_row, meta, row_start, row_actions,
                        np.zeros(0), h1, h2, count, allow_insert, meta[:0])


@njit(cache=True)
def uniform_row_of(keys, slot_row, meta, row_start, row_actions, strategy,
                   h1, h2, count, allow_insert):
  """The row of infoset key (h1, h2) with `count` actions; a new row (cells
  appended, its `strategy` cells uniform) if absent and `allow_insert`;
  else -1 (the infoset is not stored). A new row is published (its slot's
  row written) only once its cells are ready, so a concurrent reader never
  sees them unset.

  Returns:
    (row, True if the row is new).
  """
  return reserve_row_of(keys, slot_row, meta, row_start, row_actions,
                        strategy, h1, h2, count, allow_insert, meta[:0])


@njit(cache=True, inline="always")
def _reserve(meta, block, count):
  """(row, first cell) of a new row of `count` cells: from the shared
  counters (one atomic add each) if `block` is empty, else from the
  worker's block, refilled with BLOCK_ROWS rows or block[4] cells by one
  atomic add when it runs out (rows and cells it leaves unused stay gaps:
  rows of width 0)."""
  if block.shape[0] == 0:
    return atomic_add(meta, ROWS, 1), atomic_add(meta, CELLS, count)
  if block[0] >= block[1]:
    block[0] = atomic_add(meta, ROWS, BLOCK_ROWS)
    block[1] = block[0] + BLOCK_ROWS
  if block[2] + count > block[3]:
    block[2] = atomic_add(meta, CELLS, block[4])
    block[3] = block[2] + block[4]
  r = block[0]
  start = block[2]
  block[0] = r + 1
  block[2] = start + count
  return r, start


@njit(cache=True)
def reserve_row_of(keys, slot_row, meta, row_start, row_actions, strategy,
                   h1, h2, count, allow_insert, block):
  """`uniform_row_of`, a new row's row and cells taken from `block` (a
  Hogwild worker's, see BLOCK_ROWS; empty: from the shared counters).

  Returns:
    (row, True if the row is new).
  """
  if h1 == 0:  # 0 marks an empty slot.
    h1 = np.uint64(1)
  while True:
    found = find_row(keys, slot_row, h1, h2)
    if found >= 0:
      return found, False
    if not allow_insert:
      atomic_add(meta, DROPPED, 1)
      return -1, False
    s = -1 - found
    if atomic_cas(keys, s, 0, np.uint64(0), h1) != 0:
      continue  # Another worker took the slot first: probe again.
    keys[s, 1] = h2
    r, start = _reserve(meta, block, count)
    row_start[r] = start
    row_actions[r] = count
    if strategy.shape[0] > 0:
      for j in range(count):
        strategy[start + j] = 1.0 / count
    slot_row[s] = r
    return r, True


@njit(cache=True)
def rehash(keys, slot_row, new_keys, new_slot_row):
  """Moves every key of a table into an empty larger one."""
  for s in range(slot_row.shape[0]):
    r = slot_row[s]
    if r >= 0:
      found = find_row(new_keys, new_slot_row, keys[s, 0], keys[s, 1])
      t = -1 - found
      new_keys[t, 0] = keys[s, 0]
      new_keys[t, 1] = keys[s, 1]
      new_slot_row[t] = r


@njit(cache=True, error_model="numpy")
def match_cells(regrets, strategy, start, count):
  """sigma of one row by regret matching, into its own strategy cells
  (`match_cells_into`)."""
  match_cells_into(regrets, start, count, strategy, start)


@njit(cache=True, error_model="numpy")
def match_cells_into(regrets, start, count, out, out_start):
  """Regret matching of the cells regrets[start:start + count] into
  out[out_start:out_start + count] (kernels/exact.py's
  `regret_matching_row`, the same operations): sigma(a) = R+(a) /
  sum_b R+(b), uniform if the sum is 0."""
  total = 0.0
  for a in range(count):
    r = regrets[start + a]
    if r > 0.0:
      total += r
  if total > 0.0:
    for a in range(count):
      r = regrets[start + a]
      out[out_start + a] = r / total if r > 0.0 else 0.0
  else:
    for a in range(count):
      out[out_start + a] = 1.0 / count
