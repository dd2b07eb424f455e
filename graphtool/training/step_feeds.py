"""Feeds that change every step: an .npz whose arrays carry a leading step axis (`--feeds-per-step`).

Step k (1-based) is fed `array[k - 1]` for each key, beside the feeds every step shares. Each
array's header is checked against what the graph expects of one step (the placeholder's dtype
and shape behind the step axis) before any data is decoded.
"""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ..errors import UsageError
from ..feeds.files import Expectation, read_npz
from ..shapes import Shape

WHAT = "--feeds-per-step"


def per_step_expectation(expect: Expectation) -> Expectation:
    """What one step's feed must be, with an unknown step axis in front."""
    def expect_stacked(name: str):
        expected = expect(name)
        if expected is None:
            return None
        dtype, shape = expected
        if shape is None or shape.dims is None:
            return dtype, None
        return dtype, Shape([None, *shape.dims])
    return expect_stacked


def read_feeds_per_step(path: str, steps: int, expect: Expectation | None = None,
                        cast: bool = False) -> dict[str, np.ndarray]:
    """The arrays of `path` by feed name; UsageError naming the file and key for an array without
    a step axis, or with fewer than `steps` entries along it."""
    arrays = read_npz(path, WHAT, expect=per_step_expectation(expect) if expect else None, cast=cast)
    for name, array in arrays.items():
        where = f"{WHAT} '{path}' key '{name}'"
        if array.ndim == 0:
            raise UsageError(f"{where}: a scalar has no step axis",
                             hint="stack one value per step along a leading axis")
        if array.shape[0] < steps:
            raise UsageError(f"{where}: {array.shape[0]} step(s) along its leading axis, fewer than the "
                             f"{steps} steps asked for", hint="lower --steps or add rows to the file")
    return arrays


def feeds_for_step(shared: Mapping[str, np.ndarray], per_step: Mapping[str, np.ndarray],
                   step: int) -> dict[str, np.ndarray]:
    """The feeds of step `step` (1-based): the shared ones, then row step - 1 of each per-step one."""
    feeds = dict(shared)
    for name, stacked in per_step.items():
        feeds[name] = stacked[step - 1]
    return feeds
