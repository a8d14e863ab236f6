"""Imports run one way, down the flow (docs/pages/architecture.md):
base -> games -> tables -> kernels -> solvers -> evaluation -> experiment
-> front.

Every module under mccfrb/ is parsed with `ast` (never imported), mapped to
its layer by its folder, and every import of an mccfrb module, at the top or
inside a function, is checked: a module may import from its own layer and
the layers below it, never from a layer above.
"""

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "mccfrb"

# Layers from the bottom up: (name, module prefixes). A module belongs to the
# layer of the longest prefix that names it or one of its packages.
LAYERS = (
    ("base", ("mccfrb.counts", "mccfrb.files", "mccfrb.numba_cache",
              "mccfrb.version")),
    ("games", ("mccfrb.games",)),
    ("tables", ("mccfrb.tables",)),
    ("kernels", ("mccfrb.kernels",)),
    ("solvers", ("mccfrb.solvers",)),
    ("evaluation", ("mccfrb.evaluation",)),
    ("experiment", ("mccfrb.experiment",)),
    # What users call and nothing below imports: the public API, OpenSpiel's
    # stand-ins, the play page, the table generator, the warm-up command,
    # the references the tests compare against.
    ("front", ("mccfrb", "mccfrb.compat", "mccfrb.play",
               "mccfrb.capabilities", "mccfrb.warmup", "mccfrb.reference")),
)
LEVEL = {prefix: (level, name)
         for level, (name, prefixes) in enumerate(LAYERS)
         for prefix in prefixes}


def module_name(path):
  """mccfrb/games/tree.py -> mccfrb.games.tree; a package's __init__.py
  names the package."""
  parts = list(path.relative_to(ROOT).with_suffix("").parts)
  if parts[-1] == "__init__":
    parts.pop()
  return ".".join(parts)


def all_modules():
  """{module name: path} of every module under mccfrb/."""
  return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def layer_of(module):
  """(level, layer name) of `module`, by its longest listed prefix."""
  parts = module.split(".")
  for n in range(len(parts), 0, -1):
    found = LEVEL.get(".".join(parts[:n]))
    if found is not None:
      return found
  raise KeyError(module)


def imported_modules(module, path, modules):
  """(line, imported mccfrb module) of every import in `path`, at any depth.

  `from X import name` imports module X.name when that is a module of the
  package, else X. Relative imports are resolved against `module`.
  """
  package = module if path.name == "__init__.py" else module.rpartition(".")[0]
  found = []
  for node in ast.walk(ast.parse(path.read_text(), str(path))):
    if isinstance(node, ast.Import):
      found += [(node.lineno, a.name) for a in node.names]
    elif isinstance(node, ast.ImportFrom):
      base = node.module or ""
      if node.level:
        anchor = package.split(".")
        anchor = anchor[:len(anchor) - (node.level - 1)]
        base = ".".join(anchor + ([base] if base else []))
      for alias in node.names:
        target = f"{base}.{alias.name}"
        found.append((node.lineno, target if target in modules else base))
  return [(line, name) for line, name in found
          if name == "mccfrb" or name.startswith("mccfrb.")]


def upward_imports():
  """Lines 'path:line: module (layer) imports target (layer above)'."""
  modules = all_modules()
  bad = []
  for module, path in modules.items():
    level, layer = layer_of(module)
    for line, target in imported_modules(module, path, modules):
      target_level, target_layer = layer_of(target)
      if target_level > level:
        bad.append(f"{path.relative_to(ROOT)}:{line}: {module} ({layer}) "
                   f"imports {target} ({target_layer})")
  return bad


def test_every_module_has_a_layer():
  unmapped = []
  for module in all_modules():
    try:
      layer_of(module)
    except KeyError:
      unmapped.append(module)
  assert not unmapped, f"modules in no layer of LAYERS: {unmapped}"


def test_no_import_goes_up_a_layer():
  bad = upward_imports()
  assert not bad, ("imports from a layer above their own (flow: "
                   + " -> ".join(name for name, _ in LAYERS) + "):\n"
                   + "\n".join(bad))


def test_checker_reads_nested_and_relative_imports(tmp_path):
  """An import inside a function and a relative import are both seen."""
  source = tmp_path / "tree.py"
  source.write_text("def f():\n  from mccfrb.solvers import base\n"
                    "from . import forms\nimport numpy\n")
  found = imported_modules("mccfrb.games.tree", source, all_modules())
  assert sorted(found) == [(2, "mccfrb.solvers.base"),
                           (3, "mccfrb.games.forms")]
  assert layer_of("mccfrb.solvers.base")[0] > layer_of("mccfrb.games.tree")[0]


@pytest.mark.parametrize("module, layer", [
    ("mccfrb", "front"), ("mccfrb.counts", "base"),
    ("mccfrb.games.engines.goofspiel", "games"),
    ("mccfrb.tables.hashed", "tables"), ("mccfrb.kernels.outcome", "kernels"),
    ("mccfrb.solvers.base", "solvers"),
    ("mccfrb.evaluation.head_to_head", "evaluation"),
    ("mccfrb.experiment.sweep", "experiment"),
])
def test_layer_of(module, layer):
  assert layer_of(module)[1] == layer
