"""Outcome and external sampling on a tree that grows as it is sampled.

`GrownSampling` is mixed into `MCCFRbSolver` (and so
`OutcomeSamplingSolver`) and `ExternalSamplingSolver`, and used when the
representation is "grown" (solvers/representation.py): the tree is a
`GrownTree` (mccfrb/games/grown.py), which stores only the nodes that
episodes reach. The outcome-sampling kernel (`outcome.tree_episodes` with `grown`)
stops when it samples a child that is not stored; the child is stored
from the OpenSpiel state its path leads to (the state of the path's last
stored node is kept, so that is usually one `apply_action`), and the
episode runs again from the same generator state. An external-sampling
traversal (`external.es_grown`) runs dry first, noting every child it
reaches that is not stored; they are stored and the dry run repeated
until it notes none, then the traversal runs for real with the same
samples. The tables
are the compiled tree's tables, rows numbered in the order infosets are
first expanded, and they grow with the tree.

Past `max_memory` the tree stops growing: an outcome-sampling episode
that samples a child not stored then plays the rest of the game from
OpenSpiel states,
every player uniformly at random and chance by its probabilities (the
strategy of infosets that are not stored), and takes the return it
reaches as the value of that node. Sampling there is on-policy, so the
importance weights of those moves are 1 and the estimate stays unbiased
for that strategy. (An external-sampling traversal that would need a
node past `max_memory` plays each such node out once, as a leaf.)

`GrownPolicy` answers `action_probabilities(state)` from the tables by the
infoset's hash.
"""

import hashlib
import json
import warnings

import numpy as np
from open_spiel.python import policy as os_policy

from mccfrb.games import forms
from mccfrb.games import grown as grown_lib
from mccfrb.games import keys as keys_lib
from mccfrb.kernels import baselines as baselines_lib
from mccfrb.kernels import exact
from mccfrb.kernels import external
from mccfrb.kernels import outcome
from mccfrb.solvers import base
from mccfrb.solvers import checkpoint
from mccfrb.solvers import representation as representation_lib
from mccfrb import tables as tables_lib

# Baseline kinds a grown tree runs (the registry's, kernels/baselines.py).
GROWN_BASELINES = baselines_lib.kinds("grown")
# Children not stored that an external-sampling dry run notes per kernel
# call.
PENDING = 4096


class GrownPolicy(os_policy.Policy):
  """A policy read from a grown-tree solver's tables, state by state.

  States are of the solver's game (the turn-based form of a
  simultaneous-move game; a state of another game or form is refused,
  `mccfrb.games.forms`). An infoset the tree has not stored plays
  uniform. The average carries optimistic averaging's catch-up, with the
  owner's reach along the state's history through the stored tree. The tables are the solver's
  arrays at the time of the call (not a copy).
  """

  def __init__(self, solver, current):
    super().__init__(solver.game, list(range(solver.game.num_players())))
    self._solver = solver
    self._current = current
    self._iterations = solver.num_iterations
    self._check_state = forms.StateCheck(solver.game, "GrownPolicy")

  def action_probabilities(self, state, player_id=None):
    self._check_state(state)
    player = state.current_player() if player_id is None else player_id
    legal = state.legal_actions(player)
    s = self._solver
    row = s._grown.find(state.information_state_string(player), player)  # pylint: disable=protected-access
    if row < 0:
      return {a: 1.0 / len(legal) for a in legal}
    count = len(legal)
    if self._current:
      probs = s._grown_current_row(row, count)  # pylint: disable=protected-access
    else:
      probs = s._grown_average_row(row, count, state, player,  # pylint: disable=protected-access
                                   self._iterations)
    return dict(zip(legal, (float(p) for p in probs)))


class GrownSampling:
  """The grown-tree side of `MCCFRbSolver` and `ExternalSamplingSolver`
  (see the module docstring)."""

  _grown = None
  # True in the outcome-sampling solvers (MCCFRbSolver), whose tables
  # include sigma and baselines.
  _outcome_sampling = False
  # Observation-keyed baselines: each stored node's label (_node_key) and
  # the 128-bit hash of each label's key (_key_hashes, by label).
  _observed = False

  def _grown_rows(self):
    """(names of the [I, A] tables, names of the [I] tables)."""
    if self._outcome_sampling:
      return ("_regrets", "_avg", "_strategy"), ("_avg_last", "_through")
    return ("_regrets", "_avg"), ("_through",)

  def _init_grown(self, game, max_memory):
    """Grown-tree tables of the solver's options (set before)."""
    if self._outcome_sampling:
      baselines_lib.check(self._baseline_name, "grown")
      self._observed = (baselines_lib.BASELINES[self._baseline_name].key
                        == "observation")
      if self._observed:
        keys_lib.check_observation(game)
    if self._threads != 1:
      representation_lib.refuse(
          f"threads={self._threads}", ("tree", "engine"), "grown",
          "A grown tree runs episodes one after the other (threads=1).")
    representation_lib.check_batch(
        "grown", self._batch,
        "A grown tree runs episodes one after the other (batch=None).")
    self._game = game
    self._tree = self._converter = None
    self._num_iterations = self._nodes_touched = 0
    self._grown = grown_lib.GrownTree(
        game, tables_lib.check_max_memory(max_memory))
    g = self._grown
    if self._observed:
      self._node_key = np.full(g.node_capacity, -1, dtype=np.int64)
      self._key_hashes = np.zeros((grown_lib.FIRST_CAPACITY, 2),
                                  dtype=np.uint64)
      self._label_of = {}
    matrices, vectors = self._grown_rows()
    for name in matrices:
      setattr(self, name, np.zeros((g.infoset_capacity, g.max_actions)))
    for name in vectors:
      setattr(self, name, np.zeros(g.infoset_capacity, dtype=np.int64))
    size, count_size = self._grown_baseline_sizes(g.infoset_capacity,
                                                  g.slot_capacity)
    if self._outcome_sampling:
      self._baseline = np.zeros(size)
      self._baseline_count = np.zeros(count_size, dtype=np.int64)
    depth, width = max(g.max_depth, 1), g.max_actions
    if self._outcome_sampling:
      self._scratch = self._path_scratch_of(depth, width)
    else:
      self._scratch = (np.zeros(depth + 1, dtype=np.int64),
                       np.zeros(depth + 1, dtype=np.int64),
                       np.zeros((depth + 1, width)),
                       np.zeros((depth + 1, width)),
                       np.zeros((depth + 1, width)))
      self._pending = np.zeros(2 * PENDING, dtype=np.int64)
    # Play-outs past max_memory draw from their own generator.
    self._playout_rng = np.random.default_rng(
        [int(self._rng.integers(2**63)), 1])
    self._dropped = 0
    self._strategy_rows = 0
    first = self.grown_memory()["bytes"]
    if first > g.max_memory:
      raise ValueError(
          f"max_memory={g.max_memory} is below the first allocation of a "
          f"grown tree of {game} and its tables ({first} bytes).")
    self._grow_tables()
    root = game.new_initial_state()
    if root.is_terminal():
      raise ValueError(f"{game} ends at its root: nothing to solve.")
    if not g.add_root(root, self._grown_table_bytes):
      raise ValueError(f"max_memory={g.max_memory} does not hold the root of "
                       f"{game}.")
    self._grow_tables()
    self._label_node(0, root)

  @property
  def grown_tree(self):
    """The `GrownTree` (None unless representation='grown')."""
    return self._grown

  def _grown_baseline_sizes(self, infosets, slots):
    """(baseline, baseline_count) sizes: history baselines have a row
    per child slot (an edge of the tree)."""
    per_infoset = infosets * self._grown.max_actions
    if not self._outcome_sampling:
      return 0, 0
    entry = baselines_lib.BASELINES[self._baseline_name]
    if entry.key == "none":
      return 0, 0
    if entry.owner == baselines_lib.OWNER_UPDATE_PLAYER:
      return 2 * per_infoset, 2 * infosets
    if entry.key == "infoset":
      return per_infoset, per_infoset
    if entry.key == "observation":
      size = len(self._key_hashes) * self._grown.max_actions
      return size, size
    return slots, slots

  def _grown_table_bytes(self, infosets, slots):
    """Bytes of the solver's tables at these capacities (the observation
    labels' arrays at their present sizes)."""
    size, count_size = self._grown_baseline_sizes(infosets, slots)
    matrices, vectors = self._grown_rows()
    labels = (self._node_key.nbytes + self._key_hashes.nbytes
              if self._observed else 0)
    return 8 * (infosets * (len(matrices) * self._grown.max_actions
                            + len(vectors)) + size + count_size) + labels

  def _label_node(self, node, state):
    """Observation-keyed baselines: node's label, the label of its
    observation key (mccfrb.games.keys.observation_key, hashed to 128 bits
    as infoset strings are), a new one if the key is new (the baseline
    tables doubled when the labels outgrow them)."""
    if not self._observed:
      return
    digest = hashlib.blake2b(
        repr(keys_lib.observation_key(state, len(state.history()))).encode(),
        digest_size=16).digest()
    label = self._label_of.get(digest)
    if label is None:
      label = len(self._label_of)
      self._label_of[digest] = label
      if label >= len(self._key_hashes):
        self._key_hashes = grown_lib._grown(self._key_hashes,  # pylint: disable=protected-access
                                            2 * len(self._key_hashes), 0)
        size, _ = self._grown_baseline_sizes(1, 1)
        self._baseline = grown_lib._grown(self._baseline, size, 0.0)  # pylint: disable=protected-access
        self._baseline_count = grown_lib._grown(self._baseline_count, size,  # pylint: disable=protected-access
                                                0)
      self._key_hashes[label] = np.frombuffer(digest, dtype=np.uint64)
    self._node_key[node] = label

  def _grow_tables(self):
    """The tables re-allocated to the tree's capacities (new rows 0)."""
    g = self._grown
    i, n = g.infoset_capacity, g.slot_capacity
    if len(self._regrets) < i:
      for name in sum(self._grown_rows(), ()):
        setattr(self, name, grown_lib._grown(getattr(self, name), i, 0))  # pylint: disable=protected-access
      if (self._outcome_sampling and baselines_lib.BASELINES[
          self._baseline_name].owner == baselines_lib.OWNER_UPDATE_PLAYER):
        # Laid out (player, infoset, action): each player's block moves.
        old = len(self._baseline) // 2
        baseline = np.zeros(2 * i * g.max_actions)
        counts = np.zeros(2 * i, dtype=np.int64)
        for p in (0, 1):
          baseline[p * i * g.max_actions:p * i * g.max_actions + old] = (
              self._baseline[p * old:(p + 1) * old])
          rows = old // g.max_actions
          counts[p * i:p * i + rows] = self._baseline_count[p * rows:
                                                            (p + 1) * rows]
        self._baseline, self._baseline_count = baseline, counts
    size, count_size = self._grown_baseline_sizes(i, n)
    if not self._outcome_sampling:
      return
    if self._observed and len(self._node_key) < g.node_capacity:
      self._node_key = grown_lib._grown(self._node_key, g.node_capacity, -1)  # pylint: disable=protected-access
    if len(self._baseline) < size:
      self._baseline = grown_lib._grown(self._baseline, size, 0.0)  # pylint: disable=protected-access
      self._baseline_count = grown_lib._grown(self._baseline_count,
                                              count_size, 0)  # pylint: disable=protected-access
    self._uniform_new_rows()

  def _uniform_new_rows(self):
    """sigma of the infosets stored since the last call: zero regrets, so
    uniform (what regret matching gives); the rows past their actions stay
    0."""
    g = self._grown
    for row in range(self._strategy_rows, g.num_infosets):
      count = g.infoset_num_actions[row]
      self._strategy[row, :count] = 1.0 / count
    self._strategy_rows = g.num_infosets

  def _playout(self, state):
    """Player 0's return at the end of a uniformly random play-out."""
    rng = self._playout_rng
    state = state.clone()
    while not state.is_terminal():
      if state.is_chance_node():
        actions, probs = zip(*state.chance_outcomes())
        state.apply_action(actions[rng.choice(len(actions), p=probs)])
      else:
        legal = state.legal_actions()
        state.apply_action(legal[rng.integers(len(legal))])
    return state.returns()[0]

  def _run_grown(self, num_iterations):
    """`num_iterations` iterations on the grown tree (module docstring)."""
    g = self._grown
    io = np.array([0, -1, -1, 0], dtype=np.int64)
    leaf = np.zeros(1)
    weighting = outcome.Weights(*self._weighting_args(
        self._num_iterations + num_iterations))
    args = None
    # The OpenSpiel state of the node stored last and its depth: an
    # episode that stops again usually stops just below it, and moves on
    # from there by one action.
    last, last_depth, last_state = -1, 0, None
    while True:
      if args is None:  # The arrays as they are after the last growth.
        kind, player, infoset, child_start, num_children, prob, utility, \
            slot_node = g.kernel_args()
        args = (outcome.TreeArgs(
            kind, player, infoset, child_start, num_children, prob, utility,
            g.infoset_num_actions, self._regrets, self._strategy, self._avg,
            self._avg_last, self._baseline, self._baseline_count,
            self._through, (self._node_key if self._observed
                            else np.zeros(0, dtype=np.int64)), 0,
            np.zeros(0)),
                outcome.Grown(slot_node, io, leaf), self._kernel_codes(),
                weighting, g.utility_sum, self._num_iterations + 1, 0,
                2 * num_iterations, True, self._rng_words, self._scratch,
                None)
        generation = g.generation
      self._nodes_touched += outcome.tree_episodes(*args)[1]
      slot = int(io[1])
      if slot < 0:
        break
      path_node, path_action, depth = (self._scratch.row[0],
                                        self._scratch.info[0], int(io[3]))
      if 0 <= last_depth < depth and path_node[last_depth] == last:
        state = g.advance(last_state, path_node, path_action, last_depth,
                          depth)
      else:
        state = g.state_of(path_node, path_action, depth)
      node = g.add_child(int(path_node[depth - 1]),
                         int(path_action[depth - 1]), state,
                         self._grown_table_bytes)
      last, last_depth, last_state = node, depth, state
      if node is not None:
        labels = len(self._key_hashes) if self._observed else 0
        if generation != g.generation:
          self._grow_tables()
        self._label_node(node, state)
        if generation != g.generation or (
            self._observed and labels != len(self._key_hashes)):
          args = None
        elif self._strategy_rows < g.num_infosets:
          self._uniform_new_rows()
      else:  # Full: this episode's value below `slot` from a play-out.
        if not self._dropped:
          self._say_frozen()
        self._dropped += 1
        io[2] = slot
        leaf[0] = self._playout(state)
    self._num_iterations += num_iterations

  def _say_frozen(self):
    """Warns, once per solver, that the tree stopped growing."""
    g = self._grown
    warnings.warn(
        f"mccfrb: the grown tree of {g.game} reached max_memory="
        f"{g.max_memory} bytes at {g.num_nodes} nodes and {g.num_infosets} "
        "infosets; it stops growing, and episodes that leave it are played "
        "out uniformly (counted in memory()['dropped']).", stacklevel=4)

  def _run_es_grown(self, num_iterations):
    """`num_iterations` external-sampling iterations on the grown tree
    (module docstring)."""
    g, s = self._grown, self._settings
    io = np.zeros(2, dtype=np.int64)
    touched = self._counters[0]
    weighting = self._weighting_args(self._num_iterations + num_iterations)
    while True:
      external.es_grown(
          *g.kernel_args(), g.utility_sum, g.infoset_num_actions,
          self._regrets, self._avg, self._through, *weighting,
          self._pruning_code(), s["prune_threshold"],
          s["prune_probability"], s["prune_k"], s["prune_floor"],
          s["prune_after"], self._num_iterations + 1, 2 * num_iterations,
          self._rng_words, *self._scratch, self._counters, io,
          self._pending)
      if io[1] == 0:
        break
      noted = self._pending[:2 * io[1]].reshape(-1, 2).tolist()
      for parent, j in noted:
        if g.slot_node[g.slot(parent, j)] >= 0:
          continue  # Noted twice in one dry run.
        nodes, actions = g.path_to(parent)
        state = g.state_of(np.append(nodes, parent), np.append(actions, j),
                           len(nodes) + 1)
        if g.add_child(parent, j, state, self._grown_table_bytes) is None:
          raise ValueError(
              f"max_memory={g.max_memory} is full: an external-sampling "
              "traversal must store every node it explores. Pass a larger "
              "max_memory, or use outcome sampling, which plays out past "
              "it.")
      self._grow_tables()
    self._nodes_touched += int(self._counters[0] - touched)
    self._num_iterations += num_iterations

  def _grown_current_row(self, row, count):
    """sigma of infoset `row` (regret matching of its regrets)."""
    if self._outcome_sampling:
      return self._strategy[row, :count]
    out = np.zeros((1, count))
    exact.regret_matching_row(self._caught_up_regrets()[row:row + 1, :count],
                              0, count, out, 0)
    return out[0]

  def _grown_average_row(self, row, count, state, player, iterations):
    """The average strategy of infoset `row`, with optimistic averaging's
    catch-up at the owner's reach along `state`'s history."""
    cum = self._avg[row, :count].copy()
    if getattr(self, "_averaging_code", 0) == 1 and iterations:
      reach = self._grown_own_reach(state, player)
      skipped = base.skipped_weight(iterations, self._avg_last[row],
                                    self._regret_code)
      cum += skipped * reach * self._strategy[row, :count]
    total = cum.sum()
    return cum / total if total > 0 else np.full(count, 1.0 / count)

  def _grown_own_reach(self, state, player):
    """pi_player(h) of the state's history h under the current strategy:
    the product of sigma at `player`'s decisions (uniform at infosets
    the tree does not store)."""
    g = self._grown
    replay = g.game.new_initial_state()
    reach = 1.0
    for a in state.history():
      if replay.current_player() == player:
        legal = replay.legal_actions()
        row = g.find(replay.information_state_string(player), player)
        reach *= (self._strategy[row, legal.index(a)] if row >= 0
                  else 1.0 / len(legal))
      replay.apply_action(a)
    return reach

  def _require_grown_tree(self, what):
    if self._grown is not None:
      raise ValueError(
          f"{what} needs the compiled tree; this solver grows the tree of "
          f"{self._game} as it samples. Use average_policy() / "
          "current_policy() (policies answering state by state), and "
          "head-to-head evaluation for games too large to walk.")

  def grown_memory(self):
    """What the grown tree holds: nodes, child slots and infosets stored;
    bytes (tree and tables, capacity included); bytes_per_node (the node
    and slot arrays over the nodes stored: `BYTES_PER_NODE` and
    `BYTES_PER_SLOT` a child, doubled at most by capacity) and
    bytes_per_infoset (the infoset arrays, their hash and the solver's
    tables over the infosets stored); max_memory, frozen, and `dropped`
    (episodes that left the stored tree once it was full)."""
    g = self._grown
    tables = sum(getattr(self, n).nbytes for n in self._grown_saved())
    arrays = g.arrays()
    node_bytes = sum(arrays[n].nbytes for n in g.NODE_ARRAYS + g.SLOT_ARRAYS)
    return dict(nodes=g.num_nodes, slots=g.num_slots,
                infosets=g.num_infosets, bytes=g.nbytes() + tables,
                tree_bytes=g.nbytes(), table_bytes=tables,
                bytes_per_node=node_bytes / max(g.num_nodes, 1),
                bytes_per_infoset=(g.nbytes() - node_bytes + tables)
                / max(g.num_infosets, 1),
                max_memory=g.max_memory, frozen=g.frozen,
                dropped=self._dropped)

  # The solver's interface, on a grown tree; elsewhere the next class's.

  @property
  def representation(self):
    return "grown" if self._grown is not None else super().representation

  def memory(self):
    """What the tables hold (see `EngineSampling.memory`); on a grown tree
    also `nodes` stored (`dropped`: episodes played out past the tree)."""
    if self._grown is None:
      return super().memory()
    report = self.grown_memory()
    report["cells"] = int(
        self._grown.infoset_num_actions[:self._grown.num_infosets].sum())
    return report

  def _infosets_stored(self):
    if self._grown is None:
      return super()._infosets_stored()
    return self._grown.num_infosets

  def _require_tree(self, what):
    self._require_grown_tree(what)
    super()._require_tree(what)

  def average_policy(self):
    """The average strategy; on a grown tree a `GrownPolicy`."""
    if self._grown is None:
      return super().average_policy()
    return GrownPolicy(self, current=False)

  def current_policy(self):
    """The current strategy; on a grown tree a `GrownPolicy`."""
    if self._grown is None:
      return super().current_policy()
    return GrownPolicy(self, current=True)

  def _grown_saved(self):
    """The solver's table names on a grown tree."""
    names = sum(self._grown_rows(), ())
    if self._outcome_sampling:
      names += ("_baseline", "_baseline_count")
    if self._observed:
      names += ("_node_key", "_key_hashes")
    return names

  def _tables_to_save(self):
    if self._grown is None:
      return super()._tables_to_save()
    saved = {name.lstrip("_"): getattr(self, name)
             for name in self._grown_saved()}
    saved.update({"grown_" + k: v for k, v in self._grown.arrays().items()})
    g = self._grown
    saved["grown_counts"] = np.array(
        [g.num_nodes, g.num_slots, g.num_infosets, int(g.frozen),
         self._dropped, self._strategy_rows], dtype=np.int64)
    saved["grown_playout_rng"] = np.frombuffer(
        json.dumps(self._playout_rng.bit_generator.state).encode(),
        dtype=np.uint8)
    return saved

  def _restore_tables(self, tables, path):
    """A grown solver's checkpoint: the tree's arrays at their saved
    capacities, then the tables at those capacities, each checked."""
    if self._grown is None:
      super()._restore_tables(tables, path)
      return
    names = ["grown_" + k for k in self._grown.arrays()] + [
        "grown_counts", "grown_playout_rng"]
    missing = [n for n in names if n not in tables]
    if missing:
      raise ValueError(f"{path} is not a complete grown-tree checkpoint: "
                       f"it lacks {missing}.")
    arrays = {}
    for name, current in self._grown.arrays().items():
      shape, dtype = tables.header("grown_" + name)
      if dtype != current.dtype or len(shape) != current.ndim:
        raise ValueError(f"{path}: table 'grown_{name}' is {dtype}"
                         f"{list(shape)}, a grown tree needs {current.dtype} "
                         f"with {current.ndim} dimensions.")
      arrays[name] = tables["grown_" + name]
      checkpoint.check_values(path, "grown_" + name, arrays[name], 0,
                              signed=True)
    counts = tables["grown_counts"]
    if counts.shape != (6,) or counts.dtype != np.int64 or counts.min() < 0:
      raise ValueError(f"{path}: table 'grown_counts' is not six counts.")
    try:
      self._grown.restore(arrays, counts[:3], counts[3])
      state = json.loads(tables["grown_playout_rng"].tobytes().decode())
      self._playout_rng.bit_generator.state = state
    except (ValueError, TypeError, KeyError, UnicodeDecodeError) as e:
      raise ValueError(f"{path}: {e}.") from None
    self._dropped, self._strategy_rows = int(counts[4]), int(counts[5])
    g = self._grown
    if self._observed:
      labels, _ = tables.header("key_hashes")
      self._node_key = np.zeros(g.node_capacity, dtype=np.int64)
      self._key_hashes = np.zeros((labels[0], 2), dtype=np.uint64)
      base.restore_table(tables, "node_key", self._node_key, path,
                         self._num_iterations, signed=True)
      base.restore_table(tables, "key_hashes", self._key_hashes, path,
                         self._num_iterations)
      used = int(self._node_key.max(initial=-1)) + 1
      self._label_of = {self._key_hashes[k].tobytes(): k
                        for k in range(used)}
    size, count_size = self._grown_baseline_sizes(g.infoset_capacity,
                                                  g.slot_capacity)
    shape = (g.infoset_capacity, g.max_actions)
    matrices, vectors = self._grown_rows()
    targets = [(n, shape, np.float64) for n in matrices] + [
        (n, shape[:1], np.int64) for n in vectors]
    if self._outcome_sampling:
      targets += [("_baseline", (size,), np.float64),
                  ("_baseline_count", (count_size,), np.int64)]
    for name, target_shape, dtype in targets:
      setattr(self, name, np.zeros(target_shape, dtype=dtype))
      base.restore_table(tables, name.lstrip("_"), getattr(self, name), path,
                         self._num_iterations)
