"""The documentation: the site builds strictly, the tutorial runs, links resolve.

The site is docs/mkdocs.yml over docs/pages/; docs/hooks.py publishes the
committed plots of experiments/results/ as the site's results/ folder.
"""

import html
import inspect
import pathlib
import re
import subprocess
import sys

import matplotlib
import numpy as np
import pytest
import yaml

import mccfrb

ROOT = pathlib.Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = DOCS / "pages"
README = ROOT / "README.md"
TUTORIAL = PAGES / "tutorial.md"
# The file the tutorial's plotting block saves in the working directory.
TUTORIAL_PNG = "tutorial_convergence.png"
MAX_README_LINES = 150
# The largest a built page of the site may be.
MAX_PAGE_BYTES = 300_000
# Paths of the author's private workspace, which readers of the repository
# do not have.
FORBIDDEN = ("../shared", "shared/ALGORITHMS.md", "seeds/0")

FENCE = re.compile(r"^[ \t]*(```|~~~).*?^[ \t]*\1[ \t]*$", re.M | re.S)
INLINE_CODE = re.compile(r"`+[^`\n]*`+")
# [text](target) and ![alt](target), with an optional "title".
LINK = re.compile(r"\]\(\s*<?([^)\s>]+)>?(?:\s+[\"'][^)]*[\"'])?\s*\)")


def pages():
  """Every Markdown page of the site, sorted."""
  return sorted(PAGES.rglob("*.md"))


def relative_links(path):
  """Relative link targets of a Markdown file, without fragment or query.

  Fenced code blocks and inline code are left out (a `](x)` in code is not
  a link); so are links to web pages, mail addresses and anchors of the
  same page.
  """
  text = INLINE_CODE.sub("", FENCE.sub("", path.read_text(encoding="utf-8")))
  out = []
  for target in LINK.findall(text):
    if re.match(r"(https?:|mailto:|#)", target):
      continue
    target = re.split(r"[#?]", target, maxsplit=1)[0]
    if target:
      out.append(target)
  return out


def python_blocks(path):
  """The ```python blocks of a Markdown file, in order."""
  return re.findall(r"^```python[ \t]*\n(.*?)^```[ \t]*$",
                    path.read_text(encoding="utf-8"), re.M | re.S)


def nav_pages(nav):
  """The page paths of a mkdocs `nav`, flattened in order."""
  out = []
  for item in nav:
    value = next(iter(item.values())) if isinstance(item, dict) else item
    if isinstance(value, list):
      out.extend(nav_pages(value))
    else:
      out.append(value)
  return out


def text_files(folder):
  """Text files under `folder`, without build output and caches."""
  for path in sorted(folder.rglob("*")):
    parts = path.relative_to(ROOT).parts
    if (not path.is_file() or "__pycache__" in parts
        or parts[:2] == ("docs", "site")):
      continue
    data = path.read_bytes()
    if b"\0" not in data:
      yield path, data.decode("utf-8", errors="replace")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
  """The strict build of the site: (returncode, output, site folder)."""
  folder = tmp_path_factory.mktemp("docs") / "site"
  result = subprocess.run(
      [sys.executable, "-m", "mkdocs", "build", "--strict",
       "-f", str(DOCS / "mkdocs.yml"), "--site-dir", str(folder)],
      cwd=ROOT, capture_output=True, text=True, timeout=900, check=False)
  return result.returncode, result.stdout + result.stderr, folder


def test_site_builds_strictly(site):
  """`mkdocs build --strict` succeeds: no broken link, no page missing from
  the nav, no docstring mkdocstrings cannot render. Fails (never skips) when
  mkdocs is not installed."""
  returncode, output, folder = site
  problems = [line for line in output.splitlines()
              if line.startswith(("WARNING", "ERROR"))]
  assert returncode == 0, "\n".join(problems) or output[-3000:]
  assert (folder / "tutorial" / "index.html").is_file()


def test_every_built_page_is_small(site):
  """No built page reaches MAX_PAGE_BYTES (the API reference shows no
  source); the reference has a page per part of the package."""
  returncode, output, folder = site
  assert returncode == 0, output[-3000:]
  built = sorted(folder.rglob("*.html"))
  assert len(built) > 30
  large = [f"{path.relative_to(folder)}: {path.stat().st_size:,} bytes"
           for path in built if path.stat().st_size >= MAX_PAGE_BYTES]
  assert not large, "\n".join(large)
  assert (folder / "api" / "solvers" / "index.html").is_file()


def test_docstring_examples_render_as_code(site):
  """A docstring's example is a code block on its API page, not a run-on
  paragraph (MCCFRbSolver's usage, the regret-rule subclass)."""
  returncode, output, folder = site
  assert returncode == 0, output[-3000:]
  reference = "".join(path.read_text(encoding="utf-8")
                      for path in sorted((folder / "api").rglob("*.html")))
  blocks = re.findall(r"<pre[^>]*>(.*?)</pre>", reference, re.S)
  text = [html.unescape(re.sub(r"<[^>]+>", "", b)) for b in blocks]
  for needle in ("solver = mccfrb.MCCFRbSolver", "class QuadraticPCFRPlus",
                 "solver = mccfrb.SmoothUCTSolver"):
    assert any(needle in t for t in text), f"{needle!r} is not in a code block"


@pytest.mark.slow
def test_tutorial_runs_and_its_numbers_hold(tmp_path, monkeypatch):
  """The tutorial's Python blocks, run in order in one namespace, write the
  plot they promise; mccfrb's evaluator agrees with OpenSpiel's; MCCFRb+
  improves from the first checkpoint to the last; the engine run equals the
  tree run."""
  blocks = python_blocks(TUTORIAL)
  assert len(blocks) >= 3, "the tutorial has lost its code"
  monkeypatch.chdir(tmp_path)
  matplotlib.use("Agg")
  namespace = {"__name__": "__tutorial__"}
  exec(compile("\n".join(blocks), str(TUTORIAL), "exec"), namespace)  # pylint: disable=exec-used

  png = tmp_path / TUTORIAL_PNG
  assert png.is_file(), f"the tutorial does not save {TUTORIAL_PNG}"
  assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
  assert png.stat().st_size > 10_000  # Axes, four curves and a legend.

  assert abs(namespace["exact"] - namespace["fast"]) <= 1e-9

  df = namespace["df"]
  assert {"algorithm", "iteration", "exploitability"} <= set(df.columns)
  assert df["algorithm"].nunique() == 4
  checkpoints = namespace["checkpoints"]
  for algorithm, curve in df.groupby("algorithm"):
    assert list(curve["iteration"]) == list(checkpoints), algorithm
    assert np.isfinite(curve["exploitability"]).all(), algorithm
    assert (curve["exploitability"] > 0).all(), algorithm
  plus = df[df["algorithm"] == "mccfrb MCCFRb+"].sort_values("iteration")
  first, last = plus["exploitability"].iloc[0], plus["exploitability"].iloc[-1]
  assert last < 0.5 * first, (first, last)

  # Equal tables; two evaluators (tree walk, streamed public tree).
  assert abs(namespace["tree_value"] - namespace["engine_value"]) <= 1e-12


def test_readme_is_short():
  """The README stays a front page; the details live on the site."""
  lines = README.read_text(encoding="utf-8").splitlines()
  assert len(lines) <= MAX_README_LINES, (
      f"README.md has {len(lines)} lines, at most {MAX_README_LINES}")


def test_relative_links_resolve():
  """Every relative link (and image) resolves: the README's from the
  repository root, a page's from the page, inside the site; `results/...`
  from a page is experiments/results/..., which docs/hooks.py publishes."""
  broken = []
  for target in relative_links(README):
    if not (ROOT / target).exists():
      broken.append(f"README.md: {target}")
  published = PAGES / "results"
  for page in pages():
    for target in relative_links(page):
      path = (page.parent / target).resolve()
      if path.is_relative_to(published):
        path = ROOT / "experiments" / "results" / path.relative_to(published)
      elif not path.is_relative_to(PAGES):
        broken.append(f"{page.relative_to(ROOT)}: {target} (outside the site)")
        continue
      if not path.exists():
        broken.append(f"{page.relative_to(ROOT)}: {target}")
  assert not broken, "\n".join(broken)


def test_no_links_to_the_private_workspace():
  """No file of the README, the docs or the package mentions a path that
  exists only in the author's workspace (docs/site, the build output, is
  not checked)."""
  found = []
  files = [(README, README.read_text(encoding="utf-8"))]
  files += list(text_files(DOCS)) + list(text_files(ROOT / "mccfrb"))
  assert len(files) > 30
  for path, text in files:
    for number, line in enumerate(text.splitlines(), 1):
      for needle in FORBIDDEN:
        if needle in line:
          found.append(f"{path.relative_to(ROOT)}:{number}: {needle}")
  assert not found, "\n".join(found)


def test_every_page_is_in_the_nav_and_the_readme_links_the_docs():
  """A page missing from the nav is unreachable from the site's menu; a
  nav entry without a page is a dead menu item; the README leads to the
  site."""
  config = yaml.safe_load((DOCS / "mkdocs.yml").read_text(encoding="utf-8"))
  assert config["docs_dir"] == "pages"
  nav = nav_pages(config["nav"])
  on_disk = {page.relative_to(PAGES).as_posix() for page in pages()}
  assert not on_disk - set(nav), f"pages not in the nav: {on_disk - set(nav)}"
  assert not set(nav) - on_disk, f"nav without a page: {set(nav) - on_disk}"
  assert len(nav) == len(set(nav)), "a page is in the nav twice"
  assert "tutorial.md" in nav
  readme_links = {pathlib.PurePosixPath(t).as_posix()
                  for t in relative_links(README)}
  assert "docs/pages/index.md" in readme_links, (
      "README.md does not link the docs' front page docs/pages/index.md")
  # The front page's site map lists every page outside the API reference.
  site_map = (PAGES / "index.md").read_text(encoding="utf-8").split(
      "## Map of this site", 1)[-1]
  front = set(LINK.findall(site_map))
  unlisted = [page for page in nav
              if not page.startswith("api/") and page != "index.md"
              and page not in front]
  assert not unlisted, f"not in index.md's site map: {unlisted}"


def _documented_arguments(doc):
  """The names a Google-style docstring's Args section lists (an entry may
  name several: "alpha, beta, gamma: ...")."""
  args = doc[doc.index("Args:"):]
  end = re.search(r"\n\s*(Returns|Raises|Yields|Attributes):", args)
  if end:
    args = args[:end.start()]
  names = set()
  for entry in re.finditer(
      r"^    ([A-Za-z_]\w*(?:, [A-Za-z_]\w*)*):", args, re.M):
    names.update(entry.group(1).split(", "))
  return names


def test_public_docstrings_document_every_argument():
  """help() on mccfrb's public solvers and functions names each argument
  they take (a class may defer to another's Args: "The arguments not listed
  here are `X`'s"); the engine route, max_memory, precision and in_flight
  were once missing."""
  checked = []
  for name in sorted(n for n in dir(mccfrb) if not n.startswith("_")):
    obj = getattr(mccfrb, name)
    if inspect.ismodule(obj) or not callable(obj):
      continue
    doc = obj.__doc__ or ""
    if inspect.isclass(obj):
      doc += obj.__init__.__doc__ or ""
    if "Args:" not in doc:
      continue
    documented = _documented_arguments(doc)
    deferred = re.search(r"arguments not listed here are `(\w+)`'s", doc)
    if deferred:
      documented |= _documented_arguments(getattr(mccfrb, deferred[1]).__doc__)
    params = [p for p in inspect.signature(obj).parameters if p != "self"]
    missing = [p for p in params if p not in documented]
    assert not missing, f"{name}'s docstring does not document {missing}"
    checked.append(name)
  for name in ("MCCFRbSolver", "OutcomeSamplingSolver",
               "ExternalSamplingSolver", "PublicSamplingSolver", "CFRSolver",
               "approximate_exploitability"):
    assert name in checked, name
