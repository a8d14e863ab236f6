"""The balanced exploration strategy of a compiled tree (Farina, Kroer and
Sandholm 2020, "Stochastic regret minimization in extensive-form games",
ICML, Sec. 5): at each infoset of player i, each action with probability
proportional to the number of player i's terminal sequences below it, so
that every terminal sequence of i's own decision tree is equally likely
when i plays it from the root.

A sequence (I, a) of player i is terminal when no infoset of i follows it;
the count of a non-terminal one is the sum of the counts of every action
of every infoset J whose parent sequence it is (the last action of i
before J: the same for all of J's histories, by perfect recall).
"""

import numpy as np
from numba import njit


@njit(cache=True)
def _counts(kind, player, infoset, child_start, num_children, num_infosets,
            width, parent, leaves):
  """Fills parent[J] (the flat index I * width + a of J's parent sequence,
  -1 at a root infoset) and leaves[I * width + a] (the terminal sequences
  below (I, a); 0 where a is not legal)."""
  n_nodes = kind.shape[0]
  # last[p, n]: player p's last sequence on the path to node n (-1: none).
  last = np.full((2, n_nodes), -1, dtype=np.int64)
  first = np.full(num_infosets, n_nodes, dtype=np.int64)
  for n in range(n_nodes):  # Preorder: a parent before its children.
    if kind[n] == 2:
      continue
    s = child_start[n]
    for a in range(num_children[n]):
      last[0, s + a] = last[0, n]
      last[1, s + a] = last[1, n]
    if kind[n] == 1:
      p = player[n]
      i = infoset[n]
      if first[i] == n_nodes:
        first[i] = n
        parent[i] = last[p, n]
      for a in range(num_children[n]):
        last[p, s + a] = i * width + a
        leaves[i * width + a] = 1.0
  # Infosets deepest first (a child infoset's first node comes after its
  # parent's): each adds its total to its parent sequence.
  order = np.argsort(-first)
  below = np.zeros(num_infosets * width, dtype=np.bool_)
  for k in range(num_infosets):
    j = order[k]
    total = 0.0
    for a in range(width):
      total += leaves[j * width + a]
    q = parent[j]
    if q >= 0:
      if not below[q]:
        below[q] = True
        leaves[q] = 0.0
      leaves[q] += total


def balanced_strategy(tree):
  """float64[I, A]: the balanced exploration strategy of every infoset of
  a compiled two-player tree (module docstring)."""
  width = tree.max_actions
  parent = np.full(tree.num_infosets, -1, dtype=np.int64)
  leaves = np.zeros(tree.num_infosets * width)
  kind, player, infoset, child_start, num_children = tree.kernel_args()[:5]
  _counts(kind, player, infoset, child_start, num_children,
          tree.num_infosets, width, parent, leaves)
  leaves = leaves.reshape(tree.num_infosets, width)
  return leaves / leaves.sum(axis=1, keepdims=True)
