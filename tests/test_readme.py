"""The README's quick start and .ci/run stay in step."""

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1]


def quick_start_commands():
  readme = (ROOT / "README.md").read_text()
  block = re.search(r"## Quick start.*?```bash\n(.*?)```", readme, re.S).group(1)
  return [line for line in block.splitlines() if line.strip()]


def test_quick_start_has_two_commands_and_ci_runs_the_test_one():
  commands = quick_start_commands()
  assert len(commands) == 2
  install_and_run, install_and_test = commands
  assert install_and_run.startswith("pip install -e .")
  assert "pytest" in install_and_test
  ci_lines = (ROOT / ".ci" / "run").read_text().splitlines()
  assert install_and_test in ci_lines
  assert any("NUMBA_CACHE_DIR" in line for line in ci_lines)


def test_getting_started_quotes_the_quick_start_verbatim():
  page = (ROOT / "docs" / "pages" / "getting-started.md").read_text()
  block = re.search(r"```bash\n(.*?)```", page, re.S).group(1)
  assert [line for line in block.splitlines() if line.strip()] == (
      quick_start_commands())
