"""experiments/instructions.py: instruction counts per unit of a script's
work, the same on every run, start-up cancelled."""

import shutil

import pytest
from absl import app

from experiments import instructions
from tests.conftest import skip_unless_ci

LOOP = """import sys
total = 0
for i in range(int(sys.argv[1]) * {per_unit}):
  total += i & 7
"""


def test_the_summary_line_is_read_with_its_commas():
  report = "==1== \n==1== I   refs:      14,612,787,670\n"
  assert instructions.instruction_refs(report) == 14_612_787_670
  with pytest.raises(RuntimeError, match="no 'I refs'"):
    instructions.instruction_refs("==1== Segmentation fault\n")


def test_the_runs_target_a_cpu_valgrind_emulates(tmp_path):
  env = instructions.environment(".", tmp_path)
  assert env["NUMBA_CPU_NAME"] == "haswell"
  assert "avx512" not in env["NUMBA_CPU_FEATURES"]
  assert env["NUMBA_CACHE_DIR"] == str(tmp_path)
  assert env["PYTHONHASHSEED"] == "0" and env["NUMBA_NUM_THREADS"] == "1"


def test_bad_flags_are_one_line(tmp_path):
  with pytest.raises(app.UsageError, match="is not a file"):
    instructions.check_flags(str(tmp_path / "none.py"), 1, 3)
  script = tmp_path / "s.py"
  script.write_text("pass\n")
  with pytest.raises(app.UsageError, match="low < high"):
    instructions.check_flags(str(script), 3, 3)


@pytest.mark.slow
def test_per_unit_counts_the_loop_not_the_start_up(tmp_path):
  if shutil.which("valgrind") is None:
    skip_unless_ci("needs valgrind (.ci/run installs it)")
  counts = {}
  for per_unit in (20_000, 40_000):
    script = tmp_path / f"loop{per_unit}.py"
    script.write_text(LOOP.format(per_unit=per_unit))
    counts[per_unit] = [
        instructions.per_unit(script, 1, 3, ".", tmp_path / "cache")
        for _ in range(2)]
  # The same on every run (to 0.1%), a few tens of instructions a loop
  # iteration, and twice the loop twice the count: Python's start-up,
  # about 10^8 instructions, is not in it.
  for first, second in counts.values():
    assert abs(first / second - 1) < 1e-3
  per_iteration = counts[20_000][0] / 20_000
  assert 20 < per_iteration < 2_000
  assert abs(counts[40_000][0] / counts[20_000][0] - 2) < 0.02
