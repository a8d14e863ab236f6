"""Installs mccfrb: Monte Carlo CFR with baselines for OpenSpiel."""

import setuptools

# What building the documentation site needs (docs/mkdocs.yml).
DOCS = ["mkdocs>=1.6", "mkdocs-material>=9.5", "mkdocstrings[python]>=0.26"]

setuptools.setup(
    name="mccfrb",
    version="0.1.0",
    description=("Monte Carlo CFR with baselines: numba solvers for OpenSpiel "
                 "games, compiled trees and native engines."),
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    packages=setuptools.find_packages(include=["mccfrb", "mccfrb.*"]),
    # The page of mccfrb.play (experiments/play.py).
    package_data={"mccfrb.play": ["static/*.html", "static/*.js",
                                  "static/*.css"]},
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
