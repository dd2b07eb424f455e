"""Do two graphs compute the same fetches? Run both on the same random feeds and compare.

Used by `optimize --verify` and by every pass test.
"""
from __future__ import annotations

import numpy as np

from ..feeds.generated import INTEGER_STYLES, generate_feeds
from ..ir import Graph

# --verify sets unknown dims to 2, not 1: a broadcast that a dim of 1 would hide shows.
VERIFY_UNKNOWN_DIM = 2


def candidate_feeds(graph: Graph, seed: int = 0, shapes=None):
    """Generated feeds of each integer style (graphtool/feeds/generated.py INTEGER_STYLES), for
    callers that try them until one runs."""
    for style in INTEGER_STYLES:
        yield random_feeds(graph, seed, style, shapes)


def random_feeds(graph: Graph, seed: int = 0, integers: str = "indices", shapes=None) -> dict[str, np.ndarray]:
    """A value for every placeholder (graphtool/feeds/generated.py), unknown dims -> 2."""
    return generate_feeds(graph, seed, shapes=shapes, integers=integers, unknown_dim=VERIFY_UNKNOWN_DIM)


def differences(original: Graph, optimized: Graph, fetches: list[str], feeds: dict[str, np.ndarray],
                rtol: float = 1e-5, atol: float = 1e-6, tolerances: dict | None = None,
                timeout=None) -> list[str]:
    """One description per fetch whose values differ between the two graphs (empty: equivalent).
    Floats may differ by rtol/atol elementwise plus, where `tolerances` (fetch -> Tolerance, see
    tolerance.py) names the fetch, its accumulation tolerance relative to the fetch's magnitude.
    `timeout` (seconds, or a callable giving the seconds left) bounds each of the two runs: a
    graph whose loop never ends raises exec.executor.StepTimeout."""
    from ..exec.session import Session

    left = timeout if callable(timeout) else (lambda: timeout)
    before = Session(original, threads=1).run(fetches, feeds, allow_dead=True, timeout=left()).values
    after = Session(optimized, threads=1).run(fetches, feeds, allow_dead=True, timeout=left()).values
    problems = []
    for name, a, b in zip(fetches, before, after):
        if a is None or b is None:  # dead (an untaken cond branch) must stay dead, and live live
            if (a is None) != (b is None):
                problems.append(f"{name}: {'dead' if a is None else 'live'} value became "
                                f"{'dead' if b is None else 'live'}")
            continue
        if a.shape != b.shape:
            problems.append(f"{name}: shape {list(a.shape)} became {list(b.shape)}")
        elif a.dtype != b.dtype:
            problems.append(f"{name}: dtype {a.dtype} became {b.dtype}")
        elif a.dtype.kind in "fc":
            spread = tolerances[name].allowed(a) if tolerances and name in tolerances else 0.0
            if not np.allclose(a, b, rtol=rtol, atol=atol + spread, equal_nan=True):
                worst = float(np.nanmax(np.abs(a.astype(np.complex128) - b)))
                allowed = f", allowed {atol + spread:.3g} + {rtol:.3g}*|value|"
                problems.append(f"{name}: values differ (max abs diff {worst:.3g}{allowed})")
        elif a.dtype == object and not _objects_match(a, b, rtol, atol):
            problems.append(f"{name}: values differ")
        elif a.dtype != object and not np.array_equal(a, b):
            problems.append(f"{name}: values differ")
    return problems


def _objects_match(a: np.ndarray, b: np.ndarray, rtol: float, atol: float) -> bool:
    """Object arrays (strings, variants): TensorList values are compared by their elements, which
    each graph's run holds in its own list objects; anything else by equality."""
    for x, y in zip(a.reshape(-1), b.reshape(-1)):
        if hasattr(x, "elements") and hasattr(y, "elements"):
            if x.element_dtype != y.element_dtype or not _elements_match(x.elements(), y.elements(), rtol, atol):
                return False
        elif not (x == y if not isinstance(x, np.ndarray) else np.array_equal(x, y)):
            return False
    return True


def _elements_match(xs: list, ys: list, rtol: float, atol: float) -> bool:
    if len(xs) != len(ys):
        return False
    for x, y in zip(xs, ys):
        if x is None or y is None:
            if (x is None) != (y is None):
                return False
            continue
        x, y = np.asarray(x), np.asarray(y)
        if x.shape != y.shape or x.dtype != y.dtype:
            return False
        same = (np.allclose(x, y, rtol=rtol, atol=atol, equal_nan=True) if x.dtype.kind in "fc"
                else _objects_match(x, y, rtol, atol) if x.dtype == object else np.array_equal(x, y))
        if not same:
            return False
    return True
