"""experiments/perf_map.py: perf's map of run-time symbols names numba's
compiled functions at their addresses."""

import os
import pathlib
import subprocess
import sys

import numba

from experiments import perf_map

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_the_map_names_a_compiled_function_at_its_address(tmp_path):

  @numba.njit
  def twice(x):
    return 2 * x

  assert twice(3) == 6
  found = perf_map.symbols([twice])
  compiled = next(iter(twice.overloads.values()))
  name = compiled.fndesc.llvm_func_name
  address = compiled.library.get_pointer_to_function(name)
  assert address and found[address] == name
  path = perf_map.write_map({**found, 4096: "first"}, tmp_path / "perf-1.map")
  rows = [line.split(" ", 2) for line in path.read_text().splitlines()]
  assert rows[0] == ["1000", f"{min(found) - 4096:x}", "first"]
  starts = [int(start, 16) for start, _, _ in rows]
  assert starts == sorted(starts) and len(rows) == len(found) + 1
  for (start, size, _), nxt in zip(rows, starts[1:]):
    assert int(start, 16) + int(size, 16) == nxt
  assert [f"{address:x}", name] in [[s, n] for s, _, n in rows]


def test_a_function_of_known_size_ends_where_its_code_ends(tmp_path):

  @numba.njit
  def plus_one(x):
    return x + 1

  assert plus_one(1) == 2
  sizes = {}
  found = perf_map.symbols([plus_one], sizes)
  compiled = next(iter(plus_one.overloads.values()))
  name = compiled.fndesc.llvm_func_name
  address = compiled.library.get_pointer_to_function(name)
  # The object file's size of the function (a few instructions), not the
  # distance to the next function.
  assert found[address] == name and 0 < sizes[address] < 64
  assert set(sizes) <= set(found)
  far = address + (1 << 20)
  path = perf_map.write_map({**found, far: "after"}, tmp_path / "perf-2.map",
                            sizes)
  rows = {n: int(size, 16) for _, size, n in
          (line.split(" ", 2) for line in path.read_text().splitlines())}
  assert rows[name] == sizes[address]
  assert rows["after"] == 1 << 16


_CACHED = """
import sys
sys.path.insert(0, sys.argv[1])
import kernel
from experiments import perf_map
assert kernel.thrice(2) == 6
compiled = next(iter(kernel.thrice.overloads.values()))
name = compiled.fndesc.llvm_func_name
found = perf_map.symbols([kernel.thrice])
print(sum(kernel.thrice.stats.cache_hits.values()), name in found.values())
"""


def test_a_kernel_loaded_from_numbas_cache_is_named(tmp_path):
  (tmp_path / "kernel.py").write_text(
      "import numba\n\n@numba.njit(cache=True)\ndef thrice(x):\n"
      "  return 3 * x\n")
  env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"))
  runs = [subprocess.run([sys.executable, "-c", _CACHED, str(tmp_path)],
                         cwd=ROOT, env=env, capture_output=True, text=True,
                         check=True).stdout.split() for _ in range(2)]
  # Compiled, then loaded from the cache: named both times.
  assert runs[0][1] == runs[1][1] == "True", runs
  assert (runs[0][0], runs[1][0]) == ("0", "1"), runs
