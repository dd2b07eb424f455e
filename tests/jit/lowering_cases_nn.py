"""Cases for the nn family's activations, bias, softmax, losses and batch normalization."""
from __future__ import annotations

import numpy as np

from tests.jit.lowering_cases_math import F32, F64, SPECIAL, floats, ints

KINKS = np.array([np.nan, -np.inf, -7.0, -1.0, -0.0, 0.0, 1e-3, 3.0, 6.0, 6.5, 40.0, -40.0, 100.0, -100.0], F32)

CASES = []
for op in ("Relu", "Relu6", "Elu", "Selu", "Softplus", "Softsign"):
    CASES += [(op, [KINKS], {}), (op, [floats(3, 4, low=-8, high=8)], {}),
              (op, [floats(2, 5, dtype=F64, low=-8, high=8)], {}), (op, [floats(0, 3)], {})]
for op in ("Relu", "Relu6"):
    CASES += [(op, [ints(3, 4)], {})]
CASES += [("LeakyRelu", [KINKS], {"alpha": 0.2}), ("LeakyRelu", [floats(3, 4, dtype=F64)], {"alpha": 1.5})]
for op in ("ReluGrad", "Relu6Grad", "SoftplusGrad", "SoftsignGrad", "EluGrad", "SeluGrad"):
    CASES += [(op, [floats(KINKS.size), KINKS], {}),
              (op, [SPECIAL, np.array([0, 6, -1, 3, 7, 0.5, -0.5, 2, 6, 0, 1, -3], F32)], {}),
              (op, [floats(2, 3, dtype=F64), floats(2, 3, dtype=F64)], {})]
CASES += [("ReluGrad", [ints(2, 3), ints(2, 3)], {}),
          ("LeakyReluGrad", [floats(KINKS.size), KINKS], {"alpha": 0.3})]

for data_format, shape in (("NHWC", (2, 3, 4, 5)), ("NCHW", (2, 5, 3, 4))):
    CASES += [("BiasAdd", [floats(*shape), floats(5)], {"data_format": data_format}),
              ("BiasAddGrad", [floats(*shape)], {"data_format": data_format}, 1e-4)]
CASES += [("BiasAdd", [floats(3, 4, dtype=F64), floats(4, dtype=F64)], {"data_format": "NHWC"}),
          ("BiasAdd", [ints(3, 4), ints(4)], {"data_format": "NHWC"}),
          ("BiasAddV1", [floats(3, 4), floats(4)], {}),
          ("BiasAddGrad", [ints(3, 4)], {"data_format": "NHWC"}),
          ("BiasAddGrad", [floats(0, 4)], {"data_format": "NHWC"})]

for op in ("Softmax", "LogSoftmax"):
    CASES += [(op, [floats(3, 5, low=-50, high=50)], {}), (op, [floats(2, 3, 4, dtype=F64)], {}),
              (op, [floats(7)], {}), (op, [floats(0, 4)], {}),
              (op, [np.array([[1, np.inf, 2], [np.nan, 0, 1]], F32)], {})]
CASES += [("SoftmaxCrossEntropyWithLogits", [floats(4, 5), floats(4, 5, low=0, high=1)], {}),
          ("SoftmaxCrossEntropyWithLogits", [floats(4, 5, dtype=F64), floats(1, 5, dtype=F64, low=0, high=1)], {}),
          ("SoftmaxCrossEntropyWithLogits", [floats(0, 5), floats(0, 5)], {}),
          ("L2Loss", [floats(3, 4)], {}, 1e-4), ("L2Loss", [floats(0, dtype=F64)], {})]

for op in ("FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3"):
    for data_format, shape in (("NHWC", (2, 3, 4, 5)), ("NCHW", (2, 5, 3, 4))):
        vectors = [floats(5), floats(5), floats(5), floats(5, low=0.1, high=2)]
        attrs = {"data_format": data_format, "epsilon": 1e-3}
        if op != "FusedBatchNorm":
            attrs["U"] = np.dtype(F32)
        CASES += [(op, [floats(*shape), *vectors], {**attrs, "is_training": False}, 1e-4),
                  (op, [floats(*shape), *vectors], {**attrs, "is_training": True}, 1e-4),
                  (op, [floats(*shape), *vectors], {**attrs, "is_training": True,
                                                    "exponential_avg_factor": 0.25}, 1e-4)]
    CASES.append((op, [floats(0, 2, 2, 5), *[floats(5) for _ in range(4)]],
                  {"is_training": True, **({"U": np.dtype(F32)} if op != "FusedBatchNorm" else {})}))

