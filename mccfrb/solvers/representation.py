"""Choosing how a solver holds its game: a compiled tree or a native engine.

- "tree": `compile_tree`, every history in flat arrays; the fastest
  kernels, for games that fit in memory.
- "engine": a native numba engine (mccfrb/games/engines): nothing of the
  game is stored, infoset tables grow as they are visited; for games too
  large to compile that have one (`engines.engine_names()`).
- "grown": the tree grows as episodes reach new histories
  (mccfrb/games/grown.py): any two-player zero-sum OpenSpiel game, for
  outcome sampling (`MCCFRbSolver`, `OutcomeSamplingSolver`) and external
  sampling.
- "auto": the tree when Knuth's estimate of the game's size fits in
  `max_nodes` (by default what the memory available allows), else the
  engine when the game has one, else (for the solvers that run it) the
  grown tree.

Which solver runs which: mccfrb/capabilities.py.
"""

from mccfrb import games
from mccfrb.games import engines
from mccfrb.games import tree_size

REPRESENTATIONS = ("auto", "tree", "engine", "grown")
# Knuth probes asked by "auto" (the estimate of a game far from the limit
# needs few; this takes about 0.1 s on goofspiel 13).
AUTO_PROBES = 300


def _engine_or_error(game, what):
  engine = engines.engine_for(game)
  if engine is None:
    raise ValueError(
        f"{game} has no native engine{what}; engines exist for "
        f"{', '.join(engines.engine_names())}. Use representation='tree' "
        "for a game that fits in memory.")
  return engine


def check(representation):
  """Raises ValueError unless `representation` is one of REPRESENTATIONS."""
  if representation not in REPRESENTATIONS:
    raise ValueError(f"Unknown representation {representation!r}; allowed: "
                     f"{', '.join(REPRESENTATIONS)}.")


def resolve(game, representation, max_nodes=None, grown=False):
  """("tree", None), ("engine", Engine) or ("grown", None) for a game from
  `load_game`; `grown`: the solver runs grown trees.

  Raises:
    ValueError: unknown representation; "engine" for a game without one;
      "grown" for a solver that does not run it, or a game that is not
      two-player zero-sum.
  """
  check(representation)
  two_player = games.is_two_player_zero_sum(game)
  if representation == "tree" or (representation == "auto"
                                  and not two_player):
    return "tree", None  # Engines and grown trees: two-player zero-sum.
  if representation == "engine":
    return "engine", _engine_or_error(game, "")
  if representation == "grown":
    if not grown:
      raise ValueError(
          "representation='grown' runs outcome sampling (MCCFRbSolver, "
          "OutcomeSamplingSolver) and ExternalSamplingSolver; this solver "
          "takes 'auto', 'tree' or 'engine'.")
    games.refuse_general(game, "representation='grown'")
    return "grown", None
  if engines.engine_for(game) is None and not grown:
    return "tree", None  # compile_tree refuses it if it is too large.
  if max_nodes is None:
    max_nodes = tree_size.default_max_nodes()
  estimate, _ = tree_size.estimate_num_nodes(game, num_probes=AUTO_PROBES,
                                             time_limit=0.5)
  if estimate <= max_nodes:
    return "tree", None
  engine = engines.engine_for(game)
  return ("grown", None) if engine is None else ("engine", engine)


# How a refusal names each representation.
NAMED = {"tree": "a compiled tree (representation='tree')",
         "engine": "an engine (representation='engine')",
         "grown": "a grown tree (representation='grown')"}


def refuse(option, serving, kind, advice=""):
  """Raises the one-line ValueError for an option that the solver's
  representation cannot serve.

  Args:
    option: the option as the user wrote it ("batch=64").
    serving: the representations that serve it (keys of NAMED).
    kind: the solver's representation.
    advice: what to do instead, a sentence (optional).
  """
  where = " or ".join(NAMED[r] for r in serving)
  raise ValueError(f"{option} runs on {where}; this solver runs on "
                   f"{NAMED[kind]}.{' ' + advice if advice else ''}")


def check_batch(kind, batch, advice):
  """Refuses `batch=` on any representation but the compiled tree (the only
  one with batches), with `advice`: what runs there instead."""
  if kind != "tree" and batch is not None:
    refuse(f"batch={batch!r}", ("tree",), kind, advice)


def check_hogwild(kind, threads, hogwild, batch):
  """Raises ValueError unless Hogwild, threads and batches fit the
  representation: hogwild=True on an engine without batches, threads > 1
  on an engine only with hogwild=True, and batches on a compiled tree
  only."""
  if not isinstance(hogwild, bool):
    raise ValueError(f"hogwild must be True or False, got {hogwild!r}.")
  if hogwild and kind != "engine":
    refuse("hogwild=True", ("engine",), kind,
           "On a compiled tree, threads > 1 run deterministic batches "
           "(batch=).")
  if hogwild and batch is not None:
    raise ValueError(
        "hogwild=True runs on an engine, without batches; on a compiled "
        "tree, threads > 1 run deterministic batches (batch=).")
  if kind == "engine":
    check_batch(kind, batch,
                "There episodes run one after the other, or lock-free with "
                "threads > 1 and hogwild=True.")
  if kind == "engine" and threads > 1 and not hogwild:
    raise ValueError(
        f"threads={threads} on an engine needs hogwild=True (lock-free "
        "updates of the shared tables, not reproducible run to run).")
