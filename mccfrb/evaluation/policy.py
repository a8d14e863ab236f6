"""Strategy tables and OpenSpiel policies, by the path evaluation/bound.py
imports them from: the conversions live in mccfrb/tables/policy.py, under
the solvers, which return them."""

# pylint: disable=unused-import
from mccfrb.tables.policy import TabularPolicyConverter
from mccfrb.tables.policy import table_from_policy
from mccfrb.tables.policy import to_pyspiel_dict
from mccfrb.tables.policy import to_pyspiel_policy
from mccfrb.tables.policy import to_tabular_policy
from mccfrb.tables.policy import uniform_table
from mccfrb.tables.policy import validate_table
