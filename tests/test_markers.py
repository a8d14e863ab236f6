"""The `slow` marker (tests/conftest.py): registered, so that
`--strict-markers` accepts every mark the suite uses, and on the tests the
fast loop (`pytest -m "not slow"`) leaves out."""

import ast
import pathlib
import re
import subprocess
import sys

TESTS = pathlib.Path(__file__).resolve().parent
# pytest's own marks (no registration needed).
BUILTIN = {"parametrize", "skip", "skipif", "xfail", "usefixtures",
           "filterwarnings"}


def marks_used():
  """{test file name: the `pytest.mark.NAME`s it uses}."""
  out = {}
  for path in sorted(TESTS.glob("test_*.py")):
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
      if (isinstance(node, ast.Attribute)
          and isinstance(node.value, ast.Attribute)
          and node.value.attr == "mark"
          and isinstance(node.value.value, ast.Name)
          and node.value.value.id == "pytest"):
        out.setdefault(path.name, set()).add(node.attr)
  return out


def test_every_mark_the_suite_uses_is_registered(pytestconfig):
  registered = {line.split(":")[0].split("(")[0].strip()
                for line in pytestconfig.getini("markers")}
  used = set().union(*marks_used().values())
  assert "slow" in registered and "slow" in used
  assert used - BUILTIN <= registered, used - BUILTIN - registered


def collected_ids(*args):
  """The test ids `pytest --co` collects with `args` (--strict-markers)."""
  done = subprocess.run(
      [sys.executable, "-m", "pytest", "--strict-markers", "--co", "-q",
       "-p", "no:cacheprovider", *map(str, args)],
      capture_output=True, text=True, timeout=300, cwd=TESTS.parent)
  assert done.returncode == 0, done.stdout + done.stderr
  return [line for line in done.stdout.splitlines() if "::" in line]


def collected(*files):
  """{"slow": ids, "not slow": ids}: the test ids pytest collects from
  `files` under each marker expression, with --strict-markers."""
  return {expression: collected_ids("-m", expression, *files)
          for expression in ("slow", "not slow")}


def test_strict_markers_selects_the_slow_tests():
  """The browser test is slow; this file's tests are not."""
  selected = collected(TESTS / "test_play_browser.py", __file__)
  assert selected["slow"] and all("test_play_browser.py" in t
                                  for t in selected["slow"])
  assert selected["not slow"] and all("test_markers.py" in t
                                      for t in selected["not slow"])


def test_the_fast_loop_keeps_goofspiels_engine_and_leaves_out_the_others():
  """SLOW_BEYOND_THE_CORE (tests/conftest.py) on a real collection: the
  engine runs equal to the tree runs are in the fast loop on goofspiel's
  engine and slow on liar's dice's, however they are parametrized."""
  selected = {expression: [t for t in ids
                           if "test_engine_run_is_the_tree_run" in t]
              for expression, ids in
              collected(TESTS / "test_engine_solvers.py").items()}
  assert selected["slow"] and all("liars_dice" in t
                                  for t in selected["slow"])
  assert selected["not slow"] and all("goofspiel" in t and
                                      "liars_dice" not in t
                                      for t in selected["not slow"])


def test_every_rule_beyond_the_core_marks_a_test():
  """A rule of SLOW_BEYOND_THE_CORE that matches no test id (a test
  renamed or removed) would leave its tests in the fast loop unnoticed."""
  from tests import conftest  # pylint: disable=import-outside-toplevel
  ids = collected_ids(TESTS)
  for reason, pattern in conftest.SLOW_BEYOND_THE_CORE.items():
    for alternative in pattern.split("|"):
      assert any(re.search(alternative, i) for i in ids), (reason, alternative)
