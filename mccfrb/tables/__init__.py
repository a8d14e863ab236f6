"""Tables under the kernels: rows of cells found by a key or an id.

`HashedTable` (tables/hashed_table.py, kernels' side tables/hashed.py):
rows found by a 128-bit key in a compact arena, for engines and trees that
grow; precision "float64" or "float32". Atomic operations and a prefetch
hint for the kernels are in tables/atomics.py.

Strategy tables of a compiled tree (float64[num_infosets, max_actions], rows
by compiled infoset id) and their conversions to and from OpenSpiel policies
are in tables/policy.py: the solvers return them and evaluation reads them.
"""

from mccfrb.tables.hashed_table import HashedTable
from mccfrb.tables.hashed_table import MIN_MEMORY
from mccfrb.tables.hashed_table import PRECISIONS
from mccfrb.tables.hashed_table import check_max_memory
from mccfrb.tables.hashed_table import check_precision
from mccfrb.tables.hashed_table import default_max_memory
