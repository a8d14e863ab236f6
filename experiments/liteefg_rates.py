r"""Iterations per second of LiteEFG's exact CFR family, for the comparison
with mccfrb's in experiments/results/liteefg/ (docs/pages/performance.md).

LiteEFG is not a dependency of mccfrb: run this in an environment of its
own, then mccfrb's side with the benchmark's `cfr` section:

  python3 -m venv /tmp/lite && /tmp/lite/bin/pip install LiteEFG open_spiel tqdm
  /tmp/lite/bin/python experiments/liteefg_rates.py --seconds=5 \
      --out=experiments/results/liteefg/liteefg_rates.csv
  python -m experiments.benchmark --sections=cfr --seconds=5 \
      --out=experiments/results/liteefg/mccfrb_rates.csv

One iteration is what LiteEFG's own `baselines/utils.py` `train` loop
does per step: `graph.update_graph(env)` (both players' updates) and
`env.update_strategy(...)` (the average). Only the standard library,
absl (an OpenSpiel dependency), pyspiel and LiteEFG are imported, so no
mccfrb code runs here.
"""

import csv
import importlib
import time

from absl import app
from absl import flags

GOOFSPIEL4 = ("goofspiel(num_cards=4,imp_info=True,points_order=random,"
              "returns_type=point_difference)")
# LiteEFG baseline module -> mccfrb's variant of the same algorithm.
ALGORITHMS = {"CFR": "cfr", "CFRplus": "cfr+", "DCFR": "discounted",
              "PCFR": "pcfr+"}

_GAMES = flags.DEFINE_string("games", f"leduc_poker;{GOOFSPIEL4}",
                             "Game strings separated by ';'.")
_SECONDS = flags.DEFINE_float("seconds", 5.0, "Minimum time of one timing.")
_OUT = flags.DEFINE_string("out", "", "Optional CSV path for the rates.")


def rate(game_string, module, seconds, traverse="Enumerate"):
  """Iterations per second of LiteEFG's `module` on the game (turn-based)."""
  import LiteEFG as leg  # pylint: disable=import-outside-toplevel
  import pyspiel  # pylint: disable=import-outside-toplevel
  game = pyspiel.load_game(game_string)
  if game.get_type().dynamics == pyspiel.GameType.Dynamics.SIMULTANEOUS:
    game = pyspiel.convert_to_turn_based(game)
  env = leg.OpenSpielEnv(game, traverse_type=traverse, regenerate=False)
  graph = importlib.import_module(f"LiteEFG.baselines.{module}").graph()
  env.set_graph(graph)

  def step(n):
    for _ in range(n):
      graph.update_graph(env)
      env.update_strategy(graph.current_strategy(), update_best=False)

  step(2)  # Warm-up.
  n, elapsed = 1, 0.0
  while elapsed < seconds:
    n *= 2
    start = time.perf_counter()
    step(n)
    elapsed = time.perf_counter() - start
  return n / elapsed


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f"Unexpected arguments: {' '.join(argv[1:])}")
  try:
    import LiteEFG  # pylint: disable=import-outside-toplevel,unused-import
  except ImportError as e:
    raise app.UsageError("LiteEFG is not installed here: run this in an "
                         "environment of its own (module docstring).") from e
  rows = []
  for game in _GAMES.value.split(";"):
    for module, variant in ALGORITHMS.items():
      r = rate(game, module, _SECONDS.value)
      rows.append({"game": game, "algorithm": f"liteefg_{module}",
                   "mccfrb_variant": variant, "per_second": round(r, 1)})
      print(rows[-1], flush=True)
  if _OUT.value:
    with open(_OUT.value, "w", newline="", encoding="utf-8") as f:
      writer = csv.DictWriter(f, fieldnames=list(rows[0]))
      writer.writeheader()
      writer.writerows(rows)


if __name__ == "__main__":
  app.run(main)
