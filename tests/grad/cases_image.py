"""Finite-difference cases for graphtool/grad/image.py: op -> list of Case."""
from __future__ import annotations

import numpy as np

from tests.grad.fd_harness import Case, Rand, Value

# Boxes whose sampled rows and columns stay >= 0.15 pixel from whole coordinates, so the float32
# nudges of the finite differences never cross a bilinear kink.
BOXES = np.array([[0.1, 0.13, 0.85, 0.77], [0.3, 0.52, 0.6, 0.92]], np.float32)
BOX_IND = np.array([0, 1], np.int32)
F32_OUTPUT = {"tolerance": {"eps": 1e-3, "rtol": 1e-3, "atol": 1e-3}}

CASES: dict[str, list[Case]] = {
    "CropAndResize": [
        Case([Rand((2, 5, 6, 2)), Value(BOXES), BOX_IND, np.array([2, 3], np.int32)], dtype="float32",
             label="bilinear, image and boxes"),
        Case([Rand((2, 5, 6, 1)), BOXES, BOX_IND, np.array([3, 2], np.int32)], attrs={"method": "nearest"},
             dtype="float32", label="nearest, image"),
        Case([Rand((2, 5, 6, 1)), BOXES, BOX_IND, np.array([1, 1], np.int32)], dtype="float32",
             label="1x1 crops (box centres)"),
    ],
    "ResizeBicubic": [
        Case([Rand((1, 4, 5, 2)), np.array([6, 3], np.int32)], **F32_OUTPUT),
        Case([Rand((1, 4, 5, 1)), np.array([7, 8], np.int32)], attrs={"half_pixel_centers": True}, **F32_OUTPUT),
        Case([Rand((1, 5, 4, 1)), np.array([3, 6], np.int32)], attrs={"align_corners": True}, **F32_OUTPUT),
    ],
    # Distinct channel values (no ties between max and min) away from 0.
    "RGBToHSV": [Case([Rand((2, 4, 3), 0.1, 1.0, distinct=True)]),
                 Case([Rand((3, 3), 0.1, 1.0, distinct=True)], dtype="float32")],
    "ExtractImagePatches": [
        Case([Rand((2, 5, 6, 2))], attrs={"ksizes": [1, 3, 2, 1], "strides": [1, 2, 2, 1], "rates": [1, 1, 2, 1],
                                          "padding": "SAME"}),
        Case([Rand((1, 6, 5, 1))], attrs={"ksizes": [1, 2, 2, 1], "strides": [1, 1, 3, 1], "rates": [1, 2, 1, 1],
                                          "padding": "VALID"}),
    ],
}
