"""Native game engines in numba: games played without a compiled tree.

`engine_for(game)` gives the `Engine` of a loaded game, or None when no
engine plays it; `protocol` is what kernels call and how to add a game.
"""

from mccfrb.games.engines.common import Engine
from mccfrb.games.engines import dark_hex
from mccfrb.games.engines import goofspiel
from mccfrb.games.engines import liars_dice
from mccfrb.games.engines import phantom_ttt

# OpenSpiel short name -> the module whose `make_engine(game)` builds it.
_MODULES = {"goofspiel": goofspiel, "liars_dice": liars_dice,
            "dark_hex": dark_hex, "phantom_ttt": phantom_ttt}


def engine_names():
  """The OpenSpiel short names that have an engine."""
  return sorted(_MODULES)


def engine_for(game):
  """The `Engine` of `game` (a pyspiel.Game from `games.load_game`), or None
  if no engine plays it.

  Raises:
    ValueError: the game has an engine but not for these parameter values
      (the message names the value and what the engine accepts).
  """
  name = game.get_type().short_name
  if name == "turn_based_simultaneous_game":
    name = game.get_parameters()["game"]["name"]
  module = _MODULES.get(name)
  if module is None:
    return None
  return module.make_engine(game)


__all__ = ["Engine", "engine_for", "engine_names"]
