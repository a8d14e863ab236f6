"""The engine protocol: a game written in numba, with no tree in memory.

A native engine plays one OpenSpiel game (after `games.load_game`: the
turn-based form of a simultaneous game) move by move. Kernels are written
against the functions below and never against one engine: each takes the
engine's integer `code` first and dispatches on it. Kernels call them with
a `code` that numba sees as a compile-time constant (`numba.literally`),
so the branches of the other engines are compiled away and a kernel is
specialised per engine, with a cache entry per engine.

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

To add an engine for a game: write a module in `mccfrb/engines/` with the
nine functions (njit, cache=True, no globals but constants), give it a code
in `CODES`, add a branch to each dispatcher below, and an `Engine` factory
in `mccfrb/engines/__init__.py`; `tests/test_engines.py` then proves it equal
to OpenSpiel (the enumerated tree equals the compiled tree on small
instances; random play-outs agree with pyspiel step by step).
"""

import numba
from numba import njit

from mccfrb.engines import goofspiel
from mccfrb.engines import liars_dice

from mccfrb.engines.common import CHANCE  # pylint: disable=unused-import
from mccfrb.engines.common import TERMINAL  # pylint: disable=unused-import

GOOFSPIEL = 1
LIARS_DICE = 2
CODES = {"goofspiel": GOOFSPIEL, "liars_dice": LIARS_DICE}


@njit(cache=True)
def reset(code, params, state):
  numba.literally(code)
  if code == GOOFSPIEL:
    goofspiel.reset(params, state)
  else:
    liars_dice.reset(params, state)


@njit(cache=True)
def player(code, params, state):
  numba.literally(code)
  if code == GOOFSPIEL:
    return goofspiel.player(params, state)
  return liars_dice.player(params, state)


@njit(cache=True)
def num_moves(code, params, state):
  numba.literally(code)
  if code == GOOFSPIEL:
    return goofspiel.num_moves(params, state)
  return liars_dice.num_moves(params, state)


@njit(cache=True)
def move_action(code, params, state, j):
  numba.literally(code)
  if code == GOOFSPIEL:
    return goofspiel.move_action(params, state, j)
  return liars_dice.move_action(params, state, j)


@njit(cache=True)
def chance_prob(code, params, state, j):
  numba.literally(code)
  if code == GOOFSPIEL:
    return goofspiel.chance_prob(params, state, j)
  return liars_dice.chance_prob(params, state, j)


@njit(cache=True)
def apply(code, params, state, j):
  numba.literally(code)
  if code == GOOFSPIEL:
    goofspiel.apply(params, state, j)
  else:
    liars_dice.apply(params, state, j)


@njit(cache=True)
def returns0(code, params, state):
  numba.literally(code)
  if code == GOOFSPIEL:
    return goofspiel.returns0(params, state)
  return liars_dice.returns0(params, state)


@njit(cache=True)
def infoset_hash(code, params, state, p):
  numba.literally(code)
  if code == GOOFSPIEL:
    return goofspiel.infoset_hash(params, state, p)
  return liars_dice.infoset_hash(params, state, p)


@njit(cache=True)
def public_hash(code, params, state):
  numba.literally(code)
  if code == GOOFSPIEL:
    return goofspiel.public_hash(params, state)
  return liars_dice.public_hash(params, state)
