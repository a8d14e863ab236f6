"""UCT and Smooth UCT against the pure-Python reference, math and the seed."""

import numpy as np
import pytest
from open_spiel.python.algorithms import exploitability as os_exploitability

import mccfrb
from mccfrb import evaluation
from mccfrb.tables import policy as policy_lib
from mccfrb.reference import mcts as reference_mcts
from mccfrb.experiment import registry
from mccfrb.kernels import mcts as mcts_kernel
from mccfrb.kernels import rng as rng_lib
from tests.conftest import check_batch_boundaries
from tests.conftest import check_threads_do_not_matter
from tests.conftest import check_two_threads_converge

# (class, options): UCT, Smooth UCT (the default schedule and the seed's
# d = 0.1, which reaches gamma sooner), each in self-play and against a
# uniform opponent.
CONFIGS = [
    (mccfrb.UCTSolver, {}),
    (mccfrb.UCTSolver, {"opponent": "uniform"}),
    (mccfrb.SmoothUCTSolver, {}),
    (mccfrb.SmoothUCTSolver, {"d": 0.1}),
    (mccfrb.SmoothUCTSolver, {"opponent": "uniform"}),
]
# The UCB constant on each test game's payoff scale (Leduc: the defaults).
KUHN_C = 2.0


def reference_tables(solver, ref):
  """The reference's dict trees laid out like the solver's arrays."""
  index = solver.tree.infoset_index()
  visits = np.zeros_like(solver._visits)
  counts = np.zeros_like(solver._counts)
  values = np.zeros_like(solver._values)
  for tree in ref.trees:
    for key, node in tree.items():
      i = index[key]
      visits[i] = node.visits
      counts[i, :len(node.counts)] = node.counts
      values[i, :len(node.values)] = node.values
  return {"_visits": visits, "_counts": counts, "_values": values}


@pytest.mark.parametrize("game_name,iterations", [("kuhn_poker", 3000),
                                                  ("leduc_poker", 5000)])
@pytest.mark.parametrize("cls,options", CONFIGS)
def test_kernel_equals_python_reference_bit_for_bit(game_name, iterations, cls,
                                                    options):
  if game_name == "kuhn_poker":
    options = dict(options, c=KUHN_C)
  solver = cls(game_name, seed=11, **options)
  solver.run(iterations)
  opts = solver._options()
  ref = reference_mcts.ReferenceMCTS(
      solver.game, solver._smooth, opts["c"], opts.get("gamma", 0.0),
      opts.get("eta0", 1.0), opts.get("d", 0.0), opts["opponent"])
  rng = np.random.default_rng(11)  # The same uniforms the kernel draws.
  rewards = np.zeros(2)
  for k in range(2 * iterations):
    returns = ref.simulate(rng)
    if opts["opponent"] == "uniform":
      rewards[k % 2] += returns[k % 2]
    else:
      rewards += returns
  for name, table in reference_tables(solver, ref).items():
    np.testing.assert_array_equal(getattr(solver, name), table, err_msg=name)
  np.testing.assert_array_equal(solver._reward_sum, rewards)
  # The kernel draws numpy's PCG64 inline: the same number of draws.
  np.testing.assert_array_equal(rng_lib.pcg64_state(rng), solver._rng_words)
  # Every selection is counted once: N(u) is the sum of N(u, a).
  np.testing.assert_array_equal(solver._visits, solver._counts.sum(axis=1))
  sizes = solver.tree_sizes()
  if opts["opponent"] == "uniform":
    assert sizes.min() > 0  # Both seats learned, each in its own simulations.
  # One node expanded per player and simulation at most.
  assert sizes.sum() <= 2 * 2 * iterations


def test_smooth_uct_mixes_both_branches_and_uct_never_draws():
  # UCT draws only at chance, expansion and rollout nodes; Smooth UCT also
  # at every selection, so from the same seed they diverge.
  uct = mccfrb.UCTSolver("leduc_poker", seed=0)
  smooth = mccfrb.SmoothUCTSolver("leduc_poker", c=20.0, gamma=1.0, seed=0)
  uct.run(2000)
  smooth.run(2000)
  # gamma = 1 makes every selection a UCB one, but each still draws U_1.
  assert not np.array_equal(uct._rng_words, smooth._rng_words)
  average = mccfrb.SmoothUCTSolver("leduc_poker", gamma=0.0, eta0=0.0, seed=0)
  average.run(2000)
  # eta = 0: every in-tree selection samples the average strategy, which
  # then only ever repeats the expanding action.
  assert (np.count_nonzero(average._counts, axis=1) <= 1).all()
  # Smooth UCT with eta between 0 and 1 takes both branches. Each selection
  # draws U_1; the average branch also draws the action. A run that never
  # took the average branch would be the gamma = 1 run, draw for draw and
  # count for count; one that never took the UCB branch would repeat only
  # the expanding action at every node, as `average` does.
  mixed = mccfrb.SmoothUCTSolver("leduc_poker", c=20.0, gamma=0.1, eta0=0.9,
                                 d=0.002, seed=0)
  mixed.run(2000)
  assert not np.array_equal(mixed._counts, smooth._counts)
  assert not np.array_equal(mixed._rng_words, smooth._rng_words)
  assert (np.count_nonzero(mixed._counts, axis=1) >= 2).sum() > 10


@pytest.mark.parametrize("cls", [mccfrb.UCTSolver, mccfrb.SmoothUCTSolver])
def test_same_seed_same_tables_and_runs_compose(cls):
  a, b, c = (cls("leduc_poker", seed=s) for s in (3, 3, 4))
  a.run(3000)
  b.run(1000)
  b.run(1500)
  for _ in range(500):
    b.iteration()
  c.run(3000)
  for name in ("_visits", "_counts", "_values", "_reward_sum"):
    np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
  assert not np.array_equal(a._counts, c._counts)
  assert a.num_iterations == b.num_iterations == 3000
  assert a.num_simulations == 6000
  assert a.nodes_touched == b.nodes_touched >= 6000 * 3


def test_uniform_opponent_alternates_learners_across_runs():
  # Simulation k trains seat k % 2 whatever the split into run() calls.
  a = mccfrb.UCTSolver("kuhn_poker", c=KUHN_C, opponent="uniform", seed=1)
  b = mccfrb.UCTSolver("kuhn_poker", c=KUHN_C, opponent="uniform", seed=1)
  a.run(7)
  b.run(3)
  b.run(4)
  np.testing.assert_array_equal(a._counts, b._counts)
  np.testing.assert_array_equal(a._reward_sum, b._reward_sum)


def test_save_and_load_resume_exactly(tmp_path):
  path = tmp_path / "smooth.npz"
  whole = mccfrb.SmoothUCTSolver("leduc_poker", d=0.01, seed=5)
  whole.run(3000)
  first = mccfrb.SmoothUCTSolver("leduc_poker", d=0.01, seed=5)
  first.run(1000)
  first.save(path)
  resumed = mccfrb.SmoothUCTSolver.load(path)  # The file names its game.
  assert resumed._options() == first._options()
  resumed.run(2000)
  for name in ("_visits", "_counts", "_values", "_reward_sum"):
    np.testing.assert_array_equal(getattr(resumed, name), getattr(whole, name))
  assert resumed.nodes_touched == whole.nodes_touched
  uct_path = tmp_path / "uct.npz"
  mccfrb.UCTSolver("kuhn_poker", c=3.0, opponent="uniform").save(uct_path)
  loaded = mccfrb.UCTSolver.load(uct_path, "kuhn_poker")
  assert loaded._options() == {"c": 3.0, "opponent": "uniform", "threads": 1,
                               "batch": None}
  with pytest.raises(ValueError, match="UCTSolver.load"):
    mccfrb.SmoothUCTSolver.load(uct_path)


def test_policies_are_openspiel_policies_and_distributions():
  solver = mccfrb.SmoothUCTSolver("leduc_poker", seed=0)
  solver.run(20_000)
  game, tree = solver.game, solver.tree
  ours = mccfrb.exploitability(tree, solver.average_policy_table())
  theirs = os_exploitability.exploitability(game, solver.average_policy())
  assert abs(ours - theirs) < 1e-9
  counts = solver._counts.astype(float)
  in_tree = solver._visits > 0
  np.testing.assert_allclose(
      solver.average_policy_table()[in_tree],
      counts[in_tree] / solver._visits[in_tree, None])
  current = solver.current_policy_table()
  legal = tree.legal_mask()
  np.testing.assert_allclose(current.sum(axis=1), 1.0)
  assert (current[~legal] == 0).all()
  # Out of the tree the rollout policy (uniform); in it, the UCB action
  # carries at least eta >= gamma.
  np.testing.assert_allclose(current[~in_tree],
                             policy_lib.uniform_table(tree)[~in_tree])
  assert (current[in_tree].max(axis=1) >= 0.1 - 1e-12).all()
  uct = mccfrb.UCTSolver("leduc_poker", seed=0)
  uct.run(20_000)
  greedy = uct.current_policy_table()[uct._visits > 0]
  assert set(np.unique(greedy)) == {0.0, 1.0}
  os_exploitability.exploitability(game, uct.current_policy())


# Smooth UCT's exploitability falls with simulations. Thresholds from runs
# of seeds 0-2 (mccfrb.exploitability of the average strategy):
#   matching_pennies, c = 2: 10 iterations 0.05-0.10, 10^3 0.001-0.0035;
#   kuhn_poker, c = 2: 10^2 0.108-0.173, 10^5 0.0059-0.0070;
#   leduc_poker, defaults: 10^4 1.163-1.168, 10^6 0.198-0.223 (iterations;
#   two simulations each).
# The "late" bounds are about 1.4-3x the worst seed, the "early" ones below
# the best seed.
@pytest.mark.parametrize("game_name,c,early,late,early_at,late_at", [
    ("matching_pennies", 2.0, 0.03, 0.01, 10, 1000),
    ("kuhn_poker", 2.0, 0.08, 0.012, 100, 100_000),
    ("leduc_poker", 18.0, 1.0, 0.3, 10_000, 1_000_000),
])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_smooth_uct_exploitability_falls(game_name, c, early, late, early_at,
                                         late_at, seed):
  solver = mccfrb.SmoothUCTSolver(game_name, c=c, seed=seed)
  solver.run(early_at)
  first = mccfrb.exploitability(solver.tree, solver.average_policy_table())
  solver.run(late_at - early_at)
  last = mccfrb.exploitability(solver.tree, solver.average_policy_table())
  assert first > early
  assert last < late < first


# Seed 003 (after Heinrich & Silver 2015) reports that UCT in self-play does
# not converge on Leduc. Measured, seeds 0-2, default c = 20: exploitability
# 0.284-0.303 after 10^6 iterations (2x10^6 simulations), 0.302-0.330 after
# 3x10^6, 0.396-0.478 after 10^7, 0.503-0.554 after 3x10^7: it falls at
# first, then rises. Smooth UCT with the same budget falls throughout
# (0.198-0.223, 0.115-0.119, 0.064-0.066, 0.034-0.039).
@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1])
def test_uct_self_play_diverges_on_leduc_where_smooth_uct_converges(seed):
  uct = mccfrb.UCTSolver("leduc_poker", seed=seed)
  smooth = mccfrb.SmoothUCTSolver("leduc_poker", seed=seed)
  curves = []
  for solver in (uct, smooth):
    curve = []
    for target in (1_000_000, 10_000_000):
      solver.run(target - solver.num_iterations)
      curve.append(mccfrb.exploitability(solver.tree,
                                         solver.average_policy_table()))
    curves.append(curve)
  (uct_early, uct_late), (smooth_early, smooth_late) = curves
  assert uct_late > 1.2 * uct_early and uct_late > 0.35
  assert smooth_late < 0.5 * smooth_early and smooth_late < 0.1


# Seed 003, Experiment 1: UCT against a uniform opponent learns to exploit
# it; its exploitability dips and then rises. Measured, seeds 0-2 (c = 20):
# the exact value against uniform after 10^6 iterations is 1.878-1.888 for
# seat 0 and 2.442-2.452 for seat 1, against best-response values 2.0875
# and 2.6597 (90-92% of them); exploitability 1.93-2.04 after 10^4
# iterations, 2.82-2.87 after 10^6.
def test_uct_against_uniform_exploits_it_and_becomes_exploitable():
  solver = mccfrb.UCTSolver("leduc_poker", opponent="uniform", seed=0)
  tree = solver.tree
  best = evaluation.best_response_values(tree, policy_lib.uniform_table(tree))
  solver.run(10_000)
  dip = mccfrb.exploitability(tree, solver.average_policy_table())
  solver.run(990_000)
  value = solver.value_against_uniform()
  assert (value <= best + 1e-9).all()
  assert (value >= 0.85 * best).all()
  # The training reward is an unbiased sample of the same kind of play.
  assert np.abs(solver.mean_reward() - value).max() < 0.1
  late = mccfrb.exploitability(tree, solver.average_policy_table())
  assert late > dip + 0.5


@pytest.mark.parametrize("kwargs,match", [
    ({"c": 0}, "c must be"), ({"c": -1.0}, "c must be"),
    ({"c": "big"}, "c must be"), ({"gamma": 1.5}, "gamma must be"),
    ({"eta0": -0.1}, "eta0 must be"), ({"d": -1.0}, "d must be"),
    ({"opponent": "random"}, "Unknown opponent"),
    ({"seed": -1}, "seed must be"),
    ({"threads": 0}, "threads must be a positive integer, got 0"),
    ({"batch": 2.5}, "batch must be a positive integer or None"),
])
def test_bad_options_are_value_errors(kwargs, match):
  with pytest.raises(ValueError, match=match):
    mccfrb.SmoothUCTSolver("kuhn_poker", **kwargs)


def test_bad_iteration_counts_and_uct_options():
  solver = mccfrb.UCTSolver("kuhn_poker")
  for bad in (-1, 1.5, "3"):
    with pytest.raises(ValueError, match="num_iterations"):
      solver.run(bad)
  with pytest.raises(TypeError):
    mccfrb.UCTSolver("kuhn_poker", gamma=0.5)  # UCT has no mixing schedule.


@pytest.mark.parametrize("name", ["uct", "smooth_uct", "uct_vs_uniform",
                                  "smooth_uct_d01"])
def test_registry_entries(name):
  game = mccfrb.load_game("kuhn_poker")
  runner = registry.make(name, game, 0)
  runner.run(100)
  solver = runner.solver
  assert solver.num_simulations == 200
  assert runner.nodes_touched == solver.nodes_touched > 0
  table = runner.average_policy_table(solver.tree)
  np.testing.assert_allclose(table, solver.average_policy_table())
  expected = {"uct": (mccfrb.UCTSolver, "self"),
              "smooth_uct": (mccfrb.SmoothUCTSolver, "self"),
              "uct_vs_uniform": (mccfrb.UCTSolver, "uniform"),
              "smooth_uct_d01": (mccfrb.SmoothUCTSolver, "self")}[name]
  assert type(solver) is expected[0] and solver.opponent == expected[1]
  if name == "smooth_uct_d01":
    assert solver._options()["d"] == 0.1


@pytest.mark.slow
def test_reproduction_binary_writes_rows_summary_and_figures(tmp_path):
  import os
  import pathlib
  import subprocess
  import sys

  import pandas as pd

  root = pathlib.Path(__file__).resolve().parents[1]
  result = subprocess.run(
      [sys.executable, "-m", "experiments.mcts", "--game=kuhn_poker",
       "--simulations=20000", "--seeds=2", "--num_checkpoints=5", "--jobs=1",
       f"--out_dir={tmp_path}"], cwd=root, capture_output=True, text=True,
      timeout=600, env=dict(os.environ))
  assert result.returncode == 0, result.stderr
  df = pd.read_csv(tmp_path / "mcts.csv")
  assert set(df["algorithm"]) == {"smooth_uct", "smooth_uct_d01", "uct",
                                  "uct_vs_uniform"}
  assert (df["simulations"] == 2 * df["iteration"]).all()
  assert df["simulations"].max() == 20000
  # Each row's numbers are the solver's: rebuild one run and compare.
  solver = mccfrb.UCTSolver("kuhn_poker", opponent="uniform", seed=1)
  solver.run(10_000)
  last = df[(df["algorithm"] == "uct_vs_uniform") & (df["seed"] == 1)
            & (df["iteration"] == 10_000)].iloc[0]
  assert last["exploitability"] == pytest.approx(
      mccfrb.exploitability(solver.tree, solver.average_policy_table()),
      abs=1e-12)
  np.testing.assert_allclose(
      [last["value_vs_uniform_0"], last["value_vs_uniform_1"]],
      solver.value_against_uniform(), atol=1e-12)
  np.testing.assert_allclose([last["reward_0"], last["reward_1"]],
                             solver.mean_reward(), atol=1e-12)
  summary = pd.read_csv(tmp_path / "mcts_summary.csv")
  assert set(summary["algorithm"]) == set(df["algorithm"])
  for stem in ("mcts_exploitability", "mcts_uniform_uct_vs_uniform"):
    assert (tmp_path / f"{stem}.png").stat().st_size > 10_000
  bad = subprocess.run(
      [sys.executable, "experiments/mcts.py", "--algorithms=cfr",
       f"--out_dir={tmp_path}/x"], cwd=root, capture_output=True, text=True,
      timeout=600)
  assert bad.returncode == 1
  assert bad.stderr.strip().splitlines()[-1].startswith("mcts: error: ")
  assert not (tmp_path / "x").exists()


@pytest.mark.slow
def test_reproduction_binary_redraws_from_its_csv(tmp_path):
  import pathlib
  import subprocess
  import sys

  import pandas as pd

  root = pathlib.Path(__file__).resolve().parents[1]
  run = [sys.executable, "-m", "experiments.mcts", "--game=kuhn_poker",
         "--simulations=2000", "--seeds=1", "--num_checkpoints=3", "--jobs=1",
         "--algorithms=uct_vs_uniform"]
  first = subprocess.run(run + [f"--out_dir={tmp_path}"], cwd=root,
                         capture_output=True, text=True, timeout=600)
  assert first.returncode == 0, first.stderr
  rows = pd.read_csv(tmp_path / "mcts.csv")
  again = subprocess.run(run + [f"--csv={tmp_path}/mcts.csv",
                                f"--out_dir={tmp_path}"], cwd=root,
                         capture_output=True, text=True, timeout=600)
  assert again.returncode == 0, again.stderr
  assert "finished" not in again.stdout  # Nothing was trained.
  pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "mcts.csv"), rows)
  assert (tmp_path / "mcts_uniform_uct_vs_uniform.png").exists()


@pytest.mark.parametrize("cls,options", CONFIGS)
def test_batched_tables_depend_on_the_seed_and_batch_not_the_threads(
    cls, options):
  tree = mccfrb.compile_tree("leduc_poker")

  def run(**overrides):
    solver = cls("leduc_poker", tree=tree, **{
        "seed": 2, "batch": 32, **options, **overrides})
    solver.run(3000)
    return solver

  two = check_threads_do_not_matter(run, [{"seed": 3}, {"batch": 16},
                                          {"batch": None}])
  # Every selection is applied once: N(u) is the sum of N(u, a), and the
  # batches' simulations all count.
  np.testing.assert_array_equal(two._visits, two._counts.sum(axis=1))
  one = run(batch=None)
  assert two._visits.sum() > 0.9 * one._visits.sum()
  np.testing.assert_array_equal(two.mean_reward(), run(threads=3).mean_reward())


def test_batched_search_equals_frozen_one_by_one_simulations():
  # Within a batch every simulation sees the tables of the batch start: a
  # batch of B iterations from a trained state equals the sum of the updates
  # of 2B one-by-one simulations each run alone on a copy of that state with
  # the batch's stream (kernels/mcts.py, phases 1 and 2).
  tree = mccfrb.compile_tree("kuhn_poker")
  batched = mccfrb.SmoothUCTSolver("kuhn_poker", c=2.0, seed=1, tree=tree,
                                   batch=8)
  batched.run(400)
  visits, counts = batched._visits.copy(), batched._counts.copy()
  values = batched._values.copy()
  words = batched._rng_words.copy()
  batched.run(8)
  key = rng_lib.batch_key(words.copy())
  added_visits = np.zeros_like(visits)
  added_counts = np.zeros_like(counts)
  t = tree
  paths = []
  for e in range(16):
    state = np.zeros(4, dtype=np.uint64)
    state[0] = rng_lib.stream_start(key, e)
    path_i = np.zeros(t.max_depth, dtype=np.int64)
    path_a = np.zeros(t.max_depth, dtype=np.int64)
    depth, r0, _ = mcts_kernel._simulate(
        *t.kernel_args(), visits, counts, values, 1, 2.0,
        0.1, 0.9, 0.002, False, e % 2, state, True, path_i, path_a)
    paths.append((path_i[:depth], path_a[:depth], r0))
    for m in range(depth):
      added_visits[path_i[m]] += 1
      added_counts[path_i[m], path_a[m]] += 1
  np.testing.assert_array_equal(batched._visits, visits + added_visits)
  np.testing.assert_array_equal(batched._counts, counts + added_counts)
  # The values: each simulation's return added to the running means of its
  # path, simulation after simulation (one worker applies them in order).
  replayed_counts, replayed = counts.copy(), values.copy()
  for path_i, path_a, r0 in paths:
    for i, a in zip(path_i, path_a):
      r = r0 if t.infoset_player[i] == 0 else t.utility_sum - r0
      replayed_counts[i, a] += 1
      replayed[i, a] += (r - replayed[i, a]) / replayed_counts[i, a]
  assert not np.array_equal(replayed, values)
  np.testing.assert_array_equal(batched._values, replayed)


def test_mcts_batches_end_at_multiples_of_the_batch_size(tmp_path):
  check_batch_boundaries(
      lambda: mccfrb.SmoothUCTSolver("leduc_poker", seed=4, threads=2,
                                     batch=100), 100, tmp_path / "suct.npz")


@pytest.mark.slow
def test_two_threads_converge_as_one_on_leduc():
  # Smooth UCT with threads=2 and the default batch (256 iterations) against
  # the unbatched search, seeds 0-4: the batched mean stays within the
  # unbatched seeds' range from 2^18 iterations on; at 2^14 and 2^16 it does
  # not (python -m experiments.measurements --sets=batching_mcts; README,
  # "Threads").
  check_two_threads_converge(mccfrb.SmoothUCTSolver, (2**18, 2**20), 256)
