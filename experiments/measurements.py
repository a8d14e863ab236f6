r"""Reproduces the numbers quoted in README.md, BUILD_NOTES.md and test comments.

  python -m experiments.measurements --sets=weighting,pruning_short
  python -m experiments.measurements                 # every set, ~10 minutes

Every set is deterministic (fixed seeds), so a rerun prints the same numbers:
  weighting      Leduc, 20,000 iterations, seeds 0-2: outcome sampling plain /
                 linear / discounted; external sampling linear / discounted.
  pruning_short  Leduc regret quantiles after 10^4 ES iterations (seed 0);
                 10 seeds x 20,000 iterations, second half pruned: Pluribus at
                 C = -100, -300, -1000 and probabilistic at C = -20.
  pruning_long   Leduc, 10^6 iterations, seeds 0-1: plain ES, probabilistic
                 (C = K = -300/300), probabilistic + linear, Pluribus (C = -300),
                 all pruning from iteration 1000.
  averaging      2x10^5 iterations, seeds 0-3, Leduc and goofspiel 4:
                 os, os_optimistic and the history baseline (both averagings).
  exponential    Leduc, 20,000 iterations, seeds 0-2: thesis_exponential at
                 decay 0.5 / 0.1 / 0.02 and the direct average: exploitability
                 and the largest |baseline|.
  convergence    every baseline kind on Leduc, goofspiel 4 and matching
                 pennies, seeds 0-2, exploitability at 100 and 20,000
                 iterations (thesis_exponential at decay 0.1).
  general_baselines
                 MCCFRbSolver's defaults (RM+, stochastic averaging) with
                 every baseline kind on games with three players (Kuhn
                 at 10^4 iterations, Leduc at 10^5; the oracle on Kuhn
                 only) and on general-sum goofspiel 4 (10^5), seeds 0-2:
                 NashConv (per-player baseline tables).
  unbiasedness   the statistic of tests/test_solvers.py (max z and mean z^2
                 over well-sampled entries) for sample seeds 1-6 on Kuhn and
                 seeds 1-2 on Leduc, every kind.
  agreement      largest differences from the references: CFR family against
                 OpenSpiel (1, 10, 100 iterations) and external sampling
                 against reference.ReferenceExternalSampling.
  public_time    Leduc, seed 0, one core: training time and exploitability of
                 PublicSamplingSolver (predictive and history, 10^6
                 iterations; chance sampling, 10^5), numba warmed up, run()
                 timed alone. Times depend on the machine and its load.
  compile        compile_tree on Leduc, goofspiel 4 and 5, liars_dice with
                 one die and tic_tac_toe, each in a fresh process: the growth of the peak
                 resident memory during the first compile per node (what
                 tree_size.PEAK_BYTES_PER_NODE bounds), the tree's bytes per
                 node, and the best of 3 compile times (CPU seconds of the
                 process, less sensitive to other load than wall clock);
                 tic_tac_toe walked by apply/undo and by cloning; the time
                 to read goofspiel 5's infoset strings; the cost of the
                 pyspiel calls of the walk on a goofspiel 5 state.
  nfsp_kuhn      (these four need the nfsp extra) openspiel_nfsp on Kuhn:
                 exploitability at 0 and 3,000 episodes, seeds 0-5.
  nfsp_warmup    Kuhn, seed 0, 4,000 episodes: learning from 128 transitions
                 (ours) against OpenSpiel's default 1,000.
  nfsp_crash     the _learn crash without the guard on Leduc: seeds 0-7
                 through the adapter, and OpenSpiel's example agents (seed
                 42) with chance seeds 0-4.
  nfsp_rate      Leduc episodes per second after 300 episodes (2,000
                 episodes, seed 0; wall clock and process CPU time).
  batching       Leduc, seeds 0-4: exploitability by iteration of the
                 sampling solvers' defaults (MCCFRbSolver to 2^20
                 iterations, PublicSamplingSolver to 2^16, ExternalSampling-
                 Solver to 2^18) unbatched and in batches of several sizes
                 (threads=1: the tables do not depend on the thread count),
                 and whether each batched mean stays within the unbatched
                 seeds' range.
  batching_mcts  the same for SmoothUCTSolver (defaults, 2^14 to 2^22
                 iterations of two simulations).
  mcts_phases    Smooth UCT on Leduc, batches of 4,096 iterations, 1 and 2
                 threads: batched simulations per second, and phase 1 (the
                 parallel simulations) alone.
  parallel_region
                 the cost of one empty numba parallel region (prange over
                 the threads) at 1 and 2 threads: what every batch of the
                 threaded solvers pays a few times. Depends on the machine
                 and its load (a busy core makes it milliseconds).
"""

import collections
import os
import subprocess
import sys
import time
import timeit

# Run by path (python experiments/NAME.py) as well as with -m:
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app  # pylint: disable=g-import-not-at-top
from absl import flags
import numba
import numpy as np
import pyspiel

import mccfrb
from experiments import common
from mccfrb import reference
from mccfrb.kernels import mcts as mcts_lib
from mccfrb.kernels import rng as rng_lib

_SETS = flags.DEFINE_list("sets", None, "Which sets (default: all).")

PROGRAM = "measurements"
# MCCFRbSolver's defaults when these numbers were first measured (the
# defaults are now MCCFRb+: predictive, optimistic, regret="rm+").
FORMER_DEFAULTS = {"averaging": "stochastic", "regret": "rm"}


def expl(tree, solver):
  return mccfrb.exploitability(tree, solver.average_policy_table())


def spread(values):
  values = np.asarray(values)
  return (f"mean {values.mean():.4f}, range {values.min():.4f}-"
          f"{values.max():.4f}")


def weighting():
  tree = mccfrb.compile_tree("leduc_poker")
  former = {"baseline": "learned", **FORMER_DEFAULTS}
  for cls, options in [(mccfrb.MCCFRbSolver, former),
                       (mccfrb.MCCFRbSolver, {"weighting": "linear", **former}),
                       (mccfrb.MCCFRbSolver,
                        {"weighting": "discounted", **former}),
                       (mccfrb.ExternalSamplingSolver, {"weighting": "linear"}),
                       (mccfrb.ExternalSamplingSolver,
                        {"weighting": "discounted"})]:
    values = []
    for seed in range(3):
      solver = cls("leduc_poker", seed=seed, tree=tree, **options)
      solver.run(20_000)
      values.append(expl(tree, solver))
    print(f"{cls.__name__} {options}: {spread(values)}")


def _pruned_pair(tree, seed, iterations, options):
  plain = mccfrb.ExternalSamplingSolver("leduc_poker", seed=seed, tree=tree,
                                        weighting=options.get("weighting"))
  pruned = mccfrb.ExternalSamplingSolver("leduc_poker", seed=seed, tree=tree,
                                         **options)
  plain.run(iterations)
  pruned.run(iterations)
  return plain, pruned


def pruning_short():
  tree = mccfrb.compile_tree("leduc_poker")
  solver = mccfrb.ExternalSamplingSolver("leduc_poker", seed=0, tree=tree)
  solver.run(10_000)
  regrets = solver._regrets[tree.legal_mask()]  # pylint: disable=protected-access
  print("regret quantiles 1/5/10/25/50% after 10^4 iterations:",
        np.round(np.percentile(regrets, [1, 5, 10, 25, 50]), 1))
  for rule, threshold in [("pluribus", -100.0), ("pluribus", -300.0),
                          ("pluribus", -1000.0), ("probabilistic", -20.0)]:
    plain, pruned, ratio = [], [], []
    for seed in range(10):
      a, b = _pruned_pair(tree, seed, 20_000, dict(
          pruning=rule, prune_threshold=threshold, prune_k=-threshold,
          prune_after=10_001))
      plain.append(expl(tree, a))
      pruned.append(expl(tree, b))
      ratio.append(b.nodes_touched / a.nodes_touched)
    plain, pruned = np.array(plain), np.array(pruned)
    se = np.sqrt(plain.var(ddof=1) / 10 + pruned.var(ddof=1) / 10)
    print(f"{rule} C={threshold:g}: plain {plain.mean():.4f}, pruned "
          f"{pruned.mean():.4f}, se {se:.4f}, nodes {np.mean(ratio):.3f} of "
          "plain")


def pruning_long():
  tree = mccfrb.compile_tree("leduc_poker")
  base = dict(prune_threshold=-300.0, prune_k=300.0, prune_after=1000)
  for name, options in [
      ("probabilistic", dict(pruning="probabilistic", **base)),
      ("probabilistic + linear", dict(pruning="probabilistic",
                                      weighting="linear", **base)),
      ("pluribus", dict(pruning="pluribus", **base))]:
    plain, pruned, ratio = [], [], []
    for seed in range(2):
      a, b = _pruned_pair(tree, seed, 1_000_000, options)
      plain.append(expl(tree, a))
      pruned.append(expl(tree, b))
      ratio.append(b.nodes_touched / a.nodes_touched)
    print(f"{name}: unpruned {np.round(plain, 4)}, pruned "
          f"{np.round(pruned, 4)}, nodes {np.mean(ratio):.3f} of unpruned")


def averaging():
  for game in ("leduc_poker", common.GOOFSPIEL4):
    tree = mccfrb.compile_tree(game)
    for baseline, avg in [("none", "stochastic"), ("none", "optimistic"),
                          ("history", "stochastic"), ("history", "optimistic")]:
      values = []
      for seed in range(4):
        solver = mccfrb.MCCFRbSolver(game, baseline=baseline, averaging=avg,
                                     regret="rm", seed=seed, tree=tree)
        solver.run(200_000)
        values.append(expl(tree, solver))
      print(f"{game[:12]} {baseline} {avg}: {spread(values)}")


def exponential():
  tree = mccfrb.compile_tree("leduc_poker")
  for kind, decay in [("thesis_exponential", 0.5), ("thesis_exponential", 0.1),
                      ("thesis_exponential", 0.02), ("thesis", None)]:
    values, largest = [], []
    for seed in range(3):
      solver = mccfrb.MCCFRbSolver("leduc_poker", baseline=kind,
                                   baseline_decay=decay, seed=seed, tree=tree,
                                   **FORMER_DEFAULTS)
      solver.run(20_000)
      values.append(expl(tree, solver))
      largest.append(np.abs(solver._baseline).max())  # pylint: disable=protected-access
    print(f"{kind} decay={decay}: {spread(values)}; max |b| "
          f"{min(largest):.3g}-{max(largest):.3g}")


def convergence():
  for game in ("leduc_poker", common.GOOFSPIEL4, "matching_pennies"):
    tree = mccfrb.compile_tree(game)
    worst = 0.0
    for kind in mccfrb.BASELINES:
      decay = 0.1 if kind == "thesis_exponential" else None
      early, late = [], []
      for seed in range(3):
        solver = mccfrb.MCCFRbSolver(game, baseline=kind, baseline_decay=decay,
                                     seed=seed, tree=tree, **FORMER_DEFAULTS)
        solver.run(100)
        early.append(expl(tree, solver))
        solver.run(19_900)
        late.append(expl(tree, solver))
      worst = max(worst, max(late))
      print(f"{game[:12]} {kind}: at 100 {np.round(early, 3)}, at 20,000 "
            f"{np.round(late, 4)}")
    print(f"{game[:12]}: worst at 20,000 iterations {worst:.4f}")


def general_baselines():
  goofspiel = ("turn_based_simultaneous_game(game=goofspiel(num_cards=4,"
               "imp_info=True,points_order=random,returns_type=total_points))")
  for spec, iterations in (("kuhn_poker(players=3)", 10_000),
                           ("leduc_poker(players=3)", 100_000),
                           (goofspiel, 100_000)):
    game = mccfrb.load_game(spec, general=True)
    tree = mccfrb.compile_tree(game)
    for kind in mccfrb.BASELINES:
      if kind == "oracle" and tree.num_nodes > 10_000:
        continue  # A walk of every player's values per episode.
      values = []
      for seed in range(3):
        solver = mccfrb.MCCFRbSolver(game, baseline=kind, seed=seed,
                                     tree=tree, averaging="stochastic")
        solver.run(iterations, progress=False)
        values.append(mccfrb.nash_conv(tree, solver.average_policy_table()))
      print(f"{spec} {iterations} {kind}: NashConv {spread(values)}",
            flush=True)


def unbiasedness():
  for game, seeds in (("kuhn_poker", range(1, 7)), ("leduc_poker", (1, 2))):
    stats = collections.defaultdict(list)
    for kind in mccfrb.BASELINES:
      solver = mccfrb.MCCFRbSolver(game, baseline=kind, seed=0,
                                   **FORMER_DEFAULTS)
      solver.run(200)
      tree = solver.tree
      strategy = solver.current_policy_table()
      exact = mccfrb.counterfactual_regrets(tree, strategy)
      learn = not (kind == "thesis_exponential" and game == "leduc_poker")
      for seed in seeds:
        sample = solver.sample_estimates(1_000_000, seed=seed,
                                         learn_baselines=learn)
        owner = sample.episodes[tree.infoset_player][:, None]
        checked = tree.legal_mask() & (mccfrb.evaluation.expected_visits(
            tree, strategy, 0.6, sample.episodes) >= 2000)[:, None]
        se = np.sqrt(np.maximum(sample.regret_var, 0.0) / owner)[checked]
        z = np.abs(sample.regret_mean - exact)[checked] / np.maximum(se, 1e-12)
        stats["max_z"].append(z.max())
        stats["mean_z2"].append(np.mean(z**2))
    print(f"{game} regrets: max z {max(stats['max_z']):.2f}, mean z^2 "
          f"{min(stats['mean_z2']):.2f}-{max(stats['mean_z2']):.2f}")


def agreement():
  from open_spiel.python.algorithms import discounted_cfr  # pylint: disable=g-import-not-at-top
  largest = 0.0
  for game_name in ("kuhn_poker", "leduc_poker"):
    game = pyspiel.load_game(game_name)
    for variant, ref in [("cfr", pyspiel.CFRSolver(game)),
                         ("cfr+", pyspiel.CFRPlusSolver(game)),
                         ("linear", discounted_cfr.LCFRSolver(game)),
                         ("discounted", discounted_cfr.DCFRSolver(game))]:
      ours, done = mccfrb.CFRSolver(game, variant=variant), 0
      for checkpoint in (1, 10, 100):
        for _ in range(checkpoint - done):
          ref.evaluate_and_update_policy()
        ours.run(checkpoint - done)
        done = checkpoint
        average = getattr(ref, "tabular_average_policy", ref.average_policy)()
        table = mccfrb.table_from_policy(ours.tree, average, game=game)
        largest = max(largest, np.abs(table - ours.average_policy_table()).max())
  print(f"CFR family average policies vs OpenSpiel: max difference {largest:.2g}")
  game = mccfrb.load_game("kuhn_poker")
  for options in ({}, {"weighting": "discounted"}):
    solver = mccfrb.ExternalSamplingSolver(game, seed=3, **options)
    ref = reference.ReferenceExternalSampling(game, **options)
    rng = np.random.default_rng(3)
    for t in range(1, 201):
      ref.iteration(t, rng)
    solver.run(200)
    index = solver.tree.infoset_index()
    worst = 0.0
    for key, row in ref.regrets.items():
      ours = solver._regrets[index[key], :len(row)]  # pylint: disable=protected-access
      worst = max(worst, np.max(np.abs(ours - row) / np.maximum(np.abs(row), 1e-300)))
    print(f"ES vs reference, Kuhn, 200 iterations, {options}: max relative "
          f"regret difference {worst:.2g}")


def public_time():
  tree = mccfrb.compile_tree("leduc_poker")
  public = mccfrb.public_states(tree, game="leduc_poker")
  for name, options, iterations in [
      ("public_plus_predictive", {}, 1_000_000),
      ("public_plus_history", {"baseline": "history"}, 1_000_000),
      ("public_plus_predictive_chance", {"sampling": "chance"}, 100_000)]:
    solver = mccfrb.PublicSamplingSolver("leduc_poker", seed=0, tree=tree,
                                         public_tree=public, **options)
    solver.run(1)  # numba warm-up
    start = time.perf_counter()
    solver.run(iterations - 1)
    seconds = time.perf_counter() - start
    print(f"{name}: {iterations} iterations in {seconds:.1f} s "
          f"({seconds / iterations * 1e6:.1f} us an iteration), "
          f"exploitability {expl(tree, solver):.5f}")


_COMPILE_PROBE = """
import resource, sys, time
import mccfrb
mccfrb.compile_tree("kuhn_poker")  # Imports and first allocations.
game = mccfrb.load_game(sys.argv[1])
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
tree = mccfrb.compile_tree(game)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
seconds = []
for _ in range(3):
  del tree
  start = time.process_time()
  tree = mccfrb.compile_tree(game)
  seconds.append(time.process_time() - start)
print(tree.num_nodes, min(seconds), tree.nbytes() / tree.num_nodes,
      peak * 1024 / tree.num_nodes)
"""


def compile():  # pylint: disable=redefined-builtin
  for game in ["leduc_poker", common.GOOFSPIEL4, common.GOOFSPIEL5,
               "liars_dice(numdice=1)", "tic_tac_toe"]:
    out = subprocess.run([sys.executable, "-c", _COMPILE_PROBE, game],
                         capture_output=True, text=True, check=True).stdout
    nodes, seconds, tree_bytes, peak_bytes = out.split()
    print(f"{game}: {int(nodes):,} nodes, compiled in {float(seconds):.2f} "
          f"CPU s (best of 3), tree {float(tree_bytes):.1f} bytes per node, "
          f"peak resident memory +{float(peak_bytes):.1f} bytes per node")
  for walk in ("undo", "clone"):
    seconds = []
    for _ in range(3):
      start = time.process_time()
      mccfrb.compile_tree("tic_tac_toe", walk=walk)
      seconds.append(time.process_time() - start)
    print(f"tic_tac_toe, walk={walk}: {min(seconds):.2f} CPU s (best of 3)")
  tree = mccfrb.compile_tree(common.GOOFSPIEL5)
  for name, call in [("infoset_strings()", tree.infoset_strings),
                     ("infoset_index()", tree.infoset_index)]:
    start = time.perf_counter()
    call()
    print(f"goofspiel 5 {name}: {time.perf_counter() - start:.2f} s")
  # The pyspiel calls of the walk, on the state after the first point card
  # and player 0's first action (player 1 to act); its child is the clone.
  state = mccfrb.load_game(common.GOOFSPIEL5).new_initial_state()
  state.apply_action(state.chance_outcomes()[0][0])
  state.apply_action(0)
  terminal = state.clone()
  while not terminal.is_terminal():
    terminal.apply_action(terminal.chance_outcomes()[0][0]
                          if terminal.is_chance_node()
                          else terminal.legal_actions()[0])
  calls = [("information_state_string", lambda: state.information_state_string(1)),
           ("child", lambda: state.child(2)),
           ("legal_actions", state.legal_actions),
           ("returns", terminal.returns),
           ("current_player", state.current_player)]
  for name, call in calls:
    best = min(timeit.repeat(call, number=100_000, repeat=3)) / 100_000
    print(f"goofspiel 5 state.{name}(): {best * 1e6:.2f} us a call")


def _crash_episode(run_one, episodes):
  """The 1-based episode in which OpenSpiel's unguarded _learn raises, or None."""
  for episode in range(1, episodes + 1):
    try:
      run_one()
    except TypeError as e:
      if "NoneType" not in str(e):
        raise
      return episode
  return None


def _example_agents_episode(game, chance_seed, episodes=60):
  """OpenSpiel's Leduc example set-up (both agents seed 42), unguarded."""
  from open_spiel.python import rl_environment  # pylint: disable=g-import-not-at-top
  from open_spiel.python.jax import nfsp as os_nfsp  # pylint: disable=g-import-not-at-top
  env = rl_environment.Environment(
      game, chance_event_sampler=rl_environment.ChanceEventSampler(chance_seed))
  size = env.observation_spec()["info_state"][0]
  agents = [os_nfsp.NFSP(p, size, env.action_spec()["num_actions"], [128],
                         2_000_000, 0.1, replay_buffer_capacity=200_000,
                         epsilon_decay_duration=20_000_000, epsilon_start=0.06,
                         epsilon_end=0.001, allow_checkpointing=False)
            for p in range(2)]

  def one():
    step = env.reset()
    while not step.last():
      step = env.step([agents[step.observations["current_player"]].step(step).action])
    for agent in agents:
      agent.step(step)

  return _crash_episode(one, episodes)


def _nfsp_class():
  """OpenSpiel's unguarded NFSP class, or None (printed) without the extra."""
  from mccfrb.experiment import nfsp as nfsp_lib  # pylint: disable=g-import-not-at-top
  try:
    return nfsp_lib._openspiel_nfsp()[0].NFSP  # pylint: disable=protected-access
  except ValueError as e:
    print(f"skipped: {e}")
    return None


def _kuhn_runs(seeds, episodes, **overrides):
  from mccfrb.experiment import nfsp as nfsp_lib  # pylint: disable=g-import-not-at-top
  kuhn = mccfrb.load_game("kuhn_poker")
  tree = mccfrb.compile_tree(kuhn)
  for seed in seeds:
    runner = nfsp_lib.NFSPRunner(kuhn, seed, tree, **overrides)
    start = mccfrb.exploitability(tree, runner.average_policy_table(tree))
    runner.run(episodes)
    end = mccfrb.exploitability(tree, runner.average_policy_table(tree))
    print(f"Kuhn seed {seed} {overrides or ''}: exploitability {start:.4f} at "
          f"0 episodes, {end:.4f} at {episodes}", flush=True)


def nfsp_kuhn():
  if _nfsp_class():
    _kuhn_runs(range(6), 3000)


def nfsp_warmup():
  if _nfsp_class():
    for size in (128, 1000):
      _kuhn_runs([0], 4000, min_buffer_size_to_learn=size)


def nfsp_crash():
  from mccfrb.experiment import nfsp as nfsp_lib  # pylint: disable=g-import-not-at-top
  unguarded = _nfsp_class()
  if not unguarded:
    return
  leduc = mccfrb.load_game("leduc_poker")
  tree = mccfrb.compile_tree(leduc)
  for seed in range(8):
    runner = nfsp_lib.NFSPRunner(leduc, seed, tree, agent_class=unguarded,
                                 reservoir_buffer_capacity=10_000)
    print(f"Leduc, adapter seed {seed}, unguarded: crash in episode "
          f"{_crash_episode(lambda r=runner: r.run(1), 60)} (None: 60 ran)",
          flush=True)
  for chance_seed in range(5):
    print(f"Leduc, OpenSpiel's example agents (seed 42), chance seed "
          f"{chance_seed}: crash in episode "
          f"{_example_agents_episode(leduc, chance_seed)} (None: 60 ran)",
          flush=True)


def nfsp_rate():
  from mccfrb.experiment import registry  # pylint: disable=g-import-not-at-top
  if not _nfsp_class():
    return
  leduc = mccfrb.load_game("leduc_poker")
  runner = registry.make("openspiel_nfsp", leduc, 0,
                         tree=mccfrb.compile_tree(leduc))
  runner.run(300)
  wall, cpu = time.perf_counter(), time.process_time()
  runner.run(2000)
  wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
  print(f"Leduc, 2000 episodes after 300: {2000 / wall:.1f} episodes per "
        f"second of wall clock, {2000 / cpu:.1f} per second of process CPU "
        f"time (one core's rate when the machine is shared)")
def _batching(tree, configs):
  """Per (class, options, first and last power of 2, batch sizes): mean
  exploitability of seeds 0-4 by iterations, unbatched and per batch size
  (threads=1: the tables do not depend on the thread count)."""
  for cls, extra, first, last, batches in configs:
    checkpoints = [2**k for k in range(first, last + 1, 2)]
    table = {}
    for batch in (None,) + batches:
      rows = []
      for seed in range(5):
        solver = cls("leduc_poker", seed=seed, tree=tree, batch=batch, **extra)
        row = []
        for t in checkpoints:
          solver.run(t - solver.num_iterations)
          row.append(expl(tree, solver))
        rows.append(row)
      table[batch] = np.array(rows)
    worst, best = table[None].max(axis=0), table[None].min(axis=0)
    print(f"{cls.__name__} (defaults), Leduc, seeds 0-4: mean exploitability "
          "by iterations and batch size; * = above the worst unbatched seed")
    print("iterations " + " ".join(f"{t:>9}" for t in checkpoints))
    for batch, values in table.items():
      means = values.mean(axis=0)
      print(f"{'none' if batch is None else batch:>10} " + " ".join(
          f"{m:8.4g}{'*' if m > w else ' '}" for m, w in zip(means, worst)))
    for name, row in (("best seed", best), ("worst seed", worst)):
      print(f"{name:>10} " + " ".join(f"{v:8.4g} " for v in row))
    print(flush=True)


def batching():
  tree = mccfrb.compile_tree("leduc_poker")
  public = mccfrb.public_states(tree, game="leduc_poker")
  _batching(tree, [
      (mccfrb.MCCFRbSolver, {}, 8, 20, (64, 256, 1024, 4096, 16384)),
      (mccfrb.PublicSamplingSolver, {"public_tree": public}, 8, 16,
       (2, 4, 8, 16, 64, 256)),
      (mccfrb.ExternalSamplingSolver, {}, 8, 18, (4, 8, 16, 64, 256, 1024))])


def batching_mcts():
  tree = mccfrb.compile_tree("leduc_poker")
  _batching(tree, [(mccfrb.SmoothUCTSolver, {}, 14, 22,
                    (16, 64, 256, 1024, 4096))])


def mcts_phases():
  """Smooth UCT on Leduc in batches of 4,096 iterations at 1 and 2 threads:
  the whole batched run, and its phase 1 (the simulations against frozen
  tables) alone, timed in turns."""
  tree = mccfrb.compile_tree("leduc_poker")
  trained = mccfrb.SmoothUCTSolver("leduc_poker", seed=0, tree=tree)
  trained.run(1_000_000)
  count = 8192  # The simulations of a batch of 4,096 iterations.
  records = (np.zeros((count, tree.max_depth), dtype=np.int64),
             np.zeros((count, tree.max_depth), dtype=np.int64))
  for threads in (1, 2, 1, 2):
    if threads > numba.config.NUMBA_NUM_THREADS:
      print(f"{threads} threads: NUMBA_NUM_THREADS is "
            f"{numba.config.NUMBA_NUM_THREADS}")
      continue
    solver = mccfrb.SmoothUCTSolver("leduc_poker", seed=0, tree=tree,
                                    threads=threads, batch=count // 2)
    solver.run(200_000)
    start = time.perf_counter()
    solver.run(1_000_000)
    whole = 2e6 / (time.perf_counter() - start)
    numba.set_num_threads(threads)
    _phase1(tree.kernel_args(), trained, count, threads, *records, 1)
    start = time.perf_counter()
    _phase1(tree.kernel_args(), trained, count, threads, *records, 250)
    phase1 = 250 * count / (time.perf_counter() - start)
    print(f"{threads} threads: {whole / 1e6:.2f}M simulations/s batched, "
          f"phase 1 alone {phase1 / 1e6:.2f}M/s", flush=True)


def _phase1(args, solver, count, workers, rec_infoset, rec_action, batches):
  mcts_kernel_phase1(args, solver._visits, solver._counts, solver._values,  # pylint: disable=protected-access
                     count, workers, rec_infoset, rec_action, batches)


@numba.njit(parallel=True)
def mcts_kernel_phase1(args, visits, counts, values, count, workers,
                       rec_infoset, rec_action, batches):
  """Phase 1 of kernels/mcts.py `simulation_batches` alone, `batches` times
  on the same tables (Smooth UCT, Leduc defaults)."""
  kind, player, infoset, child_start, num_children, edge_prob, utility = args
  for b in range(batches):
    for w in numba.prange(workers):
      state = np.zeros(4, dtype=np.uint64)
      for e in range(w * count // workers, (w + 1) * count // workers):
        state[0] = rng_lib.stream_start(b, e)
        mcts_lib._simulate(kind, player, infoset, child_start, num_children,  # pylint: disable=protected-access
                           edge_prob, utility, visits, counts, values, 1,
                           18.0, 0.1, 0.9, 0.002, False, e % 2, state, True,
                           rec_infoset[e], rec_action[e])


@numba.njit(parallel=True)
def _empty_regions(count, workers, out):
  for _ in range(count):
    for w in numba.prange(workers):
      out[w] += 1.0


def parallel_region():
  out = np.zeros(2)
  for workers in (1, 2):
    if workers > numba.config.NUMBA_NUM_THREADS:
      print(f"{workers} threads: NUMBA_NUM_THREADS="
            f"{numba.config.NUMBA_NUM_THREADS} (set it to 2 or more)")
      continue
    numba.set_num_threads(workers)
    _empty_regions(10, workers, out)
    start = time.perf_counter()
    _empty_regions(20_000, workers, out)
    seconds = time.perf_counter() - start
    print(f"{workers} threads: {seconds / 20_000 * 1e6:.2f} us per parallel "
          f"region ({numba.threading_layer()} threading layer)")


SETS = {"weighting": weighting, "pruning_short": pruning_short,
        "pruning_long": pruning_long, "averaging": averaging,
        "exponential": exponential, "convergence": convergence,
        "general_baselines": general_baselines,
        "unbiasedness": unbiasedness, "agreement": agreement,
        "public_time": public_time, "compile": compile,
        "nfsp_kuhn": nfsp_kuhn,
        "nfsp_warmup": nfsp_warmup, "nfsp_crash": nfsp_crash,
        "nfsp_rate": nfsp_rate, "batching": batching,
        "batching_mcts": batching_mcts, "mcts_phases": mcts_phases,
        "parallel_region": parallel_region}


def main(argv):
  if len(argv) > 1:
    common.fail(PROGRAM, f"unexpected arguments {argv[1:]}")
  names = _SETS.value or list(SETS)
  unknown = [n for n in names if n not in SETS]
  if unknown:
    common.fail(PROGRAM, f"unknown sets {unknown}; known: {list(SETS)}")
  for name in names:
    print(f"## {name}", flush=True)
    SETS[name]()


if __name__ == "__main__":
  app.run(main)
