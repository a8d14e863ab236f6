r"""Speed of mccfrb against OpenSpiel, measured in the same run, single core.

  python -m experiments.benchmark                       # every section
  python -m experiments.benchmark --sections=exploitability --seconds=2

Sections:
  exploitability: mccfrb.exploitability on mccfrb tables against
    pyspiel.exploitability on a ready pyspiel policy (values must agree).
  outcome: MCCFRbSolver.run iterations per second for every baseline kind
    against pyspiel.OutcomeSamplingMCCFRSolver (C++) and OpenSpiel's Python
    OutcomeSamplingSolver.
  external: ExternalSamplingSolver.run (plain, linear, discounted, pruned)
    against pyspiel.ExternalSamplingMCCFRSolver.
  cfr: CFRSolver.run for each variant against pyspiel.CFRSolver and
    pyspiel.CFRPlusSolver; for cfr+ and discounted the default pass
    structure (passes="auto": rows mccfrb_cfr+, mccfrb_discounted), the two
    sweeps (*_sweeps) and the former four sweeps (*_four_sweeps), timed in
    turns, with the column vs_four_sweeps = rate / four-sweep rate; and
    simultaneous-update CFR (CFRSolver(variant="cfr",
    alternating_updates=False), row SIMULTANEOUS_ROW): pyspiel's C++
    CFRSolver takes no such option, so its ratio is to the C++ solver as
    it is (alternating updates, one pass per player an iteration).
  engines: on goofspiel 6, OpenSpiel's default 13-card goofspiel and
    phantom_ttt (too large to compile; native engines; phantom_ttt's
    kernels compile on the game itself, which has one size),
    ENGINE_CONFIGS (MCCFRbSolver with its defaults; with float64 or float32
    tables and one episode at a time;
    with float64 tables and its default episodes in flight;
    OutcomeSamplingSolver; ExternalSamplingSolver on goofspiel 6 only: a
    traversal of 13-card goofspiel explores 12! histories) against
    pyspiel.OutcomeSamplingMCCFRSolver, each from an empty table for
    max(--seconds, 5) s (rates fall as tables grow, so each timing starts
    from a new solver; value: bytes per stored infoset by memory(),
    everything counted); and the construction of a goofspiel 6 solver
    (value: seconds). Not in the default sections.
  engine_kernels: on Leduc's compiled tree, the engine kernels (hashed
    tables over the tree, at float64 one episode at a time and at the
    engine defaults, float32 and 8 in flight) against the tree kernels
    (dense tables), for plain outcome sampling and MCCFRb+ without a
    baseline and with the predictive one (MCCFRbSolver's default on a
    tree); ratio against pyspiel.OutcomeSamplingMCCFRSolver. Not in the
    default sections.
  engine_memory: on 13-card goofspiel, MCCFRbSolver (defaults) and
    OpenSpiel's C++ outcome sampling each trained in a fresh process to
    the iterations OpenSpiel runs in max(--seconds, 60) s, resident memory
    (above the idle process, mb) at eight equal iteration counts (ratio:
    ours / OpenSpiel's at the same iterations; plot
    memory_goofspiel13.png beside --out), and bytes per stored infoset by
    memory(). Not in the default sections.
  head_to_head: on phantom_ttt, mccfrb.head_to_head episodes per second
    (calls of 20,000 episodes, answers cached within a call): two uniform
    policies; OpenSpiel's C++ outcome sampling's average policy (100,000
    iterations, seed 0; a pyspiel.Policy, tabular) against uniform, cached
    and with cache=False; ratio: against a bare loop of pyspiel calls
    playing uniformly random episodes (new_initial_state, legal_actions,
    information_state_string, apply_action, returns). Not in the default
    sections.
  engine_exact: on goofspiel 6, in a fresh process, three exact CFR+
    iterations (the first inserts every infoset's row) and the streaming
    exploitability of their average (value: seconds; mb: the process's
    peak resident memory). Not in the default sections.
  bound: on 13-card goofspiel and phantom_ttt (native engines), the
    training walks a second of mccfrb.approximate_exploitability's
    responders (both players together, the engine route, max(2 --seconds,
    10) s of training, value: the bound) for MCCFRbSolver's defaults
    trained BOUND_POLICIES iterations (about one and ten minutes on one
    core); ratio: over the states route (representation="states": pyspiel
    states in Python) on the phantom_ttt policy trained a minute, timed
    once in the same run (its value scored on 100 episodes only: the row
    is there for its rate; NaN on goofspiel: a states-route walk explores
    the responder's 13! orders of bids and never ends). Not in the default
    sections.
  first_use: the cold first use of each solver kind on each
    representation (FIRST_USE: a compiled tree, the goofspiel and
    phantom_ttt engines, a grown tree), each in a fresh process with an
    empty NUMBA_CACHE_DIR: the seconds from the solver's construction to
    the end of its first run of 10 iterations, the import excluded
    (value), and the same in a second fresh process on the filled cache
    (warm_seconds); ratio = value / 15 s, the goal. Not in the default
    sections.
  grown: on games that do not compile (--grown_games: phantom_ttt, 3x3
    and 4x4 dark_hex, oshi_zumo, and battleship, 300 actions),
    OutcomeSamplingSolver on a grown tree, in a fresh process:
    its iterations per CPU second (one thread; CPU time, so that the
    rates hold on a shared machine) over 10 s after max(--seconds, 60) s
    of growing, against pyspiel.OutcomeSamplingMCCFRSolver over 10 s after
    as long; memory() of mccfrb's bytes per stored node (node and child-slot
    arrays) and per stored infoset (infoset arrays, hash and tables),
    capacity included; peak resident memory (mb, above an idle import) of
    both at the same number of iterations (OpenSpiel's in a third process
    that runs mccfrb's iteration count); kernel_share:
    the part of mccfrb's 10 s spent in the kernel (outcome.tree_episodes),
    the rest being Python expansions, which bounds what episodes in flight
    could gain there. Not in the default sections.
  grown_keys: what a grown tree's infoset key costs (--grown_games), in
    microseconds per key over the decision states of one seeded random
    play-out: the information state string and its 128-bit BLAKE2b hash
    (what mccfrb/games/grown.py does), against the information state
    tensor as float32 bytes and their hash (value: microseconds; NaN
    where the game offers no tensor). Not in the default sections.
  engines_after_60s: phantom_ttt and 3x3 dark_hex on their native
    engines: MCCFRbSolver's defaults and pyspiel.OutcomeSamplingMCCFRSolver,
    each in a fresh process, trained max(--seconds, 60) CPU seconds and
    then timed over 10 (the rate after a minute of training); peak resident memory
    (mb, the whole process) and mccfrb's bytes per infoset. Not in the
    default sections.
  cfr_goofspiel5: the same comparison of the pass structures on
    goofspiel 5 (3.35 million histories: about 12 s to compile and 1 GB);
    not in the default sections.
  regret: MCCFRbSolver with regret="rm+" (MCCFRb+) against the same
    configuration with regret="rm" (ratio = rm+ rate / rm rate; the goal is
    at most 5 percent slower, ratio >= 0.95).
  public: PublicSamplingSolver iterations and histories touched per second
    (one node counted per evaluated edge, the predictive pass included)
    against pyspiel.CFRPlusSolver's node throughput, counted as two full
    tree walks per iteration (one per player, alternating updates); the
    ratio divides node rates.
  mcts: UCTSolver and SmoothUCTSolver simulations per second (two per
    iteration), self-play and against a uniform opponent, against
    pyspiel.OutcomeSamplingMCCFRSolver's iterations per second, for scale
    (different algorithms: the ratio says how fast one simulation is, not
    which converges faster).
  compile: mccfrb.compile_tree in nodes (histories) per second against a
    plain Python walk of the same pyspiel states that reads what the
    compile reads (chance outcomes, legal actions, information state
    strings, returns) and stores nothing; value is the tree's bytes per
    node.
  scaling: iterations per second of the sampling solvers' defaults
    (MCCFRbSolver, PublicSamplingSolver, ExternalSamplingSolver,
    SmoothUCTSolver: an iteration is two simulations) at each of
    --threads threads with the solver's default batch size; ratio = rate
    at k threads / rate at 1 thread with the same batch size (the same
    tables: they do not depend on the thread count); vs_unbatched = rate /
    the unbatched solver's (threads=1, batch=None, the single-core
    algorithm). Then exact CFR+ iterations (CFRSolver(variant="cfr+",
    threads=k)) and `mccfrb.exploitability(..., threads=k)` evaluations per
    second at each thread count, timed in turns; ratio = rate at k threads
    / rate at 1 thread (the same values at every thread count).
Each rate is the best of --repeats timings of at least --seconds each; the
ratio column divides by the OpenSpiel C++ rate of the same game and run.
Every section but scaling runs on one core (numba.set_num_threads(1));
NUMBA_NUM_THREADS defaults to the machine's cores here, so that the scaling
section can use them.
"""

import hashlib
import math
import os
import platform
import sys
import time
import timeit

os.environ.setdefault("NUMBA_NUM_THREADS", str(os.cpu_count() or 1))
# Run by path (python experiments/NAME.py) as well as with -m:
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app  # pylint: disable=g-import-not-at-top
from absl import flags
import numba
import numpy as np
import pandas as pd
import pyspiel
from open_spiel.python.algorithms import outcome_sampling_mccfr as os_mccfr

import mccfrb
from mccfrb.experiment import wallclock
from mccfrb.games import grown as grown_lib
from experiments.common import GOOFSPIEL4
from experiments.common import GOOFSPIEL5
from experiments import common
from experiments.common import rejoin_game_list

DEFAULT_SECTIONS = ("exploitability", "outcome", "external", "cfr", "regret",
                    "public", "mcts", "compile", "scaling")
SECTIONS = DEFAULT_SECTIONS + ("cfr_goofspiel5", "engines", "engine_kernels",
                                "engine_memory",
                                "engine_exact", "rules", "hogwild",
                                "head_to_head", "grown", "grown_keys",
                                "engines_after_60s", "first_use", "bound")
# The games of the grown and engines_after_60s sections: too large to
# compile, timed on grown trees and on their native engines.
GROWN_GAMES = ("phantom_ttt", "dark_hex(num_rows=3,num_cols=3)")
# The games of the grown section: those two, and games without an engine,
# one of them with 300 actions (battleship).
GROWN_SECTION_GAMES = GROWN_GAMES + ("dark_hex(num_rows=4,num_cols=4)",
                                     "oshi_zumo", "battleship")
# The big games of the engine sections (too large to compile).
GOOFSPIEL6 = ("goofspiel(num_cards=6,imp_info=True,points_order=random,"
              "returns_type=point_difference)")
BIG_GAMES = (GOOFSPIEL6, "goofspiel", "phantom_ttt")
# The bound section's policies: MCCFRbSolver's defaults trained this many
# iterations (about a minute, then about ten, on one core).
BOUND_POLICIES = {"goofspiel": (2_000_000, 20_000_000),
                  "phantom_ttt": (10_000_000, 100_000_000)}

_SECTIONS = flags.DEFINE_list("sections", list(DEFAULT_SECTIONS),
                              f"Which benchmarks, of {', '.join(SECTIONS)}.")
_SECONDS = flags.DEFINE_float("seconds", 1.0, "Minimum time of one timing.")
_GROWN_GAMES = flags.DEFINE_list("grown_games", list(GROWN_SECTION_GAMES),
                                 "Games of the grown section.")
_REPEATS = flags.DEFINE_integer("repeats", 3, "Timings per entry; best kept.")
_EXPL_GAMES = flags.DEFINE_list("exploitability_games",
                                ["leduc_poker", "liars_dice(numdice=1)"],
                                "Games of the exploitability section.")
_SOLVER_GAMES = flags.DEFINE_list("solver_games", ["leduc_poker", GOOFSPIEL4],
                                  "Games of the solver sections.")
_COMPILE_GAMES = flags.DEFINE_list(
    "compile_games", ["leduc_poker", GOOFSPIEL4, "liars_dice(numdice=1)"],
    "Games of the compile section.")
_OUT = flags.DEFINE_string("out", "", "Optional CSV path for the table.")
_THREADS = flags.DEFINE_list(
    "threads", [str(2**k) for k in range(8) if 2**k <= (os.cpu_count() or 1)]
    or ["1"], "Thread counts of the scaling section (1 first).")


def rate(step, units_per_step, seconds, repeats):
  """Best units per second of `step()` over `repeats` timings >= `seconds`."""
  step()  # Warm up (numba compilation, caches).
  best = 0.0
  for _ in range(repeats):
    calls, start = 0, time.perf_counter()
    while True:
      step()
      calls += 1
      elapsed = time.perf_counter() - start
      if elapsed >= seconds:
        break
    best = max(best, calls * units_per_step / elapsed)
  return best


def iterations_per_second(run, seconds, repeats):
  """Rate of `run(n)` in iterations per second, with n grown to fill time."""
  run(1)  # Warm up (numba compilation or cache loading) before sizing.
  chunk = 1
  while True:
    start = time.perf_counter()
    run(chunk)
    if time.perf_counter() - start > 0.05 * seconds or chunk > 1 << 24:
      break
    chunk *= 4
  return rate(lambda: run(chunk), chunk, seconds, repeats)


def loop(step):
  def run(n):
    for _ in range(n):
      step()
  return run


def exploitability_rows(seconds, repeats):
  rows = []
  for game_string in rejoin_game_list(_EXPL_GAMES.value):
    game = mccfrb.load_game(game_string)
    tree = mccfrb.compile_tree(game)
    rng = np.random.default_rng(0)
    legal = tree.legal_mask()
    table = np.where(legal, rng.random(legal.shape), 0.0)
    table /= table.sum(axis=1, keepdims=True)
    ours = mccfrb.exploitability(tree, table)
    theirs = pyspiel.exploitability(game, mccfrb.to_pyspiel_policy(tree, table))
    policy = mccfrb.to_pyspiel_policy(tree, table)
    ours_rate = rate(lambda: mccfrb.exploitability(tree, table), 1, seconds,
                     repeats)
    theirs_rate = rate(lambda: pyspiel.exploitability(game, policy), 1,
                       seconds, repeats)
    rows.append({"section": "exploitability", "game": game_string,
                 "algorithm": "mccfrb.exploitability", "per_second": ours_rate,
                 "ratio": ours_rate / theirs_rate, "value": ours})
    rows.append({"section": "exploitability", "game": game_string,
                 "algorithm": "pyspiel.exploitability",
                 "per_second": theirs_rate, "ratio": 1.0, "value": theirs})
    if abs(ours - theirs) > 1e-9:
      raise RuntimeError(f"exploitability differs on {game_string}: "
                         f"{ours} vs {theirs}")
  return rows


def outcome_rows(seconds, repeats):
  rows = []
  for game_string in rejoin_game_list(_SOLVER_GAMES.value):
    game = mccfrb.load_game(game_string)
    cpp = pyspiel.OutcomeSamplingMCCFRSolver(game, seed=0)
    cpp_rate = iterations_per_second(loop(cpp.run_iteration), seconds, repeats)
    np.random.seed(0)
    python_solver = os_mccfr.OutcomeSamplingSolver(game)
    py_rate = iterations_per_second(loop(python_solver.iteration),
                                    seconds, repeats)
    entries = [("openspiel_os_cpp", cpp_rate), ("openspiel_os_python", py_rate)]
    for kind in mccfrb.BASELINES:
      solver = mccfrb.MCCFRbSolver(game, baseline=kind, seed=0)
      entries.append((f"mccfrb_{kind}",
                      iterations_per_second(solver.run, seconds, repeats)))
    rows += rate_rows("outcome", game_string, entries, cpp_rate)
  return rows


def rate_rows(section, game_string, entries, reference_rate):
  """Table rows of (name, rate) entries, with the ratio to the reference."""
  return [{"section": section, "game": game_string, "algorithm": name,
           "per_second": r, "ratio": r / reference_rate} for name, r in entries]


def external_rows(seconds, repeats):
  rows = []
  for game_string in rejoin_game_list(_SOLVER_GAMES.value):
    game = mccfrb.load_game(game_string)
    cpp = pyspiel.ExternalSamplingMCCFRSolver(game, seed=0)
    cpp_rate = iterations_per_second(loop(cpp.run_iteration), seconds, repeats)
    entries = [("openspiel_es_cpp", cpp_rate)]
    for name, kwargs in [("mccfrb_es", {}), ("mccfrb_es_linear",
                                             {"weighting": "linear"}),
                         ("mccfrb_es_discounted", {"weighting": "discounted"}),
                         ("mccfrb_es_pruned", {"pruning": "pluribus",
                                               "prune_threshold": -300.0})]:
      solver = mccfrb.ExternalSamplingSolver(game, seed=0, **kwargs)
      solver.run(20_000)  # Past the warm-up, so the pruned one prunes.
      entries.append((name, iterations_per_second(solver.run, seconds,
                                                   repeats)))
    rows += rate_rows("external", game_string, entries, cpp_rate)
  return rows


def alternating_rates(runs, seconds, repeats):
  """Iterations per second of each `run(n)` in `runs`, timed in turns on
  the same iterations: every round runs each for the same n (about
  `seconds` for the slowest), best of `repeats` rounds, so that solvers stay
  at the same iteration and a busy moment of a shared machine hurts them
  alike."""
  chunk = 1
  while True:
    slowest = 0.0
    for run in runs:
      start = time.perf_counter()
      run(chunk)
      slowest = max(slowest, time.perf_counter() - start)
    if slowest > 0.05 * seconds or chunk > 1 << 24:
      break
    chunk *= 4
  n = chunk * max(1, math.ceil(seconds / slowest))
  best = [0.0] * len(runs)
  for _ in range(repeats):
    for k, run in enumerate(runs):
      start = time.perf_counter()
      run(n)
      best[k] = max(best[k], n / (time.perf_counter() - start))
  return best


PASS_VARIANTS = ("cfr+", "discounted")
# The cfr section's row of simultaneous-update CFR, against pyspiel's C++
# CFRSolver (which alternates: it has no simultaneous option).
SIMULTANEOUS_ROW = "mccfrb_cfr_simultaneous (C++ alternates)"


PASS_ROWS = (("", "auto"), ("_sweeps", "sweeps"),
             ("_four_sweeps", "four_sweeps"))


def pass_rows(game, tree, seconds, repeats):
  """CFRSolver's default pass structure ("auto"), the two sweeps and the
  former four sweeps for PASS_VARIANTS, timed in turns: [(name, rate,
  rate / four-sweep rate)]."""
  entries = []
  for variant in PASS_VARIANTS:
    solvers = [mccfrb.CFRSolver(game, variant=variant, tree=tree,
                                passes=passes) for _, passes in PASS_ROWS]
    rates = alternating_rates([s.run for s in solvers], seconds, repeats)
    entries += [(f"mccfrb_{variant}{suffix}", r, r / rates[-1])
                for (suffix, _), r in zip(PASS_ROWS, rates)]
  return entries


def cfr_rows(seconds, repeats):
  rows = []
  for game_string in rejoin_game_list(_SOLVER_GAMES.value):
    game = mccfrb.load_game(game_string)
    tree = mccfrb.compile_tree(game)
    cpp = pyspiel.CFRSolver(game)
    cpp_rate = iterations_per_second(loop(cpp.evaluate_and_update_policy),
                                     seconds, repeats)
    plus = pyspiel.CFRPlusSolver(game)
    entries = [("openspiel_cfr_cpp", cpp_rate),
               ("openspiel_cfr_plus_cpp", iterations_per_second(
                   loop(plus.evaluate_and_update_policy), seconds, repeats))]
    for variant in mccfrb.CFR_VARIANTS:
      if variant not in PASS_VARIANTS:
        solver = mccfrb.CFRSolver(game, variant=variant, tree=tree)
        entries.append((f"mccfrb_{variant}",
                        iterations_per_second(solver.run, seconds, repeats)))
    simultaneous = mccfrb.CFRSolver(game, variant="cfr", tree=tree,
                                    alternating_updates=False)
    entries.append((SIMULTANEOUS_ROW, iterations_per_second(
        simultaneous.run, seconds, repeats)))
    passes = pass_rows(game, tree, seconds, repeats)
    section = rate_rows("cfr", game_string,
                        entries + [e[:2] for e in passes], cpp_rate)
    against = {name: ratio for name, _, ratio in passes}
    for row in section:
      if row["algorithm"] in against:
        row["vs_four_sweeps"] = against[row["algorithm"]]
    rows += section
  return rows


def cfr_goofspiel5_rows(seconds, repeats):
  """The pass structures on goofspiel 5 (no OpenSpiel rate: its CFR
  takes minutes an iteration here)."""
  game = mccfrb.load_game(GOOFSPIEL5)
  tree = mccfrb.compile_tree(game)
  return [{"section": "cfr_goofspiel5", "game": GOOFSPIEL5, "algorithm": name,
           "per_second": r, "ratio": ratio, "vs_four_sweeps": ratio}
          for name, r, ratio in pass_rows(game, tree, seconds, repeats)]


class UserCFRPlus(mccfrb.RegretRule):
  """CFR+ as a user writes it (docs/pages/exact-cfr.md, "A rule of your
  own"): the rules section's yardstick of the extension point."""
  name = "user cfr+"
  clip = True

  def average_weight(self, t):
    return t


class UserPDCFRPlus(mccfrb.RegretRule):
  """PDCFR+ as a user writes it (Xu et al. 2024, alpha 2.3, gamma 5)."""
  name = "user pdcfr+"
  clip = True
  predictive = True

  def discount(self, t):
    return (t - 1) ** 2.3 / ((t - 1) ** 2.3 + 1)

  def average_weight(self, t):
    return t ** 5


def rules_rows(seconds, repeats):
  """A rule written by a user against the built-in variant of the same
  arithmetic: ratio = user / built-in iterations/s. Timed in turns in both
  orders and averaged per solver: the second of a pair runs 10-16% slower
  than the first on goofspiel 4 even when both are the same built-in
  (BUILD_NOTES.md, "Regret rules"); the control row times the built-in
  against a second copy of itself the same way."""
  rows = []
  for game_string in rejoin_game_list(_SOLVER_GAMES.value):
    game = mccfrb.load_game(game_string)
    tree = mccfrb.compile_tree(game)
    for other, built_in, name in (
        ("cfr+", "cfr+", "mccfrb_cfr+ (a second copy: control)"),
        (UserCFRPlus(), "cfr+", "user_cfr+"),
        (UserPDCFRPlus(), "pdcfr+", "user_pdcfr+")):
      a, b = (mccfrb.CFRSolver(game, variant=v, tree=tree)
              for v in (built_in, other))
      ab = alternating_rates([a.run, b.run], seconds, repeats)
      ba = alternating_rates([b.run, a.run], seconds, repeats)
      mine, theirs = (ab[0] + ba[1]) / 2, (ab[1] + ba[0]) / 2
      rows += rate_rows("rules", game_string,
                        [(f"mccfrb_{built_in}", mine), (name, theirs)], mine)
  return rows


def regret_rows(seconds, repeats):
  rows = []
  for game_string in rejoin_game_list(_SOLVER_GAMES.value):
    game = mccfrb.load_game(game_string)
    tree = mccfrb.compile_tree(game)
    for kind in ("none", "history", "predictive"):
      rates = {}
      for regret in ("rm", "rm+"):
        solver = mccfrb.MCCFRbSolver(game, baseline=kind, averaging="optimistic",
                                     regret=regret, seed=0, tree=tree)
        rates[regret] = iterations_per_second(solver.run, seconds, repeats)
      rows += rate_rows("regret", game_string,
                        [(f"mccfrb_{kind}_optimistic_{r}", rates[r])
                         for r in ("rm", "rm+")], rates["rm"])
  return rows


def _node_rate(solver, seconds, repeats):
  """(iterations, nodes touched) per second of `solver.run`."""
  before = solver.nodes_touched, solver.num_iterations
  it_rate = iterations_per_second(solver.run, seconds, repeats)
  nodes = solver.nodes_touched - before[0]
  return it_rate, it_rate * nodes / (solver.num_iterations - before[1])


def public_rows(seconds, repeats):
  rows = []
  for game_string in rejoin_game_list(_SOLVER_GAMES.value):
    game = mccfrb.load_game(game_string)
    tree = mccfrb.compile_tree(game)
    plus = pyspiel.CFRPlusSolver(game)
    cpp_rate = iterations_per_second(loop(plus.evaluate_and_update_policy),
                                     seconds, repeats)
    cpp_nodes = cpp_rate * 2 * tree.num_nodes
    entries = [("openspiel_cfr_plus_cpp", cpp_rate, cpp_nodes)]
    ours = mccfrb.CFRSolver(game, variant="cfr+", tree=tree)
    entries.append(("mccfrb_cfr+", *_node_rate(ours, seconds, repeats)))
    public = mccfrb.public_states(tree, game=game)
    for name, kwargs in [
        ("public_plus_none", {"baseline": "none"}),
        ("public_plus_predictive", {}),
        ("public_plus_predictive_chance", {"sampling": "chance"})]:
      solver = mccfrb.PublicSamplingSolver(game, seed=0, tree=tree,
                                           public_tree=public, **kwargs)
      entries.append((name, *_node_rate(solver, seconds, repeats)))
    for name, it_rate, node_rate in entries:
      rows.append({"section": "public", "game": game_string, "algorithm": name,
                   "per_second": it_rate, "nodes_per_second": node_rate,
                   "ratio": node_rate / cpp_nodes})
  return rows


def mcts_rows(seconds, repeats):
  rows = []
  for game_string in rejoin_game_list(_SOLVER_GAMES.value):
    game = mccfrb.load_game(game_string)
    tree = mccfrb.compile_tree(game)
    cpp = pyspiel.OutcomeSamplingMCCFRSolver(game, seed=0)
    cpp_rate = iterations_per_second(loop(cpp.run_iteration), seconds, repeats)
    entries = [("openspiel_os_cpp", cpp_rate)]
    for name, cls, kwargs in [
        ("uct", mccfrb.UCTSolver, {}),
        ("smooth_uct", mccfrb.SmoothUCTSolver, {}),
        ("uct_vs_uniform", mccfrb.UCTSolver, {"opponent": "uniform"})]:
      solver = cls(game, seed=0, tree=tree, **kwargs)
      solver.run(100_000)  # Past the first expansions.
      # Simulations per second: two per iteration.
      entries.append((f"{name} (simulations)",
                      2 * iterations_per_second(solver.run, seconds, repeats)))
    rows += rate_rows("mcts", game_string, entries, cpp_rate)
  return rows


def pyspiel_walk(game):
  """Visits every history of `game` with pyspiel calls only, storing nothing."""
  stack = [game.new_initial_state()]
  while stack:
    state = stack.pop()
    if state.is_terminal():
      state.returns()
    elif state.is_chance_node():
      stack.extend(state.child(a) for a, _ in state.chance_outcomes())
    else:
      state.information_state_string()
      stack.extend(state.child(a) for a in state.legal_actions())


def random_episodes(game, episodes, rng):
  """Plays uniformly random episodes with pyspiel calls only."""
  for _ in range(episodes):
    state = game.new_initial_state()
    while not state.is_terminal():
      legal = state.legal_actions()
      state.information_state_string()
      state.apply_action(legal[int(rng.random() * len(legal))])
    state.returns()


def head_to_head_rows(seconds, repeats):
  """head_to_head episodes per second on phantom_ttt (module docstring)."""
  from open_spiel.python import policy as os_policy  # pylint: disable=import-outside-toplevel
  game = mccfrb.load_game("phantom_ttt")
  uniform = os_policy.UniformRandomPolicy(game)
  cpp = pyspiel.OutcomeSamplingMCCFRSolver(game, 0.6, 0)
  for _ in range(100_000):
    cpp.run_iteration()
  average = cpp.average_policy()
  n = 20_000
  rng = np.random.default_rng(0)
  reference = rate(lambda: random_episodes(game, n, rng), n, seconds,
                   repeats)
  entries = [("pyspiel_random_episodes", reference)]
  for name, a, cache in (("uniform_vs_uniform", uniform, True),
                         ("openspiel_os_cpp_average_vs_uniform", average,
                          True),
                         ("openspiel_os_cpp_average_vs_uniform_no_cache",
                          average, False)):
    seeds = iter(range(10**6))
    entries.append((name, rate(lambda a=a, cache=cache: mccfrb.head_to_head(
        game, a, uniform, n, next(seeds), progress=False, cache=cache), n,
                               seconds, repeats)))
  return rate_rows("head_to_head", "phantom_ttt", entries, reference)


def compile_rows(seconds, repeats):
  rows = []
  for game_string in rejoin_game_list(_COMPILE_GAMES.value):
    game = mccfrb.load_game(game_string)
    tree = mccfrb.compile_tree(game)
    walk_rate = rate(lambda: pyspiel_walk(game), tree.num_nodes, seconds,
                     repeats)
    ours = rate(lambda: mccfrb.compile_tree(game), tree.num_nodes, seconds,
                repeats)
    rows.append({"section": "compile", "game": game_string,
                 "algorithm": "mccfrb.compile_tree", "per_second": ours,
                 "ratio": ours / walk_rate,
                 "value": tree.nbytes() / tree.num_nodes})
    rows.append({"section": "compile", "game": game_string,
                 "algorithm": "pyspiel_walk", "per_second": walk_rate,
                 "ratio": 1.0})
  return rows


def scaling_sampling_rows(seconds, repeats, threads):
  """The sampling solvers' defaults at each thread count (module docstring)."""
  rows = []
  for game_string in rejoin_game_list(_SOLVER_GAMES.value):
    game = mccfrb.load_game(game_string)
    tree = mccfrb.compile_tree(game)
    public = mccfrb.public_states(tree, game=game)
    for name, make in [
        ("mccfrb_predictive", lambda **kw: mccfrb.MCCFRbSolver(
            game, seed=0, tree=tree, **kw)),
        ("public_plus_predictive", lambda **kw: mccfrb.PublicSamplingSolver(
            game, seed=0, tree=tree, public_tree=public, **kw)),
        ("mccfrb_es", lambda **kw: mccfrb.ExternalSamplingSolver(
            game, seed=0, tree=tree, **kw)),
        ("smooth_uct", lambda **kw: mccfrb.SmoothUCTSolver(
            game, seed=0, tree=tree, **kw))]:
      unbatched = iterations_per_second(make().run, seconds, repeats)
      batch = make(threads=2)._batch  # The default batch size.
      rates = {k: iterations_per_second(make(threads=k, batch=batch).run,
                                        seconds, repeats) for k in threads}
      rows.append({"section": "scaling", "game": game_string,
                   "algorithm": f"{name} unbatched", "threads": 1,
                   "per_second": unbatched, "ratio": 1.0,
                   "vs_unbatched": 1.0})
      for k, r in rates.items():
        rows.append({"section": "scaling", "game": game_string,
                     "algorithm": f"{name} batch={batch}", "threads": k,
                     "per_second": r, "ratio": r / rates[threads[0]],
                     "vs_unbatched": r / unbatched})
  return rows


def scaling_exact_rows(seconds, repeats, threads):
  """Exact CFR+ and exploitability at each thread count, timed in turns
  (module docstring)."""
  rows = []
  for game_string in rejoin_game_list(_SOLVER_GAMES.value):
    game = mccfrb.load_game(game_string)
    tree = mccfrb.compile_tree(game)
    solvers = [mccfrb.CFRSolver(game, variant="cfr+", tree=tree, threads=k)
               for k in threads]
    table = mccfrb.uniform_table(tree)
    evaluations = [
        loop(lambda k=k: mccfrb.exploitability(tree, table, threads=k))
        for k in threads]
    for name, runs in (("mccfrb_cfr+", [s.run for s in solvers]),
                       ("mccfrb.exploitability", evaluations)):
      rates = alternating_rates(runs, seconds, repeats)
      rows += [{"section": "scaling", "game": game_string, "algorithm": name,
                "threads": k, "per_second": r, "ratio": r / rates[0]}
               for k, r in zip(threads, rates)]
  return rows


def scaling_rows(seconds, repeats):
  """Iterations per second by thread count (module docstring)."""
  threads = [int(k) for k in _THREADS.value]
  return (scaling_sampling_rows(seconds, repeats, threads)
          + scaling_exact_rows(seconds, repeats, threads))


def _fresh_rate(make, seconds):
  """Iterations per second of `make()`'s solver run for `seconds` from an
  empty table (chunks of doubling size)."""
  solver = make()
  done, chunk, start = 0, 64, time.perf_counter()
  while time.perf_counter() - start < seconds:
    solver.run(chunk, progress=False)
    done += chunk
    chunk = min(chunk * 2, 1 << 16)
  return done / (time.perf_counter() - start), solver


def _openspiel_fresh_rate(game, seconds):
  solver = pyspiel.OutcomeSamplingMCCFRSolver(game, 0.6, 0)
  done, start = 0, time.perf_counter()
  while time.perf_counter() - start < seconds:
    for _ in range(256):
      solver.run_iteration()
    done += 256
  return done / (time.perf_counter() - start)


# The engine section's configurations of mccfrb (name -> (solver class,
# options)): the defaults (the situation-keyed baseline), the same without
# a baseline, and the table precision and episodes in flight one at a
# time, so that each step's effect is in the same run.
ENGINE_CONFIGS = {
    "mccfrb_defaults": ("MCCFRbSolver", {}),
    "mccfrb_no_baseline": ("MCCFRbSolver", {"baseline": "none"}),
    "mccfrb_float64_one_at_a_time": ("MCCFRbSolver",
                                     {"precision": "float64",
                                      "in_flight": 1}),
    "mccfrb_float32_one_at_a_time": ("MCCFRbSolver",
                                     {"precision": "float32",
                                      "in_flight": 1}),
    "mccfrb_float64_in_flight": ("MCCFRbSolver", {"precision": "float64"}),
    "mccfrb_os": ("OutcomeSamplingSolver", {}),
    "mccfrb_es": ("ExternalSamplingSolver", {}),
}


def engine_rows(seconds, repeats):
  """Rates on games too large to compile (module docstring, engines)."""
  del repeats  # Each timing starts from an empty table: one per entry.
  rows = []
  seconds = max(seconds, 5.0)
  for game_string in BIG_GAMES:
    game = mccfrb.load_game(game_string)
    small = wallclock.small_instance(game_string)
    theirs = _openspiel_fresh_rate(game, seconds)
    rows.append({"section": "engines", "game": game_string,
                 "algorithm": "pyspiel_os_cpp", "per_second": theirs,
                 "ratio": 1.0})
    for name, (cls, options) in ENGINE_CONFIGS.items():
      if name == "mccfrb_es" and game_string != GOOFSPIEL6:
        # An external-sampling traversal of 13-card goofspiel explores
        # every action of the update player: 12! histories. Not timed.
        continue
      make = lambda g, c=cls, o=options: getattr(mccfrb, c)(
          g, seed=0, representation="engine", **o)
      make(small).run(2, progress=False)  # Compiles the kernels off the clock.
      ours, solver = _fresh_rate(lambda m=make: m(game), seconds)
      memory = solver.memory()
      rows.append({"section": "engines", "game": game_string,
                   "algorithm": name, "per_second": ours,
                   "ratio": ours / theirs,
                   "value": memory["bytes_per_infoset"],
                   "infosets": memory["infosets"]})
  start = time.perf_counter()
  mccfrb.MCCFRbSolver(GOOFSPIEL6, seed=0)
  rows.append({"section": "engines", "game": GOOFSPIEL6,
               "algorithm": "construct MCCFRbSolver", "per_second": 0.0,
               "ratio": float("nan"),
               "value": time.perf_counter() - start})
  return rows


def engine_kernel_rows(seconds, repeats):
  """The engine kernels against the tree kernels on Leduc's compiled tree
  (module docstring, engine_kernels): plain outcome sampling (MCCFRb
  without a baseline, stochastic averaging, RM), MCCFRb+ without a
  baseline and MCCFRb+ with the predictive baseline (MCCFRbSolver's
  default on a tree; per history, so a second hashed table on the engine
  kernels), each on the tree's dense tables and on hashed tables over the
  tree (common.hashed_tree_solver) at (float64, one episode at a time)
  and at the engine defaults (float32, 8 in flight); ratio against
  OpenSpiel's C++ outcome sampling on the same game."""
  game = mccfrb.load_game("leduc_poker")
  cpp = pyspiel.OutcomeSamplingMCCFRSolver(game, seed=0)
  theirs = iterations_per_second(loop(cpp.run_iteration), seconds, repeats)
  entries = [("pyspiel_os_cpp", theirs)]
  kinds = {"os": dict(baseline="none", averaging="stochastic", regret="rm"),
           "mccfrb+": dict(baseline="none"),
           "mccfrb+_predictive": dict(baseline="predictive")}
  tables = {"float64_one_at_a_time": ("float64", 1),
            "float32_8_in_flight": ("float32", 8)}
  for kind, options in kinds.items():
    tree = mccfrb.MCCFRbSolver(game, seed=0, **options)
    entries.append((f"{kind} tree kernel",
                    iterations_per_second(tree.run, seconds, repeats)))
    for name, (precision, k) in tables.items():
      hashed = common.hashed_tree_solver(game, 0, precision, k, **options)
      entries.append((f"{kind} engine kernel, {name}",
                      iterations_per_second(hashed.run, seconds, repeats)))
  return rate_rows("engine_kernels", "leduc_poker", entries, theirs)


def hogwild_rows(seconds, repeats):
  """Hogwild at 2 threads against one thread on goofspiel 6, each from an
  empty table for max(seconds, 20) s, on a quiet machine and with another
  process keeping one core busy: ratio = two threads / one thread."""
  del repeats
  import subprocess  # pylint: disable=import-outside-toplevel
  seconds = max(seconds, 20.0)
  game = mccfrb.load_game(GOOFSPIEL6)
  make = {1: lambda: mccfrb.MCCFRbSolver(game, seed=0),
          2: lambda: mccfrb.MCCFRbSolver(game, seed=0, threads=2,
                                         hogwild=True)}
  small = wallclock.small_instance(GOOFSPIEL6)
  mccfrb.MCCFRbSolver(small, seed=0, threads=2, hogwild=True,
                      representation="engine").run(2)
  mccfrb.MCCFRbSolver(small, seed=0, representation="engine").run(2)
  rows = []
  for machine in ("quiet", "one core busy"):
    busy = (subprocess.Popen([sys.executable, "-c", "while True: pass"])
            if machine != "quiet" else None)
    try:
      one, _ = _fresh_rate(make[1], seconds)
      two, _ = _fresh_rate(make[2], seconds)
    finally:
      if busy is not None:
        busy.kill()
        busy.wait()
    rows += [{"section": "hogwild", "game": GOOFSPIEL6,
              "algorithm": f"mccfrb_defaults_1_thread ({machine})",
              "per_second": one, "ratio": 1.0},
             {"section": "hogwild", "game": GOOFSPIEL6,
              "algorithm": f"mccfrb_hogwild_2_threads ({machine})",
              "per_second": two, "ratio": two / one}]
  return rows


_MEMORY_SCRIPT = """
import json, os, sys, time
import mccfrb, pyspiel
def resident():
  with open("/proc/self/statm") as f:
    return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
game = mccfrb.load_game(sys.argv[1])
kind, marks = sys.argv[2], [int(x) for x in sys.argv[3].split(",")]
if kind == "mccfrb":
  mccfrb.MCCFRbSolver("goofspiel(num_cards=3)", seed=0).run(10, progress=False)
  base = resident()
  solver = mccfrb.MCCFRbSolver(game, seed=0)
  run = lambda n: solver.run(n, progress=False)
else:
  base = resident()
  solver = pyspiel.OutcomeSamplingMCCFRSolver(game, 0.6, 0)
  def run(n):
    for _ in range(n):
      solver.run_iteration()
done, start, points = 0, time.perf_counter(), []
for mark in marks:
  run(mark - done)
  done = mark
  points.append((done, resident() - base, time.perf_counter() - start))
extra = solver.memory() if kind == "mccfrb" else {}
print(json.dumps(dict(points=points, memory={
    k: v for k, v in extra.items() if isinstance(v, (int, float, str))})))
"""


def _subprocess_measure(script, *args, env=None):
  """(stdout fields) of `python -c script args` in a fresh process (with
  the environment `env`, default this process's)."""
  import subprocess  # pylint: disable=import-outside-toplevel
  out = subprocess.run([sys.executable, "-c", script, *map(str, args)],
                       check=True, capture_output=True, text=True,
                       env=env).stdout
  return out.split()


def _memory_curve(game, kind, marks):
  """[(iterations, resident bytes above the idle process, seconds)] of a
  fresh process training `kind` (mccfrb's defaults or OpenSpiel's C++
  outcome sampling) on `game` up to each of `marks`, and mccfrb's
  memory()."""
  import json  # pylint: disable=import-outside-toplevel
  out = json.loads(" ".join(_subprocess_measure(
      _MEMORY_SCRIPT, game, kind, ",".join(map(str, marks)))))
  return out["points"], out["memory"]


def engine_memory_rows(seconds, repeats):
  """Resident memory against iterations on 13-card goofspiel (module
  docstring, engine_memory); the curves also go to a plot beside --out."""
  del repeats
  game = "goofspiel"
  seconds = max(seconds, 60.0)
  # OpenSpiel's iterations in `seconds`: the common range of both curves.
  probe = pyspiel.OutcomeSamplingMCCFRSolver(mccfrb.load_game(game), 0.6, 0)
  done, start = 0, time.perf_counter()
  while time.perf_counter() - start < 5.0:
    for _ in range(256):
      probe.run_iteration()
    done += 256
  del probe
  last = int(done / (time.perf_counter() - start) * seconds) // 1000 * 1000
  marks = [last * k // 8 for k in range(1, 9)]
  ours, memory = _memory_curve(game, "mccfrb", marks)
  theirs, _ = _memory_curve(game, "openspiel", marks)
  rows = []
  for (n, mb_ours, t_ours), (_, mb_theirs, t_theirs) in zip(ours, theirs):
    rows.append({"section": "engine_memory", "game": game,
                 "algorithm": "mccfrb_defaults", "iterations": n,
                 "per_second": n / t_ours, "mb": mb_ours / 2**20,
                 "ratio": mb_ours / mb_theirs})
    rows.append({"section": "engine_memory", "game": game,
                 "algorithm": "pyspiel_os_cpp", "iterations": n,
                 "per_second": n / t_theirs, "mb": mb_theirs / 2**20,
                 "ratio": 1.0})
  rows.append({"section": "engine_memory", "game": game,
               "algorithm": "mccfrb_defaults bytes/infoset (memory())",
               "iterations": ours[-1][0], "per_second": float("nan"),
               "ratio": float("nan"), "value": memory["bytes_per_infoset"],
               "infosets": memory["infosets"]})
  _plot_memory(rows, game)
  return rows


def _plot_memory(rows, game):
  """Resident memory against iterations, both solvers (a PNG beside
  --out, or in the working directory)."""
  import matplotlib  # pylint: disable=import-outside-toplevel
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt  # pylint: disable=import-outside-toplevel
  frame = pd.DataFrame([r for r in rows if "mb" in r])
  fig, ax = plt.subplots(figsize=(6, 4))
  labels = {"mccfrb_defaults": "mccfrb (MCCFRbSolver defaults)",
            "pyspiel_os_cpp": "OpenSpiel C++ outcome sampling"}
  for name, part in frame.groupby("algorithm"):
    ax.plot(part["iterations"], part["mb"] / 1024, marker="o",
            label=labels[name])
  ax.set_xlabel("iterations")
  ax.set_ylabel("resident memory above the idle process (GiB)")
  ax.set_title(f"{game} (OpenSpiel's default, 13 cards): memory at equal "
               "iterations", fontsize=10)
  ax.grid(alpha=0.3)
  ax.legend()
  folder = os.path.dirname(_OUT.value) if _OUT.value else "."
  fig.tight_layout()
  fig.savefig(os.path.join(folder, "memory_goofspiel13.png"), dpi=120)
  plt.close(fig)


_EXACT_SCRIPT = """
import resource, sys, time
import mccfrb
game = mccfrb.load_game(sys.argv[1])
small = mccfrb.load_game("goofspiel(num_cards=3,imp_info=True,points_order=random,returns_type=point_difference)")
mccfrb.CFRSolver(small, variant="cfr+", representation="engine").run(1)
mccfrb.exploitability(small, mccfrb.CFRSolver(small, variant="cfr+", representation="engine").average_policy())
solver = mccfrb.CFRSolver(game, variant="cfr+", representation="engine")
solver._stream.progress = False
times = []
for _ in range(3):
  start = time.perf_counter()
  solver.run(1)
  times.append(time.perf_counter() - start)
start = time.perf_counter()
value = mccfrb.exploitability(game, solver.average_policy())
times.append(time.perf_counter() - start)
print(*times, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, value)
"""


def engine_exact_rows(seconds, repeats):
  """Exact CFR+ iterations and an exploitability on goofspiel 6 (module
  docstring, engine_exact)."""
  del seconds, repeats
  *times, mb, value = (float(x) for x in _subprocess_measure(
      _EXACT_SCRIPT, GOOFSPIEL6))
  names = ("cfr+_iteration_1", "cfr+_iteration_2", "cfr+_iteration_3",
           "exploitability of the cfr+ average")
  return [{"section": "engine_exact", "game": GOOFSPIEL6,
           "algorithm": f"{name} (value: seconds)", "per_second": 1.0 / took,
           "ratio": float("nan"), "value": took, "mb": mb,
           "exploitability": value if name.startswith("expl") else
           float("nan")} for name, took in zip(names, times)]


_GROWN_SCRIPT = """
import resource, sys, time
import mccfrb, pyspiel
game, who, seconds, iterations = sys.argv[1:5]
seconds, iterations = float(seconds), int(iterations)
warm = float(sys.argv[5]) if len(sys.argv) > 5 else 0.0
CHUNK = 100  # Iterations per step: battleship runs tens a second.
clock = time.process_time  # CPU seconds: the rates hold on a shared machine.
def timed(step, limit):
  done, start = 0, clock()
  while clock() - start < limit:
    step()
    done += CHUNK
  return done, done / (clock() - start)
if who == "mccfrb":
  from mccfrb.solvers import grown
  solver = mccfrb.OutcomeSamplingSolver(game, seed=0, representation="grown")
  solver.run(10, progress=False)  # Compiles (or loads) the kernel.
  step = lambda: solver.run(CHUNK, progress=False)
  first, _ = timed(step, seconds)
  # The share of the last 10 s spent in the kernel (the rest: expansions).
  kernel, inner = [0.0], grown.outcome.tree_episodes
  def counted(*args):
    start = time.perf_counter()
    result = inner(*args)
    kernel[0] += time.perf_counter() - start
    return result
  grown.outcome.tree_episodes = counted
  start = time.perf_counter()
  later, rate = timed(step, 10.0)
  share = kernel[0] / (time.perf_counter() - start)  # Both wall clock.
  grown.outcome.tree_episodes = inner
  m = solver.memory()
  print(first + later + 10, rate,
        resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        m["nodes"], m["infosets"], m["bytes_per_node"], m["bytes_per_infoset"],
        share)
else:
  game = pyspiel.load_game(game)
  if game.get_type().dynamics == pyspiel.GameType.Dynamics.SIMULTANEOUS:
    game = pyspiel.convert_to_turn_based(game)  # As mccfrb plays it.
  solver = pyspiel.OutcomeSamplingMCCFRSolver(game, 0.6, 0)
  def step():
    for _ in range(CHUNK):
      solver.run_iteration()
  if iterations:
    start = clock()
    for _ in range(iterations // CHUNK):
      step()
    done, rate = iterations, iterations / (clock() - start)
  else:
    first, _ = timed(step, warm)
    done, rate = timed(step, seconds)
    done += first
  print(done, rate, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
"""

# A fresh process training mccfrb's MCCFRbSolver (defaults, on the game's
# native engine) for `warm` seconds, then timed over `seconds`: iterations,
# rate, peak MB, infosets stored, bytes per infoset by memory().
_ENGINE_AFTER_SCRIPT = """
import resource, sys, time
import mccfrb
game, warm, seconds = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
solver = mccfrb.MCCFRbSolver(game, seed=0, representation="engine")
solver.run(10, progress=False)  # Compiles (or loads) the kernels.
def timed(limit):  # In CPU seconds, as the grown section's script.
  done, start = 0, time.process_time()
  while time.process_time() - start < limit:
    solver.run(1000, progress=False)
    done += 1000
  return done, done / (time.process_time() - start)
first, _ = timed(warm)
later, rate = timed(seconds)
m = solver.memory()
print(first + later + 10, rate,
      resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
      m["infosets"], m["bytes_per_infoset"])
"""


def engines_after_rows(seconds, repeats):
  """phantom_ttt and 3x3 dark_hex on their native engines (module
  docstring, engines_after_60s): MCCFRbSolver's defaults and OpenSpiel's
  C++ outcome sampling, each in a fresh process, trained max(seconds, 60)
  s and then timed over 10 s."""
  del repeats
  warm = max(seconds, 60.0)
  rows = []
  for game in GROWN_GAMES:
    done, rate, mb, isets, per = _subprocess_measure(
        _ENGINE_AFTER_SCRIPT, game, warm, 10.0)
    theirs_done, theirs, theirs_mb = _subprocess_measure(
        _GROWN_SCRIPT, game, "openspiel", 10.0, 0, warm)
    rows.append({"section": "engines_after_60s", "game": game,
                 "algorithm": "mccfrb_defaults_engine",
                 "per_second": float(rate),
                 "ratio": float(rate) / float(theirs),
                 "iterations": int(done), "infosets": int(isets),
                 "bytes_per_infoset": float(per), "mb": float(mb)})
    rows.append({"section": "engines_after_60s", "game": game,
                 "algorithm": "pyspiel_os_cpp", "per_second": float(theirs),
                 "ratio": 1.0, "iterations": int(theirs_done),
                 "mb": float(theirs_mb)})
  return rows


def grown_rows(seconds, repeats):
  """Outcome sampling on grown trees (module docstring, grown): mccfrb's
  rate over 10 s after max(seconds, 60) s of growing, bytes per stored
  node and infoset, peak memory, against OpenSpiel's C++ outcome sampling
  (10 s after as long; and its peak memory at mccfrb's iterations)."""
  del repeats
  rows = []
  base = float(_subprocess_measure(
      "import mccfrb, pyspiel, resource; print(resource.getrusage("
      "resource.RUSAGE_SELF).ru_maxrss / 1024)")[0])
  for game in rejoin_game_list(_GROWN_GAMES.value):
    done, rate, mb, nodes, isets, per_node, per_infoset, share = (
        _subprocess_measure(_GROWN_SCRIPT, game, "mccfrb",
                            max(seconds, 60.0), 0))
    _, theirs, _ = _subprocess_measure(_GROWN_SCRIPT, game, "openspiel",
                                       10.0, 0, max(seconds, 60.0))
    _, _, theirs_mb = _subprocess_measure(_GROWN_SCRIPT, game, "openspiel",
                                          0, int(done))
    nodes, isets = int(nodes), int(isets)
    rows.append({"section": "grown", "game": game,
                 "algorithm": "mccfrb_os_grown_after_60s",
                 "per_second": float(rate),
                 "ratio": float(rate) / float(theirs),
                 "iterations": int(done), "nodes": nodes, "infosets": isets,
                 "bytes_per_node": float(per_node),
                 "bytes_per_infoset": float(per_infoset),
                 "kernel_share": float(share),
                 "mb": float(mb) - base})
    rows.append({"section": "grown", "game": game,
                 "algorithm": "pyspiel_os_cpp", "per_second": float(theirs),
                 "ratio": 1.0, "iterations": int(done),
                 "mb": float(theirs_mb) - base})
  return rows


def _decision_states(game, count):
  """Up to `count` decision states of one seeded random play-out."""
  rng = np.random.default_rng(0)
  states, state = [], game.new_initial_state()
  while not state.is_terminal() and len(states) < count:
    if state.is_chance_node():
      actions = [a for a, _ in state.chance_outcomes()]
      state.apply_action(actions[rng.integers(len(actions))])
      continue
    states.append(state.clone())
    legal = state.legal_actions()
    state.apply_action(legal[rng.integers(len(legal))])
  return states


def grown_keys_rows(seconds, repeats):
  """Microseconds per infoset key, string against tensor (module
  docstring, grown_keys)."""
  del seconds
  rows = []
  for name in rejoin_game_list(_GROWN_GAMES.value):
    game = pyspiel.load_game(name)
    if game.get_type().dynamics == pyspiel.GameType.Dynamics.SIMULTANEOUS:
      game = pyspiel.convert_to_turn_based(game)
    states = _decision_states(game, 60)
    calls = 20 * len(states)

    def by_string():
      for state in states:
        player = state.current_player()
        grown_lib.infoset_hash(state.information_state_string(player),
                               player)

    def by_tensor():
      for state in states:
        tensor = np.asarray(
            state.information_state_tensor(state.current_player()),
            dtype=np.float32)
        hashlib.blake2b(tensor.tobytes(), digest_size=16).digest()

    kinds = [("string_blake2b", by_string)]
    if game.get_type().provides_information_state_tensor:
      kinds.append(("tensor_blake2b", by_tensor))
    for label, keys in kinds:
      best = min(timeit.repeat(keys, number=20, repeat=repeats)) / calls
      rows.append({"section": "grown_keys", "game": name,
                   "algorithm": f"{label} (value: microseconds)",
                   "per_second": 1.0 / best, "ratio": float("nan"),
                   "value": best * 1e6})
  return rows


# The first_use section: (solver, game, representation).
FIRST_USE = tuple(
    (solver, "leduc_poker", "tree")
    for solver in ("MCCFRbSolver", "OutcomeSamplingSolver",
                   "ExternalSamplingSolver", "PublicSamplingSolver",
                   "CFRSolver", "SmoothUCTSolver")) + tuple(
    (solver, GOOFSPIEL4, "engine")
    for solver in ("MCCFRbSolver", "OutcomeSamplingSolver",
                   "ExternalSamplingSolver", "PublicSamplingSolver",
                   "CFRSolver")) + (
    ("MCCFRbSolver", "phantom_ttt", "engine"),
    ("MCCFRbSolver", "leduc_poker", "grown"),
    ("ExternalSamplingSolver", "leduc_poker", "grown"))
FIRST_USE_GOAL = 15.0
_FIRST_USE_SCRIPT = """
import sys, time
import mccfrb
solver, game, representation = sys.argv[1:4]
start = time.perf_counter()
options = {} if solver == "SmoothUCTSolver" else dict(
    representation=representation)
s = getattr(mccfrb, solver)(game, seed=0, **options)
s.run(10)
print(time.perf_counter() - start)
"""


def first_use_rows(seconds, repeats):
  """Cold and warm first use of each FIRST_USE entry (module docstring,
  first_use)."""
  del seconds, repeats
  import tempfile  # pylint: disable=import-outside-toplevel
  rows = []
  for solver, game, representation in FIRST_USE:
    with tempfile.TemporaryDirectory() as cache:
      env = dict(os.environ, NUMBA_CACHE_DIR=cache)
      # The first process compiles into the empty cache, the second loads.
      cold = float(_subprocess_measure(_FIRST_USE_SCRIPT, solver, game,
                                       representation, env=env)[-1])
      warm = float(_subprocess_measure(_FIRST_USE_SCRIPT, solver, game,
                                       representation, env=env)[-1])
    rows.append({"section": "first_use", "game": game,
                 "algorithm": f"{solver} ({representation})",
                 "per_second": 0.0, "ratio": cold / FIRST_USE_GOAL,
                 "value": cold, "warm_seconds": round(warm, 2)})
    print(rows[-1], flush=True)
  return rows


def bound_rows(seconds, repeats):
  """The engine route's responder walks a second (module docstring,
  bound)."""
  del repeats  # Each policy is timed once: training it takes minutes.
  seconds = max(2.0 * seconds, 10.0)
  rows = []
  for game, trainings in BOUND_POLICIES.items():
    solver = mccfrb.MCCFRbSolver(game, seed=0)
    done = 0
    for iterations in trainings:
      solver.run(iterations - done, progress=False)
      done = iterations
      policy = solver.average_policy()
      # Compiles the responders' kernels off the clock.
      mccfrb.approximate_exploitability(game, policy, iterations=1000,
                                        episodes=100, seed=0, progress=False)
      ours = mccfrb.approximate_exploitability(game, policy, seconds=seconds,
                                               seed=0, progress=False)
      rate = sum(ours.iterations) / ours.seconds
      row = {"section": "bound", "game": game,
             "algorithm": f"engine route, MCCFRb trained {iterations:,}",
             "per_second": rate, "ratio": float("nan"),
             "value": ours.exploitability}
      if game == "phantom_ttt" and iterations == trainings[0]:
        theirs = mccfrb.approximate_exploitability(
            game, policy, seconds=seconds, seed=0, episodes=100,
            representation="states", progress=False)
        states_rate = sum(theirs.iterations) / theirs.seconds
        rows.append({"section": "bound", "game": game,
                     "algorithm": f"states route, MCCFRb trained "
                                  f"{iterations:,}",
                     "per_second": states_rate, "ratio": 1.0,
                     "value": theirs.exploitability})
        row["ratio"] = rate / states_rate
      rows.append(row)
      print(rows[-1], flush=True)
  return rows


def main(argv):
  if len(argv) > 1:
    raise app.UsageError("Too many command-line arguments.")
  unknown = set(_SECTIONS.value) - set(SECTIONS)
  if unknown:
    raise app.UsageError(f"Unknown sections {sorted(unknown)}; allowed: {SECTIONS}")
  try:
    threads = [int(k) for k in _THREADS.value]
  except ValueError:
    threads = []
  if not threads or threads[0] != 1 or min(threads) < 1:
    raise app.UsageError(f"--threads must be positive integers starting with "
                         f"1, got {_THREADS.value}")
  print(f"# {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"pyspiel {getattr(pyspiel, '__version__', '?')}, "
        f"mccfrb {mccfrb.__version__}, one thread except in the scaling "
        f"section (numba's limit: {numba.config.NUMBA_NUM_THREADS})")
  builders = {"exploitability": exploitability_rows, "outcome": outcome_rows,
              "external": external_rows, "cfr": cfr_rows,
              "regret": regret_rows, "public": public_rows,
              "mcts": mcts_rows, "compile": compile_rows,
              "scaling": scaling_rows, "cfr_goofspiel5": cfr_goofspiel5_rows,
              "engines": engine_rows, "engine_kernels": engine_kernel_rows,
              "engine_memory": engine_memory_rows,
              "engine_exact": engine_exact_rows, "rules": rules_rows,
              "hogwild": hogwild_rows, "head_to_head": head_to_head_rows,
              "grown": grown_rows, "grown_keys": grown_keys_rows,
              "engines_after_60s": engines_after_rows,
              "first_use": first_use_rows, "bound": bound_rows}
  rows = []
  for section in _SECTIONS.value:
    numba.set_num_threads(1)  # Solvers with threads= raise it themselves.
    new = builders[section](_SECONDS.value, _REPEATS.value)
    rows += new
    with pd.option_context("display.width", 200, "display.max_colwidth", 40):
      print(_rounded(pd.DataFrame(new)).to_string(index=False), flush=True)
    if _OUT.value:  # Every finished section is kept, should a later fail.
      _rounded(pd.DataFrame(rows)).to_csv(_OUT.value, index=False)


def _rounded(table):
  """The table as printed and written: rates and ratios rounded."""
  table["per_second"] = table["per_second"].round(1)
  table["ratio"] = table["ratio"].round(2)
  for column, digits in (("vs_four_sweeps", 2), ("nodes_per_second", -3),
                         ("vs_unbatched", 2)):
    if column in table:
      table[column] = table[column].round(digits)
  return table

if __name__ == "__main__":
  app.run(main)
