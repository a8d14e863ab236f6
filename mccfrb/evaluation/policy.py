"""Strategy tables and OpenSpiel policies, for evaluation's modules.

The conversions are in mccfrb/tables/policy.py, under the solvers that
return them; this module re-exports them: `uniform_table`, `validate_table`,
`table_from_policy`, `TabularPolicyConverter`, `to_tabular_policy`,
`to_pyspiel_dict`, `to_pyspiel_policy`.
"""

# pylint: disable=unused-import
from mccfrb.tables.policy import TabularPolicyConverter
from mccfrb.tables.policy import table_from_policy
from mccfrb.tables.policy import to_pyspiel_dict
from mccfrb.tables.policy import to_pyspiel_policy
from mccfrb.tables.policy import to_tabular_policy
from mccfrb.tables.policy import uniform_table
from mccfrb.tables.policy import validate_table
