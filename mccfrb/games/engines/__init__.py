"""Native game engines in numba: games played without a compiled tree.

`engine_for(game)` gives the `Engine` of a loaded game, or None when no
engine plays it; `engine_names()` names the games that have one;
`registry.ENGINES` is the one table of engines, `protocol` what kernels
call and how to add a game.
"""

from mccfrb.games.engines import protocol
from mccfrb.games.engines import registry
from mccfrb.games.engines.common import Engine


def engine_names():
  """OpenSpiel's short names of the games that have an engine, sorted."""
  return registry.game_names()


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
  if name not in engine_names():
    return None
  return protocol.MODULES[registry.code(name)].make_engine(game)


__all__ = ["Engine", "engine_for", "engine_names"]
