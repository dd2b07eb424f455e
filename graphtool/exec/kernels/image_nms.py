"""NonMaxSuppression (V1 to V5): greedy selection of boxes by score (non_max_suppression_op.cc).

Candidates above score_threshold are visited best first (ties: lower box index first). A
candidate is compared with the boxes selected since it was last looked at, newest first: in hard
mode an IoU above iou_threshold drops it; in soft mode (V5 with soft_nms_sigma > 0) each overlap
scales its score by exp(-0.5 * iou^2 / sigma), and a candidate whose score changed goes back into
the queue while it stays above the threshold. The arithmetic is in the score type T (float16 or
float32), IoU in float32, as TensorFlow's kernel does. This is host work on small inputs.
"""
from __future__ import annotations

import heapq

import numpy as np

from .nn_common import shape_text
from .registry import CPU, kernel


def _scalar(ctx, value, name: str, dtype):
    array = np.asarray(value)
    if array.ndim != 0:
        ctx.fail(f"{name} must be 0-D, got shape {shape_text(array.shape)}")
    return dtype(array.item())


class _Boxes:
    """Corners and areas in float32, with TensorFlow's conventions: corners may come in either
    order and a box without area overlaps nothing."""

    def __init__(self, boxes):
        b = np.asarray(boxes, np.float32)
        self.y_min, self.y_max = np.minimum(b[:, 0], b[:, 2]), np.maximum(b[:, 0], b[:, 2])
        self.x_min, self.x_max = np.minimum(b[:, 1], b[:, 3]), np.maximum(b[:, 1], b[:, 3])
        self.area = (self.y_max - self.y_min) * (self.x_max - self.x_min)

    def iou(self, i: int, others: np.ndarray) -> np.ndarray:
        """float32 IoU of box i with each box in `others` (computed per pair, so memory stays
        linear in the number of boxes)."""
        zero = np.float32(0)
        top, bottom = np.maximum(self.y_min[i], self.y_min[others]), np.minimum(self.y_max[i], self.y_max[others])
        left, right = np.maximum(self.x_min[i], self.x_min[others]), np.minimum(self.x_max[i], self.x_max[others])
        height, width = np.maximum(bottom - top, zero), np.maximum(right - left, zero)
        intersection = height * width
        with np.errstate(divide="ignore", invalid="ignore"):
            iou = intersection / (self.area[i] + self.area[others] - intersection)
        return np.where((self.area[i] <= 0) | (self.area[others] <= 0), zero, iou).astype(np.float32)


def _select(ctx, boxes, scores, max_output_size, iou_threshold, score_threshold, soft_nms_sigma, dtype):
    """(selected indices, their final scores) in selection order."""
    output_size = _scalar(ctx, max_output_size, "max_output_size", int)
    if output_size < 0:
        ctx.fail("output size must be non-negative")
    iou_threshold = _scalar(ctx, iou_threshold, "iou_threshold", dtype)
    if not 0 <= iou_threshold <= 1:
        ctx.fail("iou_threshold must be in [0, 1]")
    score_threshold = _scalar(ctx, score_threshold, "score_threshold", dtype)
    boxes, scores = np.asarray(boxes), np.asarray(scores)
    if boxes.ndim != 2 or boxes.shape[1] != 4:
        ctx.fail(f"boxes must be 2-D [num_boxes, 4], got shape {shape_text(boxes.shape)}")
    if scores.ndim != 1 or scores.shape[0] != boxes.shape[0]:
        ctx.fail(f"scores has incompatible shape {shape_text(scores.shape)} for {boxes.shape[0]} boxes")
    soft = soft_nms_sigma > 0
    scale = dtype(-0.5) / soft_nms_sigma if soft else dtype(0)
    geometry = _Boxes(boxes)
    # heapq is a min-heap: order by (-score, index) so ties pick the lower index.
    queue = [(-dtype(s), i, 0) for i, s in enumerate(scores.astype(dtype)) if s > score_threshold]
    heapq.heapify(queue)
    selected, selected_scores = [], []
    while len(selected) < output_size and queue:
        negative, index, checked_from = heapq.heappop(queue)
        original = score = dtype(-negative)
        newest_first = np.asarray(selected[checked_from:][::-1], np.int64)
        if newest_first.size:
            similarity = geometry.iou(index, newest_first).astype(dtype)
            if not soft:
                if (similarity > iou_threshold).any():
                    continue        # hard suppression; below the threshold the weight is exp(0) = 1
            else:
                # The score is scaled by one weight per selected box, newest first, rounding in
                # the score type each time, and stops once it drops to the threshold.
                weights = np.exp(scale * similarity * similarity).astype(dtype)
                running = np.multiply.accumulate(np.concatenate([[score], weights]).astype(dtype))[1:]
                dropped = np.flatnonzero(running <= score_threshold)
                score = dtype(running[dropped[0]] if dropped.size else running[-1])
        if score == original:
            selected.append(index)
            selected_scores.append(score)
        elif score > score_threshold:
            heapq.heappush(queue, (-score, index, len(selected)))
    return selected, selected_scores


def _padded(values, length: int, pad: bool, dtype):
    array = np.asarray(values, dtype).reshape(-1)
    if pad and array.size < length:
        array = np.concatenate([array, np.zeros(length - array.size, dtype)])
    return array


def _score_type(scores):
    return np.float16 if np.asarray(scores).dtype == np.float16 else np.float32


@kernel("NonMaxSuppression", devices=(CPU,))
def non_max_suppression(ctx, boxes, scores, max_output_size, *, iou_threshold):
    selected, _ = _select(ctx, boxes, scores, max_output_size, np.float32(iou_threshold),
                          np.finfo(np.float32).min, np.float32(0), np.float32)
    return np.asarray(selected, np.int32)


@kernel("NonMaxSuppressionV2", devices=(CPU,))
def non_max_suppression_v2(ctx, boxes, scores, max_output_size, iou_threshold):
    dtype = _score_type(scores)
    selected, _ = _select(ctx, boxes, scores, max_output_size, iou_threshold, np.finfo(dtype).min, dtype(0), dtype)
    return np.asarray(selected, np.int32)


@kernel("NonMaxSuppressionV3", devices=(CPU,))
def non_max_suppression_v3(ctx, boxes, scores, max_output_size, iou_threshold, score_threshold):
    dtype = _score_type(scores)
    selected, _ = _select(ctx, boxes, scores, max_output_size, iou_threshold, score_threshold, dtype(0), dtype)
    return np.asarray(selected, np.int32)


@kernel("NonMaxSuppressionV4", devices=(CPU,))
def non_max_suppression_v4(ctx, boxes, scores, max_output_size, iou_threshold, score_threshold, *,
                           pad_to_max_output_size):
    dtype = _score_type(scores)
    selected, _ = _select(ctx, boxes, scores, max_output_size, iou_threshold, score_threshold, dtype(0), dtype)
    length = int(np.asarray(max_output_size))
    return (_padded(selected, length, pad_to_max_output_size, np.int32), np.int32(len(selected)))


@kernel("NonMaxSuppressionV5", devices=(CPU,))
def non_max_suppression_v5(ctx, boxes, scores, max_output_size, iou_threshold, score_threshold,
                           soft_nms_sigma, *, pad_to_max_output_size):
    dtype = _score_type(scores)
    sigma = _scalar(ctx, soft_nms_sigma, "soft_nms_sigma", dtype)
    if sigma < 0:
        ctx.fail("soft_nms_sigma_val must be >= 0")
    selected, chosen_scores = _select(ctx, boxes, scores, max_output_size, iou_threshold, score_threshold,
                                      sigma, dtype)
    length = int(np.asarray(max_output_size))
    return (_padded(selected, length, pad_to_max_output_size, np.int32),
            _padded(chosen_scores, length, pad_to_max_output_size, ctx.out_dtype(1)),
            np.int32(len(selected)))


@kernel("CombinedNonMaxSuppression", devices=(CPU,))
def combined_non_max_suppression(ctx, boxes, scores, max_output_size_per_class, max_total_size, iou_threshold,
                                 score_threshold, *, pad_per_class, clip_boxes):
    """Hard NMS per batch entry and class (boxes shared by the classes when q is 1), then the best
    max_total_size of all classes by score, boxes clipped to [0, 1] unless clip_boxes is off,
    zero-padded."""
    boxes, scores = np.asarray(boxes, np.float32), np.asarray(scores, np.float32)
    if boxes.ndim != 4 or scores.ndim != 3:
        ctx.fail(f"boxes must be 4-D and scores 3-D, got {shape_text(boxes.shape)} and {shape_text(scores.shape)}")
    batch, num_boxes, q, _ = boxes.shape
    num_classes = scores.shape[2]
    if q not in (1, num_classes) or boxes.shape[3] != 4 or scores.shape[:2] != boxes.shape[:2]:
        ctx.fail(f"boxes {shape_text(boxes.shape)} and scores {shape_text(scores.shape)} are incompatible")
    per_class = _scalar(ctx, max_output_size_per_class, "max_size_per_class", int)
    total = _scalar(ctx, max_total_size, "max_total_size", int)
    if per_class <= 0 or total <= 0:
        ctx.fail("max_size_per_class and max_total_size must be positive")
    iou = _scalar(ctx, iou_threshold, "iou_threshold", np.float32)
    threshold = _scalar(ctx, score_threshold, "score_threshold", np.float32)
    if not 0 <= iou <= 1:
        ctx.fail("iou_threshold must be in [0, 1]")
    size = min(total, per_class * num_classes) if pad_per_class else total
    out_boxes, out_scores = np.zeros((batch, size, 4), np.float32), np.zeros((batch, size), np.float32)
    out_classes, valid = np.zeros((batch, size), np.float32), np.zeros(batch, np.int32)
    for n in range(batch):
        found = []   # (score, class, box), class by class in selection order
        for c in range(num_classes):
            class_boxes = boxes[n, :, c if q > 1 else 0]
            chosen, chosen_scores = _select(ctx, class_boxes, scores[n, :, c], np.int32(min(per_class, num_boxes)),
                                            iou, threshold, np.float32(0), np.float32)
            found += [(s, c, class_boxes[i]) for i, s in zip(chosen, chosen_scores)]
        found.sort(key=lambda entry: -entry[0])     # stable: ties keep class order
        count = min(len(found), size)
        valid[n] = count
        for k, (score, c, box) in enumerate(found[:count]):
            out_boxes[n, k] = np.clip(box, 0, 1) if clip_boxes else box
            out_scores[n, k], out_classes[n, k] = score, c
    return out_boxes, out_scores, out_classes, valid
