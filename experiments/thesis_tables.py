r"""Reproduces Tables 5.1-5.3 of the MCCFRb thesis (Kuchař 2020, chapter 5.3).

  python -m experiments.thesis_tables                  # 20 seeds, 10^6 iterations
  python -m experiments.thesis_tables --seeds=3 --max_power=4   # a quick look

For goofspiel 4, goofspiel 5 and Leduc: the thesis's variants "direct
average" (mccfrb_thesis), "exponentially decaying average"
(mccfrb_thesis_exponential, goofspiel 4 only, as in the thesis) and "no
updates" (os_optimistic: no baseline, the same optimistic averaging), plus the
corrected and stronger baselines with the same averaging
(mccfrb_{learned,history,predictive}_optimistic). Checkpoints 10^0 .. 10^max_power. Writes thesis.csv,
thesis_tables.md (the thesis's numbers beside ours) and the analogues of
Figures 5.1-5.6 (thesis_{game}.png/.pdf, the game string in file-name form) to --out_dir. Like experiments.convergence, it keeps
every finished run in {out_dir}/thesis_runs/ until the outputs are written:
Ctrl-C keeps them and the same command run again skips them.

Exploitability is evaluated with mccfrb's exact evaluator by default
(--evaluator=mccfrb; equal to pyspiel.exploitability within 1e-9, tested):
pyspiel's takes minutes per evaluation on goofspiel 5.
"""

import os
import sys
import time

os.environ.setdefault("NUMBA_NUM_THREADS", "1")
# Run by path (python experiments/NAME.py) as well as with -m:
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app  # pylint: disable=g-import-not-at-top
from absl import flags

from experiments import common
from mccfrb.experiment import analysis
from mccfrb.experiment import sweep

THESIS_GAMES = {"goofspiel4": common.GOOFSPIEL4, "goofspiel5": common.GOOFSPIEL5,
                "leduc": "leduc_poker"}
THESIS_VARIANTS = {"mccfrb_thesis": "Direct average",
                   "mccfrb_thesis_exponential": "Exponentially decaying average",
                   "os_optimistic": "No updates"}
# The stronger baselines with the thesis's optimistic averaging, so that every
# variant differs from "no updates" in its baseline only.
EXTRA = ["mccfrb_learned_optimistic", "mccfrb_history_optimistic",
         "mccfrb_predictive_optimistic"]
# (mean, std) of the thesis's exploitability at 10^0 .. 10^6 iterations.
THESIS = {
    ("goofspiel4", "mccfrb_thesis"): [(0.34, 0.06), (0.35, 0.07), (0.28, 0.07),
                                      (0.07, 0.02), (0.011, 0.004),
                                      (0.0013, 0.0004), (0.00018, 0.00007)],
    ("goofspiel4", "mccfrb_thesis_exponential"): [
        (0.34, 0.06), (0.32, 0.07), (0.30, 0.05), (0.22, 0.03), (0.20, 0.02),
        (0.24, 0.03), (0.25, 0.04)],
    ("goofspiel4", "os_optimistic"): [(0.34, 0.06), (0.30, 0.07), (0.17, 0.07),
                                      (0.06, 0.02), (0.012, 0.004),
                                      (0.0020, 0.0006), (0.00022, 0.00011)],
    ("goofspiel5", "mccfrb_thesis"): [(0.35, 0.05), (0.34, 0.03), (0.36, 0.05),
                                      (0.22, 0.05), (0.08, 0.02), (0.02, 0.01),
                                      (0.006, 0.002)],
    ("goofspiel5", "os_optimistic"): [(0.35, 0.05), (0.35, 0.05), (0.28, 0.05),
                                      (0.16, 0.02), (0.07, 0.01),
                                      (0.026, 0.004), (0.008, 0.001)],
    ("leduc", "mccfrb_thesis"): [(0.125, 0.002), (0.13, 0.01), (0.14, 0.01),
                                 (0.16, 0.01), (0.13, 0.02), (0.046, 0.006),
                                 (0.009, 0.002)],
    ("leduc", "os_optimistic"): [(0.125, 0.002), (0.134, 0.007), (0.14, 0.01),
                                 (0.16, 0.02), (0.08, 0.01), (0.030, 0.004),
                                 (0.008, 0.002)],
}

_GAMES = flags.DEFINE_list("games", list(THESIS_GAMES),
                           f"Which of {list(THESIS_GAMES)}.")
_SEEDS = flags.DEFINE_list("seeds", ["20"], "A count N or a list of seeds.")
_MAX_POWER = flags.DEFINE_integer("max_power", 6,
                                  "Checkpoints at 10^0 .. 10^max_power.")
_JOBS = flags.DEFINE_integer("jobs", 2, "Parallel worker processes.")
_EVALUATOR = flags.DEFINE_enum("evaluator", "mccfrb", list(sweep.EVALUATORS),
                               "mccfrb (exact, fast) or openspiel.")
_OUT_DIR = flags.DEFINE_string("out_dir", "experiments/results/thesis",
                               "Output folder.")

PROGRAM = "thesis_tables"
# Everything a run writes into --out_dir; an earlier run's are removed first.
OUTPUTS = ("thesis.csv", "thesis_tables.md", "thesis_*.png", "thesis_*.pdf")
RUNS = "thesis_runs"  # The finished runs of a sweep in progress.


def variants(game_key):
  names = [v for v in THESIS_VARIANTS
           if v != "mccfrb_thesis_exponential" or game_key == "goofspiel4"]
  return names + EXTRA


def markdown(df):
  """One table per game: thesis mean (std) beside ours, per checkpoint."""
  out = []
  for key, game in THESIS_GAMES.items():
    g = df[df["game"] == game]
    if g.empty:
      continue
    stats = analysis.by_iteration(g)
    seeds = analysis.count_text(g["seed"].nunique(), "seed")
    out.append(f"\n### {key}: `{game}` ({seeds})\n")
    out.append("Exploitability = NashConv / 2 (OpenSpiel's). Thesis numbers "
               "as printed (its own scale and game instances; see README).\n")
    out.append("| variant | iteration | thesis mean (std) | ours mean (std) | "
               "ours / no updates |")
    out.append("| --- | ---: | ---: | ---: | ---: |")
    base = stats[stats["algorithm"] == "os_optimistic"].set_index("iteration")
    for algorithm in variants(key):
      s = stats[stats["algorithm"] == algorithm]
      label = THESIS_VARIANTS.get(algorithm, algorithm)
      for _, row in s.iterrows():
        power = len(str(int(row["iteration"]))) - 1
        thesis = THESIS.get((key, algorithm))
        t = (f"{thesis[power][0]:g} ({thesis[power][1]:g})"
             if thesis and power < len(thesis) else "—")
        ratio = row["mean"] / base.loc[row["iteration"], "mean"] if (
            row["iteration"] in base.index) else float("nan")
        out.append(f"| {label} | {int(row['iteration'])} | {t} | "
                   f"{row['mean']:.4g} ({row['std']:.2g}) | {ratio:.2f} |")
  return "\n".join(out) + "\n"


def main(argv):
  if len(argv) > 1:
    common.fail(PROGRAM, f"unexpected arguments {argv[1:]}")
  unknown = set(_GAMES.value) - set(THESIS_GAMES)
  try:
    if unknown:
      raise ValueError(f"unknown games {sorted(unknown)}; allowed: "
                       f"{list(THESIS_GAMES)}")
    if not 0 <= _MAX_POWER.value <= 8:
      raise ValueError(f"max_power must be in 0..8, got {_MAX_POWER.value}")
    seeds = common.parse_seeds(_SEEDS.value)
    common.check_writable_dir(_OUT_DIR.value)
  except ValueError as e:
    common.fail(PROGRAM, e)
  tasks = []
  for key in _GAMES.value:
    tasks += sweep.make_tasks([THESIS_GAMES[key]], variants(key), seeds,
                              10**_MAX_POWER.value, _MAX_POWER.value + 1,
                              _EVALUATOR.value)
  print(f"{len(tasks)} runs, evaluator {_EVALUATOR.value}", flush=True)
  start = time.time()

  try:
    store = common.open_runs(_OUT_DIR.value, RUNS, tasks, OUTPUTS)
  except (ValueError, OSError) as e:
    common.fail(PROGRAM, e)
  with common.ExitOnFault(PROGRAM, store):
    sweep.run_sweep(tasks, jobs=_JOBS.value, progress=common.print_progress,
                    store=store)
    df = store.dataframe()
    # Left by an interrupted run of this sweep, if any.
    common.remove_earlier_outputs(_OUT_DIR.value, OUTPUTS, quiet=True)
    common.write_atomically(os.path.join(_OUT_DIR.value, "thesis.csv"),
                            df.to_csv(index=False))
    table = markdown(df)
    common.write_atomically(os.path.join(_OUT_DIR.value, "thesis_tables.md"),
                            table)
    print(table)
    for path in analysis.plot(df, os.path.join(_OUT_DIR.value, "thesis")):
      print(f"wrote {path}")
    store.remove()
  print(f"total {time.time() - start:.0f}s")


if __name__ == "__main__":
  app.run(main)
