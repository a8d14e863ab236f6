"""The files of the project: license, version, citation, contributing."""

import importlib.metadata
import pathlib
import re

import yaml

import mccfrb

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _setup_version():
  """The version setup.py installs, read as setup.py reads it."""
  setup = (ROOT / "setup.py").read_text()
  assert "version=VERSION" in setup
  text = (ROOT / "mccfrb" / "version.py").read_text()
  return re.search(r'^__version__ = "([^"]+)"$', text, re.MULTILINE).group(1)


def test_version_is_semantic_and_single_sourced():
  assert re.fullmatch(r"\d+\.\d+\.\d+", mccfrb.__version__)
  assert mccfrb.__version__ == _setup_version()
  assert mccfrb.__version__ == importlib.metadata.version("mccfrb")


def test_installed_metadata_names_the_license():
  metadata = importlib.metadata.metadata("mccfrb")
  assert "Apache-2.0" in (metadata.get("License-Expression"),
                          metadata.get("License"))


def test_license_is_the_apache_license_2_0():
  text = (ROOT / "LICENSE").read_text()
  assert text.lstrip().startswith("Apache License\n")
  assert "Version 2.0, January 2004" in text
  assert "END OF TERMS AND CONDITIONS" in text
  # The full text: sections 1 to 9 and the appendix.
  for section in range(1, 10):
    assert f"\n   {section}. " in text
  assert "APPENDIX: How to apply the Apache License to your work." in text


def test_citation_is_cff_1_2_with_this_version():
  citation = yaml.safe_load((ROOT / "CITATION.cff").read_text())
  assert citation["cff-version"] == "1.2.0"
  for key in ("message", "title", "authors"):
    assert citation[key]
  assert citation["version"] == mccfrb.__version__
  assert citation["license"] == "Apache-2.0"
  paper = citation["references"][0]
  assert paper["year"] == 2019
  assert "VR-MCCFR" in paper["title"]
  assert paper["authors"][0]["family-names"] == "Schmid"


def test_contributing_names_the_commands_it_documents():
  text = (ROOT / "CONTRIBUTING.md").read_text()
  readme = (ROOT / "README.md").read_text()
  suite = re.search(r"^pip install -e \"\.\[test[^\n]*pytest[^\n]*$", readme,
                    re.MULTILINE).group(0)
  assert suite in text
  assert "mkdocs build --strict -f docs/mkdocs.yml" in text
  assert "python -m experiments.benchmark" in text
  for path in ("mccfrb/games/engines/", "mccfrb/solvers/rules.py",
               "mccfrb/kernels/outcome.py", "mccfrb/version.py",
               "CHANGELOG.md"):
    assert path in text
    assert (ROOT / path).exists(), path
