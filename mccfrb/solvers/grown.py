"""Outcome and external sampling on a tree that grows as it is sampled.

`GrownBackend` is the backend of `MCCFRbSolver` (and so
`OutcomeSamplingSolver`) and `ExternalSamplingSolver` when their
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
    self._backend = solver._backend  # pylint: disable=protected-access
    self._current = current
    self._iterations = solver.num_iterations
    self._check_state = forms.StateCheck(solver.game, "GrownPolicy")

  def action_probabilities(self, state, player_id=None):
    self._check_state(state)
    player = state.current_player() if player_id is None else player_id
    legal = state.legal_actions(player)
    backend = self._backend
    row = backend.grown.find(state.information_state_string(player), player)
    if row < 0:
      return {a: 1.0 / len(legal) for a in legal}
    count = len(legal)
    if self._current:
      probs = backend.current_row(row, count)
    else:
      probs = backend.average_row(row, count, state, player,
                                  self._iterations)
    return dict(zip(legal, (float(p) for p in probs)))


class GrownBackend:
  """A grown tree as the representation of an outcome- or
  external-sampling solver (see the module docstring).

  It holds the `GrownTree`, the observation keys' labels and the play-out
  generator, and grows the solver's tables (its arrays, as on the compiled
  tree: `rows()` names them) with the tree; `run_outcome` and
  `run_external` run each algorithm's kernel on it.
  """

  kind = "grown"
  engine = None
  precision = "float64"

  def __init__(self, solver, game, max_memory, outcome_sampling):
    """The grown tree of `game` and the solver's tables (its options set
    before); `outcome_sampling`: the solver is MCCFRbSolver's, whose
    tables include sigma and baselines (else external sampling's)."""
    s = self._solver = solver
    self.outcome_sampling = outcome_sampling
    # Observation-keyed baselines: each stored node's label (node_key) and
    # the 128-bit hash of each label's key (key_hashes, by label).
    self.observed = False
    if self.outcome_sampling:
      name = s._baseline_name  # pylint: disable=protected-access
      baselines_lib.check(name, "grown")
      self.observed = baselines_lib.BASELINES[name].key == "observation"
      if self.observed:
        keys_lib.check_observation(game)
    if s._threads != 1:  # pylint: disable=protected-access
      representation_lib.refuse(
          f"threads={s._threads}", ("tree", "engine"), "grown",  # pylint: disable=protected-access
          "A grown tree runs episodes one after the other (threads=1).")
    representation_lib.check_batch(
        "grown", s._batch,  # pylint: disable=protected-access
        "A grown tree runs episodes one after the other (batch=None).")
    self.grown = grown_lib.GrownTree(
        game, tables_lib.check_max_memory(max_memory))
    g = self.grown
    self.node_key = np.zeros(0, dtype=np.int64)
    if self.observed:
      self.node_key = np.full(g.node_capacity, -1, dtype=np.int64)
      self.key_hashes = np.zeros((grown_lib.FIRST_CAPACITY, 2),
                                 dtype=np.uint64)
      self._label_of = {}
    matrices, vectors = self.rows()
    for name in matrices:
      setattr(s, name, np.zeros((g.infoset_capacity, g.max_actions)))
    for name in vectors:
      setattr(s, name, np.zeros(g.infoset_capacity, dtype=np.int64))
    size, count_size = self._baseline_sizes(g.infoset_capacity,
                                            g.slot_capacity)
    if self.outcome_sampling:
      s._baseline = np.zeros(size)  # pylint: disable=protected-access
      s._baseline_count = np.zeros(count_size, dtype=np.int64)  # pylint: disable=protected-access
    depth, width = max(g.max_depth, 1), g.max_actions
    if self.outcome_sampling:
      s._scratch = s._path_scratch_of(depth, width)  # pylint: disable=protected-access
    else:
      s._scratch = (np.zeros(depth + 1, dtype=np.int64),  # pylint: disable=protected-access
                    np.zeros(depth + 1, dtype=np.int64),
                    np.zeros((depth + 1, width)),
                    np.zeros((depth + 1, width)),
                    np.zeros((depth + 1, width)))
      self._pending = np.zeros(2 * PENDING, dtype=np.int64)
    # Play-outs past max_memory draw from their own generator.
    self._playout_rng = np.random.default_rng(
        [int(s._rng.integers(2**63)), 1])  # pylint: disable=protected-access
    self.dropped = 0
    self._strategy_rows = 0
    first = self._grown_memory()["bytes"]
    if first > g.max_memory:
      raise ValueError(
          f"max_memory={g.max_memory} is below the first allocation of a "
          f"grown tree of {game} and its tables ({first} bytes).")
    self._grow_tables()
    root = game.new_initial_state()
    if root.is_terminal():
      raise ValueError(f"{game} ends at its root: nothing to solve.")
    if not g.add_root(root, self._table_bytes):
      raise ValueError(f"max_memory={g.max_memory} does not hold the root of "
                       f"{game}.")
    self._grow_tables()
    self._label_node(0, root)

  def rows(self):
    """(names of the solver's [I, A] tables, names of its [I] tables)."""
    if self.outcome_sampling:
      return ("_regrets", "_avg", "_strategy"), ("_avg_last", "_through")
    return ("_regrets", "_avg"), ("_through",)

  def options(self):
    """What a checkpoint records of the representation."""
    return dict(representation="grown", max_memory=self.grown.max_memory)

  def _baseline_sizes(self, infosets, slots):
    """(baseline, baseline_count) sizes: history baselines have a row
    per child slot (an edge of the tree)."""
    per_infoset = infosets * self.grown.max_actions
    if not self.outcome_sampling:
      return 0, 0
    entry = baselines_lib.BASELINES[self._solver._baseline_name]  # pylint: disable=protected-access
    if entry.key == "none":
      return 0, 0
    if entry.owner == baselines_lib.OWNER_UPDATE_PLAYER:
      return 2 * per_infoset, 2 * infosets
    if entry.key == "infoset":
      return per_infoset, per_infoset
    if entry.key == "observation":
      size = len(self.key_hashes) * self.grown.max_actions
      return size, size
    return slots, slots

  def _table_bytes(self, infosets, slots):
    """Bytes of the solver's tables at these capacities (the observation
    labels' arrays at their present sizes)."""
    size, count_size = self._baseline_sizes(infosets, slots)
    matrices, vectors = self.rows()
    labels = (self.node_key.nbytes + self.key_hashes.nbytes
              if self.observed else 0)
    return 8 * (infosets * (len(matrices) * self.grown.max_actions
                            + len(vectors)) + size + count_size) + labels

  def _label_node(self, node, state):
    """Observation-keyed baselines: node's label, the label of its
    observation key (mccfrb.games.keys.observation_key, hashed to 128 bits
    as infoset strings are), a new one if the key is new (the baseline
    tables doubled when the labels outgrow them)."""
    if not self.observed:
      return
    s = self._solver
    digest = hashlib.blake2b(
        repr(keys_lib.observation_key(state, len(state.history()))).encode(),
        digest_size=16).digest()
    label = self._label_of.get(digest)
    if label is None:
      label = len(self._label_of)
      self._label_of[digest] = label
      if label >= len(self.key_hashes):
        self.key_hashes = _grown(self.key_hashes, 2 * len(self.key_hashes), 0)
        size, _ = self._baseline_sizes(1, 1)
        s._baseline = _grown(s._baseline, size, 0.0)  # pylint: disable=protected-access
        s._baseline_count = _grown(s._baseline_count, size, 0)  # pylint: disable=protected-access
      self.key_hashes[label] = np.frombuffer(digest, dtype=np.uint64)
    self.node_key[node] = label

  def _grow_tables(self):
    """The solver's tables re-allocated to the tree's capacities (new rows
    0)."""
    # pylint: disable=protected-access
    s, g = self._solver, self.grown
    i, n = g.infoset_capacity, g.slot_capacity
    if len(s._regrets) < i:
      for name in sum(self.rows(), ()):
        setattr(s, name, _grown(getattr(s, name), i, 0))
      if (self.outcome_sampling and baselines_lib.BASELINES[
          s._baseline_name].owner == baselines_lib.OWNER_UPDATE_PLAYER):
        # Laid out (player, infoset, action): each player's block moves.
        old = len(s._baseline) // 2
        baseline = np.zeros(2 * i * g.max_actions)
        counts = np.zeros(2 * i, dtype=np.int64)
        for p in (0, 1):
          baseline[p * i * g.max_actions:p * i * g.max_actions + old] = (
              s._baseline[p * old:(p + 1) * old])
          rows = old // g.max_actions
          counts[p * i:p * i + rows] = s._baseline_count[p * rows:
                                                         (p + 1) * rows]
        s._baseline, s._baseline_count = baseline, counts
    size, count_size = self._baseline_sizes(i, n)
    if not self.outcome_sampling:
      return
    if self.observed and len(self.node_key) < g.node_capacity:
      self.node_key = _grown(self.node_key, g.node_capacity, -1)
    if len(s._baseline) < size:
      s._baseline = _grown(s._baseline, size, 0.0)
      s._baseline_count = _grown(s._baseline_count, count_size, 0)
    self._uniform_new_rows()

  def _uniform_new_rows(self):
    """sigma of the infosets stored since the last call: zero regrets, so
    uniform (what regret matching gives); the rows past their actions stay
    0."""
    g, strategy = self.grown, self._solver._strategy  # pylint: disable=protected-access
    for row in range(self._strategy_rows, g.num_infosets):
      count = g.infoset_num_actions[row]
      strategy[row, :count] = 1.0 / count
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

  def run_outcome(self, num_iterations):
    """`num_iterations` outcome-sampling iterations (module docstring)."""
    # pylint: disable=protected-access
    s, g = self._solver, self.grown
    io = np.array([0, -1, -1, 0], dtype=np.int64)
    leaf = np.zeros(1)
    weighting = outcome.Weights(*s._weights.args(
        s._num_iterations + num_iterations))
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
            g.infoset_num_actions, s._regrets, s._strategy, s._avg,
            s._avg_last, s._baseline, s._baseline_count, s._through,
            self.node_key, 0, np.zeros(0)),
                outcome.Grown(slot_node, io, leaf), s._kernel_codes(),
                weighting, g.utility_sum, s._num_iterations + 1, 0,
                2 * num_iterations, True, s._rng_words, s._scratch, None)
        generation = g.generation
      s._nodes_touched += outcome.tree_episodes(*args)[1]
      slot = int(io[1])
      if slot < 0:
        break
      path_node, path_action, depth = (s._scratch.row[0],
                                        s._scratch.info[0], int(io[3]))
      if 0 <= last_depth < depth and path_node[last_depth] == last:
        state = g.advance(last_state, path_node, path_action, last_depth,
                          depth)
      else:
        state = g.state_of(path_node, path_action, depth)
      node = g.add_child(int(path_node[depth - 1]),
                         int(path_action[depth - 1]), state,
                         self._table_bytes)
      last, last_depth, last_state = node, depth, state
      if node is not None:
        labels = len(self.key_hashes) if self.observed else 0
        if generation != g.generation:
          self._grow_tables()
        self._label_node(node, state)
        if generation != g.generation or (
            self.observed and labels != len(self.key_hashes)):
          args = None
        elif self._strategy_rows < g.num_infosets:
          self._uniform_new_rows()
      else:  # Full: this episode's value below `slot` from a play-out.
        if not self.dropped:
          self._say_frozen()
        self.dropped += 1
        io[2] = slot
        leaf[0] = self._playout(state)
    s._num_iterations += num_iterations

  def _say_frozen(self):
    """Warns, once per solver, that the tree stopped growing."""
    g = self.grown
    warnings.warn(
        f"mccfrb: the grown tree of {g.game} reached max_memory="
        f"{g.max_memory} bytes at {g.num_nodes} nodes and {g.num_infosets} "
        "infosets; it stops growing, and episodes that leave it are played "
        "out uniformly (counted in memory()['dropped']).", stacklevel=4)

  def run_external(self, num_iterations):
    """`num_iterations` external-sampling iterations (module docstring)."""
    # pylint: disable=protected-access
    solver, g = self._solver, self.grown
    s = solver._settings
    io = np.zeros(2, dtype=np.int64)
    touched = solver._counters[0]
    weighting = solver._weights.args(solver._num_iterations + num_iterations)
    while True:
      external.es_grown(
          *g.kernel_args(), g.utility_sum, g.infoset_num_actions,
          solver._regrets, solver._avg, solver._through, *weighting,
          solver._pruning_code(), s["prune_threshold"],
          s["prune_probability"], s["prune_k"], s["prune_floor"],
          s["prune_after"], solver._num_iterations + 1, 2 * num_iterations,
          solver._rng_words, *solver._scratch, solver._counters, io,
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
        if g.add_child(parent, j, state, self._table_bytes) is None:
          raise ValueError(
              f"max_memory={g.max_memory} is full: an external-sampling "
              "traversal must store every node it explores. Pass a larger "
              "max_memory, or use outcome sampling, which plays out past "
              "it.")
      self._grow_tables()
    solver._nodes_touched += int(solver._counters[0] - touched)
    solver._num_iterations += num_iterations

  def current_row(self, row, count):
    """sigma of infoset `row` (regret matching of its regrets)."""
    s = self._solver
    if self.outcome_sampling:
      return s._strategy[row, :count]  # pylint: disable=protected-access
    out = np.zeros((1, count))
    exact.regret_matching_row(s._caught_up_regrets()[row:row + 1, :count],  # pylint: disable=protected-access
                              0, count, out, 0)
    return out[0]

  def average_row(self, row, count, state, player, iterations):
    """The average strategy of infoset `row`, with optimistic averaging's
    catch-up at the owner's reach along `state`'s history."""
    # pylint: disable=protected-access
    s = self._solver
    cum = s._avg[row, :count].copy()
    if self.outcome_sampling and s._averaging_code == 1 and iterations:
      reach = self._own_reach(state, player)
      skipped = base.skipped_weight(iterations, s._avg_last[row],
                                    s._regret_code)
      cum += skipped * reach * s._strategy[row, :count]
    total = cum.sum()
    return cum / total if total > 0 else np.full(count, 1.0 / count)

  def _own_reach(self, state, player):
    """pi_player(h) of the state's history h under the current strategy:
    the product of sigma at `player`'s decisions (uniform at infosets
    the tree does not store)."""
    g, strategy = self.grown, self._solver._strategy  # pylint: disable=protected-access
    replay = g.game.new_initial_state()
    reach = 1.0
    for a in state.history():
      if replay.current_player() == player:
        legal = replay.legal_actions()
        row = g.find(replay.information_state_string(player), player)
        reach *= (strategy[row, legal.index(a)] if row >= 0
                  else 1.0 / len(legal))
      replay.apply_action(a)
    return reach

  def require_tree(self, what):
    raise ValueError(
        f"{what} needs the compiled tree; this solver grows the tree of "
        f"{self._solver.game} as it samples. Use average_policy() / "
        "current_policy() (policies answering state by state), and "
        "head-to-head evaluation for games too large to walk.")

  def _grown_memory(self):
    """nodes, slots, infosets, bytes (tree and tables, capacity included),
    bytes_per_node, bytes_per_infoset, max_memory, frozen, dropped."""
    g, s = self.grown, self._solver
    tables = sum(getattr(s, n).nbytes for n in self._saved())
    tables += self.node_key.nbytes + (self.key_hashes.nbytes
                                      if self.observed else 0)
    arrays = g.arrays()
    node_bytes = sum(arrays[n].nbytes for n in g.NODE_ARRAYS + g.SLOT_ARRAYS)
    return dict(nodes=g.num_nodes, slots=g.num_slots,
                infosets=g.num_infosets, bytes=g.nbytes() + tables,
                tree_bytes=g.nbytes(), table_bytes=tables,
                bytes_per_node=node_bytes / max(g.num_nodes, 1),
                bytes_per_infoset=(g.nbytes() - node_bytes + tables)
                / max(g.num_infosets, 1),
                max_memory=g.max_memory, frozen=g.frozen,
                dropped=self.dropped)

  def memory(self):
    """What the grown tree holds: nodes, child slots and infosets stored;
    cells; bytes (tree and tables, capacity included); bytes_per_node (the
    node and slot arrays over the nodes stored: `BYTES_PER_NODE` and
    `BYTES_PER_SLOT` a child, doubled at most by capacity) and
    bytes_per_infoset (the infoset arrays, their hash and the solver's
    tables over the infosets stored); max_memory, frozen, and `dropped`
    (episodes played out past the tree once it was full)."""
    report = self._grown_memory()
    report["cells"] = int(
        self.grown.infoset_num_actions[:self.grown.num_infosets].sum())
    return report

  def infosets_stored(self):
    return self.grown.num_infosets

  def chunk_unit(self):
    return 1

  def policy(self, current):
    """A `GrownPolicy` of the current or average strategy."""
    return GrownPolicy(self._solver, current=current)

  def _saved(self):
    """The solver's table names on a grown tree."""
    names = sum(self.rows(), ())
    if self.outcome_sampling:
      names += ("_baseline", "_baseline_count")
    return names

  def tables_to_save(self):
    s, g = self._solver, self.grown
    saved = {name.lstrip("_"): getattr(s, name) for name in self._saved()}
    if self.observed:
      saved.update(node_key=self.node_key, key_hashes=self.key_hashes)
    saved.update({"grown_" + k: v for k, v in g.arrays().items()})
    saved["grown_counts"] = np.array(
        [g.num_nodes, g.num_slots, g.num_infosets, int(g.frozen),
         self.dropped, self._strategy_rows], dtype=np.int64)
    saved["grown_playout_rng"] = np.frombuffer(
        json.dumps(self._playout_rng.bit_generator.state).encode(),
        dtype=np.uint8)
    return saved

  def restore_tables(self, tables, path):
    """A grown solver's checkpoint: the tree's arrays at their saved
    capacities, then the tables at those capacities, each checked."""
    s, g = self._solver, self.grown
    names = ["grown_" + k for k in g.arrays()] + [
        "grown_counts", "grown_playout_rng"]
    missing = [n for n in names if n not in tables]
    if missing:
      raise ValueError(f"{path} is not a complete grown-tree checkpoint: "
                       f"it lacks {missing}.")
    arrays = {}
    for name, current in g.arrays().items():
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
      g.restore(arrays, counts[:3], counts[3])
      state = json.loads(tables["grown_playout_rng"].tobytes().decode())
      self._playout_rng.bit_generator.state = state
    except (ValueError, TypeError, KeyError, UnicodeDecodeError) as e:
      raise ValueError(f"{path}: {e}.") from None
    self.dropped, self._strategy_rows = int(counts[4]), int(counts[5])
    iterations = s.num_iterations
    if self.observed:
      labels, _ = tables.header("key_hashes")
      self.node_key = np.zeros(g.node_capacity, dtype=np.int64)
      self.key_hashes = np.zeros((labels[0], 2), dtype=np.uint64)
      base.restore_table(tables, "node_key", self.node_key, path,
                         iterations, signed=True)
      base.restore_table(tables, "key_hashes", self.key_hashes, path,
                         iterations)
      used = int(self.node_key.max(initial=-1)) + 1
      self._label_of = {self.key_hashes[k].tobytes(): k
                        for k in range(used)}
    size, count_size = self._baseline_sizes(g.infoset_capacity,
                                            g.slot_capacity)
    shape = (g.infoset_capacity, g.max_actions)
    matrices, vectors = self.rows()
    targets = [(n, shape, np.float64) for n in matrices] + [
        (n, shape[:1], np.int64) for n in vectors]
    if self.outcome_sampling:
      targets += [("_baseline", (size,), np.float64),
                  ("_baseline_count", (count_size,), np.int64)]
    for name, target_shape, dtype in targets:
      setattr(s, name, np.zeros(target_shape, dtype=dtype))
      base.restore_table(tables, name.lstrip("_"), getattr(s, name), path,
                         iterations)


def _grown(array, size, fill):
  """`array` with its first axis grown to `size` (games/grown.py)."""
  return grown_lib._grown(array, size, fill)  # pylint: disable=protected-access
