r"""Samples per instruction of numba's machine code, from a perf profile.

`perf report` names numba's kernels (experiments/perf_map.py) but cannot
show where inside one the time goes: the code lived in an anonymous
mapping, gone when the process ended. With the machine code perf_map
copied (`--code_dir`), this binary disassembles a function (objdump) and
counts the profile's samples on each of its instructions:

  perf record -e cpu-clock -F 499 -o perf.data \
      -- python -m experiments.perf_map --script=walk.py --code_dir=code
  python -m experiments.perf_annotate --data=perf.data --code=code \
      --function=_expand

For each function whose name contains `--function` it prints its samples
and its `--top` instructions by samples (offset from the function's start,
share of its samples, instruction); `--listing=FILE` writes the whole
disassembly with a count per instruction. A timer's sample names the
instruction the CPU was about to execute, often the one after a slow one.
"""

import bisect
import collections
import pathlib
import re
import shutil
import subprocess

from absl import app
from absl import flags

_DATA = flags.DEFINE_string("data", "perf.data", "perf record's output.")
_CODE = flags.DEFINE_string(
    "code", None,
    "The directory perf_map.py's --code_dir wrote: the map, the code.")
flags.mark_flag_as_required("code")
_FUNCTION = flags.DEFINE_string(
    "function", None, "Annotate the functions whose name contains this.")
flags.mark_flag_as_required("function")
_TOP = flags.DEFINE_integer("top", 20, "Instructions to print a function.")
_LISTING = flags.DEFINE_string(
    "listing", None, "Write every instruction with its samples here.")


def read_map(code_dir):
  """(pid, [(start, size, name)]) of the perf map perf_map.py copied to
  `code_dir` (perf-<pid>.map)."""
  maps = sorted(pathlib.Path(code_dir).glob("perf-*.map"))
  if len(maps) != 1:
    raise app.UsageError(
        f"{code_dir} holds {len(maps)} perf maps, not 1: run perf_map.py "
        "with --code_dir once per directory.")
  pid = int(maps[0].stem.split("-")[1])
  rows = []
  for line in maps[0].read_text().splitlines():
    start, size, name = line.split(" ", 2)
    rows.append((int(start, 16), int(size, 16), name))
  return pid, rows


def sample_ips(data, pid):
  """The sampled instruction addresses of process `pid` in perf.data."""
  out = subprocess.run(["perf", "script", "-i", str(data), "-F", "pid,ip"],
                       capture_output=True, text=True, check=True).stdout
  ips = []
  for line in out.splitlines():
    fields = line.split()
    if len(fields) == 2 and fields[0] == str(pid):
      ips.append(int(fields[1], 16))
  return ips


def disassemble(path, start):
  """[(address, instruction)] of the machine code in the file `path`,
  which ran at address `start`, by objdump."""
  out = subprocess.run(
      ["objdump", "-D", "-b", "binary", "-m", "i386:x86-64",
       "--no-show-raw-insn", f"--adjust-vma=0x{start:x}", str(path)],
      capture_output=True, text=True, check=True).stdout
  found = []
  for line in out.splitlines():
    match = re.match(r"^\s+([0-9a-f]+):\s+(\S.*)$", line)
    if match:
      found.append((int(match.group(1), 16), match.group(2).strip()))
  return found


def attribute(ips, instructions, start, size):
  """{index in `instructions`: samples} of the addresses `ips` that lie
  in [start, start + size), each counted to the instruction it falls in."""
  addresses = [address for address, _ in instructions]
  counts = collections.Counter()
  for ip in ips:
    if start <= ip < start + size:
      counts[bisect.bisect_right(addresses, ip) - 1] += 1
  return counts


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
  for tool in ("perf", "objdump"):
    if shutil.which(tool) is None:
      raise app.UsageError(f"{tool} is not installed (linux-tools, binutils).")
  code_dir = pathlib.Path(_CODE.value)
  pid, rows = read_map(code_dir)
  chosen = [row for row in rows if _FUNCTION.value in row[2]
            and (code_dir / f"{row[0]:x}.bin").exists()]
  if not chosen:
    raise app.UsageError(
        f"No function named like {_FUNCTION.value!r} has its code in "
        f"{code_dir}.")
  ips = sample_ips(_DATA.value, pid)
  listing = []
  for start, size, name in chosen:
    instructions = disassemble(code_dir / f"{start:x}.bin", start)
    counts = attribute(ips, instructions, start, size)
    total = sum(counts.values())
    print(f"{name[:100]}: {total} of the process's {len(ips)} samples")
    for index, count in counts.most_common(_TOP.value):
      address, text = instructions[index]
      print(f"  {100 * count / total:5.1f}%  +{address - start:<6x} {text}")
    listing.append(f"{name}\n" + "".join(
        f"{counts[i]:8d}  +{a - start:<6x} {t}\n"
        for i, (a, t) in enumerate(instructions)))
  if _LISTING.value:
    pathlib.Path(_LISTING.value).write_text("\n".join(listing))
    print(f"wrote {_LISTING.value}")


if __name__ == "__main__":
  app.run(main)
