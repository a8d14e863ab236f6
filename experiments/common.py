"""Helpers shared by the experiment binaries (no flags are defined here)."""

GOOFSPIEL4 = ("goofspiel(num_cards=4,imp_info=True,points_order=random,"
              "returns_type=point_difference)")
GOOFSPIEL5 = ("goofspiel(num_cards=5,imp_info=True,points_order=random,"
              "returns_type=point_difference)")


def rejoin_game_list(items):
  """Re-joins the items of a comma-split flag that belong inside parentheses.

  absl's list flags split 'goofspiel(num_cards=4,imp_info=True)' at every
  comma; this puts the pieces of one game string back together.

  Raises:
    ValueError: the parentheses do not balance.
  """
  games, current = [], ""
  for item in items:
    current = f"{current},{item}" if current else item
    if current.count("(") == current.count(")"):
      games.append(current.strip())
      current = ""
  if current:
    raise ValueError(f"Unbalanced parentheses in game list: {current!r}")
  return games
