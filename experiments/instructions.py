r"""Instructions a script's work executes, counted without the machine's noise.

Timing pairs on a shared machine drift more than most changes to a kernel
make (BUILD_NOTES.md: pairs of one code from 0.78 to 1.23). valgrind's
cachegrind counts the instructions a process executes, the same on every
run. This binary counts them for a script run at two sizes and prints the
difference per unit, so that Python's start-up, the imports and any set-up
cancel:

  python -m experiments.instructions --sized_script=walk.py --low=1 --high=4

runs `python walk.py 1` and `python walk.py 4` under cachegrind (the script
reads its size from `sys.argv[1]`, e.g. the number of walks after one
training run) and prints (I(4) - I(1)) / 3. With `--vs_path=DIR` (another
checkout, e.g. a `git worktree` of the commit before) it counts the script
with `PYTHONPATH=DIR` too and prints the ratio of the two.

numba compiles for the CPU it finds, and valgrind's virtual CPU has no
AVX-512: kernels that a native run cached do not load under valgrind
(numba's cache is keyed by CPU name and features), and compiling them
under valgrind takes tens of minutes. So every run here, native and under
valgrind, targets one CPU that valgrind emulates (`NUMBA_CPU_NAME=haswell`
and its features), with its own cache directory (`--cache_dir`), which a
native run of the script at the low size fills first.

Instruction counts are not time: a walk bound by memory runs fewer
instructions in the same time. They say whether a change does less work.
"""

import os
import pathlib
import re
import shutil
import subprocess
import sys

from absl import app
from absl import flags

ROOT = pathlib.Path(__file__).resolve().parents[1]
CPU_NAME = "haswell"
CPU_FEATURES = ("+64bit,+avx,+avx2,+bmi,+bmi2,+cmov,+cx16,+f16c,+fma,+fxsr,"
                "+lzcnt,+mmx,+movbe,+popcnt,+sse,+sse2,+sse3,+sse4.1,+sse4.2,"
                "+ssse3,+xsave")

_SCRIPT = flags.DEFINE_string(
    "sized_script", None,
    "A Python script that reads its size (an int) from sys.argv[1].")
_LOW = flags.DEFINE_integer("low", 1, "The smaller size.")
_HIGH = flags.DEFINE_integer("high", 3, "The larger size.")
_PATH = flags.DEFINE_string(
    "path", str(ROOT), "PYTHONPATH of the code counted (this checkout).")
_VS_PATH = flags.DEFINE_string(
    "vs_path", None, "PYTHONPATH of a second checkout to count and compare.")
_CACHE_DIR = flags.DEFINE_string(
    "cache_dir", "/tmp/mccfrb_instructions_numba_cache",
    "numba's cache for the runs (compiled for CPU_NAME, not this machine).")


def environment(path, cache_dir):
  """The runs' environment: `path` first on PYTHONPATH, one thread, fixed
  string hashing, and numba compiling for CPU_NAME into `cache_dir`."""
  return dict(os.environ, PYTHONPATH=str(pathlib.Path(path).resolve()),
              PYTHONHASHSEED="0", NUMBA_CPU_NAME=CPU_NAME,
              NUMBA_CPU_FEATURES=CPU_FEATURES, NUMBA_CACHE_DIR=str(cache_dir),
              NUMBA_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")


def instruction_refs(report):
  """The total of cachegrind's summary line `I refs: 1,234,567`."""
  found = re.search(r"I\s+refs:\s+([\d,]+)", report)
  if found is None:
    raise RuntimeError("no 'I refs' line in valgrind's report: "
                       + " | ".join(report.strip().splitlines()[-3:]))
  return int(found.group(1).replace(",", ""))


def _run(command, env):
  done = subprocess.run(command, env=env, capture_output=True, text=True,
                        check=False)
  if done.returncode != 0:
    tail = " | ".join(done.stderr.strip().splitlines()[-3:])
    raise RuntimeError(f"{' '.join(command)} exited {done.returncode}: {tail}")
  return done.stderr


def count(script, size, env):
  """Instructions of `python script size` under cachegrind."""
  return instruction_refs(_run(
      ["valgrind", "--tool=cachegrind", "--cache-sim=no",
       "--cachegrind-out-file=/dev/null", sys.executable, str(script),
       str(size)], env))


def per_unit(script, low, high, path, cache_dir):
  """(I(high) - I(low)) / (high - low) of `script` with `path` first on
  PYTHONPATH, after a native run at `low` that fills numba's cache."""
  env = environment(path, cache_dir)
  _run([sys.executable, str(script), str(low)], env)
  return (count(script, high, env) - count(script, low, env)) / (high - low)


def check_flags(script, low, high):
  """One line for what cannot run."""
  if shutil.which("valgrind") is None:
    raise app.UsageError("valgrind is not installed (apt-get install "
                         "valgrind).")
  if script is None or not pathlib.Path(script).is_file():
    raise app.UsageError(f"--sized_script={script} is not a file.")
  if not 0 <= low < high:
    raise app.UsageError(f"--low={low} and --high={high}: need 0 <= low < "
                         "high.")


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
  check_flags(_SCRIPT.value, _LOW.value, _HIGH.value)
  counted = {}
  for path in [_PATH.value] + ([_VS_PATH.value] if _VS_PATH.value else []):
    counted[path] = per_unit(_SCRIPT.value, _LOW.value, _HIGH.value, path,
                             _CACHE_DIR.value)
    print(f"{path}: {counted[path]:,.0f} instructions a unit "
          f"(sizes {_LOW.value} and {_HIGH.value})", flush=True)
  if _VS_PATH.value:
    print(f"ratio {counted[_PATH.value] / counted[_VS_PATH.value]:.4f} "
          f"({_PATH.value} / {_VS_PATH.value})")


if __name__ == "__main__":
  flags.mark_flag_as_required("sized_script")
  app.run(main)
