"""Atomic operations and a prefetch hint for numba kernels (llvmlite).

Hogwild workers insert rows into shared tables without locks: a row's
space is reserved with `atomic_add` and published with one
`atomic_cas` on its hash slot. `prefetch` asks the memory system for a
cache line that a kernel will read soon, so that the misses of several
independent lookups overlap instead of queueing (LLVM's `llvm.prefetch`
intrinsic; a hint: it never faults and never changes a value).
"""

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic


def _pointer(context, builder, array_type, array, index):
  arr = context.make_array(array_type)(context, builder, array)
  return cgutils.get_item_pointer(context, builder, array_type, arr, [index])


@intrinsic
def atomic_add(typingctx, array, index, value):  # pylint: disable=unused-argument
  """Atomically adds `value` to array[index] (int64, 1-d); returns the old
  value."""
  if not (isinstance(array, types.Array) and array.dtype == types.int64
          and array.ndim == 1):
    return None
  sig = types.int64(array, types.intp, types.int64)

  def codegen(context, builder, signature, args):
    ptr = _pointer(context, builder, signature.args[0], args[0], args[1])
    return builder.atomic_rmw("add", ptr, args[2], "seq_cst")

  return sig, codegen


@intrinsic
def atomic_cas(typingctx, array, index, expected, value):  # pylint: disable=unused-argument
  """Atomically sets array[index] (uint64, 1-d) to `value` if it holds
  `expected`; returns the value it held (== expected on success). Stores
  made before it are visible to any thread that sees `value`."""
  if not (isinstance(array, types.Array) and array.dtype == types.uint64
          and array.ndim == 1):
    return None
  sig = types.uint64(array, types.intp, types.uint64, types.uint64)

  def codegen(context, builder, signature, args):
    ptr = _pointer(context, builder, signature.args[0], args[0], args[1])
    pair = builder.cmpxchg(ptr, args[2], args[3], "seq_cst", "seq_cst")
    return builder.extract_value(pair, 0)

  return sig, codegen


@intrinsic
def prefetch(typingctx, array, index):  # pylint: disable=unused-argument
  """Hints that array[index] will be read soon (`llvm.prefetch`, read,
  high locality). `index` may be out of range: nothing is read, and a
  prefetch of an unmapped address is dropped by the processor."""
  if not isinstance(array, types.Array) or array.ndim != 1:
    return None
  sig = types.void(array, types.intp)

  def codegen(context, builder, signature, args):
    arr = context.make_array(signature.args[0])(context, builder, args[0])
    ptr = cgutils.get_item_pointer(context, builder, signature.args[0], arr,
                                   [args[1]], boundscheck=False)
    i8p = ir.IntType(8).as_pointer()
    i32 = ir.IntType(32)
    fn = builder.module.declare_intrinsic(
        "llvm.prefetch", fnty=ir.FunctionType(ir.VoidType(),
                                              [i8p, i32, i32, i32]))
    builder.call(fn, [builder.bitcast(ptr, i8p), ir.Constant(i32, 0),
                      ir.Constant(i32, 3), ir.Constant(i32, 1)])
    return context.get_dummy_value()

  return sig, codegen


def _unowned(context, builder, signature, args):
  """(the argument array's structure, a new one of the return type with
  its data and item counts but no owner: meminfo and parent null); the
  caller sets its shape and strides."""
  aty = signature.args[0]
  src = context.make_array(aty)(context, builder, value=args[0])
  out = context.make_array(signature.return_type)(context, builder)
  out.meminfo = context.get_constant_null(types.MemInfoPointer(aty.dtype))
  out.parent = context.get_constant_null(types.pyobject)
  out.nitems = src.nitems
  out.itemsize = src.itemsize
  out.data = src.data
  return src, out


@intrinsic
def borrow(typingctx, array):  # pylint: disable=unused-argument
  """`array` without its reference count: the same data, shape and
  strides, no owner. numba counts references to arrays with atomic
  instructions (NRT_incref / NRT_decref) wherever it cannot prove them
  unneeded, e.g. around the arrays a kernel passes to the helpers it calls
  in its hot loop; an atomic is a full memory barrier, which also keeps
  independent cache misses from overlapping. A borrowed array's counts
  are no-ops. It must not outlive `array` (borrow a kernel's arguments
  at its start, never return one)."""
  if not isinstance(array, types.Array):
    return None
  sig = array(array)

  def codegen(context, builder, signature, args):
    src, out = _unowned(context, builder, signature, args)
    out.shape = src.shape
    out.strides = src.strides
    return out._getvalue()

  return sig, codegen


@intrinsic
def flat(typingctx, array):  # pylint: disable=unused-argument
  """A C-contiguous `array` as one dimension, borrowed (see `borrow`): the
  same data, no reshape call. numba's `reshape` calls a C function of its
  runtime to check the layout (numba_attempt_nocopy_reshape), which cost 5%
  of MCCFRb's time on Leduc's tree when an episode made its flat views
  (BUILD_NOTES, "Baselines: a key and a rule")."""
  if not (isinstance(array, types.Array) and array.layout == "C"):
    return None
  out_type = types.Array(array.dtype, 1, "C")
  sig = out_type(array)

  def codegen(context, builder, signature, args):
    src, out = _unowned(context, builder, signature, args)
    out.shape = cgutils.pack_array(builder, [src.nitems])
    out.strides = cgutils.pack_array(builder, [src.itemsize])
    return out._getvalue()

  return sig, codegen
