"""Batched kernels run in phases (kernels/threads.py): numba must never
fuse their prange loops, or a worker applies records that another worker
has not written, and the tables vary from run to run."""

import importlib
import pkgutil

from numba.core.cpu import ParallelOptions
from numba.core.registry import CPUDispatcher
import numpy as np
import pytest

import mccfrb
from mccfrb import kernels
from tests.conftest import printed_with_empty_cache


def kernel_dispatchers():
  """{module.name: dispatcher} of every kernel of mccfrb.kernels."""
  found = {}
  for info in pkgutil.iter_modules(kernels.__path__):
    module = importlib.import_module(f"mccfrb.kernels.{info.name}")
    for name, value in vars(module).items():
      if (isinstance(value, CPUDispatcher)
          and value.__module__ == module.__name__):
        found[f"{info.name}.{name}"] = value
  return found


def parallel_kernels():
  """{module.name: parallel option} of every parallel kernel."""
  return {name: value.targetoptions["parallel"]
          for name, value in kernel_dispatchers().items()
          if value.targetoptions.get("parallel")}


def test_no_parallel_kernel_fuses_its_loops():
  found = parallel_kernels()
  # The two kernels whose phases numba fused, among the ten (Hogwild's
  # workers are Python threads, not a parallel kernel).
  assert {"outcome.run_batches", "external.es_batches"} <= set(found)
  assert len(found) >= 10
  for name, option in found.items():
    # A dict is emptied by numba at the first compile (fusion on for the
    # next signatures); True fuses.
    assert isinstance(option, ParallelOptions), name
    assert not option.fusion, name


@pytest.mark.parametrize("cls", [mccfrb.MCCFRbSolver,
                                 mccfrb.ExternalSamplingSolver])
def test_a_batched_run_on_two_threads_is_the_same_every_time(cls):
  """With the phases fused, MCCFRb's batched tables differed between two
  runs of the same seed in 9 of 9 tries (`nodes_touched` too)."""
  runs = []
  for _ in range(6):
    solver = cls("leduc_poker", seed=4, threads=2, batch=50)
    solver.run(100)
    runs.append(solver)
  one = cls("leduc_poker", seed=4, threads=1, batch=50)
  one.run(100)
  first = runs[0]
  for solver in runs + [one]:
    # pylint: disable=protected-access
    np.testing.assert_array_equal(solver._regrets, first._regrets)
    np.testing.assert_array_equal(solver._avg, first._avg)
    assert solver.nodes_touched == first.nodes_touched


_TWINS = """
import re
import mccfrb
from tests.test_parallel_phases import kernel_dispatchers
for cls in (mccfrb.MCCFRbSolver, mccfrb.ExternalSamplingSolver,
            mccfrb.PublicSamplingSolver):
  cls("kuhn_poker", seed=1, threads=2, batch=4).run(8, progress=False)
count = 0
for name, dispatcher in kernel_dispatchers().items():
  signatures = [str(s) for s in dispatcher.signatures]
  count += len(signatures)
  signed = {re.sub(r"\\buint64\\b", "int64", s) for s in signatures}
  if len(signed) < len(signatures):
    print(name)
print(count)
"""


@pytest.mark.slow
def test_a_parallel_loop_compiles_what_it_calls_once(tmp_path):
  """numba types a prange index as int64 before its parfor pass and as
  uint64 in the loop it outlines, so a kernel called with the index was
  compiled twice per configuration (record_episodes, apply_records,
  external._traversals, public.episodes and their apply phases: 28 s of
  a cold first use of the batched tree solvers). Every such call passes
  np.int64(index): from an empty numba cache (a kernel loaded from the
  cache brings its callees compiled in, unseen), no kernel holds two
  signatures that differ only in int64 / uint64."""
  printed = printed_with_empty_cache(_TWINS, tmp_path)
  assert printed[:-1] == [], printed
  assert int(printed[-1]) >= 20  # The batched kernels and their callees.
