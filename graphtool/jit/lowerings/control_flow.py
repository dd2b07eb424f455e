"""Lowerings of functional control flow: While -> lax.while_loop, If -> lax.cond, Case ->
lax.switch, and function calls traced inline. Their bodies are library functions, instantiated
(graphtool/functions) and traced node by node like a cluster's body (graphtool/jit/trace.py).

A node is supported when every node of every function it runs (nested ones included) is: the same
rules as the clustering pass (no side effects, no strings or resources, a lowering for each op).
A cond with a predicate known when compiling traces only the branch it takes.

TensorLists carried by a loop are arrays [num_elements, *element_shape] (tensor_list.py). A list
reserved with an unknown element shape is a PendingList until an element is written; a loop
carrying one is traced once to learn the shape the body writes, then run with a list of zeros.
"""
from __future__ import annotations

import numpy as np

from .registry import lowers

MAX_DEPTH = 32
CALL_OPS = ("PartitionedCall", "StatefulPartitionedCall")


# --- support ------------------------------------------------------------------------------------

def function_problem(library, func, caller: str, depth: int = 0) -> str | None:
    """Why a body cannot be compiled, or None. `func` is a decoded func attr (name, attr)."""
    from ...functions.instantiate import instantiate
    from .. import candidates

    if depth > MAX_DEPTH:
        return "functions nest too deep"
    try:
        body = instantiate(library, func.name, dict(func.attr), caller)
    except Exception as exc:
        return f"function {func.name}: {exc}"
    from . import registry

    static = candidates.static_nodes(body.graph)
    for node in body.graph.nodes:
        if node.op in ("_Arg", "_Retval"):
            continue
        reason = candidates.exclusion_reason(node, set(), set(), static)
        if reason is not None:
            return f"function {func.name}: node '{node.name}': {reason}"
        lowering = registry.lookup(node.op)
        for slot in registry.static_slots(lowering, len(node.inputs)):
            if node.inputs[slot].node not in static:
                return (f"function {func.name}: node '{node.name}' ({node.op}): input {slot} must be known "
                        f"when compiling but changes from call to call")
    return None


def _functions_problem(attr_names):
    def supports(node):
        library = node.graph.library
        for name in attr_names:
            value = node.attr(name)
            for func in value if isinstance(value, list) else [value]:
                problem = function_problem(library, func, node.name)
                if problem:
                    return problem
        return None
    return supports


# --- tracing a body -------------------------------------------------------------------------------

def _body(ctx, attr_name, index=None):
    from ...functions.instantiate import instantiate

    func = ctx.attr(attr_name)
    if index is not None:
        func = func[index]
    return instantiate(ctx.node.graph.library, func.name, dict(func.attr), ctx.node.name)


def run_body(body, args) -> tuple:
    """The body's results for `args` (traced or concrete), in its output order."""
    from .. import trace

    env = {arg.output(0): value for arg, value in zip(body.args, args)}
    return tuple(trace.evaluate(body.graph, env, [r.inputs[0] for r in body.retvals]))


def _as_traced(ctx, values) -> tuple:
    from .tensor_list import PendingList

    return tuple(v if isinstance(v, PendingList) else ctx.jnp.asarray(v) for v in values)


def _to_bool(ctx, value):
    """TensorFlow's truth of a predicate: a scalar's value, a non-scalar's non-emptiness."""
    shape = np.shape(value)
    if shape != ():
        return np.asarray(int(np.prod(shape)) > 0)
    if isinstance(value, (np.ndarray, np.generic)):
        return np.asarray(bool(value))
    return value.astype(bool) if value.dtype != np.bool_ else value


# --- While ----------------------------------------------------------------------------------------

@lowers("While", "StatelessWhile", supports=_functions_problem(("cond", "body")))
def while_loop(ctx, *inputs):
    from .tensor_list import PendingList, materialize

    cond, body = _body(ctx, "cond"), _body(ctx, "body")
    carry = _as_traced(ctx, inputs)
    if any(isinstance(v, PendingList) for v in carry):
        # One trace of the body learns each pending list's element shape from what it writes.
        shaped = run_body(body, carry)
        carry = tuple(materialize(ctx.jnp, v, s) if isinstance(v, PendingList) else v for v, s in zip(carry, shaped))
    dtypes_ = [v.dtype for v in carry]

    def cond_fn(values):
        (pred,) = run_body(cond, values)[:1]
        return ctx.jnp.asarray(_to_bool(ctx, pred)).reshape(())

    def body_fn(values):
        # The carried dtypes exactly (a body's constants must not widen or weaken them).
        return tuple(_cast(ctx.jnp, v, d) for v, d in zip(run_body(body, values), dtypes_))

    return tuple(ctx.lax.while_loop(cond_fn, body_fn, carry))


# --- If / Case ------------------------------------------------------------------------------------

def _cast(jnp, value, dtype):
    """`value` as exactly `dtype` (a TensorList, dtype object, passes as it is)."""
    if dtype == object or _is_list(value):
        return value
    return jnp.asarray(value).astype(dtype)


def _branch(ctx, body, out_dtypes):
    def run(operands):
        return tuple(_cast(ctx.jnp, v, d) for v, d in zip(run_body(body, operands), out_dtypes))
    return run


@lowers("If", "StatelessIf", supports=_functions_problem(("then_branch", "else_branch")))
def if_(ctx, cond, *inputs):
    then_body, else_body = _body(ctx, "then_branch"), _body(ctx, "else_branch")
    pred = _to_bool(ctx, cond)
    operands = _as_traced(ctx, inputs)
    if isinstance(pred, (np.ndarray, np.generic)):   # known when compiling: trace the branch taken
        return _branch(ctx, then_body if bool(pred) else else_body, ctx.output_dtypes)(operands)
    return tuple(ctx.lax.cond(pred, _branch(ctx, then_body, ctx.output_dtypes),
                              _branch(ctx, else_body, ctx.output_dtypes), operands))


@lowers("Case", "StatelessCase", supports=_functions_problem(("branches",)))
def case(ctx, index, *inputs):
    count = len(ctx.attr("branches"))
    branches = [_branch(ctx, _body(ctx, "branches", k), ctx.output_dtypes) for k in range(count)]
    operands = _as_traced(ctx, inputs)
    if isinstance(index, (np.ndarray, np.generic)):
        k = int(index)
        return branches[k if 0 <= k < count else count - 1](operands)
    # TensorFlow runs the last branch for an index out of range, negative ones included.
    index = ctx.jnp.where((index < 0) | (index >= count), count - 1, index)
    return tuple(ctx.lax.switch(index, branches, operands))


# --- calls ----------------------------------------------------------------------------------------

@lowers(*CALL_OPS, supports=_functions_problem(("f",)))
def call(ctx, *inputs):
    return tuple(_cast(ctx.jnp, v, d) for v, d in zip(run_body(_body(ctx, "f"), _as_traced(ctx, inputs)),
                                                      ctx.output_dtypes))


def _is_list(value) -> bool:
    from .tensor_list import PendingList

    return isinstance(value, PendingList)
