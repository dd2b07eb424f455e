"""Every lowering against the interpreter's kernel on a table of cases (one node each, run by
the kernel and by the lowering under jax.jit), and a check that the table covers every op that
has a lowering."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("jax")

from graphtool import dtypes  # noqa: E402
from graphtool.jit.lowerings import registry  # noqa: E402
from tests.jit import (lowering_cases_array, lowering_cases_conv, lowering_cases_linalg,  # noqa: E402
                       lowering_cases_math, lowering_cases_nn, lowering_cases_reduce, lowering_cases_traced,
                       lowering_cases_train)
from tests.jit.lowering_harness import compare  # noqa: E402

FAMILIES = (lowering_cases_math, lowering_cases_reduce, lowering_cases_nn, lowering_cases_conv,
            lowering_cases_array, lowering_cases_train, lowering_cases_linalg, lowering_cases_traced)
CASES = [case for family in FAMILIES for case in family.CASES]


def _attrs(attrs: dict) -> dict:
    """numpy dtypes in a case's attrs as DTypes (the IR's attr values)."""
    def convert(value):
        if isinstance(value, np.dtype):
            return dtypes.as_dtype(value)
        if isinstance(value, list) and value and isinstance(value[0], np.dtype):
            return [dtypes.as_dtype(v) for v in value]
        return value
    return {k: convert(v) for k, v in attrs.items()}


def _case_id(case) -> str:
    op, inputs = case[0], case[1]
    shapes = ",".join(f"{np.asarray(a).dtype}{list(np.shape(a))}" for a in inputs[:3])
    return f"{op}[{shapes}]"


@pytest.mark.parametrize("case", CASES, ids=[_case_id(c) for c in CASES])
def test_lowering_matches_interpreter(case):
    op, inputs, attrs = case[:3]
    rtol = case[3] if len(case) > 3 else 1e-5
    attrs = dict(attrs)
    traced = attrs.pop("_traced", ())   # static inputs given traced: the lowering's dynamic path
    compare(op, inputs, _attrs(attrs), rtol=rtol, traced=traced)


# Functional control flow and TensorLists have no single-node interpreter counterpart: they are
# compared whole-graph in test_control_flow_lowerings.py.
_GRAPH_LEVEL_MODULES = ("graphtool.jit.lowerings.control_flow", "graphtool.jit.lowerings.tensor_list")


def test_every_lowering_has_a_case():
    covered = {case[0] for case in CASES}
    node_level = {op for op, lowering in registry.all_lowerings().items()
                  if lowering.fn.__module__ not in _GRAPH_LEVEL_MODULES}
    missing = sorted(node_level - covered)
    assert not missing, f"lowerings without a test case: {missing}"


def test_a_cast_predicate_multiplied_into_nan_keeps_the_nan():
    """y * Cast(mask) compiled as one program: TensorFlow gives NaN where y is NaN or inf and the
    mask is 0 (XLA simplifies y * convert(mask) to a select unless the cast avoids the pattern)."""
    from graphtool.jit import runtime
    from tests.jit.lowering_harness import make_node

    jax, jnp = runtime.load(), runtime.array_module()

    values = np.array([np.nan, np.inf, -np.inf, 2.0], np.float32)
    mask = np.array([False, False, False, True])
    cast, _ = make_node("Cast", [mask], _attrs({"SrcT": np.dtype(bool), "DstT": np.dtype(np.float32),
                                               "Truncate": False}))
    mul, _ = make_node("Mul", [values, values], {})

    def program(y, m):
        as_float = registry.lookup("Cast").fn(registry.LowerContext(cast, [np.dtype(np.float32)], jnp, jax.lax), m)
        return registry.lookup("Mul").fn(registry.LowerContext(mul, [np.dtype(np.float32)], jnp, jax.lax),
                                         y, as_float)

    with np.errstate(invalid="ignore"):
        expected = values * mask.astype(np.float32)
    np.testing.assert_array_equal(np.asarray(jax.jit(program)(values, mask)), expected)


@pytest.mark.parametrize("op", ["RealDiv", "FloorDiv", "TruncateDiv"])
@pytest.mark.parametrize("divisor", ["scalar", "constant", "array"])
def test_division_is_ieee_division_as_in_tensorflow(op, divisor):
    """XLA would multiply by the reciprocal of a constant or broadcast divisor (a last-bit
    difference for about a third of the values, a whole unit after FloorDiv's floor); the JIT
    divides exactly, as the interpreter and TensorFlow do."""
    from graphtool.jit import runtime
    from tests.jit.lowering_harness import make_node

    jax = runtime.load()
    rng = np.random.default_rng(0)
    x = rng.uniform(-100, 100, 4096).astype(np.float32)
    y = {"scalar": np.float32(0.0234), "constant": np.float32(0.0234),
         "array": rng.uniform(0.01, 0.05, 4096).astype(np.float32)}[divisor]
    node, _ = make_node(op, [x, y], {})
    ctx = registry.LowerContext(node, [np.dtype(np.float32)], runtime.array_module(), jax.lax)
    lower = registry.lookup(op).fn
    if divisor == "constant":   # the divisor is part of the program, as a folded Const would be
        got = jax.jit(lambda a: lower(ctx, a, y))(x)
    else:
        got = jax.jit(lambda a, b: lower(ctx, a, b))(x, y)
    expected = {"RealDiv": x / y, "FloorDiv": np.floor(x / y), "TruncateDiv": np.trunc(x / y)}[op]
    np.testing.assert_array_equal(np.asarray(got), expected)
