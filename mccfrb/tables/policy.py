"""Conversions between mccfrb strategy tables and OpenSpiel policies.

An mccfrb table is a float64 array of shape (num_infosets, max_actions):
row I holds the probabilities of the legal actions of infoset I in the order
of `GameTree.infoset_actions[I]`; padding columns are 0. Infosets a policy
does not mention get the uniform policy.
"""

import functools

import numpy as np
import pyspiel
from open_spiel.python import policy as os_policy


def uniform_table(tree):
  """The uniform strategy of every infoset as an mccfrb table."""
  table = tree.legal_mask().astype(np.float64)
  return table / tree.infoset_num_actions[:, None]


def validate_table(tree, table, atol=1e-6):
  """Returns `table` as float64 after checking it is a strategy of `tree`.

  Raises:
    ValueError: wrong shape, non-finite or negative entries, mass on padding
      columns, or rows that do not sum to 1 within `atol`.
  """
  table = np.asarray(table, dtype=np.float64)
  expected = (tree.num_infosets, tree.max_actions)
  if table.shape != expected:
    raise ValueError(f"strategy table has shape {table.shape}; this game's "
                     f"tree needs (num_infosets, max_actions) = {expected}.")
  if not np.all(np.isfinite(table)) or np.any(table < 0):
    raise ValueError("strategy table has negative or non-finite entries.")
  if np.any(table[~tree.legal_mask()] != 0):
    raise ValueError("strategy table puts mass on columns beyond an "
                     "infoset's number of legal actions.")
  sums = table.sum(axis=1)
  bad = np.flatnonzero(np.abs(sums - 1.0) > atol)
  if bad.size:
    raise ValueError(f"strategy table row {bad[0]} ({tree.infoset_key(bad[0])!r})"
                     f" sums to {sums[bad[0]]}, not 1.")
  return table


def _table_from_pairs(tree, lookup):
  """Fills a table from `lookup(key) -> iterable of (action, prob) or None`."""
  table = uniform_table(tree)
  keys = tree.infoset_strings()
  for i in range(tree.num_infosets):
    pairs = lookup(keys[i])
    if pairs is None:
      continue
    if isinstance(pairs, dict):
      pairs = pairs.items()
    pairs = list(pairs)
    if not pairs:
      continue
    n = tree.infoset_num_actions[i]
    column = {int(a): j for j, a in enumerate(tree.infoset_actions[i, :n])}
    row = np.zeros(tree.max_actions)
    for a, p in pairs:
      if int(a) not in column:
        if p != 0:
          raise ValueError(f"policy gives probability {p} to action {a}, "
                           f"illegal at {keys[i]!r}.")
        continue
      row[column[int(a)]] = p
    table[i] = row
  return table


@functools.lru_cache(maxsize=4)
def _representative_states(game_string):
  """{information state string: one pyspiel state of it}, by walking the game."""
  game = pyspiel.load_game(game_string)
  found, stack = {}, [game.new_initial_state()]
  while stack:
    state = stack.pop()
    if state.is_terminal():
      continue
    if state.is_chance_node():
      stack.extend(state.child(a) for a, _ in state.chance_outcomes())
      continue
    found.setdefault(state.information_state_string(), state)
    stack.extend(state.child(a) for a in state.legal_actions())
  return found


def _check_known_infostates(tree, keys, what, game=None):
  """Raises ValueError if `keys` name information states `tree` lacks."""
  known = set(tree.infoset_strings())
  unknown = [k for k in keys if k not in known]
  if unknown:
    where = f"{game}" if game is not None else "the compiled game"
    raise ValueError(
        f"{what} names {len(unknown)} information states that {where} does "
        f"not have, e.g. {unknown[0]!r}: it was made for another game. Pass "
        "a policy of this game.")


def _state_lookup(policy, game):
  states = _representative_states(str(game))
  return lambda key: policy.get_state_policy(states[key]) if key in states else None


def table_from_policy(tree, policy, game=None):
  """Converts a policy into an mccfrb table for `tree`.

  Args:
    tree: the compiled `GameTree` of the game the policy plays.
    policy: an mccfrb table (array), an `open_spiel.python.policy.
      TabularPolicy` or any other `open_spiel.python.policy.Policy` (asked
      for one state of every infoset, found by walking the game once), a
      `pyspiel.TabularPolicy` or other `pyspiel.Policy`, or a dict
      {information state string: [(action, prob), ...]}.
    game: the `pyspiel.Game`; used for pyspiel policies other than
      `pyspiel.TabularPolicy` (OpenSpiel's C++ solvers' policies), which
      are then asked for one state of every infoset, found by walking the
      game once (cached for the 4 most recent games). Without it they are
      asked by information state string, which some of them (external
      sampling's) do not answer.

  Returns:
    The validated float64 table; infosets the policy does not cover are
    uniform.

  Raises:
    TypeError: an unsupported policy type.
    ValueError: the policy is not a valid strategy of this game, for example
      a `TabularPolicy` or dict of another game (it names information
      states this game does not have).
  """
  if isinstance(policy, np.ndarray):
    return validate_table(tree, policy)
  if isinstance(policy, os_policy.TabularPolicy):
    lookup = policy.state_lookup
    _check_known_infostates(tree, lookup, f"This TabularPolicy (of "
                            f"{policy.game})", game)
    rows = np.array([lookup.get(k, -1) for k in tree.infoset_strings()],
                    dtype=np.int64)
    table = uniform_table(tree)
    found = rows >= 0
    cols = np.where(tree.infoset_actions >= 0, tree.infoset_actions, 0)
    probs = policy.action_probability_array[rows[found][:, None], cols[found]]
    probs[tree.infoset_actions[found] < 0] = 0.0
    table[found] = probs
    return validate_table(tree, table)
  if isinstance(policy, pyspiel.TabularPolicy):
    table = policy.policy_table()
    _check_known_infostates(tree, table, "This pyspiel.TabularPolicy", game)
    return validate_table(tree, _table_from_pairs(tree, table.get))
  if isinstance(policy, pyspiel.Policy):
    if game is not None:
      # State queries work for every pyspiel policy; an infostate-string query
      # that a policy does not implement prints "OpenSpiel exception: ..."
      # from C++ before raising, so it is tried only without a game.
      return validate_table(tree, _table_from_pairs(tree, _state_lookup(policy, game)))
    try:
      return validate_table(tree, _table_from_pairs(tree, policy.get_state_policy))
    except pyspiel.SpielError:
      raise TypeError(
          "This pyspiel policy answers state queries only; pass game= so "
          "mccfrb can find one state per infoset.") from None
  if isinstance(policy, os_policy.Policy):
    # Any Python policy (UniformRandomPolicy, an engine solver's
    # EnginePolicy, a user's subclass): asked for one state of every infoset.
    if game is None:
      game = policy.game
    states = _representative_states(str(game))
    return validate_table(tree, _table_from_pairs(
        tree, lambda key: (policy.action_probabilities(states[key])
                           if key in states else None)))
  if isinstance(policy, dict):
    _check_known_infostates(tree, policy, "This policy dict", game)
    return validate_table(tree, _table_from_pairs(tree, policy.get))
  raise TypeError(
      f"Unsupported policy type {type(policy).__name__}: pass an mccfrb table, "
      "an open_spiel TabularPolicy, a pyspiel policy or a dict. Other Python "
      "policies can be tabulated with open_spiel.python.policy."
      "tabular_policy_from_callable first.")


class TabularPolicyConverter:
  """Fills OpenSpiel `TabularPolicy` objects from mccfrb tables.

  Building a `TabularPolicy` enumerates every state of the game, so the
  converter builds one template and the row/column index once and copies the
  template for every conversion.
  """

  def __init__(self, game, tree):
    self._template = os_policy.TabularPolicy(game)
    lookup = self._template.state_lookup
    keys = tree.infoset_strings()
    missing = [k for k in keys if k not in lookup]
    if missing:
      raise ValueError(f"{len(missing)} infosets of the compiled tree are not in "
                       f"OpenSpiel's TabularPolicy, e.g. {missing[0]!r}.")
    self._rows = np.array([lookup[k] for k in keys], dtype=np.int64)
    legal = tree.infoset_actions >= 0
    self._r = np.broadcast_to(self._rows[:, None], legal.shape)[legal]
    self._c = tree.infoset_actions[legal]
    self._legal = legal

  @property
  def state_lookup(self):
    """OpenSpiel's {information state string: row} of the policies."""
    return self._template.state_lookup

  def __call__(self, table):
    """A new `TabularPolicy` with the rows of the tree's infosets from `table`.

    Rows of states the tree does not contain keep OpenSpiel's uniform policy.
    """
    out = self._template.__copy__(copy_action_probability_array=True)
    out.action_probability_array[self._rows] = 0.0
    out.action_probability_array[self._r, self._c] = table[self._legal]
    return out


def to_tabular_policy(game, tree, table):
  """An `open_spiel.python.policy.TabularPolicy` holding `table`."""
  return TabularPolicyConverter(game, tree)(validate_table(tree, table))


def to_pyspiel_dict(tree, table):
  """{information state string: [(action, prob), ...]} for `pyspiel` calls."""
  out = {}
  for i, key in enumerate(tree.infoset_strings()):
    n = tree.infoset_num_actions[i]
    out[key] = [
        (int(a), float(p)) for a, p in zip(tree.infoset_actions[i, :n], table[i, :n])]
  return out


def to_pyspiel_policy(tree, table):
  """A `pyspiel.TabularPolicy`, accepted by `pyspiel.exploitability`."""
  return pyspiel.TabularPolicy(to_pyspiel_dict(tree, table))
