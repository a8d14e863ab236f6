"""Lazy discounting of regret rows (DCFR in sampling solvers).

Brown and Sandholm 2019: after iteration t, positive regrets are multiplied
by t^alpha / (t^alpha + 1) and negative ones by t^beta / (t^beta + 1). A
sampling solver applies the factors a row missed when it next visits the row:
`log_pos[m]` / `log_neg[m]` hold sum_{k=1..m} of the log-factors, and the
sign of a regret never changes under a positive factor, so one product does.
"""

import math

from numba import njit

from mccfrb.tables.atomics import borrow


@njit(cache=True, inline="always")
def borrowed_discounts(regrets, through, log_pos, log_neg):
  """The arrays `catch_up` reads and writes, borrowed (tables/atomics.py):
  a kernel calls this at its start, so that the discounts inlined in its
  loop do not count references to them with atomic instructions at every
  node (they were 45% of discounted external sampling's time on Leduc's
  tree; BUILD_NOTES, "Discounts without reference counts")."""
  return borrow(regrets), borrow(through), borrow(log_pos), borrow(log_neg)


@njit(cache=True, error_model="numpy", inline="always")
def catch_up(regrets, i, num_actions, through, t, log_pos, log_neg):
  """Applies the discounts of iterations through[i] + 1 .. t - 1 to row i."""
  d = through[i]
  if d < t - 1:
    fp = math.exp(log_pos[t - 1] - log_pos[d])
    fn = math.exp(log_neg[t - 1] - log_neg[d])
    for j in range(num_actions):
      r = regrets[i, j]
      regrets[i, j] = r * fp if r >= 0.0 else r * fn
    through[i] = t - 1


@njit(cache=True, error_model="numpy")
def linear_skipped(t, last):
  """The linear-averaging weights an infoset last updated at iteration
  `last` owes at iteration t (optimistic averaging with RM+): last + 1 + ...
  + t = (t - last)(t + last + 1) / 2, in float64. Equal bit for bit to
  the integer (t (t + 1) - last (last + 1)) / 2 while that stays below
  2^53, and never wrapping (int64 t (t + 1) wraps past about 3e9)."""
  return 0.5 * (float(t) - float(last)) * (float(t) + float(last) + 1.0)


@njit(cache=True, error_model="numpy")
def iteration_weight(weighting, t, linear_until, gamma):
  """Weight of iteration t's average increments: 1 (none), t or
  min(t, linear_until) (linear, 1), t^gamma (discounted, 2)."""
  if weighting == 1:
    return float(min(t, linear_until)) if linear_until > 0 else float(t)
  if weighting == 2:
    return float(t) ** gamma
  return 1.0
