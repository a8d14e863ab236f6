"""Tables and plots from tidy sweep rows (CSV files first, figures second)."""

import re

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


# Plot bands: these percentiles across seeds, of log exploitability (values
# below BAND_FLOOR, float noise for games with utilities of order 1, are
# raised to it first so a zero cannot stretch a log axis).
BAND_PERCENTILES = (5, 95)
BAND_FLOOR = 1e-12
BAND_TEXT = "band: 5th-95th percentile across seeds"


def _band(values):
  """(low, high): BAND_PERCENTILES of `values`, interpolated in log space."""
  values = np.asarray(values, dtype=float)
  values = values[~np.isnan(values)]
  if not values.size:
    return np.nan, np.nan
  logs = np.log(np.maximum(values, BAND_FLOOR))
  low, high = np.exp(np.percentile(logs, BAND_PERCENTILES))
  return float(low), float(high)


def count_text(n, noun):
  """'1 seed', '3 seeds'."""
  return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _numeric(df, column):
  """`df[column]` as floats, NaN where missing or not counted (or no column)."""
  if column not in df:
    return pd.Series(np.nan, index=df.index, dtype=float)
  return pd.to_numeric(df[column], errors="coerce").astype(float)


METRIC_LABELS = {"exploitability": "exploitability (NashConv / 2)",
                 "nash_conv": "NashConv"}


def metric(df):
  """The column that scores the rows `df` (of one game): 'exploitability',
  or 'nash_conv' where exploitability does not apply (games with more than
  two players or general-sum, whose rows leave it empty)."""
  if "exploitability" in df and df["exploitability"].notna().any():
    return "exploitability"
  return "nash_conv"


def metric_name(df):
  """'exploitability' or 'NashConv': the word for `metric(df)` in text."""
  return "exploitability" if metric(df) == "exploitability" else "NashConv"


def scores(df):
  """The value each row is scored by: its game's `metric`."""
  out = pd.Series(np.nan, index=df.index, dtype=float)
  for _, g in df.groupby("game"):
    out[g.index] = pd.to_numeric(g[metric(g)], errors="coerce")
  return out


def by_iteration(df):
  """Mean, std, seeds and 95% t-interval half-width of exploitability (of
  NashConv on games where exploitability does not apply: `metric`).

  Also the band of the plots (`p05`, `p95`: percentiles across seeds of log
  exploitability, see BAND_PERCENTILES) and the mean over seeds of `seconds`
  and `nodes_touched` (NaN where a column is absent or not counted, as for
  OpenSpiel's solvers).
  """
  keys = KEYS + ["iteration"]
  grouped = df.assign(_score=scores(df)).groupby(keys)["_score"]
  out = grouped.agg(["mean", "std", "count"]).reset_index()
  out["ci95"] = grouped.agg(_ci95).values
  bands = np.array([_band(v) for _, v in grouped], dtype=float).reshape(-1, 2)
  out["p05"], out["p95"] = bands[:, 0], bands[:, 1]
  extra = df[keys].assign(seconds=_numeric(df, "seconds"),
                          nodes_touched=_numeric(df, "nodes_touched"))
  means = extra.groupby(keys)[["seconds", "nodes_touched"]].mean()
  out["seconds"] = means["seconds"].values
  out["nodes_touched"] = means["nodes_touched"].values
  return out


def has_common_iterations(df):
  """True when the seeds of every (game, algorithm) share their checkpoint
  iterations (False for runs with a time budget, whose seeds reach
  different iterations): the condition for `by_iteration`'s means."""
  for _, group in df.groupby(KEYS):
    grids = {tuple(sorted(s)) for _, s in group.groupby("seed")["iteration"]}
    if len(grids) > 1:
      return False
  return True


def _log_interp(x, xs, ys):
  """ys(x), interpolated linearly between logs (ys clipped at 1e-300)."""
  return np.exp(np.interp(np.log(x), np.log(xs),
                          np.log(np.maximum(ys, 1e-300))))


def on_grid(df, x="seconds", num_points=40):
  """Exploitability of each seed interpolated (log-log) onto a grid of `x`.

  The grid of each (game, algorithm) spans the values of `x` ("seconds",
  "iteration" or "nodes_touched") every seed reached: from the latest first
  checkpoint to the earliest last one.

  Returns:
    Rows of game, algorithm, `x`, mean, std, count, ci95, p05, p95 and, for
    x="iteration", the mean `nodes_touched` (interpolated log-log, NaN where
    not counted).
  """
  rows = []
  for (game, algorithm), group in df.groupby(KEYS):
    curves = [g.assign(**{x: _numeric(g, x)}).sort_values(x)
              for _, g in group.groupby("seed")]
    curves = [c[c[x] > 0] for c in curves]
    curves = [c for c in curves if len(c) >= 2]
    if not curves:
      continue
    lo = max(c[x].iloc[0] for c in curves)
    hi = min(c[x].iloc[-1] for c in curves)
    if not hi > lo:
      continue
    grid = np.logspace(np.log10(lo), np.log10(hi), num_points)
    values = np.array([_log_interp(grid, c[x].values,
                                   c[metric(group)].values)
                       for c in curves])
    nodes = np.full(num_points, np.nan)
    if x == "iteration" and all((_numeric(c, "nodes_touched") > 0).all()
                                for c in curves):
      nodes = np.mean([_log_interp(grid, c[x].values,
                                   _numeric(c, "nodes_touched").values)
                       for c in curves], axis=0)
    for j, t in enumerate(grid):
      low, high = _band(values[:, j])
      row = {"game": game, "algorithm": algorithm, x: t,
             "mean": values[:, j].mean(),
             "std": values[:, j].std(ddof=1) if len(curves) > 1 else 0.0,
             "count": len(curves), "ci95": _ci95(values[:, j]),
             "p05": low, "p95": high}
      if x == "iteration":
        row["nodes_touched"] = nodes[j]
      rows.append(row)
  columns = ["game", "algorithm", x, "mean", "std", "count", "ci95", "p05",
             "p95"] + (["nodes_touched"] if x == "iteration" else [])
  return pd.DataFrame(rows, columns=columns)


def on_time_grid(df, num_points=40):
  """`on_grid` of training seconds."""
  return on_grid(df, "seconds", num_points)


def iteration_curves(df, num_points=40):
  """Mean curves against iterations for plots: `by_iteration` for the
  (game, algorithm)s whose seeds share their checkpoints, `on_grid` of
  iterations for the others (runs with a time budget)."""
  parts = []
  for _, group in df.groupby(KEYS):
    parts.append(by_iteration(group) if has_common_iterations(group)
                 else on_grid(group, "iteration", num_points))
  return pd.concat(parts, ignore_index=True) if parts else by_iteration(df)


def at_times(df, times=None):
  """Mean exploitability reached at each of `times` seconds, one row per
  (game, algorithm) of `df` (NaN if unknown: outside the times every seed
  reached, all of a row when the seeds' time ranges do not overlap).
  Without `times`: at the `round_times` every seed of every algorithm of
  `df` reached."""
  grid = on_time_grid(df, num_points=200)
  if times is None:
    times = round_times(*_common_span(grid))
  rows = []
  for (game, algorithm), _ in df.groupby(KEYS):
    g = (grid[(grid["game"] == game) & (grid["algorithm"] == algorithm)]
         if len(grid) else grid)
    row = {"game": game, "algorithm": algorithm}
    for t in times:
      inside = len(g) and g["seconds"].min() <= t <= g["seconds"].max()
      row[f"{t:g}s"] = (float(_log_interp(t, g["seconds"], g["mean"]))
                        if inside else np.nan)
    rows.append(row)
  return pd.DataFrame(rows)


def round_times(lo, hi):
  """Round numbers of seconds inside [lo, hi] for the table by seconds.

  The powers of ten there if at least two fit, else the 1-2-5 steps there
  (runs of a few milliseconds span less than a decade beside the others:
  0.28 ms to 8.3 ms gives 0.5, 1, 2 and 5 ms); none when no step fits.
  """
  if not hi > lo > 0:
    return []
  steps = [(m, float(f"{m}e{k}"))
           for k in range(int(np.floor(np.log10(lo))),
                          int(np.ceil(np.log10(hi))) + 1) for m in (1, 2, 5)]
  inside = [(m, t) for m, t in steps if lo <= t <= hi]
  decades = [t for m, t in inside if m == 1]
  return decades if len(decades) >= 2 else [t for _, t in inside]


def _common_span(grid):
  """The span of a time grid's seconds every (game, algorithm) of it
  reached (lo > hi when they do not overlap; NaN for an empty grid)."""
  if grid.empty:
    return np.nan, np.nan
  spans = grid.groupby(KEYS)["seconds"].agg(["min", "max"])
  return spans["min"].max(), spans["max"].min()


SPEEDUP_COLUMNS = ("game", "algorithm", "iteration", "exploitability",
                   "reference", "reference_iterations", "speedup", "bound",
                   "nodes_touched", "seconds", "reported",
                   "reference_seconds", "seconds_speedup")
# A speedup at checkpoint T is reported only once T is at least this share
# of the run's iterations: earlier, a mean over a few seeds of a curve that
# has barely started is noise (a run of 1,000 iterations measured 482x at
# iteration 1, then <= 0.333x); the rows stay in the CSV, the table shows "-".
EARLY_FRACTION = 0.01
_TINY = 1e-300  # Exploitability 0 is clipped to this before taking logs.


def _reference_iterations(iterations, means, e):
  """Iterations a mean curve needs to fall to `e`, and the kind of answer.

  Uses the first crossing: the smallest checkpoint whose mean is <= e,
  interpolated log-log between it and the checkpoint before.

  Args:
    iterations: increasing checkpoint iterations of the reference.
    means: the reference's mean exploitability at those checkpoints.
    e: the exploitability to reach.

  Returns:
    (iterations, bound): bound "=" for an interpolated crossing, "<=" when `e`
    is above the first checkpoint's mean (reached there or before), ">=" when
    the curve never reaches `e` (iterations is then the run's last
    checkpoint; nothing is extrapolated).
  """
  if e > means[0]:
    return float(iterations[0]), "<="
  below = np.flatnonzero(means <= e)
  if below.size == 0:
    return float(iterations[-1]), ">="
  i = below[0]
  if i == 0:
    return float(iterations[0]), "="
  x0, x1 = np.log(iterations[i - 1]), np.log(iterations[i])
  y0, y1, y = np.log(np.maximum([means[i - 1], means[i], e], _TINY))
  if not y1 < y0:  # Both clipped to _TINY.
    return float(iterations[i]), "="
  return float(np.exp(x0 + (y - y0) / (y1 - y0) * (x1 - x0))), "="


def _ratio(a, b):
  """a / b, NaN unless b > 0."""
  return float(a) / float(b) if b > 0 else np.nan


def seconds_per_iteration(rows):
  """Training seconds per iteration of `rows` (one game and algorithm):
  the mean over seeds of seconds / iteration at their last checkpoint (NaN
  without seconds)."""
  last = rows.sort_values("iteration").groupby("seed").tail(1)
  rates = _numeric(last, "seconds") / _numeric(last, "iteration")
  return float(rates.mean()) if rates.notna().any() else np.nan


def iteration_speedup(df, reference="os_optimistic", reference_df=None):
  """Iterations and seconds the reference needs for each algorithm's mean
  exploitability.

  For every (game, algorithm) other than the reference and every checkpoint
  T of it: e is the algorithm's mean exploitability over seeds at T;
  T_ref(e), the iterations the reference needs to reach e, is read off the
  reference's mean curve (`by_iteration`) by log-log interpolation at its
  first crossing; the speedup is T_ref(e) / T (Schmid et al. 2019, Fig. 4).

  Args:
    df: tidy sweep rows (game, algorithm, seed, iteration, exploitability;
      optionally seconds and nodes_touched).
    reference: the algorithm to measure against.
    reference_df: optional rows of another run (for example a long run of
      the reference read from its CSV). Where it holds the reference's rows
      for a game they replace `df`'s reference rows for that game; games are
      matched by their game string.

  Returns:
    A DataFrame with SPEEDUP_COLUMNS, one row per (game, algorithm,
    checkpoint): `exploitability` the mean, `reference_iterations` T_ref(e),
    `speedup` T_ref(e) / T and `bound` "=" (interpolated), ">=" (the
    reference never reaches e in its run: T_ref is its last checkpoint) or
    "<=" (e is above the reference's first checkpoint value: T_ref is that
    first checkpoint); `nodes_touched` and `seconds` are means over seeds at
    the checkpoint (NaN where not counted); `reported` False for the
    checkpoints before EARLY_FRACTION of the algorithm's run;
    `reference_seconds` T_ref(e) times the reference's training seconds
    per iteration (`seconds_per_iteration`) measured in `df`, the same run
    on the same machine, where `df` holds the reference's rows for the game
    (else in `reference_df`), and `seconds_speedup` reference_seconds /
    seconds (its bound is `bound`: the reference's speed is a constant
    per iteration).

  Raises:
    ValueError: the reference has no rows for a game of another algorithm,
      or the seeds of an algorithm have no common checkpoints (runs with a
      time budget).
  """
  if not has_common_iterations(df):
    raise ValueError("iteration speedups need a common iteration grid: the "
                     "seeds of an algorithm reached different iterations "
                     "(runs with a time budget, --seconds).")
  ref_rows = df[df["algorithm"] == reference]
  extra = ref_rows.iloc[:0]
  if reference_df is not None:
    extra = reference_df[reference_df["algorithm"] == reference]
    ref_rows = pd.concat([ref_rows[~ref_rows["game"].isin(extra["game"])],
                          extra], ignore_index=True)
  ref_rows = ref_rows[KEYS + ["iteration", "exploitability"]].dropna()
  curves = by_iteration(ref_rows) if len(ref_rows) else None
  others = df[df["algorithm"] != reference]
  rows = []
  for game in sorted(others["game"].unique()):
    curve = (curves[curves["game"] == game].sort_values("iteration")
             if curves is not None else pd.DataFrame())
    if curve.empty:
      raise ValueError(f"The reference algorithm {reference!r} has no rows "
                       f"for game {game!r}.")
    ref_iterations = curve["iteration"].to_numpy(dtype=float)
    ref_means = curve["mean"].to_numpy(dtype=float)
    timed = df[(df["algorithm"] == reference) & (df["game"] == game)]
    if timed.empty:
      timed = extra[extra["game"] == game]
    rate = seconds_per_iteration(timed)
    checkpoints = by_iteration(others[(others["game"] == game)
                                      & others["exploitability"].notna()])
    last = checkpoints.groupby("algorithm")["iteration"].max()
    for row in checkpoints.itertuples(index=False):
      t_ref, bound = _reference_iterations(ref_iterations, ref_means,
                                           row.mean)
      rows.append((game, row.algorithm, int(row.iteration), float(row.mean),
                   reference, t_ref, t_ref / row.iteration, bound,
                   float(row.nodes_touched), float(row.seconds),
                   bool(row.iteration >= EARLY_FRACTION
                        * last[row.algorithm]),
                   t_ref * rate, _ratio(t_ref * rate, row.seconds)))
  return pd.DataFrame(rows, columns=list(SPEEDUP_COLUMNS))


def format_ratio(speedup, bound="="):
  """'12.3x', '>= 250x', '<= 0.5x' or '1,230x' (three significant figures)."""
  if not np.isfinite(speedup):
    return ""
  rounded = float(f"{speedup:.3g}")
  text = f"{rounded:,.0f}x" if rounded >= 1000 else f"{rounded:.3g}x"
  return text if bound == "=" else f"{bound} {text}"


def format_speedup(speedup_df, by="iterations", reported_only=False):
  """A printable table of `iteration_speedup` rows.

  Rows are algorithms (game and algorithm when there are several games);
  columns are the checkpoint iterations, cells like '12.3x' or '>= 250x'
  ('-' before EARLY_FRACTION of the run: not reported), followed by the
  mean exploitability, nodes touched and training seconds at each
  algorithm's last checkpoint ('n/a' where not counted).

  Args:
    speedup_df: `iteration_speedup` rows.
    by: "iterations" (the speedup column) or "seconds" (seconds_speedup:
      the reference's seconds for the same exploitability over the
      algorithm's).
    reported_only: leave out the checkpoints no algorithm reports.
  """
  df = speedup_df.copy()
  index = ["game", "algorithm"] if df["game"].nunique() > 1 else ["algorithm"]
  reported = (df["reported"] if "reported" in df else
              pd.Series(True, index=df.index))
  if reported_only:
    shown = set(df.loc[reported.astype(bool), "iteration"])
    df = df[df["iteration"].isin(shown)]
    reported = reported[df.index]
  column = {"iterations": "speedup", "seconds": "seconds_speedup"}[by]
  df["cell"] = [format_ratio(s, b) if r else "-" for s, b, r in
                zip(df[column], df["bound"], reported)]
  table = df.pivot_table(index=index, columns="iteration", values="cell",
                         aggfunc="first", fill_value="")
  table.columns = [str(int(c)) for c in table.columns]
  last = df.sort_values("iteration").groupby(index).tail(1).set_index(index)
  table["exploitability"] = [
      f"{e:.3g}" for e in last.loc[table.index, "exploitability"]]
  table["nodes touched"] = [
      "n/a" if np.isnan(n) else f"{n:.3g}"
      for n in last.loc[table.index, "nodes_touched"]]
  table["seconds"] = [
      "n/a" if np.isnan(s) else f"{s:.3g}"
      for s in last.loc[table.index, "seconds"]]
  table.columns.name = "iteration"
  return table


def _style(a, algorithm):
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
  colors = plt.cm.tab20(np.linspace(0, 1, 20))
  return dict(color=colors[(2 * a) % 20 + (2 * a) // 20 % 2],
              linestyle="--" if algorithm.startswith("openspiel") else "-")


def _panel_note(ax, text):
  """A small boxed note in the lower left corner of a panel."""
  ax.text(0.02, 0.02, text, transform=ax.transAxes, fontsize=7, va="bottom",
          ha="left", wrap=True,
          bbox=dict(facecolor="white", alpha=0.8, edgecolor="none"))


def plot_game(df, game, title_suffix="", iters=None, times=None):
  """The figure of one game: exploitability against iterations, seconds and,
  when `df` has a nodes_touched column, nodes touched (log-log).

  One line per algorithm (mean over seeds) with a band from the 5th to the
  95th percentile across seeds (of log exploitability, so it stays inside
  the seeds' range and readable on the log axis; none for one seed). The
  nodes panel shows the algorithms that count nodes (mean nodes touched
  against mean exploitability at each checkpoint) and names those that do
  not (OpenSpiel's solvers). Runs with a time budget, whose seeds reach
  different iterations, are interpolated onto a common iteration grid for
  the iteration and nodes panels, as every run is for the seconds panel.

  Args:
    df: tidy sweep rows.
    game: the game string to draw.
    title_suffix: appended to the figure's title.
    iters: `iteration_curves(df)`, if already computed.
    times: `on_time_grid(df)`, if already computed.

  Returns:
    The matplotlib figure (the caller saves and closes it).
  """
  import matplotlib  # pylint: disable=g-import-not-at-top
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top

  iters = iteration_curves(df) if iters is None else iters
  times = on_time_grid(df) if times is None else times
  with_nodes = "nodes_touched" in df
  fig, axes = plt.subplots(1, 3 if with_nodes else 2,
                           figsize=(18, 5) if with_nodes else (12, 4.5))
  algorithms = sorted(df[df["game"] == game]["algorithm"].unique())
  uncounted, untimed = [], []
  for a, algorithm in enumerate(algorithms):
    style = _style(a, algorithm)
    panels = [(axes[0], iters, "iteration"), (axes[1], times, "seconds")]
    if with_nodes:
      counted = iters[(iters["game"] == game)
                      & (iters["algorithm"] == algorithm)
                      & (iters["nodes_touched"] > 0)]
      if counted.empty:
        uncounted.append(algorithm)
      else:
        panels.append((axes[2], counted, "nodes_touched"))
    for ax, table, x in panels:
      g = table[(table["game"] == game) & (table["algorithm"] == algorithm)]
      if g.empty:
        if x == "seconds":
          untimed.append(algorithm)
        continue
      g = g.sort_values(x)
      line, = ax.plot(g[x], g["mean"], label=algorithm, **style)
      ax.fill_between(g[x], g["p05"], g["p95"], alpha=0.2,
                      color=line.get_color())
  labels = ["iterations", "training wall-clock seconds",
            "nodes touched (mean over seeds)"]
  for ax, label in zip(axes, labels):
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(label)
    ax.set_ylabel(METRIC_LABELS[metric(df[df["game"] == game])])
    ax.grid(True, which="both", alpha=0.3)
  # Below the panels, where it hides no curve.
  handles, labels = axes[0].get_legend_handles_labels()
  fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0),
             fontsize=8, ncol=min(len(labels), 5 if with_nodes else 3),
             frameon=False)
  if with_nodes:
    axes[2].set_title(f"{metric_name(df[df['game'] == game])} against nodes "
                      "touched", fontsize=9)
    if uncounted:
      note = ("not shown, no nodes counted (OpenSpiel's solvers do not "
              "count them):\n" + ", ".join(uncounted))
      _panel_note(axes[2], note)
  if untimed:
    _panel_note(axes[1], "not shown: the seeds' training times do not "
                "overlap (no common time grid):\n" + ", ".join(untimed))
  seeds = df[df["game"] == game]["seed"].nunique()
  bands = (f"; {BAND_TEXT} (of log {metric_name(df[df['game'] == game])})"
           if seeds > 1
           else " (no band)")
  fig.suptitle(f"{game}: mean over {count_text(seeds, 'seed')}{bands}"
               f"{title_suffix}", fontsize=9)
  return fig


def game_slug(game):
  """A file-name form of a game string: 'goofspiel(num_cards=4,imp_info=True)'
  -> 'goofspiel_num_cards_4_imp_info_True'."""
  return re.sub(r"[^A-Za-z0-9]+", "_", str(game)).strip("_")


def plot(df, out_prefix, title_suffix=""):
  """Exploitability against iterations, seconds and nodes touched, per game.

  See `plot_game`. Writes `{out_prefix}_{game_slug(game)}.png` and `.pdf`
  for every game; returns the paths.
  """
  iters, times = iteration_curves(df), on_time_grid(df)
  paths = []
  for game in sorted(df["game"].unique()):
    fig = plot_game(df, game, title_suffix, iters=iters, times=times)
    paths += save_figure(fig, f"{out_prefix}_{game_slug(game)}")
  return paths


def checkpoint_bars(ax, rows, clock="wall"):
  """One bar per algorithm on `ax`: the mean exploitability of `rows` (a
  big-games frame of one game and one checkpoint), the seeds' range as an
  error bar, the value written on it; `clock` names the seconds ("cpu"
  or "wall")."""
  stats = rows.groupby("algorithm").exploitability.agg(
      ["mean", "min", "max", "count"])
  x = range(len(stats))
  spread = None
  if stats["count"].max() > 1:
    spread = [stats["mean"] - stats["min"], stats["max"] - stats["mean"]]
  ax.bar(x, stats["mean"], yerr=spread, capsize=4, color="tab:blue")
  for k, (mean, seeds) in enumerate(zip(stats["mean"], stats["count"])):
    ax.annotate(f"{mean:.3g}" + (f" ({seeds} seeds)" if seeds > 1 else ""),
                (k, mean), textcoords="offset points", xytext=(0, 3),
                ha="center", fontsize=8)
  ax.set_xticks(list(x), stats.index, rotation=20, ha="right", fontsize=8)
  seconds = rows.seconds.mean()
  ax.set_ylabel(f"exploitability after {seconds:.0f} "
                + ("CPU " if clock == "cpu" else "") + "seconds")
  ax.grid(True, axis="y", alpha=0.3)


def save_figure(fig, stem):
  """Writes `fig` as {stem}.png and {stem}.pdf, closes it, returns the paths."""
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
  fig.tight_layout()
  paths = []
  for ext in ("png", "pdf"):
    fig.savefig(f"{stem}.{ext}", dpi=110, bbox_inches="tight")
    paths.append(f"{stem}.{ext}")
  plt.close(fig)
  return paths
