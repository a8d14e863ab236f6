"""Goofspiel as a native engine (see `protocol`).

The engine plays OpenSpiel's `goofspiel` in the turn-based form that
`games.load_game` gives (`turn_based_simultaneous_game`), move for move as
OpenSpiel 2.0.2 does (tests/test_engine_goofspiel.py checks it against
pyspiel):

- A round: chance deals a point card (points_order=random, uniformly among
  the cards not dealt yet, in increasing card order; ascending and
  descending deal without a chance node), player 0 bids a card of its hand,
  player 1 bids without seeing it, the round resolves: the higher bid wins
  the point card's value (card + 1), equal bids discard it (win sequence
  -3, OpenSpiel's kInvalidPlayer). Legal bids are the hand in increasing
  card order.
- OpenSpiel plays the last round by itself when the second-to-last one
  resolves (deal and bids are forced): each player decides num_cards - 1
  times (once when num_cards = 1), and that round is no move of the tree.
- Returns: win_loss gives +1/-1 by total points, 0 on equal points;
  point_difference gives p0 - (p0 + p1) / 2. total_points is not zero-sum
  (`load_game` refuses it); egocentric changes OpenSpiel's tensors only and
  is played as egocentric=False; num_turns must be -1 (or num_cards).
- Information state strings: "Current player: c" (the turn-based wrapper;
  -1 at chance, -4 at terminals), "Observer's action this turn: a" for
  player 0 while player 1 bids, then with imp_info the player's own bids
  (and hand), the point cards, the win sequence and the points; without
  imp_info the point cards, both hands *as sets* (the bids themselves are
  not shown), the win sequence and the points. Without imp_info the
  information states therefore do not have perfect recall (two rounds of
  ties in swapped order lead to one information state), and OpenSpiel's
  strings of the two players are equal whenever neither has a pending bid.

Information-state keys are incremental: the state carries running 128-bit
hashes (`common.hash_step`, two independent 64-bit streams), extended by
`apply` only when a round resolves: one of the public events (point card and
winner of each round), and one per player of what that player saw (with
imp_info: point card, own bid and winner of each round; without imp_info:
the public hash folded with both hands). `infoset_hash` folds in one word:
the current player, the point card of the unresolved round and, for player 0
while player 1 bids, its own pending bid; `public_hash` the current player,
the point card and the number of moves. Each is two `mix64` rounds.

Params layout (int64[NUM_PARAMS]):
  P_NUM_CARDS     number of cards n (1..MAX_CARDS)
  P_IMP_INFO      1 with imp_info=True, 0 without
  P_POINTS_ORDER  RANDOM, DESCENDING or ASCENDING
  P_RETURNS_TYPE  WIN_LOSS or POINT_DIFFERENCE

State layout (int64[STATE_SIZE]); cards are 0-based as OpenSpiel's actions,
sets of cards are bit masks:
  S_PLAYER        acting player: 0, 1, CHANCE or TERMINAL
  S_ROUND         rounds resolved so far
  S_CARD          the point card of the unresolved round (-1 if none)
  S_PENDING       player 0's bid in the unresolved round (-1 if none)
  S_POINTS + p    points of player p
  S_HANDS + p     the cards player p can still bid (a bid leaves at once)
  S_DECK          the point cards not dealt yet
  S_MOVES         moves made since the root (chance moves included)
  S_PUB, +1       running hash of the public events
  S_KEYS + 2p, +1 player p's running information-state hash
Move j at a decision (chance) node is the j-th lowest card of the mover's
hand (of the deck): OpenSpiel's order of legal actions (chance outcomes).
"""

from llvmlite import ir
import numpy as np
from numba import njit
from numba import types
from numba.extending import intrinsic

from mccfrb.games.engines import registry
from mccfrb.games.engines.common import CHANCE
from mccfrb.games.engines.common import Engine
from mccfrb.games.engines.common import TERMINAL
from mccfrb.games.engines.common import engine_function
from mccfrb.games.engines.common import hash_step
from mccfrb.games.engines.common import inlined_engine_function
from mccfrb.games.engines.common import mix64

NAME = "goofspiel"
CODE = registry.code(NAME)

# Params.
P_NUM_CARDS = 0
P_IMP_INFO = 1
P_POINTS_ORDER = 2
P_RETURNS_TYPE = 3
NUM_PARAMS = 4

RANDOM = 0
DESCENDING = 1
ASCENDING = 2
POINTS_ORDERS = {"random": RANDOM, "descending": DESCENDING,
                 "ascending": ASCENDING}
WIN_LOSS = 0
POINT_DIFFERENCE = 1
RETURNS_TYPES = {"win_loss": WIN_LOSS, "point_difference": POINT_DIFFERENCE}

# Hands and deck are bit masks of an int64.
MAX_CARDS = 62

# State.
S_PLAYER = 0
S_ROUND = 1
S_CARD = 2
S_PENDING = 3
S_POINTS = 4
S_HANDS = 6
S_DECK = 8
S_MOVES = 9
S_PUB = 10
S_KEYS = 12
STATE_SIZE = 16

# OpenSpiel's win-sequence entry of a tied round (kInvalidPlayer).
TIE = -3
# OpenSpiel's current player at terminals (kTerminalPlayerId).
_OPENSPIEL_TERMINAL = -4

# The second hash stream hashes every word xor this, as common.hash_words.
_SALT = 0x5A5A5A5A
# Seed of the situation keys (hex digits of e).
_SITUATION_SEED = (0x2B7E151628AED2A6, 0xABF7158809CF4F3C)
# Seeds of the running hashes (hex digits of pi).
_PUB_SEED = (0x243F6A8885A308D3, 0x13198A2E03707344)
_KEY_SEED = ((0x0A4093822299F31D, 0x082EFA98EC4E6C89),
             (0x452821E638D01377, 0x3BE5466CF34E90C6))

# Speed. A numba function that takes arrays increments and decrements their
# reference counts (atomic NRT_incref/NRT_decref, about a third of a move's
# time each pair) unless numba can prune them, which it cannot around a call
# that may raise. Hence every helper below takes scalars and is inlined:
# as LLVM instructions (the @intrinsic ones, and common.py's hash_step),
# which numba does not type again in every kernel that plays the engine
# (first-use compile time), or with inline="always". The protocol functions
# themselves take the arrays params and state, and count no references
# (common.engine_function).


@intrinsic
def _popcount(typingctx, x):  # pylint: disable=unused-argument
  """The number of set bits of an int64 (LLVM's ctpop)."""
  sig = types.int64(types.int64)

  def codegen(context, builder, signature, args):  # pylint: disable=unused-argument
    fn = builder.module.declare_intrinsic("llvm.ctpop", [ir.IntType(64)])
    return builder.call(fn, [args[0]])

  return sig, codegen


@intrinsic
def _select(typingctx, mask, j):  # pylint: disable=unused-argument
  """The position of the j-th lowest set bit of `mask` (j < its popcount):
  move j's card, branch-free (a binary search by popcounts). Emitted as
  LLVM instructions, which cost no typing where it is used:
    pos = 0
    for width in 32, 16, 8, 4, 2, 1:
      low = mask & (2^width - 1); c = popcount(low); up = j >= c
      j -= c if up; mask = mask >> width if up else low; pos += width if up
  """
  sig = types.int64(types.int64, types.int64)

  def codegen(context, builder, signature, args):  # pylint: disable=unused-argument
    i64 = ir.IntType(64)
    popcount = builder.module.declare_intrinsic("llvm.ctpop", [i64])
    mask, j = args
    pos = ir.Constant(i64, 0)
    for k in range(6):
      width = ir.Constant(i64, 32 >> k)
      low = builder.and_(mask, ir.Constant(i64, (1 << (32 >> k)) - 1))
      c = builder.call(popcount, [low])
      up = builder.icmp_signed(">=", j, c)
      j = builder.select(up, builder.sub(j, c), j)
      mask = builder.select(up, builder.ashr(mask, width), low)
      pos = builder.add(pos, builder.select(up, width, ir.Constant(i64, 0)))
    return pos

  return sig, codegen


@intrinsic
def _lowest(typingctx, mask):  # pylint: disable=unused-argument
  """The position of the lowest set bit of a nonzero int64 (LLVM's cttz):
  `_select(mask, 0)` in one instruction."""
  sig = types.int64(types.int64)

  def codegen(context, builder, signature, args):  # pylint: disable=unused-argument
    i64 = ir.IntType(64)
    fn = builder.module.declare_intrinsic(
        "llvm.cttz", [i64], ir.FunctionType(i64, [i64, ir.IntType(1)]))
    return builder.call(fn, [args[0], ir.Constant(ir.IntType(1), 1)])

  return sig, codegen


@njit(cache=True, inline="always")
def _rekey(pub_a, pub_b, hand0, hand1):
  """Without imp_info, both players' running key: the public hash folded
  with both hands."""
  a = hash_step(hash_step(pub_a, hand0), hand1)
  b = hash_step(hash_step(pub_b, hand0 ^ _SALT), hand1 ^ _SALT)
  return a, b


@njit(cache=True, inline="always")
def _fold_round(imp, pub_a, pub_b, k0a, k0b, k1a, k1b, hand0, hand1, card,
                bid0, bid1, winner):
  """The running hashes (public pair, player 0's pair, player 1's pair)
  after a round resolves: point card `card`, these bids, `winner` (0, 1 or
  TIE); the hands are those after the round."""
  w = card * 8 + (winner - TIE)
  pub_a = hash_step(pub_a, w)
  pub_b = hash_step(pub_b, w ^ _SALT)
  if imp:
    k0a = hash_step(k0a, w + 512 * bid0)
    k0b = hash_step(k0b, (w + 512 * bid0) ^ _SALT)
    k1a = hash_step(k1a, w + 512 * bid1)
    k1b = hash_step(k1b, (w + 512 * bid1) ^ _SALT)
  else:
    k0a, k0b = _rekey(pub_a, pub_b, hand0, hand1)
    k1a, k1b = k0a, k0b
  return pub_a, pub_b, k0a, k0b, k1a, k1b


@njit(cache=True, inline="always")
def _root_hashes(imp, full):
  """The running hashes at the root (hands `full`)."""
  pub_a = np.uint64(_PUB_SEED[0])
  pub_b = np.uint64(_PUB_SEED[1])
  if imp:
    return (pub_a, pub_b, np.uint64(_KEY_SEED[0][0]),
            np.uint64(_KEY_SEED[0][1]), np.uint64(_KEY_SEED[1][0]),
            np.uint64(_KEY_SEED[1][1]))
  a, b = _rekey(pub_a, pub_b, full, full)
  return pub_a, pub_b, a, b, a, b


@engine_function
def reset(params, state):
  """The initial state, in place."""
  n = params[P_NUM_CARDS]
  full = (np.int64(1) << n) - 1
  state[S_PLAYER] = CHANCE
  state[S_ROUND] = 0
  state[S_CARD] = -1
  state[S_PENDING] = -1
  state[S_POINTS] = 0
  state[S_POINTS + 1] = 0
  state[S_HANDS] = full
  state[S_HANDS + 1] = full
  state[S_DECK] = full
  state[S_MOVES] = 0
  hashes = _root_hashes(params[P_IMP_INFO], full)
  for i in range(6):
    state[S_PUB + i] = np.int64(hashes[i])
  order = params[P_POINTS_ORDER]
  if order != RANDOM:
    card = 0 if order == ASCENDING else n - 1
    state[S_CARD] = card
    state[S_DECK] = full & ~(np.int64(1) << card)
    state[S_PLAYER] = 0


@engine_function
def player(params, state):  # pylint: disable=unused-argument
  """The acting player (0, 1), CHANCE or TERMINAL."""
  return state[S_PLAYER]


@engine_function
def num_moves(params, state):  # pylint: disable=unused-argument
  """Legal bids at a decision, undealt cards at chance, 0 at terminals."""
  p = state[S_PLAYER]
  if p == TERMINAL:
    return np.int64(0)
  return _popcount(state[S_DECK if p == CHANCE else S_HANDS + p])


@engine_function
def move_action(params, state, j):  # pylint: disable=unused-argument
  """OpenSpiel's action of move j: the j-th lowest card of the mover's hand
  (or of the undealt point cards at chance), 0-based."""
  p = state[S_PLAYER]
  return np.int64(_select(state[S_DECK if p == CHANCE else S_HANDS + p], j))


@engine_function
def chance_prob(params, state, j):  # pylint: disable=unused-argument
  """Probability of chance outcome j: uniform over the undealt cards."""
  return 1.0 / _popcount(state[S_DECK])


@engine_function
def apply(params, state, j):
  """Plays move j in place (and the forced last round after the
  second-to-last)."""
  state[S_MOVES] += 1
  p = state[S_PLAYER]
  if p == CHANCE:
    deck = state[S_DECK]
    card = _select(deck, j)
    state[S_DECK] = deck & ~(np.int64(1) << card)
    state[S_CARD] = card
    state[S_PLAYER] = 0
    return
  hand = state[S_HANDS + p]
  bid = _select(hand, j)
  state[S_HANDS + p] = hand & ~(np.int64(1) << bid)
  if p == 0:
    state[S_PENDING] = bid
    state[S_PLAYER] = 1
    return
  n = params[P_NUM_CARDS]
  order = params[P_POINTS_ORDER]
  bid0 = state[S_PENDING]
  bid1 = bid
  while True:  # At most twice: the forced last round follows.
    card = state[S_CARD]
    winner = TIE
    if bid0 > bid1:
      winner = 0
    elif bid1 > bid0:
      winner = 1
    if winner != TIE:
      state[S_POINTS + winner] += card + 1
    r = state[S_ROUND] + 1
    state[S_ROUND] = r
    state[S_PENDING] = -1
    state[S_CARD] = -1
    hand0 = state[S_HANDS]
    hand1 = state[S_HANDS + 1]
    hashes = _fold_round(
        params[P_IMP_INFO], np.uint64(state[S_PUB]),
        np.uint64(state[S_PUB + 1]), np.uint64(state[S_KEYS]),
        np.uint64(state[S_KEYS + 1]), np.uint64(state[S_KEYS + 2]),
        np.uint64(state[S_KEYS + 3]), hand0, hand1, card, bid0, bid1,
        winner)
    for i in range(6):
      state[S_PUB + i] = np.int64(hashes[i])
    if r == n:  # After the forced round, or n = 1 (OpenSpiel forces none).
      state[S_PLAYER] = TERMINAL
      return
    if order == RANDOM and r < n - 1:
      state[S_PLAYER] = CHANCE
      return
    deck = state[S_DECK]
    card = _select(deck, _popcount(deck) - 1 if order == DESCENDING else 0)
    state[S_DECK] = deck & ~(np.int64(1) << card)
    state[S_CARD] = card
    if r < n - 1:
      state[S_PLAYER] = 0
      return
    # The last round: one card left in each hand, played at once.
    bid0 = _lowest(hand0)
    bid1 = _lowest(hand1)
    state[S_HANDS] = 0
    state[S_HANDS + 1] = 0


@inlined_engine_function
def terminal_value(params, state, j):
  """(True, player 0's return) when move j ends the game (player 1's bid in
  the second-to-last round: that round and the forced last one resolve),
  computed from the cards without playing the move or its hashes; else
  (False, 0.0)."""
  n = params[P_NUM_CARDS]
  if state[S_PLAYER] != 1 or not (state[S_ROUND] == n - 2 or n == 1):
    return False, 0.0
  hand1 = state[S_HANDS + 1]
  bid1 = _select(hand1, j)
  bid0 = state[S_PENDING]
  points0 = state[S_POINTS]
  points1 = state[S_POINTS + 1]
  card = state[S_CARD]
  if bid0 > bid1:
    points0 += card + 1
  elif bid1 > bid0:
    points1 += card + 1
  if n > 1:  # The forced last round: the last card of each hand and deck.
    last0 = _lowest(state[S_HANDS])
    last1 = _lowest(hand1 & ~(np.int64(1) << bid1))
    card = _lowest(state[S_DECK])
    if last0 > last1:
      points0 += card + 1
    elif last1 > last0:
      points1 += card + 1
  if params[P_RETURNS_TYPE] == WIN_LOSS:
    if points0 > points1:
      return True, 1.0
    if points1 > points0:
      return True, -1.0
    return True, 0.0
  return True, points0 - (points0 + points1) / 2.0


@engine_function
def returns0(params, state):
  """Player 0's return at a terminal."""
  p0 = state[S_POINTS]
  p1 = state[S_POINTS + 1]
  if params[P_RETURNS_TYPE] == WIN_LOSS:
    if p0 > p1:
      return 1.0
    if p1 > p0:
      return -1.0
    return 0.0
  return p0 - (p0 + p1) / 2.0


@engine_function
def infoset_hash(params, state, p):  # pylint: disable=unused-argument
  """(uint64, uint64): the key of player p's information state string."""
  cp = state[S_PLAYER]
  seen = -1
  if cp == 1 and p == 0:
    seen = state[S_PENDING]  # "Observer's action this turn".
  w = (cp + 4) + 8 * (seen + 1) + 512 * (state[S_CARD] + 1)
  a = hash_step(np.uint64(state[S_KEYS + 2 * p]), w)
  b = hash_step(np.uint64(state[S_KEYS + 2 * p + 1]), w ^ _SALT)
  if a == 0 and b == 0:
    a = np.uint64(1)
  return a, b


@engine_function
def public_hash(params, state):
  """(uint64, uint64): the key of the public state: the moves made, the
  point cards and winners, and without imp_info both hands."""
  at = S_PUB if params[P_IMP_INFO] else S_KEYS
  w = (state[S_PLAYER] + 4) + 8 * (state[S_CARD] + 1) + 512 * state[S_MOVES]
  a = hash_step(np.uint64(state[at]), w)
  b = hash_step(np.uint64(state[at + 1]), w ^ _SALT)
  if a == 0 and b == 0:
    a = np.uint64(1)
  return a, b


@engine_function
def situation_hash(params, state):  # pylint: disable=unused-argument
  """(uint64, uint64): the key of the situation, what the rest of the game
  depends on: the acting player, the point card on the table, player 0's
  pending bid, both hands, the point cards not dealt and the difference of
  the points (returns depend on it alone), not the order they came in.
  Up to 13 cards the words pack exactly into 64 bits, each half of the
  key a bijection of them (no collision at all, and two independent mixes
  instead of a chain of steps); above, a running hash of the words."""
  n = params[P_NUM_CARDS]
  w = (state[S_PLAYER] + 4) + 8 * (state[S_CARD] + 1) + 512 * (
      state[S_PENDING] + 1)
  diff = state[S_POINTS] - state[S_POINTS + 1]
  if n <= 13:
    # 3 + 4 + 4 bits of w (card and pending bid + 1 <= 13), 3 x 13 bits of
    # hands and deck, 9 bits of the difference + 256 (|diff| <= 91).
    x = ((state[S_PLAYER] + 4) | ((state[S_CARD] + 1) << 3)
         | ((state[S_PENDING] + 1) << 7) | (state[S_HANDS] << 11)
         | (state[S_HANDS + 1] << 24) | (state[S_DECK] << 37)
         | ((diff + 256) << 50))
    return (mix64(np.uint64(x) ^ np.uint64(_SITUATION_SEED[0])),
            mix64(np.uint64(x) + np.uint64(_SITUATION_SEED[1])))
  a = np.uint64(_SITUATION_SEED[0])
  b = np.uint64(_SITUATION_SEED[1])
  for word in (w, state[S_HANDS], state[S_HANDS + 1], state[S_DECK], diff):
    a = hash_step(a, word)
    b = hash_step(b, word ^ _SALT)
  if a == 0 and b == 0:
    a = np.uint64(1)
  return a, b


def parameters(game):
  """The goofspiel parameters of a turn-based goofspiel game."""
  name = game.get_type().short_name
  params = game.get_parameters()
  if name == "turn_based_simultaneous_game":
    params = params["game"]
    name = params.get("name")
  if name != NAME:
    raise ValueError(f"{game} is not goofspiel; the goofspiel engine plays "
                     "goofspiel only.")
  return params


def make_engine(game):
  """The `Engine` of a goofspiel game.

  Args:
    game: goofspiel as `games.load_game` gives it (turn-based), a game
      string, or the simultaneous `pyspiel.Game` (converted by `load_game`).

  Returns:
    The `Engine` (name "goofspiel", code `CODE`).

  Raises:
    ValueError: parameters the engine does not play: players other than 2,
      num_turns other than -1 (or num_cards, the same game), returns_type
      total_points, num_cards outside 1..MAX_CARDS (the message names the
      value and what is accepted); `load_game` refusals.
  """
  # pylint: disable=import-outside-toplevel
  from mccfrb import games
  game = games.load_game(game)
  params = parameters(game)
  n = params.get("num_cards", 13)
  if not 1 <= n <= MAX_CARDS:
    raise ValueError(f"goofspiel engine: num_cards={n} is not supported; it "
                     f"plays 1 <= num_cards <= {MAX_CARDS}.")
  players = params.get("players", 2)
  if players != 2:
    raise ValueError(f"goofspiel engine: players={players} is not supported; "
                     "it plays players=2 only.")
  turns = params.get("num_turns", -1)
  if turns not in (-1, n):
    raise ValueError(
        f"goofspiel engine: num_turns={turns} is not supported; it plays "
        f"num_turns=-1 only (all num_cards rounds; num_turns={n} is the "
        "same game).")
  order = params.get("points_order", "random")
  if order not in POINTS_ORDERS:
    raise ValueError(f"goofspiel engine: points_order={order!r} is not "
                     f"supported; it plays {', '.join(POINTS_ORDERS)}.")
  returns = params.get("returns_type", "win_loss")
  if returns not in RETURNS_TYPES:
    raise ValueError(
        f"goofspiel engine: returns_type={returns!r} is not supported; it "
        f"plays {' and '.join(RETURNS_TYPES)} (zero-sum).")
  # egocentric changes OpenSpiel's tensors only (the win sequence relative
  # to the observer), never the information state strings or returns: the
  # engine plays it as egocentric=False.
  values = np.zeros(NUM_PARAMS, dtype=np.int64)
  values[P_NUM_CARDS] = n
  values[P_IMP_INFO] = int(bool(params.get("imp_info", False)))
  values[P_POINTS_ORDER] = POINTS_ORDERS[order]
  values[P_RETURNS_TYPE] = RETURNS_TYPES[returns]
  moves_per_round = 3 if order == "random" else 2
  return Engine(
      name=NAME,
      code=CODE,
      params=values,
      state_size=STATE_SIZE,
      max_moves=n,
      max_depth=moves_per_round * max(n - 1, 1),
      utility_sum=0.0,
      game=game,
  )


def _numbers(line, prefix):
  """The integers after `prefix` on `line` (ValueError if it is not there)."""
  if not line.startswith(prefix):
    raise ValueError(f"expected {prefix!r}, got {line!r}")
  return [int(x) for x in line[len(prefix):].split()]


def infoset_hash_from_string(engine, player, info_string):
  """The `infoset_hash` of a history whose information state string of
  `player` is `info_string`.

  Converts tables keyed by OpenSpiel's strings (e.g. an OpenSpiel solver's
  policy) into the engine's keys, without a history of the string.

  Args:
    engine: the goofspiel `Engine` the string belongs to.
    player: 0 or 1, the player whose string it is.
    info_string: `state.information_state_string(player)` of the engine's
      game.

  Returns:
    (uint64, uint64), equal to `infoset_hash(engine.params, state, player)`
    of every state with that string.

  Raises:
    ValueError: the string is not an information state string of `player`
      in this game.
  """
  params = engine.params
  n = int(params[P_NUM_CARDS])
  imp = bool(params[P_IMP_INFO])
  lines = info_string.split("\n")
  try:
    if lines and lines[-1] == "":
      lines.pop()
    cp = _numbers(lines.pop(0), "Current player: ")[0]
    seen = -1
    if lines and lines[0].startswith("Observer's action this turn: "):
      seen = _numbers(lines.pop(0), "Observer's action this turn: ")[0]
      if not (player == 0 and cp == 1):
        raise ValueError("a pending bid is shown to player 0 only, while "
                         "player 1 bids")
    cp = {-1: CHANCE, _OPENSPIEL_TERMINAL: TERMINAL}.get(cp, cp)
    if cp not in (0, 1, CHANCE, TERMINAL):
      raise ValueError(f"current player {cp}")
    hands = [None, None]
    if imp:
      expected = ["hand", "action", "cards", "wins", "points", "terminal"]
      hands[player] = _numbers(lines[0], f"P{player} hand: ")
      bids = _numbers(lines[1], f"P{player} action sequence: ")
      cards = _numbers(lines[2], "Point card sequence: ")
      wins = _numbers(lines[3], "Win sequence: ")
      _numbers(lines[4], "Points: ")
      _numbers(lines[5], "Terminal?: ")
    else:
      expected = ["cards", "hand", "hand", "wins", "points"]
      cards = _numbers(lines[0], "Point card sequence: ")
      hands = [_numbers(lines[1], "P0 hand: "), _numbers(lines[2], "P1 hand: ")]
      wins = _numbers(lines[3], "Win sequence: ")
      _numbers(lines[4], "Points: ")
      bids = [0] * len(wins)
    if len(lines) != len(expected):
      raise ValueError(f"{len(lines)} lines after the current player, "
                       f"expected {len(expected)}")
    if not (len(wins) <= len(cards) <= len(wins) + 1 and len(bids) == len(wins)
            and len(cards) <= n):
      raise ValueError("inconsistent lengths of the sequences")
    if any(not 1 <= c <= n for c in cards) or any(not 0 <= b < n for b in bids):
      raise ValueError("a card out of range")
    if any(w not in (0, 1, TIE) for w in wins):
      raise ValueError("a winner that is neither 0, 1 nor -3")
  except (IndexError, ValueError) as e:
    raise ValueError(f"not a goofspiel information state string of player "
                     f"{player} with imp_info={imp} ({e}): "
                     f"{info_string!r}") from e
  # Python ints below 2**63 would reach numba as int64: pass uint64.
  def words(values):
    return tuple(np.uint64(v) for v in values)

  full = (1 << n) - 1
  hashes = words(_root_hashes(imp, full))
  for r, win in enumerate(wins):
    own = [0, 0]
    own[player] = bids[r]
    hashes = words(_fold_round(imp, *hashes, full, full, cards[r] - 1,
                               own[0], own[1], win))
  if not imp:
    masks = [sum(1 << (c - 1) for c in hand) for hand in hands]
    key = words(_rekey(hashes[0], hashes[1], *masks))
    hashes = hashes[:2] + key + key
  state = np.zeros(STATE_SIZE, dtype=np.int64)
  state[S_KEYS:S_KEYS + 4] = np.array(hashes[2:], dtype=np.uint64).view(
      np.int64)
  state[S_PLAYER] = cp
  state[S_PENDING] = seen
  state[S_CARD] = cards[-1] - 1 if len(cards) > len(wins) else -1
  return infoset_hash(params, state, player)
