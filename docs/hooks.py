"""MkDocs hook: publishes the committed result plots with the site.

Pages link plots as `results/<experiment>/<file>.png`; the files live in the
repository's `experiments/results/` (where the binaries write them), so a
plot is never copied by hand and a link to a missing plot fails the strict
build.
"""

import pathlib

from mkdocs.structure.files import File

RESULTS = pathlib.Path(__file__).resolve().parents[1] / "experiments"


def on_files(files, config):
  for path in sorted((RESULTS / "results").rglob("*.png")):
    files.append(File(str(path.relative_to(RESULTS)), src_dir=str(RESULTS),
                      dest_dir=config["site_dir"],
                      use_directory_urls=config["use_directory_urls"]))
  return files
