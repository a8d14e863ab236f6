"""Runs in chunks (solvers/running.py): Ctrl-C between chunks leaves the
solver consistent, and a resumed run equals one run."""

import os
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import mccfrb
from mccfrb.solvers import running

G4 = "goofspiel(num_cards=4,imp_info=True,points_order=random,returns_type=point_difference)"

SOLVERS = {
    "mccfrb_tree": lambda: mccfrb.MCCFRbSolver("kuhn_poker", seed=3),
    "mccfrb_batches": lambda: mccfrb.MCCFRbSolver("kuhn_poker", seed=3,
                                                  threads=2, batch=8),
    "mccfrb_engine": lambda: mccfrb.MCCFRbSolver(G4, seed=3,
                                                 representation="engine"),
    "public_tree": lambda: mccfrb.PublicSamplingSolver("kuhn_poker", seed=3),
    "public_engine": lambda: mccfrb.PublicSamplingSolver(
        G4, seed=3, representation="engine", baseline="history"),
    "external_tree": lambda: mccfrb.ExternalSamplingSolver("kuhn_poker",
                                                           seed=3),
    "external_engine": lambda: mccfrb.ExternalSamplingSolver(
        G4, seed=3, representation="engine"),
    "cfr_tree": lambda: mccfrb.CFRSolver("kuhn_poker", variant="cfr+"),
    "smooth_uct": lambda: mccfrb.SmoothUCTSolver("kuhn_poker", seed=3),
}


def _interrupt_after(solver, chunks, presses=1):
  """Makes the solver's `chunks`-th chunk press Ctrl-C `presses` times
  while it runs; returns the list of chunk sizes run."""
  sizes = []
  run_chunk = solver._run_chunk

  def chunk(k):
    sizes.append(k)
    if len(sizes) == chunks:
      for _ in range(presses):
        signal.raise_signal(signal.SIGINT)
    run_chunk(k)

  solver._run_chunk = chunk
  return sizes


def _tables(solver):
  """Every table a solver saves, by name (engine tables: their used
  rows and cells, whatever their capacity)."""
  saved = solver._tables_to_save()
  if getattr(solver, "engine", None) is None:
    return saved
  t = solver._backend.tables
  return {"arena": t.words[:int(t.meta[1])], "rows": t.offsets()}


@pytest.mark.parametrize("name", sorted(SOLVERS))
def test_ctrl_c_stops_between_chunks_and_the_resumed_run_is_one_run(
    name, tmp_path, monkeypatch):
  monkeypatch.setattr(running, "CHUNK_SECONDS", 1e-6)  # Chunks of one unit.
  whole = SOLVERS[name]()
  whole.run(40)
  cut = SOLVERS[name]()
  sizes = _interrupt_after(cut, 3)
  with pytest.raises(KeyboardInterrupt, match="stopped after"):
    cut.run(40)
  assert len(sizes) == 3 and cut.num_iterations == sum(sizes) < 40
  assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
  path = str(tmp_path / "cut.npz")
  cut.save(path)
  resumed = mccfrb.load_solver(path)
  resumed.run(40 - resumed.num_iterations)
  assert resumed.num_iterations == 40
  expected, got = _tables(whole), _tables(resumed)
  assert expected.keys() == got.keys()
  for key in expected:
    np.testing.assert_array_equal(got[key], expected[key], err_msg=key)


def test_batched_chunks_are_whole_batches(monkeypatch):
  monkeypatch.setattr(running, "CHUNK_SECONDS", 1e-6)
  solver = SOLVERS["mccfrb_batches"]()
  sizes = _interrupt_after(solver, 10**9)
  solver.run(60)
  assert sizes and all(k % 8 == 0 for k in sizes[:-1]) and sum(sizes) == 60


def test_a_second_ctrl_c_stops_at_once():
  solver = mccfrb.MCCFRbSolver("kuhn_poker", seed=0)
  sizes = _interrupt_after(solver, 1, presses=2)
  with pytest.raises(KeyboardInterrupt) as raised:
    solver.run(10)
  assert "stopped after" not in str(raised.value)
  assert sizes == [1] and solver.num_iterations == 0


def _handlers_during_chunks(solver):
  """Makes each of the solver's chunks note the SIGINT handler installed
  while it runs; returns the list of handlers seen."""
  seen = []
  run_chunk = solver._run_chunk

  def chunk(k):
    seen.append(signal.getsignal(signal.SIGINT))
    run_chunk(k)

  solver._run_chunk = chunk
  return seen


def test_runs_in_other_threads_leave_ctrl_c_alone():
  errors, seen = [], []
  before = signal.getsignal(signal.SIGINT)
  assert before is signal.default_int_handler  # conftest's default_sigint.

  def train():
    try:
      solver = mccfrb.MCCFRbSolver("kuhn_poker", seed=0)
      seen.extend([solver, _handlers_during_chunks(solver)])
      solver.run(100)
      assert solver.num_iterations == 100
    except Exception as e:  # pylint: disable=broad-except
      errors.append(e)

  thread = threading.Thread(target=train)
  thread.start()
  thread.join()
  assert not errors
  # While the other thread ran, Python's own handler stayed in place.
  assert seen[1] and all(h is before for h in seen[1]), seen[1]
  assert signal.getsignal(signal.SIGINT) is before
  # The same run in the main thread defers Ctrl-C with its own handler (the
  # check above can see one), and puts Python's back afterwards.
  solver = mccfrb.MCCFRbSolver("kuhn_poker", seed=0)
  main = _handlers_during_chunks(solver)
  solver.run(100)
  assert main and all(h is not before and callable(h) for h in main), main
  assert signal.getsignal(signal.SIGINT) is before


def test_chunks_grow_to_take_about_chunk_seconds():
  solver = mccfrb.MCCFRbSolver("kuhn_poker", seed=0)
  solver.run(10)  # Compiled.
  sizes = _interrupt_after(solver, 10**9)
  solver.run(2_000_000)
  assert sizes[:3] == [1, 2, 4] and max(sizes) > 1000 and sum(sizes) == (
      2_000_000)


def test_ctrl_c_on_a_huge_run_answers_within_two_seconds(tmp_path):
  """The issue's case: run(2**40) in a process given SIGINT stops within a
  second, with its iterations counted and a checkpoint that loads."""
  path = str(tmp_path / "stopped.npz")
  script = textwrap.dedent(f"""
      import sys, time, mccfrb
      solver = mccfrb.MCCFRbSolver("leduc_poker", seed=0)
      solver.run(10)
      print("running", flush=True)
      try:
        solver.run(2**40)
      except KeyboardInterrupt as e:
        print("stopped", time.time(), solver.num_iterations, e, flush=True)
        solver.save({path!r})
  """)
  process = subprocess.Popen([sys.executable, "-c", script],
                             stdout=subprocess.PIPE, text=True,
                             env=dict(os.environ))
  assert process.stdout.readline().strip() == "running"
  time.sleep(1.0)
  sent = time.time()
  process.send_signal(signal.SIGINT)
  out, _ = process.communicate(timeout=60)
  assert process.returncode == 0, out
  word, when, iterations, *_ = out.split()
  assert word == "stopped" and float(when) - sent < 2.0
  loaded = mccfrb.load_solver(path)
  assert loaded.num_iterations == int(iterations) > 10


def _bar(text):
  """Whether `text` (standard error) holds a tqdm bar: "name:  33%|"."""
  return re.search(r"\d+%\|", text) is not None


def _slow_chunks(solver, seconds):
  """Makes every chunk of the solver take at least `seconds` more."""
  run_chunk = solver._run_chunk

  def chunk(k):
    time.sleep(seconds)
    run_chunk(k)

  solver._run_chunk = chunk


def test_a_bar_shows_on_a_long_run_never_on_iteration(monkeypatch, capfd):
  """OpenSpiel's drop-in loop calls iteration() (or, for CFR,
  evaluate_and_update_policy()): no bar, however long the call (a first
  call compiles); run(n) started through mccfrb shows one once it has
  taken PROGRESS_AFTER seconds with iterations left."""
  monkeypatch.setattr(running, "PROGRESS_AFTER", 0.01)
  solver = mccfrb.MCCFRbSolver("kuhn_poker", seed=0)
  _slow_chunks(solver, 0.05)
  solver.iteration()
  solver.run(1)  # Done when the bar would show: none either.
  assert not _bar(capfd.readouterr().err)
  solver.run(3)
  assert "iterations:" in capfd.readouterr().err
  solver.run(3, progress=False)
  assert not _bar(capfd.readouterr().err)
  cfr = mccfrb.CFRSolver("kuhn_poker")
  _slow_chunks(cfr, 0.05)
  cfr.evaluate_and_update_policy()
  assert not _bar(capfd.readouterr().err)
  cfr.run(2)
  assert _bar(capfd.readouterr().err)


def test_no_bar_from_the_walks_of_a_drop_in_iteration(monkeypatch, capfd):
  """CFR on an engine streams walks with bars of their own: none inside
  iteration(), one inside run()."""
  from mccfrb.solvers import stream  # pylint: disable=import-outside-toplevel
  monkeypatch.setattr(stream, "PROGRESS_AFTER", 0.0)
  monkeypatch.setattr(stream, "BUDGET", 8)  # Walks pause often.
  solver = mccfrb.CFRSolver("goofspiel(num_cards=3)", representation="engine")
  solver.evaluate_and_update_policy()
  solver.iteration()
  assert "CFR iteration" not in capfd.readouterr().err
  assert running.bars_allowed()
  solver.run(1)
  assert _bar(capfd.readouterr().err)
