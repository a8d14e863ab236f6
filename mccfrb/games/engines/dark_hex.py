"""Dark hex as a native engine (see `protocol`).

The engine plays OpenSpiel's `dark_hex` move for move as OpenSpiel 2.0.2
does (tests/test_engine_dark_hex.py checks it against pyspiel), on any board
of num_rows x num_cols cells with num_rows, num_cols >= 2:

- Hex: black (player 0) connects the north and south rows, white (player 1)
  the west and east columns; cell = row * num_cols + col, and a cell's
  neighbours are north, north-east, east, south, south-west and west.
  Stones carry OpenSpiel's cell states (plain, connected to one of the
  player's edges, winning), kept up to date as OpenSpiel does: a stone
  connected to an edge flood-fills the plain stones of its group. The game
  ends when a stone connects both edges (+1 to its player, -1 to the other);
  a full board always has a winner.
- Dark: each player sees only the cells it tried (its "view"); its legal
  actions are the cells it has not tried, in increasing order. A try on an
  empty cell places a stone and passes the turn; a try on an opponent's
  stone shows that stone in the trier's view and, in classical dark hex
  (gameversion "cdh"), the same player moves again, in abrupt dark hex
  ("adh") the turn passes.
- Information state strings: the player's view, the number of moves so far
  (every try), and the player's own tries in order; with obstype
  "reveal-numturns" the opponent's tries show as "?" in their place among
  them. The view follows from the own tries and their results (stone placed
  or opponent's stone found), so the key is a running hash of (cell, result)
  per own try (and one "?" word per opponent try with reveal-numturns),
  folded with the number of moves.
- Public state: the acting player and the number of moves. The number of
  moves is in both players' strings; with "adh" the acting player follows
  from it, so the key is the common knowledge. With "cdh" the acting player
  is not common knowledge (a player does not see the opponent's failed
  tries, so its string does not tell whose turn it is), and a key without
  it would give one public state two acting players, which the protocol
  forbids: the key splits by the acting player, and every information
  state of the acting player (who knows it acts and the number of moves)
  still lies inside one.

OpenSpiel loads boards with one row or one column, but its hex never ends
there (a stone on a single row touches the north edge only): play reaches
states that are neither terminal nor have a legal action. The engine
refuses them.

Params layout (int64[NUM_PARAMS + 7 * cells]):
  P_ROWS, P_COLS, P_CELLS   board size
  P_VERSION                 CDH or ADH
  P_OBS                     REVEAL_NOTHING or REVEAL_NUMTURNS
  P_WORDS                   int64 words of a view, (cells + 63) // 64
  P_CELL + 7 * c, + 1..6    cell c's edges and neighbours (see P_CELL)

State layout (int64[S_BOARD + 2 * (cells + words) + 1]):
  S_PLAYER          acting player: 0, 1 or TERMINAL
  S_MOVES           moves (tries) since the root
  S_RESULT          +1 black won, -1 white won, 0 not over
  S_LEGAL + p       cells player p has not tried (its number of moves)
  S_KEYS + 2p, +1   player p's running information-state hash
  S_BOARD + c       OpenSpiel's cell state of cell c, c <= cells (the
                    last is past the board, always EMPTY: the neighbour
                    of border cells)
  view(p) + w       bit mask of the cells player p tried (bits past the
                    board set), view(p) = S_BOARD + cells + 1 + p * words
  stack             scratch of the flood fill (S_BOARD + cells + 1 +
                    2 * words, cells entries)
Move j is the j-th cell, in increasing order, that the mover has not tried.
"""

import numpy as np
from numba import njit

from mccfrb.games.engines import registry
from mccfrb.games.engines.common import Engine
from mccfrb.games.engines.common import TERMINAL
from mccfrb.games.engines.common import engine_function
from mccfrb.games.engines.common import hash_range
from mccfrb.games.engines.common import hash_step
from mccfrb.games.engines.common import mix64
from mccfrb.games.engines.goofspiel import _popcount  # pylint: disable=protected-access
from mccfrb.games.engines.goofspiel import _select  # pylint: disable=protected-access

NAME = "dark_hex"
CODE = registry.code(NAME)

# Params.
P_ROWS = 0
P_COLS = 1
P_CELLS = 2
P_VERSION = 3
P_OBS = 4
P_WORDS = 5  # int64 words of a view
P_CELL = 6  # + 7 * cell: the cell's edges and neighbours, below.
NUM_PARAMS = P_CELL  # + 7 * cells
# params[P_CELL + 7 * cell]: black's edge (1 north, 2 south) + 4 * white's
# (1 west, 2 east), tested as OpenSpiel does (a cell of the first row is
# north only); + 1 + k: neighbour k (north, north-east, east, south,
# south-west, west), or `cells` (an empty cell past the board) if none.

CDH = 0
ADH = 1
VERSIONS = {"cdh": CDH, "adh": ADH}
REVEAL_NOTHING = 0
REVEAL_NUMTURNS = 1
OBS_TYPES = {"reveal-nothing": REVEAL_NOTHING,
             "reveal-numturns": REVEAL_NUMTURNS}

# State.
S_PLAYER = 0
S_MOVES = 1
S_RESULT = 2
S_LEGAL = 3
S_KEYS = 5
S_BOARD = 9

# OpenSpiel's hex cell states.
EMPTY = 0
BLACK = 1
BLACK_SOUTH = 2
BLACK_NORTH = 3
BLACK_WIN = 4
WHITE = -1
WHITE_EAST = -2
WHITE_WEST = -3
WHITE_WIN = -4

# The second hash stream hashes every word xor this, as common.hash_words.
_SALT = 0x5A5A5A5A
# Seeds of the running hashes (hex digits of pi).
_KEY_SEED = ((0x0A4093822299F31D, 0x082EFA98EC4E6C89),
             (0x452821E638D01377, 0x3BE5466CF34E90C6))
_PUB_SEED = (0x243F6A8885A308D3, 0x13198A2E03707344)
_SITUATION_SEED = (0x2B7E151628AED2A6, 0xABF7158809CF4F3C)


@njit(cache=True, inline="always")
def _stone(params, state, p, cell):
  """OpenSpiel's cell state of a stone of player p put on empty `cell`
  (hex's PlayerAndActionToState): BLACK..BLACK_WIN, WHITE..WHITE_WIN."""
  at = P_CELL + 7 * cell
  edge = params[at]
  edge = (edge if p == 0 else edge >> 2) & 3
  first = edge == 1  # north (black) or west (white)
  second = edge == 2  # south or east
  want_first = BLACK_NORTH if p == 0 else WHITE_WEST
  want_second = BLACK_SOUTH if p == 0 else WHITE_EAST
  for k in range(1, 7):
    s = state[S_BOARD + params[at + k]]
    first |= s == want_first
    second |= s == want_second
  v = 4 if first and second else 3 if first else 2 if second else 1
  return np.int64(v if p == 0 else -v)


@njit(cache=True, inline="always")
def _cell(params, state, p, j):
  """The j-th cell, in increasing order, that player p has not tried."""
  words = params[P_WORDS]
  base = S_BOARD + params[P_CELLS] + 1 + p * words
  for w in range(words):
    free = ~state[base + w]
    c = _popcount(free)
    if j < c:
      return np.int64(64 * w + _select(free, j))
    j -= c
  return np.int64(-1)


@engine_function
def reset(params, state):
  """The initial state, in place."""
  n = params[P_CELLS]
  words = params[P_WORDS]
  state[S_PLAYER] = 0
  state[S_MOVES] = 0
  state[S_RESULT] = 0
  state[S_LEGAL] = n
  state[S_LEGAL + 1] = n
  for p in range(2):
    state[S_KEYS + 2 * p] = np.int64(np.uint64(_KEY_SEED[p][0]))
    state[S_KEYS + 2 * p + 1] = np.int64(np.uint64(_KEY_SEED[p][1]))
  for i in range(S_BOARD, S_BOARD + n + 1):
    state[i] = EMPTY
  # Cells past the board count as tried.
  view = S_BOARD + n + 1
  for w in range(words):
    tried = np.int64(0)
    if n < 64 * (w + 1):
      tried = np.int64(-1) << (n - 64 * w)
    state[view + w] = tried
    state[view + words + w] = tried


@engine_function
def player(params, state):  # pylint: disable=unused-argument
  """The acting player (0, 1) or TERMINAL."""
  return state[S_PLAYER]


@engine_function
def num_moves(params, state):  # pylint: disable=unused-argument
  """The cells the mover has not tried, 0 at terminals."""
  p = state[S_PLAYER]
  if p == TERMINAL:
    return np.int64(0)
  return state[S_LEGAL + p]


@engine_function
def move_action(params, state, j):
  """OpenSpiel's action of move j: the j-th untried cell of the mover."""
  return _cell(params, state, state[S_PLAYER], j)


@engine_function
def chance_prob(params, state, j):  # pylint: disable=unused-argument
  """Dark hex has no chance nodes."""
  return 0.0


@engine_function
def apply(params, state, j):
  """Plays move j (a try of the mover's j-th untried cell) in place."""
  n = params[P_CELLS]
  p = state[S_PLAYER]
  cell = _cell(params, state, p, j)
  view = S_BOARD + n + 1 + p * params[P_WORDS] + (cell >> 6)
  state[view] |= np.int64(1) << (cell & 63)
  state[S_LEGAL + p] -= 1
  state[S_MOVES] += 1
  nxt = 1 - p
  found = 0
  if state[S_BOARD + cell] == EMPTY:
    s = _stone(params, state, p, cell)
    state[S_BOARD + cell] = s
    if s == BLACK_WIN or s == WHITE_WIN:
      state[S_RESULT] = 1 if p == 0 else -1
      nxt = TERMINAL
    elif s != BLACK and s != WHITE:
      # Connected to an edge: so is the group of plain stones it joins.
      plain = BLACK if p == 0 else WHITE
      stack = S_BOARD + n + 1 + 2 * params[P_WORDS]
      state[stack] = cell
      top = 1
      while top > 0:
        top -= 1
        at = P_CELL + 7 * state[stack + top]
        for k in range(1, 7):
          m = params[at + k]
          if state[S_BOARD + m] == plain:
            state[S_BOARD + m] = s
            state[stack + top] = m
            top += 1
  else:
    found = 1
    if params[P_VERSION] == CDH:
      nxt = p
  state[S_PLAYER] = nxt
  word = 2 * cell + found + 1
  k = S_KEYS + 2 * p
  state[k] = np.int64(hash_step(np.uint64(state[k]), word))
  state[k + 1] = np.int64(hash_step(np.uint64(state[k + 1]), word ^ _SALT))
  if params[P_OBS] == REVEAL_NUMTURNS:
    k = S_KEYS + 2 * (1 - p)
    state[k] = np.int64(hash_step(np.uint64(state[k]), 0))
    state[k + 1] = np.int64(hash_step(np.uint64(state[k + 1]), _SALT))


@engine_function
def terminal_value(params, state, j):
  """(True, player 0's return) when move j ends the game (a stone that
  connects both of the mover's edges), without playing it; else
  (False, 0.0)."""
  p = state[S_PLAYER]
  cell = _cell(params, state, p, j)
  if state[S_BOARD + cell] != EMPTY:
    return False, 0.0
  s = _stone(params, state, p, cell)
  if s == BLACK_WIN:
    return True, 1.0
  if s == WHITE_WIN:
    return True, -1.0
  return False, 0.0


@engine_function
def returns0(params, state):  # pylint: disable=unused-argument
  """Player 0's return at a terminal."""
  return np.float64(state[S_RESULT])


@engine_function
def infoset_hash(params, state, p):  # pylint: disable=unused-argument
  """(uint64, uint64): the key of player p's information state string."""
  w = state[S_MOVES] * 2 + p
  a = hash_step(np.uint64(state[S_KEYS + 2 * p]), w)
  b = hash_step(np.uint64(state[S_KEYS + 2 * p + 1]), w ^ _SALT)
  if a == 0 and b == 0:
    a = np.uint64(1)
  return a, b


@engine_function
def public_hash(params, state):  # pylint: disable=unused-argument
  """(uint64, uint64): the key of the public state: the acting player and
  the number of moves."""
  w = np.uint64((state[S_PLAYER] + 4) + 8 * state[S_MOVES])
  a = mix64(w + np.uint64(_PUB_SEED[0]))
  b = mix64(w ^ np.uint64(_PUB_SEED[1]))
  if a == 0 and b == 0:
    a = np.uint64(1)
  return a, b


@engine_function
def situation_hash(params, state):
  """(uint64, uint64): the key of the situation: the acting player (or
  terminal), OpenSpiel's state of every cell and both players' views (a
  player's legal moves are the cells it has not tried); not the order of
  the tries."""
  cells = params[P_CELLS]
  words = params[P_WORDS]
  a = hash_step(np.uint64(_SITUATION_SEED[0]), state[S_PLAYER] + 4)
  b = hash_step(np.uint64(_SITUATION_SEED[1]), (state[S_PLAYER] + 4) ^ _SALT)
  a, b = hash_range(state, S_BOARD, S_BOARD + cells + 1 + 2 * words, a, b)
  if a == 0 and b == 0:
    a = np.uint64(1)
  return a, b


def make_engine(game):
  """The `Engine` of a loaded `dark_hex` game.

  Args:
    game: a `pyspiel.Game` of dark_hex (from `games.load_game`).

  Returns:
    An `Engine` (name "dark_hex", code `CODE`).

  Raises:
    ValueError: a board with one row or one column (OpenSpiel's hex never
      ends there), gameversion or obstype OpenSpiel does not know (its own
      message; `load_game` refuses these first).
  """
  values = game.get_parameters()
  size = int(values.get("board_size", 3))
  rows = int(values.get("num_rows", size))
  cols = int(values.get("num_cols", size))
  version = values.get("gameversion", "cdh")
  obs = values.get("obstype", "reveal-nothing")
  if version not in VERSIONS:
    raise ValueError(f"Unrecognized game version: {version}")
  if obs not in OBS_TYPES:
    raise ValueError(f"Unrecognized observation type: {obs}")
  if rows < 2 or cols < 2:
    raise ValueError(
        f"dark_hex engine: num_rows={rows}, num_cols={cols} is not "
        "supported; it plays num_rows >= 2 and num_cols >= 2 (OpenSpiel's "
        "hex never ends on a single row or column).")
  n = rows * cols
  words = (n + 63) // 64
  params = np.zeros(NUM_PARAMS + 7 * n, dtype=np.int64)
  params[:P_CELL] = [rows, cols, n, VERSIONS[version], OBS_TYPES[obs], words]
  for cell in range(n):
    r, c = divmod(cell, cols)
    black = 1 if r == 0 else 2 if r == rows - 1 else 0
    white = 1 if c == 0 else 2 if c == cols - 1 else 0
    neighbours = [cell - cols if r > 0 else n,
                  cell - cols + 1 if r > 0 and c < cols - 1 else n,
                  cell + 1 if c < cols - 1 else n,
                  cell + cols if r < rows - 1 else n,
                  cell + cols - 1 if r < rows - 1 and c > 0 else n,
                  cell - 1 if c > 0 else n]
    params[P_CELL + 7 * cell:P_CELL + 7 * cell + 7] = [black + 4 * white,
                                                       *neighbours]
  return Engine(
      name=NAME,
      code=CODE,
      params=params,
      # Header, board and the empty cell past it, two views, the stack.
      state_size=S_BOARD + n + 1 + 2 * words + n,
      max_moves=n,
      # Every try but the winning stone's finds or places a distinct
      # (player, cell) pair; the last stone is tried once.
      max_depth=2 * n - 1,
      utility_sum=0.0,
      game=game)
