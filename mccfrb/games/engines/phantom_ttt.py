"""OpenSpiel's `phantom_ttt` as a native engine (see `protocol`).

Tic-tac-toe where a player sees only its own marks and the opponent's
marks it bumped into (OpenSpiel 2.0.2, open_spiel/games/phantom_ttt):
player 0 plays x, player 1 plays o, cells 0..8 row by row. The legal
actions of the mover are the cells still empty in its own view, ascending
(move j is the j-th of them). A move on an empty cell of the board places
the mark; on a cell the opponent holds it fails, and the mover sees the
opponent's mark there. With gameversion=classical the mover keeps the turn
after a failure (until a move succeeds), with gameversion=abrupt the turn
passes after every move. The game ends when a player has a line (+1 to
it, -1 to the other) or the board holds 9 marks (0). Either version takes
at most 17 moves (OpenSpiel's MaxGameLength).

Information state strings: the player's view (3 rows), then with
obstype=reveal-numturns the number of moves so far, then the player's own
moves "p,a " (and with reveal-numturns "q,? " for each of the opponent's
moves, in order). A view cell changes only by the player's own move on it,
so the string is determined by, and determines, the sequence of tokens
(own move: cell and whether it succeeded; opponent move with
reveal-numturns: "?"). The key is that sequence, packed exactly (5 bits a
token: 2 * cell + success + 1 in 1..18, "?" = 19; up to 17 tokens, 12 in
the first word and the rest in the second, which also holds the player),
each word passed through the bijection `mix64`: equal keys exactly when the
strings are equal, with no hash collisions at all.

Public states (`public_hash`): what both players know, given the acting
player.
  - abrupt: the turn alternates at every move, so the number of moves is
    common knowledge (and gives the mover: player 0 after an even number).
  - classical, reveal-numturns: the strings show who moved at each step;
    the key is that sequence of movers and the mover (the mover knows
    whether its last move failed, the opponent does not: that is why the
    mover is part of the key, and why a public state here holds the
    mover's infosets, not necessarily the other player's).
  - classical, reveal-nothing: a player sees none of the opponent's
    failed attempts, so not even the number of moves is common knowledge;
    the mover knows the number of marks on the board (its own successes,
    twice, or twice plus one for player 1), which is the key (player 0
    moves when it is even). A failed move keeps the key, so these public
    states span several depths and a history and its child can share one:
    they are no public tree (public-state sampling's public states split
    them by the path they are reached on).
Every key is tagged with the mover (or terminal).

params (int64[NUM_PARAMS]): [abrupt (1) or classical (0), reveal-numturns
(1) or reveal-nothing (0)].

state (int64[STATE_SIZE]), cells as bit masks:
  PLAYER        acting player, or TERMINAL
  TURN          the player whose turn it is (tic-tac-toe's current player)
  STEP          moves so far
  MARKS         marks on the board
  RETURN0       player 0's return once terminal
  BOARD + p     player p's marks on the board
  VIEW + p      the cells player p has tried (its view's non-empty cells)
  ACTORS        bit t: the player who made move t
  KEY + 2p, +1  player p's packed token words (before mix64)
  NTOK + p      player p's tokens so far
"""

import numpy as np
from numba import njit

from mccfrb.games.engines import registry
from mccfrb.games.engines.common import Engine
from mccfrb.games.engines.common import TERMINAL
from mccfrb.games.engines.common import engine_function
from mccfrb.games.engines.common import mix64

NAME = "phantom_ttt"
CODE = registry.code(NAME)
GAME_VERSIONS = {"classical": 0, "abrupt": 1}
OBS_TYPES = {"reveal-nothing": 0, "reveal-numturns": 1}

NUM_CELLS = 9
MAX_DEPTH = 17  # OpenSpiel's MaxGameLength: 2 * 9 - 1.

# params
P_ABRUPT = 0
P_NUMTURNS = 1
NUM_PARAMS = 2

# state
PLAYER = 0
TURN = 1
STEP = 2
MARKS = 3
RETURN0 = 4
BOARD = 5  # BOARD + p
VIEW = 7  # VIEW + p
ACTORS = 9
KEY = 10  # KEY + 2 * p, KEY + 2 * p + 1
NTOK = 14  # NTOK + p
STATE_SIZE = 16

# Tokens in the first key word (5 bits each: 60 bits).
FIRST_WORD = 12
UNKNOWN = 19  # The "?" of an opponent's move (reveal-numturns).
_SEED_INFO = 0x6A09E667F3BCC908
_SEED_PUBLIC = 0x3C6EF372FE94F82B
_SEED_SITUATION = 0xA54FF53A5F1D36F1


@njit(cache=True, inline="always")
def _has_line(m):
  """True if the cell mask m holds a row, column or diagonal."""
  return ((m & 0x7) == 0x7 or (m & 0x38) == 0x38 or (m & 0x1C0) == 0x1C0
          or (m & 0x49) == 0x49 or (m & 0x92) == 0x92 or (m & 0x124) == 0x124
          or (m & 0x111) == 0x111 or (m & 0x54) == 0x54)


@engine_function
def reset(params, state):  # pylint: disable=unused-argument
  """The empty board, player 0 to move, in place."""
  for k in range(STATE_SIZE):
    state[k] = 0


@engine_function
def player(params, state):  # pylint: disable=unused-argument
  """The acting player (0 or 1) or TERMINAL."""
  return state[PLAYER]


@engine_function
def num_moves(params, state):  # pylint: disable=unused-argument
  """The cells still empty in the mover's view (0 at a terminal)."""
  p = state[PLAYER]
  if p == TERMINAL:
    return 0
  tried = state[VIEW + p]
  count = 0
  for c in range(NUM_CELLS):
    if (tried >> c) & 1 == 0:
      count += 1
  return count


@engine_function
def move_action(params, state, j):  # pylint: disable=unused-argument
  """The cell of move j: the j-th cell empty in the mover's view."""
  tried = state[VIEW + state[PLAYER]]
  for c in range(NUM_CELLS):
    if (tried >> c) & 1 == 0:
      if j == 0:
        return c
      j -= 1
  return -1


@engine_function
def chance_prob(params, state, j):  # pylint: disable=unused-argument
  """No chance nodes: never called by a walk."""
  return 0.0


@njit(cache=True, inline="always")
def _push(state, p, token):
  """Appends `token` to player p's packed key words."""
  n = state[NTOK + p]
  w = KEY + 2 * p if n < FIRST_WORD else KEY + 2 * p + 1
  state[w] = (state[w] << 5) | token
  state[NTOK + p] = n + 1


@engine_function
def apply(params, state, j):
  """Plays move j (the j-th cell empty in the mover's view), in place."""
  p = state[PLAYER]
  cell = move_action(params, state, j)
  bit = np.int64(1) << cell
  step = state[STEP]
  state[VIEW + p] |= bit
  state[ACTORS] |= np.int64(p) << step
  state[STEP] = step + 1
  success = 0
  if (state[BOARD + 1 - p] & bit) == 0:
    success = 1
    mine = state[BOARD + p] | bit
    state[BOARD + p] = mine
    state[MARKS] += 1
    if _has_line(mine):
      state[RETURN0] = 1 if p == 0 else -1
      state[PLAYER] = TERMINAL
    elif state[MARKS] == NUM_CELLS:
      state[PLAYER] = TERMINAL
    else:
      state[PLAYER] = 1 - p
  elif params[P_ABRUPT] == 1:
    state[PLAYER] = 1 - p
  state[TURN] = 1 - p if success == 1 or params[P_ABRUPT] == 1 else p
  _push(state, p, 2 * cell + success + 1)
  if params[P_NUMTURNS] == 1:
    _push(state, 1 - p, UNKNOWN)


@engine_function
def terminal_value(params, state, j):  # pylint: disable=unused-argument
  """(False, 0.0): the walk plays the move (see `protocol`)."""
  return False, 0.0


@engine_function
def returns0(params, state):  # pylint: disable=unused-argument
  """Player 0's return: +1 for x's line, -1 for o's, 0 on a full board."""
  return np.float64(state[RETURN0])


@engine_function
def infoset_hash(params, state, p):  # pylint: disable=unused-argument
  """(uint64, uint64): player p's token sequence, packed exactly, each word
  through `mix64` (a bijection; the second word is never 0)."""
  a = np.uint64(state[KEY + 2 * p]) ^ np.uint64(_SEED_INFO)
  b = np.uint64(state[KEY + 2 * p + 1]) | (np.uint64(p + 1) << np.uint64(60))
  return mix64(a), mix64(b)


@engine_function
def public_hash(params, state):
  """(uint64, uint64): the public state (see the module docstring): the
  number of moves (abrupt), the movers so far (classical,
  reveal-numturns) or the number of marks (classical, reveal-nothing);
  tagged with the mover or terminal."""
  if params[P_ABRUPT] == 1:
    x = state[STEP]
  elif params[P_NUMTURNS] == 1:
    x = (state[STEP] << 32) | state[ACTORS]
  else:
    x = state[MARKS]
  tag = 1 if state[PLAYER] == TERMINAL else 2 + state[PLAYER]
  return (mix64(np.uint64(x) ^ np.uint64(_SEED_PUBLIC)),
          mix64(np.uint64(tag)))


@engine_function
def situation_hash(params, state):  # pylint: disable=unused-argument
  """(uint64, uint64): the key of the situation, packed exactly: both
  players' marks on the board, both views (a player's legal moves are the
  cells its view leaves empty) and the acting player (or terminal); not
  the order of the moves."""
  x = (state[BOARD] | (state[BOARD + 1] << 9) | (state[VIEW] << 18)
       | (state[VIEW + 1] << 27) | ((state[PLAYER] + 2) << 36))
  return (mix64(np.uint64(x) ^ np.uint64(_SEED_SITUATION)),
          mix64(np.uint64(x) + np.uint64(_SEED_SITUATION)))


def make_engine(game):
  """The `Engine` of a `phantom_ttt` game.

  Args:
    game: phantom_ttt as `games.load_game` gives it, or a game string.

  Returns:
    An `Engine` (name "phantom_ttt", code `CODE`).

  Raises:
    ValueError: not phantom_ttt, or a gameversion or obstype OpenSpiel does
      not offer (OpenSpiel's own message; `load_game` refuses those games
      already).
  """
  # pylint: disable=import-outside-toplevel
  from mccfrb import games
  if isinstance(game, str):
    game = games.load_game(game)
  name = game.get_type().short_name
  if name != NAME:
    raise ValueError(f"{game} is not phantom_ttt; the phantom_ttt engine "
                     "plays phantom_ttt only.")
  values = game.get_parameters()
  version = values.get("gameversion", "classical")
  obs = values.get("obstype", "reveal-nothing")
  if version not in GAME_VERSIONS:
    raise ValueError(f"Unrecognized game version: {version} (OpenSpiel's "
                     f"error; phantom_ttt offers gameversion "
                     f"{' and '.join(GAME_VERSIONS)}).")
  if obs not in OBS_TYPES:
    raise ValueError(f"Unrecognized observation type: {obs} (OpenSpiel's "
                     f"error; phantom_ttt offers obstype "
                     f"{' and '.join(OBS_TYPES)}).")
  params = np.array([GAME_VERSIONS[version], OBS_TYPES[obs]], dtype=np.int64)
  return Engine(
      name=NAME,
      code=CODE,
      params=params,
      state_size=STATE_SIZE,
      max_moves=NUM_CELLS,
      max_depth=MAX_DEPTH,
      utility_sum=0.0,
      game=game)
