"""Sampling solvers on native engines against the same solvers on the tree."""

import itertools
import numba
import numpy as np
import pytest

import mccfrb
from mccfrb.games.engines import protocol
from mccfrb.games.engines.common import call_literal
from mccfrb.games.engines.common import hash_step
from mccfrb.kernels import outcome
from mccfrb.tables import hashed
from mccfrb.solvers import engine as engine_lib
from tests.conftest import check_hogwild_converges_as_one_thread
from tests.conftest import check_unstored_infosets_play_uniform
from tests.conftest import streaming_walk_threads
from tests.conftest import printed_with_empty_cache

G3 = "goofspiel(num_cards=3,imp_info=True,points_order=random,returns_type=point_difference)"
G4 = "goofspiel(num_cards=4,imp_info=True,points_order=random,returns_type=point_difference)"
G4_OPEN = "goofspiel(num_cards=4)"
LIARS = "liars_dice(numdice=1,dice_sides=3)"
# The engine defaults (float32 cells, episodes in flight) change the
# numbers; the tree's are float64 and one episode at a time.
AS_TREE = dict(precision="float64", in_flight=1)
G6 = "goofspiel(num_cards=6,imp_info=True,points_order=random,returns_type=point_difference)"
G6_MOVES = 6


def engine_rows(solver_engine, tree):
  """The engine solver's row of every tree infoset (-1: not stored)."""
  engine, tables = solver_engine.engine, solver_engine._backend.tables
  parents, actions = tree.node_parents(), tree.edge_actions()
  rows = np.full(tree.num_infosets, -1, dtype=np.int64)
  seen = np.zeros(tree.num_infosets, dtype=bool)
  state = np.zeros(engine.state_size, dtype=np.int64)
  for node in np.flatnonzero(tree.node_kind == mccfrb.games.tree.DECISION):
    i = tree.node_infoset[node]
    if seen[i]:
      continue
    seen[i] = True
    history, n = [], node
    while parents[n] >= 0:
      history.append(actions[n])
      n = parents[n]
    assert call_literal(protocol.replay, engine.code, engine.params, state,
                        np.array(history[::-1], dtype=np.int64)) == -1
    h1, h2 = protocol.infoset_hash(engine.code, engine.params, state,
                                   int(tree.node_player[node]))
    rows[i] = tables.find(h1, h2)
  return rows


def history_keys(tree):
  """The engine kernels' history key (outcome.history_step over the
  move indices from the root) of every tree node: uint64[N, 2]."""
  keys = np.zeros((tree.num_nodes, 2), dtype=np.uint64)
  keys[0] = outcome.HISTORY_SEED
  for n in range(tree.num_nodes):  # Parents have smaller ids.
    start, count = tree.child_start[n], tree.num_children[n]
    for j in range(count if tree.node_kind[n] != mccfrb.games.tree.TERMINAL
                   else 0):
      keys[start + j] = outcome.history_step(keys[n, 0], keys[n, 1], j)
  return keys


def assert_same_history_baselines(tree_solver, engine_solver):
  """b(h, a) of every edge: the tree keeps it by child node id, the engine
  by the history's key and move index (unstored rows: never learned)."""
  tree, table = tree_solver.tree, engine_solver._backend.history
  keys = history_keys(tree)
  stored = 0
  for n in np.flatnonzero(tree.node_kind != mccfrb.games.tree.TERMINAL):
    start, count = tree.child_start[n], tree.num_children[n]
    expected = tree_solver._baseline[start:start + count]
    r = table.find(keys[n, 0], keys[n, 1])
    if r < 0:
      assert not expected.any()
      continue
    stored += 1
    assert table.width(r) == count
    np.testing.assert_array_equal(table.field(r, "value"), expected)
    if "count" in table.fields:  # The running mean's visit counts.
      np.testing.assert_array_equal(
          table.field(r, "count"),
          tree_solver._baseline_count[start:start + count])
  assert stored == table.num_rows > 0


@numba.njit(cache=True)
def _with_depth(h1, h2, d):
  """kernels/outcome.py's public key: the public hash folded with the
  depth."""
  return hash_step(h1, d), hash_step(h2, d ^ 0x5A5A5A5A)


def assert_same_keyed_baselines(tree_solver, engine_solver, baseline):
  """b(k, a) of the situation or public state k of every node: the tree
  keeps it at key_ids[n] * A + a, the engine in the row of its key."""
  tree, table, engine = (tree_solver.tree, engine_solver._backend.history,
                         engine_solver.engine)
  parents, actions = tree.node_parents(), tree.edge_actions()
  state = np.zeros(engine.state_size, dtype=np.int64)
  width = tree.max_actions
  stored = 0
  for n in np.flatnonzero(tree.node_kind != mccfrb.games.tree.TERMINAL):
    history, m = [], n
    while parents[m] >= 0:
      history.append(actions[m])
      m = parents[m]
    call_literal(protocol.replay, engine.code, engine.params, state,
                 np.array(history[::-1], dtype=np.int64))
    if baseline == "situation":
      h1, h2 = protocol.situation_hash(engine.code, engine.params, state)
    else:
      h1, h2 = protocol.public_hash(engine.code, engine.params, state)
      h1, h2 = _with_depth(np.uint64(h1), np.uint64(h2), len(history))
    label, count = tree_solver._key_ids[n], tree.num_children[n]
    expected = tree_solver._baseline[label * width:label * width + count]
    r = table.find(h1, h2)
    if r < 0:
      assert not expected.any()
      continue
    stored += 1
    np.testing.assert_array_equal(table.field(r, "value"), expected)
  assert stored > 0


def assert_same_tables(tree_solver, engine_solver, baseline):
  tree = tree_solver.tree
  rows = engine_rows(engine_solver, tree)
  t = engine_solver._backend.tables
  assert t.num_rows == np.count_nonzero(rows >= 0)
  visited = 0
  for i, r in enumerate(rows):
    c = tree.infoset_num_actions[i]
    if r < 0:
      assert not tree_solver._regrets[i].any() and not tree_solver._avg[i].any()
      continue
    visited += 1
    assert t.width(r) == c
    np.testing.assert_array_equal(t.field(r, "regret"),
                                  tree_solver._regrets[i, :c])
    np.testing.assert_array_equal(t.field(r, "avg"), tree_solver._avg[i, :c])
    np.testing.assert_array_equal(engine_lib.current_row(t, r),
                                  tree_solver._strategy[i, :c])
    assert t.stamp(r) == tree_solver._avg_last[i]
    if baseline == "learned":
      np.testing.assert_array_equal(
          t.field(r, "baseline"),
          tree_solver._baseline.reshape(tree.num_infosets, -1)[i, :c])
      np.testing.assert_array_equal(
          t.field(r, "count"),
          tree_solver._baseline_count.reshape(tree.num_infosets, -1)[i, :c])
    if baseline == "thesis":
      for p in (0, 1):
        np.testing.assert_array_equal(
            t.field(r, f"b{p}"),
            tree_solver._baseline.reshape(2, tree.num_infosets, -1)[p, i, :c])
        assert t.header(r, f"count{p}")[0] == (
            tree_solver._baseline_count.reshape(2, -1)[p, i])
  assert visited > 0
  if baseline in ("history", "predictive"):
    assert_same_history_baselines(tree_solver, engine_solver)
  if baseline in ("situation", "public"):
    assert_same_keyed_baselines(tree_solver, engine_solver, baseline)


@pytest.mark.parametrize("game", [G3, G4_OPEN, LIARS])
@pytest.mark.parametrize("baseline,averaging,regret,weighting", [
    ("none", "stochastic", "rm", None),
    ("learned", "optimistic", "rm+", None),
    ("thesis", "optimistic", "rm", None),
    ("none", "stochastic", "rm", "linear"),
    ("learned", "stochastic", "rm", "discounted"),
    ("history", "optimistic", "rm+", None),
    ("predictive", "stochastic", "rm", None),
    ("predictive", "optimistic", "rm+", None),
    ("situation", "optimistic", "rm+", None),
    ("situation", "stochastic", "rm", "linear"),
    ("public", "optimistic", "rm+", None),
])
def test_engine_run_is_the_tree_run_bit_for_bit(game, baseline, averaging,
                                                  regret, weighting):
  kwargs = dict(baseline=baseline, averaging=averaging, regret=regret,
                weighting=weighting, seed=3)
  on_tree = mccfrb.MCCFRbSolver(game, representation="tree", **kwargs)
  on_engine = mccfrb.MCCFRbSolver(game, representation="engine", **kwargs,
                                  **AS_TREE)
  assert on_engine.representation == "engine" and on_engine.tree is None
  on_tree.run(300)
  on_engine.run(300)
  assert_same_tables(on_tree, on_engine, baseline)
  assert on_engine.nodes_touched == on_tree.nodes_touched
  np.testing.assert_array_equal(on_engine._rng_words, on_tree._rng_words)


def test_engine_policy_answers_as_the_tree_policy():
  """The average policy read state by state (with the optimistic flush
  from the owner's reach) equals the tree solver's TabularPolicy."""
  kwargs = dict(baseline="learned", averaging="optimistic", seed=1)
  on_tree = mccfrb.MCCFRbSolver(G3, representation="tree", **kwargs)
  on_engine = mccfrb.MCCFRbSolver(G3, representation="engine", **kwargs,
                                  **AS_TREE)
  on_tree.run(200)
  on_engine.run(200)
  expected = on_tree.average_policy()
  got = on_engine.average_policy()
  assert isinstance(got, engine_lib.EnginePolicy)
  game = on_tree.game
  checked = 0
  for state in _all_decision_states(game):
    want = expected.action_probabilities(state)
    have = got.action_probabilities(state)
    assert set(want) == set(have)
    for a in want:
      assert have[a] == pytest.approx(want[a], abs=1e-12)
    checked += 1
  assert checked > 20
  nash = mccfrb.nash_conv(game, expected)
  assert mccfrb.nash_conv(game, got) == pytest.approx(nash, abs=1e-12)


def _all_decision_states(game):
  stack = [game.new_initial_state()]
  while stack:
    state = stack.pop()
    if state.is_terminal():
      continue
    if state.is_chance_node():
      stack.extend(state.child(a) for a, _ in state.chance_outcomes())
      continue
    yield state
    stack.extend(state.child(a) for a in state.legal_actions())


# With K episodes in flight, runs split at multiples of K / 2 iterations
# (whole groups) equal one run; one at a time, runs split anywhere.
@pytest.mark.parametrize("in_flight,splits", [(1, (1, 99, 200, 300)),
                                              (8, (4, 96, 200, 300))])
def test_run_in_parts_and_small_chunks_equals_one_run(monkeypatch, in_flight,
                                                      splits):
  whole = mccfrb.MCCFRbSolver(G4, representation="engine", seed=5,
                              in_flight=in_flight)
  whole.run(600)
  monkeypatch.setattr(engine_lib, "CHUNK_EPISODES", 6)
  parts = mccfrb.MCCFRbSolver(G4, representation="engine", seed=5,
                              in_flight=in_flight)
  t = parts._backend.tables
  parts._backend.tables = mccfrb.tables.HashedTable(
      t.max_moves, t.fields, t.header_names[2:], t.precision, slots=2)
  for n in splits:
    parts.run(n)
  assert parts.num_iterations == whole.num_iterations == 600
  assert len(parts._backend.tables.index) > 2  # It grew.
  assert_same_arena(whole._backend.tables, parts._backend.tables)


def assert_same_arena(a, b):
  """Two tables hold the same rows at the same offsets (rows are laid out
  in order of first visit) with the same bits, found by the same keys."""
  top = a.meta[hashed.TOP]
  assert a.num_rows == b.num_rows > 0 and top == b.meta[hashed.TOP]
  np.testing.assert_array_equal(a.words[:top], b.words[:top])
  np.testing.assert_array_equal(a.offsets(), b.offsets())


@pytest.mark.parametrize("game", [G4, LIARS])
def test_save_and_load_resume_bit_identically(game, tmp_path):
  whole = mccfrb.MCCFRbSolver(game, representation="engine", seed=2)
  whole.run(400)
  half = mccfrb.MCCFRbSolver(game, representation="engine", seed=2)
  half.run(200)
  path = str(tmp_path / "engine.npz")
  half.save(path)
  loaded = mccfrb.load_solver(path)
  assert loaded.representation == "engine"
  loaded.run(200)
  assert_same_arena(loaded._backend.tables, whole._backend.tables)
  np.testing.assert_array_equal(loaded._backend.tables.index, whole._backend.tables.index)


@pytest.mark.parametrize("baseline", ["history", "predictive"])
def test_history_baselines_resume_and_grow_as_one_run(baseline, tmp_path,
                                                      monkeypatch):
  """The per-history table grows between small kernel calls and is saved
  and loaded with the infoset tables: run(a), save, load, run(b) leaves
  the tables of run(a + b)."""
  whole = mccfrb.MCCFRbSolver(G4, representation="engine", seed=4,
                              baseline=baseline)
  whole.run(500)
  monkeypatch.setattr(engine_lib, "CHUNK_EPISODES", 8)
  half = mccfrb.MCCFRbSolver(G4, representation="engine", seed=4,
                             baseline=baseline)
  half.run(200)
  path = str(tmp_path / "history.npz")
  half.save(path)
  loaded = mccfrb.load_solver(path)
  loaded.run(300)
  assert loaded.memory()["histories"] == whole.memory()["histories"] > 100
  assert_same_arena(loaded._backend.history, whole._backend.history)
  assert_same_arena(loaded._backend.tables, whole._backend.tables)


def test_history_table_stops_growing_at_its_share_of_max_memory():
  solver = mccfrb.MCCFRbSolver(G6, seed=0, baseline="predictive",
                               max_memory=2**21)
  with pytest.warns(RuntimeWarning, match="baseline table reached "
                    "max_memory") as said:
    solver.run(5_000)
  assert len([w for w in said if "baseline table" in str(w.message)]) == 1
  memory = solver.memory()
  assert memory["frozen"] and memory["histories"] > 0
  assert memory["bytes"] <= 2**21
  assert hashed.check_rows(solver._backend.history.args(), G6_MOVES) == 0
  assert hashed.check_rows(solver._backend.tables.args(), G6_MOVES) == 0


def test_auto_picks_the_tree_when_it_fits_and_the_engine_when_not():
  assert mccfrb.MCCFRbSolver(G3).representation == "tree"
  big = mccfrb.MCCFRbSolver(G6, seed=0)
  assert big.representation == "engine"
  big.run(2000)
  memory = big.memory()
  assert memory["infosets"] > 1000 and memory["bytes"] > 0
  assert not memory["frozen"] and memory["dropped"] == 0
  assert mccfrb.MCCFRbSolver("goofspiel", seed=0).representation == "engine"


@pytest.mark.parametrize("baseline,max_memory", [("none", 2**20),
                                                  ("situation", 2**22)])
def test_max_memory_stops_growth_without_failing(baseline, max_memory):
  solver = mccfrb.MCCFRbSolver(G6, seed=0, max_memory=max_memory,
                               baseline=baseline)
  with pytest.warns(RuntimeWarning, match="engine solver's infoset table "
                    "reached max_memory=") as said:
    solver.run(10_000)
    solver.run(10_000)
  # Once per table that froze.
  tables = ["infoset" in str(w.message) for w in said
            if "max_memory" in str(w.message)]
  assert tables.count(True) == 1 and tables.count(False) <= 1
  memory = solver.memory()
  assert memory["frozen"] and memory["dropped"] > 0
  assert memory["bytes"] <= max_memory
  assert solver.num_iterations == 20_000
  assert hashed.check_rows(solver._backend.tables.args(), G6_MOVES) == 0
  # The stored infosets still learn; unstored ones play uniform.
  check_unstored_infosets_play_uniform(solver)


def test_hogwild_learns_and_keeps_the_tables_consistent():
  # Hogwild is not reproducible: 12 seeds each side. Measured over 8 seeds,
  # Hogwild's mean is 0.95-0.96 times one thread's (per-seed spread 5%).
  solver = check_hogwild_converges_as_one_thread(
      lambda seed, **options: mccfrb.MCCFRbSolver(
          G4, representation="engine", seed=seed, **options), G4, 20_000)
  t = solver._backend.tables
  # Every stored row owns its own words: no two rows overlap, and each
  # key has one row.
  starts = t.offsets()
  widths = np.array([t.width(o) for o in starts])
  ends = starts + np.array([t.row_words(w) for w in widths])
  assert len(starts) == t.num_rows and (starts[1:] >= ends[:-1]).all()
  keys = t.words[starts]
  assert len(np.unique(keys)) == len(keys)
  assert hashed.check_rows(t.args(), t.max_moves) == 0


def test_hogwild_workers_run_on_their_own_threads():
  """Whatever thread count the caller left numba at (the experiment
  binaries set one), both workers run at once, each on its own Python
  thread: on one thread the first worker would claim every iteration
  before the second started."""
  previous = numba.get_num_threads()
  numba.set_num_threads(1)
  try:
    solver = mccfrb.MCCFRbSolver(G4, representation="engine", seed=0,
                                 threads=2, hogwild=True)
    solver.run(50_000)
  finally:
    numba.set_num_threads(previous)
  assert numba.get_num_threads() == previous
  # Every claimed iteration runs both episodes, table growths included.
  assert solver._hogwild_episodes.sum() == 100_000
  assert solver.num_iterations == 50_000
  assert (solver._hogwild_episodes > 0).all(), solver._hogwild_episodes


@pytest.mark.parametrize("kwargs,message", [
    (dict(game="kuhn_poker", representation="engine"), "no native engine"),
    (dict(game=G4, representation="engine", baseline="oracle"),
     "exact values of every history.*learned, history, predictive"),
    (dict(game=G4, representation="engine", threads=2), "hogwild=True"),
    (dict(game=G4, representation="tree", threads=2, hogwild=True),
     "runs on an engine"),
    (dict(game=G4, representation="graph"), "Unknown representation"),
])
def test_bad_choices_are_refused_in_one_line(kwargs, message):
  with pytest.raises(ValueError, match=message):
    mccfrb.MCCFRbSolver(**kwargs)


def test_tree_only_methods_say_so_on_an_engine():
  solver = mccfrb.MCCFRbSolver(G4, representation="engine")
  with pytest.raises(ValueError, match="needs the compiled tree"):
    solver.sample_estimates(10)
  with pytest.raises(ValueError, match="needs the compiled tree"):
    solver.average_policy_table()


@pytest.mark.parametrize("variant", ["cfr", "cfr+", "linear", "discounted"])
def test_cfr_solver_streams_on_an_engine(variant, tmp_path):
  """CFRSolver(representation="engine") equals the tree's CFRSolver: the
  average policy's NashConv to 1e-10, with save/load in between."""
  on_tree = mccfrb.CFRSolver(G4, variant=variant, representation="tree")
  on_engine = mccfrb.CFRSolver(G4, variant=variant, representation="engine")
  on_tree.run(6)
  on_engine.run(3)
  path = str(tmp_path / "cfr.npz")
  on_engine.save(path)
  on_engine = mccfrb.load_solver(path)
  on_engine.run(3)
  assert on_engine.num_iterations == 6
  expected = mccfrb.nash_conv(G4, on_tree.average_policy())
  assert mccfrb.nash_conv(G4, on_engine.average_policy()) == pytest.approx(
      expected, abs=1e-10)
  assert expected < 0.9 * mccfrb.nash_conv(
      G4, mccfrb.uniform_table(on_tree.tree))
  assert on_engine.memory()["infosets"] > 0


def test_cfr_solver_on_an_engine_walks_on_two_threads_to_the_same_tables():
  """threads=2 reaches the streaming walk (it was refused before) and
  changes nothing: the average policy's NashConv is the one thread's."""
  one = mccfrb.CFRSolver(G4, variant="cfr+", representation="engine")
  two = mccfrb.CFRSolver(G4, variant="cfr+", representation="engine",
                         threads=2)
  assert (one._stream.threads, two._stream.threads) == (1, 2)  # pylint: disable=protected-access
  for solver in (one, two):
    solver.run(4)
  assert mccfrb.nash_conv(G4, two.average_policy()) == mccfrb.nash_conv(
      G4, one.average_policy())


def test_the_engine_episodes_count_no_references():
  """`engine_episodes` is compiled without numba's reference counts: with
  them every helper its ways down and up call took an NRT_incref and an
  NRT_decref per array of its arguments (borrowed or not), 18% of
  MCCFRb's default run on goofspiel 6 (BUILD_NOTES, "Outcome sampling in
  named pieces"). Without them it cannot allocate, so it copies by loops."""
  assert outcome.engine_episodes.targetoptions.get("_nrt") is False


@pytest.mark.parametrize("cls,module", [
    (mccfrb.MCCFRbSolver, "outcome"),
    (mccfrb.ExternalSamplingSolver, "external")])
def test_hogwild_calls_the_kernel_with_the_one_thread_types(cls, module,
                                                            monkeypatch):
  """A Hogwild run calls the engine's kernel with the argument types of a
  one-thread run, so that either after the other compiles (or loads)
  nothing more: a stream key passed as a Python int instead of a uint64
  typed `engine_episodes` a second time (a whole compile, about 25 s)."""
  from mccfrb import solvers  # pylint: disable=import-outside-toplevel
  seen = []

  def spy(function, code, *args):
    seen.append((function.py_func.__name__, code)
                + tuple(numba.typeof(a) for a in args))
    return call_literal(function, code, *args)

  monkeypatch.setattr(getattr(solvers, module), "call_literal", spy)
  for options in ({}, dict(threads=2, hogwild=True)):
    cls(G3, representation="engine", seed=0, **options).run(20)
  kernels = {s for s in seen if s[0].endswith(("episodes", "traversals"))}
  assert len(kernels) == 1, [s[:1] + s[2:] for s in kernels]
  assert len(seen) > 2


def test_openspiel_cpp_policy_is_evaluated_on_the_engine_as_by_openspiel():
  """The C++ outcome sampling's average, read from its serialised table
  into engine keys, has the exploitability pyspiel computes for it."""
  import pyspiel  # pylint: disable=import-outside-toplevel
  from mccfrb.experiment import wallclock  # pylint: disable=import-outside-toplevel
  runner = wallclock.ALGORITHMS["openspiel_os_cpp"][0](G3, 0)
  runner.run(300)
  expected = pyspiel.exploitability(runner.game, runner.solver.average_policy())
  assert runner.exploitability() == pytest.approx(expected, abs=1e-9)


def test_timed_run_writes_a_row_per_checkpoint():
  from mccfrb.experiment import wallclock  # pylint: disable=import-outside-toplevel
  # A clock that moves 0.05 s a reading, so that a chunk of training
  # "takes" 0.05 s however loaded the machine is: on the wall clock a
  # chunk slowed past both checkpoints gives one row (as documented).
  ticks = itertools.count()
  rows = wallclock.timed_run(G3, "os", 0, wallclock.checkpoints(0.4, 2),
                             clock=lambda: 0.05 * next(ticks))
  assert [r["algorithm"] for r in rows] == ["os", "os"]
  assert [r["target"] for r in rows] == [0.2, 0.4]
  assert rows[0]["seconds"] >= 0.2 and rows[1]["seconds"] >= 0.4
  assert rows[1]["iterations"] > rows[0]["iterations"] > 0
  assert 0 <= rows[1]["exploitability"] < rows[0]["exploitability"]


def test_timed_run_scores_on_the_threads_asked(monkeypatch):
  """eval_threads reaches the streaming walk of every checkpoint, for
  mccfrb's runners and OpenSpiel's."""
  from mccfrb.experiment import wallclock  # pylint: disable=import-outside-toplevel
  asked = streaming_walk_threads(monkeypatch)
  rows = []
  for algorithm in ("os", "openspiel_os_cpp"):
    rows += wallclock.timed_run(G3, algorithm, 0, [0.1, 0.2], eval_threads=2)
  assert all(r["exploitability"] > 0 for r in rows)
  # One walk a row: a chunk that outlasts both checkpoints (a slow
  # machine) gives one row, evaluated once.
  assert {r["algorithm"] for r in rows} == {"os", "openspiel_os_cpp"}
  assert asked == [2] * len(rows)


_ONE_ENGINE = """
import numpy as np
import mccfrb
from mccfrb.games.engines import compiled, dark_hex, engine_for, goofspiel
from mccfrb.games.engines import liars_dice, phantom_ttt, protocol
from mccfrb.games.engines.common import call_literal
from mccfrb.games.engines.common import hash_step

engine = engine_for(mccfrb.load_game("goofspiel(num_cards=4)"))
state = np.zeros(engine.state_size, dtype=np.int64)
print(call_literal(protocol.replay, engine.code, engine.params, state,
                   np.array([0, 1], dtype=np.int64)))
others = [m.player for m in (compiled, dark_hex, liars_dice, phantom_ttt)]
print(len(goofspiel.player.signatures), sum(len(f.signatures) for f in others))
"""


def test_a_kernel_types_only_its_own_engines_functions(tmp_path):
  """`protocol.replay` compiled for goofspiel, from an empty numba cache,
  types goofspiel's `player` and no other engine's (protocol.py's
  overloads; the dispatch by branches typed all five engines' functions
  at every call site)."""
  out = printed_with_empty_cache(_ONE_ENGINE, tmp_path)
  assert out == ["-1", "1", "0"], out


def test_an_engine_code_that_is_not_a_constant_is_refused_while_typing():
  """A kernel that calls the protocol without making the engine code a
  compile-time constant gets a typing error naming the fix, not a
  dispatch over every engine."""

  @numba.njit
  def first_player(code, params, state):
    protocol.reset(code, params, state)
    return protocol.player(code, params, state)

  engine = mccfrb.games.engines.engine_for(mccfrb.load_game(G3))
  state = np.zeros(engine.state_size, dtype=np.int64)
  with pytest.raises(numba.core.errors.TypingError,
                     match="must be a compile-time constant"):
    first_player(engine.code, engine.params, state)


_EACH_ITS_OWN = """
import mccfrb
from mccfrb.games.engines import compiled
from mccfrb.kernels import exact
from mccfrb.kernels import outcome
mccfrb.MCCFRbSolver("liars_dice(numdice=1,dice_sides=3)",
                    representation="engine", baseline="history",
                    seed=0).run(2)
print(len(exact.node_values.signatures), len(outcome.oracle_values.signatures),
      len(exact.regret_matching.signatures))
engine_steps = (compiled.player, compiled.apply, compiled.infoset_hash)
before = sum(len(f.signatures) for f in engine_steps)
mccfrb.MCCFRbSolver("kuhn_poker", representation="tree", seed=0).run(2)
print(sum(len(f.signatures) for f in engine_steps) - before,
      len(outcome.tree_episodes.signatures)
      + len(outcome.engine_episodes.signatures))
"""


@pytest.mark.slow
def test_each_representation_types_only_its_own_code(tmp_path):
  """The outcome-sampling episodes (kernels/outcome.py), from an empty
  numba cache: on an engine they type none of the tree's
  code (the oracle baseline's exact values, a whole table's regret
  matching), and on a tree none of the engine's (the compiled tree's
  engine functions, which a tree kernel that typed the engine branch
  would compile); the two runs compile one kernel each."""
  out = printed_with_empty_cache(_EACH_ITS_OWN, tmp_path)
  assert out == ["0", "0", "0", "0", "2"], out
