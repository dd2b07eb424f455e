"""Evaluate a graph's nodes under a JAX trace: the body of every compiled cluster and of every
While/If function inside one.

Values are either concrete numpy arrays (constants, shapes, what is computed from them: XLA must
know them when compiling) or traced JAX arrays. A node whose inputs are all concrete runs its
interpreter (numpy) kernel while tracing, which is constant folding; Shape/Size/Rank read the
traced array's static shape; every other node goes through its lowering (lowerings/registry.py).

    values = evaluate(graph, {ref: value, ...}, wanted_refs)
"""
from __future__ import annotations

import numpy as np

from ..errors import RuntimeFailure
from ..ir import Graph, Node, TensorRef
from . import candidates as cand
from . import runtime
from .lowerings import registry

# Per body graph: the nodes in topological order (a graph traced again is not sorted again).
_ORDER_ATTR = "_jit_order"


def is_concrete(value) -> bool:
    return isinstance(value, (np.ndarray, np.generic))


def evaluate(graph: Graph, env: dict[TensorRef, object], wanted: list[TensorRef]) -> list:
    """The values of `wanted`, given the values in `env` (the graph's inputs)."""
    values = dict(env)
    for node in _needed_in_order(graph, wanted, env):
        try:
            outputs = evaluate_node(node, [values[ref] for ref in node.inputs])
        except RuntimeFailure:
            raise
        except Exception as exc:   # the node that could not be traced, for the report
            raise RuntimeFailure(f"node '{node.name}' ({node.op}): {type(exc).__name__}: "
                                 f"{str(exc).strip().splitlines()[0] if str(exc).strip() else ''}") from exc
        for port, value in enumerate(outputs):
            values[TensorRef(node, port)] = value
    return [values[ref] for ref in wanted]


def _needed_in_order(graph: Graph, wanted: list[TensorRef], env) -> list[Node]:
    supplied = {ref.node for ref in env}
    needed, stack = set(), [ref.node for ref in wanted]
    while stack:
        node = stack.pop()
        if node in needed or node in supplied:
            continue
        needed.add(node)
        stack.extend(ref.node for ref in node.inputs)
    return [n for n in graph.topological_order() if n in needed]


def evaluate_node(node: Node, inputs: list) -> tuple:
    op = node.op
    spec = node.spec
    out_types = [d.base.numpy for d in spec.output_dtypes(node)] if spec is not None else []
    if op == "Const":
        return (np.asarray(node.attr("value"), dtype=out_types[0]),)
    if op == "NoOp":
        return ()
    if op in cand.FORWARD_OPS:
        return tuple(inputs)
    if op in cand.SHAPE_OPS:
        return _shape_op(node, inputs, out_types)
    if inputs and all(is_concrete(v) for v in inputs) and _foldable(node):
        return _run_kernel(node, inputs)
    lowering = registry.lookup(op)
    if lowering is None:
        raise RuntimeFailure(f"node '{node.name}' ({op}): no lowering to compile it with")
    jax = runtime.load()
    static = set(registry.static_slots(lowering, len(inputs)))
    args = []
    for slot, value in enumerate(inputs):
        if slot in static:
            if not is_concrete(value):
                raise RuntimeFailure(f"node '{node.name}' ({op}): input {slot} must be known when compiling "
                                     f"but is computed from traced values")
            args.append(np.asarray(value))
        else:
            args.append(jax.numpy.asarray(value) if is_concrete(value) else value)
    ctx = registry.LowerContext(node=node, output_dtypes=[np.dtype(t) for t in out_types],
                                jnp=runtime.array_module(), lax=jax.lax)
    result = lowering.fn(ctx, *args)
    outputs = result if isinstance(result, tuple) else (result,)
    if len(outputs) != len(out_types):
        raise RuntimeFailure(f"node '{node.name}' ({op}): lowering returned {len(outputs)} outputs, "
                             f"the op has {len(out_types)}")
    # TensorFlow's dtypes exactly: a lowering that let JAX promote or weaken a type is corrected here.
    return tuple(_exact_dtype(value, want) for value, want in zip(outputs, out_types))


def _exact_dtype(value, want):
    if want is None or want == object:
        return value
    if getattr(value, "dtype", None) != np.dtype(want):
        return value.astype(want)
    return value


def _shape_op(node: Node, inputs: list, out_types) -> tuple:
    if node.op == "ShapeN":
        return tuple(np.asarray(np.shape(v), dtype=t) for v, t in zip(inputs, out_types))
    shape = np.shape(inputs[0])
    if node.op == "Shape":
        return (np.asarray(shape, dtype=out_types[0]),)
    if node.op == "Size":
        return (np.asarray(int(np.prod(shape, dtype=np.int64)), dtype=out_types[0]),)
    return (np.asarray(len(shape), dtype=out_types[0]),)


def _foldable(node: Node) -> bool:
    from ..exec import kernels

    spec = node.spec
    if spec is None or spec.stateful or not kernels.has_kernel(node.op, "CPU"):
        return False
    # TensorLists are arrays in a trace, the interpreter's are Python objects: never folded.
    return all(d.base.numpy is not None and d.base.numpy != object for d in spec.output_dtypes(node))


def _run_kernel(node: Node, inputs: list) -> tuple:
    """The interpreter's numpy kernel on concrete values (constant folding while tracing)."""
    from ..exec import kernels
    from ..exec.kernels import KernelContext

    kernel_def = kernels.lookup(node.op, "CPU")
    fn = kernels.bind(kernel_def, node)
    ctx = KernelContext(np, node.name, node.op, node.spec.output_dtypes(node), None)
    result = fn(ctx, *inputs)
    return result if isinstance(result, tuple) else (result,)
