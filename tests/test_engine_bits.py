"""The engines' bit helpers (LLVM intrinsics) against pure-Python references:
the hashes key every hashed table and checkpoint, so a changed bit would
change what a saved run loads."""

import numba
import numpy as np

from mccfrb.games.engines import common
from mccfrb.games.engines import goofspiel

MASK = (1 << 64) - 1


def _mix64(z):
  z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
  z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
  return z ^ (z >> 31)


def _hash_step(h, value):
  return _mix64(h ^ ((value + 0x9E3779B97F4A7C15 + (h << 6) + (h >> 2))
                     & MASK))


@numba.njit
def _hashes(h, v, out):
  for k in range(h.shape[0]):
    out[k, 0] = common.mix64(h[k])
    out[k, 1] = common.hash_step(h[k], v[k])           # int64 value
    out[k, 2] = common.hash_step(h[k], np.int32(v[k] % 65536 - 40000))
    out[k, 3] = common.hash_step(h[k], np.uint64(v[k]))
    out[k, 4] = common.hash_step(h[k], 7)               # a literal


def test_hash_step_and_mix64_are_the_reference_formulas():
  rng = np.random.default_rng(0)
  h = rng.integers(0, 2**64 - 1, size=500, dtype=np.uint64, endpoint=True)
  v = rng.integers(-2**63, 2**63 - 1, size=500, dtype=np.int64)
  out = np.zeros((500, 5), dtype=np.uint64)
  _hashes(h, v, out)
  for k in range(500):
    hk, vk = int(h[k]), int(v[k])
    small = (vk % 65536 - 40000) & MASK  # np.uint64 of a negative int32
    assert int(out[k, 0]) == _mix64(hk)
    assert int(out[k, 1]) == _hash_step(hk, vk & MASK)
    assert int(out[k, 2]) == _hash_step(hk, small)
    assert int(out[k, 3]) == _hash_step(hk, vk & MASK)
    assert int(out[k, 4]) == _hash_step(hk, 7)


@numba.njit
def _selects(masks, out):
  k = 0
  for m in masks:
    for j in range(goofspiel._popcount(m)):  # pylint: disable=protected-access
      out[k] = goofspiel._select(m, j)  # pylint: disable=protected-access
      k += 1
  return k


def test_select_is_the_position_of_the_jth_set_bit():
  rng = np.random.default_rng(1)
  masks = rng.integers(-2**63, 2**63 - 1, size=300, dtype=np.int64)
  masks[:100] &= (1 << 13) - 1  # Goofspiel's hands; the rest dark_hex's words.
  masks[100] = -1  # All 64 bits, the sign bit included.
  out = np.zeros(300 * 64, dtype=np.int64)
  count = _selects(masks, out)
  expected = [b for m in masks for b in range(64) if (int(m) & MASK) >> b & 1]
  assert out[:count].tolist() == expected
