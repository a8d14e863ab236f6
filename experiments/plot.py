r"""Plots exploitability against iterations and seconds from sweep CSV files.

  python -m experiments.plot --csv=results/convergence/convergence.csv \
      --out_prefix=results/convergence/plot

Log-log, one line per algorithm with the mean and a 95% confidence band over
seeds; for the time axis every seed is interpolated onto a common grid.
Writes {out_prefix}_{k}.png and .pdf, one pair per game.
"""

import os

from absl import app
from absl import flags
import pandas as pd

from experiments import common
from mccfrb import analysis

_CSV = flags.DEFINE_list("csv", None, "Sweep CSV files.", required=True)
_OUT_PREFIX = flags.DEFINE_string("out_prefix", "results/plot",
                                  "Output path prefix.")

PROGRAM = "plot"


def main(argv):
  if len(argv) > 1:
    common.fail(PROGRAM, f"unexpected arguments {argv[1:]}")
  missing = [p for p in _CSV.value if not os.path.isfile(p)]
  if missing:
    common.fail(PROGRAM, f"no such file(s): {', '.join(missing)}")
  try:
    common.check_writable_dir(os.path.dirname(_OUT_PREFIX.value) or ".")
  except ValueError as e:
    common.fail(PROGRAM, e)
  df = pd.concat([pd.read_csv(p) for p in _CSV.value], ignore_index=True)
  for path in analysis.plot(df, _OUT_PREFIX.value):
    print(f"wrote {path}")


if __name__ == "__main__":
  app.run(main)
