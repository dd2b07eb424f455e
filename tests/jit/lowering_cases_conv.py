"""Cases for the convolutions and pooling: every padding kind, strides, dilations, both layouts."""
from __future__ import annotations

import numpy as np

from tests.jit.lowering_cases_math import F32, F64, I32, floats

CONV_RTOL = 1e-4


def conv_attrs(padding, strides=(1, 1), dilations=(1, 1), data_format="NHWC", explicit=None):
    four = (lambda v: [1, 1, *v]) if data_format == "NCHW" else (lambda v: [1, *v, 1])
    attrs = {"strides": four(strides), "dilations": four(dilations), "padding": padding,
             "data_format": data_format}
    if padding == "EXPLICIT":
        pairs = [(0, 0), (0, 0), *explicit] if data_format == "NCHW" else [(0, 0), *explicit, (0, 0)]
        attrs["explicit_paddings"] = [p for pair in pairs for p in pair]
    return attrs


def image(n, h, w, c, data_format="NHWC", dtype=F32):
    x = floats(n, h, w, c, dtype=dtype)
    return x.transpose(0, 3, 1, 2).copy() if data_format == "NCHW" else x


GEOMETRIES = [dict(padding="SAME"), dict(padding="VALID"), dict(padding="SAME", strides=(2, 2)),
              dict(padding="VALID", strides=(2, 3)), dict(padding="SAME", dilations=(2, 2)),
              dict(padding="VALID", dilations=(1, 2)),
              dict(padding="EXPLICIT", explicit=[(1, 2), (0, 3)]),
              dict(padding="EXPLICIT", strides=(2, 2), explicit=[(2, 0), (1, 1)])]

CASES = []
for data_format in ("NHWC", "NCHW"):
    for geometry in GEOMETRIES:
        attrs = conv_attrs(data_format=data_format, **geometry)
        depthwise_attrs = dict(attrs)
        CASES += [("Conv2D", [image(2, 7, 8, 3, data_format), floats(3, 2, 3, 4)], attrs, CONV_RTOL),
                  ("DepthwiseConv2dNative", [image(2, 7, 8, 3, data_format), floats(3, 3, 3, 1)],
                   depthwise_attrs, CONV_RTOL),
                  ("DepthwiseConv2dNative", [image(1, 6, 5, 4, data_format), floats(2, 3, 4, 2)],
                   depthwise_attrs, CONV_RTOL)]
CASES += [("Conv2D", [image(2, 6, 6, 4), floats(3, 3, 2, 6)], conv_attrs("SAME"), CONV_RTOL),    # 2 groups
          ("Conv2D", [image(1, 5, 5, 3, dtype=F64), floats(1, 1, 3, 5, dtype=F64)], conv_attrs("VALID")),
          ("Conv2D", [image(0, 5, 5, 3), floats(3, 3, 3, 2)], conv_attrs("SAME")),
          ("Conv2D", [image(1, 2, 2, 3), floats(3, 3, 3, 2)], conv_attrs("VALID")),   # empty output
          ("DepthwiseConv2dNative", [image(1, 2, 2, 3), floats(3, 3, 3, 1)], conv_attrs("VALID")),
          ("DepthwiseConv2dNative", [image(2, 9, 9, 5, dtype=F64), floats(5, 5, 5, 1, dtype=F64)],
           conv_attrs("SAME", strides=(2, 2), dilations=(1, 1)))]

# The backprops: the sizes of the forward input / filter are static inputs.
for data_format in ("NHWC", "NCHW"):
    for geometry in GEOMETRIES:
        attrs = conv_attrs(data_format=data_format, **geometry)
        n, h, w, c, kh, kw, o = 2, 7, 8, 3, 3, 2, 4
        strides, dilations = geometry.get("strides", (1, 1)), geometry.get("dilations", (1, 1))
        from graphtool.jit.lowerings.conv import window_geometry
        _, (oh, ow) = window_geometry([h, w], [kh, kw], strides, dilations, geometry["padding"],
                                      geometry.get("explicit"))
        in_sizes = [n, c, h, w] if data_format == "NCHW" else [n, h, w, c]
        CASES += [("Conv2DBackpropInput", [np.array(in_sizes, I32), floats(kh, kw, c, o),
                                           image(n, oh, ow, o, data_format)], attrs, CONV_RTOL),
                  ("Conv2DBackpropFilter", [image(n, h, w, c, data_format), np.array([kh, kw, c, o], I32),
                                            image(n, oh, ow, o, data_format)], attrs, CONV_RTOL)]
CASES += [("Conv2DBackpropInput", [np.array([2, 6, 6, 4], I32), floats(3, 3, 2, 6), floats(2, 3, 3, 6)],
           conv_attrs("SAME", strides=(2, 2)), CONV_RTOL),                                        # 2 groups
          ("Conv2DBackpropFilter", [image(2, 6, 6, 4), np.array([3, 3, 2, 6], I32), floats(2, 3, 3, 6)],
           conv_attrs("SAME", strides=(2, 2)), CONV_RTOL),
          ("Conv2DBackpropInput", [np.array([5, 5], I32), floats(3, 3, 3, 2, dtype=F64), floats(1, 3, 3, 2, dtype=F64)],
           conv_attrs("VALID")),
          ("Conv2DBackpropFilter", [image(0, 5, 5, 3), np.array([3, 3, 3, 2], I32), floats(0, 5, 5, 2)],
           conv_attrs("SAME"))]

POOL_GEOMETRIES = [("SAME", (2, 2), (2, 2)), ("VALID", (3, 3), (1, 1)), ("SAME", (3, 2), (2, 1)),
                   ("VALID", (2, 3), (3, 2))]
WITH_SPECIALS = floats(2, 5, 6, 3)
WITH_SPECIALS[0, 0, 0, 0], WITH_SPECIALS[0, 1, 1, 1], WITH_SPECIALS[1, 2, 2, 2] = np.nan, -np.inf, np.inf
WITH_SPECIALS[1, :2, :2, 0] = np.nan
for op in ("MaxPool", "AvgPool"):
    for data_format in ("NHWC", "NCHW"):
        for padding, ksize, strides in POOL_GEOMETRIES:
            four = (lambda v: [1, 1, *v]) if data_format == "NCHW" else (lambda v: [1, *v, 1])
            attrs = {"ksize": four(ksize), "strides": four(strides), "padding": padding, "data_format": data_format}
            x = WITH_SPECIALS.transpose(0, 3, 1, 2).copy() if data_format == "NCHW" else WITH_SPECIALS
            CASES += [(op, [x], attrs, CONV_RTOL), (op, [image(1, 7, 7, 2, data_format, F64)], attrs)]
    CASES.append((op, [image(0, 4, 4, 2)], {"ksize": [1, 2, 2, 1], "strides": [1, 2, 2, 1], "padding": "SAME"}))
CASES.append(("MaxPool", [np.full((1, 4, 4, 1), -np.inf, F32)],
              {"ksize": [1, 2, 2, 1], "strides": [1, 2, 2, 1], "padding": "VALID",
               "explicit_paddings": []}))
# A grouped Conv2D with one input channel per group (the depthwise path of the Conv2D lowering).
CASES += [("Conv2D", [image(2, 6, 7, 3), floats(3, 3, 1, 6)], conv_attrs("SAME", strides=(2, 1)), CONV_RTOL),
          ("Conv2D", [image(1, 6, 7, 4, "NCHW"), floats(2, 2, 1, 4)], conv_attrs("VALID", data_format="NCHW"),
           CONV_RTOL)]
# 1x1 filters at stride 1: the filter gradient as one matmul (padding still applies with EXPLICIT).
CASES += [("Conv2DBackpropFilter", [image(2, 5, 6, 3), np.array([1, 1, 3, 4], I32), floats(2, 5, 6, 4)],
           conv_attrs("SAME"), CONV_RTOL),
          ("Conv2DBackpropFilter", [image(2, 5, 6, 3, "NCHW"), np.array([1, 1, 3, 4], I32),
                                    image(2, 6, 6, 4, "NCHW")],
           conv_attrs("EXPLICIT", data_format="NCHW", explicit=[(1, 0), (0, 0)]), CONV_RTOL)]

# The remapper's fused ops: every fusion the interpreter implements, both layouts and filter formats.
for data_format in ("NHWC", "NCHW"):
    for fused_ops in (["BiasAdd"], ["BiasAdd", "Relu"], ["BiasAdd", "Relu6"], ["BiasAdd", "Elu"],
                      ["BiasAdd", "LeakyRelu"], ["FusedBatchNorm"], ["FusedBatchNorm", "Relu"]):
        args = ([floats(4)] if fused_ops[0] == "BiasAdd" else
                [floats(4), floats(4), floats(4), floats(4, low=0.1, high=2)])
        attrs = {**conv_attrs("SAME", strides=(2, 1), data_format=data_format), "fused_ops": fused_ops,
                 "num_args": len(args), "epsilon": 1e-3, "leakyrelu_alpha": 0.3,
                 "TArgs": [np.dtype(F32)] * len(args)}
        CASES.append(("_FusedConv2D", [image(2, 6, 7, 3, data_format), floats(3, 2, 3, 4), *args], attrs, CONV_RTOL))
CASES.append(("_FusedConv2D", [image(1, 5, 5, 3), floats(4, 3, 3, 3), floats(4)],
              {**conv_attrs("VALID"), "fused_ops": ["BiasAdd", "Relu"], "num_args": 1, "filter_format": "OIHW",
               "TArgs": [np.dtype(F32)]}, CONV_RTOL))
for fused_ops in (["BiasAdd"], ["BiasAdd", "Relu"], ["BiasAdd", "Tanh"], ["BiasAdd", "Sigmoid"],
                  ["BiasAdd", "LeakyRelu"], ["BiasAdd", "Elu"], ["BiasAdd", "Relu6"]):
    CASES.append(("_FusedMatMul", [floats(3, 4), floats(4, 5), floats(5)],
                  {"fused_ops": fused_ops, "num_args": 1, "transpose_a": False, "transpose_b": False}, CONV_RTOL))
CASES.append(("_FusedMatMul", [floats(4, 3), floats(5, 4), floats(5)],
              {"fused_ops": ["BiasAdd"], "num_args": 1, "transpose_a": True, "transpose_b": True}, CONV_RTOL))

for padding in ("SAME", "VALID"):
    for ksizes, strides, rates in (((2, 2), (1, 1), (1, 1)), ((3, 2), (2, 3), (1, 1)), ((2, 3), (1, 2), (2, 1))):
        attrs = {"ksizes": [1, *ksizes, 1], "strides": [1, *strides, 1], "rates": [1, *rates, 1], "padding": padding}
        CASES += [("ExtractImagePatches", [image(2, 7, 8, 3)], attrs),
                  ("ExtractImagePatches", [np.arange(2 * 5 * 5 * 2, dtype=np.int64).reshape(2, 5, 5, 2)], attrs)]
CASES.append(("ExtractImagePatches", [image(1, 2, 2, 3)],
              {"ksizes": [1, 3, 3, 1], "strides": [1, 1, 1, 1], "rates": [1, 1, 1, 1], "padding": "VALID"}))

RESIZE_MODES = [{"align_corners": False, "half_pixel_centers": False},
                {"align_corners": True, "half_pixel_centers": False},
                {"align_corners": False, "half_pixel_centers": True}]
for mode in RESIZE_MODES:
    for size in ((5, 9), (2, 3), (1, 1)):
        CASES += [("ResizeBilinear", [image(2, 4, 6, 3), np.array(size, I32)], mode),
                  ("ResizeNearestNeighbor", [image(2, 4, 6, 3), np.array(size, I32)], mode),
                  ("ResizeNearestNeighborGrad", [image(2, *size, 3), np.array((4, 6), I32)], mode, CONV_RTOL),
                  ("ResizeBilinearGrad", [image(2, *size, 3), image(2, 4, 6, 3)], mode, CONV_RTOL)]
    CASES.append(("ResizeBilinear", [image(1, 3, 3, 2, dtype=F64), np.array((7, 2), I32)], mode))

for data_format in ("NDHWC", "NCDHW"):
    five = (lambda v: [1, 1, *v]) if data_format == "NCDHW" else (lambda v: [1, *v, 1])
    x = floats(2, 5, 6, 4, 3)
    x = x.transpose(0, 4, 1, 2, 3).copy() if data_format == "NCDHW" else x
    for padding, strides, dilations in (("SAME", (1, 1, 1), (1, 1, 1)), ("VALID", (2, 1, 2), (1, 1, 1)),
                                        ("SAME", (1, 2, 1), (2, 1, 1))):
        CASES.append(("Conv3D", [x, floats(2, 3, 2, 3, 4)], {"strides": five(strides), "dilations": five(dilations),
                                                             "padding": padding, "data_format": data_format},
                      CONV_RTOL))
