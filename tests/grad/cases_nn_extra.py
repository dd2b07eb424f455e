"""Finite-difference cases for graphtool/grad/nn_extra.py: op -> list of Case."""
from __future__ import annotations

import numpy as np

from tests.grad.fd_harness import Case, Rand, Value


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


# Fake quantization is a staircase whose straight-through gradient is not its derivative; with 16
# bits over about [-1, 1] the steps (3e-5) are far below the finite-difference step (3e-2), so the
# staircase is the clamp it approximates (each difference is off by at most one step / 6e-2): slope
# 1 inside the range, 0 outside, and 1 for min (max) from the values below (above) it. The inputs
# stay 0.1 away from the range's ends.
F32 = {"dtype": "float32", "tolerance": {"eps": 3e-2, "rtol": 2e-2, "atol": 5e-3}}
QUANT = {"num_bits": 16}
X = Value([[-1.7, -0.6, 0.25, 0.9], [1.3, -0.05, 0.55, -1.2]])
FAKE_QUANT = {
    "FakeQuantWithMinMaxArgs": [Case([X], attrs={"min": -1.0, "max": 1.0, **QUANT}, **F32)],
    "FakeQuantWithMinMaxVars": [Case([X, Value(-1.0), Value(1.0)], attrs=QUANT, **F32)],
    "FakeQuantWithMinMaxVarsPerChannel": [
        Case([Value([[-1.7, 0.3], [0.4, 1.8], [-0.2, -0.9]]), Value([-1.0, -0.5]), Value([1.0, 1.5])],
             attrs=QUANT, **F32),
        Case([Value([-1.3, 1.7]), Value([-1.0, -0.5]), Value([1.0, 1.5])], attrs=QUANT, **F32, label="rank 1")],
}


def _pool3d(ksize, strides, padding, data_format="NDHWC"):
    if data_format == "NCDHW":
        ksize, strides = [1, 1, *ksize], [1, 1, *strides]
    else:
        ksize, strides = [1, *ksize, 1], [1, *strides, 1]
    return {"ksize": ksize, "strides": strides, "padding": padding, "data_format": data_format}


def _conv3d(strides, padding, data_format="NDHWC", dilations=(1, 1, 1)):
    wrap = (lambda v: [1, 1, *v]) if data_format == "NCDHW" else (lambda v: [1, *v, 1])
    return {"strides": wrap(strides), "padding": padding, "data_format": data_format, "dilations": wrap(dilations)}


VOLUME = {
    "MaxPool3D": [Case([Rand((1, 3, 4, 4, 2), distinct=True)], attrs=_pool3d([2, 2, 2], [1, 2, 2], "SAME"),
                       **{"dtype": "float32"}),
                  Case([Rand((1, 2, 3, 3, 4), distinct=True)], attrs=_pool3d([2, 2, 2], [1, 1, 1], "VALID", "NCDHW"),
                       **{"dtype": "float32"})],
    "AvgPool3D": [Case([Rand((1, 3, 4, 4, 2))], attrs=_pool3d([2, 2, 2], [1, 2, 2], "SAME")),
                  Case([Rand((2, 2, 3, 3, 3))], attrs=_pool3d([1, 2, 2], [1, 1, 1], "VALID", "NCDHW"))],
    "AvgPool3DGrad": [Case([i32([1, 3, 4, 4, 2]), Rand((1, 2, 2, 2, 2))], attrs=_pool3d([2, 2, 2], [2, 2, 2], "SAME"))],
    "Conv3D": [Case([Rand((1, 3, 4, 4, 2)), Rand((2, 2, 2, 2, 3))], attrs=_conv3d([1, 2, 1], "SAME")),
               # (TensorFlow's Conv3D shape function swaps the H and W dilations: only D is dilated here.)
               Case([Rand((1, 2, 3, 4, 4)), Rand((2, 2, 2, 2, 2))], attrs=_conv3d([1, 1, 1], "VALID", "NCDHW",
                                                                                  dilations=(2, 1, 1)))],
    "Conv3DBackpropInputV2": [Case([i32([1, 3, 4, 4, 2]), Rand((2, 2, 2, 2, 3)), Rand((1, 3, 2, 4, 3))],
                                   attrs=_conv3d([1, 2, 1], "SAME"))],
    "Conv3DBackpropFilterV2": [Case([Rand((1, 3, 4, 4, 2)), i32([2, 2, 2, 2, 3]), Rand((1, 3, 2, 4, 3))],
                                    attrs=_conv3d([1, 2, 1], "SAME"))],
}

# QuantizeAndDequantize with 52 bits: steps of float64's precision, far below the finite-difference
# step, so the staircase is the identity (clamped for V4 with a given range); min and max are
# constants (TensorFlow gives them no or zero gradients). V2 and V3 pass the gradient straight
# through even where a given range clamps, and V4 masks with [input_min, input_max] even when
# the range comes from the data: those cases use a range holding every value.
BITS = {"num_bits": 52}
QDQ_X = Value([[-1.7, -0.6, 0.25, 0.9], [1.3, -0.05, 0.55, -1.2]])
QDQ_RANGE = [np.float64(-1.0), np.float64(1.0)]
WIDE_RANGE = [np.float64(-2.0), np.float64(2.0)]
QUANTIZE_DEQUANTIZE = {
    "QuantizeAndDequantizeV2": [Case([QDQ_X, *QDQ_RANGE], attrs=BITS),
                                Case([QDQ_X, *WIDE_RANGE], attrs={**BITS, "range_given": True}, label="given range")],
    "QuantizeAndDequantizeV3": [Case([QDQ_X, *WIDE_RANGE, i32(52)])],
    "QuantizeAndDequantizeV4": [Case([QDQ_X, *QDQ_RANGE], attrs={**BITS, "range_given": True}),
                                Case([QDQ_X, *WIDE_RANGE], attrs={**BITS, "round_mode": "HALF_UP"}, label="data range")],
}

# CTCLoss: the loss output only (TensorFlow ignores the gradient output's own gradient).
CTC_LABELS = [np.array([[0, 0], [0, 1], [0, 2], [1, 0]], np.int64), np.array([1, 1, 0, 2], np.int32)]
CTC = {
    "CTCLoss": [Case([Rand((5, 2, 4)), *CTC_LABELS, i32([5, 3])], outputs=(0,)),
                Case([Rand((5, 2, 4)), *CTC_LABELS, i32([4, 5])], outputs=(0,),
                     attrs={"ctc_merge_repeated": False, "preprocess_collapse_repeated": True}, label="collapsed")],
}


DILATION = {
    "Dilation2D": [Case([Rand((1, 4, 5, 2), distinct=True), Rand((2, 2, 2), distinct=True)],
                        attrs={"strides": [1, 1, 2, 1], "rates": [1, 1, 1, 1], "padding": "SAME"}),
                   Case([Rand((2, 5, 5, 1), distinct=True), Rand((2, 2, 1), distinct=True)],
                        attrs={"strides": [1, 1, 1, 1], "rates": [1, 2, 2, 1], "padding": "VALID"}, label="rates 2")],
}

CASES: dict[str, list[Case]] = {**SPACE, **FAKE_QUANT, **VOLUME, **QUANTIZE_DEQUANTIZE, **CTC, **DILATION}
