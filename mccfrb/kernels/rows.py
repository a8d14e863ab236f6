"""Arithmetic on one row of a hashed table (tables/hashed.py).

Cells may be float64 or float32; every function reads them into float64
and computes there, so float64 rows give the same bits as the tree
kernels' float64 tables, and float32 rows lose only the rounding of what
is stored.
"""

from typing import NamedTuple

import numba
import numpy as np
from numba import njit
from numba.core import types
from numba.extending import intrinsic

from mccfrb.games.engines import protocol
from mccfrb.tables import hashed
from mccfrb.tables.atomics import atomic_add


@njit(cache=True, error_model="numpy", inline="always")
def match_into(cells, start, count, out, out_start):
  """Regret matching of the cells cells[start:start + count] into
  out[out_start:out_start + count] (kernels/exact.py's
  `regret_matching_row`, the same operations): sigma(a) = R+(a) /
  sum_b R+(b), uniform if the sum is 0."""
  total = 0.0
  for a in range(count):
    r = np.float64(cells[start + a])
    if r > 0.0:
      total += r
  if total > 0.0:
    for a in range(count):
      r = np.float64(cells[start + a])
      out[out_start + a] = r / total if r > 0.0 else 0.0
  else:
    for a in range(count):
      out[out_start + a] = 1.0 / count


@njit(cache=True, error_model="numpy", inline="always")
def catch_up(cells, start, count, words, at, t, log_pos, log_neg):
  """kernels/weighting.py's `catch_up` for the row whose regrets are
  cells[start:start + count] and whose discount stamp is words[at]: the
  discounts of iterations words[at] + 1 .. t - 1."""
  d = words[at]
  if d < t - 1:
    fp = np.exp(log_pos[t - 1] - log_pos[d])
    fn = np.exp(log_neg[t - 1] - log_neg[d])
    for j in range(count):
      r = np.float64(cells[start + j])
      cells[start + j] = r * fp if r >= 0.0 else r * fn
    words[at] = t - 1


@njit(cache=True, error_model="numpy", inline="always")
def caught_up_into(cells, start, count, words, at, t, log_pos, log_neg, out,
                   out_start):
  """out[out_start:out_start + count]: the cells as `catch_up` would leave
  them, the same products, without changing the cells or words[at]."""
  d = words[at]
  fp = np.exp(log_pos[t - 1] - log_pos[d]) if d < t - 1 else 1.0
  fn = np.exp(log_neg[t - 1] - log_neg[d]) if d < t - 1 else 1.0
  for j in range(count):
    r = np.float64(cells[start + j])
    if d < t - 1:
      out[out_start + j] = r * fp if r >= 0.0 else r * fn
    else:
      out[out_start + j] = r


@intrinsic
def _float32_cells(typingctx, cells):  # pylint: disable=unused-argument
  """Whether `cells` holds float32, as a constant of the compiled code
  (an array's itemsize is read at run time)."""
  narrow = cells.dtype == types.float32

  def codegen(context, builder, signature, args):  # pylint: disable=unused-argument
    return context.get_constant(types.boolean, narrow)

  return types.boolean(cells), codegen


class Counts(NamedTuple):
  """What `count_store` counts of a kernel's updates of float32 cells
  (`Counts(0, 0.0, 0.0, 0)` at the start; unchanged on float64 cells):
  the updates, the magnitude of the additions rounding lost, the
  magnitude of every addition, and the cells left non-finite."""
  updates: int
  lost: float
  mass: float
  bad: int


@njit(cache=True, inline="always")
def count_store(acc, cells, i, old, added):
  """`acc` (`Counts`) after cells[i] was set from `old` by adding
  `added`: on float32 cells an addition that rounding lost (the cell did
  not move) counts its magnitude as lost, and a cell no longer finite
  counts; on float64 cells `acc` comes back unchanged, compiled away: the
  cells' type is a constant of the compiled code (a test of the itemsize,
  read at run time, left the float32 path and its four loop-carried sums
  in the float64 kernels; BUILD_NOTES, "External sampling written
  once").
  Kernels add the sums to the table's meta (`flush_counts`)."""
  if not _float32_cells(cells):
    return acc
  stored = cells[i]
  size = abs(added)
  lost = size if stored == old else 0.0
  bad = 0 if np.isfinite(stored) else 1
  return Counts(acc.updates + 1, acc.lost + lost, acc.mass + size,
                acc.bad + bad)


@njit(cache=True, inline="always")
def flush_counts(meta, acc):
  """Adds a kernel's `count_store` sums to meta: the counts atomically,
  the magnitudes (meta's float64 view, hashed.LOST and hashed.MASS) not
  (Hogwild workers may lose a few: a statistic)."""
  if acc.updates > 0:
    atomic_add(meta, hashed.UPDATES, acc.updates)
    atomic_add(meta, hashed.OVERFLOW, acc.bad)
    masses = meta.view(np.float64)
    masses[hashed.LOST] += acc.lost
    masses[hashed.MASS] += acc.mass


@njit(cache=True, error_model="numpy")
def own_reach(code, params, state, actions, p, tab, field, stored):
  """pi_p(h): the product of player p's probabilities of its own actions in
  the history `actions` (OpenSpiel action ids), under the current strategy
  of hashed rows `tab` (`hashed.Hashed`): the row's field `field` itself
  if `stored`, else the regret matching of that field (its regrets);
  uniform where an infoset has no row. `state` is scratch, left at the end
  of the history."""
  numba.literally(code)
  index, words, cells, layout = tab.index, tab.words, tab.cells, tab.layout
  header = layout[hashed.L_HEADER]
  per_word = layout[hashed.L_PER_WORD]
  sigma = np.zeros(max(protocol.num_moves(code, params, state), 1))
  protocol.reset(code, params, state)
  reach = 1.0
  for k in range(actions.shape[0]):
    q = protocol.player(code, params, state)
    c = protocol.num_moves(code, params, state)
    found = 0
    for j in range(c):
      if protocol.move_action(code, params, state, j) == actions[k]:
        found = j
        break
    if q == p:
      h1, h2 = protocol.infoset_hash(code, params, state, q)
      o = hashed.find(index, words, h1, h2)
      if o < 0:
        reach *= 1.0 / c
      else:
        start = hashed.first_cell(o, header, per_word) + field * c
        if stored:
          reach *= np.float64(cells[start + found])
        else:
          if sigma.shape[0] < c:
            sigma = np.zeros(c)
          match_into(cells, start, c, sigma, 0)
          reach *= sigma[found]
    protocol.apply(code, params, state, found)
  return reach
