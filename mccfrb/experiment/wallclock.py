"""Training by the clock on big games, evaluated by the streaming walk.

The comparison "where sampling wins" (docs/pages/results.md): on a game
too large to compile (goofspiel with 6 cards), each algorithm trains for a budget of
seconds on one core; at checkpoints the clock stops, the average policy's
exploitability is computed by the streaming walk of the public tree
(mccfrb/solvers/stream.py), and a row is written. `experiments/big_games.py` is the
binary; `ALGORITHMS` the configurations it knows. Games whose exploitability
cannot be computed are scored head to head instead
(mccfrb/experiment/head_to_head.py passes its evaluation to `timed_run`).
"""

import contextlib
import os
import time

import numpy as np
import pyspiel

from mccfrb import games
from mccfrb.solvers import stream
from mccfrb.games.engines import engine_for
from mccfrb.games.engines import goofspiel as goofspiel_engine
from mccfrb.solvers import engine as engine_solvers
from mccfrb.solvers import representation as representation_lib
from mccfrb import tables as tables_lib


def _mccfrb(**options):
  return _sampler("MCCFRbSolver", **options)


def _public(**options):
  return _sampler("PublicSamplingSolver", **options)


def _sampler(solver_class, **options):
  def make(game, seed, representation="engine", **extra):
    from mccfrb import solvers  # pylint: disable=import-outside-toplevel
    solver = getattr(solvers, solver_class)(game, seed=seed,
                                            representation=representation,
                                            **{**options, **extra})
    return _SolverRunner(solver)
  return make


def _external(**options):
  return _sampler("ExternalSamplingSolver", **options)


def _cfr(variant):
  def make(game, seed, representation="engine"):  # pylint: disable=unused-argument
    from mccfrb.solvers import CFRSolver  # pylint: disable=import-outside-toplevel
    return _SolverRunner(CFRSolver(game, variant=variant,
                                   representation=representation), chunk=1)
  return make


# name -> (factory(game, seed) -> runner, one line for the README).
ALGORITHMS = {
    "mccfrb_defaults": (_mccfrb(),
                        "MCCFRbSolver's defaults (on an engine: MCCFRb+, "
                        "RM+ and optimistic linear averaging, the "
                        "situation-keyed baseline, float32 tables, 8 "
                        "episodes in flight)"),
    "mccfrb_plus_situation": (_mccfrb(baseline="situation"),
                              "MCCFRb+ with the situation-keyed baseline"),
    "mccfrb_plus_public": (_mccfrb(baseline="public"),
                           "MCCFRb+ with the public-state baseline"),
    "mccfrb_plus_learned": (_mccfrb(baseline="learned"),
                            "MCCFRb+ (RM+, optimistic averaging), learned "
                            "infoset baseline"),
    "mccfrb_plus_thesis": (_mccfrb(baseline="thesis"),
                           "MCCFRb+ with the thesis's baseline"),
    "mccfrb_plus_probe": (_mccfrb(baseline="probe"),
                          "MCCFRb+ with probing (Gibson et al. 2012; an "
                          "engine)"),
    "mccfrb_plus_none": (_mccfrb(baseline="none"),
                         "MCCFRb+ without a baseline"),
    "mccfrb_plus_history": (_mccfrb(baseline="history"),
                            "MCCFRb+ with the history baseline (per "
                            "history, hashed)"),
    "mccfrb_plus_predictive": (_mccfrb(baseline="predictive"),
                               "MCCFRb+ with the predictive baseline (per "
                               "history, hashed)"),
    "public_none": (_public(baseline="none"),
                    "public-state sampling (MCCFRb+), no baseline"),
    "public_history": (_public(baseline="history"),
                       "public-state sampling (MCCFRb+), history baseline"),
    "public_predictive": (_public(baseline="predictive"),
                          "public-state sampling (MCCFRb+), predictive "
                          "baseline"),
    "public_chance": (_public(baseline="none", sampling="chance"),
                      "public chance sampling (MCCFRb+), no baseline"),
    "os": (_mccfrb(baseline="none", regret="rm", averaging="stochastic"),
           "outcome sampling, no baseline (OpenSpiel's algorithm)"),
    "es": (_external(), "external sampling"),
    "es_linear": (_external(weighting="linear"),
                  "external sampling, linear weighting"),
    "es_discounted": (_external(weighting="discounted"),
                      "external sampling, DCFR(1.5, 0, 2) weighting"),
    "openspiel_os_cpp": (lambda game, seed, representation=None:
                         OpenSpielRunner(game, seed),
                         "OpenSpiel's C++ outcome sampling"),
    "os_at_openspiel_speed": (
        lambda game, seed, representation="engine", **extra: PacedRunner(
            game, seed, representation, **extra),
        "OpenSpiel's algorithm at OpenSpiel's speed: mccfrb's "
        "OutcomeSamplingSolver run for the iterations OpenSpiel's C++ "
        "outcome sampling runs in the same seconds (its rate measured in "
        "the run)"),
    "cfr+": (_cfr("cfr+"), "exact CFR+, streamed"),
    "dcfr": (_cfr("discounted"), "exact DCFR, streamed"),
    "pcfr+": (_cfr("pcfr+"), "exact PCFR+, streamed"),
    "dcfr+": (_cfr("dcfr+"), "exact DCFR+, streamed"),
    "pdcfr+": (_cfr("pdcfr+"), "exact PDCFR+, streamed"),
}


class _Runner:
  """What `timed_run` asks of a runner besides `run(n)`, `iterations`,
  `chunk`, `policy()`, `memory_bytes()` and `exploitability(threads)` (the
  exact value by the streaming walk on that many threads)."""

  def train_until(self, trained, target, n, clock):
    """Trains until the training seconds reach `target` (module function
    `train_until`); returns (training seconds, next chunk)."""
    return train_until(self, trained, target, n, clock)

  def row_fields(self):
    """Columns a checkpoint's rows get from the runner itself."""
    return {}


class _SolverRunner(_Runner):
  """An mccfrb solver on its engine."""

  def __init__(self, solver, chunk=None):
    self.solver = solver
    self.chunk = chunk

  @property
  def iterations(self):
    return self.solver.num_iterations

  def run(self, n):
    self.solver.run(n, progress=False)  # Rows per checkpoint, no bar.

  def exploitability(self, threads=1):
    return engine_solvers.engine_policy_nash_conv(
        self.solver.average_policy(), progress=False, threads=threads) / 2.0

  def policy(self):
    """The average policy (an OpenSpiel policy), for head-to-head play."""
    return self.solver.average_policy()

  def memory_bytes(self):
    return self.solver.memory()["bytes"]


class OpenSpielRunner(_Runner):
  """pyspiel.OutcomeSamplingMCCFRSolver (epsilon 0.6, OpenSpiel's default),
  on any game; its exploitability is computed on goofspiel engines only (its
  policy read into engine tables, goofspiel's infoset keys from OpenSpiel's
  strings, and evaluated by ours)."""

  def __init__(self, game, seed):
    self.game = games.load_game(game)
    self.engine = engine_for(self.game)
    self.start_bytes = _resident_bytes()
    self.solver = pyspiel.OutcomeSamplingMCCFRSolver(self.game, 0.6, seed)
    self.iterations = 0
    self.chunk = None

  def run(self, n):
    for _ in range(n):
      self.solver.run_iteration()
    self.iterations += n

  def policy(self):
    """The average policy (a `pyspiel.Policy`), for head-to-head play."""
    return self.solver.average_policy()

  def exploitability(self, threads=1):
    if self.engine is None or self.engine.name != "goofspiel":
      raise ValueError("openspiel_os_cpp is evaluated on goofspiel engines "
                       f"only (its strings are parsed); got {self.game}. "
                       "Score it head to head (--evaluator=head_to_head).")
    tables = tables_lib.HashedTable(self.engine.max_moves, ("regret", "avg"))
    for key, avg in openspiel_average_table(self.solver):
      player = int(key.split("\n", 1)[0].rsplit(" ", 1)[-1])
      h1, h2 = goofspiel_engine.infoset_hash_from_string(self.engine, player,
                                                         key)
      r = tables.insert(h1, h2, len(avg))
      tables.field(r, "avg")[:] = avg
    return stream.engine_exploitability(self.engine, tables, progress=False,
                                        threads=threads)

  def memory_bytes(self):
    """Growth of the process's resident memory since the solver was made
    (its tables; our evaluation's tables are freed by then)."""
    now = _resident_bytes()
    return None if now is None or self.start_bytes is None else (
        now - self.start_bytes)


class PacedRunner(_SolverRunner):
  """OpenSpiel's outcome sampling at OpenSpiel's speed, in mccfrb's tables.

  mccfrb's `OutcomeSamplingSolver` is OpenSpiel's algorithm (epsilon 0.6,
  regret matching, stochastic averaging; equal in distribution to
  OpenSpiel's outcome sampling, tests/test_solvers.py), and its policy is
  an `EnginePolicy` that the fast exploitability bound reads. Its clock is
  OpenSpiel's: at each checkpoint OpenSpiel's C++ solver
  (`OpenSpielRunner`, the same seed) trains until *its* seconds reach the
  target, then mccfrb's solver runs as many iterations as it did.
  OpenSpiel's solver keeps every infoset it meets (about 22 KB an
  iteration on 13-card goofspiel), so it trains for at most
  `openspiel_seconds` in all and is then freed; past them its last rate
  (the iterations of its last chunk over that chunk's seconds) sets the
  iterations of the remaining seconds, which can only favour it: its rate
  falls as its tables grow.
  """

  def __init__(self, game, seed, representation="engine",
               openspiel_seconds=60.0):
    from mccfrb import solvers  # pylint: disable=import-outside-toplevel
    super().__init__(solvers.OutcomeSamplingSolver(
        game, seed=seed, representation=representation))
    self.openspiel = OpenSpielRunner(game, seed)
    self.openspiel_seconds = float(openspiel_seconds)
    self._measured = (0.0, 0)  # OpenSpiel's seconds and iterations.
    self._rate = 0.0  # Its iterations a second in its last chunk.
    self.mccfrb_seconds = 0.0

  def train_until(self, trained, target, n, clock):
    """OpenSpiel's solver trains to `target` of its seconds (at most
    `openspiel_seconds`; past them its last rate extrapolates), then
    mccfrb's catches up to its iterations; returns (OpenSpiel's seconds,
    next chunk)."""
    if self.openspiel is not None:
      while trained < min(target, self.openspiel_seconds):
        start = clock()
        self.openspiel.run(n)
        elapsed = clock() - start
        trained += elapsed
        self._rate = n / max(elapsed, 1e-9)
        if elapsed < 0.2:
          n *= 2
      self._measured = (trained, self.openspiel.iterations)
      if trained >= self.openspiel_seconds:
        self.openspiel = None  # Its tables are not needed any more.
    seconds, iterations = self._measured
    if target > seconds:
      iterations += int(round(self._rate * (target - seconds)))
      trained = target
    start = clock()
    if iterations > self.solver.num_iterations:
      self.solver.run(iterations - self.solver.num_iterations,
                      progress=False)
    self.mccfrb_seconds += clock() - start
    return trained, n

  def row_fields(self):
    """OpenSpiel's iterations a second (its last chunk's), the seconds it
    trained (the rest extrapolated at that rate), and mccfrb's own
    training seconds."""
    return dict(openspiel_rate=self._rate,
                openspiel_seconds=self._measured[0],
                mccfrb_seconds=self.mccfrb_seconds)


def openspiel_average_table(solver):
  """(information state string, cumulative average float64[A]) of every
  infoset an OpenSpiel C++ MCCFR solver stores, read from its serialised
  state (its Python bindings expose the average only state by state):
  entries "key<~>actions;regrets;average;current" with hex floats, read one
  at a time (the text is several GB after minutes on goofspiel 6)."""
  text = solver.__getstate__()
  marker = "[SolverValuesTable]\n"
  at = text.find(marker)
  if at < 0:
    return
  at += len(marker)
  while True:  # key<~>values<~>key<~>values...: keys may hold newlines.
    middle = text.find("<~>", at)
    if middle < 0:
      return
    end = text.find("<~>", middle + 3)
    end = len(text) if end < 0 else end
    fields = text[middle + 3:end].split(";")
    yield text[at:middle], np.array([float.fromhex(x)
                                     for x in fields[2].split(",")])
    at = end + 3
    if at >= len(text):
      return


def factory_of(algorithm):
  """The factory(game, seed, representation) of an algorithm name: a key of
  ALGORITHMS, optionally with solver options after colons, e.g.
  "mccfrb_plus_learned:precision=float32:in_flight=8" (values are read as
  ints, floats, None or strings; mccfrb's sampling solvers only).

  Raises:
    ValueError: an unknown name, or options for an algorithm that takes
      none.
  """
  name, *pairs = str(algorithm).split(":")
  if name not in ALGORITHMS:
    raise ValueError(f"Unknown algorithm {name!r}; known: "
                     f"{', '.join(ALGORITHMS)}.")
  factory = ALGORITHMS[name][0]
  if not pairs:
    return factory
  options = {}
  for pair in pairs:
    key, sep, value = pair.partition("=")
    if not sep or not key:
      raise ValueError(f"algorithm {algorithm!r}: options are key=value "
                       f"after colons, got {pair!r}.")
    options[key] = _option_value(value)
  if factory.__code__.co_varnames[:4] != ("game", "seed", "representation",
                                          "extra"):
    raise ValueError(f"algorithm {name!r} takes no options (got "
                     f"{algorithm!r}).")
  return lambda game, seed, representation="engine": factory(
      game, seed, representation, **options)


def _option_value(text):
  if text == "None":
    return None
  for kind in (int, float):  # The first type the text parses as.
    with contextlib.suppress(ValueError):
      return kind(text)
  return text  # Not a number: the option's value is the string.


def _resident_bytes():
  """This process's resident memory now (Linux), or None."""
  try:
    with open("/proc/self/statm", encoding="ascii") as f:
      return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
  except (OSError, ValueError, IndexError):
    return None


def small_instance(game):
  """A small instance of the same engine and options (for compiling the
  kernels before the clock starts): 3 cards, or 1 die of 2 sides; the game
  itself for a game without an engine or whose engine plays one size
  (phantom_ttt)."""
  engine = engine_for(games.load_game(game))
  if engine is None or engine.name not in ("goofspiel", "liars_dice"):
    return game
  params = games.load_game(game).get_parameters()
  params = dict(params.get("game", params))
  name = params.pop("name", engine.name)
  if engine.name == "goofspiel":
    params["num_cards"] = 3
  else:
    params.update(numdice=1, dice_sides=2)
  inner = ",".join(f"{k}={v}" for k, v in sorted(params.items()))
  return f"{name}({inner})"


def checkpoints(seconds, count):
  """`count` training times, log-spaced, ending at `seconds`."""
  return [float(x) for x in np.geomspace(seconds / 2 ** (count - 1), seconds,
                                         count)]


def timed_run(game, algorithm, seed, targets, on_row=None, evaluate=None,
              representation="engine", clock=time.perf_counter,
              eval_threads=1):
  """Trains `algorithm` on `game`, evaluating when the training time
  (evaluation excluded) reaches each of `targets` (seconds, increasing).

  Args:
    game, algorithm, seed: what runs (`algorithm` a key of ALGORITHMS).
    targets: training seconds of the checkpoints, increasing.
    on_row: called with each row as soon as it is measured.
    evaluate: None (the exploitability) or a function (runner, trained
      seconds) -> list of dicts, the columns of one row each (with their own
      `eval_seconds` if they time themselves).
    representation: of the mccfrb solvers ("engine": the streaming
      exploitability needs one; "auto" for head-to-head evaluation).
    clock: what training seconds are read on: the wall clock, or
      `time.process_time` (CPU seconds of the process).
    eval_threads: threads of the default evaluation's streaming walk (the
      value does not depend on it; training stays on one).

  Returns:
    A list of row dicts: game, algorithm, seed, target (seconds asked),
    seconds (trained), iterations, the evaluation's columns (by default
    exploitability), eval_seconds, memory_bytes.
  """
  targets = [float(t) for t in targets]
  if not targets or any(t <= 0 for t in targets) or targets != sorted(targets):
    raise ValueError(f"checkpoint seconds must be positive and increasing, "
                     f"got {targets}.")
  if evaluate is None:
    evaluate = lambda runner, trained: [  # pylint: disable=g-long-lambda
        dict(exploitability=runner.exploitability(eval_threads))]
  factory = factory_of(algorithm)
  if representation == "auto":  # The warm-up compiles the kernels it uses.
    representation, _ = representation_lib.resolve(games.load_game(game),
                                                   "auto", grown=True)
  factory(small_instance(game), seed, representation).run(2)  # Compiles.
  runner = factory(game, seed, representation)
  rows, trained, n = [], 0.0, 1
  evaluated_at = -1
  for target in targets:
    if trained >= target and runner.iterations == evaluated_at:
      continue  # One exact iteration outlasted several checkpoints.
    trained, n = runner.train_until(trained, target, n, clock)
    start = time.perf_counter()
    evaluated_at = runner.iterations
    measured = evaluate(runner, trained)
    elapsed = time.perf_counter() - start
    for fields in measured:
      row = dict(game=str(game), algorithm=algorithm, seed=seed,
                 target=target, seconds=trained,
                 iterations=runner.iterations, **runner.row_fields(),
                 **fields)
      row.setdefault("eval_seconds", elapsed)
      row["memory_bytes"] = runner.memory_bytes()
      rows.append(row)
      if on_row is not None:
        on_row(row)
  return rows


def train_until(runner, trained, target, n=1, clock=time.perf_counter):
  """Runs `runner` until its training seconds on `clock` (the wall clock,
  or `time.process_time`), `trained` so far, reach `target`, in chunks of
  `n` iterations doubled while they take under 0.2 s (or of
  `runner.chunk` iterations); returns (the training seconds then, the next
  chunk size)."""
  while trained < target:
    if runner.chunk is not None:
      n = runner.chunk
    start = clock()
    runner.run(n)
    elapsed = clock() - start
    trained += elapsed
    if runner.chunk is None and elapsed < 0.2:
      n *= 2
  return trained, n
