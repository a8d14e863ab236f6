r"""Exploitability by training seconds on games too large to compile.

  python -m experiments.big_games                        # goofspiel 6, 2 min
  python -m experiments.big_games --seconds=600 --algorithms=mccfrb_defaults,cfr+

Every algorithm trains on one core for --seconds (evaluation excluded); at
--checkpoints log-spaced times its average policy's exploitability is
computed by the streaming walk of the public tree. Appends a row per
checkpoint to {out_dir}/big_games.csv as it is measured (so runs of
different algorithms can share a folder, one after the other or at once;
delete the file to start over), then plots every row of that file to
{out_dir}/big_games_{game}.png (log-log, mean over seeds at each
checkpoint) and prints the last checkpoint of each algorithm.

  python -m experiments.big_games --checkpoint_seconds=15,30,60,120,300,600

Where exploitability cannot be computed, --evaluator=head_to_head scores
each checkpoint's policy by Monte Carlo against the uniform policy and
against OpenSpiel's C++ outcome sampling trained for the same seconds
(mccfrb/experiment/head_to_head.py): rows to {out_dir}/head_to_head.csv,
the plot to {out_dir}/head_to_head_{game}.png. Beside them each checkpoint
gets a lower bound on its policy's exploitability
(mccfrb.approximate_exploitability: best responders trained
--bound_seconds against it, scored on --episodes episodes per player;
--bound_seconds=0 skips it): rows to {out_dir}/bound.csv, the plot to
{out_dir}/bound_{game}.png. --clock=cpu reads the training seconds of the
run and of OpenSpiel's solver as the process's CPU seconds (fair when the
machine is shared).

  python -m experiments.big_games --games=phantom_ttt --evaluator=head_to_head --algorithms=openspiel_os_cpp --seconds=60

--evaluator=bound scores each checkpoint by the exploitability bound alone
(no head-to-head games): rows to {out_dir}/bound.csv, plots to
{out_dir}/bound_{game}.png. Its natural algorithms are mccfrb_defaults,
es and os_at_openspiel_speed (mccfrb's OutcomeSamplingSolver run for as
many iterations as OpenSpiel's C++ outcome sampling runs in the same
seconds, measured in the run: OpenSpiel's solver trains at most 60 s,
"os_at_openspiel_speed:openspiel_seconds=30" changes it, and its rate
extrapolates the rest):

  python -m experiments.big_games --evaluator=bound --games=phantom_ttt --algorithms=mccfrb_defaults,es,os_at_openspiel_speed --checkpoint_seconds=15,30,60,120,300,600 --bound_seconds=60 --clock=cpu

--bound_threads=2 trains each bound's two responders side by side on two
threads, --bound_seconds each (about twice the walks on two free cores:
run one process at a time); a policy bounded through OpenSpiel states
(OpenSpiel's own on a game that does not compile) takes one thread, and
bound.csv's bound_threads column says which.
"""

import os
import sys

os.environ.setdefault("NUMBA_NUM_THREADS", "1")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app  # pylint: disable=g-import-not-at-top
from absl import flags
import pandas as pd

from experiments import common
from mccfrb.experiment import analysis
from mccfrb.experiment import head_to_head
from mccfrb.experiment import wallclock

G6 = ("goofspiel(num_cards=6,imp_info=True,points_order=random,"
      "returns_type=point_difference)")

_GAMES = flags.DEFINE_list(
    "games", [G6], "Game strings (with an engine, for exploitability).")
_ALGORITHMS = flags.DEFINE_list(
    "algorithms", ["mccfrb_defaults", "mccfrb_plus_learned", "os", "es",
                   "public_none", "openspiel_os_cpp", "cfr+", "dcfr"],
    f"Any of {', '.join(wallclock.ALGORITHMS)}; mccfrb's samplers take "
    "solver options after colons, e.g. "
    "mccfrb_plus_learned:precision=float64:in_flight=1.")
_SECONDS = flags.DEFINE_float("seconds", 120.0, "Training seconds per run.")
_CHECKPOINTS = flags.DEFINE_integer("checkpoints", 4,
                                    "Log-spaced evaluations per run.")
_CHECKPOINT_SECONDS = flags.DEFINE_list(
    "checkpoint_seconds", [],
    "Training seconds at which to evaluate (increasing); overrides "
    "--seconds and --checkpoints.")
_SEEDS = flags.DEFINE_integer("seeds", 1, "Seeds per algorithm.")
_FIRST_SEED = flags.DEFINE_integer(
    "first_seed", 0, "The first seed: runs take seeds first_seed, "
    "first_seed + 1, ... (to split seeds over processes and concatenate "
    "the CSVs).")
_OUT_DIR = flags.DEFINE_string("out_dir", "results/big_games",
                               "Where the CSV and the plots go.")
_EVALUATOR = flags.DEFINE_enum(
    "evaluator", "exploitability", ["exploitability", "head_to_head",
                                    "bound"],
    "How checkpoints are scored: exploitability (streamed, games with an "
    "engine), head_to_head (Monte Carlo against the uniform policy and "
    "OpenSpiel's C++ outcome sampling trained as long, with the bound "
    "beside; any game) or bound (the exploitability bound alone).")
_EPISODES = flags.DEFINE_integer(
    "episodes", 20000, "Head-to-head episodes per opponent and checkpoint "
    "(even: half in each seat).")
_CONFIDENCE = flags.DEFINE_float("confidence", 0.95,
                                 "Coverage of the head-to-head intervals.")
_CLOCK = flags.DEFINE_enum(
    "clock", "wall", ["wall", "cpu"],
    "The training clock of every run (and, with --evaluator=head_to_head, "
    "of OpenSpiel's opponent): wall seconds, or the process's CPU seconds "
    "(fairer on a shared machine: every run trains on one thread).")
_BOUND_SECONDS = flags.DEFINE_float(
    "bound_seconds", 60.0, "With --evaluator=head_to_head or bound: "
    "best-response training seconds (both players together) of the lower "
    "bound on each checkpoint's exploitability, scored on --episodes "
    "episodes per player (--evaluator=bound: --bound_episodes); 0 skips "
    "it (head_to_head only).")
_BOUND_EPISODES = flags.DEFINE_integer(
    "bound_episodes", 1_000_000, "With --evaluator=bound: scoring episodes "
    "per player of each bound.")
_BOUND_THREADS = flags.DEFINE_integer(
    "bound_threads", 1, "With --evaluator=head_to_head or bound: 2 trains "
    "the bound's two responders side by side on two threads, "
    "--bound_seconds each (the tree and engine routes; OpenSpiel states "
    "take one).", lower_bound=1, upper_bound=2)
_EVAL_THREADS = flags.DEFINE_integer(
    "eval_threads", 1, "With --evaluator=exploitability: threads of the "
    "streaming walk that scores each checkpoint (the same value; training "
    "stays on one thread).", lower_bound=1)


def _seeds():
  return range(_FIRST_SEED.value, _FIRST_SEED.value + _SEEDS.value)


COLUMNS = ["game", "algorithm", "seed", "target", "seconds", "iterations",
           "exploitability", "eval_seconds", "memory_bytes"]


def plot(frame, game, path, clock="wall"):
  import matplotlib  # pylint: disable=import-outside-toplevel
  matplotlib.use("Agg")
  import matplotlib.ticker  # pylint: disable=import-outside-toplevel
  import matplotlib.pyplot as plt  # pylint: disable=import-outside-toplevel
  fig, ax = plt.subplots(figsize=(7, 4.5))
  here = frame[frame.game == game]
  if here.target.nunique() == 1:  # One checkpoint: bars, not a line.
    analysis.checkpoint_bars(ax, here, clock)
    ax.set_title(game, fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return
  for algorithm, rows in here.groupby("algorithm"):
    by_target = rows.groupby("target")
    mean = by_target[["seconds", "exploitability"]].mean()
    seeds = rows.seed.nunique()
    label = algorithm if seeds == 1 else f"{algorithm} (mean of {seeds} seeds)"
    line, = ax.plot(mean.seconds, mean.exploitability, marker="o",
                    label=label)
    if seeds > 1:  # The seeds' range.
      ax.fill_between(mean.seconds, by_target.exploitability.min(),
                      by_target.exploitability.max(), color=line.get_color(),
                      alpha=0.2, linewidth=0)
  ax.set_xscale("log")
  ax.set_yscale("log")
  for axis in (ax.xaxis, ax.yaxis):  # Plain numbers, 1-2-5 steps.
    axis.set_major_locator(matplotlib.ticker.LogLocator(
        base=10, subs=(1.0, 2.0, 5.0)))
    axis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%g"))
    axis.set_minor_formatter(matplotlib.ticker.NullFormatter())
  ax.set_xlabel(("training CPU seconds" if clock == "cpu" else
                 "training seconds") + " (one core; evaluation excluded)")
  ax.set_ylabel("exploitability")
  ax.set_title(game, fontsize=8)
  ax.grid(True, which="both", alpha=0.3)
  ax.legend(fontsize=8)
  fig.tight_layout()
  fig.savefig(path, dpi=120)
  plt.close(fig)


def check_columns(path, columns):
  """Refuses a CSV at `path` whose header is not `columns` (written by
  another version), before any run appends to it."""
  if not os.path.exists(path):
    return
  with open(path, encoding="utf-8") as f:
    header = f.readline().strip()
  if header and header != ",".join(columns):
    common.fail("big_games", f"{path} has other columns than this version "
                "writes (an earlier version's file?); move it away or pick "
                "another --out_dir.")


def append_row(path, row, columns):
  """Appends one row to the CSV at `path` (with the header if new); a
  column the row lacks is left empty (`main` has checked the header of a
  file already there: `check_columns`)."""
  new_file = not os.path.exists(path)
  with open(path, "a", encoding="utf-8") as f:  # One write per row.
    f.write(pd.DataFrame([row]).reindex(columns=columns).to_csv(
        index=False, header=new_file))


def print_bound_row(row):
  print(f"{row['algorithm']:>20} {row['seconds']:8.1f}s "
        f"{row['iterations']:>12,} it  exploitability >= "
        f"{row['exploitability_bound']:.4f} in [{row['low']:.4f}, "
        f"{row['high']:.4f}] ({row['responder_walks']:,} walks in "
        f"{row['responder_seconds']:.0f}s, {row['representation']})",
        flush=True)


def run_bound(games_list, targets):
  """--evaluator=bound: a bound row per checkpoint to bound.csv, then the
  plots."""
  path = os.path.join(_OUT_DIR.value, "bound.csv")

  def on_row(row):
    append_row(path, row, head_to_head.BOUND_COLUMNS)
    print_bound_row(row)

  for game in games_list:
    for algorithm in _ALGORITHMS.value:
      for seed in _seeds():
        head_to_head.timed_run(
            game, algorithm, seed, targets, _BOUND_EPISODES.value,
            _CONFIDENCE.value, on_row, opponents=(),
            bound_seconds=_BOUND_SECONDS.value, clock=_CLOCK.value,
            bound_threads=_BOUND_THREADS.value)
  plot_bounds(pd.read_csv(path), games_list)


def run_head_to_head(games_list, targets):
  """--evaluator=head_to_head: rows to head_to_head.csv (and bound.csv),
  then their plots."""
  path = os.path.join(_OUT_DIR.value, "head_to_head.csv")
  bound_path = os.path.join(_OUT_DIR.value, "bound.csv")

  def on_row(row):
    if head_to_head.is_bound_row(row):
      append_row(bound_path, row, head_to_head.BOUND_COLUMNS)
      print_bound_row(row)
      return
    append_row(path, row, head_to_head.COLUMNS)
    print(f"{row['algorithm']:>20} {row['seconds']:8.1f}s "
          f"{row['iterations']:>12,} it  vs {row['opponent']:<16} "
          f"{row['mean']:+.4f} in [{row['low']:+.4f}, {row['high']:+.4f}] "
          f"({row['episodes']:,} episodes in {row['eval_seconds']:.0f}s)",
          flush=True)

  for game in games_list:
    for algorithm in _ALGORITHMS.value:
      for seed in _seeds():
        head_to_head.timed_run(game, algorithm, seed, targets,
                               _EPISODES.value, _CONFIDENCE.value, on_row,
                               bound_seconds=_BOUND_SECONDS.value,
                               clock=_CLOCK.value,
                               bound_threads=_BOUND_THREADS.value)
  frame = pd.read_csv(path)
  for game in games_list:
    head_to_head.plot(frame, game, head_to_head.plot_path(_OUT_DIR.value,
                                                          game),
                      _CLOCK.value)
  last = frame.groupby(["game", "algorithm", "opponent"]).tail(1)
  print(last[["game", "algorithm", "opponent", "seconds", "iterations",
              "mean", "low", "high"]].to_string(index=False))
  if os.path.exists(bound_path):
    plot_bounds(pd.read_csv(bound_path), games_list)


def plot_bounds(frame, games_list):
  """bound_{game}.png for each game of `games_list` with rows in `frame`
  (bound.csv), and the last bound of each algorithm printed."""
  for game in games_list:
    if (frame.game == game).any():
      head_to_head.plot_bound(frame, game, head_to_head.plot_bound_path(
          _OUT_DIR.value, game), _CLOCK.value)
  last = frame.groupby(["game", "algorithm", "bound_seconds"]).tail(1)
  print(last[["game", "algorithm", "seconds", "bound_seconds",
              "responder_walks", "exploitability_bound", "low",
              "high"]].to_string(index=False))


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f"Unexpected arguments: {' '.join(argv[1:])}")
  for name in _ALGORITHMS.value:
    try:
      wallclock.factory_of(name)
    except ValueError as e:
      raise app.UsageError(str(e)) from None
  if _CHECKPOINT_SECONDS.value:
    try:
      targets = [float(t) for t in _CHECKPOINT_SECONDS.value]
    except ValueError as e:
      raise app.UsageError(f"--checkpoint_seconds: {e}") from e
    if any(t <= 0 for t in targets) or targets != sorted(targets):
      raise app.UsageError("--checkpoint_seconds must be positive and "
                           f"increasing, got {_CHECKPOINT_SECONDS.value}.")
  else:
    targets = wallclock.checkpoints(_SECONDS.value, _CHECKPOINTS.value)
  if _EVALUATOR.value == "bound" and not (
      0 < _BOUND_SECONDS.value < float("inf") and _BOUND_EPISODES.value >= 2):
    raise app.UsageError(
        "--evaluator=bound needs --bound_seconds > 0 and --bound_episodes "
        f">= 2, got {_BOUND_SECONDS.value} and {_BOUND_EPISODES.value}.")
  if _EVALUATOR.value == "head_to_head":
    if _EPISODES.value < 2 or _EPISODES.value % 2:
      raise app.UsageError(f"--episodes must be a positive even integer, "
                           f"got {_EPISODES.value}.")
    if not 0 < _CONFIDENCE.value < 1:
      raise app.UsageError(f"--confidence must be in (0, 1), got "
                           f"{_CONFIDENCE.value}.")
    if not 0 <= _BOUND_SECONDS.value < float("inf"):
      raise app.UsageError(f"--bound_seconds must be >= 0 (0 skips the "
                           f"bound), got {_BOUND_SECONDS.value}.")
  games_list = common.rejoin_game_list(_GAMES.value)
  os.makedirs(_OUT_DIR.value, exist_ok=True)
  for name, columns in {
      "exploitability": [("big_games.csv", COLUMNS)],
      "head_to_head": [("head_to_head.csv", head_to_head.COLUMNS),
                       ("bound.csv", head_to_head.BOUND_COLUMNS)],
      "bound": [("bound.csv", head_to_head.BOUND_COLUMNS)],
  }[_EVALUATOR.value]:
    check_columns(os.path.join(_OUT_DIR.value, name), columns)
  if _EVALUATOR.value == "head_to_head":
    run_head_to_head(games_list, targets)
    return
  if _EVALUATOR.value == "bound":
    run_bound(games_list, targets)
    return
  path = os.path.join(_OUT_DIR.value, "big_games.csv")

  def on_row(row):
    append_row(path, row, COLUMNS)
    print(f"{row['algorithm']:>20} {row['seconds']:8.1f}s "
          f"{row['iterations']:>12,} it  exploitability "
          f"{row['exploitability']:.5f}  (evaluated in "
          f"{row['eval_seconds']:.0f}s)", flush=True)

  for game in games_list:
    for algorithm in _ALGORITHMS.value:
      for seed in _seeds():
        wallclock.timed_run(game, algorithm, seed, targets, on_row,
                            clock=head_to_head.CLOCKS[_CLOCK.value],
                            eval_threads=_EVAL_THREADS.value)
  frame = pd.read_csv(path)
  for game in games_list:
    plot(frame, game, os.path.join(
        _OUT_DIR.value, f"big_games_{analysis.game_slug(game)}.png"),
         _CLOCK.value)
  last = frame.groupby(["game", "algorithm"]).tail(1)
  print(last[["game", "algorithm", "seconds", "iterations",
              "exploitability"]].to_string(index=False))


if __name__ == "__main__":
  app.run(main)
