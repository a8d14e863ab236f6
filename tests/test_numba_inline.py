"""numba's inliner with one deepcopy memo per inlined call
(mccfrb/numba_inline.py): the same machine code, copied in linear time."""

from numba.core import inline_closurecall

import mccfrb  # pylint: disable=unused-import  # Installs the memo.
from mccfrb import numba_inline
from tests.conftest import compile_in_subprocess

# Compiles a chain of inline="always" functions (loops, branches, a tuple
# return, a None argument pruned away, variables live across blocks) and
# prints the hash of its LLVM IR, its results, whether the memo is in place
# and how many variables the inliner deep-copied.
_SCRIPT = r"""
import hashlib, json
import numpy as np
from numba import njit
from numba.core import ir
import mccfrb
from mccfrb import numba_inline

copies = [0]
var_deepcopy = ir.Var.__deepcopy__
def counted(self, memo):
  copies[0] += 1
  return var_deepcopy(self, memo)
ir.Var.__deepcopy__ = counted

@njit(inline="always")
def leaf(x, k):
  s = 0.0
  for j in range(k):
    if x[j] > 0.0:
      s += x[j]
    elif x[j] < -1.0:
      s -= 1.0
    else:
      s *= 0.5
  return s, k - 1

@njit(inline="always")
def middle(x, k, extra):
  a, m = leaf(x, k)
  b, n = leaf(x, m)
  if extra is not None:
    a += extra[0]
  while n > 0:
    b += a * n
    n -= 1
  return a + b

@njit
def top(x, extra):
  total = 0.0
  for i in range(x.shape[0]):
    total += middle(x, i, extra) - middle(x, x.shape[0] - i, None)
  return total

x = np.linspace(-2.0, 2.0, 9)
values = [top(x, None), top(x, np.ones(1))]
hashes = ([] if not hasattr(top, "inspect_llvm") else  # NUMBA_DISABLE_JIT
          [hashlib.sha256(text.encode()).hexdigest()
           for text in top.inspect_llvm().values()])
print(json.dumps(dict(values=values, hashes=hashes, copies=copies[0],
                      installed=numba_inline.installed())))
"""


def _compile(inline_env, disable_jit="0"):
  return compile_in_subprocess(_SCRIPT, "MCCFRB_NUMBA_INLINE", inline_env,
                               disable_jit)


def test_importing_mccfrb_installs_the_memo_once():
  assert numba_inline.installed()
  patched = inline_closurecall.InlineWorker.inline_ir
  assert numba_inline.install()
  assert inline_closurecall.InlineWorker.inline_ir is patched  # Not twice.


def test_the_machine_code_is_numbas_own_and_the_copy_is_linear():
  ours, numbas = _compile("1"), _compile("0")
  assert ours["installed"] and not numbas["installed"]
  # The same LLVM IR, byte for byte (string constants are named by
  # Python's string hash: PYTHONHASHSEED fixes it).
  assert ours["hashes"] == numbas["hashes"]
  # And the values of the same code run by Python.
  python = _compile("1", disable_jit="1")["values"]
  assert python != [0.0, 0.0]
  for got, want in zip(ours["values"], python):
    assert abs(got - want) < 1e-9 * max(1.0, abs(want)), (got, want)
  # numba copies every variable once per block of the callee; the memo
  # once per copy.
  assert ours["copies"] * 4 < numbas["copies"], (ours["copies"],
                                                 numbas["copies"])
