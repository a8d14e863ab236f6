"""Loading and validating OpenSpiel games for mccfrb.

`load_game` is the single entry point through which every solver, evaluator
and experiment obtains a game. It resolves name aliases, converts
simultaneous-move and normal-form games to turn-based ones, and rejects games
the algorithms cannot handle with a `ValueError` that says what to do instead.
"""

import difflib
import re

import pyspiel

from mccfrb.games import spiel_load as spell

# Friendly names accepted on top of OpenSpiel's registered names.
ALIASES = {"matching_pennies": "matrix_mp"}

_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _check_parameter_syntax(spec, params):
  """Raises ValueError unless `params` looks like `k=v,k=v` with balanced ()."""
  depth = 0
  for ch in params:
    depth += {"(": 1, ")": -1}.get(ch, 0)
    if depth < 0:
      break
  if depth != 0:
    raise ValueError(
        f"Malformed game string {spec!r}: unbalanced parentheses. Use "
        "'name(key=value,key=value)', e.g. 'goofspiel(num_cards=4)'.")
  # Split the top level on commas and check every item is key=value.
  items = spell.split_top_level(params)
  for item in items:
    if not item.strip() and len(items) == 1:
      continue  # 'name()' has no parameters.
    key, eq, value = item.partition("=")
    if not eq or not _NAME_RE.match(key.strip()) or not value.strip():
      raise ValueError(
          f"Malformed game string {spec!r}: parameter {item!r} is not of the "
          "form key=value. Use 'name(key=value,key=value)', e.g. "
          "'goofspiel(num_cards=4,imp_info=True)'.")


def suggestions(name, names, n=3):
  """Up to `n` of `names` that `name` may have meant: prefix matches first
  ('kuhn' -> 'kuhn_poker'), then close spellings ('leduc_poke')."""
  prefixed = sorted(c for c in names if c.startswith(name))
  close = difflib.get_close_matches(name, names, n=n, cutoff=0.6)
  return list(dict.fromkeys(prefixed + close))[:n]


def _load_from_string(spec):
  spec = spec.strip()
  name, paren, rest = spec.partition("(")
  name = name.strip()
  if not _NAME_RE.match(name):
    raise ValueError(
        f"Malformed game string {spec!r}: {name!r} is not a game name. Use "
        "'name' or 'name(key=value,...)', e.g. 'leduc_poker'.")
  name = ALIASES.get(name, name)
  registered = pyspiel.registered_names()
  if name not in registered:
    close = suggestions(name, list(registered) + list(ALIASES))
    hint = (f" Did you mean {', '.join(repr(c) for c in close)}?" if close
            else " See pyspiel.registered_names() for the full list.")
    raise ValueError(f"Unknown game {name!r}.{hint}")
  if paren:
    if not rest.endswith(")"):
      raise ValueError(
          f"Malformed game string {spec!r}: it must end with ')'. Use "
          "'name(key=value,key=value)'.")
    _check_parameter_syntax(spec, rest[:-1])
    spell.check_parameter_names(name, rest[:-1], spec)
    spec = name + "(" + rest
  else:
    spec = name
  return spell.load(spec)


def is_two_player_zero_sum(game):
  """Whether `game` has two players and zero- or constant-sum returns."""
  return game.num_players() == 2 and game.get_type().utility in (
      pyspiel.GameType.Utility.ZERO_SUM, pyspiel.GameType.Utility.CONSTANT_SUM)


GENERAL_SOLVERS = ("CFRSolver, OutcomeSamplingSolver, MCCFRbSolver (every "
                   "baseline but the public one, on a compiled tree), "
                   "ExternalSamplingSolver and nash_conv")


def refuse_general(game, what="this method"):
  """ValueError unless `game` is two-player zero- or constant-sum, naming
  what runs such games."""
  if is_two_player_zero_sum(game):
    return
  if game.num_players() != 2:
    why = f"has {game.num_players()} players"
  else:
    why = f"is {game.get_type().utility.name}, not zero- or constant-sum"
  raise ValueError(
      f"{game} {why}; {what} is for two-player zero-sum games only. "
      f"{GENERAL_SOLVERS} run games with any number of players and "
      "general-sum games.")


def load_game(spec, general=False):
  """Loads and validates a two-player zero-sum game for mccfrb.

  Args:
    spec: an OpenSpiel game string with optional parameters (for example
      'leduc_poker' or 'goofspiel(num_cards=4,imp_info=True)'), the alias
      'matching_pennies' (OpenSpiel's 'matrix_mp'), or an already-loaded
      `pyspiel.Game`.
    general: also accept games with more than two players and general-sum
      games (the solvers and evaluators that run them pass True: the CFR
      family, outcome and external sampling, `nash_conv`; docs, "Games").

  Returns:
    A sequential (turn-based) `pyspiel.Game`. Simultaneous-move and
    normal-form games are converted with `pyspiel.convert_to_turn_based`.

  Raises:
    ValueError: unknown game name (with close names suggested), malformed
      parameter string, not exactly two players, not zero- or constant-sum,
      sampled (non-enumerable) chance, or no information state strings.
    TypeError: `spec` is neither a string nor a `pyspiel.Game`.
  """
  if isinstance(spec, pyspiel.Game):
    game = spec
  elif isinstance(spec, str):
    game = _load_from_string(spec)
  else:
    raise TypeError(
        f"load_game takes a game string or a pyspiel.Game, not {type(spec)}.")
  gtype = game.get_type()
  if not general:
    refuse_general(game)
  if gtype.chance_mode == pyspiel.GameType.ChanceMode.SAMPLED_STOCHASTIC:
    raise ValueError(
        f"{game} has sampled chance outcomes that cannot be enumerated; "
        "mccfrb needs explicit chance probabilities to compile the tree.")
  if gtype.dynamics == pyspiel.GameType.Dynamics.SIMULTANEOUS:
    game = pyspiel.convert_to_turn_based(game)
    gtype = game.get_type()
  if not gtype.provides_information_state_string:
    raise ValueError(
        f"{game} provides no information state strings, which mccfrb uses "
        "to identify information sets.")
  return game
