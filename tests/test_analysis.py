"""Iteration speedups, their table and the plots, on curves with known answers."""

import numpy as np
import pandas as pd
import pytest

from mccfrb.experiment import analysis

DECADES = [10**k for k in range(7)]
# Decades and points between them, so interpolation is exercised.
CHECKPOINTS = [1, 2, 3, 5, 10, 30, 100, 300, 1000, 3000, 10**4, 3 * 10**4,
               10**5, 2 * 10**5, 5 * 10**5, 10**6]


def rows(game, algorithm, curve, checkpoints, factors=(1.0,), nodes=True):
  """Tidy rows: seed s has exploitability factors[s] * curve(T) at T."""
  out = []
  for seed, factor in enumerate(factors):
    for t in checkpoints:
      out.append({"game": game, "algorithm": algorithm, "seed": seed,
                  "iteration": t, "seconds": 1e-3 * t * (seed + 1),
                  "nodes_touched": 7 * t + seed if nodes else None,
                  "exploitability": factor * curve(t)})
  return out


def frame(*parts):
  df = pd.DataFrame([r for part in parts for r in part])
  df["nodes_touched"] = df["nodes_touched"].astype("Int64")
  return df


def power_law_frame():
  reference = rows("g", "ref", lambda t: 1 / np.sqrt(t), DECADES,
                   factors=(1.0, 1.0), nodes=False)
  # Mean over seeds 1/sqrt(10 T); each seed's curve alone is off by 10-20%.
  algorithm = rows("g", "alg", lambda t: 1 / np.sqrt(10 * t), CHECKPOINTS,
                   factors=(1.1, 0.9))
  return frame(reference, algorithm)


def test_speedup_is_exact_for_power_laws_and_bounded_beyond_the_reference():
  speedup = analysis.iteration_speedup(power_law_frame(), reference="ref")
  assert list(speedup.columns) == list(analysis.SPEEDUP_COLUMNS)
  assert set(speedup["algorithm"]) == {"alg"}
  assert (speedup["reference"] == "ref").all()
  assert list(speedup["iteration"]) == CHECKPOINTS
  np.testing.assert_allclose(speedup["exploitability"],
                             [1 / np.sqrt(10 * t) for t in CHECKPOINTS],
                             rtol=1e-12)
  reached = speedup[speedup["iteration"] <= 10**5]
  beyond = speedup[speedup["iteration"] > 10**5]
  assert len(reached) == 13 and len(beyond) == 3
  assert (reached["bound"] == "=").all()
  np.testing.assert_allclose(reached["speedup"], 10.0, rtol=0, atol=1e-9)
  np.testing.assert_allclose(reached["reference_iterations"],
                             10.0 * reached["iteration"], rtol=1e-12)
  # Never extrapolated: the reference's run ends at 10^6 iterations.
  assert (beyond["bound"] == ">=").all()
  assert (beyond["reference_iterations"] == 10**6).all()
  np.testing.assert_allclose(beyond["speedup"], 10**6 / beyond["iteration"],
                             rtol=1e-12)
  # Means over seeds of nodes touched and seconds at the checkpoint.
  np.testing.assert_allclose(speedup["nodes_touched"],
                             [7 * t + 0.5 for t in CHECKPOINTS])
  np.testing.assert_allclose(speedup["seconds"],
                             [1.5e-3 * t for t in CHECKPOINTS])


def test_seconds_speedup_times_the_reference_at_its_speed_in_the_same_run():
  df = power_law_frame()
  # The reference takes 1.5e-3 s an iteration (mean of its two seeds), as
  # the algorithm does: 10x fewer iterations is 10x fewer seconds.
  speedup = analysis.iteration_speedup(df, "ref")
  reached = speedup[speedup["bound"] == "="]
  np.testing.assert_allclose(reached["reference_seconds"],
                             1.5e-3 * reached["reference_iterations"])
  np.testing.assert_allclose(reached["seconds_speedup"], 10.0, rtol=1e-9)
  beyond = speedup[speedup["bound"] == ">="]
  np.testing.assert_allclose(beyond["seconds_speedup"],
                             1.5e-3 * 10**6 / beyond["seconds"])
  # A long run read from another frame gives the curve; the speed is the
  # sweep's own reference rows' (same run, same machine) when it has them,
  # else the long run's.
  long_run = frame(rows("g", "ref", lambda t: 1 / np.sqrt(t), DECADES))
  long_run["seconds"] *= 4  # A machine 4x slower.
  both = analysis.iteration_speedup(df, "ref", reference_df=long_run)
  np.testing.assert_allclose(both["seconds_speedup"],
                             speedup["seconds_speedup"])
  only_long = analysis.iteration_speedup(df[df["algorithm"] != "ref"], "ref",
                                         reference_df=long_run)
  np.testing.assert_allclose(only_long["seconds_speedup"],
                             4 / 1.5 * speedup["seconds_speedup"])
  table = analysis.format_speedup(speedup, by="seconds", reported_only=True)
  assert list(table.columns) == [str(t) for t in CHECKPOINTS if t >= 10**4] + [
      "exploitability", "nodes touched", "seconds"]
  assert table.loc["alg", "10000"] == "10x"
  assert table.loc["alg", "1000000"] == ">= 1x"


def test_uncounted_nodes_are_nan_and_above_the_first_value_is_an_upper_bound():
  reference = rows("g", "ref", lambda t: 0.3 / np.sqrt(t / 10), [10, 100])
  algorithm = rows("g", "openspiel_x", lambda t: 0.5 if t == 1 else 0.3,
                   [1, 2], nodes=False)
  speedup = analysis.iteration_speedup(frame(reference, algorithm), "ref")
  first, second = speedup.iloc[0], speedup.iloc[1]
  assert (first["bound"], first["reference_iterations"], first["speedup"]) == (
      "<=", 10.0, 10.0)
  # Exactly the first value: reached at the first checkpoint.
  assert (second["bound"], second["speedup"]) == ("=", 5.0)
  assert speedup["nodes_touched"].isna().all()
  assert speedup["seconds"].notna().all()


def test_non_monotone_reference_uses_the_first_crossing():
  values = {1: 1.0, 10: 0.1, 100: 0.5, 1000: 0.01}
  reference = rows("g", "ref", values.get, list(values))
  targets = {1: 0.2, 2: 0.1, 3: 0.05}
  algorithm = rows("g", "alg", targets.get, list(targets))
  speedup = analysis.iteration_speedup(frame(reference, algorithm), "ref")
  speedup = speedup.set_index("iteration")
  # 0.2 lies on the line e = 1/T between checkpoints 1 and 10 (not on the
  # later segments from 10 to 100 or 100 to 1000, which also pass 0.2).
  assert speedup.loc[1, "reference_iterations"] == pytest.approx(5.0, 1e-12)
  assert speedup.loc[2, "reference_iterations"] == pytest.approx(10.0, 1e-12)
  # 0.05: the curve first falls to it between 100 (0.5) and 1000 (0.01).
  expected = 100 * 10 ** (np.log(0.05 / 0.5) / np.log(0.01 / 0.5))
  assert speedup.loc[3, "reference_iterations"] == pytest.approx(expected,
                                                                 1e-12)
  assert speedup.loc[3, "speedup"] == pytest.approx(expected / 3, 1e-12)
  assert (speedup["bound"] == "=").all()


def test_reference_from_another_frame_replaces_the_sweeps_rows():
  df = power_law_frame()
  # In df the reference is 100x worse; the long run in reference_df is the
  # exact power law, and its other algorithms and games are ignored.
  df.loc[df["algorithm"] == "ref", "exploitability"] *= 100
  long_run = frame(
      rows("g", "ref", lambda t: 1 / np.sqrt(t), DECADES + [10**7, 10**8]),
      rows("g", "alg", lambda t: 1.0, [1, 10]),
      rows("other_game", "ref", lambda t: 1.0, [1, 10]))
  speedup = analysis.iteration_speedup(df, "ref", reference_df=long_run)
  assert (speedup["bound"] == "=").all()
  np.testing.assert_allclose(speedup["speedup"], 10.0, rtol=0, atol=1e-9)
  # The sweep need not hold the reference at all.
  no_ref = df[df["algorithm"] != "ref"]
  again = analysis.iteration_speedup(no_ref, "ref", reference_df=long_run)
  # (The reference's speed then comes from the long run: the seconds
  # columns differ, tested above.)
  timing = ["reference_seconds", "seconds_speedup"]
  pd.testing.assert_frame_equal(speedup.drop(columns=timing),
                                again.drop(columns=timing))


def test_missing_reference_names_it_and_the_game():
  df = frame(rows("a", "ref", lambda t: 1 / t, [1, 10]),
             rows("a", "alg", lambda t: 1 / t, [1, 10]),
             rows("b", "alg", lambda t: 1 / t, [1, 10]))
  with pytest.raises(ValueError, match=r"'ref'.*'b'"):
    analysis.iteration_speedup(df, "ref")
  with pytest.raises(ValueError, match="'os_optimistic'"):
    analysis.iteration_speedup(df)
  with pytest.raises(ValueError, match="'ref'"):
    analysis.iteration_speedup(df[df["game"] == "b"], "ref",
                               reference_df=df[df["game"] == "a"])


def test_format_speedup_table():
  table = analysis.format_speedup(
      analysis.iteration_speedup(power_law_frame(), "ref"))
  assert list(table.index) == ["alg"]
  assert list(table.columns) == [str(t) for t in CHECKPOINTS] + [
      "exploitability", "nodes touched", "seconds"]
  assert table.loc["alg", "exploitability"] == f"{1 / np.sqrt(10**7):.3g}"
  assert table.loc["alg", "200000"] == ">= 5x"
  assert table.loc["alg", "1000000"] == ">= 1x"
  assert table.loc["alg", "nodes touched"] == "7e+06"
  assert table.loc["alg", "seconds"] == "1.5e+03"
  # Before 1% of the run (10^6 iterations): not reported.
  early = [str(t) for t in CHECKPOINTS if t < 10**4]
  assert early and all(table.loc["alg", c] == "-" for c in early)
  assert table.loc["alg", "10000"] == "10x"
  assert analysis.format_ratio(12.345) == "12.3x"
  assert analysis.format_ratio(249.7, ">=") == ">= 250x"
  assert analysis.format_ratio(12345.6) == "12,300x"
  assert analysis.format_ratio(0.5, "<=") == "<= 0.5x"


def test_plot_has_a_nodes_touched_panel_for_counting_algorithms(tmp_path):
  import matplotlib.image  # pylint: disable=g-import-not-at-top
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
  df = frame(rows("g", "alg", lambda t: 1 / np.sqrt(t), DECADES[:4],
                  factors=(1.0, 0.8)),
             rows("g", "openspiel_os_cpp", lambda t: 2 / np.sqrt(t),
                  DECADES[:4], factors=(1.0, 0.8), nodes=False))
  fig = analysis.plot_game(df, "g")
  assert len(fig.axes) == 3
  by_iterations, _, by_nodes = fig.axes
  assert [l.get_label() for l in by_iterations.get_lines()] == [
      "alg", "openspiel_os_cpp"]
  assert [l.get_label() for l in by_nodes.get_lines()] == ["alg"]
  np.testing.assert_allclose(by_nodes.get_lines()[0].get_xdata(),
                             [7.5, 70.5, 700.5, 7000.5])
  assert by_nodes.get_xlabel().startswith("nodes touched")
  assert any("openspiel_os_cpp" in t.get_text() for t in by_nodes.texts)
  plt.close(fig)
  paths = analysis.plot(df, str(tmp_path / "p"))
  assert paths == [str(tmp_path / "p_g.png"), str(tmp_path / "p_g.pdf")]
  height, width = matplotlib.image.imread(paths[0]).shape[:2]
  assert width > 3 * height  # 18 x 5 inches: three panels side by side.
  # Old CSVs without the column keep the two panels.
  fig = analysis.plot_game(df.drop(columns="nodes_touched"), "g")
  assert len(fig.axes) == 2
  plt.close(fig)


def test_plot_names_algorithms_whose_seeds_times_do_not_overlap(tmp_path):
  # Seed 0 trains for 1-2 s, seed 1 for 3-4 s: no common time grid. The
  # time panel must say so instead of dropping the curve (or crashing).
  rows = [{"game": "g", "algorithm": "a", "seed": s, "iteration": it,
           "seconds": sec, "exploitability": e, "nodes_touched": it * 10}
          for s, pairs in ((0, [(1, 1.0, 0.5), (10, 2.0, 0.1)]),
                           (1, [(1, 3.0, 0.5), (10, 4.0, 0.1)]))
          for it, sec, e in pairs]
  df = pd.DataFrame(rows)
  assert analysis.on_time_grid(df).empty
  fig = analysis.plot_game(df, "g")
  texts = [t.get_text() for t in fig.axes[1].texts]
  assert any("do not overlap" in t and "a" in t for t in texts)
  assert len(fig.axes[0].lines) == 1  # The iteration panel still has it.
