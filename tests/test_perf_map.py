"""experiments/perf_map.py: perf's map of run-time symbols names numba's
compiled functions at their addresses, and copies their machine code for
experiments/perf_annotate.py, which counts samples per instruction."""

import os
import pathlib
import subprocess
import sys

import numba

from experiments import perf_annotate
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


def test_the_code_copied_is_the_functions_machine_code(tmp_path):

  @numba.njit
  def magic(x):
    return x * 0x12345677

  assert magic(2) == 2 * 0x12345677
  sizes = {}
  found = perf_map.symbols([magic], sizes)
  compiled = next(iter(magic.overloads.values()))
  address = compiled.library.get_pointer_to_function(
      compiled.fndesc.llvm_func_name)
  assert perf_map.write_code(found, sizes, tmp_path) == len(found)
  code = (tmp_path / f"{address:x}.bin").read_bytes()
  assert len(code) == sizes[address]
  instructions = perf_annotate.disassemble(tmp_path / f"{address:x}.bin",
                                           address)
  assert instructions[0][0] == address
  assert any("0x12345677" in text for _, text in instructions)
  assert instructions[-1][1].startswith("ret")


def test_each_sample_counts_to_the_instruction_it_falls_in(tmp_path):
  instructions = [(0x1000, "mov"), (0x1003, "add"), (0x1007, "ret")]
  counts = perf_annotate.attribute(
      [0x1000, 0x1004, 0x1006, 0x1007, 0xfff, 0x1008, 0x2000], instructions,
      0x1000, 8)
  assert counts == {0: 1, 1: 2, 2: 1}
  perf_map.write_map({0x1000: "f", 0x2000: "g"}, tmp_path / "perf-42.map")
  assert perf_annotate.read_map(tmp_path) == (
      42, [(0x1000, 0x1000, "f"), (0x2000, 1 << 16, "g")])
