"""experiments/results/ holds what a page cites, and what pages cite is there.

Every file under experiments/results/ (but `.gitkeep` and `__pycache__`) must
be cited by one of the citing files (README.md, BUILD_NOTES.md,
CONTRIBUTING.md, docs/pages/*.md, experiments/*.py, mccfrb/**/*.py,
tests/*.py; CHANGELOG.md is history and does not count), and every path into
experiments/results/ that they cite must exist.

How the repository cites a result, each a rule below:

- its path, `experiments/results/<dir>/<name>`, or on a docs page
  `results/<dir>/<name>` (docs/hooks.py publishes experiments/results/ as the
  site's results/ folder, so pages link plots that way);
- a glob of paths (`experiments/results/benchmark_*_written_once.csv`);
- its folder's path followed by its bare name in the same file
  (`experiments/results/big_games/benchmark_engines.csv` and
  `benchmark_hogwild.csv`; for a file directly in experiments/results/, any
  path into experiments/results/ is its folder's);
- the command that writes it: `--out_dir=experiments/results/<dir>` (or a
  binary's default `out_dir`) cites the files directly in <dir>, and
  `--out_prefix=experiments/results/<dir>/<stem>` (a cited path that names no
  file or folder) the files of <dir> that begin with `<stem>_` or `<stem>.`;
- a figure's PDF with its PNG: `save_figure` (mccfrb/experiment/analysis.py)
  writes every figure as both, and pages link the PNG.
"""

import fnmatch
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1]
RESULTS = ROOT / "experiments" / "results"
PREFIX = "experiments/results"
CITING = ("README.md", "BUILD_NOTES.md", "CONTRIBUTING.md", "docs/pages/*.md",
          "experiments/*.py", "mccfrb/**/*.py", "tests/*.py")
IGNORED = (".gitkeep",)

# A path into the results, as text: experiments/results/... anywhere,
# results/... on a docs page (the published folder).
_PATH = re.compile(r"(?<![\w./-])((?:experiments/)?results/[\w.*?/-]*)")
# A docs page's link or image target into the published results folder.
_LINK = re.compile(r"\]\((results/[^)\s#]+)")
# The folders a command writes.
_OUT_DIR = re.compile(
    r"--out_dir[= ]\"?(experiments/results/[\w./-]+)"
    r"|DEFINE_string\(\s*\"out_dir\",\s*\"(experiments/results/[\w./-]+)\"")


def result_files(results=RESULTS):
  """Paths of the files under `results`, relative to it, posix style."""
  return sorted(
      path.relative_to(results).as_posix() for path in results.rglob("*")
      if path.is_file() and path.name not in IGNORED
      and "__pycache__" not in path.parts)


def citing_texts(root=ROOT):
  """{relative path: text} of the files that cite results (not this one)."""
  texts = {}
  for pattern in CITING:
    for path in sorted(root.glob(pattern)):
      if path.resolve() == pathlib.Path(__file__).resolve():
        continue
      texts[path.relative_to(root).as_posix()] = path.read_text(
          encoding="utf-8")
  return texts


def _is_page(source):
  return source.startswith("docs/pages/")


def cited_paths(source, text, published=True):
  """The paths into the results `text` cites, relative to the results folder
  ("" for the folder itself); placeholders such as `.../results/...` are
  left out. `results/...` counts on a docs page only, and with
  `published=False` only as a link or image target there (elsewhere on a
  page it may be a binary's own default folder, `results/tutorial`)."""
  paths = []
  for match in _PATH.finditer(text):
    token = match.group(1)
    if "..." in token:
      continue
    if token.startswith(PREFIX):
      rest = token[len(PREFIX):]
    elif _is_page(source) and published:
      rest = token[len("results"):]
    else:
      continue
    paths.append(rest.rstrip(".").strip("/"))
  if _is_page(source) and not published:
    paths += [m.group(1)[len("results"):].strip("/")
              for m in _LINK.finditer(text)]
  return paths


def _has_glob(path):
  return any(char in path for char in "*?[")


def _prefix_matches(path, files):
  """Files that a cited path with no such file or folder begins: an
  `--out_prefix` stem (`nfsp/projection` cites `nfsp/projection.png`)."""
  folder, _, stem = path.rpartition("/")
  return [name for name in files
          if name.rpartition("/")[0] == folder
          and (name.rpartition("/")[2].startswith(stem + "_")
               or name.rpartition("/")[2].startswith(stem + "."))]


def _bare_name_cited(name, text):
  return re.search(r"(?<![\w./-])" + re.escape(name) + r"(?![\w-])",
                   text) is not None


def cited_files(files, texts, results=RESULTS):
  """The members of `files` (relative to `results`) that `texts` cite."""
  cited = set()
  folders = {name.rpartition("/")[0] for name in files}
  for source, text in texts.items():
    paths = cited_paths(source, text)
    named_folders = set()
    for path in paths:
      parts = path.split("/") if path else []
      named_folders.update("/".join(parts[:i]) for i in range(len(parts)))
      if (results / path).is_dir():
        named_folders.add(path)
      if _has_glob(path):
        cited.update(name for name in files if fnmatch.fnmatch(name, path))
      elif path in files:
        cited.add(path)
      elif "." not in path.rpartition("/")[2] and path not in folders:
        cited.update(_prefix_matches(path, files))
    for match in _OUT_DIR.finditer(text):
      folder = (match.group(1) or match.group(2))[len(PREFIX):]
      folder = folder.rstrip(".").strip("/")
      if folder:  # the results folder as a whole cites nothing by itself
        cited.update(name for name in files
                     if name.rpartition("/")[0] == folder)
    for name in files:
      folder, _, base = name.rpartition("/")
      if folder in named_folders and _bare_name_cited(base, text):
        cited.add(name)
  for name in files:
    if name.endswith(".pdf") and name[:-len(".pdf")] + ".png" in cited:
      cited.add(name)
  return cited


def missing_paths(texts, files, results=RESULTS):
  """Each cited path into the results (as "source: path") that names no
  file, folder, glob match or out_prefix stem."""
  missing = []
  for source, text in texts.items():
    for path in dict.fromkeys(cited_paths(source, text, published=False)):
      if _has_glob(path):
        ok = any(fnmatch.fnmatch(name, path) for name in files)
      elif (results / path).exists():
        ok = True
      else:
        ok = ("." not in path.rpartition("/")[2]
              and bool(_prefix_matches(path, files)))
      if not ok:
        missing.append(f"{source}: {PREFIX}/{path}")
  return missing


def test_every_result_file_is_cited():
  files = result_files()
  uncited = sorted(set(files) - cited_files(files, citing_texts()))
  assert not uncited, (
      "files under experiments/results/ that no page, note, binary or test "
      "cites (cite each by its path, its folder and name, or the command "
      "that writes it; or remove it):\n  "
      + "\n  ".join(f"{PREFIX}/{name}" for name in uncited))


def test_every_cited_result_path_exists():
  missing = missing_paths(citing_texts(), result_files())
  assert not missing, ("cited paths into experiments/results/ that do not "
                       "exist:\n  " + "\n  ".join(missing))


def test_the_rules_report_what_they_should(tmp_path):
  """The rules on a small folder: each way of citing counts, an uncited file
  and a path to nothing are reported."""
  results = tmp_path / "results"
  for name in ("a/x.csv", "a/y.csv", "a/plot_game.png", "a/plot_game.pdf",
               "b/out.csv", "b/fig.png", "top.csv", "g_1_once.csv",
               "g_2_once.csv", "lone.csv", "a/fig.pdf"):
    (results / name).parent.mkdir(parents=True, exist_ok=True)
    (results / name).write_text("")
  files = result_files(results)
  texts = {
      "docs/pages/p.md": ("`experiments/results/a/x.csv` and `y.csv`; "
                          "`--out_prefix=experiments/results/a/plot`; "
                          "![f](results/a/missing.png)"),
      "BUILD_NOTES.md": ("`--out_dir=experiments/results/b` wrote it; "
                         "`experiments/results/g_*_once.csv`, `top.csv`; "
                         "`experiments/results/nowhere.csv`"),
      "experiments/x.py": '"results/lone.csv" is a default out_dir',
  }
  cited = cited_files(files, texts, results)
  assert sorted(set(files) - cited) == ["a/fig.pdf", "lone.csv"]
  assert missing_paths(texts, files, results) == [
      "docs/pages/p.md: experiments/results/a/missing.png",
      "BUILD_NOTES.md: experiments/results/nowhere.csv"]
