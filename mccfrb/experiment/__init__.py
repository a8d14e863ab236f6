"""Experiment tooling: the registry of algorithms, sweeps, analysis, plots
and projections, training by the clock (the binaries in experiments/ are
thin flag holders over these)."""
