"""Run one node both ways: the interpreter's CPU kernel and the node's JAX lowering under
jax.jit, and compare (same dtype and shape; exact for integers and bools, float rtol given).

A case is (op, inputs, attrs): inputs are numpy arrays, attrs the node's attrs (type attrs not
given are taken from the inputs they type, as tests/kernels/test_nn_kernels.py does).
"""
from __future__ import annotations

import numpy as np

from graphtool import dtypes
from graphtool.ir import Graph
from graphtool.jit.lowerings import registry
from graphtool.ops.registry import all_ops
from tests.kernels.harness import run_node


def make_node(op: str, inputs, attrs: dict):
    arrays = [np.asarray(value) for value in inputs]
    spec = all_ops()[op]
    attrs = dict(attrs)
    position = 0
    for arg in spec.inputs:
        # A list input takes the count its attr gives, else what the other inputs leave.
        rest = len(arrays) - position - (len(spec.inputs) - spec.inputs.index(arg) - 1)
        if arg.number_attr:
            count = attrs.setdefault(arg.number_attr, rest)
            items = arrays[position:position + count]
        elif arg.type_list_attr:
            count = len(attrs[arg.type_list_attr]) if arg.type_list_attr in attrs else rest
            items = arrays[position:position + count]
            attrs.setdefault(arg.type_list_attr, [dtypes.as_dtype(a.dtype) for a in items])
        else:
            items = arrays[position:position + 1]
        if arg.type_attr and items:
            attrs.setdefault(arg.type_attr, dtypes.as_dtype(items[0].dtype))
        position += len(items)
    graph = Graph()
    refs = [graph.add_node("Const", f"input{i}", attrs={"value": a, "dtype": dtypes.as_dtype(a.dtype)})
            .output(0) for i, a in enumerate(arrays)]
    return graph.add_node(op, op.lower(), inputs=refs, attrs=attrs), arrays


def run_lowering(node, arrays, traced=()):
    """The node's lowering under jax.jit, static inputs passed as numpy arrays (except those in
    `traced`, which the lowering must accept traced: its dynamic path)."""
    from graphtool.jit import runtime

    jax = runtime.load()   # x64 on, as the JIT runs
    lowering = registry.lookup(node.op)
    assert lowering is not None, f"{node.op} has no lowering"
    # Correctness is checked whether or not the op is worth compiling (profitable=).
    reason = lowering.supports(node) if lowering.supports else None
    assert reason is None, reason
    out_dtypes = [d.base.numpy for d in node.spec.output_dtypes(node)]
    ctx = registry.LowerContext(node, out_dtypes, runtime.array_module(), jax.lax)
    static = {slot % len(arrays) for slot in lowering.static_inputs}   # negative: from the end
    assert set(traced) <= {slot % len(arrays) for slot in lowering.traced_ok}, "not a traced_ok input"
    static -= set(traced)
    traced_positions = [i for i in range(len(arrays)) if i not in static]

    def compiled(*traced):
        values = list(arrays)
        for position, value in zip(traced_positions, traced):
            values[position] = value
        return lowering.fn(ctx, *values)

    result = jax.jit(compiled)(*(arrays[i] for i in traced_positions))
    outputs = result if isinstance(result, tuple) else (result,)
    return tuple(np.asarray(value) for value in outputs)


def compare(op, inputs, attrs=None, rtol=1e-5, atol=1e-6, traced=()):
    """Sums (rtol 1e-4 cases: convolutions, reductions) get an absolute tolerance of rtol times the
    output's largest finite magnitude too: an element near zero from terms of that size keeps only
    that much of an absolute error, whichever order the terms are added in."""
    node, arrays = make_node(op, inputs, attrs or {})
    with np.errstate(all="ignore"):   # the executor runs kernels with warnings off
        expected = run_node(node, arrays)
    actual = run_lowering(node, arrays, traced)
    assert len(actual) == len(expected)
    for index, (got, want) in enumerate(zip(actual, expected)):
        where = f"{op} output {index}"
        assert got.dtype == want.dtype, f"{where}: dtype {got.dtype} != {want.dtype}"
        assert got.shape == want.shape, f"{where}: shape {got.shape} != {want.shape}"
        if want.dtype.kind in "fc" or want.dtype.kind == "V":
            finite = np.abs(want[np.isfinite(want)]).astype(np.float64)
            if rtol >= 1e-4 and finite.size:
                atol = max(atol, rtol * float(finite.max()))
            np.testing.assert_allclose(got.astype(np.float64) if want.dtype.kind == "V" else got,
                                       want.astype(np.float64) if want.dtype.kind == "V" else want,
                                       rtol=rtol, atol=atol, equal_nan=True, err_msg=where)
        else:
            np.testing.assert_array_equal(got, want, err_msg=where)
