"""Placement: give every node a full device name (`dftool place`).

    >>> report = place(graph, ["cpu:0", "gpu:0"])   # doctest: +SKIP
    >>> graph.node("dense/matmul").device             # doctest: +SKIP
    '/job:localhost/replica:0/task:0/device:GPU:0'

The steps, each in its own module:
1. device_names.py: TensorFlow device names parsed, made canonical and matched.
2. colocation.py: nodes that must share a device (`_class`, ref/resource edges, loop plumbing)
   become groups placed as one unit.
3. constraints.py: each group's allowed devices (requested devices, kernels, soft placement).
4. cost_model.py: compute and transfer estimates (analytic, or measured by `dftool profile`).
5. greedy.py: `place()`, the greedy placer that weighs those costs.
6. random_placer.py: `random_placement()`, a seeded random choice among the same allowed
   devices (tests and fuzzing: placements the cost model never picks, all of them valid).
7. outcome.py and report.py: what both return (`dftool place --json` / `--explain`).
"""
from __future__ import annotations

from .cost_model import CostModel, Link
from .greedy import place
from .random_placer import random_placement
from .report import PlacementReport

__all__ = ["CostModel", "Link", "PlacementReport", "place", "random_placement"]
