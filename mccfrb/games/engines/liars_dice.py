"""OpenSpiel's `liars_dice` as a native engine (see `protocol`).

Two players hold `numdice` dice of `dice_sides` faces each. The deal is
2 * numdice chance nodes, one per die, each with the outcomes 0 ..
dice_sides - 1 (face = outcome + 1) at probability 1 / dice_sides: player
0's dice are rolled first, then player 1's. When the last die is rolled each
player's dice are sorted and player 0 bids first.

A bid is an action id b in [0, LIAR) with LIAR = 2 * numdice * dice_sides:
with "reset-face" it claims quantity b // dice_sides + 1 of face
b % dice_sides + 1; with "reset-quantity" quantity b % (2 * numdice) + 1 of
face b // (2 * numdice) + 1. The legal actions are every bid above the
current one in increasing order, then LIAR ("Liar", not at the first
decision), so move j is always the action current_bid + 1 + j. "Liar" ends
the game: the bidder wins (+1, the caller -1) when at least the claimed
quantity of dice show the claimed face or the face dice_sides (wild).

Information state strings (`information_state_string(p)`) are player p's
dice, decimal, concatenated without separators (in roll order during the
deal, with "-1" for a die not rolled yet; sorted once the deal is over),
then " q-f" per bid and " Liar": the infoset hash is a hash of exactly that
text (the digits of the dice, a separator, the action ids), so two histories
share a key exactly when OpenSpiel's strings are equal, whatever the number
of digits (e.g. dice 1,11 and 11,1 of 12-sided dice do share a string
during the deal).

params (int64): [numdice, dice_sides, rule (0 reset-face, 1
reset-quantity), total dice T = 2 * numdice, LIAR = T * dice_sides].

state (int64[11 + T]):
  0 STEP     moves made so far (the deal's rolls included)
  1 PLAYER   acting player, CHANCE or TERMINAL
  2 BID      current bid, -1 before the first
  3 BIDDER   player who made the current bid
  4 RETURN0  player 0's return once terminal (+1 / -1), else 0
  5, 6       player 0's running infoset hash (two uint64 stored as int64)
  7, 8       player 1's running infoset hash
  9, 10      running public hash
  11 + p * numdice + d   die d of player p (1 .. dice_sides, -1 not rolled)
"""

import numpy as np
from numba import njit

from mccfrb.games.engines import registry
from mccfrb.games.engines.common import CHANCE
from mccfrb.games.engines.common import TERMINAL
from mccfrb.games.engines.common import Engine
from mccfrb.games.engines.common import engine_function
from mccfrb.games.engines.common import hash_range
from mccfrb.games.engines.common import hash_step

NAME = "liars_dice"
CODE = registry.code(NAME)
RULES = {"reset-face": 0, "reset-quantity": 1}

# params
P_NUMDICE = 0
P_SIDES = 1
P_RULE = 2
P_TOTAL = 3
P_LIAR = 4
NUM_PARAMS = 5

# state
STEP = 0
PLAYER = 1
BID = 2
BIDDER = 3
RETURN0 = 4
HASH = 5  # HASH + 2 * p, HASH + 2 * p + 1: player p's infoset hash.
PUBLIC = 9  # PUBLIC, PUBLIC + 1: the public hash.
DICE = 11
HEADER = 11

# Words of the infoset text: decimal digits 0..9 of the dice, MINUS for the
# "-" of an unrolled die's "-1", END after the dice; then the action ids.
MINUS = 10
END = 11
# The public hash steps with DEAL at every roll (all deals share it).
DEAL = -3
_SALT = 0x5A5A5A5A
# Tells situation keys from information-state keys.
_SITUATION_TAG = 0x517CC1B727220A95
_SEED_A = np.uint64(0x243F6A8885A308D3)
_SEED_B = np.uint64(0x13198A2E03707344)
_PUBLIC_A = np.uint64(0xA4093822299F31D0)
_PUBLIC_B = np.uint64(0x082EFA98EC4E6C89)


@njit(cache=True, inline="always")
def _to_int(u):
  """uint64 -> int64 of the same bits (to store a hash in the state)."""
  return np.int64(u)


@njit(cache=True, inline="always")
def _to_uint(i):
  """int64 -> uint64 of the same bits."""
  return np.uint64(i)


@njit(cache=True, inline="always")
def _step2(a, b, word):
  """The two halves of a 128-bit running hash extended by `word`."""
  return hash_step(a, word), hash_step(b, word ^ _SALT)


@engine_function
def _hash_dice(params, state, p):
  """(uint64, uint64): the hash of player p's dice as OpenSpiel prints them
  (their digits in the order stored, "-1" per unrolled die) and END."""
  n = params[P_NUMDICE]
  a = _SEED_A
  b = _SEED_B
  base = DICE + p * n
  for d in range(n):
    v = state[base + d]
    if v < 0:
      a, b = _step2(a, b, MINUS)
      a, b = _step2(a, b, 1)
    else:
      power = 1
      while power * 10 <= v:
        power *= 10
      while power > 0:
        a, b = _step2(a, b, (v // power) % 10)
        power //= 10
  return _step2(a, b, END)


@engine_function
def reset(params, state):
  """The initial state (the first roll of player 0's first die), in place."""
  state[STEP] = 0
  state[PLAYER] = CHANCE
  state[BID] = -1
  state[BIDDER] = 0
  state[RETURN0] = 0
  for k in range(HASH, PUBLIC):
    state[k] = 0
  state[PUBLIC] = _to_int(_PUBLIC_A)
  state[PUBLIC + 1] = _to_int(_PUBLIC_B)
  for k in range(params[P_TOTAL]):
    state[DICE + k] = -1


@engine_function
def player(params, state):  # pylint: disable=unused-argument
  """The acting player (0 or 1), CHANCE or TERMINAL."""
  return state[PLAYER]


@engine_function
def num_moves(params, state):
  """dice_sides at chance; the bids above the current one (and "Liar" once
  a bid was made) at a decision; 0 at a terminal."""
  who = state[PLAYER]
  if who == CHANCE:
    return params[P_SIDES]
  if who == TERMINAL:
    return 0
  bid = state[BID]
  if bid < 0:
    return params[P_LIAR]
  return params[P_LIAR] - bid


@engine_function
def move_action(params, state, j):  # pylint: disable=unused-argument
  """OpenSpiel's action id of move j: the outcome j (face j + 1) at chance,
  the bid current + 1 + j (LIAR for "Liar") at a decision."""
  if state[PLAYER] == CHANCE:
    return j
  return state[BID] + 1 + j


@engine_function
def chance_prob(params, state, j):  # pylint: disable=unused-argument
  """1 / dice_sides: every face of a die is equally likely."""
  return 1.0 / params[P_SIDES]


@engine_function
def _end_deal(params, state):
  """Sorts each player's dice (insertion sort, in place) and starts the
  infoset hashes from them."""
  n = params[P_NUMDICE]
  for p in range(2):
    base = DICE + p * n
    for i in range(1, n):
      v = state[base + i]
      k = i
      while k > 0 and state[base + k - 1] > v:
        state[base + k] = state[base + k - 1]
        k -= 1
      state[base + k] = v
    a, b = _hash_dice(params, state, p)
    state[HASH + 2 * p] = _to_int(a)
    state[HASH + 2 * p + 1] = _to_int(b)


@engine_function
def _resolve(params, state, caller):
  """RETURN0 once `caller` called "Liar" on the current bid."""
  bid = state[BID]
  sides = params[P_SIDES]
  total = params[P_TOTAL]
  if params[P_RULE] == 0:
    quantity = bid // sides + 1
    face = bid % sides + 1
  else:
    quantity = bid % total + 1
    face = bid // total + 1
  matches = 0
  for k in range(total):
    v = state[DICE + k]
    if v == face or v == sides:
      matches += 1
  winner = state[BIDDER] if matches >= quantity else caller
  state[RETURN0] = 1 if winner == 0 else -1


@engine_function
def apply(params, state, j):
  """Plays move j (a roll at chance, a bid or "Liar" at a decision), in
  place."""
  who = state[PLAYER]
  pa = _to_uint(state[PUBLIC])
  pb = _to_uint(state[PUBLIC + 1])
  if who == CHANCE:
    step = state[STEP]
    state[DICE + step] = j + 1  # Player 0's dice, then player 1's.
    state[STEP] = step + 1
    pa, pb = _step2(pa, pb, DEAL)
    state[PUBLIC] = _to_int(pa)
    state[PUBLIC + 1] = _to_int(pb)
    if step + 1 == params[P_TOTAL]:
      _end_deal(params, state)
      state[PLAYER] = 0
    return
  action = state[BID] + 1 + j
  state[STEP] += 1
  pa, pb = _step2(pa, pb, action)
  state[PUBLIC] = _to_int(pa)
  state[PUBLIC + 1] = _to_int(pb)
  for k in range(HASH, PUBLIC, 2):
    a, b = _step2(_to_uint(state[k]), _to_uint(state[k + 1]), action)
    state[k] = _to_int(a)
    state[k + 1] = _to_int(b)
  if action == params[P_LIAR]:
    _resolve(params, state, who)
    state[PLAYER] = TERMINAL
  else:
    state[BID] = action
    state[BIDDER] = who
    state[PLAYER] = 1 - who


@engine_function
def terminal_value(params, state, j):  # pylint: disable=unused-argument
  """(False, 0.0): the walk plays the move to learn whether it ends the
  game (see `protocol.terminal_value`)."""
  return False, 0.0


@engine_function
def returns0(params, state):  # pylint: disable=unused-argument
  """Player 0's return at a terminal: +1 if player 0 won the call, -1."""
  return np.float64(state[RETURN0])


@engine_function
def infoset_hash(params, state, p):
  """(uint64, uint64): the key of `information_state_string(p)` (read from
  the state once the deal is over; hashed from the dice during it)."""
  if state[STEP] < params[P_TOTAL]:
    a, b = _hash_dice(params, state, p)
  else:
    a = _to_uint(state[HASH + 2 * p])
    b = _to_uint(state[HASH + 2 * p + 1])
  if a == 0 and b == 0:
    a = np.uint64(1)
  return a, b


@engine_function
def public_hash(params, state):  # pylint: disable=unused-argument
  """(uint64, uint64): the key of the public state: the number of rolls so
  far during the deal, the bid sequence after it."""
  return _to_uint(state[PUBLIC]), _to_uint(state[PUBLIC + 1])


@engine_function
def situation_hash(params, state):
  """(uint64, uint64): the key of the situation: the dice (as rolled so far
  during the deal, sorted after it), the current bid, its bidder and the
  acting player; not the bids before the current one."""
  a, b = _step2(_SEED_A ^ np.uint64(_SITUATION_TAG),
                _SEED_B ^ np.uint64(_SITUATION_TAG),
                (state[PLAYER] + 4) + 8 * (state[BIDDER] + 4))
  a, b = _step2(a, b, state[BID] + 1)
  a, b = hash_range(state, DICE, DICE + params[P_TOTAL], a, b)
  if a == 0 and b == 0:
    a = np.uint64(1)
  return a, b


def make_engine(game):
  """The `Engine` of a loaded `liars_dice` game.

  Args:
    game: a `pyspiel.Game` of liars_dice (from `games.load_game`).

  Returns:
    An `Engine` (name "liars_dice", code `CODE`).

  Raises:
    ValueError: players other than 2, numdice below 1, dice_sides below 1,
      or a bidding_rule other than "reset-face" and "reset-quantity".
  """
  values = game.get_parameters()
  num_players = int(values.get("players", 2))
  numdice = int(values.get("numdice", 1))
  sides = int(values.get("dice_sides", 6))
  rule = values.get("bidding_rule", "reset-face")
  if num_players != 2:
    raise ValueError(f"liars_dice engine: players={num_players} is not "
                     "supported; it plays players=2 only.")
  if numdice < 1:
    raise ValueError(f"liars_dice engine: numdice={numdice} is not "
                     "supported; it needs numdice >= 1.")
  if sides < 1:
    raise ValueError(f"liars_dice engine: dice_sides={sides} is not "
                     "supported; it needs dice_sides >= 1.")
  if rule not in RULES:
    raise ValueError(f"liars_dice engine: bidding_rule={rule!r} is not "
                     f"supported; it accepts {', '.join(map(repr, RULES))}.")
  total = 2 * numdice
  liar = total * sides
  params = np.array([numdice, sides, RULES[rule], total, liar],
                    dtype=np.int64)
  return Engine(
      name=NAME,
      code=CODE,
      params=params,
      state_size=HEADER + total,
      max_moves=max(liar, sides),
      # The rolls, every bid once, "Liar".
      max_depth=total + liar + 1,
      utility_sum=0.0,
      game=game)
