"""Shared fixtures: the games every test suite checks, and table checks."""

import hashlib

import numpy as np
import pytest

GOOFSPIEL4 = ("goofspiel(num_cards=4,imp_info=True,points_order=random,"
              "returns_type=point_difference)")
GAMES = ("kuhn_poker", "leduc_poker", GOOFSPIEL4, "matching_pennies")


@pytest.fixture(params=GAMES)
def game_name(request):
  return request.param


def table_digest(solver):
  """The first 16 hex digits of the sha256 of every table a solver saves, in
  `_table_names` order: a bit-for-bit fingerprint of its state."""
  digest = hashlib.sha256()
  for name in solver._table_names:  # pylint: disable=protected-access
    digest.update(np.ascontiguousarray(getattr(solver, name)).tobytes())
  return digest.hexdigest()[:16]


def assert_same_tables(a, b):
  """Every saved table of two solvers equal bit for bit."""
  for name in a._table_names:  # pylint: disable=protected-access
    np.testing.assert_array_equal(getattr(a, name), getattr(b, name),
                                  err_msg=name)
