"""GPU kernels for values cupy cannot hold: strings, resource handles and bfloat16 stay in host
memory on a GPU device (TensorFlow keeps string tensors in host memory on GPUs too).

Const and Cast are the two ops that create or convert such values: a GPU Const whose value has a
dtype cupy lacks returns it as a host array, and a GPU Cast from or to such a dtype computes on the
host (the shared CPU kernel) and uploads a result the device can hold. Other kernels only pass
host values along (Identity) or read them as metadata (Assert's messages, handles).
"""
from __future__ import annotations

import functools

import numpy as np

from .array_scatter import dynamic_partition
from .core import const
from .math_cast import cast
from .registry import GPU, KernelContext, kernel

# The dtype kinds cupy arrays have: bool, signed and unsigned integers, floats, complex.
DEVICE_DTYPE_KINDS = "biufc"


def device_holds(dtype) -> bool:
    """Whether a cupy array can have this dtype (ml_dtypes' bfloat16 is kind 'V': it cannot)."""
    return np.dtype(dtype).kind in DEVICE_DTYPE_KINDS


def host_context(ctx) -> KernelContext:
    """The node's kernel context with numpy as its array module, to run a kernel on the host."""
    return KernelContext(np, ctx.node_name, ctx.op, ctx.output_dtypes, ctx.device, ctx.resources)


def host_dtypes_on_host(fn):
    """A GPU kernel from a shared kernel `fn` that computes on the host when an input has a dtype
    the device cannot hold (bfloat16 data): the other inputs are copied back, and outputs the
    device can hold are uploaded. Keeps fn's signature (attrs are bound from it)."""
    @functools.wraps(fn)
    def gpu_kernel(ctx, *inputs, **attrs):
        if all(device_holds(x.dtype) for x in inputs if hasattr(x, "dtype")):
            return fn(ctx, *inputs, **attrs)
        host = [x.get() if hasattr(x, "get") else x for x in inputs]
        outputs = fn(host_context(ctx), *host, **attrs)
        many = isinstance(outputs, tuple)
        uploaded = tuple(ctx.xp.asarray(out) if device_holds(out.dtype) else out
                         for out in (outputs if many else (outputs,)))
        return uploaded if many else uploaded[0]
    return gpu_kernel


@kernel("Const", "HostConst", devices=(GPU,))
def gpu_const(ctx, *, value):
    if not device_holds(value.dtype):
        return value
    return const(ctx, value=value)


@kernel("Cast", devices=(GPU,))
def gpu_cast(ctx, x, *, SrcT, DstT, Truncate):
    if device_holds(x.dtype) and device_holds(ctx.out_dtype(0)):
        return cast(ctx, x, SrcT=SrcT, DstT=DstT, Truncate=Truncate)
    host_input = x if isinstance(x, np.ndarray) else ctx.xp.asnumpy(x)
    result = cast(host_context(ctx), host_input, SrcT=SrcT, DstT=DstT, Truncate=Truncate)
    return ctx.xp.asarray(result) if device_holds(result.dtype) else result


def on_host(cpu_kernel):
    """`cpu_kernel` as a GPU kernel that computes in host memory: device inputs are copied to the
    host, and outputs a device can hold are uploaded (strings and handles stay on the host)."""
    import functools

    @functools.wraps(cpu_kernel)   # keeps the signature, so the same attrs are bound
    def run(ctx, *inputs, **attrs):
        host = [value if isinstance(value, np.ndarray) else ctx.xp.asnumpy(value) for value in inputs]
        result = cpu_kernel(host_context(ctx), *host, **attrs)
        outputs = tuple(ctx.xp.asarray(out) if device_holds(out.dtype) else out
                        for out in (result if isinstance(result, tuple) else (result,)))
        return outputs if isinstance(result, tuple) else outputs[0]
    return run


def host_kernel(*ops: str):
    """Register the decorated function as the CPU kernel of `ops` and, through on_host, as their
    GPU kernel: ops on strings, protos and tables that TensorFlow runs from host memory."""
    from .registry import CPU

    def register(fn):
        kernel(*ops, devices=(CPU,))(fn)
        kernel(*ops, devices=(GPU,))(on_host(fn))
        return fn
    return register
@kernel("DynamicPartition", devices=(GPU,))
def gpu_dynamic_partition(ctx, data, partitions, *, num_partitions):
    """String (or bfloat16) rows stay on the host: partition them there."""
    if device_holds(data.dtype):
        return dynamic_partition(ctx, data, partitions, num_partitions=num_partitions)
    host_partitions = partitions.get() if hasattr(partitions, "get") else partitions
    return dynamic_partition(host_context(ctx), data, host_partitions, num_partitions=num_partitions)
