"""Every registered gradient of the math, array and nn families against central finite
differences (see fd_harness.py). Parametrized over the gradient registry, so registering a
gradient without a case here fails the suite."""
from __future__ import annotations

import pytest

from graphtool.grad import registry
from tests.grad import (cases_array, cases_image, cases_linalg, cases_math, cases_nn,  # noqa: I001
                         cases_nn_extra, cases_segment)
from tests.grad.fd_harness import check_case, checked_by_driver

# One table per family module of tests/grad/cases_*.py.
TABLES = (
    cases_math.CASES,
    cases_array.CASES,
    cases_nn.CASES,
    cases_linalg.CASES,
    cases_nn_extra.CASES,
    cases_image.CASES,
    cases_segment.CASES,
)
CASES = {}
for _table in TABLES:
    overlap = CASES.keys() & _table.keys()
    assert not overlap, f"ops with cases in two tables: {sorted(overlap)}"
    CASES.update(_table)

CHECKED_HERE = sorted(op for op in registry.registered() if not checked_by_driver(op))


@pytest.mark.parametrize("op", CHECKED_HERE)
def test_every_registered_gradient_has_cases(op):
    assert CASES.get(op), f"gradient of '{op}' is registered but has no finite-difference case"


@pytest.mark.parametrize("op", sorted(CASES))
def test_cases_are_for_registered_gradients(op):
    assert op in registry.registered(), f"cases for '{op}', which has no registered gradient"


@pytest.mark.parametrize("op, index", [pytest.param(op, i, id=f"{op}-{i}")
                                       for op in sorted(CASES) for i in range(len(CASES[op]))])
def test_gradient_matches_finite_differences(op, index):
    case = CASES[op][index]
    result = check_case(op, case, index)
    assert result.worst_ratio <= 1.0, f"{op} ({case.describe()}): {result.worst}"
