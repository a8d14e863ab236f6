"""Whether a walk of every history can finish, decided before it starts.

The exact evaluators compile the game's tree, and the streaming walks
(mccfrb/solvers/stream.py) expand every history of the game one public
state at a time. Both are asked first how many histories the game has
(Knuth's estimate, `tree_size.estimate_num_nodes`, a fraction of a second
of random probes, remembered per game), and refuse a game they cannot
finish in one line that points to head-to-head evaluation.
"""

import math

from mccfrb.games import tree_size

# Seconds of random probes for an estimate (at least one probe runs).
ESTIMATE_SECONDS = 0.25
# Histories a streaming walk expands per second, at best: goofspiel with 6
# cards, 7.2e8 histories, in 75 s (about 1e7 a second, docs/pages/engines.md).
STREAM_HISTORIES_PER_SECOND = 1e7
# Bytes a streaming walk holds per history expanded: it keeps the key of
# every public state it walked (to find public states that merge), 5 bytes
# per history on goofspiel with 5 cards (431,536 public keys in a 16 MB set
# for 3.3 million histories). Games with fewer public states per history
# (liar's dice: the dice are private) hold less, so the estimate takes 1.
STREAM_BYTES_PER_HISTORY = 1.0
# A streaming walk estimated to need longer than this is refused.
MAX_STREAM_SECONDS = 7 * 24 * 3600.0

HEAD_TO_HEAD = (
    "Use head-to-head evaluation instead: mccfrb.head_to_head(game, "
    "policy, opponent) plays the two policies in both seats by Monte Carlo, "
    "and a policy that loses x a game to some opponent has exploitability "
    "at least x (the bound head to head gives).")

# Games whose public states hold about every history of a depth (a player
# sees none of the other's moves, only how many were made): a streaming walk
# holds every history of the game at once, and an episode of public-state
# sampling expands them all. Small boards fit; large ones are refused by
# their estimated size (`check_whole_depth`).
WHOLE_DEPTH_PUBLIC_STATES = ("phantom_ttt", "dark_hex")
# Bytes a streaming walk of such a game holds per history (measured: about
# 200 on dark_hex 2x3, 1.1e5 histories, and 550 on 3x2 abrupt, 2.5e5).
WHOLE_DEPTH_BYTES_PER_HISTORY = 512
# Histories an episode of public-state sampling may expand on such a game
# (an episode of dark_hex 3x2 abrupt, 2.5e5 histories, takes about 0.2 s).
WHOLE_DEPTH_EPISODE_HISTORIES = 1e6
# What fits, named in the refusals.
WHOLE_DEPTH_FITS = ("dark_hex boards of up to 6 cells (2x2, 2x3, 3x2: "
                    "1e5-2.5e5 histories) fit; phantom_ttt and dark_hex 3x3 "
                    "(2e10) do not")

_ESTIMATES = {}


def estimated_histories(game):
  """Knuth's estimate of the number of histories of `game` (a loaded
  `pyspiel.Game`), remembered per game string."""
  key = str(game)
  if key not in _ESTIMATES:
    _ESTIMATES[key] = tree_size.estimate_num_nodes(
        game, time_limit=ESTIMATE_SECONDS)[0]
  return _ESTIMATES[key]


def check_exact_walk(game, max_nodes=None):
  """ValueError, before compiling, when `game` is too large for an exact
  evaluation (`tree_size.check_estimated_size` at `max_nodes`, default
  from the memory available), pointing to head-to-head evaluation."""
  if max_nodes is None:
    max_nodes = tree_size.default_max_nodes()
  estimate = estimated_histories(game)
  if (estimate > tree_size.MAX_NODES_LIMIT
      or estimate > tree_size.REFUSE_FACTOR * max_nodes):
    raise ValueError(
        f"{game} is too large to walk for an exact evaluation: Knuth's "
        f"estimator puts it at about {estimate:.2g} histories, above the "
        f"{min(max_nodes, tree_size.MAX_NODES_LIMIT):,} a compiled tree "
        f"can hold here. {HEAD_TO_HEAD}")


def check_streaming_walk(game, what="the streaming walk"):
  """ValueError when a streaming walk of `game` cannot finish: its
  estimated memory (STREAM_BYTES_PER_HISTORY a history) is above the
  memory available, or its estimated time above MAX_STREAM_SECONDS.
  `game` None (an engine of a compiled tree, `engines.compiled`): the tree
  holds every history already, so the walk fits."""
  if game is None:
    return None
  if game.get_type().short_name in WHOLE_DEPTH_PUBLIC_STATES:
    available = tree_size.available_memory()
    limit = (math.inf if available is None
             else available / WHOLE_DEPTH_BYTES_PER_HISTORY)
    return check_whole_depth(game, f"{what} of {game} cannot finish",
                             limit, HEAD_TO_HEAD)
  estimate = estimated_histories(game)
  seconds = estimate / STREAM_HISTORIES_PER_SECOND
  need = estimate * STREAM_BYTES_PER_HISTORY
  available = tree_size.available_memory()
  if available is not None and need > available:
    why = (f"it would hold about {need / 2**30:.2g} GiB, more than the "
           f"{available / 2**30:.3g} GiB available")
  elif seconds > MAX_STREAM_SECONDS:
    why = (f"it would take about {seconds / 86400:.2g} days at "
           f"{STREAM_HISTORIES_PER_SECOND:.0e} histories a second")
  else:
    return estimate
  raise ValueError(
      f"{what} of {game} cannot finish: it expands every one of the game's "
      f"about {estimate:.2g} histories (Knuth's estimator), and {why}. "
      f"{HEAD_TO_HEAD}")


def check_whole_depth(game, what, max_histories, fix):
  """ValueError when `game` (a loaded `pyspiel.Game`) has public states of
  every history of a depth (WHOLE_DEPTH_PUBLIC_STATES) and more than
  `max_histories` histories by Knuth's estimate: a walk or an episode that
  holds every history at once would not fit or not finish. One line:
  `what` (the start of the sentence), the estimate, what fits, `fix`.

  Returns:
    The estimate, or None for other games (not estimated).
  """
  name = game.get_type().short_name
  if name not in WHOLE_DEPTH_PUBLIC_STATES:
    return None
  estimate = estimated_histories(game)
  if estimate <= max_histories:
    return estimate
  raise ValueError(
      f"{what}: a public state of {name} holds about every history of its "
      f"depth, so it would hold all of the game's about {estimate:.2g} "
      f"histories (Knuth's estimator) at once, above the {max_histories:.2g} "
      f"that fit here; {WHOLE_DEPTH_FITS}. {fix}")
