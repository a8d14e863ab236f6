"""mccfrb/capabilities.py against the code and the pages generated from it.

Every claimed cell is constructed on a small game (construction only: no
kernel runs, so no compilation); every cell claimed unsupported must be
refused with a ValueError. The generated regions of the README and the
site must equal what `python -m mccfrb.capabilities --write` writes.
"""

import inspect
import re

import pytest

import mccfrb
from mccfrb import capabilities as caps

TREE_GAME = "kuhn_poker"
# A game with an engine, small enough to compile too.
ENGINE_GAME = ("goofspiel(num_cards=3,imp_info=True,points_order=random,"
               "returns_type=point_difference)")
# A game without an engine.
NO_ENGINE_GAME = "leduc_poker"
GENERAL_GAME = "kuhn_poker(players=3)"
# max_nodes below any of these games' sizes: "auto" finds them too large.
TINY = 10
GAME_OF = {"tree": TREE_GAME, "engine": ENGINE_GAME, "grown": TREE_GAME}
NAMES = [e["name"] for e in caps.SOLVERS]


def build(name, game, **options):
  return getattr(mccfrb, name)(game, **options)


def baseline_of(solver):
  if hasattr(solver, "_baseline_name"):
    return solver._baseline_name  # pylint: disable=protected-access
  return solver._settings["baseline"]  # pylint: disable=protected-access


def all_baselines(name):
  if name == "PublicSamplingSolver":
    return tuple(mccfrb.PUBLIC_BASELINES)
  return tuple(mccfrb.BASELINES)


def test_the_table_names_every_public_solver_and_nothing_else():
  public = {n for n in dir(mccfrb) if n.endswith("Solver")}
  assert set(NAMES) == public
  assert set(caps.REPRESENTATIONS) == set(mccfrb.REPRESENTATIONS)
  assert set(caps.ALL_BASELINES) == set(mccfrb.BASELINES)
  for e in caps.SOLVERS:
    assert set(e["representations"]) <= set(caps.EXPLICIT), e["name"]
    assert set(e["baselines"]) <= set(e["representations"]), e["name"]
    assert set(e["default_baseline"]) == set(e["baselines"]), e["name"]
    for r, kind in e["default_baseline"].items():
      assert kind in e["baselines"][r], (e["name"], r)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("representation", caps.EXPLICIT)
def test_representation_cells(name, representation):
  """A claimed representation constructs and runs there; an unclaimed one
  is refused (or, without `representation=`, not offered at all)."""
  entry = caps.solver(name)
  game = GAME_OF[representation]
  takes = "representation" in inspect.signature(
      getattr(mccfrb, name)).parameters
  assert takes == entry.get("takes_representation", True), name
  if not takes:
    assert entry["representations"] == ("tree",)
    if representation == "tree":
      build(name, game)
    return
  if representation in entry["representations"]:
    solver = build(name, game, representation=representation)
    assert solver.representation == representation
  else:
    with pytest.raises(ValueError):
      build(name, game, representation=representation)


@pytest.mark.parametrize("name", NAMES)
def test_auto_picks_as_claimed(name):
  """"auto": the tree when the game fits; the engine when the game has one
  and is too large; the grown tree when it has none, for the solvers that
  run grown trees; otherwise a refusal."""
  entry = caps.solver(name)
  order = caps.auto_choice(entry)
  if not order:
    return
  assert order[0] == "tree"
  assert build(name, TREE_GAME).representation == "tree"
  for game, wanted in ((ENGINE_GAME, "engine"), (NO_ENGINE_GAME, "grown")):
    if wanted in order:
      solver = build(name, game, max_nodes=TINY)
      assert solver.representation == wanted, (game, solver.representation)
    else:
      with pytest.raises(ValueError):
        build(name, game, max_nodes=TINY)


@pytest.mark.parametrize("name", NAMES)
def test_players_cells(name):
  """More than two players: runs on the claimed representations, refused
  elsewhere."""
  entry = caps.solver(name)
  for representation in entry["representations"]:
    options = ({"representation": representation}
               if entry.get("takes_representation", True) else {})
    if representation == "engine":
      continue  # No engine plays a game of three players.
    if representation in entry["general"]:
      build(name, GENERAL_GAME, **options)
    else:
      with pytest.raises(ValueError):
        build(name, GENERAL_GAME, **options)


@pytest.mark.parametrize("name", NAMES)
def test_baseline_cells(name):
  """Every baseline claimed on a representation constructs there and is
  the solver's; every other kind is refused; the default is as claimed."""
  entry = caps.solver(name)
  cls = getattr(mccfrb, name)
  if not entry["baselines"]:
    assert "baseline" not in inspect.signature(cls).parameters, name
    return
  for representation, kinds in entry["baselines"].items():
    game = GAME_OF[representation]
    solver = build(name, game, representation=representation)
    assert baseline_of(solver) == entry["default_baseline"][representation]
    for kind in all_baselines(name):
      if kind in kinds:
        solver = build(name, game, representation=representation,
                       baseline=kind)
        assert baseline_of(solver) == kind
      else:
        with pytest.raises(ValueError):
          build(name, game, representation=representation, baseline=kind)


@pytest.mark.parametrize("name", NAMES)
def test_seed_cells(name):
  takes = "seed" in inspect.signature(getattr(mccfrb, name)).parameters
  assert takes == caps.solver(name)["seed"], name


@pytest.mark.parametrize("name", NAMES)
def test_docstrings_name_the_representations(name):
  """The `representation:` argument of a solver's docstring names every
  representation the solver runs, and "auto"."""
  entry = caps.solver(name)
  if not entry.get("takes_representation", True):
    return
  doc = inspect.getdoc(getattr(mccfrb, name)) or ""
  match = re.search(r"^\s*representation:(.*?)(?=^\s*\w+(, \w+)*:|\Z)", doc,
                    re.M | re.S)
  assert match, f"{name}'s docstring does not describe representation="
  text = match.group(1)
  for representation in entry["representations"] + ("auto",):
    assert f'"{representation}"' in text, (name, representation)
  for representation in set(caps.EXPLICIT) - set(entry["representations"]):
    assert f'"{representation}" (' not in text, (name, representation)


def test_generated_regions_are_current():
  """Each file's generated regions equal what `--write` writes; run
  `python -m mccfrb.capabilities --write` after editing capabilities.py."""
  for name in caps.FILES:
    path = caps.ROOT / name
    assert caps.regions(path), f"{name} has no generated region"
  assert not caps.stale(), (
      f"stale: {caps.stale()}; run python -m mccfrb.capabilities --write")


def test_every_solver_table_is_generated():
  """No page keeps a hand-written copy of the solver table."""
  header = re.compile(r"^\| name \| what it is \|", re.M)
  pages = [caps.ROOT / "README.md"] + sorted(caps.PAGES.rglob("*.md"))
  for path in pages:
    text = path.read_text(encoding="utf-8")
    outside = caps._REGION.sub("", text)  # pylint: disable=protected-access
    assert not header.search(outside), f"{path}: a hand-written solver table"
