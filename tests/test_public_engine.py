"""PublicSamplingSolver on native engines (kernels/public.py) against
the same solver on the compiled tree and its public tree."""

import numpy as np
import pytest

import mccfrb
from mccfrb.solvers import public as public_solver
from mccfrb.kernels import rows as row_kernels
from mccfrb.tables import hashed
from tests.conftest import check_unstored_infosets_play_uniform
from tests.conftest import printed_with_empty_cache
from tests.test_engine_solvers import assert_same_arena
from tests.test_engine_solvers import assert_same_history_baselines
from tests.test_engine_solvers import engine_rows

G3 = "goofspiel(num_cards=3,imp_info=True,points_order=random,returns_type=point_difference)"
G4 = "goofspiel(num_cards=4,imp_info=True,points_order=random,returns_type=point_difference)"
G4_DESCENDING = "goofspiel(num_cards=4,imp_info=True,points_order=descending)"
LIARS = "liars_dice(numdice=1,dice_sides=3)"
G6 = "goofspiel(num_cards=6,imp_info=True,points_order=random,returns_type=point_difference)"


def assert_same_public_tables(on_tree, on_engine):
  """Regrets, averages and averaging stamps of every infoset, bit for bit
  (infosets the engine never stored have all-zero tree rows)."""
  tree, t = on_tree.tree, on_engine._backend.tables
  rows = engine_rows(on_engine, tree)
  assert t.num_rows == np.count_nonzero(rows >= 0) > 0
  for i, r in enumerate(rows):
    c = tree.infoset_num_actions[i]
    if r < 0:
      assert not on_tree._regrets[i].any() and not on_tree._avg[i].any()
      continue
    assert t.width(r) == c
    np.testing.assert_array_equal(t.field(r, "regret"),
                                  on_tree._regrets[i, :c])
    np.testing.assert_array_equal(t.field(r, "avg"), on_tree._avg[i, :c])
    # The stored sigma^t is the regret matching of the row's regrets.
    sigma = np.zeros(c)
    row_kernels.match_into(t.field(r, "regret"), 0, c, sigma, 0)
    np.testing.assert_array_equal(t.field(r, "strategy"), sigma)
    assert t.stamp(r) == on_tree._avg_last[i]
  if on_engine.baseline in ("history", "predictive"):
    assert_same_history_baselines(on_tree, on_engine)


@pytest.mark.parametrize("game", [G3, LIARS, G4_DESCENDING])
@pytest.mark.parametrize("baseline,sampling,averaging,regret", [
    ("none", "uniform", "stochastic", "rm+"),
    ("history", "on_policy", "optimistic", "rm"),
    ("predictive", "chance", "stochastic", "rm"),
    ("predictive", "uniform", "optimistic", "rm+"),
])
def test_engine_run_is_the_tree_run_bit_for_bit(game, baseline, sampling,
                                                  averaging, regret):
  kwargs = dict(baseline=baseline, sampling=sampling, averaging=averaging,
                regret=regret, seed=7)
  on_tree = mccfrb.PublicSamplingSolver(game, representation="tree",
                                        **kwargs)
  on_engine = mccfrb.PublicSamplingSolver(game, representation="engine",
                                          precision="float64", **kwargs)
  assert on_engine.representation == "engine" and on_engine.tree is None
  on_tree.run(150)
  on_engine.run(150)
  assert_same_public_tables(on_tree, on_engine)
  assert on_engine.nodes_touched == on_tree.nodes_touched
  np.testing.assert_array_equal(on_engine._rng_words, on_tree._rng_words)
  assert mccfrb.nash_conv(game, on_engine.average_policy()) == (
      mccfrb.nash_conv(game, on_tree.average_policy()))


def test_buffers_and_tables_that_grow_mid_episode_change_nothing(
    monkeypatch, tmp_path):
  """Episodes short of room (pool, edges, public states, groups, infoset
  and history rows) rerun from their generator state: tiny buffers, small
  kernel calls, a save and a load in the middle, and the tables are those
  of one run."""
  kwargs = dict(baseline="history", sampling="chance", seed=2)
  whole = mccfrb.PublicSamplingSolver(G4, representation="engine", **kwargs)
  whole.run(120)
  monkeypatch.setattr(public_solver, "PUBLIC_CHUNK_EPISODES", 3)
  parts = mccfrb.PublicSamplingSolver(G4, representation="engine", **kwargs)
  t = parts._backend.tables
  parts._backend.tables = mccfrb.tables.HashedTable(
      t.max_moves, t.fields, t.header_names[2:], t.precision, slots=2,
      init="strategy")
  parts._pub_pool(1, 1, 1, 1)
  parts.run(50)
  path = str(tmp_path / "public.npz")
  parts.save(path)
  parts = mccfrb.load_solver(path)
  parts._pub_pool(1, 1, 1, 1)
  parts.run(70)
  assert parts.num_iterations == 120
  assert parts.nodes_touched == whole.nodes_touched
  # Rows are laid out in order of first visit: the same in both, whatever
  # the tables' capacities.
  for tables in ("tables", "history"):
    assert_same_arena(getattr(parts._backend, tables),
                      getattr(whole._backend, tables))


def test_goofspiel_6_runs_on_its_engine_and_stops_growing_at_max_memory():
  solver = mccfrb.PublicSamplingSolver(G6, baseline="predictive", seed=0,
                                       max_memory=2**22)
  assert solver.representation == "engine"
  with pytest.warns(RuntimeWarning, match="infoset table reached "
                    "max_memory=") as said:
    solver.run(20)
  # Once per table that froze.
  assert len([w for w in said if "infoset table" in str(w.message)]) == 1
  memory = solver.memory()
  assert memory["frozen"] and memory["bytes"] <= 2**22
  assert memory["dropped"] > 0 and memory["histories"] > 0
  assert hashed.check_rows(solver._backend.tables.args(), 6) == 0
  check_unstored_infosets_play_uniform(solver)


@pytest.mark.parametrize("kwargs,message", [
    (dict(baseline="oracle"), "exact values of every history"),
    (dict(threads=2), "one thread on an engine"),
    (dict(partition="common_knowledge"), "observer partition"),
])
def test_what_an_engine_cannot_do_is_refused_in_one_line(kwargs, message):
  with pytest.raises(ValueError, match=message):
    mccfrb.PublicSamplingSolver(G4, representation="engine", **kwargs)


def test_tree_studies_say_so_on_an_engine():
  solver = mccfrb.PublicSamplingSolver(G4, representation="engine")
  for study in (lambda: solver.sample_estimates(4),
                solver.public_state_probabilities,
                lambda: solver.conditional_variance(2),
                lambda: solver.public_tree):
    with pytest.raises(ValueError, match="needs the compiled tree"):
      study()


_EACH_ITS_OWN = """
import mccfrb
from mccfrb.games.engines import compiled
from mccfrb.kernels import exact
from mccfrb.kernels import public
mccfrb.PublicSamplingSolver("liars_dice(numdice=1,dice_sides=3)",
                            representation="engine", seed=0).run(2)
print(len(exact.node_values.signatures),
      len(exact.regret_matching.signatures))
engine_steps = (public.engine_down, public._group_xi, compiled.player,
                compiled.apply)
before = sum(len(f.signatures) for f in engine_steps)
mccfrb.PublicSamplingSolver("kuhn_poker", representation="tree",
                            seed=0).run(2)
print(sum(len(f.signatures) for f in engine_steps) - before,
      len(public.episodes.signatures))
"""


@pytest.mark.slow
def test_each_representation_types_only_its_own_code(tmp_path):
  """The one episode (kernels/public.py `episodes`), from an empty numba
  cache: on an engine it types none of the tree's code (the oracle
  baseline's exact values), and on a tree none of the engine's way down
  (nor the compiled tree's engine functions, which a tree kernel that
  typed the engine branches would compile); a tree's training compiles
  one kernel, not its frozen variant for studies too."""
  out = printed_with_empty_cache(_EACH_ITS_OWN, tmp_path)
  assert out == ["0", "0", "0", "2"], out
