"""Kernels for variables (ref and resource).

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

The random-number ops' kernels are in random.py.
"""
from __future__ import annotations

import threading
from typing import Any

import numpy as np

from ...errors import OutOfRangeError
from ...shapes import Shape
from .registry import KernelError, kernel
from .tensor_array import type_name

_DEFAULT_CONTAINER = "localhost"


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


# --- counters (CountUpTo, ResourceCountUpTo) -------------------------------------------------------

def _count_up(ctx, variable: Variable, limit: int, dtype: np.dtype):
    """The counter's value before adding 1 (caller holds the lock and checked it is initialized);
    OutOfRange once it has reached `limit`, the variable left as it is (TF's count_up_to_op.cc).
    TensorFlow has CPU kernels only; on a GPU the scalar is compared on the host and the new value
    and the output stay on the device, where the variable's other ops expect them."""
    current: Any = variable.value   # (an array here: the caller checked)
    if current.ndim != 0:
        ctx.fail(f"input is not a scalar: {Shape(current.shape)}")
    if current.dtype != dtype:
        ctx.fail(f"the counter is {type_name(current.dtype)}, the op's T is {type_name(dtype)}")
    before = int(current if isinstance(current, np.ndarray) else current.get())
    if before >= limit:
        raise OutOfRangeError(f"Reached limit of {limit}")
    variable.store(ctx.xp, ctx.xp.asarray(np.array(before + 1, dtype=dtype)))
    return ctx.xp.asarray(np.array(before, dtype=dtype))


@kernel("CountUpTo")
def count_up_to(ctx, ref, *, limit, T):
    variable = _variable_of_ref(ctx, ref)
    with variable.lock:
        if variable.value is None:
            ctx.fail(f"Attempting to use uninitialized value {variable.name}")
        return _count_up(ctx, variable, limit, T.numpy)


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


@kernel("ResourceCountUpTo")
def resource_count_up_to(ctx, resource, *, limit, T):
    handle, variable = _resource_variable(ctx, resource)
    with variable.lock:
        if variable.value is None:
            _missing_variable(ctx, handle)
        return _count_up(ctx, variable, limit, T.numpy)
