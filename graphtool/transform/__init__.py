"""`dftool transform`: Graph Transform Tool style rewrites, one module per family.

    from graphtool.transform import parse_apply, run_transforms
    results = run_transforms(graph, parse_apply("fold_batch_norms,set_device(device=/gpu:0)"), ctx)

Each transform is a small class (graphtool/transform/base.py) registered by name, with a
description and declared parameters; it mutates the graph through the IR's own methods and
reports counts of what it changed. The graph must verify after each one.
"""
from __future__ import annotations

from dataclasses import dataclass
from importlib import import_module

from ..errors import DftoolError, InvalidGraphError, RuntimeFailure
from ..ir import Graph
from .base import (Param, Transform, TransformContext, TransformResult, lookup, register_transform,
                   registered_transforms)
from .spec import TransformSpec, parse_apply

TRANSFORM_MODULES = ("devices", "attributes", "weights", "structure", "logging_ops", "fold")

for _module in TRANSFORM_MODULES:
    import_module(f"{__name__}.{_module}")

__all__ = ["Param", "Transform", "TransformContext", "TransformResult", "TransformSpec", "AppliedTransform",
           "parse_apply", "register_transform", "registered_transforms", "run_transforms", "lookup"]


@dataclass
class AppliedTransform:
    spec: TransformSpec
    result: TransformResult
    nodes_before: int
    nodes_after: int
    seconds: float


def run_transforms(graph: Graph, specs: list[TransformSpec],
                   ctx: TransformContext) -> tuple[Graph, list[AppliedTransform]]:
    """Apply `specs` in order (parameters checked for all of them first); the graph must verify
    after each, or the error names the transform. Returns the resulting graph (the given one,
    changed in place, unless a transform such as strip_unused_nodes built a new one)."""
    import time

    classes = [lookup(spec.name) for spec in specs]
    bound = [(spec, cls, cls.bind(spec.params)) for spec, cls in zip(specs, classes)]
    applied = []
    for spec, cls, params in bound:
        before, start = len(graph), time.perf_counter()
        try:
            result = cls().apply(graph, ctx, params)
            if result.graph is not None:
                graph, result.graph = result.graph, None
            graph.verify()
        except InvalidGraphError as exc:
            raise RuntimeFailure(f"transform {spec}: left an invalid graph: {exc.one_line()}") from exc
        except DftoolError:
            raise
        applied.append(AppliedTransform(spec, result, before, len(graph), time.perf_counter() - start))
    return graph, applied
