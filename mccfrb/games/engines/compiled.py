"""A compiled `GameTree` as an implementation of the engine protocol.

The engine kernels (kernels/outcome.py, public.py,
external.py, stream.py) are written against `protocol`; this module
lets every one of them run on a compiled tree as well as on a native
engine: a state is the current node id, moves are the node's children in
id order (OpenSpiel's order of legal actions and chance outcomes), the
infoset key is the tree's infoset id and the public key the node's public
state (`mccfrb.public_states`). On a game that compiles, an engine kernel
run on `make_engine(tree)` equals the tree kernels' run bit for bit
(tests/test_compiled_engine.py).

params (int64, like every engine's): a header of H_SIZE words (the number
of nodes and where each column starts), then the columns, one word per
node: node kind, node player, node infoset, child start, number of
children, the OpenSpiel action into the node, the node's public state
(-1 when the engine is made without a public tree: then only kernels that
never ask for public keys may run on it), the float64 bits of the
probability into the node and of its utility, and the node's situation
(mccfrb/games/keys.py; -1 when the engine is made without them). It
copies the tree's arrays (80 bytes a node).

state (int64[STATE_SIZE]): [the current node id].
"""

from llvmlite import ir
import numpy as np
from numba import njit
from numba import types
from numba.extending import intrinsic

from mccfrb.games.engines import registry
from mccfrb.games.engines.common import CHANCE
from mccfrb.games.engines.common import Engine
from mccfrb.games.engines.common import engine_function
from mccfrb.games.engines.common import TERMINAL

NAME = "tree"
CODE = registry.code(NAME)
STATE_SIZE = 1
# Header: params[0] the number of nodes N; column c starts at H_SIZE + c N.
H_SIZE = 1
KIND, PLAYER, INFOSET, CHILD_START, NUM_CHILDREN, ACTION, PUBLIC, PROB, \
    UTILITY, SITUATION = range(10)
NUM_COLUMNS = 10
# GameTree node kinds.
_CHANCE_NODE = 0
_TERMINAL_NODE = 2


@intrinsic
def _as_float(typingctx, bits):  # pylint: disable=unused-argument
  """The float64 whose bits are the int64 `bits`."""
  sig = types.float64(types.int64)

  def codegen(context, builder, signature, args):  # pylint: disable=unused-argument
    return builder.bitcast(args[0], ir.DoubleType())

  return sig, codegen


@njit(cache=True, inline="always")
def _column(params, column, n):
  return params[H_SIZE + column * params[0] + n]


@engine_function
def reset(params, state):  # pylint: disable=unused-argument
  state[0] = 0


@engine_function
def player(params, state):
  n = state[0]
  kind = _column(params, KIND, n)
  if kind == _CHANCE_NODE:
    return np.int64(CHANCE)
  if kind == _TERMINAL_NODE:
    return np.int64(TERMINAL)
  return _column(params, PLAYER, n)


@engine_function
def num_moves(params, state):
  return _column(params, NUM_CHILDREN, state[0])


@engine_function
def move_action(params, state, j):
  return _column(params, ACTION, _column(params, CHILD_START, state[0]) + j)


@engine_function
def chance_prob(params, state, j):
  return _as_float(_column(params, PROB,
                           _column(params, CHILD_START, state[0]) + j))


@engine_function
def apply(params, state, j):
  state[0] = _column(params, CHILD_START, state[0]) + j


@engine_function
def terminal_value(params, state, j):
  """(True, the child's utility) when child j is terminal, else (False,
  0.0)."""
  child = _column(params, CHILD_START, state[0]) + j
  if _column(params, KIND, child) == _TERMINAL_NODE:
    return True, _as_float(_column(params, UTILITY, child))
  return False, 0.0


@engine_function
def returns0(params, state):
  return _as_float(_column(params, UTILITY, state[0]))


@engine_function
def infoset_hash(params, state, p):  # pylint: disable=unused-argument
  """The infoset id + 1 (never 0, which marks an empty hash slot)."""
  return np.uint64(_column(params, INFOSET, state[0]) + 1), np.uint64(0)


@engine_function
def public_hash(params, state):
  return np.uint64(_column(params, PUBLIC, state[0]) + 1), np.uint64(0)


@engine_function
def situation_hash(params, state):
  """The node's situation id + 1 (games/keys.py)."""
  return np.uint64(_column(params, SITUATION, state[0]) + 1), np.uint64(0)


def make_engine(tree, game=None, public_tree=None, situation_ids=None):
  """The `Engine` of a compiled tree.

  Args:
    tree: a `GameTree`.
    game: its `pyspiel.Game` (kept in `Engine.game`; optional).
    public_tree: a `PublicTree` of `tree`, for the kernels that group
      histories by public state (public-state sampling, streaming walks).
    situation_ids: int64[N], the nodes' situations (games/keys.py), for
      situation-keyed baselines.

  Returns:
    The `Engine` (name "tree", code `CODE`).
  """
  n = tree.num_nodes
  columns = np.zeros((NUM_COLUMNS, n), dtype=np.int64)
  columns[KIND] = tree.node_kind
  columns[PLAYER] = tree.node_player
  columns[INFOSET] = tree.node_infoset
  columns[CHILD_START] = tree.child_start
  columns[NUM_CHILDREN] = tree.num_children
  columns[ACTION] = tree.edge_actions()
  columns[PUBLIC] = (-1 if public_tree is None
                     else public_tree.node_public_state)
  columns[SITUATION] = -1 if situation_ids is None else situation_ids
  columns[PROB] = np.ascontiguousarray(tree.edge_prob,
                                       dtype=np.float64).view(np.int64)
  columns[UTILITY] = np.ascontiguousarray(tree.utility,
                                          dtype=np.float64).view(np.int64)
  params = np.concatenate([[n], columns.ravel()]).astype(np.int64)
  max_moves = int(max(tree.max_actions, tree.num_children.max(initial=0)))
  return Engine(name=NAME, code=CODE, params=params,
                state_size=STATE_SIZE, max_moves=max(max_moves, 1),
                max_depth=max(int(tree.max_depth) - 1, 1),
                utility_sum=float(tree.utility_sum), game=game)
