"""What a person sees of a hand, per game: cards, pot and event texts.

Kuhn and Leduc poker get cards drawn as rank and suit and a pot; every other
game is shown through OpenSpiel's own strings (`GenericView`). A view only
renders: which events the person may see is decided in `session.py`.
"""

import re

import pyspiel

# Leduc's six cards: card c has rank c // 2 and suit c % 2 (OpenSpiel's
# leduc_poker.cc: a pair beats a high card; J < Q < K). Kuhn's three cards
# (0, 1, 2 = J, Q, K) have no suits; they are drawn as spades.
RANKS = "JQK"
SUITS = ("\u2660", "\u2665")  # spade, heart


def card(rank, suit):
  """A card for the page: {"rank", "suit", "red"}."""
  return {"rank": rank, "suit": suit, "red": suit in ("\u2665", "\u2666")}


def card_text(c):
  return f"{c['rank']}{c['suit']}"


class GenericView:
  """Any two-player game: OpenSpiel's strings, no cards and no pot."""

  kind = "generic"
  pot_note = ("OpenSpiel exposes no pot for this game; the stakes are its "
              "returns at the end of the hand.")

  def private_cards(self, state, player):
    del state, player
    return []

  def public_cards(self, state):
    del state
    return []

  def pot(self, state, person):
    """{"total", "you", "bot"} chips in the pot, or None."""
    del state, person
    return None

  def chance_texts(self, state, action, person):
    """(text, text while hidden) of chance outcome `action` at `state`."""
    del person
    return (f"Chance: {state.action_to_string(pyspiel.PlayerId.CHANCE, action)}",
            "Chance: an outcome you do not see yet")


class _PokerView(GenericView):
  """Kuhn and Leduc: chance deals player 0's card, player 1's card, and (in
  Leduc's second round) the public card."""

  pot_note = ""

  def _card(self, c):
    raise NotImplementedError

  def _contributions(self, state, person):
    raise NotImplementedError

  def private_cards(self, state, player):
    history = state.history()
    return [self._card(history[player])] if len(history) > player else []

  def pot(self, state, person):
    you, bot = self._contributions(state, person)
    return {"total": you + bot, "you": you, "bot": bot}

  def chance_texts(self, state, action, person):
    dealt_to = len(state.history())
    shown = card_text(self._card(action))
    if dealt_to == person:
      return f"You are dealt {shown}", f"You are dealt {shown}"
    if dealt_to == 1 - person:
      return f"The bot is dealt {shown}", "The bot is dealt a card"
    return f"Public card: {shown}", f"Public card: {shown}"


class KuhnView(_PokerView):
  kind = "kuhn_poker"

  def _card(self, c):
    return card(RANKS[c], SUITS[0])

  def _contributions(self, state, person):
    # Each player antes 1; action 1 (Bet) adds 1 for the player who takes it.
    # Decisions alternate from player 0 after the two deals.
    put = [1, 1]
    for i, action in enumerate(state.history()[2:]):
      put[i % 2] += action
    return put[person], put[1 - person]


class LeducView(_PokerView):
  kind = "leduc_poker"

  def _card(self, c):
    return card(RANKS[c // 2], SUITS[c % 2])

  def public_cards(self, state):
    c = state.public_card()  # Leduc's binding; negative before the deal.
    return [self._card(c)] if c >= 0 else []

  def _contributions(self, state, person):
    # "[Ante: a b]" in the observation string: each player's chips in the pot.
    match = re.search(r"\[Ante: (\d+) (\d+)\]", state.observation_string(person))
    put = [int(match.group(1)), int(match.group(2))]
    return put[person], put[1 - person]


def view_for(game):
  """The view of `game`: KuhnView, LeducView or GenericView."""
  name = game.get_type().short_name
  params = game.get_parameters()
  if name == "kuhn_poker":
    return KuhnView()
  if name == "leduc_poker" and not params.get("suit_isomorphism", False):
    return LeducView()
  return GenericView()
