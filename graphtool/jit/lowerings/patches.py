"""Lowering of ExtractImagePatches: each patch flattened in (row, column, depth) order, as the
interpreter's kernel gives it (kernels/image.py), built as one strided slice of the zero-padded
image per patch position, concatenated along the depth (the depthwise convolution's shape of
work, see conv.py)."""
from __future__ import annotations

from .common import lowering
from .conv import window_geometry


def _supported(node) -> str | None:
    for name in ("ksizes", "strides", "rates"):
        values = list(node.attr(name))
        if len(values) != 4 or values[0] != 1 or values[3] != 1 or min(values) < 1:
            return f"ExtractImagePatches with {name}={values} has no lowering"
    return None


@lowering("ExtractImagePatches", supports=_supported, half=True)
def extract_image_patches(ctx, images):
    jnp, lax = ctx.jnp, ctx.lax
    (_, kh, kw, _), (_, sh, sw, _), (_, rh, rw, _) = (ctx.attr(n) for n in ("ksizes", "strides", "rates"))
    batch, height, width, depth = images.shape
    pads, (out_h, out_w) = window_geometry([height, width], [kh, kw], [sh, sw], [rh, rw], ctx.attr("padding"))
    if 0 in (batch, out_h, out_w, depth):
        return jnp.zeros((batch, out_h, out_w, kh * kw * depth), images.dtype)
    padded = jnp.pad(images, ((0, 0), *pads, (0, 0)))
    taps = []
    for i in range(kh):
        for j in range(kw):
            start = (0, i * rh, j * rw, 0)
            limit = (batch, i * rh + (out_h - 1) * sh + 1, j * rw + (out_w - 1) * sw + 1, depth)
            taps.append(lax.slice(padded, start, limit, (1, sh, sw, 1)))
    return jnp.concatenate(taps, axis=-1)
