"""What every engine shares: the player codes and the hashing of
information and public states (see `protocol`)."""

from typing import NamedTuple

from llvmlite import ir
import numba
import numpy as np
from numba import njit
from numba import types
from numba.extending import intrinsic

CHANCE = -1
TERMINAL = -2


_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


# The decorator of every engine's protocol functions and of the helpers they
# call out of line (not inlined): they take the arrays params and state (or
# words), and numba's code made four out-of-line NRT_incref/NRT_decref calls
# a call for them, even on a kernel's borrowed arrays (whose counts are
# null: each call only tests that). Compiled with _nrt=False they count no
# references; such a function must not allocate (numba refuses to compile
# one that does). BUILD_NOTES, "Streaming walks and exact CFR on engines".
# forceinline is set either way, so that a function never inherits it from
# the caller that first compiles it (numba's flags inheritance).
engine_function = njit(cache=True, _nrt=False, forceinline=False)

# A protocol function that a walk calls at nearly every node and that is too
# large for LLVM's inliner (goofspiel's `terminal_value`, once per leaf):
# LLVM inlines it into every kernel that calls it (`alwaysinline`). numba
# types it once, as an engine_function; only LLVM copies its machine code.
# BUILD_NOTES, "Streaming walks and exact CFR on engines".
inlined_engine_function = njit(cache=True, _nrt=False, forceinline=True)

# mix64 and hash_step are LLVM intrinsics, not inlined numba functions: an
# engine calls hash_step up to ten times in one move, and each numba inline
# is typed again in every kernel that plays the engine (first-use compile
# time), while a plain call is not inlined by LLVM (a call per step).


def _as_uint64(builder, value, value_type):
  """An integer argument as 64 bits, as np.uint64(value) converts it."""
  if value_type.bitwidth < 64:
    extend = builder.sext if value_type.signed else builder.zext
    return extend(value, ir.IntType(64))
  return value


def _mix64_ir(builder, z):
  """SplitMix64's finalizer on an i64 value, emitted inline."""
  i64 = ir.IntType(64)
  for shift, multiplier in ((30, _M1), (27, _M2)):
    z = builder.mul(builder.xor(z, builder.lshr(z, ir.Constant(i64, shift))),
                    ir.Constant(i64, int(multiplier)))
  return builder.xor(z, builder.lshr(z, ir.Constant(i64, 31)))


@intrinsic
def mix64(typingctx, z):  # pylint: disable=unused-argument
  """SplitMix64's finalizer, a bijection of uint64 (for engines' hashes):
  z ^= z >> 30; z *= M1; z ^= z >> 27; z *= M2; z ^= z >> 31."""
  if not isinstance(z, types.Integer):
    return None

  def codegen(context, builder, signature, args):  # pylint: disable=unused-argument
    return _mix64_ir(builder, _as_uint64(builder, args[0], signature.args[0]))

  return types.uint64(z), codegen


@intrinsic
def hash_step(typingctx, h, value):  # pylint: disable=unused-argument
  """The running hash h extended by one integer `value` (order matters):
  mix64(h ^ (uint64(value) + GOLDEN + (h << 6) + (h >> 2)))."""
  if not (isinstance(h, types.Integer) and isinstance(value, types.Integer)):
    return None

  def codegen(context, builder, signature, args):  # pylint: disable=unused-argument
    i64 = ir.IntType(64)
    h64 = _as_uint64(builder, args[0], signature.args[0])
    v64 = _as_uint64(builder, args[1], signature.args[1])
    x = builder.add(v64, ir.Constant(i64, int(_GOLDEN)))
    x = builder.add(x, builder.shl(h64, ir.Constant(i64, 6)))
    x = builder.add(x, builder.lshr(h64, ir.Constant(i64, 2)))
    return _mix64_ir(builder, builder.xor(h64, x))

  return types.uint64(h, value), codegen


@engine_function
def hash_words(words, count, seed):
  """(uint64, uint64): two independent 64-bit hashes of words[:count], never
  (0, 0); engines without incremental hashes call this on an exact
  encoding of the information state."""
  a = np.uint64(seed) + np.uint64(0x243F6A8885A308D3)
  b = np.uint64(seed) + np.uint64(0x13198A2E03707344)
  for k in range(count):
    a = hash_step(a, words[k])
    b = hash_step(b, words[k] ^ 0x5A5A5A5A)
  if a == 0 and b == 0:
    a = np.uint64(1)
  return a, b


@engine_function
def hash_range(words, start, stop, a, b):
  """The running pair (a, b) (`hash_words`' two streams) extended by
  words[start:stop]; an engine's `situation_hash` folds state words so."""
  for k in range(start, stop):
    a = hash_step(a, words[k])
    b = hash_step(b, words[k] ^ 0x5A5A5A5A)
  return a, b


def call_literal(function, code, *args):
  """`function(code, *args)` for an njit function that makes `code` literal
  (`numba.literally`, as the protocol and the kernels do), called from
  Python.

  A plain call retypes the function at every call from Python (numba tries
  the non-literal signature first and fails), 10-500 ms a call, seconds for
  a kernel that inlines an engine; this compiles (or loads from numba's
  cache) the literal signature directly the first time and then calls the
  compiled overload.
  """
  key = (types.literal(code),) + tuple(numba.typeof(a) for a in args)
  compiled = function.overloads.get(key)
  if compiled is None:
    function.compile(key)
    compiled = function.overloads[key]
  return compiled.entry_point(code, *args)


class Engine(NamedTuple):
  """A native engine for one game instance (see `protocol`).

  Attributes:
    name: OpenSpiel's short name of the game it plays (e.g. "goofspiel";
      "tree" for a compiled tree): its line in `registry.ENGINES`.
    code: the engine's code in `registry.ENGINES` (the kernels' dispatch).
    params: int64 array of the instance's parameters, the engine's layout.
    state_size: length of a state array.
    max_moves: the largest number of legal actions or chance outcomes.
    max_depth: the largest number of moves on a root-to-terminal path.
    utility_sum: u0 + u1 at every terminal (0 for zero-sum games).
    game: the `pyspiel.Game` it plays (as `games.load_game` returns it).
  """
  name: str
  code: int
  params: np.ndarray
  state_size: int
  max_moves: int
  max_depth: int
  utility_sum: float
  game: object

  def new_state(self):
    """The initial state (int64[state_size])."""
    from mccfrb.games.engines import protocol  # pylint: disable=import-outside-toplevel
    state = np.zeros(self.state_size, dtype=np.int64)
    protocol.reset(self.code, self.params, state)
    return state
