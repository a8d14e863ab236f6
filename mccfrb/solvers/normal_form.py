"""Regret matching and RM+ on two-player normal-form games (the RM and CFR slides).

Small and exact, for teaching and as a reference: simultaneous updates, from
uniform strategies.
"""

from typing import NamedTuple

import numpy as np

from mccfrb import counts


class RegretMatchingResult(NamedTuple):
  """Per-iteration history of regret matching.

  Attributes:
    strategies: (row, column) arrays [T + 1, n]: sigma^1 .. sigma^{T+1}.
    regrets: (row, column) arrays [T, n]: cumulative regrets after each
      iteration (after the RM+ clip for `plus=True`).
    average: (row, column) average strategies of sigma^1 .. sigma^T.
  """
  strategies: tuple
  regrets: tuple
  average: tuple


def _match(cumulative):
  positive = np.maximum(cumulative, 0.0)
  total = positive.sum()
  return positive / total if total > 0 else np.full(len(cumulative),
                                                    1.0 / len(cumulative))


def regret_matching(row_payoffs, column_payoffs=None, iterations=1000,
                    plus=False):
  """Runs regret matching (or RM+) for both players of a bimatrix game.

  At iteration t each player's instantaneous regret is
  r^t(a) = u(a, sigma_{-i}^t) - u(sigma^t) (the RM and CFR slides); the cumulative regret
  adds it (RM+ then clips at 0) and sigma^{t+1} matches the positive part.

  Args:
    row_payoffs: [m, n] payoffs of the row player, or a pyspiel matrix game
      (then `column_payoffs` is read from it).
    column_payoffs: [m, n] payoffs of the column player.
    iterations: T >= 1.
    plus: regret matching+ instead of regret matching.

  Returns:
    A `RegretMatchingResult`.
  """
  if hasattr(row_payoffs, "row_utilities"):
    game = row_payoffs
    row_payoffs, column_payoffs = game.row_utilities(), game.col_utilities()
  a = np.asarray(row_payoffs, dtype=np.float64)
  b = np.asarray(column_payoffs, dtype=np.float64)
  if a.ndim != 2 or a.shape != b.shape:
    raise ValueError(f"payoff matrices must be two [m, n] arrays of one shape, "
                     f"got {a.shape} and {b.shape}.")
  iterations = counts.check_count("iterations", iterations, 1,
                                  what="an integer >= 1")
  x = np.full(a.shape[0], 1.0 / a.shape[0])
  y = np.full(a.shape[1], 1.0 / a.shape[1])
  rx, ry = np.zeros_like(x), np.zeros_like(y)
  xs, ys, rxs, rys = [x], [y], [], []
  for _ in range(iterations):
    ux, uy = a @ y, x @ b
    rx = rx + ux - x @ ux
    ry = ry + uy - uy @ y
    if plus:
      rx, ry = np.maximum(rx, 0.0), np.maximum(ry, 0.0)
    rxs.append(rx)
    rys.append(ry)
    x, y = _match(rx), _match(ry)
    xs.append(x)
    ys.append(y)
  xs, ys = np.array(xs), np.array(ys)
  return RegretMatchingResult((xs, ys), (np.array(rxs), np.array(rys)),
                              (xs[:-1].mean(axis=0), ys[:-1].mean(axis=0)))
