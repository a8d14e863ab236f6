"""Tables and figures of the MCTS experiments (Mac Manus's Leduc thesis), from sweep rows.

Rows are those of `sweep.run_task` for the MCTS registry entries, which add
`simulations`, `reward_{0,1}`, `value_vs_uniform_{0,1}` and `tree_size_{0,1}`
(`SmoothUCTSolver.metrics`).
"""

import numpy as np
import pandas as pd

from mccfrb.experiment import analysis

# Heinrich & Silver (2015), quoted by Mac Manus's Leduc thesis: Smooth UCT on Leduc.
HEINRICH_SIMULATIONS = 5e8
HEINRICH_EXPLOITABILITY = 0.0223
# Panel (a) of `plot_against_uniform` shows where the slope settles.
CUMULATIVE_WINDOW = 3e6


def at_simulations(df, points):
  """Exploitability of every (game, algorithm, seed) at `points` simulations,
  interpolated log-log between checkpoints (NaN outside a run), and the
  mean, min and max over seeds.

  Returns:
    Rows of game, algorithm, simulations, mean, min, max, seeds.
  """
  rows = []
  for (game, algorithm), group in df.groupby(analysis.KEYS):
    values = {p: [] for p in points}
    for _, run in group.groupby("seed"):
      run = run.sort_values("simulations")
      x = np.log(run["simulations"].to_numpy(float))
      y = np.log(np.maximum(run["exploitability"].to_numpy(float), 1e-300))
      for p in points:
        inside = x[0] <= np.log(p) <= x[-1]
        values[p].append(float(np.exp(np.interp(np.log(p), x, y)))
                         if inside else np.nan)
    for p in points:
      v = np.array(values[p])
      known = v[~np.isnan(v)]
      rows.append({"game": game, "algorithm": algorithm, "simulations": p,
                   "mean": known.mean() if known.size else np.nan,
                   "min": known.min() if known.size else np.nan,
                   "max": known.max() if known.size else np.nan,
                   "seeds": known.size})
  return pd.DataFrame(rows, columns=["game", "algorithm", "simulations",
                                     "mean", "min", "max", "seeds"])


def summary(df, points=(1e6, 1e7, 1e8, 5e8)):
  """Mean [min-max] exploitability at `points` simulations, and training
  seconds per run (min-max over seeds, at the last checkpoint): one row per
  (game, algorithm)."""
  table = at_simulations(df, points)
  out = []
  for (game, algorithm), g in table.groupby(analysis.KEYS):
    row = {"game": game, "algorithm": algorithm}
    for _, r in g.iterrows():
      row[f"{r['simulations']:.3g}"] = (
          "" if np.isnan(r["mean"]) else
          f"{r['mean']:.4g} [{r['min']:.4g}-{r['max']:.4g}]")
    runs = df[(df["game"] == game) & (df["algorithm"] == algorithm)]
    last = runs.loc[runs.groupby("seed")["simulations"].idxmax()]
    row["seconds"] = (f"{last['seconds'].min():.0f}-"
                      f"{last['seconds'].max():.0f}")
    row["seeds"] = runs["seed"].nunique()
    out.append(row)
  return pd.DataFrame(out)


def _by_simulations(df, column):
  """Mean and 5-95% band across seeds of `column` at each checkpoint."""
  rows = []
  for (game, algorithm, sims), g in df.groupby(analysis.KEYS + ["simulations"]):
    values = g[column].to_numpy(float)
    low, high = (np.percentile(values, analysis.BAND_PERCENTILES)
                 if column != "exploitability" else analysis._band(values))  # pylint: disable=protected-access
    rows.append({"game": game, "algorithm": algorithm, "simulations": sims,
                 "mean": values.mean(), "p05": low, "p95": high})
  return pd.DataFrame(rows)


def _line(ax, table, label, **style):
  table = table.sort_values("simulations")
  line, = ax.plot(table["simulations"], table["mean"], label=label, **style)
  ax.fill_between(table["simulations"], table["p05"], table["p95"], alpha=0.2,
                  color=line.get_color())
  return line


def plot_exploitability(df, game):
  """Exploitability of the average strategy against simulations (log-log),
  every algorithm of `game`, with Heinrich & Silver's Smooth UCT result
  marked on Leduc."""
  import matplotlib  # pylint: disable=g-import-not-at-top
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
  rows = df[df["game"] == game]
  table = _by_simulations(rows, "exploitability")
  fig, ax = plt.subplots(figsize=(7.5, 5))
  for algorithm, g in table.groupby("algorithm"):
    _line(ax, g, algorithm)
  if game.startswith("leduc_poker"):
    ax.plot([HEINRICH_SIMULATIONS], [HEINRICH_EXPLOITABILITY], "k*",
            markersize=12,
            label="Heinrich & Silver 2015, Smooth UCT (0.0223 at 5e8)")
  ax.set_xscale("log")
  ax.set_yscale("log")
  ax.set_xlabel("simulations")
  ax.set_ylabel("exploitability (NashConv / 2)")
  ax.grid(True, which="both", alpha=0.3)
  ax.legend(fontsize=8, loc="lower left")
  seeds = rows["seed"].nunique()
  ax.set_title(f"{game}: mean over {analysis.count_text(seeds, 'seed')}; "
               f"{analysis.BAND_TEXT}", fontsize=9)
  return fig


def plot_against_uniform(df, game, algorithm, best_response=None):
  """Seed 003's Figures 4.1-4.3 for a learner against a uniform opponent:
  cumulative training reward, mean reward (training and exact value of the
  average strategy against the uniform opponent, per seat) and
  exploitability, against simulations.

  Args:
    df: sweep rows; game, algorithm: which runs to draw.
    best_response: optional (v0, v1), the best-response values against the
      uniform opponent, drawn as the ceiling of the value panel.
  """
  import matplotlib  # pylint: disable=g-import-not-at-top
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
  import matplotlib.ticker  # pylint: disable=g-import-not-at-top,unused-import
  rows = df[(df["game"] == game) & (df["algorithm"] == algorithm)].copy()
  half = rows["simulations"] / 2.0
  rows["cumulative_reward"] = (rows["reward_0"] + rows["reward_1"]) * half
  rows["mean_reward"] = (rows["reward_0"] + rows["reward_1"]) / 2.0
  fig, axes = plt.subplots(1, 3, figsize=(17, 4.8))
  early = rows[rows["simulations"] <= CUMULATIVE_WINDOW]
  _line(axes[0], _by_simulations(early, "cumulative_reward"),
        "both seats' learning simulations", marker=".")
  axes[0].set_ylabel("cumulative training reward")
  axes[0].set_title("cumulative reward, first "
                    f"{early['simulations'].max():.2g} simulations, linear axes "
                    "(Mac Manus's Leduc thesis, Fig. 4.1)", fontsize=9)
  colors = ("tab:blue", "tab:orange")
  for p in (0, 1):
    _line(axes[1], _by_simulations(rows, f"reward_{p}"),
          f"player {p}: mean training reward", color=colors[p], linestyle=":")
    _line(axes[1], _by_simulations(rows, f"value_vs_uniform_{p}"),
          f"player {p}: exact value of the average strategy",
          color=colors[p])
    if best_response is not None:
      axes[1].axhline(best_response[p], color=colors[p], linestyle="--",
                      linewidth=0.8,
                      label=f"player {p}: best response to uniform "
                            f"({best_response[p]:.3f})")
  axes[1].set_ylabel("reward per hand against the uniform opponent")
  axes[1].set_title("average reward (Mac Manus's Leduc thesis, Fig. 4.2)", fontsize=9)
  axes[1].legend(fontsize=7, loc="lower right")
  _line(axes[2], _by_simulations(rows, "exploitability"), algorithm)
  axes[2].set_yscale("log")
  axes[2].set_ylabel("exploitability (NashConv / 2)")
  axes[2].set_title("exploitability (Mac Manus's Leduc thesis, Fig. 4.3)", fontsize=9)
  axes[2].yaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
  axes[2].yaxis.set_minor_formatter(matplotlib.ticker.ScalarFormatter())
  for ax in axes:
    ax.set_xscale("log" if ax is not axes[0] else "linear")
    ax.set_xlabel("simulations")
    ax.grid(True, which="both", alpha=0.3)
  seeds = rows["seed"].nunique()
  fig.suptitle(f"{game}, {algorithm}: mean over "
               f"{analysis.count_text(seeds, 'seed')}; band: 5th-95th "
               "percentile across seeds", fontsize=9)
  return fig
