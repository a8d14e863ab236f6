"""User pages and docstrings describe the product as it is; the API
reference covers every public module and every name the docs mention.

History (releases, issues, earlier states) belongs in CHANGELOG.md; measured
goals and comparisons with earlier runs on docs/pages/results.md.
"""

import ast
import importlib
import pathlib
import pkgutil
import re

import mccfrb

ROOT = pathlib.Path(__file__).resolve().parents[1]
PAGES = ROOT / "docs" / "pages"
API = PAGES / "api"
RESULTS = PAGES / "results.md"

# Words of history, refused on every user page and in every docstring.
HISTORY = [
    r"\bthis release\b", r"\b(?:before|until|since) this release\b",
    r"\bissues? \d+", r"\bissue \"", r"\bthe issue\b", r"\bissue's\b",
    r"\bthis README\b", r"\(\d+(?:\.\d+)? ?s before\)", r"\bas before\b",
    r"\bbefore threads existed\b", r"\bREADME,? \"", r"\bmoonshot\b",
]
# Comparisons with earlier states: only on the results page.
EARLIER = [
    r"\bprevious tables\b", r"\bearlier (?:runs?|tables|kernels|probe)\b",
    r"\bthe default before\b", r"\bnow the default\b", r"\bre-measured\b",
    r"\bbefore stop \d+", r"\bwas the default\b",
]
# Docstrings allowed to keep a history word, named one by one so that any
# new one fails (none).
KNOWN_DOCSTRINGS = set()


def user_pages():
  return [ROOT / "README.md"] + sorted(PAGES.rglob("*.md"))


def hits(text, patterns):
  out = []
  for pattern in patterns:
    for match in re.finditer(pattern, text, re.I):
      line = text.count("\n", 0, match.start()) + 1
      out.append((line, pattern, match.group(0)))
  return out


def docstrings(path):
  tree = ast.parse(path.read_text(encoding="utf-8"))
  for node in ast.walk(tree):
    if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef,
                         ast.AsyncFunctionDef)):
      doc = ast.get_docstring(node, clean=False)
      if doc:
        yield getattr(node, "name", "<module>"), doc


def test_no_history_on_user_pages():
  found = []
  for path in user_pages():
    text = path.read_text(encoding="utf-8")
    patterns = HISTORY + ([] if path == RESULTS else EARLIER)
    for line, _, word in hits(text, patterns):
      found.append(f"{path.relative_to(ROOT)}:{line}: {word!r}")
  assert not found, ("history belongs in CHANGELOG.md, comparisons with "
                     "earlier runs in docs/pages/results.md:\n"
                     + "\n".join(found))


def test_no_history_in_docstrings():
  found = []
  for path in sorted((ROOT / "mccfrb").rglob("*.py")):
    name = path.relative_to(ROOT).as_posix()
    for owner, doc in docstrings(path):
      for _, pattern, word in hits(doc, HISTORY + EARLIER):
        if (name, pattern) not in KNOWN_DOCSTRINGS:
          found.append(f"{name} ({owner}): {word!r}")
  assert not found, "\n".join(found)


def test_the_checks_see_history():
  """The patterns match the words they are for."""
  for text in ("until this release", "issue 21", "the issue asks",
               "(50 s before)", "this README", 'see README, "Threads"'):
    assert hits(text, HISTORY), text
  assert hits("on the previous tables", EARLIER)
  assert not hits("the cases checked before the first iteration", HISTORY)


def documented_modules():
  """The modules of the reference's `::: module` directives."""
  out = set()
  for page in API.glob("*.md"):
    out |= set(re.findall(r"^::: ([\w.]+)", page.read_text(encoding="utf-8"),
                          re.M))
  return out


def public_modules():
  return sorted(m.name for m in pkgutil.walk_packages(mccfrb.__path__,
                                                      "mccfrb.")
                if not any(p.startswith("_") for p in m.name.split(".")))


def test_every_public_module_is_in_the_reference():
  missing = set(public_modules()) - documented_modules()
  assert not missing, f"not in docs/pages/api/*.md: {sorted(missing)}"
  assert "mccfrb" in documented_modules()


def resolve(name):
  """(module name, object) of a dotted `mccfrb.` name: the longest prefix
  that imports, then attributes; ImportError/AttributeError otherwise."""
  parts = name.split(".")
  for cut in range(len(parts), 0, -1):
    module_name = ".".join(parts[:cut])
    try:
      obj = importlib.import_module(module_name)
    except ModuleNotFoundError:
      continue
    for attr in parts[cut:]:
      obj = getattr(obj, attr)
    return module_name, obj
  raise ImportError(name)


MENTION = re.compile(r"(?<![\w/.-])mccfrb(?:\.[A-Za-z_]\w*)+(?![\w-])")


def mentioned_names():
  names = {}
  for path in user_pages():
    for name in MENTION.findall(path.read_text(encoding="utf-8")):
      names.setdefault(name, path.relative_to(ROOT).as_posix())
  return names


def test_every_mccfrb_name_the_docs_mention_resolves_and_is_in_the_reference():
  documented = documented_modules()
  names = mentioned_names()
  assert "mccfrb.solvers.grown.GrownPolicy" in names or (
      "mccfrb.MCCFRbSolver" in names)
  broken = []
  for name, page in sorted(names.items()):
    try:
      module, _ = resolve(name)
    except (ImportError, AttributeError) as e:
      broken.append(f"{page}: {name} does not resolve ({e})")
      continue
    if module not in documented:
      broken.append(f"{page}: {name}: module {module} is not in the "
                    "API reference")
  assert not broken, "\n".join(broken)


RELEASE = re.compile(r"^## (\d+)\.(\d+)\.(\d+) - (\d{4}-\d{2}-\d{2})$", re.M)


def test_changelog_is_releases_newest_first_ending_at_this_version():
  """CHANGELOG.md's entries are `## MAJOR.MINOR.PATCH - YYYY-MM-DD`, newest
  first, and the newest is the package's version."""
  text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
  releases = RELEASE.findall(text)
  assert len(releases) >= 2
  headings = re.findall(r"^## .*$", text, re.M)
  assert len(headings) == len(releases), f"not a release: {headings}"
  versions = [tuple(int(x) for x in r[:3]) for r in releases]
  dates = [r[3] for r in releases]
  assert versions == sorted(versions, reverse=True)
  assert dates == sorted(dates, reverse=True)
  assert ".".join(releases[0][:3]) == mccfrb.__version__
