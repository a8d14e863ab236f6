"""experiments/game_info.py: its facts and its one-line refusals."""

import pathlib
import subprocess
import sys

from experiments import game_info

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_player_actions_and_chance_outcomes_are_counted_apart():
  kuhn = game_info.describe("kuhn_poker", None)
  assert (kuhn["max_player_actions"], kuhn["max_chance_outcomes"]) == (2, 3)
  leduc = game_info.describe("leduc_poker", None)
  assert (leduc["max_player_actions"], leduc["max_chance_outcomes"]) == (3, 6)
  assert "max_actions" not in leduc


def test_a_game_too_large_is_refused_in_one_line():
  done = subprocess.run(
      [sys.executable, str(ROOT / "experiments" / "game_info.py"),
       "--games=liars_dice(numdice=2)"], capture_output=True, text=True,
      timeout=300, cwd=ROOT)
  assert done.returncode == 1
  lines = done.stderr.strip().splitlines()
  assert len(lines) == 1, done.stderr
  assert lines[0].startswith("game_info: error: ") and "too large" in lines[0]
  assert "USAGE" not in done.stderr and not done.stdout
