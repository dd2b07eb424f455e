"""Ops that exist only in a compiled plan: `_JitCluster`, the node a cluster of nodes becomes
when the JIT (graphtool/jit) compiles it with XLA.

    _JitCluster(args: Tin) -> (results: Tout), attrs: cluster (the compiled program's key),
                                                      output_shapes (what shape inference knew)
"""
from __future__ import annotations

from ..shapes import Shape
from .inference import InferenceContext
from .registry import register


def _cluster_shapes(ctx: InferenceContext) -> list[Shape]:
    declared = ctx.attr("output_shapes", [])
    if declared and len(declared) == ctx.num_outputs:
        return [Shape.of(s) for s in declared]
    return [Shape.unknown()] * ctx.num_outputs


register("_JitCluster", inputs=["args: Tin"], outputs=["results: Tout"],
         attrs=["Tin: list(type) >= 0", "Tout: list(type) >= 0", "cluster: string",
                "output_shapes: list(shape) = []"],
         shape=_cluster_shapes,
         doc="A cluster of nodes compiled by XLA through JAX (graphtool/jit); made in compiled plans only.")
