"""MCCFRbSolver against references: the pure-Python episode, OpenSpiel, math."""

import functools

import numba
import numpy as np
import pyspiel
import pytest
from open_spiel.python.algorithms import exploitability as os_exploitability
from open_spiel.python.algorithms import outcome_sampling_mccfr as os_mccfr

import mccfrb
from mccfrb import reference
from mccfrb.games import tree as tree_lib
from mccfrb.kernels import exact
from mccfrb.solvers import base
from tests.conftest import GOOFSPIEL4
from tests.conftest import check_batch_boundaries
from tests.conftest import check_threads_do_not_matter
from tests.conftest import check_two_threads_converge
from tests.conftest import fingerprint_run
from tests.conftest import printed_with_empty_cache

# The solver with its former defaults (learned baseline, OpenSpiel's
# stochastic averaging, regret matching), which most tests here exercise;
# explicit arguments override them.
MCCFRb = functools.partial(mccfrb.MCCFRbSolver, baseline="learned",
                           averaging="stochastic", regret="rm")

# The kinds a compiled tree runs (probing plays its rollouts on engines).
KINDS = mccfrb.kernels.baselines.kinds("tree")


def reference_tables(solver, ref):
  """The reference's dict tables laid out like the solver's arrays."""
  tree = solver.tree
  idx = tree.infoset_index()
  regrets, avg = np.zeros_like(solver._regrets), np.zeros_like(solver._avg)
  avg_last = np.zeros_like(solver._avg_last)
  for key, row in ref.regrets.items():
    regrets[idx[key], :len(row)] = row
  for key, row in ref.avg.items():
    avg[idx[key], :len(row)] = row
  for key, t in ref.avg_last.items():
    avg_last[idx[key]] = t
  baseline = np.zeros_like(solver._baseline)
  count = np.zeros_like(solver._baseline_count)
  a, n_i = tree.max_actions, tree.num_infosets
  if ref.baseline in ("thesis", "thesis_exponential"):
    for (p, key), row in ref.infoset_baseline.items():
      baseline[(p * n_i + idx[key]) * a:][:len(row)] = row
    for (p, key), k in ref.infoset_count.items():
      count[p * n_i + idx[key]] = k
  # General games: one block per player, keyed (player, key); else one
  # table (p None) with plain keys.
  players = range(tree.num_players) if ref.general else [None]

  def own(p, key):
    return key if p is None else (p, key)

  if ref.baseline == "learned":
    for p in players:
      o = (p or 0) * n_i * a
      for key in idx:
        row = ref.infoset_baseline.get(own(p, key), [])
        baseline[o + idx[key] * a:][:len(row)] = row
        for j in range(len(row)):
          count[o + idx[key] * a + j] = ref.action_count.get(
              (own(p, key), j), 0)
  elif ref.key_of is not None:
    block = baseline.size // len(players)
    for (own_key, j), value in ref.keyed_baseline.items():
      p, label = own_key if ref.general else (0, own_key)
      baseline[p * block + label * a + j] = value
      count[p * block + label * a + j] = ref.keyed_count[(own_key, j)]
  elif ref.baseline in ("history", "predictive", "oracle"):
    values = ref.oracle_values if ref.baseline == "oracle" else ref.edge_baseline
    counts = ref.edge_count
    for p in players:
      o = (p or 0) * tree.num_nodes
      for n, h in enumerate(reference.node_histories(tree)):
        baseline[o + n] = values.get(own(p, h), 0.0)
        if ref.baseline == "history":
          count[o + n] = counts.get(own(p, h), 0)
  return {"regrets": regrets, "avg": avg, "avg_last": avg_last,
          "baseline": baseline, "baseline_count": count}


def key_of(solver):
  """The reference's `key_of` for kinds keyed per node: the solver's label
  of a history (None for the other kinds)."""
  if not len(solver._key_ids):
    return None
  labels = dict(zip(reference.node_histories(solver.tree),
                    solver._key_ids.tolist()))
  return labels.__getitem__


@pytest.mark.parametrize("game_name,iterations", [("kuhn_poker", 300),
                                                  ("leduc_poker", 40)])
@pytest.mark.parametrize("averaging", tuple(mccfrb.AVERAGINGS))
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("regret", ("rm", "rm+"))
def test_kernel_equals_python_reference(game_name, iterations, averaging, kind,
                                        regret):
  if kind == "oracle":
    iterations = 6  # The Python oracle walks the whole tree per episode.
  game = mccfrb.load_game(game_name)
  solver = MCCFRb(game, baseline=kind, averaging=averaging, seed=7,
                               regret=regret)
  ref = reference.ReferenceMCCFRb(game, kind, averaging=averaging,
                                  regret=regret, key_of=key_of(solver))
  rng = np.random.default_rng(7)  # The same uniforms the solver draws.
  for t in range(1, iterations + 1):
    ref.iteration(t, rng)
  solver.run(iterations)
  expected = reference_tables(solver, ref)
  assert np.abs(expected["regrets"]).max() > 0
  for name, table in expected.items():
    if name == "avg_last" and averaging == "stochastic":
      continue
    if regret == "rm+":  # Promised bit for bit.
      np.testing.assert_array_equal(getattr(solver, "_" + name), table,
                                    err_msg=name)
    else:
      np.testing.assert_allclose(getattr(solver, "_" + name), table,
                                 rtol=1e-12, atol=1e-12, err_msg=name)
  if kind != "none":
    assert np.abs(solver._baseline).max() > 0
  if regret == "rm+":
    assert solver._regrets.min() == 0.0  # Clipped, and some clipped to 0.


KUHN3 = "kuhn_poker(players=3)"
# Two-player general-sum: goofspiel scored by total points, turn-based.
GOOF_GS = ("turn_based_simultaneous_game(game=goofspiel(num_cards=3,"
           "points_order=descending,returns_type=total_points))")


@pytest.mark.parametrize("game_name,averaging", [
    (KUHN3, "stochastic"), (GOOF_GS, "stochastic"), (GOOF_GS, "optimistic")])
@pytest.mark.parametrize("kind", KINDS)
def test_general_games_keep_one_baseline_per_player(game_name, averaging,
                                                    kind):
  """More than two players or general-sum returns: every baseline kind
  keeps one table per player in that player's own utility, equal to the
  reference's per-player dicts bit for bit."""
  iterations = 6 if kind == "oracle" else 120
  game = mccfrb.load_game(game_name, general=True)
  if kind == "public":  # Public states: two-player zero-sum games only.
    with pytest.raises(ValueError, match="needs public states"):
      mccfrb.MCCFRbSolver(game, baseline=kind, averaging=averaging)
    return
  solver = mccfrb.MCCFRbSolver(game, baseline=kind, averaging=averaging,
                               seed=5)
  ref = reference.ReferenceMCCFRb(game, kind, averaging=averaging,
                                  regret="rm+", key_of=key_of(solver))
  assert ref.general and solver.tree.is_general
  rng = np.random.default_rng(5)
  for t in range(1, iterations + 1):
    ref.iteration(t, rng)
  solver.run(iterations, progress=False)
  expected = reference_tables(solver, ref)
  for name, table in expected.items():
    if name == "avg_last" and averaging == "stochastic":
      continue
    np.testing.assert_array_equal(getattr(solver, "_" + name), table,
                                  err_msg=name)
  if kind not in ("none", "thesis", "thesis_exponential"):
    blocks = solver._baseline.reshape(solver.tree.num_players, -1)
    assert all(np.abs(b).max() > 0 for b in blocks)


@pytest.mark.parametrize("batch", [None, 4])
@pytest.mark.parametrize("kind", ["history", "predictive", "oracle"])
def test_general_edge_baselines_hold_each_players_returns(kind, batch):
  """Per-player edge baselines at terminal nodes hold that player's own
  return (averaged, reset or exact), sequential and batched (2 threads);
  one shared table or player 0's return everywhere would fail."""
  solver = mccfrb.MCCFRbSolver(KUHN3, baseline=kind, seed=2, batch=batch,
                               threads=1 if batch is None else 2)
  solver.run(200, progress=False)
  tree = solver.tree
  terminal = tree.node_kind == tree_lib.TERMINAL
  blocks = solver._baseline.reshape(3, tree.num_nodes)
  for p in range(3):
    stored = blocks[p][terminal]
    returns = tree.returns[terminal, p]
    seen = stored != 0.0
    assert seen.sum() > 10
    np.testing.assert_allclose(stored[seen], returns[seen], atol=1e-12)


@pytest.mark.parametrize("kind", KINDS)
def test_same_seed_same_tables_and_runs_compose(kind):
  a = MCCFRb("kuhn_poker", baseline=kind, seed=3,
                          averaging="optimistic")
  b = MCCFRb("kuhn_poker", baseline=kind, seed=3,
                          averaging="optimistic")
  c = MCCFRb("kuhn_poker", baseline=kind, seed=4,
                          averaging="optimistic")
  a.run(20)
  b.run(10)
  for _ in range(10):
    b.iteration()
  c.run(20)
  for name in ("_regrets", "_avg", "_avg_last", "_baseline"):
    np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
  assert not np.array_equal(a._regrets, c._regrets)
  assert a.num_iterations == b.num_iterations == 20
  assert a.nodes_touched == b.nodes_touched > 20 * 2 * 4


@pytest.mark.parametrize("kind", ["learned", "thesis", "history", "predictive"])
def test_save_and_load_resume_exactly(tmp_path, kind):
  path = tmp_path / "solver.npz"
  uninterrupted = MCCFRb("leduc_poker", baseline=kind, seed=5,
                                      averaging="optimistic")
  uninterrupted.run(300)
  first = MCCFRb("leduc_poker", baseline=kind, seed=5,
                              averaging="optimistic")
  first.run(100)
  first.save(path)
  resumed = mccfrb.MCCFRbSolver.load(path, "leduc_poker")
  resumed.run(200)
  assert resumed.num_iterations == 300
  assert resumed.nodes_touched == uninterrupted.nodes_touched
  for name in ("_regrets", "_avg", "_avg_last", "_baseline", "_baseline_count"):
    np.testing.assert_array_equal(getattr(resumed, name),
                                  getattr(uninterrupted, name))
  np.testing.assert_array_equal(resumed.average_policy_table(),
                                uninterrupted.average_policy_table())


def test_load_refuses_another_game(tmp_path):
  path = tmp_path / "solver.npz"
  MCCFRb("kuhn_poker", seed=0).save(path)
  with pytest.raises(ValueError, match="saved for kuhn_poker"):
    mccfrb.MCCFRbSolver.load(path, "leduc_poker")


def test_average_policy_works_with_openspiel_exploitability():
  game = mccfrb.load_game("leduc_poker")
  solver = MCCFRb(game, seed=0, averaging="optimistic")
  solver.run(2000)
  ours = mccfrb.exploitability(solver.tree, solver.average_policy_table())
  avg = solver.average_policy()
  assert os_exploitability.exploitability(game, avg) == pytest.approx(ours, abs=1e-9)
  assert pyspiel.exploitability(
      game, mccfrb.to_pyspiel_policy(solver.tree, solver.average_policy_table())
  ) == pytest.approx(ours, abs=1e-9)
  current = solver.current_policy()
  assert os_exploitability.exploitability(game, current) == pytest.approx(
      mccfrb.exploitability(solver.tree, solver.current_policy_table()), abs=1e-9)
  # Reading the (flushed) optimistic average must not change the solver.
  before = solver._avg.copy()
  solver.average_policy()
  np.testing.assert_array_equal(solver._avg, before)


def test_optimistic_flush_equals_visiting_every_infoset():
  """After the flush every infoset carries weight t - c_I at its reach."""
  solver = MCCFRb("kuhn_poker", seed=2, averaging="optimistic")
  solver.run(50)
  flushed = solver._cumulative_average()
  strategy = solver.current_policy_table()
  tree = solver.tree
  reach = np.empty((tree.num_nodes, 3))
  exact.reach_probabilities(*tree.kernel_args()[:6], strategy, reach)
  for n in np.flatnonzero(tree.node_kind == 1):
    i, p = tree.node_infoset[n], tree.node_player[n]
    expected = solver._avg[i] + (50 - solver._avg_last[i]) * reach[n, p] * strategy[i]
    np.testing.assert_allclose(flushed[i], expected, rtol=1e-12)


def _nash_convs_openspiel(game_name, seeds, iterations):
  game = pyspiel.load_game(game_name)
  out = []
  for seed in seeds:
    np.random.seed(seed)
    solver = os_mccfr.OutcomeSamplingSolver(game)
    for _ in range(iterations):
      solver.iteration()
    out.append(os_exploitability.nash_conv(game, solver.average_policy()))
  return np.array(out)


@pytest.mark.slow
@pytest.mark.parametrize("game_name,threshold", [("kuhn_poker", 0.17),
                                                 ("leduc_poker", 3.07)])
def test_no_baseline_matches_openspiel_in_distribution(game_name, threshold):
  """OpenSpiel's own thresholds, and means within the seeds' spread."""
  seeds, iterations = range(10), 10_000
  ours = []
  for seed in seeds:
    solver = mccfrb.OutcomeSamplingSolver(game_name, seed=seed)
    solver.run(iterations)
    ours.append(mccfrb.nash_conv(solver.tree, solver.average_policy_table()))
  ours = np.array(ours)
  theirs = _nash_convs_openspiel(game_name, seeds, iterations)
  assert np.all(ours < threshold) and np.all(theirs < threshold)
  # Difference of means within 3 standard errors of the difference.
  se = np.sqrt(ours.var(ddof=1) / len(ours) + theirs.var(ddof=1) / len(theirs))
  assert abs(ours.mean() - theirs.mean()) < 3 * se, (ours, theirs)


@pytest.mark.parametrize("game_name", ["kuhn_poker", "leduc_poker"])
@pytest.mark.parametrize("kind", KINDS)
def test_sampled_regrets_are_unbiased(game_name, kind):
  """Mean sampled regret increment = exact counterfactual regret.

  Checked on every infoset-action whose expected number of visits in the
  sample is at least 2000 (there the central limit theorem is a fair
  approximation despite the importance weights): no error beyond six
  standard errors, and a mean squared z-score within 4 standard deviations
  of its expectation 1 under the chi-square law of k = n/2 effective entries
  (entries of one infoset are dependent), i.e. below 1 + 4 sqrt(2 / k).
  Measured (python -m experiments.measurements --sets=unbiasedness): 0.15-1.30
  on Kuhn over 6 sample seeds (bound 2.8), 0.60-0.88 on
  Leduc (bound 1.4). The baselines keep learning during the sample, except thesis_exponential
  on Leduc, whose 1/xi target diverges under a fixed step (BUILD_NOTES.md).
  """
  solver = MCCFRb(game_name, baseline=kind, seed=0)
  solver.run(200)
  learn = not (kind == "thesis_exponential" and game_name == "leduc_poker")
  sample = solver.sample_estimates(1_000_000, seed=1, learn_baselines=learn)
  tree = solver.tree
  strategy = solver.current_policy_table()
  exact_regrets = mccfrb.counterfactual_regrets(tree, strategy)
  exact_values = mccfrb.counterfactual_values(tree, strategy)
  owner = sample.episodes[tree.infoset_player][:, None]
  legal = np.arange(tree.max_actions)[None, :] < tree.infoset_num_actions[:, None]
  checked = legal & (mccfrb.evaluation.expected_visits(
      tree, strategy, solver._epsilon, sample.episodes) >= 2000)[:, None]
  # Most of Kuhn and a good part of Leduc are checked.
  assert checked.sum() > (0.5 * legal.sum() if game_name == "kuhn_poker" else 100)
  for mean, var, truth in ((sample.regret_mean, sample.regret_var, exact_regrets),
                           (sample.value_mean, sample.value_var, exact_values)):
    se = np.sqrt(np.maximum(var, 0.0) / owner)
    z = np.abs(mean - truth)[checked] / np.maximum(se[checked], 1e-12)
    assert z.max() < 6.0, (z.max(), np.argmax(z))
    bound = 1.0 + 4.0 * np.sqrt(2.0 / (z.size / 2))
    assert np.mean(z**2) < bound, (np.mean(z**2), bound)


@pytest.mark.parametrize("game_name", ["kuhn_poker", "leduc_poker"])
def test_oracle_baseline_root_estimate_has_zero_variance(game_name):
  solver = MCCFRb(game_name, baseline="oracle", seed=0)
  solver.run(30)
  sample = solver.sample_estimates(2000, seed=3)
  v0 = mccfrb.expected_value(solver.tree, solver.current_policy_table())
  np.testing.assert_allclose(sample.root_values[0::2], v0, rtol=0, atol=1e-9)
  np.testing.assert_allclose(sample.root_values[1::2], -v0, rtol=0, atol=1e-9)
  plain = MCCFRb(game_name, baseline="none", seed=0)
  plain.run(30)
  assert np.var(plain.sample_estimates(2000, seed=3).root_values) > 0.1


# Measured by python -m experiments.measurements --sets=convergence.
# Exploitability of the average strategy after 20,000 iterations (seed 0)
# must be below the bound and below its value after 100 iterations. Measured
# over seeds 0-2 and every kind (thesis_exponential at decay 0.1), the worst
# at 20,000 iterations was 1.13 (Leduc; uniform play: 2.37), 0.40 (goofspiel
# 4; uniform: 1.25) and 0.021 (matching pennies; 0.01-0.16 at 100
# iterations); each bound is about 1.3 times that worst value.
CONVERGENCE_BOUND = {"leduc_poker": 1.5, GOOFSPIEL4: 0.52,
                     "matching_pennies": 0.028}


@pytest.mark.parametrize("game_name", sorted(CONVERGENCE_BOUND))
@pytest.mark.parametrize("kind", KINDS)
def test_every_baseline_converges(game_name, kind):
  # thesis_exponential at its default decay 0.5 diverges: see the next test.
  decay = 0.1 if kind == "thesis_exponential" else None
  solver = MCCFRb(game_name, baseline=kind, baseline_decay=decay,
                               seed=0)
  solver.run(100)
  early = mccfrb.exploitability(solver.tree, solver.average_policy_table())
  solver.run(19_900)
  late = mccfrb.exploitability(solver.tree, solver.average_policy_table())
  assert late < min(early, CONVERGENCE_BOUND[game_name]), (early, late)
  if game_name == "matching_pennies":
    np.testing.assert_allclose(solver.average_policy_table()[:, :2], 0.5,
                               atol=0.05)


def test_thesis_exponential_at_schmid_decay_diverges_as_the_thesis_reports():
  """Thesis section 5.3.1: the exponentially decaying average is inferior.

  With the 1/xi-corrected target and a fixed step alpha, the update
  b <- b + alpha (u - b) / xi overshoots whenever xi < alpha / 2, so at
  alpha = 0.5 the baselines grow without bound and learning stalls (measured
  by python -m experiments.measurements --sets=exponential,
  on Leduc, seeds 0-2: |b| up to 1e26-1e34, exploitability 1.21-1.30 at
  20,000 iterations where the direct average reaches 0.87-1.13).
  """
  solver = MCCFRb("leduc_poker", baseline="thesis_exponential",
                               seed=0)
  solver.run(20_000)
  assert np.abs(solver._baseline).max() > 1e10
  assert mccfrb.exploitability(solver.tree, solver.average_policy_table()) > 1.15


@pytest.mark.parametrize("kwargs,match", [
    ({"baseline": "learnt"}, "Unknown baseline 'learnt'; allowed: none, thesis"),
    ({"averaging": "linear"}, "Unknown averaging 'linear'; allowed: stochastic"),
    ({"epsilon": 0.0}, r"epsilon must be a number in \(0, 1\]"),
    ({"epsilon": 1.5}, r"epsilon must be a number in \(0, 1\]"),
    ({"baseline_decay": 0.0}, r"baseline_decay must be .* or None, got 0.0"),
    ({"baseline_decay": 2}, r"baseline_decay must be"),
    ({"seed": "x"}, "seed must be an integer"),
    ({"regret": "rm++"}, r"Unknown regret 'rm\+\+'; allowed: rm, rm\+"),
    ({"regret": "rm+", "weighting": "linear"}, "regret='rm' only"),
])
def test_bad_options_are_value_errors(kwargs, match):
  with pytest.raises(ValueError, match=match):
    MCCFRb("kuhn_poker", **kwargs)


def test_bad_iteration_counts_and_games():
  solver = MCCFRb("kuhn_poker", seed=0)
  with pytest.raises(ValueError, match=r"integer in \[0, 2\*\*53\), got -1"):
    solver.run(-1)
  with pytest.raises(ValueError, match="integer in"):
    solver.run(2.5)
  for huge in (2**63, np.uint64(2**64 - 1), np.uint64(2**62)):
    with pytest.raises(ValueError, match="integer in"):
      solver.run(huge)
  solver.run(0)
  assert solver.num_iterations == 0
  with pytest.raises(ValueError, match="averaging='stochastic'"):
    MCCFRb("kuhn_poker(players=3)", averaging="optimistic")
  with pytest.raises(ValueError, match="two-player zero-sum games only"):
    mccfrb.PublicSamplingSolver("kuhn_poker(players=3)")
  with pytest.raises(ValueError, match="OutcomeSamplingSolver has no baseline"):
    mccfrb.OutcomeSamplingSolver("kuhn_poker", baseline="learned")


def test_non_finite_tables_warn():
  solver = MCCFRb("kuhn_poker", baseline="thesis", seed=0)
  solver._baseline[0] = np.inf
  with pytest.warns(RuntimeWarning, match="no longer finite"):
    solver.run(1)


def test_non_finite_warning_is_given_once_per_solver():
  solver = MCCFRb("kuhn_poker", baseline="thesis", seed=0)
  solver._baseline[0] = np.inf
  with pytest.warns(RuntimeWarning) as record:
    solver.run(1)
    solver.run(2048)
  assert len(record) == 1


WEIGHTINGS = [{"weighting": "linear"},
              {"weighting": "linear", "linear_iterations": 7},
              {"weighting": "discounted"}]


@pytest.mark.parametrize("game_name,iterations", [("kuhn_poker", 200),
                                                  ("leduc_poker", 30)])
@pytest.mark.parametrize("weighting", WEIGHTINGS, ids=str)
@pytest.mark.parametrize("kind", KINDS)
def test_weighted_kernel_equals_python_reference(game_name, iterations,
                                                 weighting, kind):
  if kind == "oracle":
    iterations = 5
  game = mccfrb.load_game(game_name)
  solver = MCCFRb(game, baseline=kind, seed=7, **weighting)
  ref = reference.ReferenceMCCFRb(game, kind, key_of=key_of(solver),
                                  **weighting)
  rng = np.random.default_rng(7)
  for t in range(1, iterations + 1):
    ref.iteration(t, rng)
  solver.run(iterations)
  expected = reference_tables(solver, ref)
  for name in ("regrets", "avg", "baseline"):
    np.testing.assert_allclose(getattr(solver, "_" + name), expected[name],
                               rtol=1e-12, atol=1e-12, err_msg=name)


def test_weighting_speeds_up_outcome_sampling_on_leduc():
  # Measured (python -m experiments.measurements --sets=weighting) at 20,000
  # iterations, seeds 0-2: no weighting 0.78-0.91,
  # linear 0.55-0.66, discounted 0.71-0.77.
  tree = mccfrb.compile_tree("leduc_poker")
  for weighting, bound in (("linear", 0.75), ("discounted", 0.85)):
    solver = MCCFRb("leduc_poker", seed=0, tree=tree,
                                 weighting=weighting)
    solver.run(20_000)
    assert mccfrb.exploitability(tree, solver.average_policy_table()) < bound


def test_weighting_needs_stochastic_averaging():
  with pytest.raises(ValueError, match="averaging='stochastic' only"):
    MCCFRb("kuhn_poker", weighting="linear", averaging="optimistic")
  with pytest.raises(ValueError, match="Unknown weighting"):
    MCCFRb("kuhn_poker", weighting="quadratic")


def test_rm_plus_optimistic_flush_weighs_skipped_iterations_linearly():
  """The flushed average of MCCFRb+ equals one that never skipped: every
  infoset caught up to T with weights c+1 + ... + T, computed here directly."""
  solver = MCCFRb("kuhn_poker", baseline="history",
                               averaging="optimistic", regret="rm+", seed=2)
  solver.run(57)
  tree = solver.tree
  strategy = solver.current_policy_table()
  reach = np.empty((tree.num_nodes, 3))
  exact.reach_probabilities(*tree.kernel_args()[:6], strategy, reach)
  expected = solver._avg.copy()
  seen = set()
  for n in np.flatnonzero(tree.node_kind == 1):
    i = tree.node_infoset[n]
    if i in seen:  # The owner's reach is the same at every history of I.
      continue
    seen.add(i)
    skipped = sum(range(solver._avg_last[i] + 1, 58))
    expected[i] += skipped * reach[n, tree.node_player[n]] * strategy[i]
  np.testing.assert_allclose(solver._cumulative_average(), expected,
                             rtol=1e-12)
  assert (solver._avg_last < 57).any()  # Some infosets were flushed.
  before = solver._avg.copy()
  solver.average_policy_table()
  np.testing.assert_array_equal(solver._avg, before)  # Reading is pure.


def test_defaults_are_the_measured_best_per_history_configuration():
  solver = mccfrb.MCCFRbSolver("kuhn_poker")
  assert (solver.baseline, solver.averaging, solver.regret) == (
      "predictive", "optimistic", "rm+")
  plain = mccfrb.OutcomeSamplingSolver("kuhn_poker")
  assert (plain.baseline, plain.averaging, plain.regret) == (
      "none", "stochastic", "rm")


# Fingerprints (tests/conftest.py, table_digest) and nodes touched after 300
# iterations with seed 11, recorded with the kernels as they were before
# threads and the single-core speed work (commit 097e637). threads=1 (the
# default) must keep them bit for bit.
UNTHREADED = [
    ("MCCFRbSolver", "leduc_poker", {}, "f07091a7fa199498", 9190),
    ("MCCFRbSolver", GOOFSPIEL4, {}, "417b01c29f0fb1ef", 11400),
    ("MCCFRbSolver", "leduc_poker", {"baseline": "history"},
     "e1fbe89a3fe817f0", 4854),
    ("MCCFRbSolver", "leduc_poker",
     {"baseline": "thesis", "averaging": "stochastic"}, "b87642f9270f803a",
     4984),
    ("MCCFRbSolver", "leduc_poker",
     {"baseline": "learned", "regret": "rm", "averaging": "stochastic",
      "weighting": "discounted"}, "3eb85e88ac9152fb", 4828),
    ("MCCFRbSolver", "leduc_poker", {"baseline": "oracle"},
     "b3ed1a9a5dcf68a4", 5678971),
    ("OutcomeSamplingSolver", "leduc_poker", {}, "66292997a4b9b94c", 5010),
]


@pytest.mark.parametrize("cls,game_name,options,digest,touched", UNTHREADED)
def test_one_thread_keeps_the_tables_of_the_unthreaded_kernel(
    cls, game_name, options, digest, touched):
  solver = getattr(mccfrb, cls)(game_name, seed=11, threads=1, **options)
  assert fingerprint_run(solver) == digest
  assert solver.nodes_touched == touched


BATCHED = [
    {}, {"baseline": "none"}, {"baseline": "history"},
    {"baseline": "thesis", "averaging": "stochastic"},
    {"baseline": "learned", "regret": "rm", "averaging": "stochastic",
     "weighting": "discounted"},
    {"baseline": "learned", "regret": "rm", "averaging": "stochastic",
     "weighting": "linear"},
    {"baseline": "oracle"},
]


@pytest.mark.parametrize("options", BATCHED)
def test_batched_tables_depend_on_the_seed_and_batch_not_the_threads(options):
  def run(**overrides):
    solver = mccfrb.MCCFRbSolver("leduc_poker", **{
        "seed": 2, "batch": 32, **options, **overrides})
    solver.run(200)
    return solver
  two = check_threads_do_not_matter(run, [{"seed": 3}, {"batch": 16},
                                          {"batch": None}])
  np.testing.assert_array_equal(two.current_policy_table(),
                                run(threads=2).current_policy_table())


def test_batches_end_at_multiples_of_the_batch_size(tmp_path):
  check_batch_boundaries(
      lambda: mccfrb.MCCFRbSolver("leduc_poker", seed=4, threads=2,
                                  batch=100), 100, tmp_path / "os.npz")


def test_studies_run_unthreaded_on_the_threaded_solvers_tables():
  threaded = mccfrb.MCCFRbSolver("leduc_poker", seed=6, threads=2, batch=50)
  threaded.run(500)
  plain = mccfrb.MCCFRbSolver("leduc_poker", seed=6)
  for name in plain._table_names:
    getattr(plain, name)[...] = getattr(threaded, name)
  plain._tables_loaded()
  ours, theirs = (s.sample_estimates(400, seed=1) for s in (threaded, plain))
  np.testing.assert_array_equal(ours.root_values, theirs.root_values)
  np.testing.assert_array_equal(ours.regret_mean, theirs.regret_mean)
  assert np.abs(ours.regret_mean).max() > 0


@pytest.mark.parametrize("kwargs,match", [
    ({"threads": 0}, "threads must be a positive integer, got 0"),
    ({"threads": -2}, "threads must be a positive integer"),
    ({"threads": 1.5}, "threads must be a positive integer"),
    ({"threads": True}, "threads must be a positive integer"),
    ({"threads": "2"}, "threads must be a positive integer"),
    ({"batch": 0}, "batch must be a positive integer or None, got 0"),
    ({"batch": 2.5}, "batch must be a positive integer or None"),
    ({"batch": False}, "batch must be a positive integer or None")])
def test_bad_threads_and_batches_are_value_errors(kwargs, match):
  for cls in (mccfrb.MCCFRbSolver, mccfrb.OutcomeSamplingSolver):
    with pytest.raises(ValueError, match=match):
      cls("kuhn_poker", **kwargs)


@pytest.mark.slow
def test_two_threads_converge_as_one_on_leduc():
  # Per-iteration exploitability of threads=2 with the default batch size
  # (1024) against the unbatched solver, seeds 0-4, from 2^16 iterations
  # (64 batches) on: earlier, batches of 1024 are measurably worse, as the
  # README says (section "Threads":
  # python -m experiments.measurements --sets=batching).
  check_two_threads_converge(mccfrb.MCCFRbSolver, (2**16, 2**18), 1024)


def test_threaded_tests_get_their_threads():
  # tests/conftest.py sets NUMBA_NUM_THREADS=3 before numba starts, so the
  # threads=2 and threads=3 runs above really run in parallel (with fewer,
  # numba_threads would cap them and the thread-count tests prove nothing).
  assert numba.config.NUMBA_NUM_THREADS == 3
  with base.numba_threads(3):
    assert numba.get_num_threads() == 3


@pytest.mark.parametrize("make", [
    lambda: mccfrb.MCCFRbSolver("kuhn_poker"),
    lambda: mccfrb.OutcomeSamplingSolver("kuhn_poker"),
    lambda: mccfrb.ExternalSamplingSolver("kuhn_poker"),
])
def test_without_a_seed_numpys_global_seed_makes_runs_reproducible(make):
  """As in OpenSpiel's tests and examples: np.random.seed(s), then a solver
  without seed=."""
  def run(global_seed):
    np.random.seed(global_seed)
    solver = make()
    solver.run(50)
    return solver.average_policy_table()
  np.testing.assert_array_equal(run(3), run(3))
  assert not np.array_equal(run(3), run(4))


def test_numpy_iteration_counts_become_python_ints_and_save(tmp_path):
  solver = MCCFRb("kuhn_poker", seed=0)
  solver.run(np.int64(5))
  assert solver.num_iterations == 5 and type(solver.num_iterations) is int
  solver.save(tmp_path / "s.mccfrb")  # JSON metadata: a numpy int failed.
  assert mccfrb.MCCFRbSolver.load(tmp_path / "s.mccfrb").num_iterations == 5


_TRAINING_ONLY = """
import mccfrb
from mccfrb.kernels import outcome
s = mccfrb.MCCFRbSolver("kuhn_poker", representation="tree", seed=0)
s.run(2)
print(len(outcome.tree_episodes.signatures))
s.sample_estimates(8)
print(len(outcome.tree_episodes.signatures))
"""


def test_training_compiles_only_the_training_episode(tmp_path):
  """From an empty numba cache, training on a tree compiles one episode
  kernel; the studies' compiles at the first study. `tree_episodes` takes
  `study` as None or a tuple, a branch numba prunes: with a boolean both
  compiled at training's first use (MCCFRb on Leduc's tree: 10.8 s
  against 7.2 s)."""
  out = printed_with_empty_cache(_TRAINING_ONLY, tmp_path)
  assert out == ["1", "2"], out
