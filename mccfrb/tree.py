"""Compiling an OpenSpiel game into a flat-array game tree.

One walk over pyspiel states produces a `GameTree`: a NamedTuple of numpy
arrays that numba kernels traverse without touching Python objects.

Node numbering: the root is node 0 and the children of a node occupy the
contiguous ids `child_start[n] .. child_start[n] + num_children[n] - 1`, in the
order of OpenSpiel's legal actions (decision nodes) or chance outcomes
(chance nodes). Every child id is larger than its parent's, so a forward sweep
over ids is top-down and a reverse sweep is bottom-up.
"""

import array
import logging
import time
from typing import NamedTuple

import numpy as np

from mccfrb import games

CHANCE = 0
DECISION = 1
TERMINAL = 2

# 3,346,656 histories of goofspiel(5) fit with room to spare.
DEFAULT_MAX_NODES = 20_000_000

# compile_tree refuses a game before walking it when Knuth's estimate of its
# size exceeds max_nodes by this factor (an unbiased estimate, averaged over
# many probes, rarely overshoots a tree that fits by this much).
REFUSE_FACTOR = 10
# Memory of a compiled tree per node, for the size messages.
BYTES_PER_NODE = 40
PROGRESS_SECONDS = 5.0

_logger = logging.getLogger(__name__)


class GameTree(NamedTuple):
  """A two-player game tree as flat arrays.

  Attributes:
    node_kind: int8[N], CHANCE (0), DECISION (1) or TERMINAL (2).
    node_player: int8[N], acting player at decision nodes, -1 otherwise.
    node_infoset: int32[N], infoset id at decision nodes, -1 otherwise.
    child_start: int32[N], id of the first child (0 for terminals).
    num_children: int32[N], number of children (0 for terminals).
    edge_prob: float64[N], probability of the chance outcome leading into the
      node when its parent is a chance node, 1.0 otherwise.
    edge_action: int64[N], OpenSpiel action leading into the node (-1 at root).
    utility: float64[N], terminal utility of player 0 (0 elsewhere).
    infoset_player: int8[I], the player acting at each infoset.
    infoset_num_actions: int32[I], number of legal actions.
    infoset_actions: int64[I, A], OpenSpiel action ids, padded with -1.
    infoset_keys: bytes_[I], the UTF-8 `information_state_string` of each
      infoset (kept out of every kernel; see `infoset_key`).
    utility_sum: u0 + u1 at every terminal (0 for zero-sum games).
    max_depth: number of nodes on the longest root-to-terminal path.
    max_actions: A, the largest number of actions at any node.
  """
  node_kind: np.ndarray
  node_player: np.ndarray
  node_infoset: np.ndarray
  child_start: np.ndarray
  num_children: np.ndarray
  edge_prob: np.ndarray
  edge_action: np.ndarray
  utility: np.ndarray
  infoset_player: np.ndarray
  infoset_num_actions: np.ndarray
  infoset_actions: np.ndarray
  infoset_keys: np.ndarray
  utility_sum: float
  max_depth: int
  max_actions: int

  @property
  def num_nodes(self):
    return len(self.node_kind)

  @property
  def num_infosets(self):
    return len(self.infoset_player)

  def legal_mask(self):
    """bool[I, A]: True where column a is a legal action of infoset I."""
    return (np.arange(self.max_actions)[None, :]
            < self.infoset_num_actions[:, None])

  def infoset_key(self, infoset):
    """The `information_state_string` of infoset id `infoset`."""
    return self.infoset_keys[infoset].decode("utf-8")

  def infoset_index(self):
    """A dict from information state string to infoset id."""
    return {k.decode("utf-8"): i for i, k in enumerate(self.infoset_keys)}

  def nbytes(self):
    """Memory held by the arrays, in bytes."""
    return sum(v.nbytes for v in self if isinstance(v, np.ndarray))

  def kernel_args(self):
    """The arrays every traversal kernel takes, in their fixed order."""
    return (self.node_kind, self.node_player, self.node_infoset,
            self.child_start, self.num_children, self.edge_prob, self.utility)


def estimate_num_nodes(game, num_probes=1000, seed=0, time_limit=2.0):
  """Knuth's estimate of the number of histories (nodes) of `game`.

  Each probe walks from the root to a terminal, choosing uniformly among the
  legal actions or chance outcomes of every node, and estimates the node
  count as 1 + b_0 + b_0 b_1 + ... (b_d the branching factors along the
  path); the estimate is the mean over probes, unbiased for the true count
  (Knuth 1975, "Estimating the efficiency of backtrack programs").

  Args:
    game: a game string or `pyspiel.Game`; passed through `load_game`.
    num_probes: the number of root-to-leaf probes.
    seed: seed of the probes' generator (the estimate is deterministic).
    time_limit: stop after this many seconds even if fewer probes ran (at
      least one probe always runs).

  Returns:
    (estimate, probes): the estimated number of nodes (a float) and the
    number of probes it averages.
  """
  game = games.load_game(game)
  rng = np.random.default_rng(seed)
  root = game.new_initial_state()
  deadline = time.perf_counter() + time_limit
  total, probes = 0.0, 0
  while probes < num_probes and (probes == 0 or time.perf_counter() < deadline):
    state = root.clone()
    estimate, width = 1.0, 1.0
    while not state.is_terminal():
      if state.is_chance_node():
        actions = [a for a, _ in state.chance_outcomes()]
      else:
        actions = state.legal_actions()
      width *= len(actions)
      estimate += width
      state.apply_action(actions[rng.integers(len(actions))])
    total += estimate
    probes += 1
  return total / probes, probes


def _check_estimated_size(game, max_nodes):
  """Raises ValueError when Knuth's estimate is far above `max_nodes`."""
  estimate, probes = estimate_num_nodes(game)
  if estimate > REFUSE_FACTOR * max_nodes:
    raise ValueError(
        f"{game} is far too large to compile: Knuth's estimator ({probes} "
        f"random root-to-leaf probes) puts it at about {estimate:.2g} "
        f"histories, above max_nodes={max_nodes} (compiling would need about "
        f"{estimate * BYTES_PER_NODE / 2**30:.3g} GiB). Choose a smaller "
        "game (for example fewer cards or dice) or, if the estimate is "
        "wrong, pass a larger max_nodes.")
  return estimate


def _progress_message(nodes, infosets, elapsed, estimate):
  rate = nodes / max(elapsed, 1e-9)
  if estimate > nodes:
    left = f"about {(estimate - nodes) / rate:.0f}s left"
  else:
    left = "time left unknown (beyond the size estimate)"
  return (f"compile_tree: {nodes:,} nodes, {infosets:,} infosets, "
          f"{rate:,.0f} nodes/s, {left} (estimated size {estimate:.3g} nodes)")


def compile_tree(game, max_nodes=DEFAULT_MAX_NODES, verbose=False):
  """Walks every history of `game` once and returns its `GameTree`.

  Args:
    game: a game string or `pyspiel.Game`; passed through `load_game`.
    max_nodes: the compile refuses games with more histories than this,
      before memory runs out; a game whose estimated size
      (`estimate_num_nodes`) is above REFUSE_FACTOR * max_nodes is refused
      before the walk starts, within a few seconds.
    verbose: print progress (nodes, rate, estimated time left) every
      PROGRESS_SECONDS seconds of a long compile; otherwise the same lines
      go to the `mccfrb.tree` logger at INFO level.

  Returns:
    The `GameTree`.

  Raises:
    ValueError: the game has (or is estimated to have far) more than
      `max_nodes` histories, its legal actions differ between histories of
      one infoset, or `load_game` refuses it.
  """
  game = games.load_game(game)
  if not isinstance(max_nodes, (int, np.integer)) or max_nodes < 1:
    raise ValueError(f"max_nodes must be a positive integer, got {max_nodes!r}.")
  if max_nodes >= 2**31:
    raise ValueError(f"max_nodes must be below 2**31, got {max_nodes}.")
  estimate = _check_estimated_size(game, max_nodes)
  kind = array.array("b", [0])
  player = array.array("b", [-1])
  infoset = array.array("i", [-1])
  child_start = array.array("i", [0])
  num_children = array.array("i", [0])
  edge_prob = array.array("d", [1.0])
  edge_action = array.array("q", [-1])
  utility = array.array("d", [0.0])
  keys = {}
  iset_player = array.array("b")
  iset_actions = []
  utility_sum = None
  max_depth = 0
  start_time = time.perf_counter()
  next_report = start_time + PROGRESS_SECONDS

  stack = [(0, game.new_initial_state(), 1)]
  while stack:
    nid, state, depth = stack.pop()
    if state.is_terminal():
      returns = state.returns()
      kind[nid] = TERMINAL
      utility[nid] = returns[0]
      total = returns[0] + returns[1]
      if utility_sum is None:
        utility_sum = total
      elif abs(total - utility_sum) > 1e-9 * max(1.0, abs(total)):
        raise ValueError(f"{game} is not constant-sum: returns sum to "
                         f"{utility_sum} and {total} at different terminals.")
      max_depth = max(max_depth, depth)
      continue
    if state.is_chance_node():
      outcomes = state.chance_outcomes()
      actions = [a for a, _ in outcomes]
      probs = [p for _, p in outcomes]
      kind[nid] = CHANCE
    else:
      p = state.current_player()
      key = state.information_state_string(p)
      actions = state.legal_actions()
      probs = None
      iid = keys.get(key)
      if iid is None:
        iid = keys[key] = len(iset_player)
        iset_player.append(p)
        iset_actions.append(tuple(actions))
      elif iset_actions[iid] != tuple(actions) or iset_player[iid] != p:
        raise ValueError(
            f"{game}: histories of infoset {key!r} disagree on the acting "
            "player or legal actions; mccfrb needs well-formed infosets.")
      kind[nid] = DECISION
      player[nid] = p
      infoset[nid] = iid
    start = len(kind)
    count = len(actions)
    if start + count > max_nodes:
      raise ValueError(
          f"{game} has more than max_nodes={max_nodes} histories: compiling "
          f"stopped after {start} nodes and {len(iset_player)} infosets. "
          f"Pass a larger max_nodes (memory is about {BYTES_PER_NODE} bytes "
          "per node) or choose a smaller game.")
    child_start[nid] = start
    num_children[nid] = count
    for k, a in enumerate(actions):
      kind.append(0)
      player.append(-1)
      infoset.append(-1)
      child_start.append(0)
      num_children.append(0)
      edge_prob.append(probs[k] if probs is not None else 1.0)
      edge_action.append(a)
      utility.append(0.0)
    for k in range(count - 1, -1, -1):
      stack.append((start + k, state.child(actions[k]), depth + 1))
    if start >> 12 != (start + count) >> 12:  # Look at the clock rarely.
      now = time.perf_counter()
      if now >= next_report:
        next_report = now + PROGRESS_SECONDS
        message = _progress_message(start + count, len(iset_player),
                                    now - start_time, estimate)
        if verbose:
          print(message, flush=True)
        else:
          _logger.info(message)

  max_actions = max((len(a) for a in iset_actions), default=1)
  max_actions = max(max_actions, int(max(num_children)))
  actions_arr = np.full((len(iset_actions), max_actions), -1, dtype=np.int64)
  for i, acts in enumerate(iset_actions):
    actions_arr[i, :len(acts)] = acts
  return GameTree(
      node_kind=np.frombuffer(kind, dtype=np.int8).copy(),
      node_player=np.frombuffer(player, dtype=np.int8).copy(),
      node_infoset=np.frombuffer(infoset, dtype=np.int32).copy(),
      child_start=np.frombuffer(child_start, dtype=np.int32).copy(),
      num_children=np.frombuffer(num_children, dtype=np.int32).copy(),
      edge_prob=np.frombuffer(edge_prob, dtype=np.float64).copy(),
      edge_action=np.frombuffer(edge_action, dtype=np.int64).copy(),
      utility=np.frombuffer(utility, dtype=np.float64).copy(),
      infoset_player=np.frombuffer(iset_player, dtype=np.int8).copy(),
      infoset_num_actions=np.array([len(a) for a in iset_actions],
                                   dtype=np.int32),
      infoset_actions=actions_arr,
      infoset_keys=np.array([k.encode("utf-8") for k in keys],
                            dtype=np.bytes_),
      utility_sum=float(utility_sum or 0.0),
      max_depth=max_depth,
      max_actions=max_actions,
  )
