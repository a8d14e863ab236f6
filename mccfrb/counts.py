"""Counts given to the public API: integers, bounded, kept as Python ints.

Every count a user passes (iterations, episodes, threads, batch sizes,
seeds, node and memory limits) goes through `check_count`: it takes any
integer type through `operator.index` (Python and numpy integers; not
bools, floats or strings), refuses values outside the allowed range with
one ValueError naming the argument and the range, and returns a Python
int, so counters and saved files never hold a numpy type.
"""

import contextlib
import operator

import numpy as np

# Iterations (run(n), and a solver's total) and every other count stay
# below this. Iteration numbers reach the kernels as int64 and, in the
# regret rules and the linear and discounted weights, as float64 `t`,
# which is exact for every integer below 2**53.
MAX_COUNT = 2**53


def limit_text(limit):
  """'2**53' for a power of two, else the number with thousands commas."""
  if limit > 0 and limit & (limit - 1) == 0:
    return f"2**{limit.bit_length() - 1}"
  return f"{limit:,}"


def check_count(name, value, minimum=0, maximum=MAX_COUNT, allow_none=False,
                what=None):
  """`value` as a Python int in [minimum, maximum).

  Args:
    name: the argument's name, for the message.
    value: the value given.
    minimum: the smallest value allowed.
    maximum: values from this on are refused; None: no upper bound.
    allow_none: None is allowed (and returned).
    what: how the message describes the allowed values (by default "an
      integer in [minimum, maximum)"); the upper bound is added when the
      value passes it.

  Returns:
    The value as a Python int (or None).

  Raises:
    ValueError: `value` is not an integer (bools are refused) or is out of
      range; one line naming `name` and the allowed values.
  """
  if value is None and allow_none:
    return None
  number = None
  if not isinstance(value, (bool, np.bool_)):
    # Not an integer type: number stays None and the error below names it.
    with contextlib.suppress(TypeError):
      number = operator.index(value)
  if number is not None and number >= minimum and (
      maximum is None or number < maximum):
    return number
  if what is None:
    what = (f"an integer >= {minimum}" if maximum is None else
            f"an integer in [{minimum}, {limit_text(maximum)})")
  elif number is not None and maximum is not None and number >= maximum:
    what = f"{what} below {limit_text(maximum)}"
  raise ValueError(f"{name} must be {what}{' or None' if allow_none else ''}"
                   f", got {value!r}.")
