"""Checking gradient graphs built by the driver against central finite differences.

Graphs are float64 and small, so every element of every x is nudged: d sum(y) / d x[i] is
(sum(y(x + eps e_i)) - sum(y(x - eps e_i))) / (2 eps), from runs of the very graph that holds the
gradient nodes (one Session, so every run reuses the compiled plan).
"""
from __future__ import annotations

import numpy as np

from graphtool.exec.session import Session
from graphtool.grad.driver import add_gradients, gradient_name

EPS = 1e-6
RTOL = 1e-6
ATOL = 1e-8


def numeric_gradient(session: Session, y: str, feeds: dict, x: str, eps: float = EPS) -> np.ndarray:
    """Central differences of sum(y) with respect to the fed tensor `x`."""
    base = np.asarray(feeds[x], dtype=np.float64)
    result = np.zeros_like(base)
    for index in np.ndindex(base.shape):
        sums = []
        for step in (eps, -eps):
            nudged = base.copy()
            nudged[index] += step
            sums.append(float(np.sum(session.run([y], {**feeds, x: nudged}).values[0])))
        result[index] = (sums[0] - sums[1]) / (2 * eps)
    return result


def check_gradients(graph, y: str, xs: list[str], feeds: dict, prefix: str = "grad", *,
                    rtol: float = RTOL, atol: float = ATOL, add: bool = True) -> dict[str, float]:
    """Add the gradients of y (unless `add` is False: already there) and compare each with the
    finite differences; returns the largest absolute error per x."""
    if add:
        add_gradients(graph, y, xs, prefix)
    session = Session(graph, threads=2)
    values = session.run([gradient_name(x, prefix) for x in xs], feeds, timeout=60).values
    errors = {}
    for x, got in zip(xs, values):
        want = numeric_gradient(session, y, feeds, x)
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=f"d {y} / d {x}")
        errors[x] = float(np.max(np.abs(got - want), initial=0.0))
    return errors


def random_feeds(seed: int, **shapes) -> dict[str, np.ndarray]:
    """Seeded float64 normal values, one array per keyword (name=shape)."""
    rng = np.random.default_rng(seed)
    return {name: rng.normal(size=shape) for name, shape in shapes.items()}
