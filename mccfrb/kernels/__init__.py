"""Numba kernels over the flat arrays of a `mccfrb.games.tree.GameTree`.

Kernels are module-level `@njit(cache=True)` functions: arrays in, results
written in place, no globals, no Python objects. The node-kind codes below are
repeated as literals inside kernels (CHANCE=0, DECISION=1, TERMINAL=2) so that
no kernel reads a module global.
"""
