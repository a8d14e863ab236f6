"""A match between a person and a strategy: hands, bot moves, winnings.

`PlaySession` deals hand after hand of a two-player game, the person taking
seat 0 in odd-numbered hands and seat 1 in even-numbered ones. Chance and
the bot are sampled from generators seeded by (seed, hand number), so the
same seed gives the same deals and bot actions for the same clicks. The bot
samples its actions from an average-policy table (`float64[I, A]` over the
game's compiled tree).

Everything a running hand sends to the page is the person's own view: their
cards, the public cards, their OpenSpiel strings and the events they can
see (`_visible`). The bot's cards, hidden events and the bot's strategy are
added once the hand is over.
"""

import math
import secrets
import threading

import numpy as np
import pyspiel

from mccfrb import counts
from mccfrb.play import views

# The 97.5% quantile of the standard normal: a 95% two-sided interval.
Z95 = 1.959963984540054


class PlayError(Exception):
  """A request the session refuses; `status` is the HTTP status to answer."""

  def __init__(self, status, message):
    super().__init__(message)
    self.status = status


class Bot:
  """Plays an average-policy table over a compiled tree.

  Args:
    tree: the game's `GameTree`.
    table: float64[num_infosets, max_actions], rows are the strategy over
      `tree.infoset_actions` (as `average_policy_table()` returns).
  """

  def __init__(self, tree, table):
    table = np.asarray(table, dtype=np.float64)
    if table.shape != (tree.num_infosets, tree.max_actions):
      raise ValueError(f"the policy table has shape {table.shape}; the game "
                       f"needs {(tree.num_infosets, tree.max_actions)}.")
    self.tree = tree
    self.table = table
    self._index = tree.infoset_index()

  def strategy(self, state):
    """(infoset key, OpenSpiel actions, probabilities) at `state`."""
    key = state.information_state_string(state.current_player())
    infoset = self._index.get(key)
    if infoset is None:
      raise RuntimeError(f"infoset {key!r} is not in the compiled tree; the "
                         "policy belongs to another game.")
    n = self.tree.infoset_num_actions[infoset]
    return (key, [int(a) for a in self.tree.infoset_actions[infoset, :n]],
            self.table[infoset, :n])


def sample_index(probs, rng):
  """Index i with probability probs[i] / sum(probs), by one uniform."""
  cdf = np.cumsum(probs)
  u = rng.random() * cdf[-1]
  return min(int(np.searchsorted(cdf, u, side="right")), len(probs) - 1)


def summarize(winnings):
  """Cumulative winnings, mean per hand and its normal 95% interval.

  The interval is mean +- 1.96 s / sqrt(n) with s the sample standard
  deviation of the per-hand winnings; None until two hands are played.
  """
  n = len(winnings)
  total = float(np.sum(winnings)) if n else 0.0
  mean = total / n if n else None
  ci = None
  if n >= 2:
    half = Z95 * float(np.std(winnings, ddof=1)) / math.sqrt(n)
    ci = [mean - half, mean + half]
  return {"hands": n, "total": total, "mean": mean, "ci95": ci}


class Hand:
  """One hand: the OpenSpiel state and what happened in it."""

  def __init__(self, session, number):
    self.number = number
    self.hand_id = f"{session.token}-{number}"
    self.seat = (number - 1) % 2  # The person's player id.
    self.state = session.game.new_initial_state()
    self.events = []     # {"actor", "text", "hidden_text", "visible"}
    self.decisions = []  # The bot's strategy where it acted.
    self._session = session
    self._chance_rng = np.random.default_rng([session.seed, number, 0])
    self._bot_rng = np.random.default_rng([session.seed, number, 1])

  @property
  def over(self):
    return self.state.is_terminal()

  def _visible(self, action):
    """Whether the person's information state after `action` tells it apart
    from every other outcome at this state (else it shows when the hand
    ends)."""
    state, person = self.state, self.seat
    def seen(a):
      try:
        return state.child(a).information_state_string(person)
      except pyspiel.SpielError:
        return None
    after = seen(action)
    if after is None:
      return False
    others = (state.legal_actions() if not state.is_chance_node()
              else [a for a, _ in state.chance_outcomes()])
    return all(seen(a) != after for a in others if a != action)

  def _record(self, actor, action, text, hidden_text):
    visible = actor == "you" or self._visible(action)
    self.events.append({"actor": actor, "text": text,
                        "hidden_text": text if visible else hidden_text,
                        "visible": visible})
    self.state.apply_action(action)

  def advance(self):
    """Plays chance and the bot until the person must act or the hand ends."""
    state, view = self.state, self._session.view
    while not state.is_terminal() and state.current_player() != self.seat:
      if state.is_chance_node():
        outcomes = state.chance_outcomes()
        action = outcomes[sample_index([p for _, p in outcomes],
                                       self._chance_rng)][0]
        self._record("chance", action,
                     *view.chance_texts(state, action, self.seat))
        continue
      key, actions, probs = self._session.bot.strategy(state)
      action = actions[sample_index(probs, self._bot_rng)]
      label = state.action_to_string(state.current_player(), action)
      self.decisions.append({
          "step": len(self.events), "infoset": key, "chosen": label,
          "actions": [{"label": state.action_to_string(
              state.current_player(), a), "prob": float(p)}
                      for a, p in zip(actions, probs)]})
      self._record("bot", action, f"Bot: {label}",
                   "Bot: acted (shown when the hand ends)")

  def play(self, action):
    """Applies the person's `action` (an OpenSpiel action id) and advances."""
    if self.over:
      raise PlayError(409, f"hand {self.number} is over; deal the next hand.")
    if isinstance(action, bool) or not isinstance(action, int):
      raise PlayError(400, f"'action' must be an integer action id, got "
                      f"{action!r}.")
    legal = self.state.legal_actions()
    if action not in legal:
      raise PlayError(400, f"action {action} is not legal here; legal: "
                      f"{', '.join(self._labelled(legal))}.")
    self._record("you", action,
                 f"You: {self.state.action_to_string(self.seat, action)}", "")
    self.advance()

  def _labelled(self, actions):
    return [f"{a} ({self.state.action_to_string(self.seat, a)})"
            for a in actions]

  def winnings(self):
    """The person's return, less half the game's constant sum (0 for
    zero-sum games, where it is exactly OpenSpiel's return)."""
    return (self.state.returns()[self.seat]
            - self._session.bot.tree.utility_sum / 2)

  def to_json(self):
    """The page's view of the hand; the bot's private information only once
    the hand is over."""
    state, person, view = self.state, self.seat, self._session.view
    over = self.over
    out = {
        "hand_id": self.hand_id, "number": self.number, "seat": person,
        "bot_seat": 1 - person, "status": "over" if over else "your_turn",
        "your_cards": view.private_cards(state, person),
        "public_cards": view.public_cards(state),
        "pot": view.pot(state, person),
        "log": [{"actor": e["actor"],
                 "text": e["text"] if over else e["hidden_text"]}
                for e in self.events],
        "information_state": state.information_state_string(person),
        "observation": _observation(state, person),
        "legal_actions": [] if over else [
            {"id": a, "label": state.action_to_string(person, a)}
            for a in state.legal_actions()],
    }
    if over:
      out["bot_cards"] = view.private_cards(state, 1 - person)
      out["bot_strategy"] = self.decisions
      out["winnings"] = self.winnings()
      out["returns"] = list(state.returns())
    return out


def _observation(state, player):
  if not state.get_game().get_type().provides_observation_string:
    return None
  return state.observation_string(player)


class PlaySession:
  """Hand after hand of `game` between a person and a `Bot`.

  Thread-safe: every public method holds one lock.

  Args:
    game: a sequential two-player `pyspiel.Game` (as `mccfrb.load_game`
      returns).
    bot: the `Bot` (its tree compiled from `game`).
    seed: an integer >= 0; None draws one (see `seed`).
    description: what the bot is, for the page.
  """

  def __init__(self, game, bot, seed=None, description=""):
    if seed is None:
      seed = int(np.random.SeedSequence().entropy % 2**32)
    self.game = game
    self.bot = bot
    self.seed = counts.check_count("seed", seed, 0, None)
    self.description = description
    self.view = views.view_for(game)
    self.token = secrets.token_hex(4)  # Tells this server from earlier ones.
    self.hand = None
    self.winnings = []  # The person's winnings, one per finished hand.
    self._lock = threading.Lock()

  def _finish(self):
    if self.hand.over and len(self.winnings) < self.hand.number:
      self.winnings.append(self.hand.winnings())

  def _find(self, hand_id):
    """The current hand, given its id; PlayError for any other id."""
    if not isinstance(hand_id, str):
      raise PlayError(400, f"'hand_id' must be a string, got {hand_id!r}.")
    token, _, number = hand_id.partition("-")
    if not number.isdigit() or not token:
      raise PlayError(400, f"malformed hand id {hand_id!r}.")
    if token != self.token:
      raise PlayError(410, "the server restarted; reload the page.")
    latest = self.hand.number if self.hand else 0
    if not 1 <= int(number) <= latest:
      raise PlayError(404, f"unknown hand {hand_id!r}.")
    if int(number) != latest:
      raise PlayError(409, f"hand {number} is over; the current hand is "
                      f"{latest}.")
    return self.hand

  def new_hand(self, after=None):
    """Deals the next hand and plays until the person acts.

    Args:
      after: optional id of the hand the page last showed; refused when a
        later hand exists (a second click, or another tab).
    """
    with self._lock:
      if self.hand is not None and not self.hand.over:
        raise PlayError(409, f"hand {self.hand.number} is still being "
                        "played; finish it first.")
      if after is not None:
        self._find(after)
      elif self.hand is not None:
        raise PlayError(409, "'after' must name the last hand "
                        f"({self.hand.hand_id}) once hands have been played.")
      self.hand = Hand(self, (self.hand.number if self.hand else 0) + 1)
      self.hand.advance()
      self._finish()
      return self._to_json()

  def act(self, hand_id, action):
    """Plays the person's `action` in hand `hand_id`."""
    with self._lock:
      self._find(hand_id).play(action)
      self._finish()
      return self._to_json()

  def to_json(self):
    """The match and the current hand, as the page shows them."""
    with self._lock:
      return self._to_json()

  def _to_json(self):
    return {
        "game": str(self.game), "kind": self.view.kind,
        "pot_note": self.view.pot_note, "bot": self.description,
        "seed": self.seed, "stats": summarize(self.winnings),
        "hand": self.hand.to_json() if self.hand else None,
    }
