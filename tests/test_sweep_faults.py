"""Sweeps under faults (issue 22 item 3): a second sweep into the same
folder, damaged stored runs, a full disk."""

import io
import os
import pathlib
import re
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pandas as pd
import pytest

from experiments import common
from mccfrb.experiment import lock
from mccfrb.experiment import sweep
from mccfrb.experiment import workers
from tests.conftest import error_lines

ROOT = pathlib.Path(__file__).resolve().parents[1]
SWEEP = ["--games=kuhn_poker", "--algorithms=os", "--seeds=2",
         "--iterations=100", "--num_checkpoints=2", "--evaluator=mccfrb",
         "--plot=false", "--jobs=1"]

HOLD = textwrap.dedent("""
    import sys, time
    from mccfrb.experiment import lock
    lock.FolderLock(sys.argv[1]).acquire()
    print("held", flush=True)
    time.sleep(600)
""")


def _holder(folder):
  """A process holding the lock of `folder` (once it printed 'held')."""
  proc = subprocess.Popen([sys.executable, "-c", HOLD, str(folder)], cwd=ROOT,
                          stdout=subprocess.PIPE, text=True)
  assert proc.stdout.readline() == "held\n"
  return proc


def _kill(proc):
  proc.send_signal(signal.SIGKILL)
  proc.wait(timeout=30)


def test_a_lock_held_by_a_live_process_is_refused_a_dead_ones_taken_over(
    tmp_path):
  holder = _holder(tmp_path)
  try:
    with pytest.raises(lock.FolderBusy, match=f"{tmp_path} is in use by "
                       f"another sweep \\(pid {holder.pid}: "):
      lock.FolderLock(tmp_path).acquire()
  finally:
    _kill(holder)
  assert (tmp_path / lock.LOCK_NAME).exists()  # Left by the killed holder.
  mine = lock.FolderLock(tmp_path).acquire()
  assert (tmp_path / lock.LOCK_NAME).read_text().startswith(f"{os.getpid()}:")
  assert lock.FolderLock(tmp_path).acquire().held  # Shared in one process.
  mine.release()
  assert not (tmp_path / lock.LOCK_NAME).exists()


def _run(*args, **kwargs):
  return subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True,
                        text=True, timeout=600, **kwargs)


def test_a_second_sweep_on_the_same_out_dir_is_refused_in_one_line(tmp_path):
  out = tmp_path / "out"
  holder = _holder(out / "convergence_runs")
  try:
    second = _run("experiments/convergence.py", *SWEEP, f"--out_dir={out}")
  finally:
    _kill(holder)
  assert second.returncode == 1
  assert second.stderr.splitlines() == [
      f"convergence: error: {out}/convergence_runs is in use by another sweep "
      f"(pid {holder.pid}: -c {out}/convergence_runs); wait for it to end, or "
      "stop it, then rerun (it resumes)"]
  assert sorted(os.listdir(out / "convergence_runs")) == [lock.LOCK_NAME]
  # The holder is dead: its lock is taken over.
  third = _run("experiments/convergence.py", *SWEEP, f"--out_dir={out}")
  assert third.returncode == 0, third.stderr
  assert sorted(os.listdir(out)) == ["convergence.csv"]


@pytest.fixture(name="stored")
def fixture_stored(tmp_path, capsys):
  """(tasks, run folder) of a sweep of two tasks, both stored."""
  tasks = sweep.make_tasks(["kuhn_poker"], ["os"], [0, 1], 100, 3, "mccfrb")
  store = common.open_runs(str(tmp_path), "runs", tasks, ())
  for i, task in enumerate(tasks):
    store.write(i, sweep.run_task(task))
  capsys.readouterr()
  return tasks, tmp_path / "runs"


def _cut_mid_number(text):
  """The file cut in the last row's exploitability (the issue's case)."""
  last = text.rstrip("\n").rsplit("\n", 1)[1]
  start = text.rindex(last) + len(",".join(last.split(",")[:6])) + 1
  return text[:start + 4]


def _edit(column, value):
  """Sets `column` of the last row to `value`, keeping a sound CSV."""
  def edit(text):
    df = pd.read_csv(io.StringIO(text))
    df[column] = df[column].astype(object)
    df.loc[len(df) - 1, column] = value
    return df.to_csv(index=False)
  return edit


@pytest.mark.parametrize("damage,why", [
    (_cut_mid_number, "cut short"),
    (lambda t: _cut_mid_number(t) + "\n", "missing in column 'nash_conv'"),
    (lambda t: t[:len(t) // 2], "cut short"),
    (lambda t: "\n".join(t.splitlines()[:-1]) + "\n", "has 2 rows"),
    (lambda t: t.splitlines()[0] + "\n", "no rows"),
    (lambda t: "", "cut short"),
    (lambda t: "\0\xff" * 10 + "\n", "columns are not a run's"),
    (_edit("exploitability", np.nan), "missing in column 'exploitability'"),
    (_edit("seconds", np.inf), "'seconds' holds values that are not finite"),
    (_edit("nash_conv", 1.0), "nash_conv is not twice its exploitability"),
    (_edit("exploitability", "x"), "not finite numbers"),
    (_edit("seed", 5), "column 'seed' is not the task's 0"),
    (_edit("iteration", 99), "at iterations [1, 10, 99]"),
    (_edit("iterations", 10), "column 'iterations' is not the task's 100"),
])
def test_a_damaged_run_is_run_again_with_a_one_line_notice(stored, capsys,
                                                           damage, why):
  tasks, folder = stored
  path = folder / "run_00000.csv"
  path.write_text(damage(path.read_text()))
  store = common.open_runs(str(folder.parent), "runs", tasks, ())
  lines = capsys.readouterr().out.splitlines()
  assert lines[0].startswith(f"{path} is damaged (") and why in lines[0], lines
  assert lines[0].endswith("); running it again")
  assert lines[1:] == [f"resuming the interrupted run in {folder}: 1 of 2 "
                       "runs finished before, skipping them"]
  assert store.finished() == [1] and not path.exists()
  rows = sweep.run_sweep(tasks, store=store)
  assert len(rows) == 6 and store.finished() == [0, 1]


def test_sound_runs_are_kept(stored, capsys):
  tasks, folder = stored
  store = common.open_runs(str(folder.parent), "runs", tasks, ())
  assert store.finished() == [0, 1]
  assert "damaged" not in capsys.readouterr().out


FULL_DISK = textwrap.dedent("""
    import errno, os, sys
    from absl import app
    from mccfrb import files
    from experiments import convergence
    write, count = files.write_atomically, [0]
    def full(path, data):
      if os.path.basename(path).startswith("run_"):
        count[0] += 1
        if count[0] == 3:
          def fail(f):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
          return write(path, fail)
      return write(path, data)
    files.write_atomically = full
    sys.argv = ["convergence.py", *sys.argv[1:]]
    app.run(convergence.main)
""")


def test_a_full_disk_ends_in_one_line_keeping_the_finished_runs(tmp_path):
  out = tmp_path / "out"
  args = [*SWEEP, "--algorithms=os,es", f"--out_dir={out}"]
  full = _run("-c", FULL_DISK, *args)
  runs = out / "convergence_runs"
  assert full.returncode == 1
  # With an empty numba cache the runs' workers announce their compiles
  # first; the error itself is one line.
  assert error_lines(full.stderr) == [
      f"convergence: error: cannot write {runs}/run_00001.csv: No space left "
      f"on device; kept 2 of 4 runs in {runs}; rerun the same command to "
      "finish the other 2"], full.stderr
  # Runs are handed out seed by seed: os and es of seed 0 (runs 0 and 2)
  # first, then those of seed 1.
  assert sorted(os.listdir(runs)) == [lock.LOCK_NAME, "run_00000.csv",
                                      "run_00002.csv", "settings.json"]
  again = _run("experiments/convergence.py", *args)
  assert again.returncode == 0, again.stderr
  assert "2 of 4 runs finished before" in again.stdout
  assert len(pd.read_csv(out / "convergence.csv")) == 8


def _ignored_signals(pid):
  """The signal numbers process `pid` ignores (/proc/PID/status, SigIgn)."""
  with open(f"/proc/{pid}/status") as f:
    mask = next(int(line.split()[1], 16) for line in f
                if line.startswith("SigIgn:"))
  return {n for n in range(1, 65) if mask >> (n - 1) & 1}


@pytest.mark.skipif(not os.path.exists("/proc/self/status"),
                    reason="reads /proc (Linux)")
def test_pool_workers_ignore_ctrl_c_before_their_imports():
  """A Ctrl-C while a spawned worker still imported its modules printed
  that worker's traceback beside the sweep's one line (the initializer
  that ignores SIGINT runs only after the imports). The workers must
  ignore it as soon as they exist, and the caller's handler come back."""
  before = signal.getsignal(signal.SIGINT)
  started = workers.start(sweep.run_task, 2)
  try:
    # At once: the workers are still starting (importing mccfrb takes
    # seconds), so only an inherited disposition can be seen here.
    for worker in started:
      assert signal.SIGINT in _ignored_signals(worker.process.pid)
  finally:
    for worker in started:
      worker.stop(kill=True)
  assert signal.getsignal(signal.SIGINT) is before


def _spawned_workers(pid):
  """The pids of the spawned worker processes whose parent is `pid`."""
  found = []
  for entry in os.listdir("/proc"):
    if not entry.isdigit():
      continue
    try:
      with open(f"/proc/{entry}/stat") as f:
        parent = int(f.read().rsplit(")", 1)[1].split()[1])
      with open(f"/proc/{entry}/cmdline", "rb") as f:
        command = f.read()
    except (OSError, ValueError, IndexError):
      continue
    if parent == pid and b"spawn_main" in command:
      found.append(int(entry))
  return found


@pytest.mark.skipif(not os.path.exists("/proc/self/stat"),
                    reason="reads /proc (Linux)")
def test_a_worker_killed_mid_run_ends_the_sweep_in_one_line(tmp_path):
  """multiprocessing.Pool waited forever for a dead worker's run."""
  out = tmp_path / "out"
  runs = out / "convergence_runs"
  proc = subprocess.Popen(
      [sys.executable, "experiments/convergence.py", "--games=leduc_poker",
       "--algorithms=os", "--seeds=2", "--iterations=100000000",
       "--num_checkpoints=2", "--evaluator=mccfrb", "--plot=false",
       "--jobs=2", f"--out_dir={out}"], cwd=ROOT, stdout=subprocess.DEVNULL,
      stderr=subprocess.PIPE, text=True)
  try:
    deadline = time.monotonic() + 300
    while len(_spawned_workers(proc.pid)) < 2:
      assert proc.poll() is None and time.monotonic() < deadline
      time.sleep(0.2)
    spawned = _spawned_workers(proc.pid)
    os.kill(spawned[0], signal.SIGKILL)
    _, stderr = proc.communicate(timeout=120)
  finally:
    if proc.poll() is None:
      _kill(proc)
  assert proc.returncode == 1
  assert re.fullmatch(
      "convergence: error: a worker process was killed by SIGKILL while "
      r"running os on leduc_poker with seed [01], without its result; kept 0 "
      f"of 2 runs in {runs}; rerun the same command to finish the other 2\n",
      stderr), stderr
  # The other worker was stopped with the sweep, not left running.
  assert not any(os.path.exists(f"/proc/{pid}") for pid in spawned)
