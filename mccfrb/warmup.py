"""Compiles, or loads from numba's disk cache, the kernels of your games.

```bash
python -m mccfrb.warmup leduc_poker "goofspiel(num_cards=6)"
```

For each game, on the representation `representation="auto"` picks for it
(tree, engine or grown), every solver of `SOLVERS` that runs there is built
with its default options and runs a few iterations; on a compiled tree the
exact evaluation (`nash_conv`) runs once too. The first use of a kernel
compiles it (up to about 30 s per solver kind) and numba keeps it on disk, so a later
process loads it at once; after the warm-up the first `run` of these
solvers on these games compiles nothing. One line per game says what was
warmed and how many seconds it took; the exit code is 0. A game that does
not load gets one line on standard error and exit code 2.

Other options (threads, batches, a baseline that is not the default)
specialise other kernels, compiled on their first use.
"""

import argparse
import sys
import time

import mccfrb
from mccfrb import capabilities
from mccfrb import solvers as solvers_lib
from mccfrb.solvers import representation as representation_lib

# The solvers warmed, by name, with their default options.
SOLVERS = ("MCCFRbSolver", "OutcomeSamplingSolver", "ExternalSamplingSolver",
           "PublicSamplingSolver", "CFRSolver")
# Iterations each solver runs: enough to call every kernel of `run`.
ITERATIONS = 64
# Exit code of a game that does not load (argparse's for bad arguments).
BAD_GAME = 2


def _skip_reason(name, kind):
  """Why solver `name` is not warmed on representation `kind`, or None."""
  runs = next(s["representations"] for s in capabilities.SOLVERS
              if s["name"] == name)
  if kind not in runs:
    return f"{name} runs {' and '.join(runs)} only"
  if name == "CFRSolver" and kind == "engine":
    return ("CFRSolver walks every history of the game in an iteration; "
            "its kernels compile on its first one")
  return None


def warm_game(game_string):
  """Warms the default solvers' kernels on one game.

  Args:
    game_string: an OpenSpiel game string, as `mccfrb.load_game` takes it.

  Returns:
    (representation, names of the solvers warmed, skipped: list of one-line
    reasons, evaluated: whether the exact evaluation ran).

  Raises:
    ValueError: the game does not load (unknown name, bad parameters, not
      two-player zero-sum).
  """
  game = mccfrb.load_game(game_string)
  kind, _ = representation_lib.resolve(game, "auto", grown=True)
  warmed, skipped = [], []
  policy = None  # The first solver's average strategy, on a tree.
  for name in SOLVERS:
    reason = _skip_reason(name, kind)
    if reason is not None:
      skipped.append(reason)
      continue
    try:
      solver = getattr(solvers_lib, name)(game, representation=kind)
    except ValueError as error:  # A solver that refuses this game.
      skipped.append(f"{name}: {str(error).splitlines()[0]}")
      continue
    solver.run(ITERATIONS, progress=False)
    warmed.append(name)
    if kind == "tree" and policy is None:
      policy = solver.average_policy_table()
      mccfrb.nash_conv(solver.tree, policy)
  return kind, warmed, skipped, policy is not None


def main(argv=None):
  """Runs the command on `argv` (default: sys.argv[1:]); returns the exit
  code."""
  parser = argparse.ArgumentParser(
      prog="python -m mccfrb.warmup",
      description="Compile (or load from numba's disk cache) the kernels of "
                  "the default solvers on each game's default "
                  "representation.")
  parser.add_argument("games", nargs="+", metavar="GAME",
                      help='an OpenSpiel game string, e.g. leduc_poker or '
                           '"goofspiel(num_cards=6)"')
  args = parser.parse_args(argv)
  for game_string in args.games:  # Every name checked before any compile.
    try:
      mccfrb.load_game(game_string)
    except ValueError as error:
      print(f"mccfrb.warmup: {str(error).splitlines()[0]}", file=sys.stderr)
      return BAD_GAME
  for game_string in args.games:
    start = time.perf_counter()
    kind, warmed, skipped, evaluated = warm_game(game_string)
    seconds = time.perf_counter() - start
    what = ", ".join(warmed) + (" and nash_conv" if evaluated else "")
    line = f"{game_string} ({kind}): {what} ready in {seconds:.1f} s"
    if skipped:
      line += f" (not warmed: {'; '.join(skipped)})"
    print(line, flush=True)
  return 0


if __name__ == "__main__":
  sys.exit(main())
