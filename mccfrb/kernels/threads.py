"""How the kernels run on several threads: numba's `parallel` option.

A batched kernel runs in phases, each a `prange` loop over the workers:
phase 1 plays the batch's episodes against the tables of the batch start
and records them, phase 2 applies the records, rows partitioned among
the workers (kernels/outcome.py `run_batches`, kernels/external.py
`es_batches`). numba's parfor pass fuses consecutive `prange` loops of
equal bounds into one, as if each iteration depended only on its own
(it cannot see what a called function reads). Fused, worker 0 applies
the records of episodes that worker 1 has not finished, while worker 1
still reads the tables that worker 0 is changing: the tables then vary
from run to run. So every parallel kernel is compiled without fusion;
the phases are separate loops, and a loop's end is a barrier.

A prange index is typed int64 before the parfor pass and uint64 in the
loop numba outlines from it: a kernel called with the index compiles
twice unless the call passes `np.int64(index)`, as every one does.
"""

from numba.core.cpu import ParallelOptions


def parallel_phases():
  """numba's `parallel=` for every parallel kernel: prange loops, never
  fused, for every signature the kernel is compiled for. (Given a dict,
  numba empties it at the first compile, and the next signatures would
  compile with fusion; a `ParallelOptions` is copied, not consumed.)"""
  return ParallelOptions({"fusion": False})
