"""The compiled tree agrees with an independent pyspiel traversal."""

import numpy as np
import pyspiel
import pytest

import mccfrb
from mccfrb import reference
from mccfrb.games import tree as tree_lib
from tests.conftest import GOOFSPIEL4


def _walk(game):
  """{history: (kind, payload)} from pyspiel, independently of compile_tree."""
  out = {}
  stack = [game.new_initial_state()]
  while stack:
    state = stack.pop()
    h = tuple(state.history())
    if state.is_terminal():
      out[h] = ("terminal", state.returns()[0])
    elif state.is_chance_node():
      outcomes = state.chance_outcomes()
      out[h] = ("chance", dict(outcomes))
      stack.extend(state.child(a) for a, _ in outcomes)
    else:
      out[h] = ("decision", state.information_state_string())
      stack.extend(state.child(a) for a in state.legal_actions())
  return out


def test_tree_matches_pyspiel_traversal(game_name):
  game = mccfrb.load_game(game_name)
  tree = mccfrb.compile_tree(game)
  walked = _walk(game)
  histories = reference.node_histories(tree)
  edge_actions = tree.edge_actions()
  assert tree.num_nodes == len(walked)
  assert set(histories) == set(walked)
  assert np.sum(tree.node_kind == tree_lib.TERMINAL) == sum(
      1 for k, _ in walked.values() if k == "terminal")
  infoset_strings = {p for k, p in walked.values() if k == "decision"}
  assert tree.num_infosets == len(infoset_strings)
  for n, h in enumerate(histories):
    kind, payload = walked[h]
    if kind == "terminal":
      assert tree.node_kind[n] == tree_lib.TERMINAL
      assert tree.utility[n] == payload
    elif kind == "chance":
      assert tree.node_kind[n] == tree_lib.CHANCE
      s, c = tree.child_start[n], tree.num_children[n]
      for child in range(s, s + c):
        assert tree.edge_prob[child] == payload[edge_actions[child]]
    else:
      assert tree.node_kind[n] == tree_lib.DECISION
      # Same infoset id <=> same information_state_string.
      assert tree.infoset_key(tree.node_infoset[n]) == payload
  # Children are contiguous and numbered after their parent.
  internal = tree.node_kind != tree_lib.TERMINAL
  assert np.all(tree.child_start[internal] > np.flatnonzero(internal))


def test_infoset_actions_are_legal_actions(game_name):
  game = mccfrb.load_game(game_name)
  tree = mccfrb.compile_tree(game)
  keys = tree.infoset_index()
  state = game.new_initial_state()
  while not state.is_terminal():
    if state.is_chance_node():
      state.apply_action(state.chance_outcomes()[0][0])
      continue
    i = keys[state.information_state_string()]
    n = tree.infoset_num_actions[i]
    assert list(tree.infoset_actions[i, :n]) == state.legal_actions()
    assert tree.infoset_player[i] == state.current_player()
    state.apply_action(state.legal_actions()[-1])


def test_size_guard_names_how_far_it_got():
  with pytest.raises(ValueError, match=r"max_nodes=1000.*stopped after \d+ nodes"):
    mccfrb.compile_tree("leduc_poker", max_nodes=1000)


@pytest.mark.parametrize("bad", [0, -5, 2.5, 2**31])
def test_bad_max_nodes(bad):
  with pytest.raises(ValueError, match="max_nodes"):
    mccfrb.compile_tree("kuhn_poker", max_nodes=bad)


def test_tree_is_arrays_only():
  tree = mccfrb.compile_tree("kuhn_poker")
  for name, value in tree._asdict().items():
    if name == "returns":  # Two-player zero-sum: no returns table.
      assert value is None
      continue
    assert isinstance(value, (np.ndarray, int, float)), name
  general = mccfrb.compile_tree("kuhn_poker(players=3)")
  assert general.returns.dtype == np.float64
  assert general.returns.shape == (general.num_nodes, 3)
  assert tree.infoset_key_data.dtype == np.uint8
  assert tree.max_depth == 6  # chance, chance, p0, p1, p0, terminal... + root


# Walks: apply/undo against cloning.

# One small configuration of every game in UNDO_GAMES.
UNDO_CASES = ("kuhn_poker", "tic_tac_toe", "mnk(m=3,n=2,k=3)",
              "nim(pile_sizes=1;2;3)",
              "battleship(board_width=2,board_height=2,ship_sizes=[1],"
              "ship_values=[1],num_shots=2)")


def _assert_trees_equal(a, b):
  for name in a._fields:
    x, y = getattr(a, name), getattr(b, name)
    assert np.array_equal(x, y), name
    assert np.asarray(x).dtype == np.asarray(y).dtype, name


def test_every_undo_game_is_checked_against_cloning():
  names = {mccfrb.load_game(g).get_type().short_name for g in UNDO_CASES}
  assert names == tree_lib.UNDO_GAMES


@pytest.mark.parametrize("game_name", UNDO_CASES)
def test_undo_walk_equals_clone_walk(game_name):
  _assert_trees_equal(mccfrb.compile_tree(game_name, walk="undo"),
                      mccfrb.compile_tree(game_name, walk="clone"))


def test_auto_walk_equals_clone_walk(game_name):
  _assert_trees_equal(mccfrb.compile_tree(game_name),
                      mccfrb.compile_tree(game_name, walk="clone"))


def test_bad_walk():
  with pytest.raises(ValueError, match="walk"):
    mccfrb.compile_tree("kuhn_poker", walk="fast")


def _preorder(tree):
  """Node ids in depth-first preorder (children in order)."""
  order, stack = [], [0]
  while stack:
    n = stack.pop()
    order.append(n)
    s, c = int(tree.child_start[n]), int(tree.num_children[n])
    stack.extend(range(s + c - 1, s - 1, -1))
  return np.array(order)


def test_numbering_expands_nodes_in_preorder(game_name):
  # The contract the kernels and reference_public rely on: the children of
  # the nodes, taken in depth-first preorder, get consecutive ids from 1 on;
  # infoset ids are numbered by first appearance in that order.
  tree = mccfrb.compile_tree(game_name)
  order = _preorder(tree)
  inner = order[tree.num_children[order] > 0]
  counts = tree.num_children[inner].astype(np.int64)
  assert np.array_equal(tree.child_start[inner], 1 + np.cumsum(counts) - counts)
  decision = order[tree.node_kind[order] == tree_lib.DECISION]
  _, first = np.unique(tree.node_infoset[decision], return_index=True)
  assert np.array_equal(tree.node_infoset[decision][np.sort(first)],
                        np.arange(tree.num_infosets))


# Narrow types and derived fields.

@pytest.mark.parametrize("value, dtype", [
    (0, np.int8), (127, np.int8), (128, np.int16), (32767, np.int16),
    (32768, np.int32), (2**31 - 1, np.int32), (2**31, np.int64)])
def test_narrowest_int(value, dtype):
  assert tree_lib.narrowest_int(value) == dtype


def test_tree_is_narrow(game_name):
  tree = mccfrb.compile_tree(game_name)
  assert tree.node_kind.dtype == tree.node_player.dtype == np.int8
  assert tree.num_children.dtype == np.int8  # At most 127 children.
  assert tree.node_infoset.dtype == tree.child_start.dtype == np.int32
  assert "edge_action" not in tree._fields


@pytest.mark.parametrize("game_name", ["leduc_poker", GOOFSPIEL4])
def test_under_32_bytes_per_node(game_name):
  tree = mccfrb.compile_tree(game_name)
  assert tree.nbytes() / tree.num_nodes < 32


def _wide_matrix_game(rows):
  """A zero-sum matrix game with `rows` actions for player 0, 3 for player 1."""
  payoffs = np.random.default_rng(0).integers(-3, 4, size=(rows, 3))
  return mccfrb.load_game(pyspiel.create_matrix_game(
      "wide", "Wide", [str(i) for i in range(rows)], ["a", "b", "c"],
      payoffs.astype(float).tolist(), (-payoffs).astype(float).tolist()))


@pytest.mark.parametrize("rows, counts, actions", [
    (127, np.int8, np.int8), (128, np.int16, np.int8),  # Action ids 0..127.
    (129, np.int16, np.int16), (300, np.int16, np.int16)])
def test_integers_take_the_narrowest_type_that_fits(rows, counts, actions):
  tree = mccfrb.compile_tree(_wide_matrix_game(rows))
  assert tree.max_actions == rows == tree.num_children[0]
  assert tree.num_children.dtype == counts
  assert tree.infoset_actions.dtype == actions
  assert list(tree.infoset_actions[0]) == list(range(rows))


def test_kernels_agree_on_narrow_and_wide_types():
  # 300 actions need int16 counts; the same tree with int32 counts must give
  # the same exploitability (also equal to OpenSpiel's) and CFR tables.
  game = _wide_matrix_game(300)
  narrow = mccfrb.compile_tree(game)
  wide = narrow._replace(num_children=narrow.num_children.astype(np.int32))
  table = mccfrb.uniform_table(narrow)
  value = mccfrb.exploitability(narrow, table)
  assert value == mccfrb.exploitability(wide, table)
  assert value == pytest.approx(pyspiel.exploitability(
      game, mccfrb.to_pyspiel_policy(narrow, table)), abs=1e-12)
  tables = []
  for tree in (narrow, wide):
    solver = mccfrb.CFRSolver(game, variant="cfr+", tree=tree)
    solver.run(10)
    tables.append(solver.average_policy_table())
  assert np.array_equal(tables[0], tables[1])


def test_edge_actions_come_from_infosets_and_chance_children(game_name):
  tree = mccfrb.compile_tree(game_name)
  chance = tree.node_kind == tree_lib.CHANCE
  assert len(tree.chance_actions) == tree.num_children[chance].sum()
  actions, parents = tree.edge_actions(), tree.node_parents()
  assert actions[0] == -1 and parents[0] == -1
  for child in range(1, tree.num_nodes):
    parent = parents[child]
    assert tree.child_start[parent] <= child < (tree.child_start[parent]
                                                + tree.num_children[parent])
    if tree.node_kind[parent] == tree_lib.DECISION:
      j = child - tree.child_start[parent]
      assert actions[child] == tree.infoset_actions[tree.node_infoset[parent], j]


def test_infoset_keys_cross_blocks():
  tree = mccfrb.compile_tree(GOOFSPIEL4)
  assert tree.num_infosets > 3 * tree_lib.KEYS_PER_BLOCK
  keys = tree.infoset_strings()
  assert len(set(keys)) == tree.num_infosets
  for i in range(0, tree.num_infosets, 37):
    assert tree.infoset_key(i) == keys[i]
  assert tree.infoset_key(tree.num_infosets - 1) == keys[-1]
  assert tree.infoset_index() == {k: i for i, k in enumerate(keys)}
  # Compressed: far fewer bytes than the strings.
  assert tree.infoset_key_data.nbytes < sum(map(len, keys)) / 4
