"""Finite-difference cases for graphtool/grad/nn*.py: op -> list of Case."""
from __future__ import annotations

import numpy as np

from graphtool.builder import GraphBuilder
from graphtool.exec.session import Session
from tests.grad.fd_harness import Case, Rand


def i32(value):
    return np.array(value, np.int32)


def activation(**extra) -> list[Case]:
    # Values kept 0.1 away from 0 (and from 6, Relu6's other kink).
    return [Case([Rand((2, 3), 0.1, 2.0, signed=True)], **extra),
            Case([Rand((2, 3), 5.6, 6.5)], **extra, label="around 6")]


def kernel_grad(**extra) -> list[Case]:
    """(dy, saved value) backward kernels, the value away from the kinks."""
    return [Case([Rand((2, 3)), Rand((2, 3), 0.1, 2.0, signed=True)], **extra)]


ACTIVATIONS = {
    "Relu": activation(),
    "Relu6": activation(),
    "Elu": activation(),
    "Selu": activation(),
    "LeakyRelu": activation(attrs={"alpha": 0.3}),
    "Softplus": activation(),
    "Softsign": activation(),
    "ReluGrad": kernel_grad(),
    "Relu6Grad": [Case([Rand((2, 3)), Rand((2, 3), 0.1, 2.0, signed=True)]),
                  Case([Rand((2, 3)), Rand((2, 3), 5.6, 6.5)], label="around 6")],
    "LeakyReluGrad": kernel_grad(attrs={"alpha": 0.2}),
    # EluGrad and SeluGrad take the forward *output*, which is > -1 (Elu) or > -1.76 (Selu).
    "EluGrad": [Case([Rand((2, 3)), Rand((2, 3), -0.9, 2.0)])],
    "SeluGrad": [Case([Rand((2, 3)), Rand((2, 3), -1.6, 2.0)])],
    "SoftplusGrad": kernel_grad(),
    "SoftsignGrad": kernel_grad(),
    "Softmax": [Case([Rand((2, 4))]), Case([Rand((4,))])],
    "LogSoftmax": [Case([Rand((2, 4))]), Case([Rand((2, 2, 3))])],
    "SoftmaxCrossEntropyWithLogits": [
        Case([Rand((2, 4)), Rand((2, 4), 0.0, 1.0)], outputs=(0,), label="loss only"),
        Case([Rand((2, 3)), Rand((2, 3), 0.0, 1.0)], label="loss and backprop"),
        Case([Rand((3, 3)), Rand((1, 3), 0.0, 1.0)], outputs=(1,), label="backprop only, broadcast labels"),
    ],
    "SparseSoftmaxCrossEntropyWithLogits": [
        Case([Rand((3, 4)), np.array([1, 0, 3], np.int64)], outputs=(0,), label="loss only"),
        Case([Rand((2, 3)), i32([2, 2])], label="loss and backprop"),
    ],
    "L2Loss": [Case([Rand((2, 3))])],
    "BiasAdd": [Case([Rand((2, 3)), Rand((3,))]),
                Case([Rand((2, 3, 2, 2)), Rand((3,))], attrs={"data_format": "NCHW"})],
    "BiasAddV1": [Case([Rand((2, 2, 3)), Rand((3,))])],
    "BiasAddGrad": [Case([Rand((2, 2, 3))]), Case([Rand((2, 3, 2))], attrs={"data_format": "NCHW"})],
}


def conv_attrs(strides=1, padding="SAME", data_format="NHWC", dilations=1) -> dict:
    def spatial(value):
        return [1, 1, value, value] if data_format == "NCHW" else [1, value, value, 1]
    return {"strides": spatial(strides), "padding": padding, "data_format": data_format,
            "dilations": spatial(dilations)}


CONV_CONFIGS = [
    ((1, 4, 4, 2), (3, 3, 2, 2), conv_attrs(1, "SAME")),
    ((1, 5, 5, 1), (2, 2, 1, 2), conv_attrs(2, "VALID")),
    ((2, 2, 4, 4), (2, 2, 2, 1), conv_attrs(1, "SAME", "NCHW")),
]
DEPTHWISE_CONFIGS = [
    ((1, 4, 4, 2), (3, 3, 2, 2), conv_attrs(1, "SAME")),
    ((1, 5, 5, 2), (2, 2, 2, 1), conv_attrs(2, "VALID")),
]


def _out_shape(image, kernel, attrs, depthwise=False):
    """The convolution's output shape (for building the backprop kernels' dy)."""
    nchw = attrs["data_format"] == "NCHW"
    n, c, h, w = (image[0], image[1], image[2], image[3]) if nchw else (image[0], image[3], image[1], image[2])
    stride = attrs["strides"][2]
    kh, kw = kernel[0], kernel[1]
    if attrs["padding"] == "SAME":
        oh, ow = -(-h // stride), -(-w // stride)
    else:
        oh, ow = (h - kh) // stride + 1, (w - kw) // stride + 1
    out_c = kernel[2] * kernel[3] if depthwise else kernel[3]
    return (n, out_c, oh, ow) if nchw else (n, oh, ow, out_c)


def convolution_cases(forward: str, configs, depthwise=False) -> dict[str, list[Case]]:
    extra = {"use_cudnn_on_gpu": True} if forward == "Conv2D" else {}
    backprop_input = f"{forward}BackpropInput"
    backprop_filter = f"{forward}BackpropFilter"
    cases = {forward: [], backprop_input: [], backprop_filter: []}
    for image, kernel, attrs in configs:
        attrs = {**attrs, **extra}
        out = _out_shape(image, kernel, attrs, depthwise)
        cases[forward].append(Case([Rand(image), Rand(kernel)], attrs=attrs))
        cases[backprop_input].append(Case([i32(image), Rand(kernel), Rand(out)], attrs=attrs))
        cases[backprop_filter].append(Case([Rand(image), i32(kernel), Rand(out)], attrs=attrs))
    return cases


def pool_attrs(ksize=2, strides=2, padding="VALID", data_format="NHWC") -> dict:
    def spatial(value):
        return [1, 1, value, value] if data_format == "NCHW" else [1, value, value, 1]
    return {"ksize": spatial(ksize), "strides": spatial(strides), "padding": padding, "data_format": data_format}


POOL_CONFIGS = [
    ((1, 4, 4, 2), pool_attrs(2, 2, "VALID")),
    ((1, 5, 5, 1), pool_attrs(3, 2, "SAME")),
    ((1, 2, 4, 4), pool_attrs(2, 1, "VALID", "NCHW")),
]
POOL_OUT = [(1, 2, 2, 2), (1, 3, 3, 1), (1, 2, 3, 3)]


def _pool_cases() -> dict[str, list[Case]]:
    cases = {name: [] for name in ("MaxPool", "MaxPoolV2", "MaxPoolGrad", "MaxPoolGradV2", "AvgPool",
                                   "AvgPoolGrad", "MaxPoolWithArgmax")}
    rng = np.random.default_rng(7)
    for (image, attrs), out in zip(POOL_CONFIGS, POOL_OUT):
        v2_attrs = {"padding": attrs["padding"], "data_format": attrs["data_format"]}
        windows = [i32(attrs["ksize"]), i32(attrs["strides"])]
        cases["MaxPool"].append(Case([Rand(image, distinct=True)], attrs=attrs))
        cases["MaxPoolV2"].append(Case([Rand(image, distinct=True), *windows], attrs=v2_attrs))
        cases["AvgPool"].append(Case([Rand(image)], attrs=attrs))
        cases["AvgPoolGrad"].append(Case([i32(image), Rand(out)], attrs=attrs))
        # MaxPoolGrad is differentiated in dy only: orig_input/orig_output just choose positions.
        distinct = rng.permutation(np.prod(image)).reshape(image).astype(np.float64) / 10
        cases["MaxPoolGrad"].append(Case([distinct, _max_pool(distinct, attrs), Rand(out)], attrs=attrs))
        cases["MaxPoolGradV2"].append(Case([distinct, _max_pool(distinct, attrs), Rand(out), *windows],
                                           attrs=v2_attrs))
    cases["MaxPoolWithArgmax"] = [
        Case([Rand((2, 4, 4, 1), distinct=True)], attrs={"ksize": [1, 2, 2, 1], "strides": [1, 2, 2, 1],
                                                        "padding": "VALID"}, label="batch offsets"),
        Case([Rand((1, 3, 3, 2), distinct=True)], attrs={"ksize": [1, 2, 2, 1], "strides": [1, 1, 1, 1],
                                                        "padding": "SAME", "include_batch_in_index": True}),
    ]
    return cases


def _max_pool(image: np.ndarray, attrs: dict) -> np.ndarray:
    """The MaxPool output of `image` (computed by graphtool itself, as the forward op would)."""
    b = GraphBuilder()
    y = b.op("MaxPool", [b.const(image)], **attrs)
    return Session(b.graph, threads=1).run([y.name]).values[0]


F32 = {"dtype": "float32"}


def _batch_norm_cases() -> dict[str, list[Case]]:
    """FusedBatchNorm* are float32 only (see fd_harness for the looser tolerance)."""
    cases = {}
    for op in ("FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3"):
        mean, variance = np.array([0.1, -0.2], np.float32), np.array([0.8, 1.3], np.float32)
        cases[op] = [
            Case([Rand((2, 2, 2, 2)), Rand((2,), 0.5, 1.5), Rand((2,)), np.zeros(0, np.float32),
                  np.zeros(0, np.float32)], attrs={"is_training": True, "epsilon": 0.001}, outputs=(0,),
                 label="training", **F32),
            Case([Rand((2, 2, 3, 2)), Rand((2,), 0.5, 1.5), Rand((2,)), mean, variance],
                 attrs={"is_training": False}, outputs=(0,), label="inference", **F32),
            Case([Rand((2, 2, 2, 2)), Rand((2,), 0.5, 1.5), Rand((2,)), np.zeros(0, np.float32),
                  np.zeros(0, np.float32)], attrs={"is_training": True, "data_format": "NCHW"}, outputs=(0,),
                 label="training NCHW", **F32),
        ]
    return cases


NORMALIZATION = {
    **_batch_norm_cases(),
    "LRN": [Case([Rand((1, 2, 2, 4), 0.1, 1.0, signed=True)], attrs={"depth_radius": 1, "bias": 1.0,
                                                                      "alpha": 0.5, "beta": 0.75}, **F32),
            Case([Rand((1, 1, 2, 3))], attrs={"depth_radius": 2}, **F32)],
}

# Resizing outputs float32 (bilinear) whatever the input type: a linear map, checked with a
# larger step than float64 would need.
F32_OUTPUT = {"tolerance": {"eps": 1e-3, "rtol": 1e-3, "atol": 1e-3}}

RESIZE = {
    "ResizeBilinear": [Case([Rand((1, 2, 3, 1)), i32([3, 5])], **F32_OUTPUT),
                       Case([Rand((1, 4, 4, 2)), i32([3, 2])], attrs={"half_pixel_centers": True}, **F32_OUTPUT),
                       Case([Rand((1, 3, 3, 1)), i32([5, 4])], attrs={"align_corners": True}, **F32_OUTPUT)],
    "ResizeBilinearGrad": [Case([Rand((1, 3, 5, 1)), np.zeros((1, 2, 3, 1))], **F32),
                           Case([Rand((1, 2, 2, 2)), np.zeros((1, 3, 4, 2))], attrs={"align_corners": True},
                                **F32)],
    "ResizeNearestNeighbor": [Case([Rand((1, 2, 3, 1)), i32([4, 5])]),
                              Case([Rand((1, 4, 4, 2)), i32([3, 2])], attrs={"half_pixel_centers": True})],
    "ResizeNearestNeighborGrad": [Case([Rand((1, 4, 5, 1)), i32([2, 3])]),
                                  Case([Rand((1, 3, 2, 2)), i32([4, 4])], attrs={"align_corners": True})],
}

CASES: dict[str, list[Case]] = {
    **ACTIVATIONS,
    **convolution_cases("Conv2D", CONV_CONFIGS),
    **convolution_cases("DepthwiseConv2dNative", DEPTHWISE_CONFIGS, depthwise=True),
    **_pool_cases(),
    **NORMALIZATION,
    **RESIZE,
}
