"""Output shapes of a function call, inferred through the function body from the input shapes
(what the functional ops' shape functions use when the node carries no `output_shapes`)."""
from __future__ import annotations

import threading

from ..errors import DftoolError
from ..shapes import Shape
from .instantiate import MAX_CALL_DEPTH, instantiate

_depth = threading.local()
_CACHE: dict[tuple, list[Shape] | None] = {}
_CACHE_LIMIT = 512


def body_output_shapes(library, name: str, call_attrs, input_shapes: list[Shape]) -> list[Shape] | None:
    """The shapes of `name`'s outputs given its inputs' shapes, or None when the body cannot be
    instantiated (or calls itself too deeply): the caller then falls back to unknown shapes."""
    key = (id(library), len(library.function), name,
           tuple(sorted((k, v.SerializeToString(deterministic=True)) for k, v in (call_attrs or {}).items())),
           tuple(s.dims for s in input_shapes))
    if key in _CACHE:
        return _CACHE[key]
    depth = getattr(_depth, "value", 0)
    if depth >= MAX_CALL_DEPTH:
        return None
    _depth.value = depth + 1
    try:
        result = _infer(library, name, call_attrs, input_shapes)
    finally:
        _depth.value = depth
    if len(_CACHE) >= _CACHE_LIMIT:
        _CACHE.clear()
    _CACHE[key] = result
    return result


def _infer(library, name, call_attrs, input_shapes):
    from ..shape_inference import infer_shapes

    try:
        body = instantiate(library, name, call_attrs)
    except DftoolError:
        return None
    if len(body.args) != len(input_shapes):
        return None
    feeds = {}
    for arg, shape in zip(body.args, input_shapes):
        declared = arg.attr("_output_shapes", None)
        if declared and shape.is_compatible_with(Shape.of(declared[0])):
            shape = shape.merge(Shape.of(declared[0]))
        feeds[arg.name] = shape
    try:
        result = infer_shapes(body.graph, feeds)
    except DftoolError:
        return None
    return [result.shape(r.inputs[0]) for r in body.retvals]
