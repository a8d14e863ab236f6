"""The solvers' shared interface: game and tree, policies, save and load,
option checks, and the lazy iteration weighting of the sampling solvers."""

import concurrent.futures
import contextlib
import inspect
import json
from typing import NamedTuple

import numba
import numpy as np

from mccfrb import counts
from mccfrb import files
from mccfrb import games
from mccfrb.tables import policy as policy_lib
from mccfrb.games import tree as tree_lib
from mccfrb.games import tree_size
from mccfrb.kernels import exact
from mccfrb.kernels import rng as rng_lib
from mccfrb.solvers import checkpoint
from mccfrb.solvers import running


def check_choice(kind, value, allowed):
  if not isinstance(value, str) or value not in allowed:
    raise ValueError(f"Unknown {kind} {value!r}; allowed: {', '.join(allowed)}.")


def check_unit_interval(name, value, allow_none=False):
  if value is None and allow_none:
    return
  if (isinstance(value, bool) or not isinstance(value, (int, float, np.floating))
      or not 0.0 < float(value) <= 1.0):
    raise ValueError(f"{name} must be a number in (0, 1]"
                     f"{' or None' if allow_none else ''}, got {value!r}.")


# A solver's iterations, in one run() and in total, stay below this
# (counts.py: iteration numbers are exact as int64 and as float64).
MAX_ITERATIONS = counts.MAX_COUNT


def check_num_iterations(num_iterations, name="num_iterations"):
  """`num_iterations` as a Python int; ValueError unless it is an integer in
  [0, MAX_ITERATIONS) (numpy integers are converted, so counters and saved
  files never hold a numpy type)."""
  return counts.check_count(name, num_iterations, 0, MAX_ITERATIONS)


def check_sample_size(name, value, bytes_each, minimum=0, what=None):
  """`value` (`counts.check_count`) whose arrays of `bytes_each` bytes per
  item fit in the memory available now; ValueError otherwise, before any
  allocation."""
  value = counts.check_count(name, value, minimum, MAX_ITERATIONS, what=what)
  available = tree_size.available_memory()
  if available is not None and value * bytes_each > available:
    raise ValueError(f"{name}={value:,} needs {value * bytes_each / 2**30:,.1f}"
                     f" GiB, more than the {available / 2**30:,.1f} GiB of "
                     "memory available.")
  return value


# The batch size of the threaded sampling solvers when `threads` > 1 and no
# batch is given (docs/pages/threads.md).
DEFAULT_BATCH = 1024


def check_threads(threads, batch, default=DEFAULT_BATCH):
  """Validates `threads=` and `batch=` of a sampling solver.

  Returns:
    The batch size to run with: None (episodes one after the other, the
    unthreaded algorithm) when threads == 1 and batch is None, `default`
    when threads > 1 and batch is None, else `batch`.
  """
  threads = counts.check_count("threads", threads, 1,
                               what="a positive integer")
  batch = counts.check_count("batch", batch, 1, allow_none=True,
                             what="a positive integer")
  if batch is None and threads > 1:
    return default
  return batch


@contextlib.contextmanager
def numba_threads(threads):
  """Runs the body with numba's thread count set to `threads`, capped by
  NUMBA_NUM_THREADS (numba's pool size), and restores it afterwards."""
  previous = numba.get_num_threads()
  numba.set_num_threads(
      max(1, min(int(threads), numba.config.NUMBA_NUM_THREADS)))
  try:
    yield
  finally:
    numba.set_num_threads(previous)


def on_threads(work, threads):
  """[work(w) for w in range(threads)], each call on its own Python thread
  (the kernels it calls release the GIL: `nogil=True`); the first
  exception of a worker is raised once every worker has ended."""
  with concurrent.futures.ThreadPoolExecutor(threads) as pool:
    futures = [pool.submit(work, w) for w in range(threads)]
  return [f.result() for f in futures]


def check_seed(seed, allow_none=False):
  """A seed (any integer >= 0, as numpy's generators take) as a Python int."""
  return counts.check_count("seed", seed, 0, None, allow_none=allow_none)


def rng_from_seed(seed):
  """The solver's generator. Without a seed it is seeded from numpy's global
  generator, so a script that calls `np.random.seed(s)` first, as
  OpenSpiel's tests and examples do, is reproducible."""
  seed = check_seed(seed, allow_none=True)
  if seed is None:
    seed = int(np.random.randint(0, np.iinfo(np.int64).max, dtype=np.int64))
  return np.random.default_rng(seed)


class EstimatorSample(NamedTuple):
  """Statistics of sampled estimates under a frozen strategy.

  Attributes:
    root_values: float64[n], u(root) of episode e, in the utility of its
      update player e % 2.
    episodes: int64[2], the number of episodes each player updated.
    regret_mean, regret_var: float64[I, A], mean and variance over the owner's
      episodes of the sampled regret increment (0 where not sampled).
    value_mean, value_var: the same for the sampled counterfactual values.
  """
  root_values: np.ndarray
  episodes: np.ndarray
  regret_mean: np.ndarray
  regret_var: np.ndarray
  value_mean: np.ndarray
  value_var: np.ndarray


class TreeBackend:
  """The compiled tree as a solver's representation.

  A solver holds one backend (`TreeBackend`, `engine.EngineBackend` or
  `grown.GrownBackend`): what runs on a representation apart from the
  algorithm (its storage, policies, memory report, and what a checkpoint
  holds of it). On a compiled tree the algorithm's tables are dense
  arrays indexed by the tree's infosets, named by the solver's
  `_table_names`.
  """

  kind = "tree"
  engine = None
  grown = None
  precision = "float64"

  def __init__(self, solver, tree):
    self._solver = solver
    self.tree = tree
    self._converter = None

  def converter(self):
    """The tree's `TabularPolicyConverter` (built on first use)."""
    if self._converter is None:
      self._converter = policy_lib.TabularPolicyConverter(
          self._solver.game, self.tree)
    return self._converter

  def policy(self, current):
    """The current or average strategy as a `TabularPolicy`."""
    s = self._solver
    table = s.current_policy_table() if current else s.average_policy_table()
    return self.converter()(table)

  def memory(self):
    """`memory()` on a compiled tree (see `engine.EngineBackend.memory`)."""
    s, tree = self._solver, self.tree
    nbytes = sum(getattr(s, n).nbytes for n in s._table_names)  # pylint: disable=protected-access
    return dict(infosets=tree.num_infosets,
                cells=int(tree.infoset_num_actions.sum()),
                bytes=nbytes + tree.nbytes(), max_memory=None, frozen=False,
                dropped=0, precision="float64", collisions=0)

  def infosets_stored(self):
    """Infosets of growing tables (progress bars): none on a tree."""
    return None

  def chunk_unit(self):
    """Iterations that must not be split between two kernel calls: a batch
    (run_in_chunks ends chunks at multiples of it)."""
    return self._solver._batch or 1  # pylint: disable=protected-access

  def require_tree(self, what):
    """Methods that need the compiled tree run here."""
    del what

  def options(self):
    """What a checkpoint records of the representation: nothing here."""
    return {}

  def tables_to_save(self):
    """{name in the checkpoint: array} of the solver's `_table_names`."""
    s = self._solver
    return {name.lstrip("_"): getattr(s, name) for name in s._table_names}  # pylint: disable=protected-access

  def restore_tables(self, tables, path):
    """Copies a checkpoint's tables into the solver's, each checked."""
    s = self._solver
    for name in s._table_names:  # pylint: disable=protected-access
      restore_table(tables, name.lstrip("_"), getattr(s, name), path,
                    s.num_iterations)


class TabularSolverBase:
  """Shared parts of the solvers: game, backend, policies, save and load.

  A solver is its algorithm's options plus one backend (`self._backend`:
  `TreeBackend`, `engine.EngineBackend` or `grown.GrownBackend`), which
  the representation-dependent methods here hand over to. On a compiled
  tree subclasses allocate `self._regrets` and `self._avg` (float64[I, A])
  and list every table to save in `_table_names`.
  """

  _table_names = ("_regrets", "_avg")
  # The weighting of iterations (`Weighting`), in the solvers that take
  # one.
  _weights = None
  # The generator's state words, in the solvers whose kernels draw
  # (`_init_rng`).
  _rng_words = None
  # Iterations per batch, in the solvers that run batches (`_init_threads`).
  _batch = None

  def _init_game(self, game, max_nodes, tree=None, general=False):
    """Loads the game and compiles (or takes) its tree, the solver's
    backend; with `general`, games of more than two players and
    general-sum games are accepted (the solver's kernels read
    `GameTree.payoffs`), else refused."""
    self._game = games.load_game(game, general=True)
    what = type(self).__name__
    if not general:
      games.refuse_general(self._game, what)
    if tree is None:
      tree = tree_lib.compile_tree(self._game, max_nodes=max_nodes)
    elif not isinstance(tree, tree_lib.GameTree):
      raise ValueError(f"tree must be a GameTree, got {type(tree).__name__}.")
    elif tree.is_general and not general:
      raise ValueError(f"{what} runs two-player zero-sum games only; this "
                       f"tree has {tree.num_players} players or general-sum "
                       f"returns ({games.GENERAL_SOLVERS} run it).")
    self._init_backend(self._game, TreeBackend(self, tree))

  def _init_backend(self, game, backend):
    """The solver's game and backend, no iterations yet."""
    self._game, self._backend = game, backend
    self._tree = backend.tree if backend.kind == "tree" else None
    self._num_iterations = 0
    self._nodes_touched = 0

  @property
  def game(self):
    return self._game

  @property
  def tree(self):
    return self._tree

  @property
  def representation(self):
    """"tree", "engine" or "grown" (solvers/representation.py)."""
    return self._backend.kind

  @property
  def engine(self):
    """The native engine playing the game (None off an engine)."""
    return self._backend.engine

  @property
  def grown_tree(self):
    """The `GrownTree` (None unless representation='grown')."""
    return self._backend.grown

  @property
  def precision(self):
    """The cells' precision: "float64" or "float32" (hashed tables)."""
    return self._backend.precision

  def memory(self):
    """What the tables hold: a dict with `infosets` stored, `cells`
    (infoset-actions), `bytes` in use, `max_memory`, `frozen`, `dropped`,
    `precision` and `collisions` (`engine.EngineBackend.memory`; a grown
    tree adds `nodes`, `grown.GrownBackend.memory`)."""
    return self._backend.memory()

  @property
  def num_iterations(self):
    """Iterations run so far."""
    return self._num_iterations

  @property
  def nodes_touched(self):
    """Total number of tree nodes visited so far, for cost comparisons."""
    return self._nodes_touched

  def iteration(self):
    """Runs one iteration, like OpenSpiel's solvers (no progress bar: the
    call drop-in scripts make in their own loops)."""
    self.run(1, progress=False)

  def run(self, num_iterations, progress=None):
    """Runs `num_iterations` iterations.

    In chunks of about 0.1 s (solvers/running.py): Ctrl-C raises
    KeyboardInterrupt at the end of the chunk it falls in, with the
    iterations finished so far counted and the tables valid (save() works;
    run() again goes on), and a tqdm progress bar shows once a run has
    taken a few seconds (progress=True: at once; False: never).
    `run(a); run(b)` leaves exactly the tables of `run(a + b)` (with
    batches, when `a` is a multiple of the batch size; with K episodes in
    flight on an engine, when 2a is a multiple of K), so an interrupted
    run resumed equals one run. A solver runs fewer than MAX_ITERATIONS
    (2**53) iterations in total.
    """
    num_iterations = check_num_iterations(num_iterations)
    if self._num_iterations + num_iterations >= MAX_ITERATIONS:
      raise ValueError(
          f"num_iterations: {num_iterations:,} more after the "
          f"{self._num_iterations:,} already run would reach the limit of "
          f"{counts.limit_text(MAX_ITERATIONS)} iterations in total.")
    if num_iterations:
      running.run_in_chunks(self._run_chunk, num_iterations,
                            unit=self._backend.chunk_unit(),
                            progress=progress,
                            infosets=self._backend.infosets_stored,
                            start=self._num_iterations)

  def _run_chunk(self, num_iterations):
    """Runs num_iterations > 0 iterations, leaving the solver consistent."""
    raise NotImplementedError

  def _require_tree(self, what):
    """ValueError naming `what` unless the solver runs a compiled tree."""
    self._backend.require_tree(what)

  def _caught_up_regrets(self):
    """The regrets, with every discount a row has pending applied (a copy
    when some are: discounted weighting, `Weighting.caught_up`)."""
    if self._weights is None:
      return self._regrets
    return self._weights.caught_up(self._regrets, self._through,
                                   self._num_iterations)

  def current_policy_table(self):
    """sigma^t by regret matching, as an mccfrb table (compiled tree)."""
    self._require_tree("current_policy_table()")
    out = np.zeros_like(self._regrets)
    exact.regret_matching(self._caught_up_regrets(),
                          self._tree.infoset_num_actions, out)
    return out

  def average_policy_table(self):
    """The average strategy as an mccfrb table (uniform where never
    updated; compiled tree)."""
    self._require_tree("average_policy_table()")
    out = np.zeros_like(self._avg)
    exact.normalize_rows(self._cumulative_average(), self._tree.infoset_num_actions,
                         out)
    return out

  def _cumulative_average(self):
    return self._avg

  def average_policy(self):
    """The average strategy: a `TabularPolicy` on a compiled tree, a policy
    answering state by state on an engine (`engine.EnginePolicy`) or a
    grown tree (`grown.GrownPolicy`)."""
    return self._backend.policy(current=False)

  def current_policy(self):
    """The current strategy (`TabularPolicy`, `EnginePolicy` or
    `GrownPolicy`)."""
    return self._backend.policy(current=True)

  def _init_threads(self, threads, batch, default=DEFAULT_BATCH):
    """Validates `threads=` and `batch=` (`check_threads`) and keeps the
    batch size to run with (`_batch`), the number of workers (`_threads`),
    the two options as saved (`_threads_option`), and no batch scratch yet
    (`_batch_buffers`, allocated by the first batched run)."""
    self._batch = check_threads(threads, batch, default=default)
    self._threads = int(threads)
    self._threads_option = dict(threads=self._threads,
                                batch=None if batch is None else int(batch))
    self._batch_buffers = None

  def _init_rng(self, seed):
    """The solver's np.random.Generator (PCG64) and its state as uint64[4]
    (`_rng_words`), which kernels advance in place (kernels/rng.py); the
    generator itself is brought up to date when the solver is saved."""
    self._rng = rng_from_seed(seed)
    self._rng_words = rng_lib.pcg64_state(self._rng)

  def _options(self):
    raise NotImplementedError

  def _tables_to_save(self):
    """{name in the checkpoint: array} of every table `save` writes."""
    return self._backend.tables_to_save()

  def _restore_tables(self, tables, path):
    """Copies a checkpoint's tables (`checkpoint.CheckpointFile.tables`)
    into this (new) solver's, each checked (`restore_table`)."""
    self._backend.restore_tables(tables, path)

  def _tables_loaded(self):
    """Called by `load` after the tables are restored (derived tables)."""

  def save(self, path):
    """Writes every table, the game, the options and the generator state.

    The file is a numpy .npz archive written atomically: into a temporary
    file in the same folder, then renamed over `path`, so an interrupted
    save leaves any earlier file at `path` intact (and the temporary file
    a killed save leaves is removed by the next save or load of `path`).
    `load` resumes bit-identically.
    """
    if self._rng_words is not None:
      rng_lib.set_pcg64_state(self._rng, self._rng_words)
    meta = {
        "format": CHECKPOINT_FORMAT,
        "class": type(self).__name__,
        "game": str(self._game),
        "options": self._options(),
        "num_iterations": self._num_iterations,
        "nodes_touched": self._nodes_touched,
        "rng_state": self._rng.bit_generator.state,
    }
    tables = self._tables_to_save()
    files.write_atomically(path, lambda f: np.savez(
        f, meta=np.array(json.dumps(meta)), **tables))

  @classmethod
  def load(cls, path, game=None):
    """Restores a solver saved with `save`.

    Args:
      path: the checkpoint file.
      game: optional; the file records its game. When given (a game string
        or `pyspiel.Game`), it must be the recorded game.

    Every field is checked before it is used (solvers/checkpoint.py), and
    the temporary files of interrupted saves of `path` are removed.

    Raises:
      ValueError: the file is not an mccfrb checkpoint, is damaged, holds
        a field of the wrong type or out of range, or was saved by another
        solver class or for another game; one line naming the file and the
        field.
      OSError: the file cannot be opened.
    """
    files.remove_leftovers(path)
    with checkpoint.CheckpointFile(path) as opened:
      return cls._load(opened, game)

  @classmethod
  def _load(cls, opened, game):
    meta, path = opened.meta, opened.path
    if meta["class"] != cls.__name__:
      raise ValueError(
          f"{path} holds {_with_article(meta['class'])} checkpoint, not "
          f"{_with_article(cls.__name__)} one; load it with "
          f"{meta['class']}.load.")
    if game is None:
      try:
        game = games.load_game(meta["game"], general=True)
      except (ValueError, RuntimeError) as e:
        raise checkpoint.field_error(path, "game", f"is not a game mccfrb "
                                     f"loads ({_one_line(e)})") from None
    else:
      game = games.load_game(game, general=True)
      if str(game) != meta["game"]:
        raise ValueError(f"{path} was saved for {meta['game']}, not {game}.")
    solver = _construct(cls, game, meta["options"], path)
    solver._num_iterations = meta["num_iterations"]
    solver._nodes_touched = meta["nodes_touched"]
    try:
      solver._restore_tables(opened.tables, path)
    except ValueError as e:
      raise (e if str(e).startswith(path) else
             ValueError(f"{path}: {e}")) from None
    try:
      solver._rng.bit_generator.state = meta["rng_state"]
    except (TypeError, ValueError, KeyError, OverflowError) as e:
      raise checkpoint.field_error(
          path, "rng_state", f"is not a {type(solver._rng.bit_generator).__name__}"
          f" state ({type(e).__name__}: {e})") from None
    if solver._rng_words is not None:  # pylint: disable=protected-access
      solver._rng_words[:] = rng_lib.pcg64_state(solver._rng)
    solver._tables_loaded()
    return solver


def load_solver(path, game=None):
  """Restores any solver saved with `save`, whichever its class.

  Reads the class name the file records and calls that class's `load`; the
  class is looked up among all subclasses of `TabularSolverBase` (at any
  depth), so solver classes added later load without changes here.

  Args:
    path: the checkpoint file.
    game: optional; when given (a game string or `pyspiel.Game`), it must be
      the game the file records.

  Raises:
    ValueError: the file is not an mccfrb checkpoint, names a class that is
      not a known solver, or was saved for another game.
  """
  files.remove_leftovers(path)
  with checkpoint.CheckpointFile(path) as opened:
    name = opened.meta["class"]
  classes = {}
  pending = [TabularSolverBase]
  while pending:
    cls = pending.pop()
    classes.setdefault(cls.__name__, cls)
    pending.extend(cls.__subclasses__())
  del classes[TabularSolverBase.__name__]
  if name not in classes:
    raise ValueError(f"{path} holds a checkpoint of class {name!r}, which is "
                     f"not a known solver; known: {', '.join(sorted(classes))}.")
  return classes[name].load(path, game)


def restore_table(tables, name, target, path, num_iterations, signed=False):
  """Copies the checkpoint's table `name` into `target`: its header is
  checked against `target` (dtype and shape) before it is read, its values
  after (`checkpoint.check_values`; `signed`: integers may be negative)."""
  if name not in tables:
    raise ValueError(f"{path} is not a complete checkpoint: it lacks the "
                     f"table {name!r}.")
  shape, dtype = tables.header(name)
  if (dtype, shape) != (target.dtype, target.shape):
    raise ValueError(f"{path}: table {name!r} is {dtype}{list(shape)}, the "
                     f"game needs {target.dtype}{list(target.shape)}.")
  saved = tables[name]
  checkpoint.check_values(path, name, saved, num_iterations, signed)
  target[...] = saved


CHECKPOINT_FORMAT = checkpoint.FORMAT


def _with_article(word):
  """'an ExternalSamplingSolver', 'an MCCFRbSolver', 'a CFRSolver'."""
  spelled = word[:2].isupper() and word[0] in "FHLMNRSX"  # "em-see-..."
  return f"{'an' if spelled or word[:1].lower() in 'aeiou' else 'a'} {word}"


def _one_line(error):
  lines = str(error).strip().splitlines()
  return lines[0] if lines else type(error).__name__


def _construct(cls, game, options, path):
  """`cls(game, **options)`, leaving out recorded options that `cls` fixes
  (OutcomeSamplingSolver records MCCFRbSolver's `regret`), and checking
  that the solver built has every recorded value."""
  params = inspect.signature(cls).parameters
  takes_any = any(p.kind == p.VAR_KEYWORD for p in params.values())
  params = set(params) - {"game", "tree"}  # Recorded apart, or never.
  try:
    solver = cls(game, **{k: v for k, v in options.items()
                          if takes_any or k in params})
  except (TypeError, ValueError) as e:
    raise checkpoint.field_error(path, "options", f"do not make a "
                                 f"{cls.__name__} ({_one_line(e)})") from None
  if takes_any:
    return solver
  fixed = solver._options()  # pylint: disable=protected-access
  differ = {k: v for k, v in options.items()
            if k not in params and fixed.get(k) != v}
  if differ:
    raise ValueError(f"{path} records options {differ} that {cls.__name__} "
                     "does not take.")
  return solver


def read_checkpoint(path):
  """(meta dict, {table name: array}) of a file written by a solver's `save`,
  every meta field and member checked (solvers/checkpoint.py).

  Raises:
    ValueError: `path` is not an mccfrb checkpoint, or is damaged.
    OSError: the file cannot be opened (for example it does not exist).
  """
  with checkpoint.CheckpointFile(path) as opened:
    return opened.meta, dict(opened.tables)


WEIGHTINGS = {None: 0, "linear": 1, "discounted": 2}


def _log_discount_prefix(power, size):
  """[0, sum_{k=1..m} log(k^power / (k^power + 1)) for m = 1..size-1]."""
  k = np.arange(1, size, dtype=np.float64)
  return np.concatenate([[0.0], np.cumsum(-np.log1p(k**-power))])


class Weighting:
  """Linear / discounted weighting of a sampling solver's iterations.

  "linear": iteration t contributes with weight t (or min(t,
  linear_iterations): linear for an initial phase only). "discounted": DCFR's
  (alpha, beta, gamma): after iteration t positive regrets are multiplied by
  t^a/(t^a + 1) and negative ones by t^b/(t^b + 1), lazily: a row catches up
  on the discounts it missed when next visited (kernels keep `_through`),
  through prefix sums of the log-factors; averages are weighted t^gamma.
  A solver holds one (`_weights`); `options` is what its checkpoint records.
  """

  def __init__(self, weighting, linear_iterations, alpha, beta, gamma):
    if weighting not in WEIGHTINGS:
      raise ValueError(f"Unknown weighting {weighting!r}; allowed: None, "
                       "'linear', 'discounted'.")
    if linear_iterations is not None and weighting != "linear":
      raise ValueError("linear_iterations must be a positive integer, with "
                       f"weighting='linear'; got {linear_iterations!r}.")
    linear_iterations = counts.check_count(
        "linear_iterations", linear_iterations, 1, MAX_ITERATIONS,
        allow_none=True, what="a positive integer")
    for name, value in (("alpha", alpha), ("beta", beta), ("gamma", gamma)):
      if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{name} must be a number, got {value!r}.")
    self.options = dict(weighting=weighting,
                        linear_iterations=linear_iterations,
                        alpha=float(alpha), beta=float(beta),
                        gamma=float(gamma))
    self._log_pos = self._log_neg = np.zeros(1)

  @property
  def discounted(self):
    """Whether regrets are discounted (rows keep the iteration they were
    last brought up to, `through`)."""
    return self.options["weighting"] == "discounted"

  def args(self, last_iteration):
    """The kernel arguments up to `last_iteration`: code, linear_until,
    gamma, log_pos, log_neg."""
    w = self.options
    if self.discounted and len(self._log_pos) < last_iteration + 2:
      size = max(last_iteration + 2, 2 * len(self._log_pos))
      self._log_pos = _log_discount_prefix(w["alpha"], size)
      self._log_neg = _log_discount_prefix(w["beta"], size)
    return (WEIGHTINGS[w["weighting"]], w["linear_iterations"] or 0,
            w["gamma"], self._log_pos, self._log_neg)

  def caught_up(self, regrets, through, iterations):
    """`regrets` with every pending discount applied up to `iterations`
    (rows last discounted through `through`): a copy when discounted."""
    if not self.discounted or iterations == 0:
      return regrets
    self.args(iterations)
    fp = np.exp(self._log_pos[iterations] - self._log_pos[through])[:, None]
    fn = np.exp(self._log_neg[iterations] - self._log_neg[through])[:, None]
    return np.where(regrets >= 0, regrets * fp, regrets * fn)


def skipped_weight(t, last, linear):
  """The weight optimistic averaging owes an infoset last updated at
  iteration `last` (int or int64 array) when read at iteration t: t - last,
  or with linear averaging (RM+) the skipped iterations' weights
  last + 1 + ... + t = (t - last) (t + last + 1) / 2, in float64 as the
  kernels' `weighting.linear_skipped` (the int64 products t (t + 1) would
  wrap past about 3e9 iterations, and their float64 difference rounds)."""
  if linear:
    return 0.5 * (t - last) * (t + last + 1.0)
  return t - last


def optimistic_average(solver):
  """The cumulative strategy of a compiled-tree solver with optimistic
  averaging, flushed to iteration T (Lanctot 2013 section 4).

  Each infoset I last updated at c_I < T gets (T - c_I) pi_owner(I)
  sigma^T(I) added (thesis section 3.4), or with regret="rm+" the skipped
  iterations' linear weights (T (T + 1) - c_I (c_I + 1)) / 2, on a copy:
  reading the average never changes the solver's state. Reads the
  solver's `_averaging_code` (1 = optimistic), `_regret_code` (1 = RM+
  with linear averaging), `_avg`, `_avg_last` and
  `current_policy_table()`.
  """
  s = solver
  if s._averaging_code == 0 or s.num_iterations == 0:  # pylint: disable=protected-access
    return s._avg  # pylint: disable=protected-access
  tree = s.tree
  strategy = s.current_policy_table()
  reach = np.empty((tree.num_nodes, tree.num_players + 1))
  exact.reach_probabilities(*tree.kernel_args()[:6], strategy, reach)
  decision = np.flatnonzero(tree.node_kind == tree_lib.DECISION)
  owner_reach = np.zeros(tree.num_infosets)
  owner_reach[tree.node_infoset[decision]] = reach[
      decision, tree.node_player[decision]]
  weight = skipped_weight(s.num_iterations, s._avg_last,  # pylint: disable=protected-access
                          s._regret_code) * owner_reach  # pylint: disable=protected-access
  return s._avg + weight[:, None] * strategy  # pylint: disable=protected-access
