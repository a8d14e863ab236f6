"""Solvers are their algorithm's options plus one backend (tree, engine or
grown), not a chain of mixins (docs/pages/architecture.md)."""

import ast
import pathlib

import pytest

import mccfrb
from mccfrb.solvers import base
from mccfrb.solvers import engine as engine_lib
from mccfrb.solvers import grown as grown_lib

SOLVERS = pathlib.Path(mccfrb.__file__).resolve().parent / "solvers"
G4 = ("goofspiel(num_cards=4,imp_info=True,points_order=random,"
      "returns_type=point_difference)")


def _solver_classes():
  pending, found = [base.TabularSolverBase], []
  while pending:
    cls = pending.pop()
    found.append(cls)
    pending.extend(cls.__subclasses__())
  return [c for c in found if c.__module__.startswith("mccfrb.")]


def test_no_solver_class_has_more_than_two_bases():
  classes = _solver_classes()
  assert len(classes) >= 8  # MCCFRb, OS, ES, public, CFR, UCT, ...
  wide = {c.__name__: [b.__name__ for b in c.__bases__] for c in classes
          if len(c.__bases__) > 2}
  assert not wide, wide


def test_no_solver_picks_its_algorithm_by_hasattr():
  """`hasattr(self, ...)` or `hasattr(solver, ...)` in mccfrb/solvers."""
  found = []
  for path in sorted(SOLVERS.glob("*.py")):
    for node in ast.walk(ast.parse(path.read_text())):
      if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
          and node.func.id == "hasattr" and node.args
          and isinstance(node.args[0], ast.Name)
          and node.args[0].id in ("self", "solver", "s")):
        found.append(f"{path.name}:{node.lineno}")
  assert not found, found


@pytest.mark.parametrize("cls, representation, backend", [
    (mccfrb.MCCFRbSolver, "tree", base.TreeBackend),
    (mccfrb.MCCFRbSolver, "engine", engine_lib.EngineBackend),
    (mccfrb.MCCFRbSolver, "grown", grown_lib.GrownBackend),
    (mccfrb.ExternalSamplingSolver, "grown", grown_lib.GrownBackend),
    (mccfrb.PublicSamplingSolver, "engine", engine_lib.EngineBackend),
    (mccfrb.CFRSolver, "engine", engine_lib.EngineBackend),
    (mccfrb.CFRSolver, "tree", base.TreeBackend),
])
def test_each_representation_is_one_backend(cls, representation, backend):
  solver = cls(G4, representation=representation)
  assert type(solver._backend) is backend  # pylint: disable=protected-access
  assert solver.representation == representation
  assert (solver.engine is None) == (representation != "engine")
  assert (solver.grown_tree is None) == (representation != "grown")
