"""numba's SSA reconstruction, rewriting only the blocks a variable is in.

numba rebuilds SSA form after its untyped passes (`ssa.reconstruct_ssa`):
for each variable assigned more than once (a "violator") it rewrites every
block of the function twice, once to give each assignment a fresh name
(`_fresh_vars`) and once to point each use at its reaching definition
(`_fix_ssa_vars`), calling a handler on every statement. The work is
(violators x statements), and mccfrb's kernels, once the inliner has
spliced in their `inline="always"` pieces and an engine's moves, have
thousands of each: the rewrite calls its handler millions of times on
statements that do not mention the variable and come back unchanged.

`install()`, called by mccfrb/__init__.py, gives each `_run_ssa` call a map
from a variable's name to the blocks whose statements mention it, taken
once from the blocks it starts with, and has each rewrite call the
handler only on those blocks; the others are copied as they are (the
rewrite's own result for a block whose statements it leaves alone). The
handlers act only on statements that mention the variable, and rewriting
one violator never brings another violator's name into a block (it
renames that one variable and adds phi nodes over its own new names), so
the map holds for the whole call. The handlers meet the same statements in
the same order, so the fresh names, the phi nodes and the machine code
are the same (the LLVM IR of every kernel the solvers of five kinds
compiled compared equal, and `tests/test_numba_ssa.py` compares it on a
function with loops, branches and an inlined callee). On goofspiel 4's
engine, `kernels/outcome.engine_episodes` spent 3.1 s of its 27 s first
compile in the pass, then 1.5 s (its `metadata["pipeline_times"]`). It applies to every numba function the process compiles,
mccfrb's or not. Set MCCFRB_NUMBA_SSA=0 before importing mccfrb to leave
numba as it is; a numba whose SSA pass is not the one this module knows is
left as it is too.
"""

import os
import threading

_local = threading.local()

# What numba's ssa module must hold for the map to apply (numba 0.59-0.68):
# the two rewrites through `_run_block_rewrite`, each naming its variable
# in `states['varname']`.
_EXPECTED = {
    "_fresh_vars": "_run_block_rewrite(blocks, states, _FreshVarHandler())",
    "_fix_ssa_vars": "_run_block_rewrite(blocks, states, _FixSSAVars(",
}


def _ssa():
  """numba's ssa module, or None if it is not the one this module knows."""
  import inspect  # pylint: disable=import-outside-toplevel
  from numba.core import ssa  # pylint: disable=import-outside-toplevel
  for name, text in _EXPECTED.items():
    try:
      source = inspect.getsource(getattr(ssa, name))
    except (AttributeError, OSError, TypeError):
      return None
    if text not in source or "states['varname'] = varname" not in source:
      return None
  if not all(hasattr(ssa, name) for name in ("_run_ssa", "_run_block_rewrite")):
    return None
  return ssa


def _mentions(blocks):
  """{variable name: labels of the blocks whose statements mention it}."""
  out = {}
  for label, block in blocks.items():
    for stmt in block.body:
      for var in stmt.list_vars():
        out.setdefault(var.name, set()).add(label)
  return out


def install():
  """Makes numba's SSA rewrites skip the blocks that do not mention the
  variable being rewritten (module docstring). Idempotent.

  Returns:
    True when installed (now or before); False when MCCFRB_NUMBA_SSA is "0"
    or numba's SSA pass is not the one this module knows.
  """
  if os.environ.get("MCCFRB_NUMBA_SSA", "1") == "0":
    return False
  if installed():
    return True
  ssa = _ssa()
  if ssa is None:
    return False
  from numba.core import ir  # pylint: disable=import-outside-toplevel
  run_ssa, rewrite = ssa._run_ssa, ssa._run_block_rewrite  # pylint: disable=protected-access

  def _run_ssa(blocks):
    outer = getattr(_local, "mentions", None)
    _local.mentions = _mentions(blocks) if blocks else None
    try:
      return run_ssa(blocks)
    finally:
      _local.mentions = outer

  def _run_block_rewrite(blocks, states, handler):
    mentions = getattr(_local, "mentions", None)
    if mentions is None or "varname" not in states:
      return rewrite(blocks, states, handler)
    where = mentions.get(states["varname"], ())
    done = rewrite({label: block for label, block in blocks.items()
                    if label in where}, states, handler)
    out = {}
    for label, block in blocks.items():
      if label in done:
        out[label] = done[label]
      else:
        out[label] = ir.Block(scope=block.scope, loc=block.loc)
        out[label].body = list(block.body)
    return out

  _run_ssa.__doc__ = run_ssa.__doc__
  _run_ssa._mccfrb_original = run_ssa  # pylint: disable=protected-access
  _run_block_rewrite._mccfrb_original = rewrite  # pylint: disable=protected-access
  ssa._run_ssa = _run_ssa  # pylint: disable=protected-access
  ssa._run_block_rewrite = _run_block_rewrite  # pylint: disable=protected-access
  return True


def installed():
  """Whether numba's SSA rewrites skip blocks in this process."""
  from numba.core import ssa  # pylint: disable=import-outside-toplevel
  return getattr(ssa._run_ssa, "_mccfrb_original", None) is not None  # pylint: disable=protected-access
