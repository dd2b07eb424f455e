"""Summary ops (TensorFlow's v1 `tf.compat.v1.summary.*`): each outputs a scalar string holding a
serialized `Summary` protocol buffer (schemas/summary.proto) that an event file records for
TensorBoard (graphtool/summary/event_log.py).

Signatures are TensorFlow's (core/ops/logging_ops.cc, summary_ops.cc); every shape function is
TensorFlow's ScalarShape. The values are computed by graphtool/exec/kernels/summary.py. None is
stateful or differentiable: a summary is a pure function of its inputs.
"""
from __future__ import annotations

import numpy as np

from .inference import scalar
from .registry import register

_REAL = "{float, double, int32, uint8, int16, int8, int64, bfloat16, uint16, half, uint32, uint64}"

register("ScalarSummary", inputs=["tags: string", "values: T"], outputs=["summary: string"],
         attrs=[f"T: {_REAL}"], shape=scalar)
register("HistogramSummary", inputs=["tag: string", "values: T"], outputs=["summary: string"],
         attrs=[f"T: {_REAL} = float32"], shape=scalar)
_image = register("ImageSummary", inputs=["tag: string", "tensor: T"], outputs=["summary: string"],
                  attrs=["max_images: int >= 1 = 3", "T: {uint8, float, half, double} = float32",
                         "bad_color: tensor"],
                  shape=scalar)
# TensorFlow's default: opaque red, {dtype: DT_UINT8 tensor_shape {dim {size: 4}} int_val: 255 0 0 255}.
# (The attr-spec syntax has no tensor literals, so the default is set here.)
_image.attrs["bad_color"].default = np.array([255, 0, 0, 255], dtype=np.uint8)
_image.attrs["bad_color"].has_default = True

register("AudioSummaryV2", inputs=["tag: string", "tensor: float", "sample_rate: float"],
         outputs=["summary: string"], attrs=["max_outputs: int >= 1 = 3"], shape=scalar)
register("AudioSummary", inputs=["tag: string", "tensor: float"], outputs=["summary: string"],
         attrs=["sample_rate: float", "max_outputs: int >= 1 = 3"], shape=scalar)
register("MergeSummary", inputs=["inputs: N * string"], outputs=["summary: string"],
         attrs=["N: int >= 1"], shape=scalar)
register("TensorSummaryV2", inputs=["tag: string", "tensor: T", "serialized_summary_metadata: string"],
         outputs=["summary: string"], attrs=["T: type"], shape=scalar)
register("TensorSummary", inputs=["tensor: T"], outputs=["summary: string"],
         attrs=["T: type", "description: string = ''", "labels: list(string) = []",
                "display_name: string = ''"],
         shape=scalar)

# The ops whose output is a serialized Summary (graphtool/summary finds the one to fetch).
SUMMARY_OPS = frozenset({"ScalarSummary", "HistogramSummary", "ImageSummary", "AudioSummaryV2",
                         "AudioSummary", "MergeSummary", "TensorSummaryV2", "TensorSummary"})
