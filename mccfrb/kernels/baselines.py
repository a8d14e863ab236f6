"""The baselines of MCCFRb, each declared once: a key, an owner and a rule.

A baseline b(h, a) is a control variate of outcome sampling's estimate
(Schmid et al. 2019, arXiv:1809.03057, Eqs. 9-10):

    u(h, a) = b(h, a) + [a = a*] (u(h a*) - b(h, a*)) / xi(h, a*).

It keeps the estimate unbiased whatever its values, as long as they do not
depend on the episode's own sample below h (Eq. 11's proof). So a baseline
is three independent choices, and this module is the one place that makes
them (docs/pages/baselines.md):

- its **key**: what a cell b(key, a) is shared by. The finer the key, the
  closer b can come to the value v(h, a) it stands for; the coarser, the
  more often a cell learns. `KEYS` says which representations compute
  each (the kernels read it as an integer code):
    none       b = 0 (plain outcome sampling)
    infoset    the acting player's information set
    history    the history itself (a tree's edge, an engine's hash of the
               moves)
    situation  what the rest of the game depends on, not how it was
               reached: histories with equal situations have the same legal
               moves and the same returns under the same continuations
               (an engine's `situation_hash`; on a compiled tree the
               engine's key where the game has an engine, else the
               subtree's shape; docs/pages/baselines.md)
    public     the public state (an engine's `public_hash`, a compiled
               tree's public states, mccfrb.public_states)
    observation  both players' OpenSpiel observation strings, the player
               to move and the depth (grown trees; a compiled tree's, once
               at compile time)
  Every key but the history's holds the depth (an episode never reads a
  cell it wrote below, which would make b depend on its own sample).
- its **owner**: in whose utility a cell holds its value. `PLAYER0`: player
  0's (player 1 reads utility_sum - b; on general trees one block per
  player in its own utility); `UPDATE_PLAYER`: one table per update player
  in its own utility (the thesis's layout).
- its **rule**: how it learns, after its use in the episode:
    corrected   the thesis's (Kuchar 2020, Fig. 3.1): the running mean (or
                with a decay the exponential average) of the corrected value
                b + (u(h a*) - b) / xi(h a*), one visit count per infoset
    child       the running mean (or exponential average) of the child's
                estimate u(h a*) (Schmid et al.'s bootstrapped target), one
                count per cell
    predictive  b(h, a*) <- the child's value under sigma^{t+1} computed
                from the baselines below (Davis, Schmid, Bowling 2020)
    oracle      the exact values under sigma^t, recomputed before every
                episode (a compiled tree; tests and studies)
    probe       probing (Gibson et al. 2012, "Generalized sampling and
                variance in counterfactual regret minimization", Sec. 4):
                no table; at the update player's node every unsampled
                move's value is one on-policy rollout from it (sigma^t for
                both players, chance's probabilities), and the sampled
                move's is its estimate from below, not divided by xi
                (an engine)

A new kind is an entry of `BASELINES`; a new key or rule is a constant
here, its entry in `KEYS` or `RULES`, and its few lines in the kernels
(CONTRIBUTING.md, "Adding a baseline"). Every list of kinds elsewhere
(which representation runs which, which needs a second table, the
capabilities' tables) is derived from this module. An inconsistent entry
(a rule that needs a key or owner the entry does not name) fails at import
with its name.
"""

from typing import NamedTuple

import numpy as np
from numba import njit

# Keys (kernel codes).
KEY_NONE = 0
KEY_INFOSET = 1
KEY_HISTORY = 2
KEY_SITUATION = 3
KEY_PUBLIC = 4
KEY_OBSERVATION = 5

# Owners.
OWNER_PLAYER0 = 0
OWNER_UPDATE_PLAYER = 1

# Rules (kernel codes).
RULE_NONE = 0
RULE_CORRECTED = 1
RULE_CHILD = 2
RULE_PREDICTIVE = 3
RULE_ORACLE = 4
RULE_PROBE = 5

REPRESENTATIONS = ("tree", "engine", "grown")


class Key(NamedTuple):
  """A key: its kernel code, the representations that compute it, what it
  needs (for the refusal of the others), and on an engine the share of
  `max_memory` its second hashed table takes (0: none; the infoset rows
  take the rest)."""
  code: int
  serves: tuple
  needs: str
  share: float = 0.0


class Rule(NamedTuple):
  """A rule: its kernel code, the representations that run it, the keys
  and owners it needs (empty: any), whether it averages (a decay applies),
  and what it needs (for the refusal of the other representations)."""
  code: int
  serves: tuple
  keys: tuple
  owners: tuple
  learns: bool
  needs: str = ""


KEYS = {
    "none": Key(KEY_NONE, REPRESENTATIONS, ""),
    "infoset": Key(KEY_INFOSET, REPRESENTATIONS, ""),
    # A row per history: as many as the infoset rows, or more.
    "history": Key(KEY_HISTORY, REPRESENTATIONS, "", 0.5),
    # Far fewer situations and public states than infosets (goofspiel 6:
    # 1.5 million situations, 23 million infosets).
    "situation": Key(KEY_SITUATION, ("tree", "engine"),
                     "needs the situation of every history (an engine's "
                     "situation_hash, or a compiled tree's)", 0.25),
    "public": Key(KEY_PUBLIC, ("tree", "engine"),
                  "needs the public state of every history (an engine's "
                  "public_hash, or a compiled tree's public states)", 0.25),
    "observation": Key(KEY_OBSERVATION, ("tree", "grown"),
                       "needs OpenSpiel's observation strings of every "
                       "history (a compiled or grown tree)"),
}

RULES = {
    "none": Rule(RULE_NONE, REPRESENTATIONS, ("none",), (), False),
    "corrected": Rule(RULE_CORRECTED, REPRESENTATIONS, ("infoset",),
                      (OWNER_UPDATE_PLAYER,), True),
    "child": Rule(RULE_CHILD, REPRESENTATIONS,
                  ("infoset", "history", "situation", "public",
                   "observation"), (OWNER_PLAYER0,), True),
    "predictive": Rule(RULE_PREDICTIVE, REPRESENTATIONS, ("history",),
                       (OWNER_PLAYER0,), False),
    "oracle": Rule(RULE_ORACLE, ("tree",), ("history",), (OWNER_PLAYER0,),
                   False, "needs the exact values of every history under "
                   "the current strategy (a compiled tree)"),
    "probe": Rule(RULE_PROBE, ("engine",), ("none",), (OWNER_PLAYER0,),
                  False, "plays its rollouts on an engine's states"),
}


class Baseline(NamedTuple):
  """One baseline kind: `key` and `rule` name entries of KEYS and RULES;
  `decay`: the exponential average's weight when the solver is given
  none (None: a running mean); `summary`: a line for the docs;
  `fallback`: a second key whose cell serves where the first key's has
  not learned yet (a chain; "infoset" only, on engines), both learning."""
  key: str
  owner: int
  rule: str
  decay: float | None
  summary: str
  fallback: str = ""


BASELINES = {
    "none": Baseline("none", OWNER_PLAYER0, "none", None,
                     "b = 0: plain outcome sampling"),
    "thesis": Baseline(
        "infoset", OWNER_UPDATE_PLAYER, "corrected", None,
        "the thesis's: per (update player, infoset, action), the running "
        "mean of the 1/xi-corrected value"),
    "thesis_exponential": Baseline(
        "infoset", OWNER_UPDATE_PLAYER, "corrected", 0.5,
        "the thesis's with an exponential average (decay 0.5)"),
    "learned": Baseline(
        "infoset", OWNER_PLAYER0, "child", None,
        "per (infoset, action), the running mean of the child's estimate"),
    "history": Baseline(
        "history", OWNER_PLAYER0, "child", None,
        "per history edge, the running mean of the child's estimate "
        "(VR-MCCFR)"),
    "predictive": Baseline(
        "history", OWNER_PLAYER0, "predictive", None,
        "per history edge, the child's value under sigma^{t+1} "
        "(Davis et al. 2020)"),
    "oracle": Baseline(
        "history", OWNER_PLAYER0, "oracle", None,
        "the exact values under sigma^t (a compiled tree; studies)"),
    "situation": Baseline(
        "situation", OWNER_PLAYER0, "child", None,
        "per (situation, action), the running mean of the child's estimate: "
        "shared by every history that reached the same situation"),
    "situation_infoset": Baseline(
        "situation", OWNER_PLAYER0, "child", None,
        "a chain: per (situation, action), or the infoset's cell where the "
        "situation's has not learned yet; both learn the child's estimate",
        fallback="infoset"),
    "public": Baseline(
        "public", OWNER_PLAYER0, "child", None,
        "per (public state, action), the running mean of the child's "
        "estimate"),
    "probe": Baseline(
        "none", OWNER_PLAYER0, "probe", None,
        "probing (Gibson et al. 2012): one on-policy rollout for each "
        "unsampled move of the update player, no table"),
    "observation": Baseline(
        "observation", OWNER_PLAYER0, "child", None,
        "per (both players' observations, action), the running mean of the "
        "child's estimate (OpenSpiel's observation strings)"),
}


def _validate(baselines):
  """Raises ValueError naming the first inconsistent entry."""
  for name, b in baselines.items():
    if b.key not in KEYS or b.rule not in RULES:
      raise ValueError(f"baseline {name!r}: unknown key {b.key!r} or rule "
                       f"{b.rule!r} (KEYS: {list(KEYS)}; RULES: "
                       f"{list(RULES)}).")
    rule = RULES[b.rule]
    if b.key not in rule.keys:
      raise ValueError(f"baseline {name!r}: rule {b.rule!r} needs a key of "
                       f"{list(rule.keys)}, not {b.key!r}.")
    if rule.owners and b.owner not in rule.owners:
      raise ValueError(f"baseline {name!r}: rule {b.rule!r} needs the owner "
                       f"{rule.owners}, not {b.owner}.")
    if b.decay is not None and not (0.0 < b.decay <= 1.0 and rule.learns):
      raise ValueError(f"baseline {name!r}: a default decay needs a rule "
                       "that averages and a value in (0, 1].")
    if b.fallback and (b.fallback != "infoset" or KEYS[b.key].share <= 0.0
                       or b.rule != "child" or b.decay is not None):
      raise ValueError(f"baseline {name!r}: a chain falls back from a key "
                       "of the second table to 'infoset', rule 'child', "
                       "running mean.")


_validate(BASELINES)


def codes(name):
  """(key code, owner, rule code) of a kind, for the kernels."""
  b = BASELINES[name]
  return KEYS[b.key].code, b.owner, RULES[b.rule].code


def falls_back(name):
  """Whether kind `name` is a chain falling back to the infoset's cell."""
  return bool(BASELINES[name].fallback)


def serves(name):
  """The representations that run baseline `name`: its key's and its
  rule's."""
  b = BASELINES[name]
  return tuple(r for r in REPRESENTATIONS
               if r in KEYS[b.key].serves and r in RULES[b.rule].serves
               and (not b.fallback or r == "engine"))


def kinds(representation, keys=None):
  """The kinds a representation runs (registry order), restricted to
  `keys` (names of KEYS) if given."""
  return tuple(n for n, b in BASELINES.items()
               if representation in serves(n)
               and (keys is None or b.key in keys))


# How a refusal names a representation.
_ON = {"tree": "a compiled tree", "engine": "an engine",
       "grown": "a grown tree"}


def check(name, representation, allowed=None):
  """Raises the one-line ValueError for a kind the representation cannot
  run (or that is not in `allowed`, the kinds a solver takes), naming
  what it needs and the kinds that run there."""
  if name not in BASELINES:
    raise ValueError(f"Unknown baseline {name!r}; allowed: "
                     f"{', '.join(allowed or BASELINES)}.")
  here = tuple(k for k in kinds(representation)
               if allowed is None or k in allowed)
  if name in here:
    return
  b = BASELINES[name]
  if b.fallback and representation in KEYS[b.key].serves:
    needs = "chains two tables of an engine"
  elif representation in KEYS[b.key].serves:
    needs = RULES[b.rule].needs
  else:
    needs = KEYS[b.key].needs
  if not needs:
    needs = "is not taken by this solver"
  raise ValueError(f"baseline={name!r} {needs}; on {_ON[representation]} "
                   f"use one of {', '.join(here)}.")


def keyed_share(name, max_memory):
  """The bytes of `max_memory` an engine's second hashed table takes for
  kind `name` (0 without one); the infoset rows take the rest."""
  return int(max_memory * KEYS[BASELINES[name].key].share)


def per_node_ids(name):
  """Whether a compiled or grown tree reads the kind's cells through an
  id per node (situation, public, observation: key_ids[n] * A + a)."""
  return BASELINES[name].key in ("situation", "public", "observation")


def running_counts(name, decay):
  """Whether the kind keeps running-mean counts per cell (rule child
  without a decay)."""
  return BASELINES[name].rule == "child" and decay <= 0.0


# The arithmetic of the learning rules, shared by every kernel.


@njit(cache=True, error_model="numpy")
def averaged(old, count, target, decay):
  """Running mean (decay <= 0: (b k + target) / (k + 1), thesis Fig. 3.1) or
  exponentially decaying average (1 - decay) b + decay target."""
  if decay > 0.0:
    return (1.0 - decay) * old + decay * target
  return (old * count + target) / (count + 1.0)


@njit(cache=True, error_model="numpy", inline="always")
def learn(values, slot, counts, cslot, target, decay):
  """One update of b = values[slot] towards `target` (rules corrected and
  child): the running mean with the count counts[cslot] (then counted
  once more), or with decay > 0 the exponential average. cslot < 0: no
  count is kept (an engine's exponential average). `values` and `counts`
  are read as float64 and stored in their own type (float32 cells, int
  counts)."""
  count = 0.0
  if cslot >= 0:
    count = np.float64(counts[cslot])
    counts[cslot] += 1
  values[slot] = averaged(np.float64(values[slot]), count, target, decay)
