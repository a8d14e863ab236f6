r"""Plots exploitability against iterations and seconds from sweep CSV files.

  python -m experiments.plot --csv=results/convergence/convergence.csv \
      --out_prefix=results/convergence/plot

Log-log, one line per algorithm with the mean over seeds and a band from the
5th to the 95th percentile across seeds (of log exploitability); for the time
axis every seed is interpolated onto a common grid. Writes
{out_prefix}_{game}.png and .pdf, one pair per game (the game string in
file-name form), after removing the {out_prefix}_*.png/.pdf and
{out_prefix}_speedup.csv files of an earlier run.

Runs with a time budget (`convergence --seconds`), whose seeds reach
different iterations, are interpolated onto a common iteration grid as well;
--reference refuses them (iteration speedups need common checkpoints).

With --reference=NAME it also prints and writes ({out_prefix}_speedup.csv)
the iteration speedup of every algorithm over NAME, as
`experiments.convergence` does, reading NAME's rows from --reference_csv
(e.g. a long run of its own) or from the plotted CSVs:

  python -m experiments.plot --csv=a.csv --reference=os_optimistic \
      --reference_csv=reference.csv --out_prefix=out/plot
"""

import glob
import os
import sys

# Run by path (python experiments/NAME.py) as well as with -m:
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app  # pylint: disable=g-import-not-at-top
from absl import flags
import pandas as pd

from experiments import common
from mccfrb.experiment import analysis

_CSV = flags.DEFINE_list("csv", None, "Sweep CSV files.", required=True)
_OUT_PREFIX = flags.DEFINE_string("out_prefix", "results/plot",
                                  "Output path prefix.")
_REFERENCE = flags.DEFINE_string(
    "reference", "", "Registry name of the speedup reference (empty: none).")
_REFERENCE_CSV = flags.DEFINE_string(
    "reference_csv", "", "CSV holding the reference's rows (default: --csv).")

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
  if _REFERENCE.value:
    reference_df = (pd.read_csv(_REFERENCE_CSV.value) if _REFERENCE_CSV.value
                    else None)
    try:
      speedup = analysis.iteration_speedup(df, _REFERENCE.value, reference_df)
    except ValueError as e:
      common.fail(PROGRAM, e)
  folder, stem = os.path.split(_OUT_PREFIX.value)
  stem = glob.escape(stem)
  common.remove_earlier_outputs(folder or ".", [
      f"{stem}_*.png", f"{stem}_*.pdf", f"{stem}_speedup.csv"])
  if _REFERENCE.value:
    path = f"{_OUT_PREFIX.value}_speedup.csv"
    common.write_atomically(path, speedup.to_csv(index=False))
    with pd.option_context("display.width", 250, "display.max_columns", 40):
      print(f"iteration speedup over {_REFERENCE.value}:")
      print(analysis.format_speedup(speedup).to_string())
    print(f"wrote {path}")
  for path in analysis.plot(df, _OUT_PREFIX.value):
    print(f"wrote {path}")


if __name__ == "__main__":
  app.run(main)
