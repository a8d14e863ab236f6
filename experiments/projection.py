r"""Fits a power law to a run's later checkpoints and projects it to a target.

  python -m experiments.projection \
      --csv=experiments/results/nfsp/convergence.csv --target=0.1 \
      --target_label="Heinrich & Silver 2016's Leduc level (0.1)" \
      --noun="training episodes" \
      --out_prefix=experiments/results/nfsp/projection

Reads a convergence CSV (`experiments.convergence`), fits
e(T) = a T^(-b) by least squares in log-log to the mean curve's checkpoints
at or after --fit_fraction of the last iteration (default: the last decade),
and prints where the fitted line would reach --target, in iterations and in
hours at the run's own rate (last iteration / its training seconds). Writes
{out_prefix}.csv (one row per game and algorithm) and, for the first curve,
{out_prefix}.png/.pdf: the measured curve, the fit and, dashed on a grey
background, the projection. A projection extrapolates the fitted line; it
is not a measurement.
"""

import os
import sys

# Run by path (python experiments/NAME.py) as well as with -m:
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app  # pylint: disable=g-import-not-at-top
from absl import flags
import pandas as pd

from experiments import common
from mccfrb.experiment import analysis
from mccfrb.experiment import projection

_CSV = flags.DEFINE_string("csv", None, "A convergence CSV.", required=True)
_TARGET = flags.DEFINE_float("target", 0.1, "Exploitability to project to.")
_TARGET_LABEL = flags.DEFINE_string("target_label", "target",
                                    "Legend text of the target line.")
_FIT_FRACTION = flags.DEFINE_float(
    "fit_fraction", 0.1, "Fit checkpoints at or after this fraction of the "
    "last iteration.")
_NOUN = flags.DEFINE_string("noun", "iterations",
                            "What an iteration is, for the plot's x axis.")
_OUT_PREFIX = flags.DEFINE_string("out_prefix", "results/projection",
                                  "Output path prefix.")

PROGRAM = "projection"
COLUMNS = ("game", "algorithm", "seeds", "last_iteration",
           "last_exploitability", "iterations_per_second", "fit_from",
           "fit_to", "fit_points", "coefficient", "exponent", "target",
           "target_iterations", "target_hours")


def row(p):
  return {"game": p.game, "algorithm": p.algorithm, "seeds": p.seeds,
          "last_iteration": p.last_iteration,
          "last_exploitability": p.last_exploitability,
          "iterations_per_second": p.iterations_per_second,
          "fit_from": p.fit.fit_from, "fit_to": p.fit.fit_to,
          "fit_points": p.fit.num_points, "coefficient": p.fit.coefficient,
          "exponent": p.fit.exponent, "target": p.target,
          "target_iterations": p.target_iterations,
          "target_hours": p.target_hours}


def main(argv):
  if len(argv) > 1:
    common.fail(PROGRAM, f"unexpected arguments {argv[1:]}")
  try:
    if _TARGET.value <= 0:
      raise ValueError(f"--target must be positive, got {_TARGET.value}")
    df = common.read_csv_with_columns(
        _CSV.value, ("game", "algorithm", "seed", "iteration", "seconds",
                     "exploitability"), "--csv")
    curves = df[["game", "algorithm"]].drop_duplicates().values.tolist()
    projections = [projection.project(df, g, a, _TARGET.value,
                                      _FIT_FRACTION.value) for g, a in curves]
    common.check_writable_dir(os.path.dirname(_OUT_PREFIX.value) or ".")
  except ValueError as e:
    common.fail(PROGRAM, e)
  folder, stem = os.path.split(_OUT_PREFIX.value)
  common.remove_earlier_outputs(folder or ".", [f"{stem}.csv", f"{stem}.png",
                                                f"{stem}.pdf"])
  table = pd.DataFrame([row(p) for p in projections], columns=list(COLUMNS))
  common.write_atomically(f"{_OUT_PREFIX.value}.csv",
                          table.to_csv(index=False))
  with pd.option_context("display.width", 250, "display.max_columns", 20,
                         "display.float_format", "{:.4g}".format):
    print("power-law fits e(T) = coefficient * T^-exponent and their "
          "PROJECTIONS to the target (extrapolated, not measured):")
    print(table.to_string(index=False))
  print(f"wrote {_OUT_PREFIX.value}.csv")
  fig = projection.plot_projection(df, projections[0], _TARGET_LABEL.value,
                                   _NOUN.value)
  for path in analysis.save_figure(fig, _OUT_PREFIX.value):
    print(f"wrote {path}")


if __name__ == "__main__":
  app.run(main)
