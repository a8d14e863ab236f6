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


def parallel_kernels():
  """{module.name: parallel option} of every parallel kernel."""
  found = {}
  for info in pkgutil.iter_modules(kernels.__path__):
    module = importlib.import_module(f"mccfrb.kernels.{info.name}")
    for name, value in vars(module).items():
      if (isinstance(value, CPUDispatcher)
          and value.__module__ == module.__name__
          and value.targetoptions.get("parallel")):
        found[f"{info.name}.{name}"] = value.targetoptions["parallel"]
  return found


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
