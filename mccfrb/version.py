"""The version of mccfrb, its single source.

`setup.py` reads this file as text (without importing the package) and
`mccfrb.__version__` re-exports it. Versions follow semantic versioning
(MAJOR.MINOR.PATCH); CONTRIBUTING.md gives the policy.
"""

__version__ = "0.8.3"
