"""Whether a state handed to a policy is a state of the policy's game.

mccfrb plays simultaneous-move games in their turn-based form
(`pyspiel.convert_to_turn_based`, as `mccfrb.load_game` loads them), so a
policy of such a game answers the turn-based game's states, one player at
a time. A state of the simultaneous-move game itself (joint actions at a
simultaneous node), or of another game, is refused in one line instead of
being answered (uniformly) as if it were one of the policy's.
"""

import pyspiel

_SIMULTANEOUS = pyspiel.GameType.Dynamics.SIMULTANEOUS


def _same_game(a, b):
  """Whether games `a` and `b` are one game (equal names and parameters,
  defaults included)."""
  return (a == b or (a.get_type().short_name == b.get_type().short_name
                     and a.get_parameters() == b.get_parameters()))


class StateCheck:
  """Checks that states are states of one game (see the module docstring).

  Games found equal are remembered by their string, so a policy pays one
  string comparison per state.

  Args:
    game: the policy's `pyspiel.Game` (turn-based, as `load_game` gives).
    what: how errors name the policy (for example "EnginePolicy").
  """

  def __init__(self, game, what):
    self.game = game
    self.what = what
    self._accepted = {str(game)}

  def __call__(self, state):
    """Raises ValueError unless `state` is a state of the policy's game."""
    state_game = state.get_game()
    name = str(state_game)
    if name in self._accepted:
      return
    if state_game.get_type().dynamics == _SIMULTANEOUS:
      if _same_game(pyspiel.convert_to_turn_based(state_game), self.game):
        raise ValueError(
            f"{self.what} plays the turn-based form of the simultaneous-move "
            f"game {name}, and was given a state of {name} itself (a "
            "simultaneous node takes joint actions). Load the game with "
            f"pyspiel.load_game_as_turn_based({name!r}) (or "
            "pyspiel.convert_to_turn_based(game), as mccfrb.load_game "
            "does) and ask about its states.")
    elif _same_game(state_game, self.game):
      self._accepted.add(name)
      return
    raise ValueError(
        f"{self.what} plays {self.game} and was given a state of another "
        f"game, {name}. Ask it about states of its own game "
        "(policy.game.new_initial_state()).")
