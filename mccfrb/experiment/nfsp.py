"""OpenSpiel's JAX NFSP (Heinrich & Silver 2016) as a registry comparator.

`NFSPRunner` trains two `open_spiel.python.jax.nfsp.NFSP` agents in
self-play, as OpenSpiel's NFSP examples do, behind the registry's runner
interface. One iteration is one training episode (one hand, every agent
stepping as OpenSpiel's examples step it). The average strategy is NFSP's
average-policy network Π(s, a | θ^Π) (Heinrich & Silver 2016, Algorithm 1)
evaluated, in one batch per player, at the `information_state_tensor` of
every infoset of the compiled tree.

Nothing here imports JAX until a runner is built: `import mccfrb` and the
registry work without the `nfsp` extra, and building a runner without it
raises a ValueError that names the install command.
"""

import functools
import importlib
import os
import sys

import numpy as np
import pyspiel

from mccfrb.tables import policy as policy_lib

INSTALL = 'pip install -e ".[nfsp]"'
# What OpenSpiel's JAX NFSP imports (jax/nfsp.py and jax/dqn.py).
REQUIRED_MODULES = ("jax", "flax.nnx", "optax", "chex", "etils.epath",
                    "orbax.checkpoint", "open_spiel.python.jax.nfsp")
# One core: XLA's CPU backend otherwise runs Eigen ops on a thread pool.
SINGLE_THREAD_XLA_FLAG = "--xla_cpu_multi_thread_eigen=false"

# Heinrich & Silver 2016 (section 5, Leduc) where OpenSpiel's JAX NFSP can
# express them, else OpenSpiel's Leduc example's (docs/pages/nfsp.md).
HYPERPARAMETERS = {
    "hidden_layers_sizes": (64,),            # paper: 1 hidden layer, 64 ReLUs
    "reservoir_buffer_capacity": 2_000_000,  # paper: M_SL 2m, reservoir
    "replay_buffer_capacity": 200_000,       # paper: M_RL 200k, circular
    "anticipatory_param": 0.1,               # paper: eta = 0.1
    "rl_learning_rate": 0.1,                 # paper: 0.1, plain SGD
    "sl_learning_rate": 0.005,               # paper: 0.005, plain SGD
    "optimizer_str": "sgd",
    "batch_size": 128,                       # paper: mini-batches of 128
    "learn_every": 64,                       # paper: 2 updates per 128 steps
    "update_target_network_every": 19_200,   # paper: every 300 updates (x 64)
    "weight_update_coeff": 1.0,              # paper: the target is refitted
    "discount_factor": 1.0,
    "loss_str": "mse",
    "min_buffer_size_to_learn": 128,         # paper: no warm-up; one batch
    # Paper: 0.06 decaying to 0 as 1/sqrt(iterations), which OpenSpiel's DQN
    # has no schedule for; OpenSpiel's Leduc example's instead:
    "epsilon_start": 0.06,
    "epsilon_end": 0.001,
    "epsilon_decay_duration": 20_000_000,
    "epsilon_decay_schedule_str": "exp",
}


def _set_single_thread_flags():
  """Asks XLA for one CPU thread; effective only before JAX is imported."""
  flags = os.environ.get("XLA_FLAGS", "")
  if "xla_cpu_multi_thread_eigen" not in flags:
    os.environ["XLA_FLAGS"] = f"{flags} {SINGLE_THREAD_XLA_FLAG}".strip()


@functools.cache
def _openspiel_nfsp():
  """Imports OpenSpiel's JAX NFSP; returns (nfsp module, guarded agent class).

  Raises:
    ValueError: the `nfsp` extra is not installed.
  """
  if "jax" not in sys.modules:
    _set_single_thread_flags()
  try:
    modules = [importlib.import_module(m) for m in REQUIRED_MODULES]
  except ImportError as e:
    raise ValueError(f"openspiel_nfsp needs OpenSpiel's JAX NFSP and its "
                     f"dependencies ({e}): {INSTALL}") from e
  nfsp = modules[-1]

  class GuardedNFSP(nfsp.NFSP):
    """OpenSpiel's NFSP with the supervised step skipped while M_SL is empty.

    OpenSpiel 2.0.2's `NFSP._learn` calls `len()` on the reservoir buffer,
    which is None until the agent's first best-response transition: an agent
    whose first 64 steps all follow the average policy raises `TypeError:
    object of type 'NoneType' has no len()` (3 of 8 seeds on Leduc,
    docs/pages/nfsp.md). Until then there is nothing to learn from, so the
    step returns None, as `_learn` does for a buffer smaller than a batch.
    """

    def _learn(self):
      if self._reservoir_buffer is None:
        return None
      return super()._learn()

  return nfsp, GuardedNFSP


def agent_seeds(seed):
  """Two agents' seeds drawn from `seed` (each agent also uses seed + 1)."""
  state = np.random.SeedSequence(seed).generate_state(3, dtype=np.uint32)
  return [int(s) >> 2 for s in state[:2]], int(state[2])


class NFSPRunner:
  """Self-play NFSP on one game; one iteration is one training episode.

  Args:
    game: a two-player `pyspiel.Game` with information state tensors.
    seed: seeds both agents' JAX keys and network initialisations (distinct
      per agent) and the environment's chance sampler (numpy), so the same
      seed gives the same run.
    tree: the game's compiled `GameTree` (the infosets the average policy is
      tabulated at); compiled here when not given.
    agent_class: the NFSP class (tests pass OpenSpiel's unguarded one).
    **overrides: entries of `HYPERPARAMETERS` to change.
  """

  def __init__(self, game, seed, tree=None, agent_class=None, **overrides):
    unknown = sorted(set(overrides) - set(HYPERPARAMETERS))
    if unknown:
      raise ValueError(f"Unknown NFSP hyperparameter(s) {unknown}; known: "
                       f"{', '.join(HYPERPARAMETERS)}.")
    check_game(game)
    nfsp, guarded = _openspiel_nfsp()
    from open_spiel.python import rl_environment  # pylint: disable=g-import-not-at-top
    if tree is None:
      from mccfrb.games import tree as tree_lib  # pylint: disable=g-import-not-at-top
      tree = tree_lib.compile_tree(game)
    self.game = game
    self.hyperparameters = {**HYPERPARAMETERS, **overrides}
    self._mode = nfsp.MODE.AVERAGE_POLICY
    agent_class = agent_class or guarded
    player_seeds, env_seed = agent_seeds(seed)
    self._env = rl_environment.Environment(
        game, chance_event_sampler=rl_environment.ChanceEventSampler(env_seed))
    hp = dict(self.hyperparameters)
    hidden = list(hp.pop("hidden_layers_sizes"))
    reservoir = hp.pop("reservoir_buffer_capacity")
    anticipatory = hp.pop("anticipatory_param")
    size = self._env.observation_spec()["info_state"][0]
    num_actions = self._env.action_spec()["num_actions"]
    self.agents = [
        agent_class(p, size, num_actions, hidden, reservoir, anticipatory,
                    seed=player_seeds[p], allow_checkpointing=False, **hp)
        for p in range(game.num_players())]
    self.num_iterations = 0
    self._infosets = self._infoset_inputs(tree)

  def _infoset_inputs(self, tree):
    """Per player: infoset ids, their information state tensors, legal masks."""
    states = policy_lib._representative_states(str(self.game))  # pylint: disable=protected-access
    num_actions = self.game.num_distinct_actions()
    out = []
    for p in range(self.game.num_players()):
      ids = np.flatnonzero(tree.infoset_player == p)
      tensors = np.array([states[tree.infoset_key(i)].information_state_tensor(p)
                          for i in ids], dtype=np.float32)
      legal = np.zeros((len(ids), num_actions), dtype=bool)
      for row, i in enumerate(ids):
        legal[row, tree.infoset_actions[i, :tree.infoset_num_actions[i]]] = True
      out.append((ids, tensors, legal))
    return out

  def run(self, num_iterations):
    """Trains `num_iterations` episodes, as OpenSpiel's NFSP examples do."""
    env, agents = self._env, self.agents
    for _ in range(num_iterations):
      time_step = env.reset()
      while not time_step.last():
        player = time_step.observations["current_player"]
        time_step = env.step([agents[player].step(time_step).action])
      for agent in agents:  # Every agent sees the terminal step.
        agent.step(time_step)
    self.num_iterations += num_iterations

  def network_probabilities(self, player, info_states, legal):
    """Π(s, · | θ^Π) of `player`'s agent: softmax over the legal actions.

    The same masking and softmax as `NFSP._act`, batched; reading it draws
    no random numbers, so the run is unchanged.
    """
    import jax  # pylint: disable=g-import-not-at-top
    import jax.numpy as jnp  # pylint: disable=g-import-not-at-top
    from flax import nnx  # pylint: disable=g-import-not-at-top
    from open_spiel.python.jax import dqn  # pylint: disable=g-import-not-at-top
    agent = self.agents[player]
    logits = agent._avg_network_inference(  # pylint: disable=protected-access
        nnx.state(agent._avg_network), jnp.asarray(info_states))  # pylint: disable=protected-access
    logits = jnp.where(legal, logits, dqn.ILLEGAL_ACTION_LOGITS_PENALTY)
    return np.asarray(jax.nn.softmax(logits, axis=-1), dtype=np.float64)

  def average_policy_table(self, tree):
    """The average-policy networks' strategies as an mccfrb table for `tree`."""
    table = policy_lib.uniform_table(tree)
    for player, (ids, tensors, legal) in enumerate(self._infosets):
      if not len(ids):
        continue
      probs = self.network_probabilities(player, tensors, legal)
      actions = tree.infoset_actions[ids]
      rows = np.take_along_axis(probs, np.maximum(actions, 0), axis=1)
      rows[actions < 0] = 0.0
      table[ids] = rows / rows.sum(axis=1, keepdims=True)
    return table

  def openspiel_policy(self, tree):
    return policy_lib.to_pyspiel_dict(tree, self.average_policy_table(tree))

  nodes_touched = None


def check_game(game):
  """Raises ValueError if NFSP's environment cannot play `game`."""
  game_type = game.get_type()
  if not game_type.provides_information_state_tensor:
    raise ValueError(f"openspiel_nfsp needs information_state_tensor, which "
                     f"{game} does not provide.")
  if game.num_players() != 2 or game_type.dynamics != (
      pyspiel.GameType.Dynamics.SEQUENTIAL):
    raise ValueError(f"openspiel_nfsp plays two-player sequential games; "
                     f"{game} is not one.")
