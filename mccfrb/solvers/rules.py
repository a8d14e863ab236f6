"""Regret rules of the exact CFR family: the per-infoset local update.

Every variant mccfrb's exact solvers run is one member of a family of local
rules, applied to each infoset I of the updated player after its pass of
iteration t gives the instantaneous regrets r_t(I, a) (opponent and chance
reach times v(I, a) - v(I)) and the player's own reach pi_t(I):

  R_t(I, a) = post_t(X) with X = R_{t-1}(I, a) * discount(t) + r_t(I, a),
              clipped at 0 first if `clip` (regret matching+),
              post_t(X) = X * positive_factor(t) if X >= 0
                          X * negative_factor(t) if X < 0;
  sigma_{t+1}(I) = regret matching of R_t(I, .), or, if `predictive`, of
                   R_t(I, a) * predict_scale(t) + r_t(I, a);
  S_t(I, a) = S_{t-1}(I, a) + pi_t(I) sigma_t(I, a) average_weight(t).

(Zinkevich et al. 2007; RM+ and linear averaging: Tammelin 2014; LCFR and
DCFR: Brown and Sandholm 2019, whose discount follows the addition, as in
OpenSpiel's `discounted_cfr.py`; PCFR+: Farina, Kroer and Sandholm 2021;
DCFR+ and PDCFR+: Xu et al. 2024, whose discount precedes it, as in the
authors' code.) The average is normalised per infoset, so a weight
t^gamma gives the same average policy as the authors' S_t = S_{t-1}
((t - 1) / t)^gamma + pi_t sigma_t.

A rule is a `RegretRule`: two flags and five functions of the iteration t
(a float, or a float64 array of them: `coefficients`). The solver evaluates the functions once per iteration
(`coefficients`), before the kernel call that runs those iterations, and
passes them as a float64[n, 5] array; the kernels (kernels/cfr.py,
kernels/stream.py) are compiled once for every rule and cached, so a rule
written in Python costs nothing per infoset. A new variant is a subclass:

```python
class QuadraticPCFRPlus(mccfrb.RegretRule):
  name = "pcfr+ with cubic averaging"
  clip = True
  predictive = True
  def average_weight(self, t):
    return t ** 3

mccfrb.CFRSolver("leduc_poker", variant=QuadraticPCFRPlus())
```

What the family does not hold: rules that are not of this form, such as
Hedge (exponential weights) or regret matching with a per-action learning
rate. (Numba compiles a kernel that takes a function argument anew in every
process, never from its cache, which would cost a solver tens of seconds
to start; the coefficient form keeps the kernels cached.)
"""

import math

import numpy as np

from mccfrb.kernels import cfr as cfr_kernels

# Columns of `coefficients`.
C_DISCOUNT, C_POSITIVE, C_NEGATIVE, C_PREDICT, C_WEIGHT = range(5)
NUM_COEFFICIENTS = 5


class RegretRule:
  """A local regret rule (see the module docstring for the update).

  Subclass it and override what differs; the defaults are vanilla CFR
  (regret matching, uniform averaging).

  Attributes:
    name: shown in errors and in `CFRSolver` options.
    clip: regret matching+: R_t is clipped at 0 before `positive_factor`.
    predictive: the next strategy is regret matching of
      R_t * predict_scale(t) + r_t (optimistic: the prediction of the next
      instantaneous regret is the last one).
  """

  name = "custom"
  clip = False
  predictive = False

  def discount(self, t):
    """Multiplies R_{t-1} before r_t is added (DCFR+, PDCFR+)."""
    del t
    return 1.0

  def positive_factor(self, t):
    """Multiplies R_t >= 0 after r_t is added (LCFR, DCFR)."""
    del t
    return 1.0

  def negative_factor(self, t):
    """Multiplies R_t < 0 after r_t is added (LCFR, DCFR)."""
    del t
    return 1.0

  def predict_scale(self, t):
    """Scales R_t in the predicted regrets (predictive rules only):
    discount(t + 1), so that the prediction is the next update's X."""
    return self.discount(t + 1)

  def average_weight(self, t):
    """w_t of the average strategy's terms."""
    del t
    return 1.0

  def constants(self):
    """The rule's constants, as `CFRSolver` saves them (a dict)."""
    return {}

  def __repr__(self):
    args = ", ".join(f"{k}={v!r}" for k, v in self.constants().items())
    return f"{type(self).__name__}({args})"

  def splits(self):
    """Whether r_t must be kept apart from R_{t-1} (a discount before the
    addition, or a prediction); else the kernels add the terms to R in
    place, as OpenSpiel does. Decided from the class, not from values."""
    return (self.predictive
            or type(self).discount is not RegretRule.discount)

  def coefficients(self, first, count):
    """float64[count, 5]: the columns C_* for t = first .. first+count-1.

    Each function is called once with every t at once (a float64 array)
    where it computes elementwise (the built-ins do: a per-t Python call
    cost about 2 us an iteration, a third of an exact iteration on Kuhn),
    else once per t with t a float; either way t is a float, so a value
    does not depend on how the iterations are split into calls.

    Raises:
      ValueError: a value is not finite or is negative, naming the rule,
        the function and the iteration.
    """
    ts = np.arange(first, first + count, dtype=np.float64)
    out = np.empty((count, NUM_COEFFICIENTS))
    functions = ((C_DISCOUNT, self.discount),
                 (C_POSITIVE, self.positive_factor),
                 (C_NEGATIVE, self.negative_factor),
                 (C_PREDICT, self.predict_scale),
                 (C_WEIGHT, self.average_weight))
    for column, function in functions:
      if column == C_PREDICT and not self.predictive:
        out[:, column] = 1.0
      else:
        out[:, column] = self._evaluate(function, ts)
    return out

  def _evaluate(self, function, ts):
    """`function` at every t of `ts`, checked finite and >= 0."""
    values = None
    try:
      with np.errstate(all="ignore"):
        got = np.asarray(function(ts), dtype=np.float64)
      if got.shape in ((), ts.shape):
        values = np.broadcast_to(got, ts.shape)
    except Exception:  # pylint: disable=broad-except
      values = None  # Not elementwise: one call per t below.
    if values is None:
      values = np.empty(len(ts))
      for k, t in enumerate(ts):
        try:
          values[k] = float(function(float(t)))
        except (TypeError, ValueError, ArithmeticError) as e:
          raise ValueError(f"Regret rule {self.name!r}: {function.__name__}"
                           f"({int(t)}) failed: {e}") from e
    bad = ~np.isfinite(values) | (values < 0.0)
    if bad.any():
      k = int(np.argmax(bad))
      raise ValueError(
          f"Regret rule {self.name!r}: {function.__name__}({int(ts[k])}) = "
          f"{float(values[k])!r}; it must be finite and >= 0.")
    return values


def _number(rule, name, value, low=0.0):
  """`value` as a float, checked finite and >= low (ValueError)."""
  if isinstance(value, bool) or not isinstance(value, (int, float)):
    raise ValueError(f"{rule}: {name} must be a number, got {value!r}.")
  value = float(value)
  if not math.isfinite(value) or value < low:
    raise ValueError(f"{rule}: {name} must be finite and >= {low:g}, got "
                     f"{value!r}.")
  return value


class CFR(RegretRule):
  """Vanilla CFR: regret matching, uniform averaging (pyspiel.CFRSolver)."""
  name = "cfr"


class CFRPlus(RegretRule):
  """CFR+: regret matching+, linear averaging (pyspiel.CFRPlusSolver)."""
  name = "cfr+"
  clip = True

  def average_weight(self, t):
    return t


class Discounted(RegretRule):
  """DCFR(alpha, beta, gamma) (Brown and Sandholm 2019; OpenSpiel's
  `discounted_cfr.DCFRSolver`): after each addition positive regrets are
  multiplied by t^alpha / (t^alpha + 1), negative ones by
  t^beta / (t^beta + 1); average weights t^gamma."""
  name = "discounted"

  def __init__(self, alpha=1.5, beta=0.0, gamma=2.0):
    self.alpha = _number(self.name, "alpha", alpha)
    self.beta = _number(self.name, "beta", beta, low=-math.inf)
    self.gamma = _number(self.name, "gamma", gamma)

  def positive_factor(self, t):
    ta = t ** self.alpha
    return ta / (ta + 1.0)

  def negative_factor(self, t):
    tb = t ** self.beta
    return tb / (tb + 1.0)

  def average_weight(self, t):
    return t ** self.gamma

  def constants(self):
    return {"alpha": self.alpha, "beta": self.beta, "gamma": self.gamma}


class Linear(Discounted):
  """Linear CFR: DCFR(1, 1, 1) (OpenSpiel's `discounted_cfr.LCFRSolver`)."""
  name = "linear"

  def __init__(self):
    super().__init__(1.0, 1.0, 1.0)

  def constants(self):
    return {}


class PCFRPlus(RegretRule):
  """Predictive CFR+ (Farina, Kroer and Sandholm 2021): R_t = max(R_{t-1}
  + r_t, 0), the next strategy from max(R_t + r_t, 0), average weights
  t^gamma (gamma = 2, the authors' code)."""
  name = "pcfr+"
  clip = True
  predictive = True

  def __init__(self, gamma=2.0):
    self.gamma = _number(self.name, "gamma", gamma)

  def predict_scale(self, t):
    return 1.0

  def average_weight(self, t):
    return t ** self.gamma

  def constants(self):
    return {"gamma": self.gamma}


class DCFRPlus(RegretRule):
  """DCFR+ (Xu et al. 2024): R_t = max(R_{t-1} (t-1)^alpha /
  ((t-1)^alpha + 1.5) + r_t, 0), regret matching+, average weights
  t^gamma (alpha = 1.5, gamma = 4: the authors' code, `dcfr_plus.py`)."""
  name = "dcfr+"
  clip = True
  _offset = 1.5  # The discount's denominator: (t-1)^alpha + _offset.

  def __init__(self, alpha=1.5, gamma=4.0):
    self.alpha = _number(self.name, "alpha", alpha)
    self.gamma = _number(self.name, "gamma", gamma)

  def discount(self, t):
    ta = (t - 1) ** self.alpha
    return ta / (ta + self._offset)

  def average_weight(self, t):
    return t ** self.gamma

  def constants(self):
    return {"alpha": self.alpha, "gamma": self.gamma}


class PDCFRPlus(DCFRPlus):
  """Predictive DCFR+ (Xu et al. 2024): with d(t) = (t-1)^alpha /
  ((t-1)^alpha + 1), R_t = max(R_{t-1} d(t) + r_t, 0), the next strategy
  from max(R_t d(t+1) + r_t, 0), average weights t^gamma (alpha = 2.3,
  gamma = 5: the authors' code, `pdcfr_plus.py`)."""
  name = "pdcfr+"
  predictive = True
  _offset = 1.0

  def __init__(self, alpha=2.3, gamma=5.0):  # pylint: disable=useless-parent-delegation
    super().__init__(alpha, gamma)


# variant name -> the rule's class; the constants each takes are its
# __init__'s keyword arguments.
RULES = {
    "cfr": CFR,
    "cfr+": CFRPlus,
    "linear": Linear,
    "discounted": Discounted,
    "pcfr+": PCFRPlus,
    "dcfr+": DCFRPlus,
    "pdcfr+": PDCFRPlus,
}


def rule_of(variant, **constants):
  """The `RegretRule` of a variant name or rule, with constants.

  Args:
    variant: a name in RULES or a `RegretRule` instance.
    **constants: alpha/beta/gamma given to the variant (None: its default).

  Raises:
    ValueError: unknown variant, a constant the variant does not take, or
      a constant out of range.
  """
  given = {k: v for k, v in constants.items() if v is not None}
  if isinstance(variant, RegretRule):
    if given:
      raise ValueError(f"Constants {sorted(given)} apply to named variants; "
                       f"set them on the rule {variant!r} itself.")
    return variant
  if isinstance(variant, type) and issubclass(variant, RegretRule):
    raise ValueError(f"variant={variant.__name__} is a class; pass an "
                     f"instance: variant={variant.__name__}().")
  if not isinstance(variant, str) or variant not in RULES:
    raise ValueError(f"Unknown variant {variant!r}; allowed: "
                     f"{', '.join(RULES)}, or a RegretRule instance.")
  cls = RULES[variant]
  allowed = _constant_names(cls)
  extra = sorted(set(given) - set(allowed))
  if extra:
    raise ValueError(f"variant={variant!r} takes "
                     f"{', '.join(allowed) or 'no constants'}; got "
                     f"{', '.join(extra)}.")
  return cls(**given)


def _constant_names(cls):
  import inspect  # pylint: disable=import-outside-toplevel
  if cls.__init__ is object.__init__:
    return ()
  return tuple(p for p in inspect.signature(cls.__init__).parameters
               if p != "self")


# The named variants that run with simultaneous updates
# (`CFRSolver(alternating_updates=False)`): those whose regret terms are
# added to R in place and clipped or discounted after the addition, so
# that the simultaneous iteration is Zinkevich et al. 2007's with that
# local update (RM+ and linear averaging: Tammelin 2014; LCFR and DCFR:
# Brown and Sandholm 2019), as OpenSpiel's `cfr._CFRSolver` runs it with
# `alternating_updates=False`. A rule of one's own runs them unless it
# `splits()`. PCFR+, DCFR+ and PDCFR+ (which split: a prediction, or a
# discount before the addition) follow Xu et al. 2024's code
# (github.com/rpSebastian/PDCFRPlus, `pdcfrplus/cfr/*.py`), whose solvers
# update the players in turn only: with no simultaneous form from their
# authors' code, they are refused rather than guessed.
SIMULTANEOUS_RULES = ("cfr", "cfr+", "linear", "discounted")


def check_alternating(alternating_updates, rule):
  """`alternating_updates` as a bool, checked against `rule`, before any
  work.

  Raises:
    ValueError: not True or False; or False (simultaneous updates) with a
      rule that predicts or discounts before the addition (one line naming
      the rules that run them).
  """
  if not isinstance(alternating_updates, (bool, np.bool_)):
    raise ValueError("alternating_updates must be True or False, got "
                     f"{alternating_updates!r}.")
  if not alternating_updates and rule.splits():
    raise ValueError(
        "alternating_updates=False (simultaneous updates) runs the regret "
        f"rules {', '.join(SIMULTANEOUS_RULES)} and rules of one's own "
        f"without prediction or discount before the addition, not "
        f"{rule.name!r}: PCFR+, DCFR+ and PDCFR+ follow their authors' "
        "code, which updates the players in turn; pass "
        "alternating_updates=True.")
  return bool(alternating_updates)


def kernel_flags(rule):
  """The rule's switches as the kernels take them (`kernels.cfr.Flags`):
  post is whether positive/negative factors are applied."""
  post = (type(rule).positive_factor is not RegretRule.positive_factor
          or type(rule).negative_factor is not RegretRule.negative_factor)
  return cfr_kernels.Flags(bool(rule.clip), bool(post), bool(rule.splits()),
                           bool(rule.predictive))
