"""Exact CFR family against OpenSpiel; regret matching's worked example."""

import numba
import numpy as np
import pyspiel
import pytest
from open_spiel.python.algorithms import cfr as os_cfr
from open_spiel.python.algorithms import discounted_cfr

import mccfrb
import mccfrb.kernels.exact
import mccfrb.kernels.cfr
from mccfrb.kernels import cfr as cfr_kernels
import mccfrb.solvers.cfr
import mccfrb.kernels.schedule
import mccfrb.games.tree

REFERENCES = {
    "cfr": (pyspiel.CFRSolver, os_cfr.CFRSolver),
    "cfr+": (pyspiel.CFRPlusSolver, os_cfr.CFRPlusSolver),
    "linear": (None, discounted_cfr.LCFRSolver),
    "discounted": (None, discounted_cfr.DCFRSolver),
}


def _raw_tables(tree, python_solver):
  regrets, avg = np.zeros((2, tree.num_infosets, tree.max_actions))
  index = tree.infoset_index()
  for key, node in python_solver._info_state_nodes.items():  # pylint: disable=protected-access
    i = index[key]
    actions = list(tree.infoset_actions[i, :tree.infoset_num_actions[i]])
    for a, r in node.cumulative_regret.items():
      regrets[i, actions.index(a)] = r
    for a, s in node.cumulative_policy.items():
      avg[i, actions.index(a)] = s
  return regrets, avg


@pytest.mark.parametrize("game_name", ["kuhn_poker", "leduc_poker"])
@pytest.mark.parametrize("variant", sorted(REFERENCES))
def test_cfr_family_equals_openspiel(game_name, variant):
  game = pyspiel.load_game(game_name)
  cpp_class, python_class = REFERENCES[variant]
  python_solver = python_class(game)
  cpp_solver = cpp_class(game) if cpp_class else None
  ours = mccfrb.CFRSolver(game, variant=variant)
  sweeps = mccfrb.CFRSolver(game, variant=variant, tree=ours.tree,
                            passes="sweeps")
  tree, done = ours.tree, 0
  for checkpoint in (1, 10, 100):
    for _ in range(checkpoint - done):
      python_solver.evaluate_and_update_policy()
      if cpp_solver:
        cpp_solver.evaluate_and_update_policy()
    ours.run(checkpoint - done)
    sweeps.run(checkpoint - done)
    done = checkpoint
    regrets, avg = _raw_tables(tree, python_solver)
    for solver in (ours, sweeps):
      np.testing.assert_allclose(solver._regrets, regrets, rtol=1e-9,
                                 atol=1e-9)
      np.testing.assert_allclose(solver._avg, avg, rtol=1e-9, atol=1e-9)
    expected = pyspiel.exploitability(
        game, mccfrb.to_pyspiel_policy(tree, mccfrb.table_from_policy(
            tree, python_solver.average_policy())))
    assert mccfrb.exploitability(tree, ours.average_policy_table()) == (
        pytest.approx(expected, abs=1e-9))
    if cpp_solver:
      average = getattr(cpp_solver, "tabular_average_policy",
                        cpp_solver.average_policy)()
      np.testing.assert_allclose(
          ours.average_policy_table(),
          mccfrb.table_from_policy(tree, average, game=game), atol=1e-9)
      current = getattr(cpp_solver, "tabular_current_policy",
                        cpp_solver.current_policy)()
      np.testing.assert_allclose(
          ours.current_policy_table(),
          mccfrb.table_from_policy(tree, current, game=game), atol=1e-9)
  assert ours.num_iterations == 100


def test_cfr_plus_converges_and_saves(tmp_path):
  solver = mccfrb.CFRSolver("leduc_poker", variant="cfr+")
  solver.run(200)
  assert mccfrb.exploitability(solver.tree, solver.average_policy_table()) < 0.01
  solver.save(tmp_path / "cfr.npz")
  loaded = mccfrb.CFRSolver.load(tmp_path / "cfr.npz", "leduc_poker")
  solver.run(5)
  loaded.run(5)
  np.testing.assert_array_equal(loaded._regrets, solver._regrets)


def test_cfr_bad_options():
  with pytest.raises(ValueError, match=r"Unknown variant 'cfr\+\+'"):
    mccfrb.CFRSolver("kuhn_poker", variant="cfr++")
  with pytest.raises(ValueError, match="'cfr' takes no constants; got alpha"):
    mccfrb.CFRSolver("kuhn_poker", variant="cfr", alpha=2.0)


RPS_LIKE = ([[0, -1, 1], [1, 0, -2], [-2, 3, 0]],
            [[0, 3, -2], [-2, 0, 1], [1, -1, 0]])


def test_regret_matching_worked_example():
  """docs/pages/algorithms.md: regret matching on the 3x3 game."""
  result = mccfrb.regret_matching(*RPS_LIKE, iterations=2)
  (rx, ry) = result.regrets
  np.testing.assert_allclose(rx[0], [0, -1 / 3, 1 / 3], atol=1e-12)
  np.testing.assert_allclose(ry[0], [-1 / 3, 2 / 3, -1 / 3], atol=1e-12)
  xs, ys = result.strategies
  np.testing.assert_allclose(xs[1], [0, 0, 1], atol=1e-12)  # sigma_1^2 = S
  np.testing.assert_allclose(ys[1], [0, 1, 0], atol=1e-12)  # sigma_2^2 = P
  np.testing.assert_allclose(rx[1], [-4, -10 / 3, 1 / 3], atol=1e-12)
  np.testing.assert_allclose(ry[1], [5 / 3, 2 / 3, 2 / 3], atol=1e-12)


def test_regret_matching_plus_and_matrix_games():
  plus = mccfrb.regret_matching(*RPS_LIKE, iterations=2, plus=True)
  np.testing.assert_allclose(plus.regrets[0][0], [0, 0, 1 / 3], atol=1e-12)
  assert (plus.regrets[0] >= 0).all() and (plus.regrets[1] >= 0).all()
  game = pyspiel.load_matrix_game("matrix_rps")
  result = mccfrb.regret_matching(game, iterations=20_000, plus=True)
  np.testing.assert_allclose(result.average[0], [1 / 3] * 3, atol=0.01)
  with pytest.raises(ValueError, match="iterations"):
    mccfrb.regret_matching(*RPS_LIKE, iterations=0)


# The pass structures, threads and schedules of the exact CFR kernel.

GOOFSPIEL4 = ("goofspiel(num_cards=4,imp_info=True,points_order=random,"
              "returns_type=point_difference)")
TABLES = ("_regrets", "_avg", "_strategy")


def bfs_tree(tree):
  """The same game tree with its nodes numbered breadth first (root 0,
  children consecutive, child ids above their parent's, but not the
  compile's depth-first block order)."""
  order, k = [0], 0
  while k < len(order):
    n = order[k]
    k += 1
    if tree.node_kind[n] != mccfrb.games.tree.TERMINAL:
      start = tree.child_start[n]
      order.extend(range(start, start + tree.num_children[n]))
  order = np.array(order)
  new_id = np.empty_like(order)
  new_id[order] = np.arange(len(order))
  fields = {name: getattr(tree, name)[order] for name in (
      "node_kind", "node_player", "node_infoset", "num_children",
      "edge_prob", "utility")}  # chance_actions is left as it is: unused.
  fields["child_start"] = np.where(
      fields["node_kind"] != mccfrb.games.tree.TERMINAL,
      new_id[tree.child_start[order]], 0).astype(tree.child_start.dtype)
  return tree._replace(**fields)


def assert_same_tables(a, b, zero_sign=False):
  """Bit for bit; with zero_sign, a regret of 0 may differ in sign."""
  for name in TABLES:
    x, y = getattr(a, name), getattr(b, name)
    if zero_sign and name == "_regrets":
      np.testing.assert_array_equal(x, y)  # -0.0 == 0.0
      assert np.array_equal(x.view(np.int64) == y.view(np.int64),
                            (x != 0) | (x.view(np.int64) == y.view(np.int64)))
    else:
      np.testing.assert_array_equal(x.view(np.int64), y.view(np.int64),
                                    err_msg=name)


@pytest.fixture(scope="module")
def trees():
  return {g: mccfrb.compile_tree(g) for g in ("kuhn_poker", "leduc_poker",
                                              GOOFSPIEL4)}


@pytest.mark.parametrize("game_name", ["kuhn_poker", "leduc_poker", GOOFSPIEL4])
@pytest.mark.parametrize("variant", sorted(REFERENCES))
def test_sweeps_equal_the_four_sweep_kernel(trees, game_name, variant):
  """The default pass structure against the former one, after 1, 10, 100."""
  tree = trees[game_name]
  four = mccfrb.CFRSolver(game_name, variant=variant, tree=tree,
                          passes="four_sweeps")
  ours = mccfrb.CFRSolver(game_name, variant=variant, tree=tree,
                          passes="sweeps")
  done = 0
  for checkpoint in (1, 10, 100):
    four.run(checkpoint - done)
    ours.run(checkpoint - done)
    done = checkpoint
    assert_same_tables(four, ours, zero_sign=variant == "discounted")


def test_sweeps_prune_and_resume(trees, tmp_path):
  """run(a); run(b) == run(a + b), also through save and load (a loaded
  solver has no scratch to resume from and sweeps player 0's reach
  again)."""
  tree = trees[GOOFSPIEL4]
  one = mccfrb.CFRSolver(GOOFSPIEL4, variant="cfr+", tree=tree)
  assert one._passes == mccfrb.kernels.cfr.SWEEPS  # "auto" on 26,773 nodes.
  one.run(30)
  before = one.nodes_touched
  one.run(1)
  # Two sweeps per player would visit 4 N nodes; CFR+ zeros prune a part.
  assert one.nodes_touched - before < 0.9 * 4 * tree.num_nodes
  whole = mccfrb.CFRSolver(GOOFSPIEL4, variant="cfr+", tree=tree)
  whole.run(31)
  assert_same_tables(one, whole)
  assert one.nodes_touched == whole.nodes_touched
  split = mccfrb.CFRSolver(GOOFSPIEL4, variant="cfr+", tree=tree)
  split.run(12)
  split.save(tmp_path / "cfr.npz")
  loaded = mccfrb.CFRSolver.load(tmp_path / "cfr.npz")
  assert loaded._passes == mccfrb.kernels.cfr.SWEEPS
  split.run(19)
  loaded.run(19)
  assert_same_tables(one, split)
  assert_same_tables(one, loaded)


def test_underflowing_reach_is_not_pruned():
  """Reaches that underflow to 0 through nonzero probabilities are not
  pruned (only exact zero factors are): start from regrets that give
  probabilities of 1e-170, whose products along a path underflow."""
  tree = mccfrb.compile_tree("leduc_poker")
  solvers = [mccfrb.CFRSolver("leduc_poker", variant="cfr+", tree=tree,
                              passes=p) for p in ("four_sweeps", "sweeps")]
  regrets = np.where(tree.legal_mask(), 1e-170, 0.0)
  regrets[:, 0] = 1.0
  strategy = np.zeros_like(regrets)
  mccfrb.kernels.exact.regret_matching(regrets, tree.infoset_num_actions,
                                       strategy)
  reach = np.zeros((tree.num_nodes, 3))
  mccfrb.kernels.exact.reach_probabilities(*tree.kernel_args()[:6], strategy,
                                           reach)
  assert (strategy[tree.legal_mask()] > 0).all()
  assert (reach[:, :2] == 0).any()  # Underflows: no factor is 0.
  for s in solvers:
    s._regrets[...] = regrets
    s._strategy[...] = strategy
  for _ in range(3):
    for s in solvers:
      s.run(1)
    assert_same_tables(*solvers)
  # One pass's sweeps on that strategy: no factor is 0, so every value is
  # computed, also below the reaches that underflowed.
  schedule = mccfrb.kernels.schedule.schedule_of(tree)
  scratch = mccfrb.solvers.cfr.cfr_scratch(tree, schedule)
  col, values, slots = scratch[0], scratch[1], scratch[2:]
  cfr_kernels._sweeps(0, 1, 7, True, schedule.zero_chance, True, *schedule.tree[:6],
                      tree.utility_sum, *schedule.cfr_args()[:3],
                      schedule.skip_end, schedule.chance, schedule.slot_of,
                      strategy, col[0], values, *slots)
  assert (col[0][tree.node_kind != 2] == 0).any()
  expected = np.zeros(tree.num_nodes)
  mccfrb.kernels.exact.node_values(*tree.kernel_args(), strategy, expected)
  np.testing.assert_array_equal(values, expected)


@pytest.mark.parametrize("game_name", ["leduc_poker", GOOFSPIEL4])
def test_any_node_numbering(trees, game_name):
  """A tree not numbered in the compile's depth-first block order is
  renumbered by its schedule; the tables do not change."""
  tree = bfs_tree(trees[game_name])
  assert mccfrb.kernels.schedule.schedule_of(tree).order is not None
  four = mccfrb.CFRSolver(game_name, variant="cfr+", tree=tree,
                          passes="four_sweeps")
  ours = mccfrb.CFRSolver(game_name, variant="cfr+", tree=tree,
                          passes="sweeps")
  four.run(40)
  ours.run(40)
  assert_same_tables(four, ours)


needs_two_threads = pytest.mark.skipif(
    numba.config.NUMBA_NUM_THREADS < 2,
    reason="numba runs one thread here (NUMBA_NUM_THREADS=1 or one core)")


@needs_two_threads
@pytest.mark.parametrize("game_name", ["kuhn_poker", "leduc_poker", GOOFSPIEL4])
@pytest.mark.parametrize("variant", ["cfr+", "discounted"])
def test_threads_give_the_same_tables(trees, game_name, variant):
  tree = trees[game_name]
  one = mccfrb.CFRSolver(game_name, variant=variant, tree=tree,
                         passes="sweeps")
  two = mccfrb.CFRSolver(game_name, variant=variant, tree=tree, threads=2)
  for n in (1, 9, 40):
    one.run(n)
    two.run(n)
    assert_same_tables(one, two)
  assert one.nodes_touched == two.nodes_touched
  assert numba.get_num_threads() == numba.config.NUMBA_NUM_THREADS


def test_threads_and_passes_are_checked():
  for bad in (0, -1, 1.5, True, "2"):
    with pytest.raises(ValueError, match="threads must be a positive integer"):
      mccfrb.CFRSolver("kuhn_poker", threads=bad)
  # More threads than numba's pool runs on the pool (base.numba_threads).
  more = mccfrb.CFRSolver("kuhn_poker", variant="cfr+",
                          threads=numba.config.NUMBA_NUM_THREADS + 1)
  one = mccfrb.CFRSolver("kuhn_poker", variant="cfr+", tree=more.tree,
                         passes="sweeps")
  more.run(7)
  one.run(7)
  assert_same_tables(one, more)
  with pytest.raises(ValueError, match="one thread"):
    mccfrb.CFRSolver("kuhn_poker", passes="four_sweeps", threads=2)
  with pytest.raises(ValueError, match="Unknown passes 'three'"):
    mccfrb.CFRSolver("kuhn_poker", passes="three")
  kernels = mccfrb.kernels.cfr
  assert mccfrb.CFRSolver("leduc_poker")._passes == kernels.FOUR_SWEEPS
  if numba.config.NUMBA_NUM_THREADS >= 2:
    assert mccfrb.CFRSolver("kuhn_poker", threads=2)._passes == kernels.SWEEPS
