"""numba's SSA reconstruction rewriting only the blocks that mention a
variable (mccfrb/numba_ssa.py): the same machine code, fewer statements
visited."""

from numba.core import ssa

import mccfrb  # pylint: disable=unused-import  # Installs the map.
from mccfrb import numba_ssa
from tests.conftest import compile_in_subprocess

# Compiles a function whose variables are assigned in several blocks
# (loops, branches, an inlined callee, a variable defined in one branch
# only) and prints the hash of its LLVM IR, its results, whether the map is
# in place and how many statements the SSA rewrites handed to a handler.
_SCRIPT = r"""
import hashlib, json
import numpy as np
from numba import njit
from numba.core import ssa
import mccfrb
from mccfrb import numba_ssa

visited = [0]
block_pass = ssa._run_ssa_block_pass
def counted(states, blk, handler):
  for stmt in block_pass(states, blk, handler):
    visited[0] += 1
    yield stmt
ssa._run_ssa_block_pass = counted

@njit(inline="always")
def step(x, j, acc):
  if x[j] > 0.0:
    acc += x[j]
  elif x[j] < -1.0:
    acc -= 1.0
  else:
    acc *= 0.5
  return acc

@njit
def top(x, flag):
  acc = 0.0
  best = -1
  for i in range(x.shape[0]):
    acc = step(x, i, acc)
    if acc > 1.0:
      best = i
      acc = acc - 1.0
    k = i
    while k > 0:
      acc += 0.1 * k
      k -= 2
  if flag:
    extra = acc * 2.0
  else:
    extra = -acc
  for j in range(3):
    best += j
  return acc + extra + best

x = np.linspace(-2.0, 2.0, 9)
values = [top(x, True), top(x, False)]
hashes = ([] if not hasattr(top, "inspect_llvm") else  # NUMBA_DISABLE_JIT
          [hashlib.sha256(text.encode()).hexdigest()
           for text in top.inspect_llvm().values()])
print(json.dumps(dict(values=values, hashes=hashes, visited=visited[0],
                      installed=numba_ssa.installed())))
"""


def _compile(ssa_env, disable_jit="0"):
  return compile_in_subprocess(_SCRIPT, "MCCFRB_NUMBA_SSA", ssa_env,
                               disable_jit)


def test_importing_mccfrb_installs_the_map_once():
  assert numba_ssa.installed()
  patched = ssa._run_ssa  # pylint: disable=protected-access
  assert numba_ssa.install()
  assert ssa._run_ssa is patched  # pylint: disable=protected-access


def test_the_machine_code_is_numbas_own_with_fewer_statements_visited():
  ours, numbas = _compile("1"), _compile("0")
  assert ours["installed"] and not numbas["installed"]
  # The same LLVM IR, byte for byte (PYTHONHASHSEED fixes the names of
  # string constants).
  assert ours["hashes"] and ours["hashes"] == numbas["hashes"]
  python = _compile("1", disable_jit="1")["values"]
  for got, want in zip(ours["values"], python):
    assert abs(got - want) < 1e-9 * max(1.0, abs(want)), (got, want)
  # numba hands every statement of the function to a handler twice per
  # variable assigned more than once; the map only those of its blocks.
  assert 0 < ours["visited"] * 2 < numbas["visited"], (ours["visited"],
                                                       numbas["visited"])
