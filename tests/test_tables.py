"""Hashed tables (mccfrb/tables): rows, growth under max_memory, collisions,
precision, and the solvers' options that use them (precision, in_flight)."""

import warnings

import numpy as np
import pytest

import mccfrb
from mccfrb import tables as tables_lib
from mccfrb.tables import hashed
from tests.conftest import check_hogwild_converges_as_one_thread

G4 = ("goofspiel(num_cards=4,imp_info=True,points_order=random,"
      "returns_type=point_difference)")
G6 = ("goofspiel(num_cards=6,imp_info=True,points_order=random,"
      "returns_type=point_difference)")


def random_keys(n, seed=0):
  return np.random.default_rng(seed).integers(
      0, 2**64, size=(n, 2), dtype=np.uint64)


@pytest.mark.parametrize("precision", ["float64", "float32"])
def test_rows_are_found_by_their_keys_across_growth(precision):
  table = tables_lib.HashedTable(9, ("regret", "avg"), ("through",),
                                 precision=precision, max_memory=1 << 24,
                                 slots=2)
  keys = random_keys(3000)
  widths = 2 + np.arange(3000) % 8
  rows = [table.insert(h1, h2, w) for (h1, h2), w in zip(keys, widths)]
  assert len(table.index) >= 4096  # The index doubled from 2 slots.
  for (h1, h2), o, w in zip(keys, rows, widths):
    assert table.find(h1, h2) == o and table.width(o) == w
    table.field(o, "avg")[:] = np.arange(w) + o
    table.header(o, "through")[0] = o
    table.set_stamp(o, 3 * o)
  for o, w in zip(rows, widths):  # No row overwrote another.
    np.testing.assert_array_equal(table.field(o, "avg"), np.arange(w) + o)
    np.testing.assert_array_equal(table.field(o, "regret"), np.zeros(w))
    assert table.header(o, "through")[0] == o and table.stamp(o) == 3 * o
  for h1, h2 in random_keys(500, seed=1):
    assert table.find(h1, h2) == -1
  assert table.num_rows == 3000 and table.num_cells == widths.sum()
  np.testing.assert_array_equal(table.offsets(), sorted(rows))
  assert hashed.check_rows(table.args(), 9) == 0
  # Each row costs its key and width word, its header words and its
  # cells: nothing per row but what it holds.
  used = 8 * (int(table.meta[hashed.TOP]) - 1)
  per_cell = 8 if precision == "float64" else 4
  assert used <= 3000 * 8 * 3 + 2 * per_cell * widths.sum() + 3000 * 8


def test_a_key_is_its_h1_and_its_tag_and_a_width_mismatch_is_detected():
  table = tables_lib.HashedTable(6, ("regret",), max_memory=1 << 20)
  h1, h2 = np.uint64(12345), np.uint64(0xABCDEF << 40)
  o = table.insert(h1, h2, 3)
  # Another tag (h2's top 24 bits) is another key, even with the same h1.
  other = table.insert(h1, np.uint64(0x123456 << 40), 3)
  assert other != o and table.num_rows == 2
  # h2's low 40 bits are not stored: the same h1 and tag find the row.
  assert table.find(h1, np.uint64((0xABCDEF << 40) | 777)) == o
  # A state with another number of moves meeting this row: a collision,
  # refused from Python and counted (not stored) in the kernels.
  with pytest.raises(ValueError, match="another width"):
    table.insert(h1, h2, 4)
  got, new = hashed.row_of(table.args(), h1, h2, 4, True, table.meta[:0],
                           False)
  assert got == -1 and not new and table.collisions == 2  # Both met it.
  assert table.num_rows == 2


def test_a_lookup_from_its_candidate_slot_finds_what_find_finds():
  """`find_at` from `candidate`'s slot (the lookups of walks in flight,
  kernels/respond.py) agrees with `find`, on probe chains where slots of
  other tags and of other keys with the same tag come first."""
  table = tables_lib.HashedTable(4, ("count",), max_memory=1 << 22)
  rng = np.random.default_rng(3)
  h1s = rng.integers(1, 2**64, size=40, dtype=np.uint64)
  tags = rng.integers(0, 2**24, size=6, dtype=np.uint64) << np.uint64(40)
  keys = [(h1s[k % 40], tags[k % 6]) for k in range(120)]  # Shared home
  rows = [table.insert(h1, h2, 2) for h1, h2 in keys]  # slots and tags.
  absent = [(h1, np.uint64(0xFFFFFF << 40)) for h1 in h1s[:10]] + [
      (h1, h2) for h1, h2 in random_keys(50, seed=4)]
  index, words = table.index, table.words
  for (h1, h2), o in zip(keys + absent, rows + [-1] * len(absent)):
    s = hashed.candidate(index, h2, hashed.home_slot(index, h1))
    assert hashed.find_at(index, words, h1, h2, s) == o == table.find(h1, h2)
  # A row's hint names its row (True) or an empty slot (False).
  assert hashed.row_hint(index, words, hashed.candidate(
      index, keys[0][1], hashed.home_slot(index, keys[0][0])), 4)


def test_max_memory_holds_while_the_index_doubles(monkeypatch):
  """Index and arena in use, and the old index beside the new one while
  it doubles, never pass max_memory; at the cap the table freezes."""
  limit = 1 << 20
  table = tables_lib.HashedTable(4, ("regret", "avg", "baseline"),
                                 max_memory=limit, slots=2)
  peaks = []
  rehash = hashed.rehash

  def watched(index, words, new_index):
    peaks.append(index.nbytes + new_index.nbytes
                 + 8 * int(table.meta[hashed.TOP]))
    rehash(index, words, new_index)

  monkeypatch.setattr(hashed, "rehash", watched)
  inserted = 0
  for h1, h2 in random_keys(100_000):
    if not table.grow(1, table.row_words(4)):
      break
    hashed.python_row_of(table.args(), h1, h2, 4)
    inserted += 1
    assert table.nbytes() <= limit
  assert table.frozen and 1000 < inserted < 100_000
  assert peaks and max(peaks) <= limit
  # Frozen: lookups of new keys are dropped, stored rows still found.
  dropped = table.dropped
  o, new = hashed.row_of(table.args(), np.uint64(7), np.uint64(7), 4,
                         False, table.meta[:0], False)
  assert o == -1 and not new and table.dropped == dropped + 1


def test_a_solver_at_max_memory_never_passes_it():
  solver = mccfrb.MCCFRbSolver(G6, seed=0, max_memory=4 << 20,
                               precision="float32")
  with pytest.warns(RuntimeWarning, match="reached max_memory") as said:
    solver.run(30_000, progress=False)
  # One warning for each table as it froze.
  assert sorted("infoset" in str(w.message) for w in said) == [False, True]
  memory = solver.memory()
  assert memory["frozen"] and memory["bytes"] <= 4 << 20
  assert memory["dropped"] > 0 and memory["precision"] == "float32"


@pytest.mark.parametrize("bad", ["float16", "double", 32, None.__class__])
def test_an_unknown_precision_is_refused_naming_the_allowed_ones(bad):
  with pytest.raises(ValueError, match=r"precision must be one of "
                     r"\['float32', 'float64'\]"):
    mccfrb.MCCFRbSolver(G4, representation="engine", precision=bad)


def test_precision_and_in_flight_are_refused_on_a_compiled_tree():
  with pytest.raises(ValueError, match="precision=.float32. runs on an engine"):
    mccfrb.MCCFRbSolver(G4, representation="tree", precision="float32")
  with pytest.raises(ValueError, match="runs on an engine"):
    mccfrb.MCCFRbSolver(G4, representation="tree", in_flight=4)
  with pytest.raises(ValueError, match="in_flight"):
    mccfrb.MCCFRbSolver(G4, representation="engine", in_flight=0)


@pytest.mark.parametrize("cls,kwargs", [
    (mccfrb.MCCFRbSolver, {}),
    (mccfrb.MCCFRbSolver, dict(baseline="history")),
    (mccfrb.ExternalSamplingSolver, {}),
    (mccfrb.PublicSamplingSolver, dict(baseline="none")),
])
def test_float32_tables_learn_like_float64_and_take_less_memory(cls, kwargs):
  runs = {}
  for precision in ("float64", "float32"):
    solver = cls(G4, seed=0, representation="engine", precision=precision,
                 **kwargs)
    solver.run(3000 if cls is not mccfrb.PublicSamplingSolver else 300,
               progress=False)
    runs[precision] = (mccfrb.exploitability(G4, solver.average_policy()),
                       solver.memory())
  (e64, m64), (e32, m32) = runs["float64"], runs["float32"]
  assert m32["precision"] == "float32"
  assert m32["bytes"] < 0.8 * m64["bytes"]
  assert e32 == pytest.approx(e64, rel=0.1)


def test_a_float32_checkpoint_loads_at_float32(tmp_path):
  whole = mccfrb.MCCFRbSolver(G4, representation="engine", seed=3,
                              precision="float32")
  whole.run(400, progress=False)
  half = mccfrb.MCCFRbSolver(G4, representation="engine", seed=3,
                             precision="float32")
  half.run(200, progress=False)
  half.save(tmp_path / "f32.npz")
  loaded = mccfrb.load_solver(tmp_path / "f32.npz")
  assert loaded.precision == "float32"
  loaded.run(200, progress=False)
  top = whole._backend.tables.meta[hashed.TOP]
  np.testing.assert_array_equal(loaded._backend.tables.words[:top],
                                whole._backend.tables.words[:top])
  # Tables of another layout are refused in one line.
  other = mccfrb.MCCFRbSolver(G4, representation="engine", seed=3,
                              precision="float64")
  state = half._backend.tables.state()
  with pytest.raises(ValueError, match="another layout.*float32.*precision"):
    other._backend.tables.restore(**state)


def test_float32_cells_that_stop_moving_or_overflow_are_reported():
  solver = mccfrb.MCCFRbSolver(G4, representation="engine", seed=0,
                               precision="float32")
  with warnings.catch_warnings():
    warnings.simplefilter("error")
    solver.run(200, progress=False)  # Healthy: no warning.
  assert solver._backend.tables.lost_fraction < 1e-3
  t = solver._backend.tables
  for o in t.offsets():  # Sums so large that every addition is lost.
    t.field(o, "avg")[:] = 1e12
  with pytest.warns(RuntimeWarning, match="rounding lost .* float64"):
    solver.run(200, progress=False)
  again = mccfrb.MCCFRbSolver(G4, representation="engine", seed=0,
                              precision="float32")
  again.run(10, progress=False)
  for o in again._backend.tables.offsets():  # Cells past float32's range.
    again._backend.tables.field(o, "avg")[:] = np.float32(3e38) * 2
  with pytest.warns(RuntimeWarning, match="overflowed float32"):
    again.run(200, progress=False)
  # float64 never warns, whatever its cells hold.
  wide = mccfrb.MCCFRbSolver(G4, representation="engine", seed=0,
                             precision="float64")
  wide.run(10, progress=False)
  for o in wide._backend.tables.offsets():
    wide._backend.tables.field(o, "avg")[:] = 1e300
  with warnings.catch_warnings():
    warnings.simplefilter("error")
    wide.run(100, progress=False)


@pytest.mark.parametrize("k", [2, 4, 6, 8])
def test_episodes_in_flight_compose_at_whole_groups_and_learn(k):
  def arena(solver):
    t = solver._backend.tables
    return t.words[:int(t.meta[hashed.TOP])].copy()

  unit = k // 2 if k % 2 == 0 else k
  whole = mccfrb.MCCFRbSolver(G4, representation="engine", seed=1,
                              in_flight=k)
  whole.run(60 * unit, progress=False)
  parts = mccfrb.MCCFRbSolver(G4, representation="engine", seed=1,
                              in_flight=k)
  for n in (unit, 10 * unit, 49 * unit):
    parts.run(n, progress=False)
  np.testing.assert_array_equal(arena(parts), arena(whole))
  np.testing.assert_array_equal(parts._rng_words, whole._rng_words)
  # K > 1 is another algorithm than one episode at a time (stale reads
  # within a group), deterministic for its K.
  one = mccfrb.MCCFRbSolver(G4, representation="engine", seed=1,
                            in_flight=1)
  one.run(60 * unit, progress=False)
  assert not np.array_equal(arena(one), arena(whole))
  # And it learns as well: many iterations, every K.
  for solver in (whole, one):
    solver.run(4000, progress=False)
  uniform = mccfrb.exploitability(G4, mccfrb.uniform_table(
      mccfrb.compile_tree(G4)))
  e_k = mccfrb.exploitability(G4, whole.average_policy())
  e_1 = mccfrb.exploitability(G4, one.average_policy())
  assert e_k < 0.7 * uniform and e_k < 1.3 * e_1


def test_hogwild_workers_keep_episodes_in_flight():
  # It learns as one thread with 8 in flight does, over 12 seeds each
  # (measured over 8 seeds: 0.96-0.97 times one thread's mean).
  solver = check_hogwild_converges_as_one_thread(
      lambda seed, **options: mccfrb.MCCFRbSolver(
          G4, representation="engine", seed=seed, in_flight=8, **options),
      G4, 20_000)
  # Every claimed group runs whole: 4 iterations, both episodes each.
  assert solver._hogwild_episodes.sum() == 40_000
  assert hashed.check_rows(solver._backend.tables.args(), 4) == 0
