"""Power-law fits and projections, on curves with known answers."""

import os
import pathlib
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from mccfrb.experiment import projection

ROOT = pathlib.Path(__file__).resolve().parents[1]
CHECKPOINTS = [1, 3, 10, 30, 100, 300, 1000, 3000, 10_000]


def curve_rows(curve, seeds=(0,), factors=(1.0,), rate=100.0):
  return pd.DataFrame([
      {"game": "g", "algorithm": "a", "seed": s, "iteration": t,
       "seconds": t / rate, "exploitability": f * curve(t)}
      for s, f in zip(seeds, factors) for t in CHECKPOINTS])


def test_fit_recovers_an_exact_power_law_from_the_later_points():
  t = np.array(CHECKPOINTS, float)
  # A different law before 1000: only the later points are fitted.
  e = np.where(t >= 1000, 2.0 * t**-0.5, 1.0)
  fit = projection.fit_power_law(t, e, fit_from=1000)
  assert (fit.fit_from, fit.fit_to, fit.num_points) == (1000, 10_000, 3)
  assert fit.coefficient == pytest.approx(2.0, rel=1e-12)
  assert fit.exponent == pytest.approx(0.5, rel=1e-12)
  assert fit.reaching(0.002) == pytest.approx(1e6, rel=1e-9)
  np.testing.assert_allclose(fit(t[-3:]), e[-3:], rtol=1e-12)


def test_a_curve_that_does_not_fall_never_reaches_the_target():
  fit = projection.fit_power_law([100, 1000], [0.5, 0.6], fit_from=100)
  assert fit.exponent < 0 and fit.reaching(0.1) == float("inf")


def test_fit_needs_two_positive_points():
  with pytest.raises(ValueError, match="at least 2 checkpoints"):
    projection.fit_power_law([1, 10, 100], [1, 1, 1], fit_from=50)
  with pytest.raises(ValueError, match="positive"):
    projection.fit_power_law([1, 10], [1, 0], fit_from=1)


def test_project_uses_the_mean_curve_and_the_runs_rate():
  # Seeds at 0.9x and 1.1x of e = 3 T^-0.25: the mean is exact.
  df = curve_rows(lambda t: 3.0 * t**-0.25, seeds=(0, 1), factors=(0.9, 1.1),
                  rate=50.0)
  p = projection.project(df, "g", "a", target=0.03)
  assert p.seeds == 2 and p.last_iteration == 10_000
  assert p.fit.fit_from == 1000 and p.fit.num_points == 3
  assert p.fit.exponent == pytest.approx(0.25, rel=1e-9)
  assert p.iterations_per_second == pytest.approx(50.0)
  assert p.target_iterations == pytest.approx(1e8, rel=1e-6)
  assert p.target_hours == pytest.approx(1e8 / 50 / 3600, rel=1e-6)
  with pytest.raises(ValueError, match="no rows"):
    projection.project(df, "g", "other", target=0.1)


def run_binary(*args):
  return subprocess.run([sys.executable, "-m", "experiments.projection", *args],
                        cwd=ROOT, capture_output=True, text=True, timeout=300,
                        env=dict(os.environ))


@pytest.mark.slow
def test_binary_writes_the_fit_and_the_plot_and_refuses_bad_input(tmp_path):
  csv = tmp_path / "convergence.csv"
  curve_rows(lambda t: 2.0 * t**-0.5).to_csv(csv, index=False)
  out = tmp_path / "out" / "projection"
  done = run_binary(f"--csv={csv}", "--target=0.002", f"--out_prefix={out}")
  assert done.returncode == 0, done.stderr
  assert "PROJECTIONS" in done.stdout
  table = pd.read_csv(f"{out}.csv")
  assert table.loc[0, "target_iterations"] == pytest.approx(1e6, rel=1e-6)
  assert table.loc[0, "target_hours"] == pytest.approx(1e6 / 100 / 3600,
                                                       rel=1e-6)
  assert os.path.getsize(f"{out}.png") > 10_000
  bad = run_binary(f"--csv={tmp_path}/none.csv", f"--out_prefix={out}")
  assert bad.returncode == 1
  assert bad.stderr.strip().splitlines()[-1].startswith(
      "projection: error: --csv: no such file")
  bad = run_binary(f"--csv={csv}", "--target=0", f"--out_prefix={out}")
  assert bad.returncode == 1 and "--target must be positive" in bad.stderr
