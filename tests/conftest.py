"""Shared fixtures: the games every test suite checks."""

import pytest

GOOFSPIEL4 = ("goofspiel(num_cards=4,imp_info=True,points_order=random,"
              "returns_type=point_difference)")
GAMES = ("kuhn_poker", "leduc_poker", GOOFSPIEL4, "matching_pennies")


@pytest.fixture(params=GAMES)
def game_name(request):
  return request.param
