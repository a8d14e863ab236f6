"""A pure-Python reference of public-state sampling, for tests.

It walks `pyspiel` states, never the compiled tree: public states are the
histories of equal depth with equal public observation strings (OpenSpiel's
`IIGObservationType(perfect_recall=True, public_info=True,
private_info=NONE)`), their histories in lexicographic order, as the kernel
orders them. Random numbers are the kernel's (one uniform per visited public
state with non-terminal children) and the arithmetic is written in the
kernel's order, so the tables agree bit for bit.
"""

import collections

from open_spiel.python import observation
import pyspiel

from mccfrb import reference


class ReferencePublicSampling(reference.ReferenceMCCFRb):
  """Public-state sampling written from docs/pages/algorithms.md, over pyspiel states.

  Options as `mccfrb.PublicSamplingSolver` (baseline none, history,
  predictive or oracle; regret rm or rm+; averaging; sampling; epsilon;
  baseline_decay).
  """

  def __init__(self, game, baseline, regret="rm+", averaging="stochastic",
               sampling="uniform", epsilon=0.6, baseline_decay=None):
    super().__init__(game, baseline, epsilon=epsilon, averaging=averaging,
                     baseline_decay=baseline_decay, regret=regret)
    self.sampling = sampling
    self._observer = observation.make_observation(
        game, pyspiel.IIGObservationType(
            perfect_recall=True, public_info=True,
            private_info=pyspiel.PrivateInfoType.NONE))

  def public_key(self, state):
    return (len(state.history()), self._observer.string_from(state, 0))

  def iteration(self, t, rng):
    """Iteration t: one episode per player."""
    self._t = t
    for player in (0, 1):
      if self.baseline == "oracle":
        self._compute_oracle()
      self.episode(t, player, rng)

  def _b(self, history, i):
    if self.baseline == "none":
      return 0.0
    if self.baseline == "oracle":
      return self._to_player(self.oracle_values[history], i)
    return self._to_player(self.edge_baseline[history], i)

  def _expand(self, entry):
    """sigma^t, children and their public keys of a non-terminal history."""
    state = entry["state"]
    if state.is_chance_node():
      actions, probs = zip(*state.chance_outcomes())
      entry["sigma"], entry["key"] = list(probs), None
    else:
      actions = state.legal_actions()
      entry["key"] = state.information_state_string()
      entry["sigma"] = self._strategy(entry["key"], len(actions))
    entry["actions"] = actions
    entry["children"] = [state.child(a) for a in actions]
    entry["child_keys"] = [None if c.is_terminal() else self.public_key(c)
                           for c in entry["children"]]

  def episode(self, t, i, rng=None, choices=(), frozen=False):
    """One episode for update player i.

    Args:
      t: the iteration.
      i: the update player.
      rng: source of the uniforms that pick child public states.
      choices: candidate indices forced at the first len(choices) public
        states (then `rng`, or index 0 if it is None).
      frozen: leave every table untouched.

    Returns:
      (increments {infostate: [float]} of player i, u(root), the number of
      candidates at each visited public state, the path's probability).
    """
    root = self.game.new_initial_state()
    stack = [([dict(state=root, my=1.0, opp=1.0, own=1.0)], 1.0)]
    visited, xi_of, counts, probability = [], {}, [], 1.0
    while stack:
      entries, q = stack.pop()
      visited.append((entries, q))
      candidates = collections.OrderedDict()
      for entry in entries:
        if entry["state"].is_terminal():
          continue
        self._expand(entry)
        full = entry["my"] * entry["opp"]
        for sj, key in zip(entry["sigma"], entry["child_keys"]):
          if key is None:
            continue
          candidates.setdefault(key, 0.0)
          if self.sampling == "on_policy":
            candidates[key] += full * sj
      if not candidates:
        continue
      n = len(candidates)
      if self.sampling == "chance" and not entries[0]["state"].is_chance_node():
        chosen = {key: 1.0 for key in candidates}
      else:
        total = 0.0
        for m in candidates.values():
          total += m
        if self.sampling == "on_policy" and total > 0.0:
          xi = [self.epsilon / n + (1.0 - self.epsilon) * m / total
                for m in candidates.values()]
        else:
          xi = [1.0 / n] * n
        level = len(counts)
        if level < len(choices):
          c = choices[level]
        else:
          c = reference.sample_index(xi, rng.random()) if rng else 0
        counts.append(n)
        probability *= xi[c]
        chosen = {list(candidates)[c]: xi[c]}
      xi_of.update(chosen)
      children = []
      for key, xi_key in chosen.items():
        nxt = []
        for entry in entries:
          if entry["state"].is_terminal():
            continue
          owner = (-1 if entry["key"] is None
                   else entry["state"].current_player())
          for sj, child, ck in zip(entry["sigma"], entry["children"],
                                   entry["child_keys"]):
            if ck != key:
              continue
            new = dict(state=child, my=entry["my"], opp=entry["opp"],
                       own=entry["own"])
            if owner == -1:
              new["opp"] *= sj
            elif owner == i:
              new["my"] *= sj
            else:
              new["opp"] *= sj
              new["own"] *= sj
            nxt.append(new)
        children.append((nxt, q * xi_key))
      stack.extend(reversed(children))
    increments = {}
    value = {}
    for entries, q in reversed(visited):
      marked = set()
      for entry in entries:
        state = entry["state"]
        if state.is_terminal():
          continue
        history = tuple(state.history())
        est_children = []
        v = 0.0
        for sj, a, child, ck in zip(entry["sigma"], entry["actions"],
                                    entry["children"], entry["child_keys"]):
          child_history = history + (a,)
          xi = xi_of.get(ck, 0.0)
          if ck is None:
            est = child.returns()[i]
          elif xi == 1.0:
            est = value[child_history]
          else:
            b = self._b(child_history, i)
            est = b
            if xi > 0.0:
              est = b + (value[child_history] - b) / xi
          if ck is not None and xi > 0.0:
            if not frozen and self.baseline == "history":
              self.edge_baseline[child_history] = reference.averaged(
                  self.edge_baseline[child_history],
                  self.edge_count[child_history],
                  self._to_player(value[child_history], i), self.decay)
              self.edge_count[child_history] += 1
          v += sj * est
          est_children.append(est)
        value[history] = v
        key = entry["key"]
        if key is None:
          continue
        if state.current_player() == i:
          w = entry["opp"] / q
          row = (increments.setdefault(key, [0.0] * len(est_children))
                 if frozen else self._regret_row(key, len(est_children)))
          for j, est in enumerate(est_children):
            row[j] += w * (est - v)
        elif (not frozen and self.averaging == "optimistic"
              and key not in marked):
          marked.add(key)
          avg = self.avg.setdefault(key, [0.0] * len(est_children))
          prev = self.avg_last[key]
          if self.plus:
            ow = 0.5 * (t * (t + 1) - prev * (prev + 1)) * entry["own"]
          else:
            ow = (t - prev) * entry["own"]
          for j in range(len(est_children)):
            avg[j] += ow * entry["sigma"][j]
          self.avg_last[key] = t
      for entry in entries:
        key = entry.get("key")
        if (key is None or entry["state"].current_player() != i
            or key in marked or frozen):
          continue
        marked.add(key)
        row = self.regrets[key]
        if self.plus:
          for j, r in enumerate(row):
            if r < 0.0:
              row[j] = 0.0
        if self.averaging == "stochastic":
          w = float(t) if self.plus else 1.0
          avg = self.avg.setdefault(key, [0.0] * len(row))
          for j in range(len(row)):
            avg[j] += w * (entry["my"] * entry["sigma"][j] / q)
    root_value = value[()]
    if self.baseline == "predictive" and not frozen:
      for entries, _ in reversed(visited):
        for entry in entries:
          state = entry["state"]
          if state.is_terminal():
            continue
          history = tuple(state.history())
          sigma = (entry["sigma"] if entry["key"] is None else
                   self._strategy(entry["key"], len(entry["actions"])))
          v = 0.0
          for sj, a, child, ck in zip(sigma, entry["actions"],
                                      entry["children"], entry["child_keys"]):
            child_history = history + (a,)
            if ck is None:
              est = child.returns()[i]
            else:
              if ck in xi_of:
                self.edge_baseline[child_history] = self._to_player(
                    value[child_history], i)
              est = self._to_player(self.edge_baseline[child_history], i)
            v += sj * est
          value[history] = v
    return increments, root_value, counts, probability

  def expected_increments(self, i):
    """E[regret increment] of player i under the frozen tables, exactly.

    Enumerates every public path the sampler can take, with its probability.

    Returns:
      ({infostate: [expected increment]}, number of paths, total probability).
    """
    expected = {}
    stack = [()]
    paths = 0
    total = 0.0
    while stack:
      prefix = stack.pop()
      increments, _, counts, probability = self.episode(
          self._t, i, None, choices=prefix, frozen=True)
      for level in range(len(prefix), len(counts)):
        for c in range(1, counts[level]):
          stack.append(tuple(prefix) + (0,) * (level - len(prefix)) + (c,))
      paths += 1
      total += probability
      for key, row in increments.items():
        acc = expected.setdefault(key, [0.0] * len(row))
        for j, x in enumerate(row):
          acc[j] += probability * x
    return expected, paths, total
