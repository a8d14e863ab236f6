"""The one table of engines: every engine's code, name and module.

`protocol.CODES`, `protocol.MODULES`, the constants `protocol.GOOFSPIEL`
... and each engine module's `CODE`, `engine_names()` and `engine_for`
are all derived from `ENGINES`; nothing else lists the engines. Adding an
engine is its module in `mccfrb/games/engines/` plus one line here (see
`protocol` for the functions the module defines).

A code is what the kernels dispatch on (a compile-time constant: numba
compiles and caches a kernel per code), so an engine keeps its code: a
new engine takes the next free one. This module imports no engine, so
that every engine module can read its own code from it.
"""

import importlib
from typing import NamedTuple


class Entry(NamedTuple):
  """One engine.

  Attributes:
    code: the kernels' dispatch code (unique, never reused).
    name: the engine's `NAME` and `Engine.name`: OpenSpiel's short name of
      the game it plays.
    module: the module in `mccfrb/games/engines/` (default: `name`).
    plays_a_game: False for the compiled tree (engines/compiled.py), an
      implementation of the protocol over any compiled game rather than an
      engine of one OpenSpiel game: `engine_names()` leaves it out.
  """
  code: int
  name: str
  module: str = ""
  plays_a_game: bool = True


ENGINES = (
    Entry(1, "goofspiel"),
    Entry(2, "liars_dice"),
    Entry(3, "tree", module="compiled", plays_a_game=False),
    Entry(4, "phantom_ttt"),
    Entry(5, "dark_hex"),
)

CODES = {e.name: e.code for e in ENGINES}


def code(name):
  """The code of the engine called `name` (KeyError if there is none)."""
  return CODES[name]


def game_names():
  """OpenSpiel's short names of the games that have an engine, sorted."""
  return sorted(e.name for e in ENGINES if e.plays_a_game)


def module(entry):
  """The module of `entry` (imported on first call)."""
  return importlib.import_module(f"{__package__}.{entry.module or entry.name}")
