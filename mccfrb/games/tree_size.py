"""How large a game tree is, and how large a tree this machine can compile.

`compile_tree` refuses a game before walking it when Knuth's estimate of its
size is far above `max_nodes`, and by default `max_nodes` is what the
memory available now allows (`default_max_nodes`).
"""

import os
import time

import numpy as np

from mccfrb import games

# compile_tree refuses a game before walking it when Knuth's estimate of its
# size exceeds max_nodes by this factor: as soon as it does not fit (the
# estimate, unbiased and averaged over 1000 probes, is within a few percent
# on the games of the tests; a wrong refusal names max_nodes as the way out).
REFUSE_FACTOR = 1
# Peak memory of a compile per node of the tree: the walk's buffers (28
# bytes), the infoset dictionary (a Python string per infoset) and the final
# arrays. Measured as the growth of the peak resident memory during a first
# compile in a fresh process (`python -m experiments.measurements
# --sets=compile`): 52 bytes on goofspiel 5 and liars_dice with one die,
# 127 on tic_tac_toe, where nearly every decision is its own infoset (small
# trees such as Leduc's vary with the allocator's granularity). This bound
# leaves room above the largest.
PEAK_BYTES_PER_NODE = 160
# Share of the available memory a compile may use by default: the rest is
# left to the solver's tables (per infoset, and per edge for baselines) and
# to other processes.
MEMORY_FRACTION = 0.5
# max_nodes when the available memory cannot be read.
FALLBACK_MAX_NODES = 20_000_000
# Bounds of the default: node ids are int32, and a machine short of memory
# still compiles the small games.
MIN_DEFAULT_MAX_NODES = 100_000
MAX_NODES_LIMIT = 2**31 - 1

_MEMINFO = "/proc/meminfo"
_CGROUP_MAX = "/sys/fs/cgroup/memory.max"
_CGROUP_CURRENT = "/sys/fs/cgroup/memory.current"


def _read(path):
  try:
    with open(path) as f:
      return f.read()
  except OSError:
    return None


def available_memory():
  """Bytes of memory available to this process now, or None if unknown.

  `MemAvailable` of /proc/meminfo (Linux: free memory plus what the kernel
  can reclaim without swapping), lowered to the room left under a cgroup v2
  memory limit (`memory.max - memory.current`, containers) when one is set;
  elsewhere `os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")`
  (free pages); None when neither can be read.
  """
  available = None
  meminfo = _read(_MEMINFO)
  if meminfo is not None:
    for line in meminfo.splitlines():
      name, _, value = line.partition(":")
      if name == "MemAvailable" and value.split()[1:] == ["kB"]:
        available = int(value.split()[0]) * 1024
  if available is None:
    try:
      available = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, OSError, ValueError):
      return None
  limit, current = _read(_CGROUP_MAX), _read(_CGROUP_CURRENT)
  if limit is not None and current is not None and limit.strip().isdigit():
    available = min(available, max(0, int(limit) - int(current)))
  return available


def default_max_nodes():
  """The default `max_nodes` of `compile_tree`, from the memory available now.

  `available_memory() * MEMORY_FRACTION // PEAK_BYTES_PER_NODE`, clipped to
  [MIN_DEFAULT_MAX_NODES, 2**31 - 1]; FALLBACK_MAX_NODES when the available
  memory cannot be read. With 20 GiB available: 67 million nodes.
  """
  available = available_memory()
  if available is None:
    return FALLBACK_MAX_NODES
  nodes = int(available * MEMORY_FRACTION) // PEAK_BYTES_PER_NODE
  return int(min(max(nodes, MIN_DEFAULT_MAX_NODES), MAX_NODES_LIMIT))


def estimate_num_nodes(game, num_probes=1000, seed=0, time_limit=2.0):
  """Knuth's estimate of the number of histories (nodes) of `game`.

  Each probe walks from the root to a terminal, choosing uniformly among the
  legal actions or chance outcomes of every node, and estimates the node
  count as 1 + b_0 + b_0 b_1 + ... (b_d the branching factors along the
  path); the estimate is the mean over probes, unbiased for the true count
  (Knuth 1975, "Estimating the efficiency of backtrack programs").

  Args:
    game: a game string or `pyspiel.Game`; passed through `load_game`.
    num_probes: the number of root-to-leaf probes.
    seed: seed of the probes' generator (the estimate is deterministic).
    time_limit: stop after this many seconds even if fewer probes ran (at
      least one probe always runs).

  Returns:
    (estimate, probes): the estimated number of nodes (a float) and the
    number of probes it averages.
  """
  game = games.load_game(game, general=True)
  rng = np.random.default_rng(seed)
  root = game.new_initial_state()
  deadline = time.perf_counter() + time_limit
  total, probes = 0.0, 0
  while probes < num_probes and (probes == 0 or time.perf_counter() < deadline):
    state = root.clone()
    estimate, width = 1.0, 1.0
    while not state.is_terminal():
      if state.is_chance_node():
        actions = [a for a, _ in state.chance_outcomes()]
      else:
        actions = state.legal_actions()
      width *= len(actions)
      estimate += width
      state.apply_action(actions[rng.integers(len(actions))])
    total += estimate
    probes += 1
  return total / probes, probes


def check_estimated_size(game, max_nodes):
  """Knuth's estimate of `game`'s size; ValueError when it is too large.

  Too large: above REFUSE_FACTOR * max_nodes, or above the 2**31 - 1
  nodes that int32 node ids can number (whatever max_nodes and the memory).
  """
  estimate, probes = estimate_num_nodes(game)
  if estimate > MAX_NODES_LIMIT:
    limit = (f"more than the 2**31 - 1 a GameTree can number (int32 ids; "
             f"max_nodes={max_nodes})")
    hint = ""
  elif estimate > REFUSE_FACTOR * max_nodes:
    limit = f"above max_nodes={max_nodes}"
    hint = " or, if the estimate is wrong, pass a larger max_nodes"
  else:
    return estimate
  raise ValueError(
      f"{game} is too large to compile: Knuth's estimator ({probes} "
      f"random root-to-leaf probes) puts it at about {estimate:.2g} "
      f"histories, {limit}; compiling would need about "
      f"{estimate * PEAK_BYTES_PER_NODE / 2**30:.3g} GiB. Choose a smaller "
      f"game (for example fewer cards or dice){hint}.")
