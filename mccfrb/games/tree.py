"""Compiling an OpenSpiel game into a flat-array game tree.

One walk over pyspiel states produces a `GameTree`: a NamedTuple of numpy
arrays that numba kernels traverse without touching Python objects.

Node numbering: the root is node 0 and the children of a node occupy the
contiguous ids `child_start[n] .. child_start[n] + num_children[n] - 1`, in the
order of OpenSpiel's legal actions (decision nodes) or chance outcomes
(chance nodes). Every child id is larger than its parent's, so a forward sweep
over ids is top-down and a reverse sweep is bottom-up. Nodes are expanded
(their children numbered) in depth-first preorder, so at equal depth node ids
follow the lexicographic order of the histories, and infoset ids are given in
the order of first expansion.
"""

import array
import itertools
import logging
import time
import zlib
from typing import NamedTuple

import numpy as np
import pyspiel

from mccfrb import counts
from mccfrb import games
from mccfrb.games import tree_size
from mccfrb.games.tree_size import REFUSE_FACTOR  # pylint: disable=unused-import
from mccfrb.games.tree_size import estimate_num_nodes  # pylint: disable=unused-import

CHANCE = 0
DECISION = 1
TERMINAL = 2

# `max_nodes=None` (every solver's default) means
# `tree_size.default_max_nodes()`: what the memory available at the call
# allows.
DEFAULT_MAX_NODES = None
# Memory of a compiled tree per node, for the size messages (27 bytes of
# per-node arrays plus the per-infoset ones; 28.6-29.8 on Leduc, goofspiel
# 4 and 5, liars_dice with one die).
BYTES_PER_NODE = 30
PROGRESS_SECONDS = 5.0
# A compile that lasts longer shows a progress bar (tqdm, standard error).
BAR_AFTER_SECONDS = 2.0
# The walk asks Knuth's estimator for the tree's size (and may refuse the
# game, see tree_size.check_estimated_size) when it passes this many nodes
# or reports progress for the first time, whichever comes first: small
# games are walked faster than 1000 probes take.
ESTIMATE_AFTER = 2**16
# Infoset strings are zlib-compressed in blocks of this many.
KEYS_PER_BLOCK = 64
# Games whose UndoAction OpenSpiel 2.0.2 implements correctly: these are
# walked with apply_action/undo_action on one state, all others by cloning
# (some games implement UndoAction wrongly, e.g. dots_and_boxes). Every name
# here is checked against the cloning walk in tests/test_tree.py.
UNDO_GAMES = frozenset(
    ["kuhn_poker", "tic_tac_toe", "mnk", "nim", "battleship"])

_TERMINAL_PLAYER = int(pyspiel.PlayerId.TERMINAL)

_logger = logging.getLogger(__name__)


def narrowest_int(max_value):
  """The narrowest signed integer dtype holding -1 .. `max_value`.

  Signed on purpose: numba turns arithmetic on unsigned scalars into uint64,
  and uint64 mixed with int64 into float64.
  """
  for dtype in (np.int8, np.int16, np.int32):
    if max_value <= np.iinfo(dtype).max:
      return np.dtype(dtype)
  return np.dtype(np.int64)


def _children(starts, counts):
  """(child ids, index into `starts` of each child's parent), in the order
  of the parents."""
  counts = counts.astype(np.int64)
  owner = np.repeat(np.arange(len(counts)), counts)
  offsets = np.arange(len(owner)) - (np.cumsum(counts) - counts)[owner]
  return starts[owner] + offsets, owner


class GameTree(NamedTuple):
  """A game tree as flat arrays.

  Two-player zero- and constant-sum games store player 0's utility; other
  games (more players, general-sum: "general" trees) also store every
  player's return in `returns`, which `kernel_args()` then passes as the
  utility (the kernels that run such games read it through
  `kernels.exact.payoff`).

  Integer arrays have the narrowest type that fits the tree (`narrowest_int`),
  chosen when it is compiled; kernels are compiled by numba for each type.

  Attributes:
    node_kind: int8[N], CHANCE (0), DECISION (1) or TERMINAL (2).
    node_player: int8[N], acting player at decision nodes, -1 otherwise.
    node_infoset: int32[N], infoset id at decision nodes, -1 otherwise.
    child_start: int32[N], id of the first child (0 for terminals).
    num_children: int8, int16 or int32 [N], number of children (0 for
      terminals).
    edge_prob: float64[N], probability of the chance outcome leading into the
      node when its parent is a chance node, 1.0 otherwise.
    utility: float64[N], terminal utility of player 0 (0 elsewhere).
    infoset_player: int8[I], the player acting at each infoset.
    infoset_num_actions: int32[I], number of legal actions.
    infoset_actions: int[I, A], OpenSpiel action ids, padded with -1.
    chance_actions: int[C], the OpenSpiel action (outcome) of every child of
      a chance node, in node id order (`edge_actions` gives every edge's).
    infoset_key_data: uint8[*], the UTF-8 `information_state_string` of
      every infoset, in blocks of KEYS_PER_BLOCK, each zlib-compressed
      (kept out of every kernel; see `infoset_key`, `infoset_strings`).
    infoset_key_blocks: int64[B+1], where each block starts in
      `infoset_key_data`.
    utility_sum: u0 + u1 at every terminal (0 for zero-sum games; 0 and
      unused on general trees).
    max_depth: number of nodes on the longest root-to-terminal path.
    max_actions: A, the largest number of actions at any node.
    returns: float64[N, P], every player's return at terminals (0
      elsewhere), on general trees only; None on two-player zero- and
      constant-sum trees.
  """
  node_kind: np.ndarray
  node_player: np.ndarray
  node_infoset: np.ndarray
  child_start: np.ndarray
  num_children: np.ndarray
  edge_prob: np.ndarray
  utility: np.ndarray
  infoset_player: np.ndarray
  infoset_num_actions: np.ndarray
  infoset_actions: np.ndarray
  chance_actions: np.ndarray
  infoset_key_data: np.ndarray
  infoset_key_blocks: np.ndarray
  utility_sum: float
  max_depth: int
  max_actions: int
  returns: np.ndarray = None

  @property
  def is_general(self):
    """Whether the game has more than two players or is general-sum."""
    return self.returns is not None

  @property
  def num_players(self):
    return 2 if self.returns is None else self.returns.shape[1]

  @property
  def payoffs(self):
    """The utility the kernels take: player 0's, float64[N], or on general
    trees every player's, float64[N, P] (`returns`)."""
    return self.utility if self.returns is None else self.returns

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

  def _key_block(self, block):
    """The infoset strings of one block, as a list of str."""
    lo, hi = self.infoset_key_blocks[block], self.infoset_key_blocks[block + 1]
    raw = zlib.decompress(self.infoset_key_data[lo:hi].tobytes())
    count = min(KEYS_PER_BLOCK, self.num_infosets - block * KEYS_PER_BLOCK)
    keys, end = [], 4 * count
    for length in np.frombuffer(raw, dtype=np.uint32, count=count).tolist():
      keys.append(raw[end:end + length].decode("utf-8"))
      end += length
    return keys

  def infoset_key(self, infoset):
    """The `information_state_string` of infoset id `infoset`."""
    block, position = divmod(int(infoset), KEYS_PER_BLOCK)
    return self._key_block(block)[position]

  def infoset_strings(self):
    """The `information_state_string` of every infoset, a list by id."""
    out = []
    for block in range(len(self.infoset_key_blocks) - 1):
      out.extend(self._key_block(block))
    return out

  def infoset_index(self):
    """A dict from information state string to infoset id."""
    return {k: i for i, k in enumerate(self.infoset_strings())}

  def node_parents(self):
    """int64[N]: the parent of every node, -1 at the root."""
    parent = np.full(self.num_nodes, -1, dtype=np.int64)
    inner = np.flatnonzero(self.num_children > 0)
    ids, owner = _children(self.child_start[inner], self.num_children[inner])
    parent[ids] = inner[owner]
    return parent

  def edge_actions(self):
    """int64[N]: the OpenSpiel action leading into every node (-1 at root).

    Decision edges come from `infoset_actions`, chance edges from
    `chance_actions`.
    """
    actions = np.full(self.num_nodes, -1, dtype=np.int64)
    inner = np.flatnonzero(self.num_children > 0)
    ids, owner = _children(self.child_start[inner], self.num_children[inner])
    parent = inner[owner]
    position = ids - self.child_start[parent]
    decision = self.node_kind[parent] == DECISION
    actions[ids[decision]] = self.infoset_actions[
        self.node_infoset[parent[decision]], position[decision]]
    actions[np.sort(ids[~decision])] = self.chance_actions
    return actions

  def nbytes(self):
    """Memory held by the arrays, in bytes."""
    return sum(v.nbytes for v in self if isinstance(v, np.ndarray))

  def kernel_args(self):
    """The arrays every traversal kernel takes, in their fixed order (the
    last is `payoffs`: two-dimensional on general trees)."""
    return (self.node_kind, self.node_player, self.node_infoset,
            self.child_start, self.num_children, self.edge_prob, self.payoffs)


def _show_progress(bar, nodes, estimate):
  """A tqdm bar of the nodes walked against the size estimate (created on
  the first call), updated to `nodes`."""
  if bar is None:
    from tqdm.auto import tqdm  # pylint: disable=import-outside-toplevel
    bar = tqdm(total=max(int(estimate), nodes), unit=" nodes",
               unit_scale=True, desc="compiling the game tree", leave=False,
               mininterval=0.5)
  if nodes > bar.total:
    bar.total = nodes
  bar.update(nodes - bar.n)
  return bar


def _progress_message(nodes, infosets, elapsed, estimate):
  rate = nodes / max(elapsed, 1e-9)
  if estimate > nodes:
    left = f"about {(estimate - nodes) / rate:.0f}s left"
  else:
    left = "time left unknown (beyond the size estimate)"
  return (f"compile_tree: {nodes:,} nodes, {infosets:,} infosets, "
          f"{rate:,.0f} nodes/s, {left} (estimated size {estimate:.3g} nodes)")


def _compress_keys(keys):
  """(uint8 data, int64 block offsets) of the zlib-compressed key blocks."""
  blocks = []
  for b in range(0, len(keys), KEYS_PER_BLOCK):
    encoded = [k.encode("utf-8") for k in keys[b:b + KEYS_PER_BLOCK]]
    lengths = np.array([len(e) for e in encoded], dtype=np.uint32)
    blocks.append(zlib.compress(lengths.tobytes() + b"".join(encoded), 1))
  offsets = np.zeros(len(blocks) + 1, dtype=np.int64)
  np.cumsum([len(b) for b in blocks], out=offsets[1:])
  return np.frombuffer(b"".join(blocks), dtype=np.uint8).copy(), offsets


def _resize(buffers, old, new):
  """Resizes the per-node buffers in place (no copy when the allocator can
  grow the block), filling new entries with their defaults."""
  for buffer, fill in zip(buffers, (-1, 0, 0, 1.0, 0.0)):
    buffer.resize(new, refcheck=False)
    buffer[old:] = fill


def _new_utility_sum(game, utility_sum, total):
  """The constant sum of the returns after seeing `total`; ValueError if the
  game is not constant-sum."""
  if utility_sum is None:
    return total
  if abs(total - utility_sum) > 1e-9 * max(1.0, abs(total)):
    raise ValueError(f"{game} is not constant-sum: returns sum to "
                     f"{utility_sum} and {total} at different terminals.")
  return utility_sum


class _Walked(NamedTuple):
  """What one walk collected, before the arrays are narrowed."""
  num_nodes: int
  buffers: tuple  # infoset, child_start, num_children, edge_prob, utility.
  keys: list
  iset_player: list
  iset_actions: list
  chance_actions: array.array
  utility_sum: float
  max_depth: int
  # General trees (`general` walks): the terminals' ids and every player's
  # returns, in the order they were met.
  terminal_ids: array.array = None
  terminal_returns: array.array = None


def _walk(game, undo, max_nodes, verbose, general=False):
  """Visits every history of `game` depth-first and numbers the nodes.

  When a node is visited its children get the next free ids (so nodes are
  expanded in preorder, which fixes the numbering and the order of the
  infoset ids); then its children are visited in order. With `undo`, one
  state moves down with apply_action and back up with undo_action;
  otherwise every child but the last is a clone (`child`) and the last
  child takes the node's own state, applied in place, so a node with b
  children costs b - 1 clones. A child is asked for its player at once and a
  terminal child is recorded without a frame.

  Only what cannot be derived afterwards is written per node: node kind and
  player come from the infoset and child count. Everything is inlined in
  one loop: a function call per node cost about a tenth of the compile.
  With `general`, every player's returns are kept (`_Walked`) and the
  returns need not sum to a constant.
  """
  estimate = None  # Knuth's, once the walk is long: see ESTIMATE_AFTER.
  capacity = min(max_nodes, 4096)
  buffers = (np.empty(0, dtype=np.int32), np.empty(0, dtype=np.int32),
             np.empty(0, dtype=np.int32), np.empty(0, dtype=np.float64),
             np.empty(0, dtype=np.float64))
  _resize(buffers, 0, capacity)
  # Single entries are written through memoryviews (half the time of numpy
  # item assignment); they are released whenever the buffers are resized.
  views = [memoryview(b) for b in buffers]
  infoset, child_start, num_children, _, utility = views
  edge_prob = buffers[3]
  keys = {}
  keys_get = keys.get
  iset_player, iset_actions = [], []
  chance_actions = array.array("q")
  utility_sum = None
  terminal_ids = array.array("q") if general else None
  terminal_returns = array.array("d") if general else None
  terminal_player = _TERMINAL_PLAYER
  start_time = time.perf_counter()
  next_report = start_time + min(BAR_AFTER_SECONDS, PROGRESS_SECONDS)
  next_message = start_time + PROGRESS_SECONDS
  bar = None  # A progress bar, once the compile lasts BAR_AFTER_SECONDS.

  state = game.new_initial_state()
  player = state.current_player()
  if player == terminal_player:
    returns = state.returns()
    buffers[4][0] = returns[0]
    for view in views:
      view.release()
    if general:
      return _Walked(1, buffers, [], [], [], chance_actions, 0.0, 1,
                     array.array("q", [0]), array.array("d", returns))
    return _Walked(1, buffers, [], [], [], chance_actions,
                   returns[0] + returns[1], 1)
  nid, next_id, frames, deepest = 0, 1, [], 0
  shared_actions = {}
  while True:
    # Expand `nid` (non-terminal, its state is `state`, `player` acts).
    if player < 0:  # Chance.
      outcomes = state.chance_outcomes()
      actions = [a for a, _ in outcomes]
    else:
      key = state.information_state_string(player)
      actions = state.legal_actions()
      iid = keys_get(key)
      if iid is None:
        iid = keys[key] = len(iset_player)
        iset_player.append(player)
        # Infosets with equal actions share one list.
        iset_actions.append(shared_actions.setdefault(tuple(actions), actions))
      elif iset_actions[iid] != actions or iset_player[iid] != player:
        if estimate is None:  # A game too large is refused for its size.
          tree_size.check_estimated_size(game, max_nodes)
        raise ValueError(
            f"{game}: histories of infoset {key!r} disagree on the acting "
            "player or legal actions; mccfrb needs well-formed infosets.")
      infoset[nid] = iid
    start = next_id
    end = next_id = start + len(actions)
    if end > capacity or end == start:
      if end == start:
        raise ValueError(f"{game}: a non-terminal history has no legal "
                         "actions or chance outcomes.")
      if end > max_nodes:
        raise ValueError(
            f"{game} has more than max_nodes={max_nodes} histories: "
            f"compiling stopped after {start} nodes and {len(iset_player)} "
            "infosets. Pass a larger max_nodes (a compile needs about "
            f"{tree_size.PEAK_BYTES_PER_NODE} bytes per node at its peak, "
            f"the tree about {BYTES_PER_NODE}) or choose a smaller game.")
      if estimate is None and end > ESTIMATE_AFTER:
        estimate = tree_size.check_estimated_size(game, max_nodes)
      grown = min(max_nodes, max(end, int(1.25 * capacity),
                                 int(1.05 * (estimate or 0))))
      for view in views:
        view.release()
      _resize(buffers, capacity, grown)
      views = [memoryview(b) for b in buffers]
      infoset, child_start, num_children, _, utility = views
      capacity = grown
    if player < 0:
      edge_prob[start:end] = [p for _, p in outcomes]
      chance_actions.extend(actions)
    child_start[nid] = start
    num_children[nid] = end - start
    if start >> 12 != end >> 12:  # Look at the clock rarely.
      now = time.perf_counter()
      if now >= next_report:
        next_report = now + min(0.5, PROGRESS_SECONDS)
        if estimate is None:
          estimate = tree_size.check_estimated_size(game, max_nodes)
        if now - start_time >= BAR_AFTER_SECONDS:
          bar = _show_progress(bar, end, estimate)
        if now >= next_message:
          next_message = now + PROGRESS_SECONDS
          message = _progress_message(end, len(iset_player),
                                      now - start_time, estimate)
          if verbose:
            print(message, flush=True)
          else:
            _logger.info(message)
    k = 0
    # Visit the children from the k-th on; terminal ones on the spot.
    while True:
      last = end - start - 1
      while k <= last:
        a = actions[k]
        if undo:
          state.apply_action(a)
          kid = state
        elif k < last:
          kid = state.child(a)
        else:
          kid = state
          kid.apply_action(a)
        kid_player = kid.current_player()
        if kid_player != terminal_player:
          break
        returns = kid.returns()
        utility[start + k] = returns[0]
        if general:
          terminal_ids.append(start + k)
          terminal_returns.extend(returns)
        elif returns[0] + returns[1] != utility_sum:
          utility_sum = _new_utility_sum(game, utility_sum,
                                         returns[0] + returns[1])
        if undo:
          state.undo_action(player, a)
        k += 1
      if k <= last:  # Descend into child k.
        frames.append((state, actions, start, end, k, player))
        if len(frames) > deepest:
          deepest = len(frames)
        state, nid, player = kid, start + k, kid_player
        break
      if not frames:
        for view in views:
          view.release()
        # The deepest expanded node had `deepest` ancestors; its children
        # are leaves one level further down.
        if bar is not None:
          bar.close()
        return _Walked(next_id, buffers, list(keys), iset_player,
                       iset_actions, chance_actions, utility_sum, deepest + 2,
                       terminal_ids, terminal_returns)
      state, actions, start, end, k, player = frames.pop()
      if undo:
        state.undo_action(player, actions[k])
      k += 1


def _assemble(walked, num_players=2):
  """The `GameTree` of a walk, its integer arrays narrowed."""
  n = walked.num_nodes
  for buffer in walked.buffers:
    buffer.resize(n, refcheck=False)
  infoset, child_start, num_children, edge_prob, utility = walked.buffers
  players = np.array(walked.iset_player, dtype=np.int8)
  decision = infoset >= 0
  kind = np.full(n, CHANCE, dtype=np.int8)
  kind[num_children == 0] = TERMINAL
  kind[decision] = DECISION
  player = np.full(n, -1, dtype=np.int8)
  player[decision] = players[infoset[decision]]
  counts = num_children.astype(narrowest_int(int(num_children.max())))
  num_children.resize(0, refcheck=False)
  num_actions = np.array([len(a) for a in walked.iset_actions],
                         dtype=np.int32)
  max_actions = int(max(num_actions.max(initial=0), counts.max()))
  flat = np.fromiter(itertools.chain.from_iterable(walked.iset_actions),
                     dtype=np.int64, count=int(num_actions.sum()))
  actions = np.full((len(num_actions), max_actions), -1,
                    dtype=narrowest_int(int(flat.max(initial=0))))
  actions[np.arange(max_actions)[None, :] < num_actions[:, None]] = flat
  outcomes = np.frombuffer(walked.chance_actions, dtype=np.int64)
  key_data, key_blocks = _compress_keys(walked.keys)
  returns = None
  if walked.terminal_ids is not None:
    returns = np.zeros((n, num_players))
    returns[np.frombuffer(walked.terminal_ids, dtype=np.int64)] = (
        np.frombuffer(walked.terminal_returns).reshape(-1, num_players))
  return GameTree(
      node_kind=kind,
      node_player=player,
      node_infoset=infoset,
      child_start=child_start,
      num_children=counts,
      edge_prob=edge_prob,
      utility=utility,
      infoset_player=players,
      infoset_num_actions=num_actions,
      infoset_actions=actions,
      chance_actions=outcomes.astype(
          narrowest_int(int(outcomes.max(initial=0)))),
      infoset_key_data=key_data,
      infoset_key_blocks=key_blocks,
      utility_sum=float(walked.utility_sum or 0.0),
      max_depth=walked.max_depth,
      max_actions=max_actions,
      returns=returns,
  )


def compile_tree(game, max_nodes=DEFAULT_MAX_NODES, verbose=False,
                 walk="auto"):
  """Walks every history of `game` once and returns its `GameTree`.

  Args:
    game: a game string or `pyspiel.Game`; passed through `load_game`.
    max_nodes: the compile refuses games with more histories than this,
      before memory runs out; a game whose estimated size
      (`estimate_num_nodes`, asked once the walk passes ESTIMATE_AFTER
      nodes) is above REFUSE_FACTOR * max_nodes, or above the 2**31 - 1
      nodes int32 ids can number, is refused then, within a few seconds
      (`tree_size.check_estimated_size`). None (the default):
      `tree_size.default_max_nodes()`, from the memory available now (half
      of it, at `tree_size.PEAK_BYTES_PER_NODE` bytes per node).
    verbose: print progress (nodes, rate, estimated time left) every
      PROGRESS_SECONDS seconds of a long compile; otherwise the same lines
      go to the `mccfrb.games.tree` logger at INFO level.
    walk: "undo" (apply_action/undo_action on one state), "clone" (a state
      per history), or "auto": "undo" for the games in UNDO_GAMES, whose
      UndoAction is known to be right, "clone" for the others. Both give
      the same tree.

  Games with more than two players and general-sum games compile to
  general trees (`GameTree.returns`), which the solvers and evaluators
  that run such games take (`games.GENERAL_SOLVERS`).

  Returns:
    The `GameTree`.

  Raises:
    ValueError: the game has (or is estimated to have far) more than
      `max_nodes` histories, its legal actions differ between histories of
      one infoset, or `load_game` refuses it.
  """
  game = games.load_game(game, general=True)
  if max_nodes is None:
    max_nodes = tree_size.default_max_nodes()
  max_nodes = counts.check_count("max_nodes", max_nodes, 1, 2**31,
                                 what="a positive integer")
  if walk not in ("auto", "undo", "clone"):
    raise ValueError(f"walk must be 'auto', 'undo' or 'clone', got {walk!r}.")
  if walk == "auto":
    walk = "undo" if game.get_type().short_name in UNDO_GAMES else "clone"
  general = not games.is_two_player_zero_sum(game)
  return _assemble(_walk(game, walk == "undo", max_nodes, verbose, general),
                   game.num_players())
