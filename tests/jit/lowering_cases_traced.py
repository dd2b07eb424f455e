"""Cases for the ops lowered by tracing the interpreter's kernel (lowerings/traced.py)."""
from __future__ import annotations

import numpy as np

from tests.jit.lowering_cases_math import F32, F64, floats, ints

EDGES = np.array([-10, -2.0, -1.99, -0.5, 0.0, 0.3, 1.0, 1.5, 2.0, 2.01, 7.0, np.nan], F32)
CASES = []
for bits, narrow in ((8, False), (4, True), (16, False)):
    quant = {"num_bits": bits, "narrow_range": narrow}
    for low, high in ((-2.0, 2.0), (0.5, 3.0), (-3.0, -1.0), (0.0, 0.0)):
        if low < high:   # the Args ops refuse an empty range; the Vars ones give zeros
            CASES += [("FakeQuantWithMinMaxArgs", [EDGES], {"min": low, "max": high, **quant}),
                      ("FakeQuantWithMinMaxArgsGradient", [floats(EDGES.size), EDGES],
                       {"min": low, "max": high, **quant})]
        CASES += [("FakeQuantWithMinMaxVars", [EDGES, np.float32(low), np.float32(high)], quant),
                  ("FakeQuantWithMinMaxVarsGradient", [floats(EDGES.size), EDGES, np.float32(low), np.float32(high)],
                   quant)]
    CASES += [("FakeQuantWithMinMaxVarsPerChannel", [floats(3, 4), np.array([-2, 0, -1, 0], F32),
                                                     np.array([2, 1, -0.5, 0], F32)], quant),
              ("FakeQuantWithMinMaxVarsPerChannel", [floats(4), np.array([-2, 0, -1, 0.5], F32),
                                                     np.array([2, 1, -0.5, 3], F32)], quant),
              ("FakeQuantWithMinMaxVarsPerChannelGradient", [floats(3, 4), floats(3, 4), np.array([-2, 0, -1, 0], F32),
                                                             np.array([2, 1, -0.5, 0], F32)], quant)]

RGB = np.concatenate([floats(2, 4, 3, low=0, high=1),
                      np.array([[[0, 0, 0], [1, 1, 1], [1, 0, 0], [0.5, 0.5, 0.2]]], F32).repeat(2, 0)], axis=1)
CASES += [("RGBToHSV", [RGB], {}), ("RGBToHSV", [RGB.astype(F64)], {}),
          ("HSVToRGB", [RGB], {}), ("HSVToRGB", [floats(3, 3, low=0, high=1, dtype=F64)], {})]

for padding in ("SAME", "VALID"):
    for strides, rates in (((1, 1), (1, 1)), ((2, 1), (1, 2))):
        CASES.append(("Dilation2D", [floats(2, 6, 5, 3), floats(2, 3, 3)],
                      {"strides": [1, *strides, 1], "rates": [1, *rates, 1], "padding": padding}))
    for op in ("MaxPool3D", "AvgPool3D"):
        for data_format, shape in (("NDHWC", (2, 4, 5, 6, 3)),):
            five = (lambda v: [1, 1, *v]) if data_format == "NCDHW" else (lambda v: [1, *v, 1])
            x = floats(*shape)
            x.reshape(-1)[::7] = np.nan
            CASES += [(op, [x], {"ksize": five((2, 2, 3)), "strides": five((2, 1, 2)), "padding": padding,
                                 "data_format": data_format}, 1e-4)]

CASES += [("DiagPart", [floats(3, 2, 3, 2)], {}), ("DiagPart", [ints(4, 4)], {}),
          ("Reverse", [floats(2, 3, 4), np.array([True, False, True])], {}),
          ("Reverse", [ints(3), np.array([False])], {})]

for padding in ("SAME", "VALID"):
    for ksize, strides in (((2, 2), (2, 2)), ((3, 2), (1, 2))):
        x = floats(2, 5, 6, 3)
        x.reshape(-1)[::5] = 0.25   # ties: the first maximum's index
        for batch_in_index in (False, True):
            CASES.append(("MaxPoolWithArgmax", [x], {"ksize": [1, *ksize, 1], "strides": [1, *strides, 1],
                                                     "padding": padding, "include_batch_in_index": batch_in_index,
                                                     "Targmax": np.dtype(np.int64)}))
