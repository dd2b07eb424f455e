"""Lowerings of the image resizes (ResizeBilinear, ResizeNearestNeighbor and their gradients):
the interpreter's own kernels (kernels/nn_image.py) traced with jax.numpy as their array module.
They compute the sampling coordinates and weights on the host from the static sizes, in float32
in TensorFlow's order, and move pixels with gathers and small matmuls, which jax.numpy traces as
it is, so the compiled op reads exactly the pixels the interpreter reads.
"""
from __future__ import annotations

from .common import lowering, traced_kernel


def _float(node) -> str | None:
    dtype = node.spec.input_dtypes(node)[0].base.numpy
    return None if dtype.kind == "f" else f"{node.op} on {dtype} has no lowering"


@lowering("ResizeBilinear", "ResizeNearestNeighbor", static_inputs=(1,), supports=_float)
def resize(ctx, images, size):
    return traced_kernel(ctx, images, size)


@lowering("ResizeNearestNeighborGrad", static_inputs=(1,), supports=_float)
def resize_nearest_neighbor_grad(ctx, grads, size):
    return traced_kernel(ctx, grads, size)


@lowering("ResizeBilinearGrad", supports=_float)
def resize_bilinear_grad(ctx, grads, original_image):
    return traced_kernel(ctx, grads, original_image)
