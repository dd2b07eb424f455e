"""Finite-difference cases for graphtool/grad/nn_extra.py: op -> list of Case."""
from __future__ import annotations

import numpy as np

from tests.grad.fd_harness import Case, Rand


def i32(value):
    return np.array(value, np.int32)


SPACE = {
    "SpaceToDepth": [Case([Rand((1, 4, 6, 2))], attrs={"block_size": 2}),
                     Case([Rand((2, 3, 3, 1))], attrs={"block_size": 3})],
    "DepthToSpace": [Case([Rand((1, 2, 3, 8))], attrs={"block_size": 2}),
                     Case([Rand((2, 1, 2, 9))], attrs={"block_size": 3})],
    "SpaceToBatchND": [Case([Rand((1, 3, 4, 2)), i32([2, 2]), i32([[1, 0], [0, 2]])]),
                       Case([Rand((2, 5, 1)), i32([3]), i32([[0, 1]])], label="one block dim")],
    "BatchToSpaceND": [Case([Rand((4, 2, 3, 1)), i32([2, 2]), i32([[1, 0], [0, 2]])]),
                       Case([Rand((6, 2, 1)), i32([3]), i32([[1, 1]])], label="one block dim")],
}

CASES: dict[str, list[Case]] = {**SPACE}
