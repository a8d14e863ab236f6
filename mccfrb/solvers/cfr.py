"""The exact CFR family on the full compiled tree (kernels/cfr.py)."""

import numpy as np

from mccfrb import policy as policy_lib
from mccfrb import tree as tree_lib
from mccfrb.kernels import cfr
from mccfrb.solvers import base

# variant -> (regret matching+, averaging power, discount, alpha, beta, gamma)
CFR_VARIANTS = {
    "cfr": (False, 0.0, False),
    "cfr+": (True, 1.0, False),
    "linear": (False, 1.0, True),
    "discounted": (False, None, True),
}


class CFRSolver(base.TabularSolverBase):
  """Exact CFR family on the full compiled tree, with OpenSpiel's interface.

  Variants, with OpenSpiel's update order (alternating updates):
    "cfr": vanilla CFR (pyspiel.CFRSolver);
    "cfr+": regret matching+ and linear averaging (pyspiel.CFRPlusSolver);
    "linear": Linear CFR, DCFR with alpha = beta = gamma = 1
      (open_spiel discounted_cfr.LCFRSolver);
    "discounted": DCFR(alpha, beta, gamma), default (1.5, 0, 2)
      (open_spiel discounted_cfr.DCFRSolver).

  Args:
    game: a game string or `pyspiel.Game`.
    variant: one of CFR_VARIANTS.
    alpha, beta, gamma: DCFR's parameters (variant "discounted" only).
    max_nodes, tree: as for `MCCFRbSolver`.
  """

  _table_names = ("_regrets", "_avg", "_strategy")

  def __init__(self, game, variant="cfr", alpha=1.5, beta=0.0, gamma=2.0,
               max_nodes=tree_lib.DEFAULT_MAX_NODES, tree=None):
    base.check_choice("variant", variant, CFR_VARIANTS)
    for name, value in (("alpha", alpha), ("beta", beta), ("gamma", gamma)):
      if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{name} must be a number, got {value!r}.")
    if variant != "discounted" and (alpha, beta, gamma) != (1.5, 0.0, 2.0):
      raise ValueError("alpha, beta and gamma apply to variant='discounted' only.")
    self._variant = variant
    self._alpha, self._beta, self._gamma = float(alpha), float(beta), float(gamma)
    plus, power, discount = CFR_VARIANTS[variant]
    if variant == "linear":
      self._alpha = self._beta = 1.0
    self._plus, self._discount = plus, discount
    self._power = self._gamma if power is None else power
    self._rng = np.random.default_rng(0)  # Unused: exact; kept for save().
    self._init_game(game, max_nodes, tree)
    t = self._tree
    shape = (t.num_infosets, t.max_actions)
    self._regrets = np.zeros(shape)
    self._avg = np.zeros(shape)
    self._strategy = policy_lib.uniform_table(t)
    self._reach = np.zeros((t.num_nodes, 3))
    self._values = np.zeros(t.num_nodes)

  def _options(self):
    options = {"variant": self._variant}
    if self._variant == "discounted":
      options.update(alpha=self._alpha, beta=self._beta, gamma=self._gamma)
    return options

  def run(self, num_iterations):
    """Runs `num_iterations` exact iterations in one kernel call."""
    base.check_num_iterations(num_iterations)
    if num_iterations == 0:
      return
    t = self._tree
    self._nodes_touched += cfr.cfr_iterations(
        *t.kernel_args(), t.utility_sum, t.infoset_num_actions,
        t.infoset_player, self._regrets, self._avg, self._strategy,
        self._reach, self._values, self._plus, self._power, self._discount,
        self._alpha, self._beta, self._num_iterations + 1, num_iterations)
    self._num_iterations += num_iterations

  def current_policy_table(self):
    return self._strategy.copy()


