"""Comparing two runs of a graph (or two graphs): error statistics per tensor (stats.py) and the
walk over every common intermediate tensor (walk.py). Used by `dftool compare` and `run --expect`."""
from __future__ import annotations

from .stats import DEFAULT_ATOL, DEFAULT_RTOL, Comparison, ErrorStats, compare_values
from .walk import DEFAULT_CHUNK_BYTES, TensorPlan, WalkResult, plan_tensors, walk

__all__ = ["DEFAULT_ATOL", "DEFAULT_RTOL", "Comparison", "ErrorStats", "compare_values", "DEFAULT_CHUNK_BYTES",
           "TensorPlan", "WalkResult", "plan_tensors", "walk"]
