"""Whether a walk of every history can finish, decided before it starts.

The exact evaluators compile the game's tree, and the streaming walks
(mccfrb/evaluation/stream.py) expand every history of the game one public
state at a time. Both are asked first how many histories the game has
(Knuth's estimate, `tree_size.estimate_num_nodes`, a fraction of a second
of random probes, remembered per game), and refuse a game they cannot
finish in one line that points to head-to-head evaluation.
"""

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
# sees none of the other's moves): a streaming walk holds the histories of
# a public state at once, billions of them here, whatever the estimate.
WHOLE_DEPTH_PUBLIC_STATES = ("phantom_ttt",)

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
  name = game.get_type().short_name
  if name in WHOLE_DEPTH_PUBLIC_STATES:
    raise ValueError(
        f"{what} of {game} cannot finish: it holds the histories of a "
        f"public state at once, and a public state of {name} holds about "
        f"every history of its depth (billions). {HEAD_TO_HEAD}")
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
