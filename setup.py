"""Installs mccfrb: Monte Carlo CFR with baselines for OpenSpiel."""

import pathlib
import re

import setuptools

HERE = pathlib.Path(__file__).parent
# The one source of the version (mccfrb/version.py), read as text so that
# installing does not import the package.
VERSION = re.search(r'^__version__ = "([^"]+)"$',
                    (HERE / "mccfrb" / "version.py").read_text(),
                    re.MULTILINE).group(1)

# What building the documentation site needs (docs/mkdocs.yml).
DOCS = ["mkdocs>=1.6", "mkdocs-material>=9.5", "mkdocstrings[python]>=0.26"]

setuptools.setup(
    name="mccfrb",
    version=VERSION,
    description=("Monte Carlo CFR with baselines: numba solvers for OpenSpiel "
                 "games, compiled trees and native engines."),
    long_description=(HERE / "README.md").read_text(encoding="utf-8"),
    long_description_content_type="text/markdown",
    packages=setuptools.find_packages(include=["mccfrb", "mccfrb.*"]),
    # The page of mccfrb.play (experiments/play.py).
    package_data={"mccfrb.play": ["static/*.html", "static/*.js",
                                  "static/*.css"]},
    license="Apache-2.0",
    license_files=["LICENSE"],
    classifiers=[
        "Development Status :: 4 - Beta",
        "Intended Audience :: Science/Research",
        "Operating System :: POSIX :: Linux",
        "Programming Language :: Python :: 3",
        "Programming Language :: Python :: 3.11",
        "Topic :: Scientific/Engineering :: Artificial Intelligence",
    ],
    python_requires=">=3.11",
    install_requires=[
        "open_spiel>=1.6",
        "numpy>=1.26",
        "numba>=0.59",
        "absl-py>=2.0",
        "pandas>=2.0",
        "matplotlib>=3.8",
        "scipy>=1.10",
        "tqdm>=4.60",
    ],
    extras_require={
        # selenium drives Debian's chromium in tests/test_play_browser.py;
        # tests/test_docs.py builds the documentation site (strict);
        # pytest-xdist runs the suite on both cores (-n 2: most of its time
        # is first-use numba compiles, BUILD_NOTES.md "Suite time").
        "test": ["pytest>=8", "pytest-xdist>=3.5", "selenium>=4.11"] + DOCS,
        # mkdocs build -f docs/mkdocs.yml
        "docs": DOCS,
        "ray": ["ray>=2.9"],
        # OpenSpiel's JAX NFSP (open_spiel.python.jax.nfsp and jax/dqn.py),
        # for the `openspiel_nfsp` comparator; exact pins: a set that installs
        # from the package registry beside numpy 2.x (README, "NFSP").
        "nfsp": [
            "jax==0.10.2",
            "jaxlib==0.10.2",
            "flax==0.12.8",
            "optax==0.2.8",
            "chex==0.1.92",
            "etils[epath]==1.15.0",
            "orbax-checkpoint==0.12.8",
        ],
    },
)
