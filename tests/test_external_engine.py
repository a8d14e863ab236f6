"""External sampling on native engines against the same solver on the tree
(kernels/external.py, mode ENGINE; solvers/external.py)."""

import numpy as np
import pytest

import mccfrb
from mccfrb.solvers import engine as engine_lib
from mccfrb.solvers import external as external_lib
from mccfrb import tables as tables_lib
from mccfrb.tables import hashed
from tests.conftest import check_hogwild_converges_as_one_thread
from tests.conftest import check_unstored_infosets_play_uniform
from tests.conftest import printed_with_empty_cache
from tests.test_engine_solvers import _all_decision_states
from tests.test_engine_solvers import engine_rows

G3 = ("goofspiel(num_cards=3,imp_info=True,points_order=random,"
      "returns_type=point_difference)")
G4 = ("goofspiel(num_cards=4,imp_info=True,points_order=random,"
      "returns_type=point_difference)")
G4_OPEN = "goofspiel(num_cards=4)"
LIARS = "liars_dice(numdice=1,dice_sides=3)"
G6 = ("goofspiel(num_cards=6,imp_info=True,points_order=random,"
      "returns_type=point_difference)")

VARIANTS = [
    {},
    {"weighting": "linear"},
    {"weighting": "linear", "linear_iterations": 5},
    {"weighting": "discounted"},
    {"weighting": "discounted", "alpha": 1.0, "beta": 0.5, "gamma": 1.0},
    {"pruning": "pluribus", "prune_threshold": -0.5, "prune_after": 5},
    {"pruning": "probabilistic", "prune_threshold": -0.5, "prune_k": 1.0,
     "prune_after": 5},
    {"pruning": "pluribus", "weighting": "discounted",
     "prune_threshold": -0.5, "prune_after": 5},
]


def assert_same_tables(on_tree, on_engine):
  """Regrets, averages and discount catch-ups equal per infoset, bit for
  bit; infosets never visited on the tree have no row on the engine."""
  tree = on_tree.tree
  rows = engine_rows(on_engine, tree)
  t = on_engine._backend.tables
  assert t.num_rows == np.count_nonzero(rows >= 0)
  for i, r in enumerate(rows):
    c = tree.infoset_num_actions[i]
    if r < 0:
      assert not on_tree._regrets[i].any() and not on_tree._avg[i].any()
      continue
    assert t.width(r) == c
    np.testing.assert_array_equal(t.field(r, "regret"),
                                  on_tree._regrets[i, :c])
    np.testing.assert_array_equal(t.field(r, "avg"), on_tree._avg[i, :c])
    if "through" in t.header_names:
      assert t.header(r, "through")[0] == on_tree._through[i]
  assert np.count_nonzero(rows >= 0) > 0


@pytest.mark.parametrize("game", [G3, G4_OPEN, LIARS])
@pytest.mark.parametrize("options", VARIANTS, ids=str)
def test_engine_run_is_the_tree_run_bit_for_bit(game, options):
  on_tree = mccfrb.ExternalSamplingSolver(game, representation="tree",
                                          seed=3, **options)
  on_engine = mccfrb.ExternalSamplingSolver(game, representation="engine",
                                            seed=3, precision="float64",
                                            **options)
  assert on_engine.representation == "engine" and on_engine.tree is None
  on_tree.run(60)
  on_engine.run(60)
  assert_same_tables(on_tree, on_engine)
  assert on_engine.nodes_touched == on_tree.nodes_touched
  assert on_engine.subtrees_pruned == on_tree.subtrees_pruned
  if "pruning" in options:
    assert on_tree.subtrees_pruned > 0
  np.testing.assert_array_equal(on_engine._rng_words, on_tree._rng_words)


def test_policies_answer_as_the_tree_policies():
  on_tree = mccfrb.ExternalSamplingSolver(G3, representation="tree", seed=1,
                                          weighting="discounted")
  on_engine = mccfrb.ExternalSamplingSolver(G3, representation="engine",
                                            seed=1, weighting="discounted",
                                            precision="float64")
  on_tree.run(50)
  on_engine.run(50)
  game = on_tree.game
  for current in (False, True):
    want = on_tree.current_policy() if current else on_tree.average_policy()
    have = (on_engine.current_policy() if current
            else on_engine.average_policy())
    assert isinstance(have, engine_lib.EnginePolicy)
    checked = 0
    for state in _all_decision_states(game):
      a, b = want.action_probabilities(state), have.action_probabilities(state)
      assert set(a) == set(b)
      for action in a:
        assert b[action] == pytest.approx(a[action], abs=1e-12)
      checked += 1
    assert checked > 20
  assert mccfrb.nash_conv(game, on_engine.average_policy()) == pytest.approx(
      mccfrb.nash_conv(game, on_tree.average_policy()), abs=1e-12)


def _cells(solver):
  """Every row's regrets and averages, in arena order (rows are laid out
  in order of first visit)."""
  t = solver._backend.tables
  rows = t.offsets()
  return {name: np.concatenate([t.field(o, name) for o in rows])
          for name in ("regret", "avg")}


def test_runs_in_parts_small_calls_and_tables_equal_one_run(monkeypatch):
  """run(a); run(b) == run(a + b), also with kernel calls of a few nodes
  (traversals suspended and resumed) and a table that starts with two rows
  (grown mid-traversal)."""
  options = dict(representation="engine", seed=5, pruning="probabilistic",
                 prune_threshold=-0.5, prune_k=1.0, prune_after=20)
  whole = mccfrb.ExternalSamplingSolver(G4, **options)
  whole.run(150)
  parts = mccfrb.ExternalSamplingSolver(G4, **options)
  for n in (1, 49, 100):
    parts.run(n)
  monkeypatch.setattr(external_lib, "ENGINE_CALL_NODES", 7)
  small = mccfrb.ExternalSamplingSolver(G4, **options)
  small._backend.tables = tables_lib.HashedTable(small.engine.max_moves,
                                         ("regret", "avg"),
                                         precision=small.precision, slots=2)
  small.run(70)
  small.run(80)
  for solver in (parts, small):
    assert solver.num_iterations == whole.num_iterations == 150
    assert solver.nodes_touched == whole.nodes_touched
    assert solver._backend.tables.num_cells == whole._backend.tables.num_cells
    # Rows are numbered in order of first visit: the same in all three.
    for name, cells in _cells(whole).items():
      np.testing.assert_array_equal(_cells(solver)[name], cells)
    np.testing.assert_array_equal(solver._rng_words, whole._rng_words)


@pytest.mark.parametrize("game", [G4, LIARS])
def test_save_and_load_resume_bit_identically(game, tmp_path):
  options = dict(representation="engine", seed=2, weighting="discounted")
  whole = mccfrb.ExternalSamplingSolver(game, **options)
  whole.run(300)
  half = mccfrb.ExternalSamplingSolver(game, **options)
  half.run(150)
  path = str(tmp_path / "es_engine.npz")
  half.save(path)
  loaded = mccfrb.load_solver(path)
  assert isinstance(loaded, mccfrb.ExternalSamplingSolver)
  assert loaded.representation == "engine"
  assert loaded._options() == half._options()
  loaded.run(150)
  assert loaded.num_iterations == 300
  top = whole._backend.tables.meta[hashed.TOP]
  assert loaded._backend.tables.meta[hashed.TOP] == top
  np.testing.assert_array_equal(loaded._backend.tables.words[:top],
                                whole._backend.tables.words[:top])
  np.testing.assert_array_equal(loaded._backend.tables.index, whole._backend.tables.index)


def test_a_suspended_traversal_is_saved_and_finished(tmp_path, monkeypatch):
  """A run interrupted between kernel calls (Ctrl-C) leaves a traversal
  suspended; a checkpoint holds it, and the next run finishes it."""
  whole = mccfrb.ExternalSamplingSolver(G4, representation="engine", seed=4)
  whole.run(20)
  cut = mccfrb.ExternalSamplingSolver(G4, representation="engine", seed=4)
  cut.run(10)
  monkeypatch.setattr(external_lib, "ENGINE_CALL_NODES", 50)
  calls = []
  kernel_call = external_lib.call_literal

  def interrupted(*args):
    if calls:
      raise KeyboardInterrupt
    calls.append(1)
    return kernel_call(*args)

  monkeypatch.setattr(external_lib, "call_literal", interrupted)
  with pytest.raises(KeyboardInterrupt):
    cut.run(10)
  monkeypatch.undo()
  assert cut._es_state["progress"][0, 3] == 1  # PENDING
  path = str(tmp_path / "cut.npz")
  cut.save(path)
  loaded = mccfrb.load_solver(path)
  loaded.run(20 - loaded.num_iterations)
  assert loaded.num_iterations == 20
  np.testing.assert_array_equal(_cells(loaded)["regret"],
                                _cells(whole)["regret"])
  np.testing.assert_array_equal(_cells(loaded)["avg"], _cells(whole)["avg"])


def test_max_memory_freezes_the_tables_and_unstored_infosets_play_uniform():
  solver = mccfrb.ExternalSamplingSolver(G6, representation="engine", seed=0,
                                         max_memory=2**20)
  with pytest.warns(RuntimeWarning, match="infoset table reached "
                    "max_memory=") as said:
    solver.run(100)
  # Once per table that froze.
  assert len([w for w in said if "infoset table" in str(w.message)]) == 1
  memory = solver.memory()
  assert memory["frozen"] and memory["dropped"] > 0
  assert memory["bytes"] <= 2**20
  assert solver.num_iterations == 100
  t = solver._backend.tables
  assert hashed.check_rows(t.args(), t.max_moves) == 0
  assert np.abs(_cells(solver)["regret"]).max() > 0
  check_unstored_infosets_play_uniform(solver)


def test_hogwild_learns_and_keeps_the_tables_consistent():
  # Hogwild is not reproducible: 12 seeds each side. Measured over 8 seeds,
  # Hogwild's mean is 1.02-1.03 times one thread's (per-seed spread 6%).
  solver = check_hogwild_converges_as_one_thread(
      lambda seed, **options: mccfrb.ExternalSamplingSolver(
          G4, representation="engine", seed=seed, **options), G4, 2000)
  t = solver._backend.tables
  starts = t.offsets()
  ends = starts + np.array([t.row_words(t.width(o)) for o in starts])
  assert len(starts) == t.num_rows and (starts[1:] >= ends[:-1]).all()
  assert hashed.check_rows(t.args(), t.max_moves) == 0
  # Both workers start at the root and insert the same new rows at once: a
  # worker meeting a row being inserted waits for it (it used to hang).
  big = mccfrb.ExternalSamplingSolver(G6, seed=0, threads=2, hogwild=True)
  big.run(300)
  assert big.num_iterations == 300 and big.memory()["infosets"] > 10_000


def test_auto_picks_the_engine_for_goofspiel_6():
  solver = mccfrb.ExternalSamplingSolver(G6, seed=0)
  assert solver.representation == "engine"
  solver.run(100)
  assert solver.num_iterations == 100
  memory = solver.memory()
  assert memory["infosets"] > 1000 and not memory["frozen"]
  assert mccfrb.ExternalSamplingSolver(G3).representation == "tree"


@pytest.mark.parametrize("kwargs,message", [
    (dict(game=G4, representation="engine", averaging="full"),
     "averaging='full' walks the whole game tree"),
    (dict(game=G6, averaging="full"), "representation='auto' chose it"),
    (dict(game="kuhn_poker", representation="engine"), "no native engine"),
    (dict(game=G4, representation="engine", threads=2), "hogwild=True"),
    (dict(game=G4, representation="tree", threads=2, hogwild=True),
     "runs on an engine"),
    (dict(game=G4, representation="engine", threads=2, hogwild=True,
          batch=4), "without batches"),
    (dict(game=G4, representation="graph"), "Unknown representation"),
    (dict(game=G4, representation="engine", hogwild=1), "True or False"),
    (dict(game=G4, representation="engine", max_memory=10), "max_memory"),
])
def test_bad_choices_are_refused_in_one_line(kwargs, message):
  with pytest.raises(ValueError, match=message) as error:
    mccfrb.ExternalSamplingSolver(**kwargs)
  assert "\n" not in str(error.value)


def test_tree_only_methods_say_so_on_an_engine():
  solver = mccfrb.ExternalSamplingSolver(G4, representation="engine")
  for method in (solver.average_policy_table, solver.current_policy_table):
    with pytest.raises(ValueError, match="needs the compiled tree"):
      method()


_EACH_ITS_OWN = """
import mccfrb
from mccfrb.games.engines import compiled
from mccfrb.kernels import external
mccfrb.ExternalSamplingSolver("liars_dice(numdice=1,dice_sides=3)",
                              representation="engine", seed=0).run(2)
print(len(external._full_average.signatures), len(external._note.signatures))
mccfrb.ExternalSamplingSolver("kuhn_poker", representation="tree",
                              seed=0).run(2)
print(len(external._full_average.signatures),
      sum(len(f.signatures) for f in (compiled.player, compiled.apply)))
"""


@pytest.mark.slow
def test_each_representation_types_only_its_own_code(tmp_path):
  """The one traversal (kernels/external.py `_traversals`), from an empty
  numba cache: on an engine it types no tree-only code (full averaging,
  a grown tree's notes), and on a tree no engine step (the compiled
  tree's own engine functions, which a tree kernel that typed the engine
  branches would compile). The branches are pruned on `eng is not None`
  and `game is not None`; typing both took the first use from 7 s to 17
  s."""
  out = printed_with_empty_cache(_EACH_ITS_OWN, tmp_path)
  assert out == ["0", "0", "1", "0"], out
