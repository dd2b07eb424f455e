"""Functional control flow and function calls (TensorFlow 2): If, While, Case, PartitionedCall, ...

Their bodies are library functions (Graph.library). dftool does not execute them as such: the
`lower` transform (graphtool/opt/lower.py) turns them into v1 Switch/Merge/Enter/Exit frames and
inlined bodies first. Signatures, attr defaults and stateful flags are TensorFlow's.

Shapes: a node's `output_shapes` attr when it has one, else the shapes inferred through the
function bodies from the input shapes (graphtool/functions/shapes.py), else unknown.
"""
from __future__ import annotations

from ..shapes import Shape
from .inference import InferenceContext, relax, scalar, unknown_outputs
from .registry import register


def _body_shapes(ctx: InferenceContext, func, input_shapes) -> list[Shape] | None:
    # Imported here: function bodies are instantiated by the layer above the registry, which in
    # turn runs shape inference over them (with these very shape functions for nested calls).
    from ..functions.shapes import body_output_shapes

    shapes = body_output_shapes(ctx.node.graph.library, func.name, dict(func.attr), input_shapes)
    if shapes is None or len(shapes) != ctx.num_outputs:
        return None
    return shapes


def _declared(ctx: InferenceContext) -> list[Shape] | None:
    declared = ctx.attr("output_shapes", [])
    return [Shape.of(s) for s in declared] if declared and len(declared) == ctx.num_outputs else None


def _relax_all(candidates: list[list[Shape] | None], count: int) -> list[Shape]:
    known = [c for c in candidates if c is not None]
    if len(known) != len(candidates) or not known:
        return [Shape.unknown()] * count
    result = known[0]
    for other in known[1:]:
        result = [relax(a, b) for a, b in zip(result, other)]
    return result


def _call_shapes(ctx: InferenceContext) -> list[Shape]:
    return _body_shapes(ctx, ctx.attr("f"), ctx.shapes()) or unknown_outputs(ctx)


def _if_shapes(ctx: InferenceContext) -> list[Shape]:
    declared = _declared(ctx)
    if declared is not None:
        return declared
    inputs = ctx.shapes()[1:]
    branches = [_body_shapes(ctx, ctx.attr(b), inputs) for b in ("then_branch", "else_branch")]
    return _relax_all(branches, ctx.num_outputs)


def _case_shapes(ctx: InferenceContext) -> list[Shape]:
    ctx.with_rank(0, 0)
    declared = _declared(ctx)
    if declared is not None:
        return declared
    inputs = ctx.shapes()[1:]
    return _relax_all([_body_shapes(ctx, b, inputs) for b in ctx.attr("branches")], ctx.num_outputs)


def _while_shapes(ctx: InferenceContext) -> list[Shape]:
    """The most specific shapes valid in every iteration: start from the inputs and relax with
    what the body makes of them until they stop changing."""
    declared = _declared(ctx)
    if declared is not None:
        return declared
    shapes = ctx.shapes()
    for _ in range(4):
        produced = _body_shapes(ctx, ctx.attr("body"), shapes)
        if produced is None:
            return unknown_outputs(ctx)
        relaxed = [relax(a, b) for a, b in zip(shapes, produced)]
        if relaxed == shapes:
            return shapes
        shapes = relaxed
    return unknown_outputs(ctx)


def _symbolic_gradient_shapes(ctx: InferenceContext) -> list[Shape]:
    # dL/dx_i has the shape of x_i, the i-th input.
    return [ctx.shape(i) for i in range(ctx.num_outputs)]


_COND_ATTRS = ["Tcond: type", "Tin: list(type) >= 0", "Tout: list(type) >= 0", "then_branch: func",
               "else_branch: func", "output_shapes: list(shape) = []"]
register("If", inputs=["cond: Tcond", "input: Tin"], outputs=["output: Tout"], attrs=_COND_ATTRS,
         shape=_if_shapes, stateful=True)
register("StatelessIf", inputs=["cond: Tcond", "input: Tin"], outputs=["output: Tout"], attrs=_COND_ATTRS,
         shape=_if_shapes)

_CASE_ATTRS = ["Tin: list(type) >= 0", "Tout: list(type) >= 0", "branches: list(func) >= 1",
               "output_shapes: list(shape) = []"]
register("Case", inputs=["branch_index: int32", "input: Tin"], outputs=["output: Tout"], attrs=_CASE_ATTRS,
         shape=_case_shapes, stateful=True)
register("StatelessCase", inputs=["branch_index: int32", "input: Tin"], outputs=["output: Tout"],
         attrs=_CASE_ATTRS, shape=_case_shapes)

_WHILE_ATTRS = ["T: list(type) >= 0", "cond: func", "body: func", "output_shapes: list(shape) = []",
                "parallel_iterations: int = 10"]
register("While", inputs=["input: T"], outputs=["output: T"], attrs=_WHILE_ATTRS, shape=_while_shapes,
         stateful=True)
register("StatelessWhile", inputs=["input: T"], outputs=["output: T"], attrs=_WHILE_ATTRS,
         shape=_while_shapes)

_CALL_ATTRS = ["Tin: list(type) >= 0", "Tout: list(type) >= 0", "f: func", "config: string = ''",
               "config_proto: string = ''", "executor_type: string = ''"]
register("PartitionedCall", inputs=["args: Tin"], outputs=["output: Tout"], attrs=_CALL_ATTRS,
         shape=_call_shapes)
register("StatefulPartitionedCall", inputs=["args: Tin"], outputs=["output: Tout"], attrs=_CALL_ATTRS,
         shape=_call_shapes, stateful=True)

register("SymbolicGradient", inputs=["input: Tin"], outputs=["output: Tout"],
         attrs=["Tin: list(type) >= 1", "Tout: list(type) >= 1", "f: func"],
         shape=_symbolic_gradient_shapes)

# What lowering puts before a Switch on a non-bool predicate: scalars are true when non-zero
# (strings: non-empty), other tensors when they have elements.
register("ToBool", inputs=["input: T"], outputs=["output: bool"], attrs=["T: type"], shape=scalar)
