"""Shared fixtures: the games every test suite checks, and table checks."""

import faulthandler
import hashlib
import inspect
import json
import os
import re
import signal
import subprocess
import sys
import threading
import traceback

# Three numba threads, set before numba is imported (it cannot change once
# its threads run), so that the threads=2 and threads=3 tests run on as
# many threads whatever the machine, and the experiment binaries imported
# by the tests (which default it to 1) leave it alone.
os.environ["NUMBA_NUM_THREADS"] = "3"

import numpy as np  # pylint: disable=g-import-not-at-top,wrong-import-position
import pytest

import mccfrb
from mccfrb.kernels import notice

GOOFSPIEL4 = ("goofspiel(num_cards=4,imp_info=True,points_order=random,"
              "returns_type=point_difference)")
GAMES = ("kuhn_poker", "leduc_poker", GOOFSPIEL4, "matching_pennies")


# The longest a test may run: past it, the test's process prints where
# the test waits and exits, so that a hang fails one test (under
# pytest-xdist, its worker) instead of stalling the suite. The slowest
# tests take about a minute on two cores. tests/test_hang.py sets it
# through the environment.
TEST_TIMEOUT_SECONDS = float(os.environ.get("MCCFRB_TEST_TIMEOUT_SECONDS",
                                            600))
# A test that holds the GIL past its timeout (spinning in a numba kernel)
# stops the Python timer that reports a hang; faulthandler's watchdog, this
# much later, dumps every thread and exits. tests/test_hang.py shortens it
# through the environment.
HANG_BACKSTOP_SECONDS = float(os.environ.get(
    "MCCFRB_TEST_HANG_BACKSTOP_SECONDS", 10))


_HANG_OUTPUT = pytest.StashKey[int]()


# The marker of the tests the fast loop leaves out (`pytest -m "not slow"`,
# CONTRIBUTING.md, docs/pages/tests.md). They stay in the full suite.
SLOW = ("slow: outside the fast loop's core (a study, a long convergence "
        "check, the browser, or a test in SLOW_BEYOND_THE_CORE); the fast "
        "loop leaves them out: pytest -m 'not slow'")

# The fast loop checks the core: every algorithm's kernels at the
# signatures a default run and the bit-for-bit checks compile, on the
# compiled tree and on goofspiel's engine. Most of a cold run is numba
# compiling one kernel signature per engine, float width and option set
# (about 30 s each for the engine kernels), so the tests that need a
# signature of their own beyond that core, or that run OpenSpiel's Python
# solvers or the binaries at length, are marked slow here by what they
# check (a regular expression on the test's node id) rather than one by
# one: a new test on liar's dice's engine is slow without a mark.
SLOW_BEYOND_THE_CORE = {
    "an engine beyond goofspiel's": r"liars_dice|phantom_ttt|dark_hex",
    "the compiled tree as an engine (goofspiel's engine checks the engine "
    "kernels against the tree kernels in the fast loop)":
        r"test_compiled_engine\.py",
    "threads, batches and Hogwild":
        r"batched_tables_depend_on_the_seed|hogwild|batches_end_at_multiples|"
        r"batched_search_equals|_batches\]|a_batched_run_on_two_threads|"
        r"studies_run_unthreaded_on_the_threaded|batched_chunks_are_whole|"
        r"test_constructor_counts_are_python_ints|"
        r"general_edge_baselines_hold_each_players_returns",
    "narrow and wide integer types": r"narrow_and_wide",
    "what a first use compiles (from an empty numba cache, in a process of "
    "its own)": r"test_training_compiles_only_the_training_episode",
    "goofspiel 5's engine against its compiled tree (3.3 million nodes; "
    "goofspiel 2 to 4's in the fast loop)":
        r"test_readme_goofspiel5_equals_the_compiled_tree",
    "an optional extra's framework (NFSP on JAX, the nfsp extra)":
        r"test_registry_builds_every_algorithm\[openspiel_nfsp\]",
    "OpenSpiel's Python solvers beyond Kuhn":
        r"test_cfr_family_equals_openspiel\[[^\]]*leduc|"
        r"test_simultaneous_updates_equal_openspiel\[goofspiel",
    "the binaries end to end":
        r"test_newcomer\.py|test_play\.py|test_sweep_faults\.py|"
        r"test_experiments\.py::(?!test_registry_builds_every_algorithm)",
}


def skip_unless_ci(why):
  """Skips the test for `why` (something the machine lacks), or fails it
  under CI (the environment variable CI set), whose .ci/run provides it."""
  if os.environ.get("CI"):
    pytest.fail(f"{why} (under CI, which provides it)")
  pytest.skip(why)


def beyond_the_core(nodeid):
  """The reason in SLOW_BEYOND_THE_CORE that marks the test `nodeid` slow,
  or None."""
  for reason, pattern in SLOW_BEYOND_THE_CORE.items():
    if re.search(pattern, nodeid):
      return reason
  return None


def pytest_configure(config):
  """Registers the `slow` marker (so that --strict-markers accepts it), and
  keeps where the hang watchdog writes: a copy of standard error taken
  before the tests' output is captured (as pytest's faulthandler plugin
  does)."""
  config.addinivalue_line("markers", SLOW)
  config.stash[_HANG_OUTPUT] = os.dup(2)


def pytest_collection_modifyitems(items):
  """Marks slow the tests of SLOW_BEYOND_THE_CORE."""
  for item in items:
    if beyond_the_core(item.nodeid):
      item.add_marker(pytest.mark.slow)


def _report_hang(nodeid, ident, fd):
  """Writes the stack of thread `ident` (the test's), innermost call last,
  between two lines naming the test, then ends the process."""
  head = f"Timeout: {nodeid} ran past {TEST_TIMEOUT_SECONDS:g} s"
  frame = sys._current_frames().get(ident)  # pylint: disable=protected-access
  stack = traceback.format_stack(frame) if frame is not None else []
  os.write(fd, "".join([f"\n{head}; its stack, innermost call last:\n",
                        *stack, f"{head}: it waits in the call above\n"])
           .encode())
  os._exit(1)  # pylint: disable=protected-access


@pytest.fixture(autouse=True)
def fail_a_hang(request):
  """Two watchdogs over each test. A Python timer writes the test's stack
  with its innermost call last, so that a log cut to its tail (as CI
  shows it) still says where the test waited, and ends the process.
  faulthandler's watchdog, a C thread that needs no GIL, ends a test that
  holds the GIL (spinning in a numba kernel: the timer cannot run) a
  little later, with every thread's stack, innermost call first."""
  fd = request.config.stash[_HANG_OUTPUT]
  faulthandler.dump_traceback_later(
      TEST_TIMEOUT_SECONDS + HANG_BACKSTOP_SECONDS, exit=True, file=fd)
  timer = threading.Timer(TEST_TIMEOUT_SECONDS, _report_hang,
                          (request.node.nodeid, threading.get_ident(), fd))
  timer.daemon = True
  timer.start()
  yield
  timer.cancel()
  faulthandler.cancel_dump_traceback_later()


@pytest.fixture(autouse=True, scope="session")
def default_sigint():
  """Python's own Ctrl-C handler for every test.

  pytest-xdist's workers (the README's `-n 2`) ignore SIGINT, leaving
  Ctrl-C to the controller, and processes they start inherit the ignored
  signal: the tests of Ctrl-C (solvers/running.py, the binaries) would see
  nothing. Restored in the worker's main thread, SIGINT raises
  KeyboardInterrupt there and starts as default in child processes.
  """
  if threading.current_thread() is threading.main_thread():
    signal.signal(signal.SIGINT, signal.default_int_handler)
  yield


@pytest.fixture(params=GAMES)
def game_name(request):
  return request.param


def compile_in_subprocess(script, switch, value, disable_jit="0"):
  """Runs `script` in a fresh Python with the environment variable `switch`
  (a numba patch of mccfrb's: MCCFRB_NUMBA_SSA, MCCFRB_NUMBA_INLINE) set to
  `value`, PYTHONHASHSEED fixed (the names of string constants in the LLVM
  IR) and NUMBA_DISABLE_JIT as given; returns the JSON of its last line."""
  env = dict(os.environ, PYTHONHASHSEED="0", NUMBA_DISABLE_JIT=disable_jit)
  env[switch] = value
  out = subprocess.run([sys.executable, "-c", script], env=env, check=True,
                       capture_output=True, text=True).stdout
  return json.loads(out.strip().splitlines()[-1])


def table_digest(solver):
  """The first 16 hex digits of the sha256 of every table a solver saves, in
  `_table_names` order: a bit-for-bit fingerprint of its state."""
  digest = hashlib.sha256()
  for name in solver._table_names:  # pylint: disable=protected-access
    digest.update(np.ascontiguousarray(getattr(solver, name)).tobytes())
  return digest.hexdigest()[:16]


def fingerprint_run(solver):
  """Trains `solver` as the recorded fingerprints were made (300 iterations:
  run(200), 10 x iteration(), run(90)) and returns its table_digest."""
  solver.run(200)
  for _ in range(10):
    solver.iteration()
  solver.run(90)
  return table_digest(solver)


def assert_same_tables(a, b):
  """Every saved table of two solvers equal bit for bit."""
  for name in a._table_names:  # pylint: disable=protected-access
    np.testing.assert_array_equal(getattr(a, name), getattr(b, name),
                                  err_msg=name)


def check_threads_do_not_matter(run, others):
  """`run(**options)` returns a solver trained with those options over its
  defaults. Equal tables and nodes touched at threads=1, 2, 3 and on a
  rerun; different tables for each options dict in `others`."""
  one, two, three = (run(threads=k) for k in (1, 2, 3))
  assert_same_tables(one, two)
  assert_same_tables(one, three)
  assert one.nodes_touched == two.nodes_touched == three.nodes_touched
  assert_same_tables(two, run(threads=2))
  for options in others:
    assert table_digest(run(**options)) != table_digest(two), options
  return two


def check_batch_boundaries(make, batch, path):
  """`make()` returns a fresh batched solver. run(2b) equals run(b); run(b);
  run(1.5b); run(b / 2) runs the batches of run(b); run(b / 2); run(b / 2)
  (a batch never spans two calls), also through save and load; and it
  differs from run(2b)."""
  whole, halves, offset, resumed = make(), make(), make(), make()
  whole.run(2 * batch)
  halves.run(batch)
  halves.run(batch)
  assert_same_tables(whole, halves)
  offset.run(batch + batch // 2)
  offset.run(batch // 2)
  resumed.run(batch)
  resumed.run(batch // 2)
  resumed.save(path)
  resumed = type(resumed).load(path)
  options = resumed._options()  # pylint: disable=protected-access
  assert (options["threads"], options["batch"]) == (2, batch)
  resumed.run(batch // 2)
  assert_same_tables(offset, resumed)
  assert resumed.nodes_touched == offset.nodes_touched
  assert table_digest(whole) != table_digest(offset)


def exploitability_curves(make, tree, checkpoints, seeds=range(5)):
  """Exploitability of `make(seed)` at each checkpoint: float64[seeds,
  checkpoints]."""
  rows = []
  for seed in seeds:
    solver = make(seed)
    row = []
    for t in checkpoints:
      solver.run(t - solver.num_iterations)
      row.append(mccfrb.exploitability(tree, solver.average_policy_table()))
    rows.append(row)
  return np.array(rows)


# Threads may cost at most this factor of one thread's mean exploitability
# at equal iterations: a kernel that loses 10% shows.
THREAD_LOSS = 1.10


def check_converges_as_one_thread(one, many, what):
  """`one` and `many`: exploitability curves (float64[seeds, checkpoints],
  `exploitability_curves`) of one thread and of `what` over the same seeds.
  At every checkpoint the mean over seeds of `many` is at most THREAD_LOSS
  times that of `one`."""
  ratio = many.mean(axis=0) / one.mean(axis=0)
  assert (ratio <= THREAD_LOSS).all(), (
      f"{what}: mean exploitability over {len(one)} seeds is {ratio} times "
      f"one thread's (at most {THREAD_LOSS}); one: {one.mean(axis=0)}, "
      f"{what}: {many.mean(axis=0)}")


def check_two_threads_converge(cls, checkpoints, default_batch,
                               extra=lambda tree: {}):
  """`cls` on Leduc with threads=2 and its default batch size (asserted to
  be `default_batch`) against threads=1, seeds 0-4: at each checkpoint the
  batched mean exploitability is at most THREAD_LOSS (1.10) times the
  unbatched mean (`check_converges_as_one_thread`). `extra(tree)`: more
  constructor options."""
  tree = mccfrb.compile_tree("leduc_poker")
  options = extra(tree)
  curves = [exploitability_curves(
      lambda seed, k=k: cls("leduc_poker", seed=seed, tree=tree, threads=k,
                            **options), tree, checkpoints) for k in (1, 2)]
  assert cls("kuhn_poker", threads=2)._batch == default_batch  # pylint: disable=protected-access
  check_converges_as_one_thread(curves[0], curves[1],
                                f"threads=2 (batch {default_batch})")


def check_unstored_infosets_play_uniform(solver, seed=0, playouts=200):
  """On random play-outs of `solver`'s game (an engine solver whose tables
  stopped growing), every infoset without a row in the tables (the
  policy's key lookup finds none) plays exactly uniform, and some stored
  infoset does not: the check tells them apart. Returns the number of
  unstored infosets met."""
  policy = solver.average_policy()
  rng = np.random.default_rng(seed)
  unstored, stored_not_uniform = 0, 0
  for _ in range(playouts):
    state = solver.game.new_initial_state()
    while not state.is_terminal():
      if state.is_chance_node():
        actions, probs = zip(*state.chance_outcomes())
        state.apply_action(actions[rng.choice(len(actions), p=probs)])
        continue
      player = state.current_player()
      legal = state.legal_actions(player)
      row, _ = policy._row(state, player)  # pylint: disable=protected-access
      probs = policy.action_probabilities(state)
      assert sorted(probs) == sorted(legal)
      assert sum(probs.values()) == pytest.approx(1.0)
      if row < 0:
        unstored += 1
        assert all(p == 1.0 / len(legal) for p in probs.values()), probs
      elif max(probs.values()) > 1.0 / len(legal) + 1e-6:
        stored_not_uniform += 1
      state.apply_action(legal[rng.integers(len(legal))])
  assert unstored > 0 and stored_not_uniform > 0, (unstored,
                                                    stored_not_uniform)
  return unstored


def check_hogwild_converges_as_one_thread(make, game, iterations,
                                          seeds=range(12)):
  """`make(seed, **options)` builds an engine solver of `game`. After
  `iterations` iterations, the mean exploitability over `seeds` of Hogwild
  runs (threads=2, hogwild=True; not reproducible, hence many seeds) is at
  most THREAD_LOSS times that of one thread. Returns the last Hogwild
  solver."""
  tree = mccfrb.compile_tree(game)

  def score(solver):
    solver.run(iterations, progress=False)
    assert solver.num_iterations == iterations
    return mccfrb.exploitability(
        tree, mccfrb.table_from_policy(tree, solver.average_policy()))

  one = np.array([[score(make(seed))] for seed in seeds])
  hogwild = []
  for seed in seeds:
    solver = make(seed, threads=2, hogwild=True)
    hogwild.append([score(solver)])
  check_converges_as_one_thread(one, np.array(hogwild), "Hogwild")
  return solver


def engine_exploitabilities(make, game, iterations, seeds):
  """The exploitability of `make(seed)`'s average policy (an engine
  solver of `game`) after `iterations` iterations, per seed, scored
  exactly on the compiled tree."""
  tree = mccfrb.compile_tree(game)
  out = []
  for seed in seeds:
    solver = make(seed)
    solver.run(iterations, progress=False)
    out.append(mccfrb.exploitability(
        tree, mccfrb.table_from_policy(tree, solver.average_policy())))
  return np.array(out)


def streaming_walk_threads(monkeypatch):
  """The `threads` of every later call of the streaming NashConv
  (`stream.engine_nash_conv`), appended to the list returned, however the
  call passes them; the walk itself still runs."""
  from mccfrb.solvers import stream  # pylint: disable=import-outside-toplevel
  asked = []
  walk = stream.engine_nash_conv

  def spy(*args, **kwargs):
    bound = inspect.signature(walk).bind(*args, **kwargs)
    asked.append(bound.arguments.get("threads", 1))
    return walk(*args, **kwargs)

  monkeypatch.setattr(stream, "engine_nash_conv", spy)
  return asked


def error_lines(stderr):
  """The lines of a process's standard error other than the compile
  notice (kernels/notice.py), which a process that compiles kernels from an
  empty numba cache prints first."""
  return [line for line in stderr.splitlines() if line != notice.NOTICE]


def printed_with_empty_cache(script, cache_dir):
  """What `python -c script` prints, split into words, in a fresh process
  whose numba cache is the empty folder `cache_dir` (every kernel it
  calls compiles there: the tests of what a first use compiles)."""
  env = dict(os.environ, NUMBA_CACHE_DIR=str(cache_dir))
  return subprocess.run([sys.executable, "-c", script], check=True,
                        capture_output=True, text=True,
                        env=env).stdout.split()
