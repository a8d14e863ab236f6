"""What runs where, written once: solvers, representations, games, baselines.

`SOLVERS` says, for each solver, which representations it runs ("tree",
"engine", "grown"; "auto" picks among them), whether it runs games with
more than two players or general-sum returns, which baselines it takes on
each representation and which it takes by default, and whether it takes a
`seed`. `OTHERS` lists the rest of the public API's headline names.
tests/test_capabilities.py checks every claim against the code by
constructing the solvers; the README's and the site's tables are generated
from this module:

```bash
python -m mccfrb.capabilities --write   # rewrite the generated regions
python -m mccfrb.capabilities --check   # exit 1 if a region is stale
```

A generated region sits between `<!-- capabilities:NAME:begin -->` and
`<!-- capabilities:NAME:end -->` in a Markdown file; NAME is one of
`REGIONS`. Links in the data are relative to docs/pages/; the README's
copies are rewritten to start with docs/pages/.
"""

import pathlib
import re
import sys

from mccfrb.kernels import baselines as baselines_lib
from mccfrb.solvers import external as external_solver
from mccfrb.solvers import outcome as outcome_solver
from mccfrb.solvers import public as public_solver

# The representations a solver's `representation=` takes; "auto" picks one.
REPRESENTATIONS = ("tree", "engine", "grown", "auto")
EXPLICIT = ("tree", "engine", "grown")

# What each representation is, for the tables' notes.
REPRESENTATION_NOTES = {
    "tree": "the game compiled once into flat arrays (`compile_tree`): the "
            "fastest kernels, for games that fit in memory",
    "engine": "a native numba engine (goofspiel, liar's dice, phantom "
              "tic-tac-toe, dark hex) with hashed "
              "infoset tables that grow as they are visited, for games too "
              "large to compile ([Adding an engine](engines.md))",
    "grown": "a tree that grows as episodes reach new histories, for any "
             "two-player zero-sum OpenSpiel game ([Any game](grown.md))",
    "auto": "the tree when the game's estimated size fits in `max_nodes`, "
            "else the engine when the game has one, else the grown tree "
            "where the solver runs it",
}

# The baseline kinds of outcome sampling (kernels/baselines.py, the
# registry), by representation.
ALL_BASELINES = tuple(baselines_lib.BASELINES)
OUTCOME_BASELINES = {r: baselines_lib.kinds(r) for r in EXPLICIT}
PUBLIC_BASELINES = {r: tuple(k for k in baselines_lib.kinds(
    r, public_solver.PUBLIC_KEYS) if k in public_solver.PUBLIC_BASELINES)
                    for r in ("tree", "engine")}

SOLVERS = (
    dict(
        name="MCCFRbSolver",
        summary=("outcome-sampling MCCFR with baselines; default MCCFRb+ "
                 "(RM+, optimistic linear averaging) with the predictive "
                 "baseline on a tree, the situation-keyed one on an engine "
                 f"(float32 tables, 8 episodes in flight); {len(ALL_BASELINES)} "
                 "baseline kinds, each a key and a learning rule "
                 "([Baselines](baselines.md))"),
        representations=EXPLICIT,
        general=("tree",),
        baselines=OUTCOME_BASELINES,
        default_baseline=outcome_solver.DEFAULT_BASELINE,
        seed=True,
    ),
    dict(
        name="OutcomeSamplingSolver",
        summary=("OpenSpiel's outcome sampling, exactly (no baseline, RM, "
                 "stochastic averaging)"),
        representations=EXPLICIT,
        general=("tree",),
        baselines={"tree": ("none",), "engine": ("none",),
                   "grown": ("none",)},
        default_baseline={"tree": "none", "engine": "none", "grown": "none"},
        seed=True,
    ),
    dict(
        name="PublicSamplingSolver",
        summary=("MCCFRb over public states: every history of a sampled "
                 "public state at once (trees, and engines whose public "
                 "states stay small)"),
        representations=("tree", "engine"),
        general=(),
        baselines=PUBLIC_BASELINES,
        default_baseline=public_solver.DEFAULT_PUBLIC_BASELINE,
        seed=True,
    ),
    dict(
        name="ExternalSamplingSolver",
        summary=("external-sampling MCCFR, with linear or discounted "
                 "weighting and regret-based pruning "
                 "([External sampling](external.md))"),
        representations=EXPLICIT,
        general=("tree",),
        baselines={"tree": ("none",), "engine": external_solver.ES_BASELINES,
                   "grown": ("none",)},
        default_baseline={"tree": "none", "engine": "none", "grown": "none"},
        seed=True,
    ),
    dict(
        name="CFRSolver",
        summary=("exact CFR, CFR+, linear CFR, DCFR, PCFR+, DCFR+ and "
                 "PDCFR+, or a regret rule of your own in a few lines "
                 "([Exact CFR](exact-cfr.md)); alternating or simultaneous "
                 "updates as OpenSpiel's"),
        representations=("tree", "engine"),
        general=("tree",),
        baselines={},
        default_baseline={},
        seed=True,
    ),
    dict(
        name="SmoothUCTSolver",
        summary=("Smooth UCT self-play (Heinrich and Silver 2015) "
                 "([UCT and Smooth UCT](mcts.md))"),
        representations=("tree",),
        general=(),
        baselines={},
        default_baseline={},
        seed=True,
        takes_representation=False,
    ),
    dict(
        name="UCTSolver",
        summary="extensive-form UCT self-play ([UCT and Smooth UCT](mcts.md))",
        representations=("tree",),
        general=(),
        baselines={},
        default_baseline={},
        seed=True,
        takes_representation=False,
    ),
)

# Headline names that are not solvers of the table above: (name, summary).
OTHERS = (
    ("regret_matching", "RM and RM+ on normal-form games"),
    ("exploitability, nash_conv, best_response",
     "exact evaluation on the compiled tree, or by a streaming walk of the "
     "public tree on engines; `nash_conv` also on games with more players "
     "([Games, trees, exact evaluation](games.md))"),
    ("head_to_head",
     "policy A against policy B in both seats by Monte Carlo, with a "
     "confidence interval, for games too large to walk "
     "([Head-to-head evaluation](big-games.md#head-to-head-evaluation))"),
    ("approximate_exploitability",
     "a lower bound on exploitability with a 95% interval: best "
     "responders trained against the fixed policy, scored on fresh "
     "episodes, for games no exact walk finishes "
     "([Exploitability bounds](bound.md))"),
    ("mccfrb.compat",
     "stand-ins for OpenSpiel's `cfr`, `discounted_cfr`, "
     "`outcome_sampling_mccfr`, `external_sampling_mccfr` and "
     "`exploitability` modules: swap the import, keep the script "
     "([OpenSpiel's API](general-games.md#openspiels-api))"),
)


def solver(name):
  """The entry of SOLVERS named `name` (KeyError if there is none)."""
  for entry in SOLVERS:
    if entry["name"] == name:
      return entry
  raise KeyError(name)


def auto_choice(entry):
  """What representation="auto" picks for a solver, in order of preference
  (a tuple of explicit representations), or () when the solver takes no
  `representation=` argument."""
  if not entry.get("takes_representation", True):
    return ()
  return tuple(r for r in EXPLICIT if r in entry["representations"])


# ----------------------------------------------------------------------------
# Rendering.

YES, NO = "yes", "no"


def _row(cells):
  return "| " + " | ".join(cells) + " |"


def _table(header, rows):
  lines = [_row(header), _row(["---"] * len(header))]
  lines += [_row(r) for r in rows]
  return "\n".join(lines)


def render_solvers():
  """The table of headline names: name | what it is."""
  rows = [[f"`{e['name']}`", e["summary"]] for e in SOLVERS]
  rows += [[", ".join(f"`{n.strip()}`" for n in name.split(",")), summary]
           for name, summary in OTHERS]
  return _table(["name", "what it is"], rows)


def _auto_cell(entry):
  choice = auto_choice(entry)
  if not choice:
    return "tree only (no `representation=`)"
  return " → ".join(choice)


def _general_cell(entry):
  if not entry["general"]:
    return "two-player zero-sum only"
  return "any number of players, general-sum: on the " + ", ".join(
      entry["general"])


def _baseline_cell(entry):
  if not entry["baselines"]:
    return "none (no `baseline=`)"
  kinds = sorted({len(v) for v in entry["baselines"].values()})
  if kinds == [1]:
    return "none (`baseline=\"none\"` only)"
  return "see [Baselines by representation](which-solver.md#baselines-by-representation)"


def render_matrix():
  """What runs where: solver × representation × players × baselines."""
  rows = []
  for e in SOLVERS:
    cells = [f"`{e['name']}`"]
    cells += [YES if r in e["representations"] else NO for r in EXPLICIT]
    cells += [_auto_cell(e), _general_cell(e), _baseline_cell(e),
              YES if e["seed"] else NO]
    rows.append(cells)
  return _table(["solver", "tree", "engine", "grown", "auto picks",
                 "players, returns", "baselines", "`seed=`"], rows)


def render_baselines():
  """Baselines by representation (the default in bold), for the solvers
  that take `baseline=`."""
  rows = []
  for e in SOLVERS:
    if not e["baselines"] or all(len(v) == 1 for v in e["baselines"].values()):
      continue
    cells = [f"`{e['name']}`"]
    for r in EXPLICIT:
      kinds = e["baselines"].get(r)
      if kinds is None:
        cells.append("—")
        continue
      default = e["default_baseline"][r]
      cells.append(", ".join(f"**`{k}`**" if k == default else f"`{k}`"
                             for k in kinds))
    rows.append(cells)
  return _table(["solver", "tree", "engine", "grown"], rows) + (
      "\n\nThe default (`baseline=None`) is in bold. A kind runs where its "
      "key and its rule do (`mccfrb.kernels.baselines`): the oracle needs "
      "the exact values of every history, which only a compiled tree has; "
      "situation and public keys come from an engine or a compiled tree, "
      "observation keys from OpenSpiel's observation strings.")


def render_representations():
  """The representations, one line each."""
  return "\n".join(f"- `\"{r}\"`: {REPRESENTATION_NOTES[r]}."
                   for r in REPRESENTATIONS)


REGIONS = {
    "solvers": render_solvers,
    "matrix": render_matrix,
    "baselines": render_baselines,
    "representations": render_representations,
}

ROOT = pathlib.Path(__file__).resolve().parents[1]
PAGES = ROOT / "docs" / "pages"
# The files with generated regions (relative to the repository root).
FILES = ("README.md", "docs/pages/index.md", "docs/pages/which-solver.md",
         "docs/pages/usage.md", "docs/pages/engines.md")

_REGION = re.compile(
    r"(<!-- capabilities:(?P<name>[a-z]+):begin -->\n)(?P<body>.*?)"
    r"(<!-- capabilities:(?P=name):end -->)", re.S)
_PAGE_LINK = re.compile(r"\]\((?![a-z]+:|#|/)([^)]+)\)")


def render(name, path):
  """The text of region `name` as it belongs in the file at `path`
  (a pathlib.Path): links are made relative to that file."""
  text = REGIONS[name]()
  prefix = pathlib.Path(
      *[".."] * len(path.resolve().parent.relative_to(PAGES).parts)
  ) if path.resolve().is_relative_to(PAGES) else (
      PAGES.relative_to(path.resolve().parent))
  prefix = prefix.as_posix()
  if prefix not in ("", "."):
    text = _PAGE_LINK.sub(lambda m: f"]({prefix}/{m.group(1)})", text)
  return text + "\n"


def regions(path):
  """The names of the generated regions in the file at `path`."""
  return [m.group("name")
          for m in _REGION.finditer(path.read_text(encoding="utf-8"))]


def rewritten(path):
  """The text of the file at `path` with every generated region rewritten.

  Raises:
    ValueError: a region's name is not in REGIONS.
  """
  def fill(match):
    name = match.group("name")
    if name not in REGIONS:
      raise ValueError(f"{path}: unknown capabilities region {name!r}; "
                       f"known: {', '.join(REGIONS)}.")
    return match.group(1) + render(name, path) + match.group(4)
  return _REGION.sub(fill, path.read_text(encoding="utf-8"))


def stale(root=ROOT):
  """The files of FILES whose generated regions differ from `rewritten`."""
  return [name for name in FILES
          if (root / name).read_text(encoding="utf-8")
          != rewritten(root / name)]


def main(argv):
  """`--write` rewrites the regions of FILES; `--check` exits 1 when one is
  stale; no argument prints the tables."""
  if argv[1:] == ["--write"]:
    for name in FILES:
      path = ROOT / name
      text = rewritten(path)
      if text != path.read_text(encoding="utf-8"):
        path.write_text(text, encoding="utf-8")
        print(f"rewrote {name}")
    return 0
  if argv[1:] == ["--check"]:
    names = stale()
    for name in names:
      print(f"{name}: stale; run python -m mccfrb.capabilities --write")
    return 1 if names else 0
  if argv[1:]:
    print("usage: python -m mccfrb.capabilities [--write | --check]")
    return 2
  for name in REGIONS:
    print(f"## {name}\n\n{render(name, PAGES / 'index.md')}")
  return 0


if __name__ == "__main__":
  sys.exit(main(sys.argv))
