r"""Names for numba's machine code in `perf report`.

`perf record` samples numba's kernels as bare addresses: they are compiled
at run time into anonymous memory. This binary runs a Python script, then
writes perf's map of run-time symbols, `/tmp/perf-<pid>.map` (start, size
and name of each function, in hex), naming every function compiled for
mccfrb's kernels, so that `perf report` attributes the samples to
`stream._expand`, `stream._combine`, an engine's `apply`, and so on.

Kernels loaded from numba's disk cache are named too (from the symbols
the cache keeps):

  perf record -e cpu-clock -F 499 -o perf.data \
      -- python -m experiments.perf_map --script=walk.py
  perf report -i perf.data --sort sym --stdio

where walk.py is any Python script (BUILD_NOTES.md, "Streaming walks and
exact CFR on engines", profiles `mccfrb.exploitability` on goofspiel 6 this
way). `perf record -e cpu-clock` needs no hardware counters.

With `--code_dir=DIR` it also copies each named function's machine code,
as it lies in memory, to DIR (with the map), so that
`experiments/perf_annotate.py` can count the samples per instruction: perf
cannot disassemble code that lived in an anonymous mapping, and code
emitted again from a kernel's module may not match what ran.
"""

import ctypes
import os
import pathlib
import runpy
import shutil
import struct
import sys

from absl import app
from absl import flags

_SCRIPT = flags.DEFINE_string("script", None, "The Python script to run.")
flags.mark_flag_as_required("script")
_CODE_DIR = flags.DEFINE_string(
    "code_dir", None,
    "Also copy each named function's machine code and the map here "
    "(for experiments/perf_annotate.py).")


def elf_function_sizes(obj):
  """{name: size in bytes} of the functions in an ELF64 little-endian
  object file (`obj`, bytes): its symbol tables' FUNC entries."""
  shoff, = struct.unpack_from("<Q", obj, 0x28)
  shentsize, shnum = struct.unpack_from("<HH", obj, 0x3A)
  sections = [struct.unpack_from("<IIQQQQIIQQ", obj, shoff + i * shentsize)
              for i in range(shnum)]
  sizes = {}
  for _, kind, _, _, offset, size, link, _, _, _ in sections:
    if kind != 2:  # SHT_SYMTAB
      continue
    strings = sections[link][4]
    for k in range(size // 24):
      name, info, _, _, _, length = struct.unpack_from("<IBBHQQ", obj,
                                                       offset + 24 * k)
      if info & 0xF == 2 and length:  # STT_FUNC
        end = obj.index(b"\0", strings + name)
        sizes[obj[strings + name:end].decode()] = length
  return sizes


def _library_sizes(library):
  """{name: size} of a numba library's machine code, {} if its object
  file is not at hand."""
  try:
    obj = library._get_compiled_object()  # pylint: disable=protected-access
  except (RuntimeError, ValueError):  # No object file kept.
    return {}
  return elf_function_sizes(obj) if obj[:4] == b"\x7fELF" else {}


def symbols(dispatchers, sizes=None):
  """{address: name} of every function defined in the compiled overloads
  of `dispatchers` (numba CPUDispatchers), callees linked into them
  included, whether compiled in this process or loaded from numba's
  cache. With a dict `sizes`, fills it with {address: size in bytes} of
  the functions whose size the library's object file gives."""
  found = {}
  for dispatcher in dispatchers:
    for compiled in dispatcher.overloads.values():
      library = compiled.library
      lengths = _library_sizes(library) if sizes is not None else {}
      for module in (getattr(library, "_final_module", None),
                     getattr(library, "_shared_module", None)):
        for function in () if module is None else module.functions:
          if function.is_declaration:
            continue
          address = library.get_pointer_to_function(function.name)
          if address:
            found[address] = function.name
            if function.name in lengths:
              sizes[address] = lengths[function.name]
  return found


def mccfrb_dispatchers():
  """Every numba dispatcher defined in an imported mccfrb module."""
  from numba.core.registry import CPUDispatcher  # pylint: disable=import-outside-toplevel
  seen = {}
  for name, module in list(sys.modules.items()):
    if name == "mccfrb" or name.startswith("mccfrb."):
      for value in list(vars(module).values()):
        if isinstance(value, CPUDispatcher):
          seen[id(value)] = value
  return list(seen.values())


def map_rows(found, sizes=None):
  """[(start, size, name)] of `found` ({address: name}) in address order.
  A function's size is its own (`sizes`, {address: bytes}) where known,
  else it reaches the next function's start (the last: 64 KiB), so that
  samples in code no map names are not counted to a function they lie
  after."""
  sizes = sizes or {}
  starts = sorted(found)
  rows = []
  for i, start in enumerate(starts):
    size = starts[i + 1] - start if i + 1 < len(starts) else 1 << 16
    rows.append((start, min(size, sizes.get(start, size)), found[start]))
  return rows


def write_map(found, path, sizes=None):
  """Writes `found` ({address: name}) as a perf map at `path`: one line
  per function, `start size name` with start and size in hex, in address
  order, sizes as `map_rows` gives them. Returns the path."""
  path = pathlib.Path(path)
  with path.open("w") as out:
    for start, size, name in map_rows(found, sizes):
      out.write(f"{start:x} {size:x} {name}\n")
  return path


def executable_regions():
  """[(start, end)] of this process's executable mappings
  (/proc/self/maps)."""
  regions = []
  with open("/proc/self/maps", encoding="ascii") as maps:
    for line in maps:
      span, perms = line.split()[:2]
      if "x" in perms:
        lo, hi = span.split("-")
        regions.append((int(lo, 16), int(hi, 16)))
  return regions


def write_code(found, sizes, code_dir):
  """Copies the machine code of each function of `found` ({address:
  name}) from this process's memory to `code_dir`/<start in hex>.bin: its
  extent as `map_rows` gives it (its own size where `sizes` has it, e.g.
  for code compiled in this process, else up to the next function's
  start), never past the end of the executable mapping it starts in.
  Returns how many."""
  code_dir = pathlib.Path(code_dir)
  code_dir.mkdir(parents=True, exist_ok=True)
  regions = executable_regions()
  count = 0
  for start, size, _ in map_rows(found, sizes):
    ends = [hi for lo, hi in regions if lo <= start < hi]
    if not ends:
      continue
    size = min(size, ends[0] - start)
    (code_dir / f"{start:x}.bin").write_bytes(ctypes.string_at(start, size))
    count += 1
  return count


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
  runpy.run_path(_SCRIPT.value, run_name="__main__")
  dispatchers = mccfrb_dispatchers()
  sizes = {}
  found = symbols(dispatchers, sizes)
  path = write_map(found, f"/tmp/perf-{os.getpid()}.map", sizes)
  print(f"{len(found)} functions of {len(dispatchers)} kernels named in "
        f"{path}")
  if _CODE_DIR.value:
    copied = write_code(found, sizes, _CODE_DIR.value)
    shutil.copy(path, pathlib.Path(_CODE_DIR.value) / path.name)
    print(f"machine code of {copied} functions and the map in "
          f"{_CODE_DIR.value}")


if __name__ == "__main__":
  app.run(main)
