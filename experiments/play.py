r"""Play hands against a solved strategy in a local web page.

  python -m experiments.play --game=leduc_poker
  python -m experiments.play --game=kuhn_poker --solver=cfr_plus --iterations=2000
  python -m experiments.play --game=leduc_poker --checkpoint=leduc.npz --port=8000

Trains --solver (a registry name) for --iterations, or loads a solver saved
with `solver.save(path)` (--checkpoint; it must be for --game), then serves
the page at http://127.0.0.1:PORT/ until Ctrl-C. The bot samples its actions
from the average strategy; the same --seed gives the same deals and bot
actions for the same clicks. --host=0.0.0.0 serves other machines too.

  # The README's screenshot (needs chromium, chromium-driver and selenium):
  python -m experiments.play --game=leduc_poker --seed=3 --hands=3 \
      --screenshot=experiments/results/play/play.png
"""

import os
import sys
import threading

os.environ.setdefault("NUMBA_NUM_THREADS", "1")
# Run by path (python experiments/NAME.py) as well as with -m:
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app  # pylint: disable=g-import-not-at-top
from absl import flags
import numpy as np

import mccfrb
from experiments import common
from mccfrb import play
from mccfrb.play import browser
from mccfrb.experiment import registry

PROGRAM = "play"

_GAME = flags.DEFINE_string("game", "leduc_poker", "OpenSpiel game string "
                            "(any two-player game mccfrb can compile).")
_CHECKPOINT = flags.DEFINE_string(
    "checkpoint", "", "A solver saved with solver.save(path), for --game; "
    "instead of --solver.")
_SOLVER = flags.DEFINE_string(
    "solver", "cfr_plus", f"Registry name to train: {', '.join(registry.ALGORITHMS)}.")
_ITERATIONS = flags.DEFINE_integer("iterations", 1000,
                                   "Training iterations of --solver.")
_PORT = flags.DEFINE_integer("port", 8000, "TCP port (0: any free port).")
_HOST = flags.DEFINE_string("host", "127.0.0.1", "Address to listen on.")
_SEED = flags.DEFINE_integer("seed", None, "Seed of the deals, the bot's "
                             "sampling and training (default: drawn and printed).")
_SCREENSHOT = flags.DEFINE_string(
    "screenshot", "", "Instead of serving until Ctrl-C: play --hands hands in "
    "headless Chromium (on a free port, clicking the last action button each "
    "time), save a PNG of the page here and exit.")
_HANDS = flags.DEFINE_integer("hands", 3, "Hands played for --screenshot.")


def _check_flags(argv):
  """Every check that needs no work, as a one-line error."""
  if len(argv) > 1:
    common.fail(PROGRAM, f"unexpected arguments {argv[1:]}")
  if _CHECKPOINT.value and flags.FLAGS["solver"].present:
    common.fail(PROGRAM, "give --checkpoint or --solver, not both")
  if not 0 <= _PORT.value <= 65535:
    common.fail(PROGRAM, f"--port must be in 0..65535, got {_PORT.value}")
  if _ITERATIONS.value < 0:
    common.fail(PROGRAM, f"--iterations must be >= 0, got {_ITERATIONS.value}")
  if _SEED.value is not None and _SEED.value < 0:
    common.fail(PROGRAM, f"--seed must be >= 0, got {_SEED.value}")
  if _CHECKPOINT.value and not os.path.isfile(_CHECKPOINT.value):
    common.fail(PROGRAM, f"no such checkpoint file: {_CHECKPOINT.value}")
  if _SCREENSHOT.value and _HANDS.value < 1:
    common.fail(PROGRAM, f"--hands must be >= 1, got {_HANDS.value}")
  if _SCREENSHOT.value and browser.missing():
    common.fail(PROGRAM, f"--screenshot needs a browser: {browser.missing()}")
  if not _CHECKPOINT.value:
    try:
      registry.check_algorithms([_SOLVER.value])
    except ValueError as e:
      common.fail(PROGRAM, e)


def _bot(game, seed):
  """(tree, average-policy table, description) of the strategy to play."""
  if _CHECKPOINT.value:
    solver = mccfrb.load_solver(_CHECKPOINT.value, game)
    return (solver.tree, solver.average_policy_table(),
            f"{type(solver).__name__} from {os.path.basename(_CHECKPOINT.value)}"
            f", {solver.num_iterations} iterations")
  tree = mccfrb.compile_tree(game)
  runner = registry.make(_SOLVER.value, game, seed, tree)
  runner.run(_ITERATIONS.value)
  return (tree, runner.average_policy_table(tree),
          f"{_SOLVER.value}, {_ITERATIONS.value} iterations")


def _screenshot(session, path, hands):
  """Plays `hands` hands in headless Chromium and saves the page as a PNG."""
  server = play.make_server(session, "127.0.0.1", 0)
  thread = threading.Thread(target=server.serve_forever, daemon=True)
  thread.start()
  try:
    with browser.chromium() as driver:
      browser.open_page(driver, play.url(server))
      for _ in range(hands):
        browser.play_hand(driver)
      browser.screenshot(driver, path)
  finally:
    server.shutdown()
    server.server_close()
  print(f"wrote {path}: the page after {hands} hands")


def main(argv):
  _check_flags(argv)
  seed = _SEED.value
  if seed is None:
    seed = int(np.random.SeedSequence().entropy % 2**32)
  try:
    game = mccfrb.load_game(_GAME.value)
    tree, table, description = _bot(game, seed)
  except (ValueError, OSError) as e:
    common.fail(PROGRAM, e)
  exploitability = mccfrb.exploitability(tree, table)
  description += f", exploitability {exploitability:.4g}"
  session = play.PlaySession(game, play.Bot(tree, table), seed=seed,
                             description=description)
  print(f"bot: {description}; seed {seed} (--seed={seed} replays these deals)")
  if _SCREENSHOT.value:
    _screenshot(session, _SCREENSHOT.value, _HANDS.value)
    return
  try:
    server = play.make_server(session, _HOST.value, _PORT.value, quiet=True)
  except OSError as e:
    common.fail(PROGRAM, f"cannot listen on {_HOST.value}:{_PORT.value}: "
                f"{e.strerror or e}")
  print(f"play: serving {game} at {play.url(server)} (Ctrl-C to stop)",
        flush=True)
  try:
    server.serve_forever()
  except KeyboardInterrupt:
    pass
  finally:
    server.server_close()


if __name__ == "__main__":
  app.run(main)
