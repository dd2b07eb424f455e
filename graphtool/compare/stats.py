"""Error statistics between two values of one tensor (A, and B the reference).

Closeness is numpy's: an element passes when |a - b| <= atol + rtol * |b| (B is the reference,
as `expected` is in `np.isclose(actual, expected)`), NaN equals NaN (equal_nan), an infinity
equals the same infinity. A NaN or infinity against anything else fails whatever the tolerance
(counted as `nonfinite_mismatches`). The error statistics are over the elements where both values
are finite or equal (the rest are counted apart):

- absolute error |a - b|; relative error |a - b| / |b| (0 where a == b, infinite where b == 0 and
  a != b);
- max (with its index and both values), mean, median, p99 of each;
- the smallest rtol that passes with the given atol, max((|a - b| - atol) / |b|), and the
  smallest atol that passes with the given rtol, max(|a - b| - rtol * |b|), both clamped at 0;
  None when no tolerance can pass (a non-finite mismatch, or b == 0 with |a - b| > atol for rtol).

Values that are not floats or complex (integers, bools, strings) are compared exactly: the count
of elements that differ and the first one.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

FLOAT_KINDS = "fc"
DEFAULT_RTOL = 1e-5
DEFAULT_ATOL = 1e-8


@dataclass
class ErrorStats:
    """max/mean/median/p99 of one kind of error, and where its max is."""

    max: float
    mean: float
    median: float
    p99: float
    max_index: list[int]
    max_a: Any
    max_b: Any

    def to_json(self) -> dict:
        return {"max": _number(self.max), "mean": _number(self.mean), "median": _number(self.median),
                "p99": _number(self.p99), "max_at": {"index": self.max_index, "a": _scalar(self.max_a),
                                                      "b": _scalar(self.max_b)}}


@dataclass
class Comparison:
    """How one tensor's value in A compares with its value in B."""

    name: str
    passed: bool
    kind: str                       # "float", "exact", "dead" or "mismatch" (shape/dtype/dead-live)
    rtol: float
    atol: float
    dtype_a: str | None = None
    dtype_b: str | None = None
    shape_a: list[int] | None = None
    shape_b: list[int] | None = None
    problem: str | None = None      # why it could not be compared element by element
    size: int = 0
    mismatches: int = 0             # elements that fail (floats: beyond tolerance; others: differ)
    nonfinite_mismatches: int = 0   # NaN/Inf against a different value (also in `mismatches`)
    abs_error: ErrorStats | None = None
    rel_error: ErrorStats | None = None
    min_rtol: float | None = None   # smallest rtol that passes with `atol` (None: none does)
    min_atol: float | None = None   # smallest atol that passes with `rtol` (None: none does)
    first_difference: dict | None = field(default=None)   # exact comparisons: index, a, b

    @property
    def status(self) -> str:
        return "PASSED" if self.passed else "FAILED"

    def summary(self) -> str:
        """One line: why it failed, for an error message (`run --expect`)."""
        if self.problem is not None:
            return f"{self.name}: {self.problem}"
        if self.kind == "exact":
            return f"{self.name}: {self.mismatches} of {self.size} values differ"
        assert self.abs_error is not None and self.rel_error is not None
        return (f"{self.name}: {self.mismatches} of {self.size} values differ (max abs error "
                f"{self.abs_error.max:.3g}, max rel error {self.rel_error.max:.3g}"
                + ("" if self.nonfinite_mismatches == 0 else f", {self.nonfinite_mismatches} NaN/Inf mismatch(es)")
                + ")")

    def to_json(self) -> dict:
        out: dict[str, Any] = {"name": self.name, "status": self.status, "kind": self.kind,
                               "dtype": [self.dtype_a, self.dtype_b], "shape": [self.shape_a, self.shape_b],
                               "problem": self.problem, "size": self.size, "mismatches": self.mismatches}
        if self.kind == "float":
            assert self.abs_error is not None and self.rel_error is not None
            out.update({"nonfinite_mismatches": self.nonfinite_mismatches, "abs_error": self.abs_error.to_json(),
                        "rel_error": self.rel_error.to_json(), "min_rtol": _number(self.min_rtol),
                        "min_atol": _number(self.min_atol)})
        if self.kind == "exact":
            out["first_difference"] = self.first_difference
        return out


def compare_values(name: str, a: np.ndarray | None, b: np.ndarray | None, rtol: float = DEFAULT_RTOL,
                   atol: float = DEFAULT_ATOL) -> Comparison:
    """Compare A's value of tensor `name` with B's (None: dead, on a cond branch not taken)."""
    result = Comparison(name, True, "dead", rtol, atol)
    if a is None or b is None:
        if (a is None) != (b is None):
            live = a if a is not None else b
            assert live is not None
            result.passed, result.kind = False, "mismatch"
            result.problem = f"dead in {'A' if a is None else 'B'}, live in {'B' if a is None else 'A'}"
            _describe(result, a, b)
        return result
    a, b = np.asarray(a), np.asarray(b)
    _describe(result, a, b)
    result.size = int(a.size)
    if a.shape != b.shape:
        result.passed, result.kind = False, "mismatch"
        result.problem = f"shape {list(a.shape)} vs {list(b.shape)}"
        return result
    family_a, family_b = _family(a.dtype), _family(b.dtype)
    if family_a != family_b:
        result.passed, result.kind = False, "mismatch"
        result.problem = f"dtype {a.dtype} vs {b.dtype}"
        return result
    if family_a == "float":
        _float_stats(result, a, b)
    else:
        _exact(result, a, b, family_a)
    return result


def _describe(result: Comparison, a, b) -> None:
    if a is not None:
        result.dtype_a, result.shape_a = _dtype_name(a), [int(d) for d in np.shape(a)]
    if b is not None:
        result.dtype_b, result.shape_b = _dtype_name(b), [int(d) for d in np.shape(b)]


def _dtype_name(value) -> str:
    dtype = np.asarray(value).dtype
    return "string" if dtype.kind in "SUO" else str(dtype)


def _family(dtype: np.dtype) -> str:
    if dtype.kind in FLOAT_KINDS:
        return "float"
    if dtype.kind in "SUO":
        return "string"
    return "number" if dtype.kind in "iub" else dtype.kind


def _float_stats(result: Comparison, a: np.ndarray, b: np.ndarray) -> None:
    result.kind = "float"
    wide = np.complex128 if a.dtype.kind == "c" or b.dtype.kind == "c" else np.float64
    x, y = a.astype(wide).ravel(), b.astype(wide).ravel()
    equal = (x == y) | (np.isnan(x) & np.isnan(y))
    finite = np.isfinite(x) & np.isfinite(y)
    unpassable = ~equal & ~finite              # NaN or Inf against something else
    counted = equal | finite                   # the elements the statistics are over
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        abs_err = np.where(equal, 0.0, np.abs(x - y))
        magnitude = np.abs(y)
        rel_err = np.where(equal, 0.0, abs_err / magnitude)
        close = equal | (finite & (abs_err <= result.atol + result.rtol * magnitude))
    result.mismatches = int((~close).sum())
    result.nonfinite_mismatches = int(unpassable.sum())
    result.passed = result.mismatches == 0
    if x.size == 0:
        empty = ErrorStats(0.0, 0.0, 0.0, 0.0, [], None, None)
        result.abs_error, result.rel_error, result.min_rtol, result.min_atol = empty, empty, 0.0, 0.0
        return
    result.abs_error = _error_stats(abs_err, counted, a, b)
    result.rel_error = _error_stats(rel_err, counted, a, b)
    if result.nonfinite_mismatches:
        result.min_rtol = result.min_atol = None
        return
    with np.errstate(invalid="ignore", divide="ignore"):
        excess = np.where(equal, 0.0, abs_err - result.atol)
        over = excess > 0
        if (over & (magnitude == 0)).any():
            result.min_rtol = None
        else:
            needed = np.where(over, excess / np.where(magnitude == 0, 1.0, magnitude), 0.0)
            result.min_rtol = float(needed.max())
        result.min_atol = float(np.maximum(np.where(equal, 0.0, abs_err - result.rtol * magnitude), 0.0).max())


def _error_stats(errors: np.ndarray, counted: np.ndarray, a: np.ndarray, b: np.ndarray) -> ErrorStats:
    values = errors[counted]
    if values.size == 0:   # every element is a NaN/Inf mismatch
        return ErrorStats(float("nan"), float("nan"), float("nan"), float("nan"), [], None, None)
    # argmax over the counted elements, then back to the flat index of the tensor
    masked = np.where(counted, errors, -1.0)
    flat = int(np.argmax(masked))
    index = [int(i) for i in np.unravel_index(flat, a.shape)] if a.ndim else []
    with np.errstate(invalid="ignore", over="ignore"):
        if np.isfinite(values).all():   # median and p99 from one partition of the values
            median, p99 = np.quantile(values, [0.5, 0.99])
        else:   # an infinite relative error (b == 0) must not turn an interpolated p99 into NaN
            median, p99 = np.median(values), np.quantile(values, 0.99, method="higher")
        return ErrorStats(float(values.max()), float(values.mean()), float(median), float(p99),
                          index, a.ravel()[flat], b.ravel()[flat])


def _exact(result: Comparison, a: np.ndarray, b: np.ndarray, family: str) -> None:
    result.kind = "exact"
    if family == "string":
        x, y = (np.array([_as_bytes(v) for v in a.ravel()], dtype=object),
                np.array([_as_bytes(v) for v in b.ravel()], dtype=object))
        differ = np.array([not _same(p, q) for p, q in zip(x, y)], dtype=bool)
    else:
        x, y = a.ravel(), b.ravel()
        differ = x != y
    result.mismatches = int(differ.sum())
    result.passed = result.mismatches == 0
    if result.mismatches:
        flat = int(np.argmax(differ))
        index = [int(i) for i in np.unravel_index(flat, a.shape)] if a.ndim else []
        result.first_difference = {"index": index, "a": _scalar(x[flat]), "b": _scalar(y[flat])}


def _same(p, q) -> bool:
    """Two elements of object arrays: strings as bytes; anything else a variant holds (arrays,
    lists) by value."""
    if isinstance(p, bytes) and isinstance(q, bytes):
        return p == q
    try:
        return bool(np.array_equal(np.asarray(p), np.asarray(q)))
    except (TypeError, ValueError):
        return p is q


def _as_bytes(value) -> Any:
    if isinstance(value, str):
        return value.encode()
    return value


def _number(value: float | None) -> float | str | None:
    """JSON has no NaN/Infinity: they are spelled as strings, as run's report does."""
    if value is None:
        return None
    if np.isnan(value):
        return "NaN"
    if np.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return float(value)


def _scalar(value) -> Any:
    """A numpy scalar as JSON: numbers, [re, im] for complex, text for bytes."""
    if value is None:
        return None
    if isinstance(value, (bytes, np.bytes_)):
        return bytes(value).decode("utf-8", errors="backslashreplace")
    if isinstance(value, (str, bool, np.bool_)):
        return value if isinstance(value, str) else bool(value)
    if isinstance(value, (complex, np.complexfloating)):
        number = complex(value)
        return [_number(number.real), _number(number.imag)]
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return _number(float(value))
    return repr(value)


def format_number(value: float | None) -> str:
    """A statistic in a table: 3 significant digits; `none` where no tolerance passes."""
    if value is None:
        return "none"
    return f"{value:.3g}"


def format_value(value) -> str:
    """A tensor element in a table: the shortest text that tells the value apart (numpy's repr
    of its scalar), so two close float32 values print differently."""
    if value is None:
        return "-"
    if isinstance(value, (np.floating, np.complexfloating)):
        return str(value)
    return str(_scalar(value))
