"""Power-law fits of exploitability curves and their projections.

A run that stops before a target exploitability can still say how far off
the target is, if its later checkpoints follow a power law
e(T) = a T^(-b): a least-squares line through (log T, log e) gives a and b,
and T* = (a / target)^(1/b) is where the line would cross the target. T* is
an extrapolation of the fitted line, not a measurement; `plot_projection`
draws it as such.
"""

from typing import NamedTuple

import numpy as np

from mccfrb.experiment import analysis

# The projection plot's x axis reaches at most this many times the run.
MAX_AHEAD = 1e4


class PowerLaw(NamedTuple):
  """e(T) = coefficient * T^(-exponent), fitted on T >= fit_from."""
  coefficient: float
  exponent: float
  fit_from: int
  fit_to: int
  num_points: int

  def __call__(self, iterations):
    return self.coefficient * np.asarray(iterations, float) ** -self.exponent

  def reaching(self, target):
    """Iterations at which the fitted line reaches `target` (inf if never)."""
    if self.exponent <= 0:
      return float("inf")
    return float((self.coefficient / target) ** (1.0 / self.exponent))


def fit_power_law(iterations, values, fit_from):
  """Least-squares power law through the points with iteration >= fit_from.

  Raises:
    ValueError: fewer than two such points, or a non-positive value.
  """
  iterations = np.asarray(iterations, float)
  values = np.asarray(values, float)
  keep = iterations >= fit_from
  if keep.sum() < 2:
    raise ValueError(f"a power-law fit needs at least 2 checkpoints at or "
                     f"after iteration {fit_from}, got {int(keep.sum())}.")
  if np.any(values[keep] <= 0):
    raise ValueError("a power-law fit needs positive exploitabilities.")
  slope, intercept = np.polyfit(np.log(iterations[keep]),
                                np.log(values[keep]), 1)
  return PowerLaw(float(np.exp(intercept)), float(-slope),
                  int(iterations[keep].min()), int(iterations[keep].max()),
                  int(keep.sum()))


class Projection(NamedTuple):
  """One curve's fit and where it would reach the target."""
  game: str
  algorithm: str
  seeds: int
  last_iteration: int
  last_exploitability: float
  iterations_per_second: float
  fit: PowerLaw
  target: float
  target_iterations: float
  target_hours: float


def project(df, game, algorithm, target, fit_fraction=0.1):
  """Fits the mean curve of (game, algorithm) from its later checkpoints.

  Args:
    df: tidy sweep rows (`experiments.convergence`'s CSV).
    game, algorithm: the curve.
    target: the exploitability to project to.
    fit_fraction: fit the checkpoints at or after this fraction of the last
      iteration (0.1: the last decade).

  Returns:
    A `Projection`; its hours use the run's own rate (last iteration over
    the mean training seconds there).
  """
  if not 0 < fit_fraction <= 1:
    raise ValueError(f"fit_fraction must be in (0, 1], got {fit_fraction}.")
  rows = df[(df["game"] == game) & (df["algorithm"] == algorithm)]
  if rows.empty:
    raise ValueError(f"no rows of {algorithm!r} on {game!r}.")
  curve = analysis.by_iteration(rows).sort_values("iteration")
  last = curve.iloc[-1]
  fit = fit_power_law(curve["iteration"], curve["mean"],
                      fit_fraction * last["iteration"])
  rate = float(last["iteration"] / last["seconds"])
  needed = fit.reaching(target)
  return Projection(game, algorithm, int(rows["seed"].nunique()),
                    int(last["iteration"]), float(last["mean"]), rate, fit,
                    float(target), needed, needed / rate / 3600.0)


def plot_projection(df, projection, target_label, noun="iterations"):
  """Measured curve (log-log), the fitted line and, dashed, its projection.

  `noun` names the x axis's unit (NFSP's iterations are training episodes).

  Returns:
    The matplotlib figure (save it with `analysis.save_figure`).
  """
  import matplotlib  # pylint: disable=g-import-not-at-top
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top

  p, fit = projection, projection.fit
  rows = df[(df["game"] == p.game) & (df["algorithm"] == p.algorithm)]
  curve = analysis.by_iteration(rows).sort_values("iteration")
  fig, ax = plt.subplots(figsize=(8, 5))
  ax.plot(curve["iteration"], curve["mean"], "o-", ms=3, color="C0",
          label=f"measured ({analysis.count_text(p.seeds, 'seed')}, "
                f"to {p.last_iteration:,} {noun})")
  fitted = np.geomspace(fit.fit_from, fit.fit_to, 50)
  ax.plot(fitted, fit(fitted), "-", lw=2.5, color="C1",
          label=f"power-law fit on {noun} {fit.fit_from:,}-"
                f"{fit.fit_to:,}: {fit.coefficient:.3g} T^-{fit.exponent:.3f}")
  ax.axhline(p.target, color="C3", lw=1, label=target_label)
  if np.isfinite(p.target_iterations):
    # The axis ends at MAX_AHEAD times the run, so a far-off crossing does
    # not squeeze the measured curve into a corner; the legend gives it.
    end = min(max(p.target_iterations * 1.5, fit.fit_to * 2),
              fit.fit_to * MAX_AHEAD)
    beyond = p.target_iterations > end
    ahead = np.geomspace(fit.fit_to, end, 50)
    ax.plot(ahead, fit(ahead), "--", lw=1.5, color="C1",
            label=f"PROJECTION (not measured): the fit reaches {p.target:g} "
                  f"at {p.target_iterations:.3g} {noun}"
                  f"{' (beyond this axis)' if beyond else ''}, "
                  f"{p.target_hours:.3g} h at the run's rate")
    ax.axvspan(fit.fit_to, end, color="0.9", zorder=0)
    ax.text(0.98, 0.97, "projected", transform=ax.transAxes, ha="right",
            va="top", fontsize=10, color="0.4")
    if not beyond:
      ax.plot([p.target_iterations], [p.target], "x", ms=9, color="C3")
  else:
    ax.text(0.5, 0.05, "the fitted line does not fall: no projection",
            transform=ax.transAxes, ha="center")
  ax.set_xscale("log")
  ax.set_yscale("log")
  ax.set_xlabel(noun)
  ax.set_ylabel("exploitability (NashConv / 2)")
  ax.grid(True, which="both", alpha=0.3)
  ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.13),
            frameon=False)  # Below the axes: it hides no line.
  ax.set_title(f"{p.algorithm} on {p.game}: measured to "
               f"{p.last_iteration:,} {noun} "
               f"({p.iterations_per_second:.3g} per second)", fontsize=9)
  return fig
