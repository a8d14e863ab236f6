"""Random numbers inside kernels: numpy's PCG64 inline, and counter streams.

`pcg64_uniform` is numpy's `Generator(PCG64).random()` written out, bit for
bit (O'Neill 2014, PCG-XSL-RR 128/64, as numpy's pcg64.h: advance the
128-bit LCG, then output), so a kernel draws the solver's generator without
a call through numpy's function pointer. The state travels as uint64[4]
(state high, state low, increment high, increment low): `pcg64_state` and
`set_pcg64_state` convert from and to the generator.

`stream_start` / `stream_uniform` are SplitMix64 (Steele, Lea, Flood 2014):
a counter-based stream per (key, index), for episodes run in parallel;
`batch_key` draws a batch's key and `batch_end` says where a batch ends.
"""

from llvmlite import ir
import numpy as np
from numba import njit
from numba import types
from numba.extending import intrinsic

_MULT_HI = np.uint64(2549297995355413924)  # PCG_DEFAULT_MULTIPLIER_128
_MULT_LO = np.uint64(4865540595714422341)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_TO_UNIT = 1.0 / 9007199254740992.0  # 2^-53, as numpy's next_double
_MASK64 = (1 << 64) - 1


@intrinsic
def _mul_hi(typingctx, a, b):
  """The high 64 bits of the 128-bit product of two uint64."""
  sig = types.uint64(types.uint64, types.uint64)

  def codegen(context, builder, signature, args):
    wide = ir.IntType(128)
    product = builder.mul(builder.zext(args[0], wide),
                          builder.zext(args[1], wide))
    return builder.trunc(builder.lshr(product, ir.Constant(wide, 64)),
                         ir.IntType(64))

  return sig, codegen


@njit(cache=True, error_model="numpy")
def pcg64_next(s_hi, s_lo, i_hi, i_lo):
  """One step of numpy's PCG64: (new state high, new state low, uniform).

  state <- state * multiplier + increment (mod 2^128); the output is the
  XSL-RR permutation of the new state, and the uniform its top 53 bits
  times 2^-53, as numpy's `random()`.
  """
  lo = s_lo * _MULT_LO
  hi = _mul_hi(s_lo, _MULT_LO) + s_lo * _MULT_HI + s_hi * _MULT_LO
  new_lo = lo + i_lo
  carry = np.uint64(1) if new_lo < lo else np.uint64(0)
  new_hi = hi + i_hi + carry
  x = new_hi ^ new_lo
  rot = new_hi >> np.uint64(58)
  out = (x >> rot) | (x << ((np.uint64(64) - rot) & np.uint64(63)))
  return new_hi, new_lo, float(out >> np.uint64(11)) * _TO_UNIT


def pcg64_state(generator):
  """uint64[4] state of a `np.random.Generator` over PCG64, for kernels."""
  state = generator.bit_generator.state
  if state["bit_generator"] != "PCG64":
    raise ValueError("kernels draw numpy's PCG64 inline; got a "
                     f"{state['bit_generator']} generator.")
  s, inc = state["state"]["state"], state["state"]["inc"]
  return np.array([s >> 64, s & _MASK64, inc >> 64, inc & _MASK64],
                  dtype=np.uint64)


def set_pcg64_state(generator, words):
  """Writes a kernel's uint64[4] state back into the generator."""
  state = generator.bit_generator.state
  hi, lo, inc_hi, inc_lo = (int(w) for w in words)
  state["state"] = {"state": (hi << 64) | lo, "inc": (inc_hi << 64) | inc_lo}
  generator.bit_generator.state = state


@njit(cache=True, error_model="numpy")
def _mix64(z):
  """SplitMix64's finalizer: a bijection of uint64."""
  z = (z ^ (z >> np.uint64(30))) * _MIX1
  z = (z ^ (z >> np.uint64(27))) * _MIX2
  return z ^ (z >> np.uint64(31))


@njit(cache=True, error_model="numpy")
def stream_start(key, index):
  """The first state of the counter-based stream `index` under `key`."""
  return _mix64(np.uint64(key) ^ _mix64(np.uint64(index) + _GOLDEN))


@njit(cache=True, error_model="numpy")
def stream_uniform(state):
  """(next state, uniform in [0, 1) with 53 random bits): SplitMix64."""
  state = state + _GOLDEN
  return state, float(_mix64(state) >> np.uint64(11)) * _TO_UNIT


@njit(cache=True, error_model="numpy")
def batch_key(rng_state):
  """A batch's stream key: 53 bits of one draw of the PCG64 `rng_state`
  (advanced in place)."""
  s_hi, s_lo, u = pcg64_next(rng_state[0], rng_state[1], rng_state[2],
                             rng_state[3])
  rng_state[0] = s_hi
  rng_state[1] = s_lo
  return np.uint64(u * 9007199254740992.0)


@njit(cache=True, error_model="numpy")
def batch_end(first, batch, last):
  """The last iteration of the batch that starts at `first`: the next
  multiple of `batch`, or `last` (a batch never spans two calls)."""
  return min(((first - 1) // batch + 1) * batch, last)
