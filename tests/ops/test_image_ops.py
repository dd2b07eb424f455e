"""The image family beyond what its TensorFlow fixtures compare: shape inference on partial shapes
(expectations checked against TensorFlow 2.21's shape functions), kernel errors naming the node,
JPEG decoding exactness, and the codecs without Pillow."""
from __future__ import annotations

import builtins
import json
from pathlib import Path

import numpy as np
import pytest

from graphtool import dtypes, graph_io
from graphtool.builder import GraphBuilder
from graphtool.errors import RuntimeFailure
from graphtool.exec.session import Session
from graphtool.ir import from_graphdef
from tests.ops.test_nn_ops import NODE, build, const, output_shapes, ph

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "tf"
F32, I32 = dtypes.float32, dtypes.int32
SCALAR_F32 = ph([])

SHAPE_CASES = [
    ("crop_and_resize", "CropAndResize", [ph([2, 8, 9, 3]), ph([None, 4]), ph([5], I32), const([3, 4])], {},
     [[5, 3, 4, 3]]),
    ("crop_and_resize_unknown_size", "CropAndResize", [ph(None), ph([7, 4]), ph([None], I32), ph([2], I32)],
     {}, [[7, None, None, None]]),
    ("crop_grad_image", "CropAndResizeGradImage", [ph([5, 3, 4, 3]), ph([5, 4]), ph([5], I32),
                                                   const([2, 8, 9, 3])], {"T": F32}, [[2, 8, 9, 3]]),
    ("crop_grad_image_unknown", "CropAndResizeGradImage", [ph([5, 3, 4, 3]), ph([5, 4]), ph([5], I32),
                                                           ph([4], I32)], {"T": F32}, [[None] * 4]),
    ("crop_grad_boxes", "CropAndResizeGradBoxes", [ph([5, 3, 4, 3]), ph([2, 8, 9, 3]), ph([None, 4]),
                                                   ph([5], I32)], {}, [[None, 4]]),
    ("nms_v3", "NonMaxSuppressionV3", [ph([6, 4]), ph([6]), const(3), SCALAR_F32, SCALAR_F32], {}, [[None]]),
    ("nms_v4_padded", "NonMaxSuppressionV4", [ph([None, 4]), ph([None]), const(3), SCALAR_F32, SCALAR_F32],
     {"pad_to_max_output_size": True}, [[3], []]),
    ("nms_v4", "NonMaxSuppressionV4", [ph([None, 4]), ph([None]), const(3), SCALAR_F32, SCALAR_F32], {},
     [[None], []]),
    ("nms_v5_padded", "NonMaxSuppressionV5", [ph([6, 4]), ph([6]), const(4), SCALAR_F32, SCALAR_F32,
                                              SCALAR_F32], {"pad_to_max_output_size": True}, [[4], [4], []]),
    ("combined_nms", "CombinedNonMaxSuppression", [ph([2, None, 1, 4]), ph([None, 7, 3]), const(4), const(10),
                                                   SCALAR_F32, SCALAR_F32], {}, [[2, 10, 4], [2, 10], [2, 10], [2]]),
    ("combined_nms_pad_per_class", "CombinedNonMaxSuppression",
     [ph([2, None, 1, 4]), ph([None, 7, 3]), const(2), const(10), SCALAR_F32, SCALAR_F32], {"pad_per_class": True},
     [[2, 6, 4], [2, 6], [2, 6], [2]]),
    ("combined_nms_unknown_total", "CombinedNonMaxSuppression",
     [ph([2, None, 1, 4]), ph([None, 7, 3]), const(2), ph([], I32), SCALAR_F32, SCALAR_F32], {},
     [[2, None, 4], [2, None], [2, None], [2]]),
    ("bicubic", "ResizeBicubic", [ph([1, 8, 8, 3]), const([4, 5])], {}, [[1, 4, 5, 3]]),
    ("bicubic_grad", "ResizeBicubicGrad", [ph([2, 9, 9, 6]), ph([2, None, 3, 6])], {}, [[2, None, 3, 6]]),
    ("area", "ResizeArea", [ph([None, 8, 8, 3]), ph([2], I32)], {}, [[None, None, None, 3]]),
    ("patches_same", "ExtractImagePatches", [ph([2, 7, 9, 3])],
     {"ksizes": [1, 3, 2, 1], "strides": [1, 2, 3, 1], "rates": [1, 1, 2, 1], "padding": "SAME"}, [[2, 4, 3, 18]]),
    ("patches_valid", "ExtractImagePatches", [ph([2, 7, None, 3])],
     {"ksizes": [1, 3, 2, 1], "strides": [1, 2, 3, 1], "rates": [1, 2, 1, 1], "padding": "VALID"},
     [[2, None, None, 18]]),
    ("rgb_to_hsv", "RGBToHSV", [ph([None, 5, None])], {}, [[None, 5, 3]]),
    ("adjust_hue", "AdjustHue", [ph([2, None, 4, 3]), SCALAR_F32], {}, [[2, None, 4, 3]]),
    ("decode_png", "DecodePng", [ph([], dtypes.string)], {"channels": 3}, [[None, None, 3]]),
    ("decode_jpeg_any", "DecodeJpeg", [ph([], dtypes.string)], {}, [[None, None, None]]),
    ("encode_png", "EncodePng", [ph([4, 5, 3], dtypes.uint8)], {"T": dtypes.uint8}, [[]]),
]


@pytest.mark.parametrize("op, inputs, attrs, expected", [pytest.param(*case[1:], id=case[0]) for case in SHAPE_CASES])
def test_inferred_shapes_match_tensorflow(op, inputs, attrs, expected):
    shapes, error = output_shapes(build(op, inputs, attrs))
    assert error is None, error
    assert [s.as_list() for s in shapes] == expected


@pytest.mark.parametrize("op, inputs, attrs, message", [
    ("CropAndResize", [ph([2, 8, 9, 3]), ph([5, 3]), ph([5], I32), const([3, 4])], {}, "4"),
    ("CropAndResize", [ph([2, 8, 9, 3]), ph([5, 4]), ph([4], I32), const([3, 4])], {}, "5 and 4"),
    ("NonMaxSuppressionV3", [ph([6, 4]), ph([5]), const(3), SCALAR_F32, SCALAR_F32], {}, "6 and 5"),
    ("RGBToHSV", [ph([2, 4])], {}, "4 and 3"),
    ("ExtractImagePatches", [ph([2, 7, 9, 3])],
     {"ksizes": [2, 3, 2, 1], "strides": [1, 1, 1, 1], "rates": [1, 1, 1, 1], "padding": "SAME"}, "rows and cols"),
])
def test_inconsistent_inputs_record_an_error(op, inputs, attrs, message):
    _, error = output_shapes(build(op, inputs, attrs))
    assert error is not None and message in str(error)


def _run_one(op: str, inputs, attrs=None):
    b = GraphBuilder()
    b.op(op, [b.const(v) for v in inputs], name=NODE, **(attrs or {}))
    return Session(b.graph, threads=1).run([f"{NODE}:0"]).values[0]


IMAGE = np.zeros((2, 4, 4, 1), np.float32)
BOXES = np.array([[0, 0, 1, 1]], np.float32)


@pytest.mark.parametrize("op, inputs, message", [
    ("CropAndResize", [IMAGE, BOXES, np.array([2], np.int32), np.array([2, 2], np.int32)], "box_index"),
    ("CropAndResize", [IMAGE, BOXES, np.array([0], np.int32), np.array([0, 2], np.int32)], "crop dimensions"),
    ("NonMaxSuppressionV3", [BOXES, np.ones(1, np.float32), np.int32(1), np.float32(1.5), np.float32(0)],
     "iou_threshold must be in [0, 1]"),
    ("NonMaxSuppressionV3", [BOXES, np.ones(1, np.float32), np.int32(-1), np.float32(0.5), np.float32(0)],
     "non-negative"),
    ("NonMaxSuppressionV5", [BOXES, np.ones(1, np.float32), np.int32(1), np.float32(0.5), np.float32(0),
                             np.float32(-1)], "soft_nms_sigma"),
    ("DecodePng", [np.array(b"not a png", dtype=object)], "Invalid PNG data"),
    ("DecodeJpeg", [np.array(b"\x89PNG\r\n\x1a\n", dtype=object)], "JPEG"),
])
def test_bad_values_fail_naming_the_node(op, inputs, message):
    with pytest.raises(RuntimeFailure) as info:
        _run_one(op, inputs)
    assert NODE in str(info.value) and message in str(info.value)


def test_codecs_without_pillow_say_how_to_install_it(monkeypatch):
    real_import = builtins.__import__

    def no_pillow(name, *args, **kwargs):
        if name == "PIL" or name.startswith("PIL."):
            raise ImportError("no Pillow here")
        return real_import(name, *args, **kwargs)
    monkeypatch.setattr(builtins, "__import__", no_pillow)
    with pytest.raises(RuntimeFailure, match=r"dftool\[image\]"):
        _run_one("EncodePng", [np.zeros((2, 2, 3), np.uint8)])


def test_png_round_trip_is_lossless():
    pixels = np.random.default_rng(0).integers(0, 256, (5, 6, 4)).astype(np.uint8)
    b = GraphBuilder()
    encoded = b.op("EncodePng", [b.const(pixels)], name="encode", compression=9)
    b.op("DecodePng", [encoded], name="decode")
    decoded = Session(b.graph, threads=1).run(["decode:0"]).values[0]
    np.testing.assert_array_equal(decoded, pixels)


# Colour JPEGs decoded with TensorFlow's defaults (fast IDCT and fancy upsampling) are the only
# ones Pillow cannot reproduce exactly.
_APPROXIMATE_JPEG = {"decoded_rgb_c0:0", "decoded_rgb_c3:0", "decoded_rgb_ratio2:0"}


def test_jpeg_decoding_is_exact_where_the_idct_allows_and_close_elsewhere():
    case = FIXTURES / "op_image_jpeg"
    spec = json.loads((case / "case.json").read_text())
    graph = from_graphdef(graph_io.load_graphdef(str(case / "graph.pb")), "jpeg")
    values = Session(graph, threads=1).run(spec["fetches"], dict(np.load(case / "feeds.npz"))).values
    expected = np.load(case / "expected.npz")
    for name, value in zip(spec["fetches"], values):
        difference = np.abs(value - expected[name])
        if name in _APPROXIMATE_JPEG:
            assert difference.max() <= 3 and difference.mean() < 1.5, name
        else:
            assert difference.max() == 0, name
