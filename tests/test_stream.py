"""Streaming walks on native engines (mccfrb/solvers/stream.py, kernels/stream.py)
against the compiled tree: best responses of random, partial and uniform
policies, the optimistic-averaging catch-up, and the exact CFR family."""

import numpy as np
import pytest
from open_spiel.python import policy as os_policy

import mccfrb
from mccfrb.solvers import stream
from mccfrb.kernels import stream as kernels
from mccfrb.tables import HashedTable
from tests.conftest import streaming_walk_threads

GOOFSPIELS = tuple(
    f"goofspiel(num_cards={n},imp_info={imp},points_order={order},"
    f"returns_type={returns})"
    for n in (3, 4) for imp in (True, False)
    for order in ("random", "descending")
    for returns in ("win_loss", "point_difference"))
LIARS_DICE = ("liars_dice(numdice=1,dice_sides=3)",
              "liars_dice(numdice=1,dice_sides=4)")
GAMES = GOOFSPIELS + LIARS_DICE
# Games for the CFR comparisons: small and large goofspiel, one whose public
# states merge (imp_info=False, infosets without perfect recall), dice.
CFR_GAMES = (
    "goofspiel(num_cards=3,imp_info=True,points_order=random,"
    "returns_type=win_loss)",
    "goofspiel(num_cards=4,imp_info=True,points_order=random,"
    "returns_type=point_difference)",
    "goofspiel(num_cards=4,imp_info=False,points_order=descending,"
    "returns_type=point_difference)",
    "liars_dice(numdice=1,dice_sides=3)",
)


def _random_policy(game, seed, zero_fraction=0.2):
  """A TabularPolicy with random probabilities, some exactly 0 (whole
  subtrees of zero reach), never all of a row."""
  policy = os_policy.TabularPolicy(game)
  rng = np.random.default_rng(seed)
  mask = policy.legal_actions_mask.astype(bool)
  x = rng.random(mask.shape)
  x[rng.random(mask.shape) < zero_fraction] = 0.0
  x[~mask] = 0.0
  for row in range(len(x)):
    if x[row].sum() == 0.0:
      x[row, np.flatnonzero(mask[row])[0]] = 1.0
  policy.action_probability_array[:] = x / x.sum(axis=1, keepdims=True)
  return policy


def _tree_values(game, policy):
  tree = mccfrb.evaluation.as_tree(game)
  table = mccfrb.table_from_policy(tree, policy)
  return mccfrb.best_response_values(tree, table)


@pytest.fixture(scope="module", params=GAMES)
def case(request):
  game = mccfrb.load_game(request.param)
  return game, stream.as_engine(game)


def test_random_policy(case):
  game, engine = case
  policy = _random_policy(game, 1)
  tables = stream.tables_from_policy(engine, policy.action_probabilities)
  values = stream.engine_best_response_values(engine, tables)
  np.testing.assert_allclose(values, _tree_values(game, policy), rtol=0,
                             atol=1e-12)
  expected = mccfrb.nash_conv(game, policy)
  assert abs(stream.engine_nash_conv(engine, tables) - expected) < 1e-12
  assert abs(stream.engine_exploitability(engine, tables)
             - expected / 2) < 1e-12
  # A perturbed table gives another value: the test can fail.
  rng = np.random.default_rng(7)
  for o in tables.offsets():
    avg = tables.field(o, "avg")
    avg[:] = rng.random(len(avg))
  assert abs(stream.engine_nash_conv(engine, tables) - expected) > 1e-9


def test_uniform_and_partial_policies(case):
  game, engine = case
  uniform = os_policy.TabularPolicy(game)
  assert abs(stream.engine_nash_conv(engine) - mccfrb.nash_conv(game, uniform)
             ) < 1e-12
  # Half the infosets without a row play uniform.
  policy = _random_policy(game, 2)
  keep = {}

  def partial(state):
    key = state.information_state_string()
    keep.setdefault(key, hash(key) % 2 == 0)
    return policy.action_probabilities(state) if keep[key] else None

  tables = stream.tables_from_policy(engine, partial)
  assert 0 < tables.num_rows
  for key, kept in keep.items():
    if not kept:
      row = policy.state_lookup[key]
      policy.action_probability_array[row] = (
          policy.legal_actions_mask[row] / policy.legal_actions_mask[row].sum())
  assert abs(stream.engine_nash_conv(engine, tables)
             - mccfrb.nash_conv(game, policy)) < 1e-12


# The games whose infosets have perfect recall: without it (imp_info=False)
# pi_own is not one number per infoset and the flush formula does not apply.
PERFECT_RECALL = tuple(g for g in GAMES if "imp_info=False" not in g)


@pytest.mark.parametrize("case", PERFECT_RECALL, indirect=True)
@pytest.mark.parametrize("flush_code", [1, 2])
def test_flush_formula_on_a_hand_made_table(case, flush_code):
  """cum = avg + W pi_own^cur strategy with the current strategy's own
  reach, checked against a lockstep walk in Python (stream.policy_dict)
  evaluated on the tree."""
  game, engine = case
  tables = stream.tables_from_policy(
      engine, _random_policy(game, 3).action_probabilities)
  rng = np.random.default_rng(4)
  big_t = 9
  strategy = _random_policy(game, 5).action_probabilities
  current = stream.tables_from_policy(engine, strategy)
  # Both tables were filled by the same walk: their rows lie alike.
  np.testing.assert_array_equal(tables.offsets(), current.offsets())
  for o in tables.offsets():
    tables.set_stamp(o, rng.integers(0, big_t + 1))
    avg = tables.field(o, "avg")
    avg *= rng.random(len(avg)) < 0.7  # Some rows all zero.
    tables.field(o, "strategy")[:] = current.field(o, "avg")
  expected = mccfrb.nash_conv(
      game, stream.policy_dict(engine, tables, flush_code, big_t))
  got = stream.engine_nash_conv(engine, tables, flush_code, big_t)
  assert abs(got - expected) < 1e-12
  # Without the catch-up the value differs.
  assert abs(stream.engine_nash_conv(engine, tables) - got) > 1e-9


@pytest.mark.parametrize("regret", ["rm", "rm+"])
def test_flush_equals_the_tree_solvers_optimistic_average(regret):
  """The raw tables of a tree MCCFRbSolver with optimistic averaging (avg,
  avg_last, regret-matched strategy) copied into engine tables: the engine
  catch-up gives the NashConv of the solver's flushed average_policy()."""
  name = ("goofspiel(num_cards=4,imp_info=True,points_order=random,"
          "returns_type=point_difference)")
  game = mccfrb.load_game(name)
  engine = stream.as_engine(game)
  solver = mccfrb.MCCFRbSolver(game, baseline="none", averaging="optimistic",
                               regret=regret, seed=0)
  solver.run(3000)
  tree = solver.tree
  current = solver.current_policy_table()
  keys = stream.infoset_keys(engine)
  tables = HashedTable(engine.max_moves, ("regret", "avg", "strategy"))
  strings = tree.infoset_strings()
  for i in range(tree.num_infosets):
    c = int(tree.infoset_num_actions[i])
    if c < 2:
      continue
    _, (h1, h2) = keys[strings[i]]
    r = tables.insert(h1, h2, c)
    tables.field(r, "avg")[:] = solver._avg[i, :c]  # pylint: disable=protected-access
    tables.field(r, "strategy")[:] = current[i, :c]
    tables.set_stamp(r, solver._avg_last[i])  # pylint: disable=protected-access
  flush = 2 if regret == "rm+" else 1
  expected = mccfrb.nash_conv(game, solver.average_policy())
  got = stream.engine_nash_conv(engine, tables, flush, solver.num_iterations)
  assert abs(got - expected) < 1e-12
  assert abs(stream.engine_nash_conv(engine, tables, flush,
                                     solver.num_iterations + 1) - got) > 1e-9


@pytest.mark.parametrize("variant", ["cfr", "cfr+", "linear", "discounted",
                                     "pcfr+", "dcfr+", "pdcfr+"])
@pytest.mark.parametrize("name", CFR_GAMES)
def test_streaming_cfr_equals_cfr_solver(name, variant):
  game = mccfrb.load_game(name)
  engine = stream.as_engine(game)
  solver = mccfrb.CFRSolver(game, variant=variant)
  streaming = stream.StreamingCFR(engine, variant=variant)
  keys = stream.infoset_keys(engine)
  strings = solver.tree.infoset_strings()
  done = 0
  for n in (1, 2, 10):
    solver.run(n - done)
    streaming.run(n - done)
    done = n
    assert streaming.num_iterations == n
    expected = mccfrb.nash_conv(game, solver.average_policy())
    assert abs(streaming.nash_conv() - expected) < 1e-10
    average = solver.average_policy_table()
    current = solver.current_policy_table()
    rows = 0
    for i, key in enumerate(strings):
      c = int(solver.tree.infoset_num_actions[i])
      if c < 2:
        continue
      rows += 1
      np.testing.assert_allclose(streaming.average_strategy(keys[key][1]),
                                 average[i, :c], rtol=0, atol=1e-10)
      np.testing.assert_allclose(streaming.current_strategy(keys[key][1]),
                                 current[i, :c], rtol=0, atol=1e-10)
    assert streaming.tables.num_rows == rows
  # Another variant's tables differ: the comparison can fail.
  other = stream.StreamingCFR(engine, variant="cfr" if variant != "cfr"
                              else "cfr+")
  other.run(done)
  assert abs(other.nash_conv() - streaming.nash_conv()) > 1e-9


def test_dag_detection():
  """Goofspiel without imp_info merges public states (the level-by-level
  best response runs); with imp_info the public states form a tree."""
  for imp, dag in ((True, 0), (False, 1)):
    engine = stream.as_engine(
        f"goofspiel(num_cards=4,imp_info={imp},points_order=random)")
    walk = stream._Walk(engine, kernels.BR)  # pylint: disable=protected-access
    tables = stream._empty_tables(engine)  # pylint: disable=protected-access
    stream._run(walk, tables, tables)  # pylint: disable=protected-access
    assert walk.ctl[kernels.C_DAG] == dag


def test_growth_and_resume():
  """Tiny arenas, tables and budget: every SHORT_* path and the pauses
  give the same values."""
  name = ("goofspiel(num_cards=4,imp_info=True,points_order=random,"
          "returns_type=point_difference)")
  game = mccfrb.load_game(name)
  engine = stream.as_engine(game)
  policy = _random_policy(game, 6)
  tables = stream.tables_from_policy(engine, policy.action_probabilities)
  walk = stream._Walk(engine, kernels.BR)  # pylint: disable=protected-access
  walk.ints = np.zeros(4, dtype=np.int64)
  walk.floats = np.zeros(4)
  walk.states = np.zeros((1, engine.state_size), dtype=np.int64)
  walk.pub = np.zeros((2, 2), dtype=np.uint64)
  walk.frames = walk.frames[:2].copy()
  sizes = {"ints": 4, "floats": 4, "states": 1, "pub": 2, "frames": 2}
  grown, pauses = [], []
  grow, progress = walk.grow, walk.progress

  def record_grow(status):
    grown.append(status)
    return grow(status)

  def record_pause(*args):
    pauses.append(1)
    return progress(*args)

  walk.grow, walk.progress = record_grow, record_pause
  budget = stream.BUDGET
  try:
    stream.BUDGET = 7
    values = stream._run(walk, tables, tables)  # pylint: disable=protected-access
  finally:
    stream.BUDGET = budget
  np.testing.assert_allclose(values, _tree_values(game, policy), rtol=0,
                             atol=1e-12)
  # Each path was taken: the walk paused, and every buffer grew.
  assert set(grown) == {kernels.SHORT_ARENA, kernels.SHORT_PUBLIC,
                        kernels.SHORT_FRAMES}, grown
  assert pauses
  for name, size in sizes.items():
    assert len(getattr(walk, name)) > size, name


@pytest.mark.parametrize("name", (
    "goofspiel(num_cards=4,imp_info=True,points_order=random,"
    "returns_type=point_difference)",
    "goofspiel(num_cards=4,imp_info=False,points_order=random,"
    "returns_type=win_loss)",
    "liars_dice(numdice=1,dice_sides=4)"))
def test_threads(name):
  """Two threads walk public subtrees at once: the same best responses and
  CFR tables (frames are walked whole, in the same order, by one thread)."""
  game = mccfrb.load_game(name)
  engine = stream.as_engine(game)
  policy = _random_policy(game, 8)
  tables = stream.tables_from_policy(engine, policy.action_probabilities)
  np.testing.assert_array_equal(
      stream.engine_best_response_values(engine, tables, threads=2),
      stream.engine_best_response_values(engine, tables))
  one = stream.StreamingCFR(engine, variant="cfr+")
  two = stream.StreamingCFR(engine, variant="cfr+", threads=2)
  for solver in (one, two):
    solver.run(4)
  assert two.tables.num_rows == one.tables.num_rows > 0
  # Threads may insert rows in another order: match them by key.
  rows_of = lambda t: {int(t.words[o]): int(o) for o in t.offsets()}
  a, b = rows_of(one.tables), rows_of(two.tables)
  assert sorted(a) == sorted(b)
  for key, o in a.items():
    for field in ("avg", "strategy", "regret"):
      np.testing.assert_array_equal(one.tables.field(o, field),
                                    two.tables.field(b[key], field))
  assert one.nash_conv() == two.nash_conv()


def test_exploitability_of_an_engine_policy_walks_on_the_threads_asked(
    monkeypatch):
  """`mccfrb.exploitability(..., threads=2)` of an `EnginePolicy` hands the
  threads to the streaming walk (they were dropped before) and gives the
  value of one thread."""
  name = GOOFSPIELS[0]
  solver = mccfrb.MCCFRbSolver(name, seed=0, representation="engine")
  solver.run(2000, progress=False)
  policy = solver.average_policy()
  asked = streaming_walk_threads(monkeypatch)
  one = mccfrb.exploitability(name, policy)
  two = mccfrb.exploitability(name, policy, threads=2)
  assert asked == [1, 2]
  assert two == one > 0.0


def test_the_walks_per_frame_calls_count_no_references():
  """The frame's pieces that are calls of their own are compiled with
  `_nrt=False` (no NRT_incref/NRT_decref call for each array a call takes:
  BUILD_NOTES, "Streaming walks and exact CFR on engines"); their IR is not
  read here, as a walk's compile from an empty cache takes a minute."""
  for piece in (kernels._expand, kernels._group, kernels._enter,  # pylint: disable=protected-access
                kernels._combine):  # pylint: disable=protected-access
    assert piece.targetoptions.get("_nrt") is False, piece.py_func.__name__
