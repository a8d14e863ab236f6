"""The warm-up command (mccfrb/warmup.py): after it, the default solvers'
first `run` on the game needs no kernel it has not compiled or loaded."""

import json
import os
import re
import subprocess
import sys

from mccfrb import warmup

# In a fresh process: every numba dispatcher of mccfrb's modules and its
# number of signatures (compiled or loaded from the disk cache) at import,
# after `warmup.main`, and after each default solver's first run and an
# evaluation.
SCRIPT = """
import json, sys
from numba.core import registry
import mccfrb
from mccfrb import warmup

def loaded():
  out = {}
  for name, module in list(sys.modules.items()):
    if name.startswith("mccfrb"):
      for attr, obj in list(vars(module).items()):
        if isinstance(obj, registry.CPUDispatcher):
          out[f"{obj.py_func.__module__}.{obj.py_func.__name__}"] = len(
              obj.signatures)
  return out

at_import = loaded()
code = warmup.main(["kuhn_poker"])
warmed = loaded()
for name in warmup.SOLVERS:
  solver = getattr(mccfrb, name)("kuhn_poker")
  solver.run(10)
mccfrb.exploitability("kuhn_poker", solver.average_policy())
print(json.dumps(dict(code=code, at_import=at_import, warmed=warmed,
                      used=loaded())))
"""


def _python(*args):
  return subprocess.run([sys.executable, *args], env=dict(os.environ),
                        capture_output=True, text=True, timeout=900,
                        check=False)


def test_first_runs_after_the_warm_up_compile_and_load_nothing():
  done = _python("-c", SCRIPT)
  assert done.returncode == 0, done.stderr[-3000:]
  out = json.loads(done.stdout.strip().splitlines()[-1])
  assert out["code"] == 0
  # Nothing is loaded at import, so what is loaded after is the warm-up's.
  assert not any(out["at_import"].values()), out["at_import"]
  warmed = {k for k, n in out["warmed"].items() if n}
  for scheme in ("outcome", "external", "public", "cfr", "exact"):
    assert any(k.startswith(f"mccfrb.kernels.{scheme}.") for k in warmed), (
        scheme, sorted(warmed))
  grew = {k: (out["warmed"].get(k, 0), n) for k, n in out["used"].items()
          if n != out["warmed"].get(k, 0)}
  assert not grew, f"kernels the first runs still compiled or loaded: {grew}"


def test_the_command_prints_a_line_per_game_and_exits_0():
  done = _python("-m", "mccfrb.warmup", "kuhn_poker")
  assert done.returncode == 0, done.stderr[-3000:]
  lines = done.stdout.strip().splitlines()
  assert len(lines) == 1, lines
  assert re.fullmatch(r"kuhn_poker \(tree\): MCCFRbSolver, .*CFRSolver and "
                      r"nash_conv ready in \d+\.\d s", lines[0]), lines[0]


def test_a_bad_game_name_is_one_line_and_exit_code_2(capsys):
  assert warmup.main(["kuhn_poker", "not_a_game"]) == warmup.BAD_GAME == 2
  out, err = capsys.readouterr()
  assert out == ""  # Every name is checked before anything compiles.
  assert len(err.strip().splitlines()) == 1, err
  assert err.startswith("mccfrb.warmup: Unknown game 'not_a_game'"), err


def test_solvers_that_cannot_run_the_representation_are_named():
  assert warmup._skip_reason("PublicSamplingSolver", "grown") == (  # pylint: disable=protected-access
      "PublicSamplingSolver runs tree and engine only")
  assert "CFRSolver" in warmup._skip_reason("CFRSolver", "engine")  # pylint: disable=protected-access
  assert warmup._skip_reason("MCCFRbSolver", "engine") is None  # pylint: disable=protected-access
