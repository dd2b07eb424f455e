"""Kernels for variables (ref and resource) and random numbers.

Variables live in the session's resource container (ctx.resources.session), so their values
persist from one run of a Session to the next, as in TensorFlow's resource manager. A variable's
value is never modified in place: every assignment stores a new private array (read-only on the
CPU), so a value fetched or read earlier keeps what it was.

Ref variables (VariableV2). TensorFlow passes a reference to the variable along Ref(T) edges:
Assign writes through it, any other consumer reads the current value. Our executor passes plain
values, so VariableV2 outputs the variable's current array itself (so readers just work) and
records, for this step, which variable that very object belongs to; Assign and friends map their
ref input back to its variable by identity (the step container holds the objects, so an identity
is never reused within the step). While a variable is uninitialized, VariableV2 outputs an
`Uninitialized` marker: the ref-taking ops accept it, and any use of it as a value fails with
TensorFlow's "Attempting to use uninitialized value x".

Random ops draw from numpy Generators: one per node, kept in the session container, seeded from
the node's (seed, seed2) attrs (fresh entropy when both are 0, as TensorFlow does), so a seeded
node gives a reproducible sequence across runs. Values differ from TensorFlow's, distributions
do not. The stateless ops seed a new generator from their `seed` input on every call.
"""
from __future__ import annotations

import threading

import ml_dtypes
import numpy as np

from ...shapes import Shape
from .registry import KernelError, kernel
from .tensor_array import type_name

_DEFAULT_CONTAINER = "localhost"
_UINT64_MASK = (1 << 64) - 1


# --- variables ----------------------------------------------------------------------------------

class UninitializedValueError(KernelError, AttributeError):
    """A kernel used an uninitialized variable's value. Also an AttributeError so that probing
    the marker with getattr(value, "shape", None) just finds no shape."""


class Uninitialized:
    """What an uninitialized ref variable outputs: every use as a value fails with TF's message."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def _fail(self, *args, **kwargs):
        raise UninitializedValueError(f"Attempting to use uninitialized value {self.name}")

    def __getattr__(self, attribute):
        self._fail()

    __array__ = __bool__ = __len__ = __iter__ = __getitem__ = __float__ = __int__ = __index__ = _fail

    def __repr__(self) -> str:
        return f"<uninitialized variable {self.name}>"


class Variable:
    """One variable: its current value (None while uninitialized), guarded by `lock`."""

    def __init__(self, name: str, dtype: np.dtype, shape: Shape):
        self.name = name
        self.dtype = np.dtype(dtype)
        self.shape = shape                      # as declared (may be partly unknown)
        self.lock = threading.Lock()
        self.value = None
        self.marker = Uninitialized(name)

    def store(self, xp, value) -> None:
        """Make a private copy of `value` the variable's value (caller holds the lock)."""
        self.value = _read_only(xp.array(value, copy=True))


def _read_only(array):
    if isinstance(array, np.ndarray):
        array.flags.writeable = False
    return array


def _ref_to(ctx, variable: Variable):
    """What a Ref(T) output carries: the variable's current value (or its Uninitialized marker),
    remembered for this step as belonging to `variable`."""
    with variable.lock:
        value = variable.value if variable.value is not None else variable.marker
    ctx.resources.lookup_or_create(("ref", id(value)), lambda: (value, variable))
    return value


def _variable_of_ref(ctx, ref) -> Variable:
    entry = ctx.resources.lookup(("ref", id(ref)))
    if entry is None or entry[0] is not ref:
        ctx.fail("input 0 is not a reference to a variable (it must come from a VariableV2)")
    return entry[1]


@kernel("VariableV2", "Variable")
def variable_v2(ctx, *, shape, dtype, container, shared_name):
    name = shared_name or ctx.node_name
    if ctx.op == "Variable" and shape.rank == 0:
        shape = Shape.unknown()   # old graphs wrote an empty shape for "unknown"
    key = ("Variable", container or _DEFAULT_CONTAINER, name)
    variable = ctx.resources.session.lookup_or_create(key, lambda: Variable(name, dtype.numpy, shape))
    return _ref_to(ctx, variable)


@kernel("Assign")
def assign(ctx, ref, value, *, validate_shape, use_locking):
    variable = _variable_of_ref(ctx, ref)
    with variable.lock:
        if validate_shape:
            current = Shape(variable.value.shape) if variable.value is not None else variable.shape
            if current.fully_defined and current.dims != value.shape:
                ctx.fail(f"Assign requires shapes of both tensors to match. lhs shape= {current} "
                         f"rhs shape= {Shape(value.shape)}")
        variable.store(ctx.xp, value)
    return _ref_to(ctx, variable)


@kernel("AssignAdd", "AssignSub")
def assign_update(ctx, ref, value, *, use_locking):
    # Always under the variable's lock: without use_locking TensorFlow may lose concurrent
    # updates, which no program relies on.
    variable = _variable_of_ref(ctx, ref)
    with variable.lock:
        current = variable.value
        if current is None:
            ctx.fail(f"Attempting to use uninitialized value {variable.name}")
        if current.shape != value.shape:
            ctx.fail("Parameters and update must be the same size")
        variable.value = _read_only(current + value if ctx.op == "AssignAdd" else current - value)
    return _ref_to(ctx, variable)


@kernel("IsVariableInitialized")
def is_variable_initialized(ctx, ref, *, dtype):
    variable = _variable_of_ref(ctx, ref)
    with variable.lock:
        return ctx.xp.asarray(variable.value is not None)


# --- resource variables -------------------------------------------------------------------------

class VarHandle:
    """What a VarHandleOp's scalar resource output holds: where the variable lives and what it
    was declared as."""

    __slots__ = ("container", "name", "dtype", "shape")

    def __init__(self, container: str, name: str, dtype: np.dtype, shape: Shape):
        self.container, self.name, self.dtype, self.shape = container, name, dtype, shape

    def __repr__(self) -> str:
        return f"VarHandle({self.container}/{self.name})"


def _resource_variable(ctx, resource) -> tuple[VarHandle, Variable]:
    handle = resource[()]
    key = ("ResourceVariable", handle.container, handle.name)
    variable = ctx.resources.session.lookup_or_create(
        key, lambda: Variable(handle.name, handle.dtype, handle.shape))
    return handle, variable


def _missing_variable(ctx, handle: VarHandle):
    ctx.fail(f"Could not find variable {handle.name}. This could mean that the variable has been deleted. "
             f"In TF1, it can also mean the variable is uninitialized. Debug info: "
             f"container={handle.container}, status error message=Container {handle.container} does not "
             f"exist. (Could not find resource: {handle.container}/{handle.name})")


@kernel("VarHandleOp")
def var_handle_op(ctx, *, container, shared_name, debug_name, dtype, shape, allowed_devices):
    resource = np.empty((), dtype=object)
    resource[()] = VarHandle(container or _DEFAULT_CONTAINER, shared_name or ctx.node_name, dtype.numpy, shape)
    return resource


@kernel("ReadVariableOp")
def read_variable_op(ctx, resource, *, dtype):
    handle, variable = _resource_variable(ctx, resource)
    with variable.lock:
        value = variable.value
    if value is None:
        _missing_variable(ctx, handle)
    if value.dtype != dtype.numpy:
        ctx.fail(f"Trying to read variable with wrong dtype. Expected {type_name(value.dtype)} got {dtype.name}")
    return value


@kernel("AssignVariableOp")
def assign_variable_op(ctx, resource, value, *, dtype, validate_shape):
    handle, variable = _resource_variable(ctx, resource)
    if value.dtype != handle.dtype:
        ctx.fail(f"Trying to assign variable with wrong dtype. Expected {type_name(handle.dtype)} got "
                 f"{type_name(value.dtype)}")
    if validate_shape and not handle.shape.is_compatible_with(Shape(value.shape)):
        ctx.fail(f"Trying to assign to variable with tensor with wrong shape. Expected {handle.shape} got "
                 f"{Shape(value.shape)}")
    with variable.lock:
        variable.store(ctx.xp, value)
    return ()


@kernel("AssignAddVariableOp", "AssignSubVariableOp")
def assign_update_variable_op(ctx, resource, value, *, dtype):
    handle, variable = _resource_variable(ctx, resource)
    with variable.lock:
        current = variable.value
        if current is None:
            _missing_variable(ctx, handle)
        if current.shape != value.shape:
            ctx.fail(f"Cannot update variable with shape {Shape(current.shape)} using a Tensor with shape "
                     f"{Shape(value.shape)}, shapes must be equal.")
        updated = current + value if ctx.op == "AssignAddVariableOp" else current - value
        variable.value = _read_only(updated)
    return ()


@kernel("ResourceGather")
def resource_gather(ctx, resource, indices, *, batch_dims, validate_indices, dtype, Tindices):
    from .array_index import _gather

    return _gather(ctx, read_variable_op(ctx, resource, dtype=dtype), indices, batch_dims, batch_dims)


@kernel("VarIsInitializedOp")
def var_is_initialized_op(ctx, resource):
    _, variable = _resource_variable(ctx, resource)
    with variable.lock:
        return ctx.xp.asarray(variable.value is not None)


# --- random numbers -----------------------------------------------------------------------------

class _LockedGenerator:
    """A numpy Generator one node draws from; iterations of a loop may draw at once."""

    def __init__(self, seed: int, seed2: int):
        entropy = None if seed == 0 and seed2 == 0 else [seed & _UINT64_MASK, seed2 & _UINT64_MASK]
        self.generator = np.random.default_rng(entropy)
        self.lock = threading.Lock()


def _draw(ctx, seed: int, seed2: int, sample):
    """sample(generator) with the node's session-long generator; the result on ctx's device."""
    source = ctx.resources.session.lookup_or_create(("RandomGenerator", ctx.node_name),
                                                    lambda: _LockedGenerator(seed, seed2))
    with source.lock:
        host = sample(source.generator)
    return ctx.xp.asarray(host)


def _stateless_draw(ctx, seed, sample):
    if tuple(seed.shape) != (2,):
        ctx.fail(f"seed must have shape [2], not {Shape(seed.shape)}")
    entropy = [value & _UINT64_MASK for value in _host(seed).tolist()]
    return ctx.xp.asarray(sample(np.random.default_rng(entropy)))


def _host(array) -> np.ndarray:
    return array if isinstance(array, np.ndarray) else array.get()   # cupy -> numpy


def _output_shape(ctx, shape) -> tuple[int, ...]:
    dims = _host(shape).reshape(-1).tolist()
    for dim in dims:
        if dim < 0:
            ctx.fail(f"Dimension {dim} must be >= 0")
    return tuple(int(dim) for dim in dims)


def _uniform(generator, shape, dtype):
    """Uniform in [0, 1): a random mantissa, exact in `dtype` (as TensorFlow draws them), so that
    rounding can never produce 1.0 in half or bfloat16."""
    bits = ml_dtypes.finfo(dtype).nmant
    mantissas = generator.integers(0, 1 << bits, size=shape, dtype=np.int64)
    return (mantissas * (1.0 / (1 << bits))).astype(dtype)


def _normal(generator, shape, dtype):
    return generator.standard_normal(shape).astype(dtype)


def _truncated_normal(generator, shape, dtype):
    """Standard normal with every value of magnitude 2 or more drawn again (TensorFlow's rule)."""
    values = generator.standard_normal(shape)
    outside = np.abs(values) >= 2.0
    while outside.any():
        values[outside] = generator.standard_normal(int(outside.sum()))
        outside = np.abs(values) >= 2.0
    return values.astype(dtype)


_SAMPLERS = {"RandomUniform": _uniform, "RandomStandardNormal": _normal, "TruncatedNormal": _truncated_normal,
             "StatelessRandomUniform": _uniform, "StatelessRandomNormal": _normal}


@kernel("RandomUniform", "RandomStandardNormal", "TruncatedNormal")
def random_float(ctx, shape, *, seed, seed2):
    sampler, dims, dtype = _SAMPLERS[ctx.op], _output_shape(ctx, shape), ctx.out_dtype()
    return _draw(ctx, seed, seed2, lambda generator: sampler(generator, dims, dtype))


@kernel("StatelessRandomUniform", "StatelessRandomNormal")
def stateless_random_float(ctx, shape, seed):
    sampler, dims, dtype = _SAMPLERS[ctx.op], _output_shape(ctx, shape), ctx.out_dtype()
    return _stateless_draw(ctx, seed, lambda generator: sampler(generator, dims, dtype))


@kernel("RandomUniformInt")
def random_uniform_int(ctx, shape, minval, maxval, *, seed, seed2):
    dims, dtype = _output_shape(ctx, shape), ctx.out_dtype()
    for name, bound in (("minval", minval), ("maxval", maxval)):
        if bound.ndim != 0:
            ctx.fail(f"{name} must be 0-D, got shape {Shape(bound.shape)}")
    low, high = int(minval), int(maxval)
    if np.prod(dims, dtype=np.int64) == 0:      # no values: any bounds will do
        return ctx.xp.zeros(dims, dtype=dtype)
    if low >= high:
        ctx.fail(f"Need minval < maxval, got {low} >= {high}")
    return _draw(ctx, seed, seed2, lambda generator: generator.integers(low, high, size=dims, dtype=dtype))


@kernel("Multinomial")
def multinomial(ctx, logits, num_samples, *, seed, seed2, T, output_dtype):
    if logits.ndim != 2:
        ctx.fail(f"logits should be a matrix, got shape {Shape(logits.shape)}")
    count = int(num_samples)
    if count < 0:
        ctx.fail(f"num_samples should be nonnegative, got {count}")
    batch, classes = logits.shape
    if classes <= 0:
        ctx.fail(f"num_classes should be positive, got {classes}")
    cdf = _row_cdf(_host(logits).astype(np.float64))
    return _draw(ctx, seed, seed2,
                 lambda generator: _sample_rows(cdf, generator.random((batch, count))).astype(ctx.out_dtype()))


def _row_cdf(logits: np.ndarray) -> np.ndarray:
    """Per row, the cumulative softmax probabilities ending at exactly 1; non-finite logits (-inf)
    get probability 0."""
    finite = np.isfinite(logits)
    peak = np.max(np.where(finite, logits, -np.inf), axis=1, keepdims=True)
    peak = np.where(np.isfinite(peak), peak, 0.0)
    weights = np.where(finite, np.exp(logits - peak), 0.0)
    cdf = np.cumsum(weights, axis=1)
    total = cdf[:, -1:]
    return cdf / np.where(total > 0, total, 1.0)


def _sample_rows(cdf: np.ndarray, uniforms: np.ndarray) -> np.ndarray:
    """For each row's uniforms, the class whose cdf interval holds them: one searchsorted over
    all rows at once, each row shifted by its index so the rows' intervals do not overlap."""
    rows, classes = cdf.shape
    shift = np.arange(rows, dtype=np.float64)[:, None]
    positions = np.searchsorted((cdf + shift).ravel(), (uniforms + shift).ravel(), side="right")
    positions = positions.reshape(uniforms.shape) - (shift * classes).astype(np.int64)
    return np.clip(positions, 0, classes - 1)
from . import state_scatter  # noqa: E402,F401  (the rest of the family)
