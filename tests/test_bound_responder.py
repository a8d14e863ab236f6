"""The bound's responder on OpenSpiel states plays as the policy does at
the information states its training never met.

With a short training (the engine games manage a few dozen walks a
minute) most information states are never met; a responder playing
uniform there lost far more than its trained choices won (a bound of
-0.8 on a Leduc policy whose exploitability is 0.15).
"""

import mccfrb


def test_untrained_responder_plays_the_policy_not_uniform():
  solver = mccfrb.MCCFRbSolver("leduc_poker", seed=0)
  solver.run(100_000, progress=False)
  exact = mccfrb.exploitability(solver.tree, solver.average_policy_table())
  result = mccfrb.approximate_exploitability(
      "leduc_poker", solver.average_policy(), iterations=4, seed=0,
      episodes=20_000, representation="states", progress=False)
  assert result.representation == "states" and result.iterations == (4, 4)
  assert result.low <= exact
  # Four walks a player decide a few information states; elsewhere the
  # responder matches the policy, so the bound is about 0, not about -0.8.
  assert result.exploitability > -4 * result.stderr, result
  # Still a responder of its own: trained information states are listed.
  assert all(len(r) > 0 for r in result.responders)
