"""The engine protocol: a game written in numba, with no tree in memory.

A native engine plays one OpenSpiel game (after `games.load_game`: the
turn-based form of a simultaneous game) move by move. Kernels are written
against the functions below and never against one engine: each takes the
engine's integer `code` first and dispatches on it. Kernels call them with
a `code` that numba sees as a compile-time constant (`numba.literally`),
so a kernel is compiled (and cached) per engine; the dispatchers are
inlined into it, where the engine's branch is the only one taken.

The engines' own functions are plain njit functions, never inlined by
numba: each call site of a dispatcher then types five calls of functions
typed once per process (and cached on disk), instead of five engines'
bodies; LLVM still inlines the engine's functions into the machine code
where it pays. Inlining them would make numba type every engine's code
at every call site: the first use of external sampling on an engine
compiles in about 20 s this way and in about 220 s that way; this way
runs 2-4% fewer iterations a second on goofspiel 6 (BUILD_NOTES,
"Compiles of the engine kernels").

A compiled `GameTree` is an implementation too (engines/compiled.py, code
TREE), so every engine kernel also runs on a compiled tree.

State: an int64 array of `Engine.state_size` entries that the engine owns
(cards, bids, running hashes...). `params`: an int64 array of the game's
parameters (`Engine.params`). Moves are indices j in [0, num_moves): the
j-th legal action in OpenSpiel's order at a decision, the j-th chance
outcome (OpenSpiel's `chance_outcomes()` order) at chance; `move_action`
gives its OpenSpiel action id.

  reset(code, params, state)                the initial state, in place
  player(code, params, state) -> int64      >= 0 acting player, CHANCE, or
                                            TERMINAL
  num_moves(code, params, state) -> int64   legal actions / chance outcomes
  move_action(code, params, state, j)       OpenSpiel's action id of move j
  chance_prob(code, params, state, j)       probability of outcome j
  apply(code, params, state, j)             plays move j, in place
  returns0(code, params, state) -> float64  player 0's return (terminal)
  terminal_value(code, params, state, j)    (True, player 0's return) if
                                            move j ends the game and the
                                            engine can tell without
                                            playing it (exact walks skip
                                            the move), else (False, 0.0)
  infoset_hash(code, params, state, p)      (uint64, uint64): the 128-bit
                                            key of player p's information
                                            state; equal exactly when
                                            OpenSpiel's information state
                                            strings are equal (never (0, 0))
  public_hash(code, params, state)          (uint64, uint64): the key of
                                            the public state; histories
                                            with equal keys have the same
                                            acting player, and an infoset
                                            lies inside one public state

To add an engine for a game: write a module in `mccfrb/games/engines/` with
the ten functions (njit, cache=True, not inlined, no globals but
constants), give it a code in `CODES`, add a branch to each dispatcher
below, and an `Engine` factory in `mccfrb/games/engines/__init__.py`;
`engines/check.py` then proves it equal to OpenSpiel (the enumerated tree
equals the compiled tree on small instances; random play-outs agree with
pyspiel step by step).
"""

import numba
from numba import njit

from mccfrb.games.engines import compiled
from mccfrb.games.engines import dark_hex
from mccfrb.games.engines import goofspiel
from mccfrb.games.engines import liars_dice
from mccfrb.games.engines import phantom_ttt

from mccfrb.games.engines.common import CHANCE  # pylint: disable=unused-import
from mccfrb.games.engines.common import TERMINAL  # pylint: disable=unused-import

GOOFSPIEL = 1
LIARS_DICE = 2
TREE = 3  # A compiled tree (engines/compiled.py).
PHANTOM_TTT = 4
DARK_HEX = 5
CODES = {"goofspiel": GOOFSPIEL, "liars_dice": LIARS_DICE,
         compiled.NAME: TREE, "dark_hex": DARK_HEX,
         "phantom_ttt": PHANTOM_TTT}


@njit(cache=True, inline="always")
def reset(code, params, state):
  if code == TREE:
    compiled.reset(params, state)
  elif code == GOOFSPIEL:
    goofspiel.reset(params, state)
  elif code == DARK_HEX:
    dark_hex.reset(params, state)
  elif code == PHANTOM_TTT:
    phantom_ttt.reset(params, state)
  else:
    liars_dice.reset(params, state)


@njit(cache=True, inline="always")
def player(code, params, state):
  if code == TREE:
    return compiled.player(params, state)
  if code == GOOFSPIEL:
    return goofspiel.player(params, state)
  if code == DARK_HEX:
    return dark_hex.player(params, state)
  if code == PHANTOM_TTT:
    return phantom_ttt.player(params, state)
  return liars_dice.player(params, state)


@njit(cache=True, inline="always")
def num_moves(code, params, state):
  if code == TREE:
    return compiled.num_moves(params, state)
  if code == GOOFSPIEL:
    return goofspiel.num_moves(params, state)
  if code == DARK_HEX:
    return dark_hex.num_moves(params, state)
  if code == PHANTOM_TTT:
    return phantom_ttt.num_moves(params, state)
  return liars_dice.num_moves(params, state)


@njit(cache=True, inline="always")
def move_action(code, params, state, j):
  if code == TREE:
    return compiled.move_action(params, state, j)
  if code == GOOFSPIEL:
    return goofspiel.move_action(params, state, j)
  if code == DARK_HEX:
    return dark_hex.move_action(params, state, j)
  if code == PHANTOM_TTT:
    return phantom_ttt.move_action(params, state, j)
  return liars_dice.move_action(params, state, j)


@njit(cache=True, inline="always")
def chance_prob(code, params, state, j):
  if code == TREE:
    return compiled.chance_prob(params, state, j)
  if code == GOOFSPIEL:
    return goofspiel.chance_prob(params, state, j)
  if code == DARK_HEX:
    return dark_hex.chance_prob(params, state, j)
  if code == PHANTOM_TTT:
    return phantom_ttt.chance_prob(params, state, j)
  return liars_dice.chance_prob(params, state, j)


@njit(cache=True, inline="always")
def apply(code, params, state, j):
  if code == TREE:
    compiled.apply(params, state, j)
  elif code == GOOFSPIEL:
    goofspiel.apply(params, state, j)
  elif code == DARK_HEX:
    dark_hex.apply(params, state, j)
  elif code == PHANTOM_TTT:
    phantom_ttt.apply(params, state, j)
  else:
    liars_dice.apply(params, state, j)


@njit(cache=True, inline="always")
def terminal_value(code, params, state, j):
  if code == TREE:
    return compiled.terminal_value(params, state, j)
  if code == GOOFSPIEL:
    return goofspiel.terminal_value(params, state, j)
  if code == DARK_HEX:
    return dark_hex.terminal_value(params, state, j)
  if code == PHANTOM_TTT:
    return phantom_ttt.terminal_value(params, state, j)
  return liars_dice.terminal_value(params, state, j)


@njit(cache=True, inline="always")
def returns0(code, params, state):
  if code == TREE:
    return compiled.returns0(params, state)
  if code == GOOFSPIEL:
    return goofspiel.returns0(params, state)
  if code == DARK_HEX:
    return dark_hex.returns0(params, state)
  if code == PHANTOM_TTT:
    return phantom_ttt.returns0(params, state)
  return liars_dice.returns0(params, state)


@njit(cache=True, inline="always")
def infoset_hash(code, params, state, p):
  if code == TREE:
    return compiled.infoset_hash(params, state, p)
  if code == GOOFSPIEL:
    return goofspiel.infoset_hash(params, state, p)
  if code == DARK_HEX:
    return dark_hex.infoset_hash(params, state, p)
  if code == PHANTOM_TTT:
    return phantom_ttt.infoset_hash(params, state, p)
  return liars_dice.infoset_hash(params, state, p)


@njit(cache=True, inline="always")
def public_hash(code, params, state):
  if code == TREE:
    return compiled.public_hash(params, state)
  if code == GOOFSPIEL:
    return goofspiel.public_hash(params, state)
  if code == DARK_HEX:
    return dark_hex.public_hash(params, state)
  if code == PHANTOM_TTT:
    return phantom_ttt.public_hash(params, state)
  return liars_dice.public_hash(params, state)


@njit(cache=True)
def replay(code, params, state, actions):
  """Resets `state` and plays the OpenSpiel action ids `actions` (a
  history); returns the index of the first action that is not a legal
  move, or -1 when all were played."""
  numba.literally(code)
  reset(code, params, state)
  for k in range(actions.shape[0]):
    if player(code, params, state) == TERMINAL:
      return k
    found = -1
    for j in range(num_moves(code, params, state)):
      if move_action(code, params, state, j) == actions[k]:
        found = j
        break
    if found < 0:
      return k
    apply(code, params, state, found)
  return -1
