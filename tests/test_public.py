"""Public states: counts, tree properties, CSR layout, observer strings."""

import collections
import functools

import numpy as np
import pytest
from open_spiel.python import observation as observation_lib

import mccfrb
from mccfrb.games import public
from mccfrb import reference
from mccfrb.games import tree as tree_lib
from mccfrb.games.public import PublicTree
from mccfrb.games.public import public_states

from tests.conftest import GAMES
from tests.conftest import GOOFSPIEL4

PARTITIONS = ("observer", "common_knowledge")
# Games with an OpenSpiel public observer; matching_pennies has none.
OBSERVED = ("kuhn_poker", "leduc_poker", GOOFSPIEL4)
CASES = [(g, p) for g in GAMES for p in PARTITIONS
         if g in OBSERVED or p == "common_knowledge"]


@functools.lru_cache(maxsize=None)
def _tree(name):
  return mccfrb.compile_tree(name)


@functools.lru_cache(maxsize=None)
def _public(name, partition):
  return public_states(_tree(name), partition, game=name)


def _parents(tree):
  """{child: parent} by a plain loop over the tree's child ranges."""
  parent = {}
  for n in range(tree.num_nodes):
    start = int(tree.child_start[n])
    for c in range(start, start + int(tree.num_children[n])):
      parent[c] = n
  return parent


def _nonterminal_pairs(name, first, second):
  """Distinct (first, second) public-state pairs over non-terminal nodes."""
  tree = _tree(name)
  keep = tree.node_kind != tree_lib.TERMINAL
  a = _public(name, first).node_public_state[keep]
  b = _public(name, second).node_public_state[keep]
  return set(zip(a.tolist(), b.tolist()))


@pytest.mark.parametrize("partition", PARTITIONS)
@pytest.mark.parametrize("name,expected", [("kuhn_poker", 6),
                                           ("leduc_poker", 193)])
def test_non_terminal_public_state_counts(name, expected, partition):
  pt = _public(name, partition)
  assert pt.partition == partition
  assert int(np.sum(~pt.ps_terminal)) == expected


@pytest.mark.parametrize("name", ["kuhn_poker", "leduc_poker"])
def test_partitions_agree_on_non_terminal_nodes(name):
  pairs = _nonterminal_pairs(name, "observer", "common_knowledge")
  observer_states = {a for a, _ in pairs}
  knowledge_states = {b for _, b in pairs}
  # Equal partitions: the pairs are a bijection between the two state sets.
  assert len(pairs) == len(observer_states) == len(knowledge_states)


def test_common_knowledge_strictly_refines_observer_on_goofspiel():
  pairs = _nonterminal_pairs(GOOFSPIEL4, "common_knowledge", "observer")
  knowledge_states = {a for a, _ in pairs}
  observer_states = {b for _, b in pairs}
  # Every common-knowledge state lies inside one observer state.
  assert len(pairs) == len(knowledge_states)
  # Measured: 2097 common-knowledge vs 633 observer non-terminal public
  # states (a tie reveals both bids to the players, not to the observer).
  assert len(knowledge_states) > len(observer_states)
  assert (len(knowledge_states), len(observer_states)) == (2097, 633)


@pytest.mark.parametrize("name,partition", CASES)
def test_infosets_lie_inside_one_public_state(name, partition):
  tree, pt = _tree(name), _public(name, partition)
  states = collections.defaultdict(set)
  for n in range(tree.num_nodes):
    if tree.node_kind[n] == tree_lib.DECISION:
      states[int(tree.node_infoset[n])].add(int(pt.node_public_state[n]))
  assert len(states) == tree.num_infosets
  assert all(len(s) == 1 for s in states.values())


@pytest.mark.parametrize("name,partition", CASES)
def test_parents_lie_in_one_public_state(name, partition):
  tree, pt = _tree(name), _public(name, partition)
  parent_states = collections.defaultdict(set)
  for child, parent in _parents(tree).items():
    parent_states[int(pt.node_public_state[child])].add(
        int(pt.node_public_state[parent]))
  root_state = int(pt.node_public_state[0])
  assert root_state not in parent_states
  assert len(parent_states) == pt.num_public_states - 1
  for s, parents in parent_states.items():
    assert parents == {int(pt.ps_parent[s])}


@pytest.mark.parametrize("name,partition", CASES)
def test_csr_layout_is_consistent(name, partition):
  tree, pt = _tree(name), _public(name, partition)
  num = pt.num_public_states
  assert isinstance(pt, PublicTree)
  for field, dtype in [("node_public_state", np.int32),
                       ("ps_history_start", np.int32),
                       ("ps_histories", np.int32), ("ps_parent", np.int32),
                       ("ps_child_start", np.int32), ("ps_children", np.int32),
                       ("ps_depth", np.int32), ("ps_terminal", np.bool_)]:
    assert getattr(pt, field).dtype == dtype, field
  assert len(pt.node_public_state) == tree.num_nodes
  assert len(pt.ps_history_start) == len(pt.ps_child_start) == num + 1
  assert len(pt.ps_depth) == len(pt.ps_terminal) == num

  seen = np.zeros(tree.num_nodes, dtype=int)
  for s in range(num):
    histories = pt.histories(s)
    assert len(histories) > 0
    assert np.all(np.diff(histories) > 0)
    assert np.all(pt.node_public_state[histories] == s)
    seen[histories] += 1
    kinds = tree.node_kind[histories]
    assert pt.ps_terminal[s] == np.all(kinds == tree_lib.TERMINAL)
    expected_children = set()
    for h in histories:
      start = int(tree.child_start[h])
      for c in range(start, start + int(tree.num_children[h])):
        expected_children.add(int(pt.node_public_state[c]))
    children = pt.children(s).tolist()
    assert children == sorted(expected_children)
    for c in children:
      assert c > s
      assert pt.ps_parent[c] == s
      assert pt.ps_depth[c] == pt.ps_depth[s] + 1
  assert np.all(seen == 1)
  assert pt.histories(0).tolist() == [0]
  # Ids follow the smallest node id of each public state.
  assert np.all(np.diff(pt.ps_histories[pt.ps_history_start[:-1]]) > 0)
  assert pt.node_public_state[0] == 0 and pt.ps_parent[0] == -1
  assert pt.ps_depth[0] == 0


@pytest.mark.parametrize("name", ["kuhn_poker", "leduc_poker"])
def test_observer_states_have_equal_strings_and_depths(name):
  game = mccfrb.load_game(name)
  observation = observation_lib.make_observation(
      game, public.PUBLIC_OBSERVATION_TYPE)
  tree, pt = _tree(name), _public(name, "observer")
  key_of_state = {}
  state_of_key = {}
  for n, history in enumerate(reference.node_histories(tree)):
    state = game.new_initial_state()
    for action in history:
      state.apply_action(action)
    key = (len(history), observation.string_from(state, 0))
    s = int(pt.node_public_state[n])
    assert key_of_state.setdefault(s, key) == key
    assert state_of_key.setdefault(key, s) == s
    assert pt.ps_depth[s] == len(history)


def test_auto_picks_observer_or_common_knowledge():
  assert public_states("kuhn_poker").partition == "observer"
  assert public_states("matching_pennies").partition == "common_knowledge"


def test_unknown_partition_raises():
  with pytest.raises(ValueError, match=r"'public'.*'auto'.*'observer'.*"
                     r"'common_knowledge'"):
    public_states("kuhn_poker", partition="public")


def test_tree_without_game_raises():
  with pytest.raises(ValueError, match=r"game="):
    public_states(_tree("kuhn_poker"))


def test_tree_of_another_game_raises():
  with pytest.raises(ValueError, match=r"does not match"):
    public_states(_tree("kuhn_poker"), game="leduc_poker")


def test_observer_without_public_observer_raises():
  with pytest.raises(ValueError, match=r"no public observer"):
    public_states(_tree("matching_pennies"), "observer",
                  game="matching_pennies")


def test_straddled_infoset_is_rejected():
  tree = _tree("kuhn_poker")
  depth = np.zeros(tree.num_nodes, dtype=np.int32)
  # Every node its own public state: the infosets straddle several.
  with pytest.raises(ValueError, match=r"Infoset 0 '0' straddles"):
    # pylint: disable-next=protected-access
    public._build(tree, depth, np.arange(tree.num_nodes), "observer")


def test_public_states_that_are_not_a_tree_are_rejected():
  tree, pt = _tree("kuhn_poker"), _public("kuhn_poker", "common_knowledge")
  parent = _parents(tree)
  labels = pt.node_public_state.astype(np.int64)
  terminals = np.flatnonzero(tree.node_kind == tree_lib.TERMINAL)
  # Merge two terminal public states whose parents differ.
  a = terminals[0]
  b = next(t for t in terminals
           if labels[parent[t]] != labels[parent[a]])
  labels[labels == labels[b]] = labels[a]
  depth = pt.ps_depth[pt.node_public_state]
  with pytest.raises(ValueError, match=r"do not form a tree"):
    # pylint: disable-next=protected-access
    public._build(tree, depth, labels, "common_knowledge")


@pytest.mark.parametrize("spec", [
    "goofspiel(num_cards=3,imp_info=True)",
    "goofspiel(num_cards=4,imp_info=True,points_order=random,"
    "returns_type=point_difference)",
    "goofspiel(num_cards=4,imp_info=True,points_order=descending)"])
def test_observer_states_from_the_engine_equal_the_pyspiel_walk(
    spec, monkeypatch):
  """Goofspiel's observer partition comes from the native engine's public
  keys (fast); it must equal the partition of the pyspiel walk."""
  tree = mccfrb.compile_tree(spec)
  assert public._engine_observer(mccfrb.load_game(spec), tree) is not None  # pylint: disable=protected-access
  fast = public.public_states(tree, "observer", game=spec)
  monkeypatch.setattr(public, "_engine_observer", lambda game, tree: None)
  slow = public.public_states(tree, "observer", game=spec)
  assert fast.num_public_states == slow.num_public_states > 1
  for field in fast._fields:
    a, b = getattr(fast, field), getattr(slow, field)
    if isinstance(a, np.ndarray):
      np.testing.assert_array_equal(a, b, err_msg=field)
    else:
      assert a == b, field
