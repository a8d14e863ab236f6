"""Tables and plots from tidy sweep rows (CSV files first, figures second)."""

import numpy as np
import pandas as pd
from scipy import stats

KEYS = ["game", "algorithm"]


def _ci95(values):
  values = np.asarray(values, dtype=float)
  n = len(values)
  if n < 2:
    return 0.0
  return float(stats.t.ppf(0.975, n - 1) * values.std(ddof=1) / np.sqrt(n))


def by_iteration(df):
  """Mean, std, seeds and 95% t-interval half-width of exploitability."""
  grouped = df.groupby(KEYS + ["iteration"])["exploitability"]
  out = grouped.agg(["mean", "std", "count"]).reset_index()
  out["ci95"] = grouped.agg(_ci95).values
  out["seconds"] = df.groupby(KEYS + ["iteration"])["seconds"].mean().values
  return out


def on_time_grid(df, num_points=40):
  """Exploitability of each seed interpolated (log-log) onto a time grid.

  The grid of each (game, algorithm) spans the times every seed reached:
  from the latest first checkpoint to the earliest last one.

  Returns:
    Rows of game, algorithm, seconds, mean, std, count, ci95.
  """
  rows = []
  for (game, algorithm), group in df.groupby(KEYS):
    curves = [g.sort_values("seconds") for _, g in group.groupby("seed")]
    curves = [c[c["seconds"] > 0] for c in curves]
    curves = [c for c in curves if len(c) >= 2]
    if not curves:
      continue
    lo = max(c["seconds"].iloc[0] for c in curves)
    hi = min(c["seconds"].iloc[-1] for c in curves)
    if not hi > lo:
      continue
    grid = np.logspace(np.log10(lo), np.log10(hi), num_points)
    values = np.array([
        np.exp(np.interp(np.log(grid), np.log(c["seconds"].values),
                         np.log(np.maximum(c["exploitability"].values, 1e-300))))
        for c in curves])
    for j, t in enumerate(grid):
      rows.append({"game": game, "algorithm": algorithm, "seconds": t,
                   "mean": values[:, j].mean(),
                   "std": values[:, j].std(ddof=1) if len(curves) > 1 else 0.0,
                   "count": len(curves), "ci95": _ci95(values[:, j])})
  return pd.DataFrame(rows)


def at_times(df, times):
  """Mean exploitability reached at each of `times` seconds (NaN if unknown)."""
  grid = on_time_grid(df, num_points=200)
  rows = []
  for (game, algorithm), g in grid.groupby(KEYS):
    row = {"game": game, "algorithm": algorithm}
    for t in times:
      inside = g["seconds"].min() <= t <= g["seconds"].max()
      row[f"{t:g}s"] = float(np.exp(np.interp(
          np.log(t), np.log(g["seconds"]), np.log(g["mean"])))) if inside else np.nan
    rows.append(row)
  return pd.DataFrame(rows)


def plot(df, out_prefix, title_suffix=""):
  """Exploitability against iterations and seconds, log-log, per game.

  One line per algorithm (mean over seeds) with a 95% confidence band.
  Writes `{out_prefix}_{k}.png` and `.pdf` for game k; returns the paths.
  """
  import matplotlib  # pylint: disable=g-import-not-at-top
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top

  iters, times = by_iteration(df), on_time_grid(df)
  paths = []
  for k, game in enumerate(sorted(df["game"].unique())):
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    algorithms = sorted(df[df["game"] == game]["algorithm"].unique())
    colors = plt.cm.tab20(np.linspace(0, 1, 20))
    for a, algorithm in enumerate(algorithms):
      style = dict(color=colors[(2 * a) % 20 + (2 * a) // 20 % 2],
                   linestyle="--" if algorithm.startswith("openspiel") else "-")
      for ax, table, x in ((axes[0], iters, "iteration"),
                           (axes[1], times, "seconds")):
        g = table[(table["game"] == game) & (table["algorithm"] == algorithm)]
        if g.empty:
          continue
        line, = ax.plot(g[x], g["mean"], label=algorithm, **style)
        lower = np.maximum(g["mean"] - g["ci95"], g["mean"] * 1e-3)
        ax.fill_between(g[x], lower, g["mean"] + g["ci95"], alpha=0.2,
                        color=line.get_color())
    for ax, label in ((axes[0], "iterations"),
                      (axes[1], "training wall-clock seconds")):
      ax.set_xscale("log")
      ax.set_yscale("log")
      ax.set_xlabel(label)
      ax.set_ylabel("exploitability (NashConv / 2)")
      ax.grid(True, which="both", alpha=0.3)
    axes[0].legend(fontsize=7, ncol=2 if len(algorithms) > 8 else 1)
    seeds = df[df["game"] == game]["seed"].nunique()
    fig.suptitle(f"{game}: mean and 95% CI over {seeds} seeds{title_suffix}",
                 fontsize=9)
    paths += save_figure(fig, f"{out_prefix}_{k}")
  return paths


def save_figure(fig, stem):
  """Writes `fig` as {stem}.png and {stem}.pdf, closes it, returns the paths."""
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
  fig.tight_layout()
  paths = []
  for ext in ("png", "pdf"):
    fig.savefig(f"{stem}.{ext}", dpi=110)
    paths.append(f"{stem}.{ext}")
  plt.close(fig)
  return paths
