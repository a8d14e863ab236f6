"""The engine protocol: a game written in numba, with no tree in memory.

A native engine plays one OpenSpiel game (after `games.load_game`: the
turn-based form of a simultaneous game) move by move. Kernels are written
against the functions below and never against one engine: each takes the
engine's integer `code` first and dispatches on it. Kernels call them with
a `code` that numba sees as a compile-time constant (`numba.literally`),
so a kernel is compiled (and cached) per engine, and each call types as
that engine's own function alone: the functions below are numba
`overload`s that pick the engine's function from the literal code while
typing, so a kernel compiles one engine's code, not five. A code that is
not a constant is a typing error.

The engines' own functions are plain njit functions, never inlined by
numba, and LLVM does not inline them either (in `replay`'s machine code
for goofspiel, `reset` and `apply` are calls), except those an engine
declares with `common.inlined_engine_function` (LLVM's `alwaysinline`;
numba still types them once): goofspiel's `terminal_value`, called once
per leaf by the streaming walks. The overloads below are `alwaysinline`
too, so a kernel calls the engine's function itself. Inlining every engine
function in numba (`inline="always"`) made numba type every engine's code
at every call site, and the first use of external sampling on an engine
took about 220 s; the dispatch by branches with the engines' functions not
inlined took about 20 s and ran 2-4% fewer iterations a second on
goofspiel 6 than the inlined form. The overloads compile the engine in use
only, and run about 2% faster than the dispatch by branches on goofspiel 6
(BUILD_NOTES, "Compiles of the engine kernels" and "The engine protocol as
overloads").

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
  situation_hash(code, params, state)       (uint64, uint64): the key of
                                            the situation, what the rest
                                            of the game depends on:
                                            histories with equal keys have
                                            equal legal moves and equal
                                            returns under equal
                                            continuations, and no key
                                            repeats along a history
                                            (baselines keyed by it,
                                            kernels/baselines.py)

To add an engine for a game: write a module in `mccfrb/games/engines/` with
the eleven functions (decorated `@common.engine_function`: njit, cached,
not inlined, no reference counts, so no allocation; no globals but
constants), its `NAME`, `CODE = registry.code(NAME)` and a
`make_engine(game)` that returns its `Engine`, and add its line to
`registry.ENGINES`; the codes, the constants below, `MODULES` and
`engine_names()` follow from that table. `engines/check.py` then proves
it equal to OpenSpiel (the enumerated tree equals the compiled tree on
small instances; random play-outs agree with pyspiel step by step).
"""

import numba
from numba import njit
from numba.core import types
from numba.extending import overload

from mccfrb.games.engines import registry
from mccfrb.games.engines.common import CHANCE  # pylint: disable=unused-import
from mccfrb.games.engines.common import TERMINAL  # pylint: disable=unused-import

# Engine name -> code, and code -> module, from the one table
# (registry.ENGINES); and a constant per engine, its name in capitals, for
# callers from Python (GOOFSPIEL, TREE for a compiled tree, ...).
CODES = dict(registry.CODES)
MODULES = {e.code: registry.module(e) for e in registry.ENGINES}
globals().update({name.upper(): code for name, code in CODES.items()})


def _protocol_function(name):
  """The protocol function `name`. In a kernel, numba types a call with a
  literal engine code as that engine's own function, so that the kernel
  compiles one engine's code; any other code is a typing error. From
  Python it calls the engine's own function."""

  def function(code, params, state, *args):
    return getattr(MODULES[code], name)(params, state, *args)

  function.__name__ = function.__qualname__ = name

  @overload(function, prefer_literal=True, jit_options={"forceinline": True})
  def typed(code, params, state, *args):  # pylint: disable=unused-argument
    if (isinstance(code, types.IntegerLiteral)
        and code.literal_value in MODULES):
      own = getattr(MODULES[code.literal_value], name)

      def own_engine(code, params, state, *args):  # pylint: disable=unused-argument
        return own(params, state, *args)

      return own_engine

    if isinstance(code, types.IntegerLiteral):
      raise numba.core.errors.TypingError(
          f"protocol.{name}: no engine has code {code.literal_value} "
          f"(MODULES: {sorted(MODULES)}).")
    raise numba.core.errors.TypingError(
        f"protocol.{name}: the engine code must be a compile-time "
        f"constant (numba.literally(code) in the kernel), got {code}.")

  return function


reset = _protocol_function("reset")
player = _protocol_function("player")
num_moves = _protocol_function("num_moves")
move_action = _protocol_function("move_action")
chance_prob = _protocol_function("chance_prob")
apply = _protocol_function("apply")
terminal_value = _protocol_function("terminal_value")
returns0 = _protocol_function("returns0")
infoset_hash = _protocol_function("infoset_hash")
public_hash = _protocol_function("public_hash")
situation_hash = _protocol_function("situation_hash")


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
