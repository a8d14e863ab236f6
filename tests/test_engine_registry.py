"""The one table of engines (mccfrb/games/engines/registry.py): everything
that lists the engines derives from it, and every list of the engines in
the docs and docstrings that claims to be complete names exactly them."""

import ast
import io
import pathlib
import re
import tokenize

import numba
import pytest

import mccfrb
from mccfrb.games import engines
from mccfrb.games.engines import common
from mccfrb.games.engines import protocol
from mccfrb.games.engines import registry
from tests.conftest import printed_with_empty_cache

ROOT = pathlib.Path(__file__).resolve().parents[1]

# How the prose spells an engine besides its name (a spelling, not a list
# of engines: the names come from the registry).
SPELLINGS = {"liars_dice": ("liar's dice",),
             "phantom_ttt": ("phantom tic-tac-toe",),
             "dark_hex": ("dark hex",)}
# Words between "engine" and a list that make it examples, not all of them.
HEDGES = r"\be\.g\.|\b(?:such as|for example|like|including|among|as)\b"


def test_codes_names_and_modules_derive_from_the_one_table():
  codes = [e.code for e in registry.ENGINES]
  names = [e.name for e in registry.ENGINES]
  assert len(set(codes)) == len(codes) and len(set(names)) == len(names)
  assert protocol.CODES == {e.name: e.code for e in registry.ENGINES}
  assert sorted(protocol.MODULES) == sorted(codes)
  for entry in registry.ENGINES:
    module = protocol.MODULES[entry.code]
    assert module is registry.module(entry)
    assert (module.NAME, module.CODE) == (entry.name, entry.code)
    assert getattr(protocol, entry.name.upper()) == entry.code
  assert protocol.TREE == registry.code("tree")
  assert mccfrb.engine_names() == sorted(
      e.name for e in registry.ENGINES if e.plays_a_game)
  assert "tree" not in mccfrb.engine_names()


@pytest.mark.parametrize("name", registry.game_names())
def test_engine_for_plays_each_registered_game_under_its_code(name):
  engine = engines.engine_for(mccfrb.load_game(name))
  assert engine.name == name and engine.code == registry.code(name)


def test_a_game_without_an_engine_has_none():
  assert engines.engine_for(mccfrb.load_game("kuhn_poker")) is None


_COUNTED = """
import re
import numpy as np
import numba
import mccfrb
from mccfrb.games import engines
from mccfrb.games.engines import common, compiled, registry
for entry in registry.ENGINES:
  if entry.plays_a_game:
    engine = engines.engine_for(mccfrb.load_game(entry.name))
  else:
    tree = mccfrb.compile_tree("kuhn_poker")
    engine = compiled.make_engine(
        tree, None, mccfrb.public_states(tree, game="kuhn_poker"))
  module = registry.module(entry)
  params, state = engine.params, np.zeros(engine.state_size, dtype=np.int64)
  module.reset(params, state)
  for name, extra in (("player", ()), ("num_moves", ()), ("move_action", (0,)),
                      ("chance_prob", (0,)), ("terminal_value", (0,)),
                      ("returns0", ()), ("infoset_hash", (0,)),
                      ("public_hash", ()), ("situation_hash", ()),
                      ("apply", (0,)), ("reset", ())):
    getattr(module, name)(params, state, *extra)
# Every function these calls compiled that is not inlined: the protocol
# functions and the helpers they call out of line (their IR holds them).
for module in [common] + [registry.module(e) for e in registry.ENGINES]:
  for name, f in sorted(vars(module).items()):
    if (isinstance(f, numba.core.registry.CPUDispatcher)
        and f.py_func.__module__ == module.__name__ and f.signatures
        and f.targetoptions.get("inline", "never") == "never"):
      ir = f.inspect_llvm(f.signatures[0])
      counted = re.findall(r"call void @NRT_(?:incref|decref)", ir)
      print(f"{module.__name__}.{name}:{len(counted)}")
"""


def test_every_engines_protocol_functions_count_no_references(tmp_path):
  """Every engine's protocol functions, and the helpers they call out of
  line (compiled from an empty numba cache, so that their LLVM IR can be
  read), make no NRT_incref/NRT_decref call: a kernel calls them at every
  move, and with reference counts each call made four, out of line, even
  on borrowed arrays (common.engine_function; BUILD_NOTES, "Streaming
  walks and exact CFR on engines")."""
  printed = printed_with_empty_cache(_COUNTED, tmp_path)
  functions = {p.rsplit(":", 1)[0] for p in printed}
  for entry in registry.ENGINES:
    module = registry.module(entry).__name__
    assert {f"{module}.{name}" for name in ("reset", "apply", "player",
                                           "infoset_hash")} <= functions
  assert all(p.endswith(":0") for p in printed), printed


def _leaf_kernel():
  """A kernel asking goofspiel's engine for a leaf's value, as the
  streaming walk's `_expand` does at every leaf."""

  @numba.njit(_nrt=False)
  def leaf(code, params, state, j):
    numba.literally(code)
    return protocol.terminal_value(code, params, state, j)

  return leaf


def test_llvm_inlines_what_an_engine_marks_and_nothing_else():
  """Every engine function sets LLVM's forceinline either way (numba's
  flags inheritance would otherwise give a function the value of whichever
  caller compiled it first), and a kernel asking goofspiel for a leaf's
  value calls nothing: the protocol's overload and goofspiel's
  `terminal_value` (common.inlined_engine_function) are inlined, its
  `apply` is not."""
  marked = set()
  for module in [common] + [registry.module(e) for e in registry.ENGINES]:
    for name, f in vars(module).items():
      if (isinstance(f, numba.core.registry.CPUDispatcher)
          and f.py_func.__module__ == module.__name__
          and f.targetoptions.get("inline", "never") == "never"):
        assert "forceinline" in f.targetoptions, f"{module.__name__}.{name}"
        if f.targetoptions["forceinline"]:
          marked.add(f"{module.__name__}.{name}")
  assert marked == {"mccfrb.games.engines.goofspiel.terminal_value"}
  engine = engines.engine_for(mccfrb.load_game(
      "goofspiel(num_cards=4,imp_info=True,points_order=random,"
      "returns_type=point_difference)"))
  state = engine.new_state()
  leaf = _leaf_kernel()
  # To player 1's bid in round 2 of 4 (round 3 is forced): deal, bids.
  for j in (0, 1, 2, 0, 2, 1, 1, 0):
    assert leaf(engine.code, engine.params, state, 0) == (False, 0.0)
    protocol.apply(engine.code, engine.params, state, j)
  ended, value = leaf(engine.code, engine.params, state, 1)
  protocol.apply(engine.code, engine.params, state, 1)
  assert protocol.player(engine.code, engine.params,
                         state) == protocol.TERMINAL
  assert ended and value == protocol.returns0(engine.code, engine.params,
                                              state)
  calls = re.findall(r"call \S+ @(\S*(?:terminal_value|own_engine))",
                     leaf.inspect_llvm(leaf.signatures[0]))
  assert not calls, calls


def _spellings(names):
  """{spelling (lower case): engine name} of `names`."""
  out = {name: name for name in names}
  for name, words in SPELLINGS.items():
    out.update({w: name for w in words if name in names})
  return out


def engine_lists(text, names):
  """(the engines a list names, the list) for each list of engines in
  `text` that claims to be all of them.

  A list is two or more engine names joined by commas, "and" or "or",
  each bare (not an instance: "goofspiel 6", "13-card goofspiel",
  "liars_dice(numdice=3)", "liars_dice with 3 dice"). It claims to be all
  the engines when "engine" comes shortly before it in the same sentence
  ("a native engine (goofspiel, ...)", "engines exist for ...") with no
  hedge ("e.g.", "such as", ...) in between, it is not part of a longer
  list of games (a comma before or after it) and it does not end open
  (", ...", "etc.").
  """
  text = re.sub(r"\s+", " ", text)
  spelled = _spellings(names)
  word = "|".join(re.escape(s) for s in sorted(spelled, key=len,
                                                reverse=True))
  item = (rf"[`'\"]?(?<![\w-])(?<!-card )(?:{word})"
          rf"(?![\w(-]| \d| with\b)[`'\"]?")
  sep = r"(?: ?, ?(?:and |or )?| (?:and|or) )"
  found = []
  for match in re.finditer(rf"{item}(?:{sep}{item})+", text, re.I):
    before, after = text[:match.start()], text[match.end():]
    if re.search(r", ?$", before) or (
        re.match(r" ?, ?(?:and |or )?[`'\"]?\w", after)):
      continue  # Part of a longer list of games.
    if re.match(r" ?,? ?(?:\.\.\.|…|etc\b)", after):
      continue  # An open list.
    window = before[-70:]
    at = [m.end() for m in re.finditer(r"engines?\b", window, re.I)]
    if not at:
      continue
    between = window[at[-1]:]
    if re.search(r"[.;:] [A-Z]", between) or re.search(HEDGES, between,
                                                        re.I):
      continue
    listed = {spelled[w.lower()] for w in re.findall(
        rf"(?<![\w-])(?:{word})(?!\w)", match.group(0), re.I)}
    found.append((listed, match.group(0)))
  return found


def prose():
  """(path, text) of every user page, CONTRIBUTING.md, and the docstrings
  and comments of the library and the binaries (not the CHANGELOG or the
  build notes: history)."""
  for path in ([ROOT / "README.md", ROOT / "CONTRIBUTING.md"]
               + sorted((ROOT / "docs" / "pages").rglob("*.md"))):
    yield path, path.read_text(encoding="utf-8")
  for path in (sorted((ROOT / "mccfrb").rglob("*.py"))
               + sorted((ROOT / "experiments").glob("*.py"))):
    source = path.read_text(encoding="utf-8")
    parts = []
    for node in ast.walk(ast.parse(source)):
      if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef,
                           ast.AsyncFunctionDef)):
        parts.append(ast.get_docstring(node, clean=False) or "")
    comments = [t.string.lstrip("# ") for t in tokenize.generate_tokens(
        io.StringIO(source).readline) if t.type == tokenize.COMMENT]
    yield path, "\n\n".join(parts) + "\n\n" + "\n".join(comments)


@pytest.mark.parametrize("text, claims", [
    ("plays a native engine (goofspiel, liars_dice) when it does not", 1),
    ("engines exist for goofspiel, liar's dice, phantom tic-tac-toe and "
     "dark hex.", 1),
    ("a native engine (for `dark_hex`, `goofspiel`,\n  `liars_dice` and "
     "`phantom_ttt`: engine_names())", 1),
    ("an engine (e.g. goofspiel, liars_dice) plays it", 0),
    ("games that have an engine (`phantom_ttt`, `dark_hex`, "
     "`liars_dice(numdice=3)`), where", 0),
    ("on goofspiel 6, 13-card goofspiel and phantom_ttt (native engines)", 0),
    ("Imperfect information (phantom_ttt and dark_hex) hides moves.", 0),
    ("a native engine for the game (as phantom_ttt and dark_hex have)", 0),
    ("a native engine (goofspiel, liars_dice, ...)", 0),
])
def test_the_check_finds_the_lists_that_claim_all_engines(text, claims):
  names = {"dark_hex", "goofspiel", "liars_dice", "phantom_ttt"}
  found = engine_lists(text, names)
  assert len(found) == claims, found
  if claims:
    assert engine_lists(text, names | {"kriegspiel"})[0][0] != (
        names | {"kriegspiel"})


def test_every_complete_list_of_engines_names_the_registry_s_engines():
  names = set(mccfrb.engine_names())
  stale, claims = [], 0
  for path, text in prose():
    for listed, words in engine_lists(text, names):
      claims += 1
      if listed != names:
        stale.append(f"{path.relative_to(ROOT)}: {words!r} lacks "
                     f"{sorted(names - listed)}")
  assert not stale, "\n".join(stale)
  assert claims >= 5, "the check found too few lists of the engines"
