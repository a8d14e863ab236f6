"""Loading damaged or crafted checkpoints (solvers/checkpoint.py, issue 22
item 4): one ValueError naming the file and the field, never a raw
exception or silently wrong tables; leftovers of killed saves removed."""

import io
import json
import os
import signal
import subprocess
import sys
import zipfile

import numpy as np
import pytest

import mccfrb
from mccfrb import files
from mccfrb.solvers import base

G4 = ("goofspiel(num_cards=4,imp_info=True,points_order=random,"
      "returns_type=point_difference)")


@pytest.fixture(name="saved")
def fixture_saved(tmp_path):
  """A checkpoint of an OutcomeSamplingSolver on Kuhn after 50 iterations."""
  solver = mccfrb.MCCFRbSolver("kuhn_poker", seed=1)
  solver.run(50)
  path = tmp_path / "good.npz"
  solver.save(path)
  return path


def rewrite(path, out, meta=None, tables=None, drop=()):
  """Writes `out`: the checkpoint at `path` with meta fields and tables
  replaced (and the meta fields in `drop` removed)."""
  old_meta, old_tables = base.read_checkpoint(path)
  old_meta.update(meta or {})
  for key in drop:
    del old_meta[key]
  old_tables.update(tables or {})
  np.savez(out, meta=np.array(json.dumps(old_meta)), **old_tables)
  return out


def assert_refused(path, *words):
  """Loading `path` raises one ValueError, one line, naming the file and
  holding `words`."""
  with pytest.raises(ValueError) as info:
    mccfrb.load_solver(path)
  message = str(info.value)
  assert str(path) in message and "\n" not in message, message
  for word in words:
    assert word in message, message


@pytest.mark.parametrize("value", ["abc", -5, 10**30, True, 2.5, None])
def test_bad_iteration_counts_are_refused(saved, tmp_path, value):
  bad = rewrite(saved, tmp_path / "bad.npz", meta={"num_iterations": value})
  assert_refused(bad, "field 'num_iterations' must be an integer in [0, 2**53)",
                 repr(value))


def test_a_missing_or_foreign_format_is_refused(saved, tmp_path):
  assert_refused(rewrite(saved, tmp_path / "a.npz", drop=["format"]),
                 "field 'format' is missing")
  assert_refused(rewrite(saved, tmp_path / "b.npz", meta={"format": "x"}),
                 "field 'format' is 'x', not 'mccfrb-checkpoint'")
  assert_refused(rewrite(saved, tmp_path / "c.npz", drop=["nodes_touched"]),
                 "field 'nodes_touched' is missing")


@pytest.mark.parametrize("field,value,words", [
    ("options", [1, 2], "'options' must be a JSON object, got [1, 2]"),
    ("class", ["MCCFRbSolver"], "'class' must be a JSON string"),
    ("game", 7, "'game' must be a JSON string, got 7"),
    ("game", "no_such_game", "'game' is not a game mccfrb loads"),
    ("rng_state", "abc", "'rng_state' must be a JSON object, got 'abc'"),
    ("rng_state", {"bit_generator": "MT19937"}, "'rng_state' is not a PCG64"),
    ("rng_state", {"bit_generator": "PCG64", "state": 5},
     "'rng_state' is not a PCG64"),
    ("options", {"baseline": "nope"}, "'options' do not make a MCCFRbSolver"),
    ("options", {"game": "leduc_poker"}, "records options"),
    ("nodes_touched", -1, "'nodes_touched' must be an integer"),
])
def test_fields_of_the_wrong_type_are_refused(saved, tmp_path, field, value,
                                              words):
  assert_refused(rewrite(saved, tmp_path / "bad.npz", meta={field: value}),
                 words)


@pytest.mark.parametrize("name,make,words", [
    ("regrets", lambda t: np.full_like(t, np.nan), "'regrets' holds non-finite"),
    ("avg", lambda t: np.where(t == t, np.inf, t), "'avg' holds non-finite"),
    ("regrets", lambda t: t.astype(np.complex128),
     "dtype complex128 (tables are integers or floats)"),
    ("regrets", lambda t: t.astype(np.float32), "'regrets' is float32"),
    ("regrets", lambda t: t[:-1], "the game needs float64"),
    ("avg_last", lambda t: t - 100, "'avg_last' holds negative values"),
    ("through", lambda t: t + 10**6, "'through' holds iteration numbers past"),
    ("regrets", lambda t: np.array(["x"] * t.size), "dtype <U1"),
])
def test_damaged_tables_are_refused(saved, tmp_path, name, make, words):
  tables = base.read_checkpoint(saved)[1]
  bad = rewrite(saved, tmp_path / "bad.npz", tables={name: make(tables[name])})
  assert_refused(bad, words)


def test_a_missing_table_is_refused(saved, tmp_path):
  _, tables = base.read_checkpoint(saved)
  del tables["baseline"]
  meta = base.read_checkpoint(saved)[0]
  np.savez(tmp_path / "bad.npz", meta=np.array(json.dumps(meta)), **tables)
  assert_refused(tmp_path / "bad.npz", "lacks the table 'baseline'")


def _npy_header(shape, descr="<f8"):
  f = io.BytesIO()
  np.lib.format.write_array_header_1_0(
      f, {"descr": descr, "fortran_order": False, "shape": shape})
  return f.getvalue()


def test_a_member_declaring_more_than_it_holds_is_refused_unallocated(
    saved, tmp_path):
  bad = tmp_path / "huge.npz"
  with zipfile.ZipFile(saved) as source, zipfile.ZipFile(bad, "w") as out:
    for info in source.infolist():
      data = source.read(info)
      if info.filename == "regrets.npy":
        data = _npy_header((10**13,)) + b"\0" * 16
      out.writestr(info.filename, data)
  assert_refused(bad, "member 'regrets'", "declares (10000000000000,)",
                 "holds 16 bytes")


def test_compressed_members_are_refused(saved, tmp_path):
  bad = tmp_path / "deflated.npz"
  with zipfile.ZipFile(saved) as source, zipfile.ZipFile(
      bad, "w", zipfile.ZIP_DEFLATED) as out:
    for info in source.infolist():
      out.writestr(info.filename, source.read(info))
  assert_refused(bad, "is compressed")


def test_flipped_bytes_give_a_value_error_or_the_same_solver(saved, tmp_path):
  good = saved.read_bytes()
  reference = mccfrb.load_solver(saved)
  rng = np.random.default_rng(0)
  refused = 0
  # Every byte of the meta member's local header and of the central
  # directory, and random pairs anywhere.
  end = len(good)
  positions = [(i, i + 1) for i in list(range(0, 64)) + list(range(end - 400,
                                                                   end - 1))]
  positions += [tuple(rng.choice(end, 2, replace=False)) for _ in range(150)]
  for first, second in positions:
    data = bytearray(good)
    data[first] ^= 0xFF
    data[second] ^= 0x55
    bad = tmp_path / "flipped.npz"
    bad.write_bytes(bytes(data))
    try:
      loaded = mccfrb.load_solver(bad)
    except ValueError as e:
      assert str(bad) in str(e) and "\n" not in str(e), e
      refused += 1
      continue
    # Loaded: the flips hit bytes nothing reads (zip timestamps, ...).
    for name in reference._table_names:  # pylint: disable=protected-access
      np.testing.assert_array_equal(getattr(loaded, name),
                                    getattr(reference, name))
    assert loaded.num_iterations == reference.num_iterations
  assert refused > len(positions) // 2


@pytest.mark.parametrize("cut", [0, 10, 200, 0.5, -30, -1])
def test_truncated_files_are_refused(saved, tmp_path, cut):
  data = saved.read_bytes()
  cut = int(cut * len(data)) if isinstance(cut, float) else cut
  bad = tmp_path / "cut.npz"
  bad.write_bytes(data[:cut])
  assert_refused(bad, "is not an mccfrb checkpoint")


def test_a_file_that_cannot_be_opened_is_an_os_error(tmp_path):
  with pytest.raises(FileNotFoundError):
    mccfrb.load_solver(tmp_path / "absent.npz")


def test_a_damaged_engine_checkpoint_is_refused(tmp_path):
  solver = mccfrb.MCCFRbSolver(G4, seed=0, representation="engine")
  solver.run(20)
  path = tmp_path / "engine.npz"
  solver.save(path)
  tables = base.read_checkpoint(path)[1]
  index = tables["engine_index"].copy()
  used = np.flatnonzero(index)
  index[used[0]] |= np.uint64(10**9)  # A row's offset far past the arena.
  assert_refused(rewrite(path, tmp_path / "a.npz",
                         tables={"engine_index": index}),
                 "rows point outside its arena")
  meta = tables["engine_meta"].copy()
  meta[0] = 10**9  # More rows than the index holds.
  assert_refused(rewrite(path, tmp_path / "b.npz",
                         tables={"engine_meta": meta}), "sizes disagree")
  arena = tables["engine_arena"].copy()
  first = int(tables["engine_index"][used[0]] & np.uint64((1 << 40) - 1))
  header = int(tables["engine_layout"][0])
  arena[first + header] = np.array([np.nan]).view(np.int64)[0]
  assert_refused(rewrite(path, tmp_path / "c.npz",
                         tables={"engine_arena": arena}), "non-finite")
  layout = tables["engine_layout"].copy()
  layout[2] = 3 - layout[2]  # Cells of the other precision.
  assert_refused(rewrite(path, tmp_path / "d.npz",
                         tables={"engine_layout": layout}), "another layout")
  assert mccfrb.load_solver(path).num_iterations == 20


KILLED_SAVE = """
import os, signal, sys
from mccfrb import files
def write(f):
  f.write(b"x" * 100000)
  f.flush()
  os.kill(os.getpid(), signal.SIGKILL)
files.write_atomically(sys.argv[1], write)
"""


def _leftovers(path):
  return [n for n in os.listdir(path.parent)
          if n.startswith(f"{files.TEMPORARY_PREFIX}{path.name}.")]


@pytest.mark.parametrize("then", ["load", "save"])
def test_a_killed_save_leaves_a_file_the_next_save_or_load_removes(
    saved, then):
  before = saved.read_bytes()
  killed = subprocess.run([sys.executable, "-c", KILLED_SAVE, str(saved)],
                          check=False)
  assert killed.returncode == -signal.SIGKILL
  assert saved.read_bytes() == before  # The checkpoint is intact...
  assert len(_leftovers(saved)) == 1  # ...and the killed save left a file.
  # A temporary file of a save in progress (this process) is left alone.
  mine = saved.parent / f".{saved.name}.{os.getpid()}.0000abcd.tmp"
  mine.write_bytes(b"in progress")
  if then == "load":
    assert mccfrb.load_solver(saved).num_iterations == 50
  else:
    mccfrb.MCCFRbSolver("kuhn_poker", seed=1).save(saved)
  assert _leftovers(saved) == [mine.name]
