"""Ops of the math, array and nn families that deliberately have no gradient, with the reason.

They are neither registered nor declared not differentiable: their outputs can carry a
gradient in principle, so reaching one on a path from y to x is an error (the driver names the
op and node, and can quote the reason from here). The registry-coverage test requires every op
of the registry to be registered, declared not differentiable, listed here, or output-less.
"""
from __future__ import annotations

_NO_POLYGAMMA = "needs the trigamma function (Polygamma), which the op registry lacks"
_SECOND_ORDER_BN = ("the gradient of the batch-norm backward kernel (TensorFlow composes it from "
                    "primitive ops) is not implemented")
_FUSED = ("a fusion made by `dftool optimize` (grappler's remapper); differentiate the graph before "
          "optimizing it")

_LOWERED_FIRST = ("functional control flow and calls are lowered to v1 control flow and inlined "
                  "before differentiation (`dftool grad` and graphtool.functions.lowering do it)")

NO_GRADIENT: dict[str, str] = {
    **{op: _LOWERED_FIRST for op in ("If", "StatelessIf", "While", "StatelessWhile", "Case", "StatelessCase",
                                     "PartitionedCall", "StatefulPartitionedCall", "SymbolicGradient")},
    "RFFT3D": "TensorFlow defines no gradient for RFFT3D",
    "IRFFT3D": "TensorFlow defines no gradient for IRFFT3D",
    "Digamma": _NO_POLYGAMMA,
    **{op: "second derivative of Dilation2D: not implemented (TensorFlow has none either)"
       for op in ("Dilation2DBackpropInput", "Dilation2DBackpropFilter")},
    "QuantizeV2": "its output is a quantized integer type, which carries no gradient",
    "Dequantize": "its input is a quantized integer type, which carries no gradient",
    "MaxPool3DGrad": "second derivative of MaxPool3D (TensorFlow's MaxPool3DGradGrad) is not implemented",
    "FusedBatchNormGrad": _SECOND_ORDER_BN, "FusedBatchNormGradV2": _SECOND_ORDER_BN,
    "FusedBatchNormGradV3": _SECOND_ORDER_BN,
    "LRNGrad": "second derivative of LRN: TensorFlow has none either",
    **{op: "gradient kernel of fake quantization: TensorFlow defines no gradient for it"
       for op in ("FakeQuantWithMinMaxArgsGradient", "FakeQuantWithMinMaxVarsGradient",
                  "FakeQuantWithMinMaxVarsPerChannelGradient", "QuantizeAndDequantizeV4Grad")},
    "_FusedMatMul": _FUSED, "_FusedConv2D": _FUSED,
    "_JitCluster": "made by the JIT in a compiled plan, after any gradient was taken (differentiate the graph)",
    "Bitcast": "reinterprets bits: not a differentiable function of its input",
    "Unique": "TensorFlow defines no gradient for the Unique family",
    "UniqueV2": "TensorFlow defines no gradient for the Unique family",
    "UniqueWithCounts": "TensorFlow defines no gradient for the Unique family",
    "UniqueWithCountsV2": "TensorFlow defines no gradient for the Unique family",
    "ListDiff": "TensorFlow defines no gradient for ListDiff (set difference)",
    **{f"SparseSegment{kind}Grad{v2}": "a gradient kernel: TensorFlow defines no gradient for it"
       for kind in ("Sum", "Mean", "SqrtN") for v2 in ("", "V2")},
    "SparseFillEmptyRowsGrad": "a gradient kernel: TensorFlow defines no gradient for it",
    "Bincount": "TensorFlow defines no gradient for Bincount (counting)",
    "DenseBincount": "TensorFlow defines no gradient for DenseBincount (counting)",
    "PreventGradient": "exists to make differentiating through it an error",
    "_Arg": "function-call plumbing: graphs with functions are not differentiated",
    "_Recv": "inserted by `dftool partition`, after differentiation",
    "_HostRecv": "inserted by `dftool partition`, after differentiation",
    # TensorFlow registers no gradient for its collectives either; replicate averages gradients
    # with them, after differentiation.
    **{op: "collectives are not differentiated (TensorFlow registers no gradient for them)" for op in (
        "CollectiveReduce", "CollectiveGather", "CollectiveBcastSend", "CollectiveBcastRecv", "CollectiveReduceV2",
        "CollectiveReduceScatterV2", "CollectiveGatherV2", "CollectiveAllToAllV2", "CollectiveBcastSendV2",
        "CollectiveBcastRecvV2")},
    "_FedOutputs": "stands in for fed values in a run's pruned copy, which is never differentiated",
    **{op: "TensorFlow registers no gradient for it" for op in (
        "ResizeArea", "AdjustContrastv2", "AdjustSaturation", "AdjustHue", "HSVToRGB")},
    **{op: "second derivative of an image op: TensorFlow has none either" for op in (
        "CropAndResizeGradImage", "CropAndResizeGradBoxes", "ResizeBicubicGrad")},
}


def no_gradient_reason(op: str) -> str | None:
    """Why `op` has no gradient, or None when it is not one of the documented exceptions."""
    return NO_GRADIENT.get(op)
