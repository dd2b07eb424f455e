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


def test_every_lowering_has_a_case():
    covered = {case[0] for case in CASES}
    missing = sorted(set(registry.all_lowerings()) - covered)
    assert not missing, f"lowerings without a test case: {missing}"
