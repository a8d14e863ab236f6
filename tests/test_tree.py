"""The compiled tree agrees with an independent pyspiel traversal."""

import numpy as np
import pyspiel
import pytest

import mccfrb
from mccfrb import reference
from mccfrb import tree as tree_lib


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
    assert isinstance(value, (np.ndarray, int, float)), name
  assert tree.infoset_key_data.dtype == np.uint8
  assert tree.max_depth == 6  # chance, chance, p0, p1, p0, terminal... + root
