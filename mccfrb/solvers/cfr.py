"""The exact CFR family on the full compiled tree (kernels/cfr.py)."""

import collections
import dataclasses

import numpy as np

from mccfrb.tables import policy as policy_lib
from mccfrb.kernels import schedule as schedule_lib
from mccfrb.games import tree as tree_lib
from mccfrb.kernels import cfr
from mccfrb import games
from mccfrb.solvers import base
from mccfrb.solvers import engine as engine_lib
from mccfrb.solvers import representation as representation_lib
from mccfrb.solvers import rules as rules_lib

# Variant names (solvers/rules.py); a `RegretRule` instance is also a variant.
CFR_VARIANTS = tuple(rules_lib.RULES)
# Pass structures of kernels/cfr.py (equal tables; BUILD_NOTES.md).
PASSES = {"auto": None, "sweeps": cfr.SWEEPS, "four_sweeps": cfr.FOUR_SWEEPS}
# passes="auto" runs the two sweeps on trees of at least this many nodes
# (or with threads > 1) and the four sweeps below, where they are faster
# (two sweeps / four sweeps: Leduc, 9,457 nodes, 0.77-0.82; goofspiel 4,
# 26,773 nodes, 1.15-1.20; docs/pages/exact-cfr.md).
AUTO_MIN_NODES = 16_384


@dataclasses.dataclass
class InfoStateNode:
  """One infoset's tables in OpenSpiel's per-infoset form, with the field
  names of OpenSpiel's `cfr._InfoStateNode` (`CFRSolver.info_state_nodes`).

  Attributes:
    legal_actions: the infoset's legal actions, in OpenSpiel's order.
    index_in_tabular_policy: its row in OpenSpiel's `TabularPolicy`.
    cumulative_regret: {action: cumulative regret R(I, a)}.
    cumulative_policy: {action: the sum of the average strategy's terms
      (the weights before normalisation)}.
  """
  legal_actions: list
  index_in_tabular_policy: int
  cumulative_regret: dict = dataclasses.field(
      default_factory=lambda: collections.defaultdict(float))
  cumulative_policy: dict = dataclasses.field(
      default_factory=lambda: collections.defaultdict(float))


class CFRSolver(base.TabularSolverBase):
  """Exact CFR family on the full compiled tree, with OpenSpiel's interface.

  Variants, with OpenSpiel's update order (alternating updates, or
  simultaneous ones with `alternating_updates=False`), each a regret rule
  (mccfrb/solvers/rules.py):
    "cfr": vanilla CFR (pyspiel.CFRSolver);
    "cfr+": regret matching+ and linear averaging (pyspiel.CFRPlusSolver);
    "linear": Linear CFR, DCFR with alpha = beta = gamma = 1
      (open_spiel discounted_cfr.LCFRSolver);
    "discounted": DCFR(alpha, beta, gamma), default (1.5, 0, 2)
      (open_spiel discounted_cfr.DCFRSolver);
    "pcfr+": predictive CFR+ (Farina et al. 2021), gamma default 2;
    "dcfr+": DCFR+ (Xu et al. 2024), alpha 1.5, gamma 4;
    "pdcfr+": predictive DCFR+ (Xu et al. 2024), alpha 2.3, gamma 5;
    or a `mccfrb.RegretRule` instance: a rule of one's own.

  Args:
    game: a game string or `pyspiel.Game`.
    variant: a name in CFR_VARIANTS or a `RegretRule`.
    alpha, beta, gamma: the named variant's constants (None: its defaults,
      the authors'); ValueError for a constant the variant does not take.
    max_nodes, tree: as for `MCCFRbSolver`.
    threads: numba threads for one solve (default 1; at most numba's pool,
      NUMBA_NUM_THREADS): the subtrees below the schedule's frontier
      (mccfrb/kernels/schedule.py) and the infosets of the updating player are
      shared out; on an engine, Python threads walking public subtrees
      (`stream.StreamingCFR`). The tables do not depend on it.
    passes: "sweeps" (two sweeps of the tree per player and iteration that
      skip zero-reach subtrees, on any number of threads), "four_sweeps"
      (the former kernel's four sweeps of the tree per player and
      iteration, one thread only; faster on trees that fit in cache, and
      the yardstick of the benchmark and the tests) or "auto" (default:
      "sweeps" with threads > 1 or at least AUTO_MIN_NODES nodes, else
      "four_sweeps"). All give the same tables (BUILD_NOTES.md, "Exact CFR
      family").
    representation: "auto" (default), "tree" or "engine"
      (solvers/representation.py). On an engine an iteration streams over
      the public tree (mccfrb/solvers/stream.py): two walks of the game, per-infoset
      tables only; the averages equal the tree's up to the order of sums.
    max_memory: bytes the engine's tables may take (default: half the
      memory available).
    seed: accepted, and checked (an integer >= 0 or None), so that every
      solver takes the same `seed` argument; exact CFR draws no random
      numbers, so its tables do not depend on it.
    alternating_updates: True (default): in iteration t the players are
      updated in turn, player p's pass with the strategies players
      0 .. p - 1 got in iteration t (OpenSpiel's `CFRSolver`). False:
      simultaneous updates, vanilla CFR as Zinkevich et al. 2007 wrote
      it: every player's regrets and average sums from the same profile
      sigma^t, then every player's new strategy (OpenSpiel's
      `cfr._CFRSolver(..., alternating_updates=False)`). For the rules
      that run it see `rules.SIMULTANEOUS_RULES`; ValueError for the
      others.
  """

  _table_names = ("_regrets", "_avg", "_strategy")

  def __init__(self, game, variant="cfr", alpha=None, beta=None, gamma=None,
               max_nodes=tree_lib.DEFAULT_MAX_NODES, tree=None, threads=1,
               passes="auto", representation="auto", max_memory=None,
               seed=None, alternating_updates=True):
    base.check_seed(seed, allow_none=True)  # Deterministic: kept for the API.
    self._rule = rules_lib.rule_of(variant, alpha=alpha, beta=beta,
                                   gamma=gamma)
    self._simultaneous = not rules_lib.check_alternating(
        alternating_updates, self._rule)
    base.check_choice("passes", passes, PASSES)
    base.check_threads(threads, None)
    self._threads = int(threads)
    if passes == "four_sweeps" and threads != 1:
      raise ValueError("passes='four_sweeps' runs on one thread; got "
                       f"threads={threads}.")
    self._variant = variant if isinstance(variant, str) else "custom"
    self._rng = np.random.default_rng(0)  # Unused: exact; kept for save().
    if tree is not None and representation == "auto":
      representation = "tree"
    loaded = games.load_game(game, general=True)
    kind, engine = representation_lib.resolve(loaded, representation,
                                              max_nodes)
    general = not games.is_two_player_zero_sum(loaded)
    if general and (threads != 1 or passes == "sweeps"):
      raise ValueError(
          f"{loaded} has {loaded.num_players()} players or general-sum "
          "returns: CFRSolver runs it with the four sweeps on one thread "
          f"(passes='auto' or 'four_sweeps', threads=1); got "
          f"threads={threads}, passes={passes!r}.")
    if kind == "engine":
      if passes not in ("auto", "sweeps"):
        raise ValueError("CFRSolver on an engine streams two walks a "
                         f"player (passes='auto'); got passes={passes!r}.")
      from mccfrb.solvers import stream  # pylint: disable=import-outside-toplevel
      self._stream = stream.StreamingCFR(
          engine, self._rule, max_memory, threads=threads,
          alternating_updates=not self._simultaneous)
      # The streaming walk's tables; averages have no catch-up.
      self._init_backend(loaded, engine_lib.EngineBackend(
          self, engine, self._stream.tables, precision="float64"))
      return
    self._init_game(loaded, max_nodes, tree, general=True)
    t = self._tree
    if t.is_general:
      passes = "four_sweeps"
    elif passes == "auto":
      passes = ("sweeps" if self._threads > 1 or t.num_nodes >= AUTO_MIN_NODES
                else "four_sweeps")
    self._passes = PASSES[passes]
    shape = (t.num_infosets, t.max_actions)
    self._regrets = np.zeros(shape)
    self._avg = np.zeros(shape)
    self._strategy = policy_lib.uniform_table(t)
    self._inst = (np.zeros(shape) if self._rule.splits()
                  else np.zeros((0, 0)))
    self._schedule = (schedule_lib.schedule_of(t)
                      if self._passes == cfr.SWEEPS else None)
    self._scratch = cfr_scratch(t, self._schedule)
    # Whether the scratch holds what the last run left (kernels/cfr.py).
    self._resume = False

  def _options(self):
    if self._variant == "custom":
      raise ValueError(f"A solver with the custom regret rule "
                       f"{self._rule!r} cannot be saved: its rule is code. "
                       "Save its tables with average_policy() instead.")
    options = {"variant": self._variant, **self._rule.constants()}
    if self._simultaneous:
      options["alternating_updates"] = False
    if self.representation == "engine":
      options.update(representation="engine",
                     max_memory=self._backend.max_memory)
    return options

  def evaluate_and_update_policy(self):
    """One iteration, under the name OpenSpiel's CFR family uses (no
    progress bar, as `iteration()`)."""
    self.run(1, progress=False)

  @property
  def rule(self):
    """The `RegretRule` this solver runs."""
    return self._rule

  @property
  def alternating_updates(self):
    """Whether the players are updated in turn (False: simultaneous)."""
    return not self._simultaneous

  def _run_chunk(self, num_iterations):
    """`num_iterations` exact iterations in one kernel call (on an engine:
    streamed, two walks an iteration)."""
    if self.representation == "engine":
      self._stream.tables = self._backend.tables  # As loaded, if it was.
      self._stream.num_iterations = self._num_iterations
      self._stream.run(int(num_iterations))
      self._num_iterations = self._stream.num_iterations
      return
    t = self._tree
    with base.numba_threads(self._threads):
      self._nodes_touched += cfr.cfr_iterations(
          *(self._schedule.tree if self._schedule else t.kernel_args()),
          t.utility_sum, t.infoset_num_actions,
          t.infoset_player, _schedule_args(self._schedule), self._scratch,
          self._regrets, self._avg, self._strategy, self._passes,
          rules_lib.kernel_flags(self._rule),
          self._rule.coefficients(self._num_iterations + 1, num_iterations),
          self._inst, self._resume, self._num_iterations + 1,
          num_iterations, self._simultaneous)
    self._num_iterations += num_iterations
    self._resume = True

  def current_policy_table(self):
    self._require_tree("current_policy_table()")
    return self._strategy.copy()

  def info_state_nodes(self):
    """{information state string: `InfoStateNode`}: the cumulative regrets
    and average-strategy sums of every infoset, in the form of OpenSpiel's
    `cfr._CFRSolver._info_state_nodes` (whose values they equal after the
    same iterations). A new copy each call: writing to it changes no
    table. On a compiled tree only."""
    self._require_tree("info_state_nodes()")
    t = self._tree
    lookup = self._backend.converter().state_lookup
    nodes = {}
    for i, key in enumerate(t.infoset_strings()):
      count = t.infoset_num_actions[i]
      actions = [int(a) for a in t.infoset_actions[i, :count]]
      node = InfoStateNode(actions, lookup[key])
      for j, a in enumerate(actions):
        node.cumulative_regret[a] = float(self._regrets[i, j])
        node.cumulative_policy[a] = float(self._avg[i, j])
      nodes[key] = node
    return nodes

  @property
  def _info_state_nodes(self):
    """`info_state_nodes()` under the name OpenSpiel's solvers use, for
    scripts written against them."""
    return self.info_state_nodes()


def _schedule_args(schedule):
  """`Schedule.cfr_args()`, or placeholders for the four-sweep kernel."""
  if schedule is not None:
    return schedule.cfr_args()
  empty = np.zeros(0, dtype=np.int32)
  return schedule_lib.SweepArgs(
      empty, empty, empty, empty, np.zeros(1, dtype=np.int64),
      np.zeros(0, dtype=np.int64), np.zeros(3, dtype=np.int64), empty, empty,
      np.zeros(0), False, False)


def cfr_scratch(tree, schedule):
  """The `Scratch` of `kernels.cfr.cfr_iterations` (see there), for the
  four sweeps if `schedule` is None."""
  n, a = tree.num_nodes, tree.max_actions
  if schedule is None:
    reach, values = np.zeros((n, tree.num_players + 1)), np.zeros(n)
    slots, tasks = 0, -1
  else:
    reach = np.ones((1, n))  # The root's entry stays 1.
    # Terminal values never change and are never written by the kernel.
    kind, utility = schedule.tree[0], schedule.tree[6]
    values = np.where(kind == tree_lib.TERMINAL, utility, 0.0)
    slots, tasks = schedule.num_slots, schedule.num_tasks
  own = np.zeros((slots, 2))  # (own reach, stamp); stamps start at -1.
  own[:, 1] = -1.0
  delta = np.zeros((slots, 1 + a))  # (stamp, regret increments).
  delta[:, 0] = -1.0
  return cfr.Scratch(reach, values, own, delta,
                     np.zeros(tasks + 1, dtype=np.int64))
