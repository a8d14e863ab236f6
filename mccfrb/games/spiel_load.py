"""Loading a game string through OpenSpiel, its errors raised once.

OpenSpiel's C++ prints the text of an error on standard error before it
raises it as `pyspiel.SpielError`, so a misspelt parameter would show its
message twice. `load` checks the parameter names first (a one-line error
naming the parameter meant), and around `pyspiel.load_game` sends file
descriptor 2 to a temporary file: on an error the printed copy of the
message is dropped and the error raised once; anything else printed is
passed on to standard error.
"""

import contextlib
import difflib
import os
import sys
import tempfile

import pyspiel

_PREFIX = b"OpenSpiel exception: "


def top_level_items(params):
  """The top-level `key=value` items of a parameter string (without the
  parentheses), nested parentheses kept whole."""
  return [item for item in split_top_level(params) if item.strip()]


def split_top_level(params):
  """A parameter string (without the parentheses) split on its top-level
  commas, nested parentheses kept whole, empty items included."""
  items, depth, current = [], 0, ""
  for ch in params:
    if ch == "," and depth == 0:
      items.append(current)
      current = ""
      continue
    depth += {"(": 1, ")": -1}.get(ch, 0)
    current += ch
  items.append(current)
  return items


def check_parameter_names(name, params, spec):
  """ValueError naming a parameter that game `name` does not take, and the
  name it may have meant. `params`: the text between the parentheses."""
  types = {t.short_name: t for t in pyspiel.registered_games()}
  if name not in types:
    return
  allowed = sorted(types[name].parameter_specification)
  for item in top_level_items(params):
    key = item.partition("=")[0].strip()
    if key not in allowed:
      close = difflib.get_close_matches(key, allowed, n=1, cutoff=0.6)
      hint = f"Did you mean {close[0]!r}? " if close else ""
      raise ValueError(
          f"OpenSpiel could not load {spec!r}: {name} has no parameter "
          f"{key!r}. {hint}Its parameters: {', '.join(allowed) or 'none'}.")


@contextlib.contextmanager
def _stderr_to(file):
  """Sends file descriptor 2 to `file` inside the block."""
  sys.stderr.flush()
  saved = os.dup(2)
  try:
    os.dup2(file.fileno(), 2)
    yield
  finally:
    os.dup2(saved, 2)
    os.close(saved)


def load(spec):
  """`pyspiel.load_game(spec)`, OpenSpiel's error raised once.

  Raises:
    ValueError: OpenSpiel could not load `spec`, with OpenSpiel's message;
      it is not also printed on standard error.
  """
  error = None
  with tempfile.TemporaryFile() as captured:
    with _stderr_to(captured):
      try:
        game = pyspiel.load_game(spec)
      except pyspiel.SpielError as e:
        error = e
    captured.seek(0)
    printed = captured.read()
  if error is not None:
    message = str(error).encode()
    printed = b"".join(
        line for line in printed.splitlines(keepends=True)
        if line.rstrip(b"\n") not in (_PREFIX + message, message))
  if printed:
    os.write(2, printed)
  if error is not None:
    raise ValueError(
        f"OpenSpiel could not load {spec!r}: {error}. Check the parameter "
        "names and values against the game's documentation.") from None
  return game
