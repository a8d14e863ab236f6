"""Keys that generalise (mccfrb/games/keys.py, the engines' situation_hash)
and the baseline registry (mccfrb/kernels/baselines.py)."""

import numpy as np
import pytest

import mccfrb
from mccfrb.games import keys
from mccfrb.games.engines import check
from mccfrb.kernels import baselines

# Small instances of every engine, enumerated whole.
ENGINE_GAMES = [
    "goofspiel(num_cards=4,imp_info=True,points_order=random,"
    "returns_type=point_difference)",
    "goofspiel(num_cards=4)",
    "goofspiel(num_cards=4,imp_info=True,points_order=descending,"
    "returns_type=win_loss)",
    "liars_dice(numdice=1,dice_sides=4)",
    "liars_dice(numdice=2,dice_sides=2)",
    "dark_hex(num_rows=2,num_cols=2)",
    "dark_hex(num_rows=2,num_cols=2,gameversion=adh)",
]


def _first_split(a, b):
  """check._first_split: positions where a class of `a` straddles `b`."""
  return check._first_split(a, b)  # pylint: disable=protected-access


def _ancestors_differ(labels, parents, depth):
  """True when no node's label equals one of its ancestors' labels."""
  nodes = np.arange(len(labels))
  anc = parents.copy()
  for _ in range(depth):
    live = anc >= 0
    if not live.any():
      return True
    if np.any(labels[nodes[live]] == labels[anc[live]]):
      return False
    anc[live] = parents[anc[live]]
  return True


@pytest.fixture(scope="module", params=ENGINE_GAMES)
def engine_and_tree(request):
  game = mccfrb.load_game(request.param)
  tree = mccfrb.compile_tree(game)
  engine = mccfrb.games.engines.engine_for(game)
  return game, tree, check.enumerate_tree(engine, max_nodes=tree.num_nodes)


def test_equal_situations_have_the_same_game_below(engine_and_tree):
  """An engine's situation key never joins two histories whose subtrees
  differ (legal moves, chance probabilities, returns below: the tree's
  shape labels), and it does join histories reached by different paths."""
  _, tree, walked = engine_and_tree
  situation = check.key_labels(walked.situation_key)
  shape = keys.shape_ids(tree)
  assert _first_split(situation, shape) is None
  assert situation.max() + 1 < tree.num_nodes  # It generalises.


def test_no_situation_or_public_key_repeats_along_a_path(engine_and_tree):
  """An episode must never read a cell it wrote below (unbiasedness):
  no key repeats along a root-to-leaf path."""
  game, tree, walked = engine_and_tree
  parents = tree.node_parents()
  for labels in (check.key_labels(walked.situation_key),
                 keys.public_ids(tree, game), keys.shape_ids(tree)):
    assert _ancestors_differ(labels, parents, tree.max_depth)


def test_the_trees_situation_ids_are_the_engines(engine_and_tree):
  game, tree, walked = engine_and_tree
  np.testing.assert_array_equal(keys.situation_ids(tree, game),
                                check.key_labels(walked.situation_key))


def test_shape_ids_join_exactly_the_nodes_with_the_same_game_below():
  """Leduc (no engine): the shape labels are a partition in which the
  children of equal nodes are equal, terminals agree on the return, and
  private cards that do not matter yet are merged."""
  tree = mccfrb.compile_tree("leduc_poker")
  shape = keys.shape_ids(tree)
  first = {}
  for n, label in enumerate(shape.tolist()):
    m = first.setdefault(label, n)
    assert tree.node_kind[n] == tree.node_kind[m]
    assert tree.num_children[n] == tree.num_children[m]
    if tree.node_kind[n] == 2:
      assert tree.utility[n] == tree.utility[m]
    s, t = tree.child_start[n], tree.child_start[m]
    for j in range(tree.num_children[n]):
      assert shape[s + j] == shape[t + j]
  assert shape.max() + 1 < tree.num_nodes
  assert keys.situation_ids(tree, mccfrb.load_game("leduc_poker")).tolist() \
      == shape.tolist()


def test_observation_ids_key_both_players_observations():
  game = mccfrb.load_game("leduc_poker")
  tree = mccfrb.compile_tree(game)
  ids = keys.observation_ids(tree, game)
  assert 1 < ids.max() + 1 < tree.num_nodes
  assert _ancestors_differ(ids, tree.node_parents(), tree.max_depth)
  with pytest.raises(ValueError, match="no observation strings"):
    keys.check_observation(mccfrb.load_game("liars_dice"))


def test_every_kind_is_consistent_and_every_list_derives_from_the_registry():
  assert set(mccfrb.BASELINES) == set(baselines.BASELINES)
  for name, entry in baselines.BASELINES.items():
    assert baselines.serves(name), name
    assert entry.key in baselines.KEYS and entry.rule in baselines.RULES
  assert mccfrb.solvers.outcome.ENGINE_BASELINES == baselines.kinds("engine")
  assert "oracle" not in baselines.kinds("engine")
  assert "situation" in baselines.kinds("engine")


def test_an_inconsistent_entry_fails_with_its_name():
  bad = {"wrong": baselines.Baseline("situation", baselines.OWNER_PLAYER0,
                                     "predictive", None, "")}
  with pytest.raises(ValueError, match="'wrong'.*predictive.*history"):
    baselines._validate(bad)  # pylint: disable=protected-access
  bad = {"owner": baselines.Baseline("infoset", baselines.OWNER_PLAYER0,
                                     "corrected", None, "")}
  with pytest.raises(ValueError, match="'owner'"):
    baselines._validate(bad)  # pylint: disable=protected-access


@pytest.mark.parametrize("kwargs,message", [
    (dict(game="kuhn_poker", representation="grown", baseline="situation"),
     "baseline='situation' needs the situation.*on a grown tree use one of"),
    (dict(game="liars_dice(numdice=1,dice_sides=3)", representation="engine",
          baseline="observation"),
     "needs OpenSpiel's observation strings.*on an engine use one of"),
    (dict(game="liars_dice(numdice=1,dice_sides=3)", representation="tree",
          baseline="observation"), "no observation strings"),
    (dict(game="kuhn_poker", baseline="nope"), "Unknown baseline"),
])
def test_a_key_the_representation_cannot_serve_is_refused_in_one_line(
    kwargs, message):
  with pytest.raises(ValueError, match=message) as info:
    mccfrb.MCCFRbSolver(**kwargs)
  assert "\n" not in str(info.value)
