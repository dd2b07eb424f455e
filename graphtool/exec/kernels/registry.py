"""Kernel registry: the function that computes each op on each device type.

Kernels are written once against an array module `xp` (numpy or cupy) wherever the semantics
allow, and registered for the device types they run on:

    @kernel("Relu")
    def relu(ctx, x):
        return ctx.xp.maximum(x, 0)

A kernel receives a KernelContext (the array module, the node's name/op, output dtypes, device)
and its inputs positionally, plus the attrs it names as keyword-only parameters (resolved once when
the plan is compiled, with the registry's defaults applied). It returns one array for a
single-output op, or a tuple with one array per output.

Asynchronous kernels (`asynchronous=True`: ops that may wait, e.g. a dequeue from an empty queue)
take a `done` callback after the context and return nothing; they call `done(outputs)` or
`done(error=exc)` exactly once, now or later from whichever thread makes progress possible:

    @kernel("QueueDequeueV2", asynchronous=True)
    def dequeue(ctx, done, handle, *, component_types, timeout_ms):
        queue_of(ctx, handle).dequeue(ctx, done)

While one waits it holds no executor thread (the step counts it in flight, as a _Recv). What it
must keep from the step (its containers, `ctx.resources`) it takes before returning.

Control-flow ops (Switch, Merge, Enter, Exit, NextIteration, LoopCond) have no kernels: the
executor's frame logic runs them.
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from functools import partial
from typing import Callable, NoReturn

from ..resources import current_step_resources

CPU, GPU = "CPU", "GPU"

_KERNELS: dict[tuple[str, str], "KernelDef"] = {}


@dataclass(frozen=True)
class KernelDef:
    op: str
    device_type: str
    fn: Callable
    # Attr names the function takes as keyword-only parameters.
    attr_names: tuple[str, ...]
    # Expensive kernels (BLAS, convolutions, big reductions) are worth a thread-pool hop; cheap
    # ones run inline in the scheduling thread. The executor also considers tensor sizes.
    expensive: bool = False
    # Kernels that divide their own work over the threads the executor grants them
    # (thread_budget.parallel_for), each part on one BLAS thread.
    intra_op: bool = False
    # Kernels that keep state between steps or touch resources (TensorArrays, stacks, variables)
    # receive the step's resource manager through ctx.resources.
    extra: dict = field(default_factory=dict)
    # Called as fn(ctx, done, *inputs, **attrs); finishes by calling done (see the module doc).
    asynchronous: bool = False


def kernel(*ops: str, devices: tuple[str, ...] = (CPU, GPU), expensive: bool = False, intra_op: bool = False,
           asynchronous: bool = False):
    """Register the decorated function as the kernel of each op in `ops` on each device type."""
    def register(fn):
        params = inspect.signature(fn).parameters.values()
        attr_names = tuple(p.name for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY)
        for op in ops:
            for device_type in devices:
                key = (op, device_type)
                if key in _KERNELS:
                    raise ValueError(f"kernel for {op} on {device_type} registered twice")
                _KERNELS[key] = KernelDef(op, device_type, fn, attr_names, expensive, intra_op,
                                          asynchronous=asynchronous)
        return fn
    return register


def lookup(op: str, device_type: str = CPU) -> KernelDef | None:
    return _KERNELS.get((op, device_type))


def has_kernel(op: str, device_type: str = CPU) -> bool:
    return lookup(op, device_type) is not None


def all_kernels() -> dict[tuple[str, str], KernelDef]:
    return dict(_KERNELS)


def bind(kernel_def: KernelDef, node) -> Callable:
    """The kernel with the node's attrs bound as keyword arguments (done once per plan)."""
    attrs = {name: node.attr(name) for name in kernel_def.attr_names}
    return partial(kernel_def.fn, **attrs) if attrs else kernel_def.fn


class KernelError(Exception):
    """Raised by a kernel for bad input values (the executor adds node name, op and input shapes)."""


class KernelContext:
    """What a kernel sees besides its inputs: bound once per node when the plan is compiled."""

    __slots__ = ("xp", "node_name", "op", "output_dtypes", "np_out_dtypes", "device", "_resources")

    def __init__(self, xp, node_name: str, op: str, output_dtypes, device, resources=None):
        self.xp = xp
        self.node_name = node_name
        self.op = op
        self.output_dtypes = output_dtypes   # list[DType], from the op's signature
        self.np_out_dtypes = tuple(d.base.numpy for d in output_dtypes)
        self.device = device
        self._resources = resources          # fixed containers, else the running step's

    @property
    def resources(self):
        """The step's containers (TensorArrays, stacks, ...; `.session`: variables). The context
        is shared by every step running the plan, so the step comes from the running thread."""
        if self._resources is not None:
            return self._resources
        return current_step_resources()

    def out_dtype(self, index: int = 0):
        """The numpy dtype of output `index`."""
        return self.np_out_dtypes[index]

    def fail(self, message: str) -> NoReturn:
        raise KernelError(message)

    def check_slots(self, count: int, what: str) -> None:
        """Refuse a container of `count` element slots (a TensorList, a TensorArray) that the
        tensor bound does not allow: a scalar input of 2**31 would otherwise make a Python list
        of 16 GiB before any element is stored."""
        check_slots(count, what)


# A slot of a TensorList or TensorArray costs at least a pointer, whatever it will hold.
SLOT_BYTES = 8


def check_slots(count: int, what: str) -> None:
    from ... import limits

    bound = limits.current().max_tensor_bytes
    if count * SLOT_BYTES > bound:
        raise KernelError(f"{what} of {count} elements needs {limits.describe_bytes(count * SLOT_BYTES)} for its "
                          f"slots alone, more than the tensor bound of {limits.describe_bytes(bound)} "
                          f"(raise it with --max-tensor-bytes)")
