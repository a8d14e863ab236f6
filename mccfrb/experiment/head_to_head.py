"""Head-to-head scoring of training runs by the clock.

On games whose exploitability cannot be computed (phantom_ttt, dark_hex,
liars_dice with 3 dice, oshi_zumo), each checkpoint of a run of
`wallclock.timed_run` is scored by `mccfrb.head_to_head` against two
opponents, a row each:

  uniform           OpenSpiel's `UniformRandomPolicy`;
  openspiel_os_cpp  OpenSpiel's C++ outcome sampling (epsilon 0.6, seed
                    OPPONENT_SEED + the run's seed), trained for the same
                    seconds as the checkpoint (its own clock, one core; it
                    keeps training from checkpoint to checkpoint and its
                    training is not counted in the run's).

Training seconds are read on `clock`: "wall" (`time.perf_counter`, as
`wallclock.timed_run`) or "cpu" (`time.process_time`, the process's CPU
seconds: both sides train on one thread, so on a shared machine each gets
the same CPU time however busy the machine is while it trains).

The row's `mean` is the checkpoint policy's expected return against the
opponent over both seats, in [low, high] (the normal-approximation
interval at `confidence`); `experiments/big_games.py --evaluator=
head_to_head` writes the rows to head_to_head.csv and plots them.

With `bound_seconds` > 0 each checkpoint also gets a row (BOUND_COLUMNS)
of `mccfrb.approximate_exploitability`: best responders trained against
the checkpoint policy for `bound_seconds` (both players together), scored
on `episodes` fresh episodes per player; `exploitability_bound` is a lower
bound on the policy's exploitability, `low` its lower end at `confidence`.
With `bound_threads` = 2 the two responders train side by side on two
threads, `bound_seconds` each, where the policy's route allows it (the
tree and engine routes; a policy bounded through OpenSpiel states, such
as OpenSpiel's own on a game that does not compile, takes one): the row's
`bound_threads` says which.
`big_games` writes these rows to bound.csv and plots them (`plot_bound`).
"""

import os
import time

from open_spiel.python import policy as os_policy

from mccfrb import games
from mccfrb import evaluation
from mccfrb.evaluation import bound as bound_lib
from mccfrb.experiment import analysis
from mccfrb.experiment import wallclock

OPPONENTS = ("uniform", "openspiel_os_cpp")
# The training clocks: wall seconds, or the process's CPU seconds.
CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}
# The opponent's seed is this plus the run's (never the seed of a run of
# openspiel_os_cpp itself, which would play its own copy).
OPPONENT_SEED = 1_000_003
COLUMNS = ["game", "algorithm", "seed", "target", "seconds", "iterations",
           "opponent", "opponent_seconds", "opponent_iterations", "mean",
           "stderr", "low", "high", "confidence", "episodes", "eval_seconds",
           "memory_bytes"]
# The rows of the exploitability bound (`is_bound_row`).
BOUND_COLUMNS = ["game", "algorithm", "seed", "target", "seconds",
                 "iterations", "bound_seconds", "responder_seconds",
                 "responder_walks", "exploitability_bound", "stderr", "low",
                 "high", "confidence", "episodes", "representation",
                 "eval_seconds", "memory_bytes", "openspiel_rate",
                 "openspiel_seconds", "mccfrb_seconds", "bound_threads"]


def is_bound_row(row):
  """Whether a row of `Evaluation` is the bound's (else a head-to-head
  row against an opponent)."""
  return "exploitability_bound" in row


class Evaluation:
  """The checkpoints' scoring of one run (`timed_run`'s `evaluate`).

  Args:
    game: the game string.
    seed: the run's seed; the head-to-head episodes use it too.
    episodes: episodes per opponent and checkpoint (even).
    confidence: of the intervals.
    opponents: a subset of OPPONENTS.
    bound_seconds: best-response training seconds of the exploitability
      bound (both players together, or each with two threads); 0 for none.
    clock: a key of CLOCKS, the opponent's training clock.
    bound_threads: 1, or 2 to train the bound's responders side by side
      where the policy's route allows it (the module's docstring).
  """

  def __init__(self, game, seed, episodes, confidence=0.95,
               opponents=OPPONENTS, bound_seconds=0.0, clock="wall",
               bound_threads=1):
    unknown = set(opponents) - set(OPPONENTS)
    if unknown:
      raise ValueError(f"Unknown opponents {sorted(unknown)}; known: "
                       f"{', '.join(OPPONENTS)}.")
    self.clock = _clock(clock)
    if not bound_seconds >= 0:
      raise ValueError(f"bound_seconds must be >= 0, got {bound_seconds}.")
    self.bound_threads = bound_lib.check_threads(bound_threads,
                                                 "bound_threads")
    self.game = games.load_game(game)
    self.seed, self.episodes, self.confidence = seed, episodes, confidence
    self.opponents = tuple(opponents)
    self.bound_seconds = float(bound_seconds)
    self._opponent = None
    self._opponent_seconds, self._opponent_chunk = 0.0, 1

  def __call__(self, runner, trained):
    """Rows (dicts of columns) scoring `runner`'s policy after `trained`
    seconds against each opponent."""
    policy = runner.policy()
    rows = []
    for name in self.opponents:
      if name == "uniform":
        opponent, seconds, iterations = (
            os_policy.UniformRandomPolicy(self.game), 0.0, 0)
      else:
        opponent = self._trained_opponent(trained)
        seconds, iterations = (self._opponent_seconds,
                               self._opponent.iterations)
      start = time.perf_counter()
      result = evaluation.head_to_head(
          self.game, policy, opponent, self.episodes, self.seed,
          confidence=self.confidence, progress=False)
      rows.append(dict(
          opponent=name, opponent_seconds=seconds,
          opponent_iterations=iterations, mean=result.mean,
          stderr=result.stderr, low=result.low, high=result.high,
          confidence=result.confidence, episodes=result.episodes,
          eval_seconds=time.perf_counter() - start))
    if self.bound_seconds > 0:
      rows.append(self.bound(policy))
    return rows

  def bound(self, policy):
    """The bound's row (the BOUND_COLUMNS a run does not add) of `policy`:
    `mccfrb.approximate_exploitability` with `bound_seconds` of training
    and `episodes` scoring episodes per player."""
    start = time.perf_counter()
    threads = self.bound_threads
    if threads == 2 and bound_lib.route(self.game, policy) == "states":
      threads = 1  # OpenSpiel states, in Python: one thread.
    result = bound_lib.approximate_exploitability(
        self.game, policy, seconds=self.bound_seconds, seed=self.seed,
        episodes=self.episodes, confidence=self.confidence, progress=False,
        threads=threads)
    return dict(
        bound_seconds=self.bound_seconds, responder_seconds=result.seconds,
        responder_walks=sum(result.iterations),
        exploitability_bound=result.exploitability, stderr=result.stderr,
        low=result.low, high=result.high, confidence=result.confidence,
        episodes=result.episodes, representation=result.representation,
        eval_seconds=time.perf_counter() - start, bound_threads=threads)

  def _trained_opponent(self, seconds):
    """OpenSpiel's C++ outcome sampling's average policy once it has
    trained for `seconds` in all."""
    if self._opponent is None:
      self._opponent = wallclock.OpenSpielRunner(
          self.game, OPPONENT_SEED + self.seed)
    self._opponent_seconds, self._opponent_chunk = wallclock.train_until(
        self._opponent, self._opponent_seconds, seconds, self._opponent_chunk,
        self.clock)
    return self._opponent.policy()


def _clock(name):
  """The function of CLOCKS named `name`."""
  if name not in CLOCKS:
    raise ValueError(f"clock must be one of {', '.join(CLOCKS)}, got "
                     f"{name!r}.")
  return CLOCKS[name]


def timed_run(game, algorithm, seed, targets, episodes, confidence=0.95,
              on_row=None, opponents=OPPONENTS, bound_seconds=0.0,
              clock="wall", bound_threads=1):
  """`wallclock.timed_run` with every checkpoint scored head to head (rows
  with COLUMNS, one per checkpoint and opponent) and, with `bound_seconds`
  > 0, by the exploitability bound (a row with BOUND_COLUMNS per
  checkpoint, its responders on `bound_threads` threads where the
  policy's route allows it), training read on `clock` (a key of CLOCKS)
  for the run and the opponent alike. The mccfrb solvers take
  representation="auto" (a compiled tree, an engine, whatever the game
  allows)."""
  evaluation = Evaluation(game, seed, episodes, confidence, opponents,
                          bound_seconds, clock, bound_threads)
  return wallclock.timed_run(game, algorithm, seed, targets, on_row,
                             evaluate=evaluation, representation="auto",
                             clock=evaluation.clock)


# The x axis of the plots, by training clock.
XLABELS = {"wall": "training seconds (wall clock, one core; evaluation "
                   "excluded)",
           "cpu": "training CPU seconds (one core; evaluation excluded)"}


def plot(frame, game, path, clock="wall"):
  """The head-to-head mean by training seconds (on `clock`, a key of
  CLOCKS) with its interval, a panel per opponent, a line per algorithm
  (over seeds: the mean of the means and of the interval bounds at each
  checkpoint)."""
  import matplotlib  # pylint: disable=import-outside-toplevel
  matplotlib.use("Agg")
  import matplotlib.ticker  # pylint: disable=import-outside-toplevel
  import matplotlib.pyplot as plt  # pylint: disable=import-outside-toplevel
  rows = frame[frame.game == game]
  opponents = [o for o in OPPONENTS if o in set(rows.opponent)]
  fig, axes = plt.subplots(1, len(opponents), figsize=(5 * len(opponents), 4),
                           squeeze=False, sharey=True)
  for ax, opponent in zip(axes[0], opponents):
    for algorithm, runs in rows[rows.opponent == opponent].groupby(
        "algorithm"):
      mean = runs.groupby("target", as_index=False)[
          ["seconds", "mean", "low", "high"]].mean()
      line, = ax.plot(mean.seconds, mean["mean"], marker="o",
                      label=algorithm)
      ax.fill_between(mean.seconds, mean.low, mean.high, alpha=0.2,
                      color=line.get_color())
      _error_bars(ax, mean, "mean", line.get_color())
    ax.axhline(0.0, color="black", linewidth=0.8)
    ax.set_xscale("log")
    ticks = sorted(set(rows.target))  # The checkpoints, as plain numbers.
    ax.set_xticks(ticks, [f"{t:g}" for t in ticks])
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.set_xlabel(XLABELS[clock])
    ax.set_title(f"against {opponent}", fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
  axes[0][0].set_ylabel("mean return over both seats (band: interval)")
  axes[0][-1].legend(fontsize=8)
  fig.suptitle(game, fontsize=8)
  fig.tight_layout()
  fig.savefig(path, dpi=120)
  plt.close(fig)


def _error_bars(ax, mean, column, color):
  """The intervals [low, high] around `column` as capped bars (visible
  where a band of one checkpoint is not)."""
  ax.errorbar(mean.seconds, mean[column],
              yerr=[mean[column] - mean.low, mean.high - mean[column]],
              fmt="none", ecolor=color, capsize=4)


def plot_path(out_dir, game):
  """Where `plot` puts the figure of `game` in `out_dir`."""
  return os.path.join(out_dir, f"head_to_head_{analysis.game_slug(game)}.png")


def plot_bound(frame, game, path, clock="wall"):
  """The exploitability bound (rows with BOUND_COLUMNS) by training seconds
  (on `clock`) with its interval, a line per algorithm, responder budget
  and responder threads (over seeds: the mean of the bounds and of the
  interval ends)."""
  import matplotlib  # pylint: disable=import-outside-toplevel
  matplotlib.use("Agg")
  import matplotlib.ticker  # pylint: disable=import-outside-toplevel
  import matplotlib.pyplot as plt  # pylint: disable=import-outside-toplevel
  rows = frame[frame.game == game]
  fig, ax = plt.subplots(figsize=(7, 4.5))
  for (algorithm, budget, threads), runs in rows.groupby(
      ["algorithm", "bound_seconds", "bound_threads"]):
    mean = runs.groupby("target", as_index=False)[
        ["seconds", "exploitability_bound", "low", "high",
         "responder_walks"]].mean()
    budget = (f"{budget:g} s" if threads == 1 else
              f"{budget:g} s each on {threads} threads")
    line, = ax.plot(mean.seconds, mean.exploitability_bound, marker="o",
                    label=f"{algorithm} (responders {budget}, "
                    f"{mean.responder_walks.iloc[-1]:,.0f} walks)")
    ax.fill_between(mean.seconds, mean.low, mean.high, alpha=0.2,
                    color=line.get_color())
    _error_bars(ax, mean, "exploitability_bound", line.get_color())
  ax.axhline(0.0, color="black", linewidth=0.8)
  ax.set_xscale("log")
  ticks = sorted(set(rows.target))
  ax.set_xticks(ticks, [f"{t:g}" for t in ticks])
  ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
  ax.set_xlabel(XLABELS[clock])
  ax.set_ylabel("lower bound on exploitability (band: interval)")
  coverage = (1.0 + float(rows.confidence.iloc[0])) / 2.0
  ax.set_title(f"{game}:\neach policy's exploitability is above the band's "
               f"lower edge (probability about {coverage:.1%})", fontsize=8)
  ax.grid(True, which="both", alpha=0.3)
  ax.legend(fontsize=7)
  fig.tight_layout()
  fig.savefig(path, dpi=120)
  plt.close(fig)


def plot_bound_path(out_dir, game):
  """Where `plot_bound` puts the figure of `game` in `out_dir`."""
  return os.path.join(out_dir, f"bound_{analysis.game_slug(game)}.png")
