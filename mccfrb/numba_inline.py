"""A linear-time copy of the callee in numba's inliner.

mccfrb's kernels are built of small functions marked `inline="always"`
(the estimators, the regret and average updates, each engine's moves).
numba's `InlineWorker.inline_ir` copies the callee's IR before splicing it
into the caller, block by block, each block with its own
`copy.deepcopy`. A block's variables point to the function's scope, which
holds every variable of the function, so each block's copy also copies
the whole scope: the copy takes (blocks x variables), and a callee that
has itself inlined others (an episode's way down, inlining an engine)
has thousands of each (numba issues #8989 and #9204 describe the copies).
On goofspiel's engine, `kernels/outcome.engine_episodes` spent 16.5 s of
its 43 s first compile in that pass.

`install()`, called by mccfrb/__init__.py, gives the blocks of one
`inline_ir` call one deepcopy memo: the scope and each variable are copied
once, and the blocks of the copy share them as the blocks of the callee
do. Nothing else changes, so the machine code is the same (the LLVM IR
of `engine_episodes` on goofspiel compared equal byte for byte, and
`tests/test_numba_inline.py` compares it on a chain of inlined functions);
the pass took 3.6 s of a 28 s compile. It applies to every numba function
the process compiles, mccfrb's or not. Set MCCFRB_NUMBA_INLINE=0 before
importing mccfrb to leave numba as it is; a numba whose inliner no
longer copies this way is left as it is too.
"""

import copy
import os
import threading

# What `inline_ir` must contain for the memo to apply (numba 0.59-0.68):
# its one deepcopy, made through the module `copy` of inline_closurecall.
_EXPECTED = "copy.deepcopy(the_ir.blocks[block_label])"

_local = threading.local()


class _SharedMemoCopy:
  """Stands in for the module `copy` inside numba's inline_closurecall:
  a deepcopy without a memo takes the memo of the `inline_ir` call in
  progress (none outside one)."""

  copy = staticmethod(copy.copy)

  @staticmethod
  def deepcopy(x, memo=None):
    if memo is None:
      memo = getattr(_local, "memo", None)
    return copy.deepcopy(x, memo)


def _inliner():
  """numba's inline_closurecall module, or None if its inliner is not the
  one this module knows."""
  import inspect  # pylint: disable=import-outside-toplevel
  from numba.core import inline_closurecall  # pylint: disable=import-outside-toplevel
  worker = getattr(inline_closurecall, "InlineWorker", None)
  if worker is None or getattr(inline_closurecall, "copy", None) not in (
      copy, _SharedMemoCopy):
    return None
  try:
    source = inspect.getsource(
        getattr(worker.inline_ir, "_mccfrb_original", worker.inline_ir))
  except (OSError, TypeError):
    return None
  return inline_closurecall if _EXPECTED in source else None


def install():
  """Makes each `inline_ir` call copy its callee with one memo (module
  docstring). Idempotent.

  Returns:
    True when installed (now or before); False when MCCFRB_NUMBA_INLINE is
    "0" or numba's inliner is not the one this module knows.
  """
  if os.environ.get("MCCFRB_NUMBA_INLINE", "1") == "0":
    return False
  module = _inliner()
  if module is None:
    return False
  worker = module.InlineWorker
  if getattr(worker.inline_ir, "_mccfrb_original", None) is not None:
    return True
  original = worker.inline_ir

  def inline_ir(self, *args, **kwargs):
    outer = getattr(_local, "memo", None)  # A compile inside a compile.
    _local.memo = {}
    try:
      return original(self, *args, **kwargs)
    finally:
      _local.memo = outer

  inline_ir.__doc__ = original.__doc__
  inline_ir._mccfrb_original = original  # pylint: disable=protected-access
  module.copy = _SharedMemoCopy
  worker.inline_ir = inline_ir
  return True


def installed():
  """Whether numba's inliner copies with one memo in this process."""
  from numba.core import inline_closurecall  # pylint: disable=import-outside-toplevel
  return getattr(inline_closurecall.InlineWorker.inline_ir,
                 "_mccfrb_original", None) is not None
