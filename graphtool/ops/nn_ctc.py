"""Connectionist temporal classification ops (imported by nn.py, registered as family "nn"):
CTCLoss, CTCGreedyDecoder and CTCBeamSearchDecoder. Inputs are time-major logits
[max_time, batch, num_classes]; decoded label sequences come out as sparse tensors (indices
[n, 2], values [n], dense shape [2]), whose length the shape functions cannot know.
"""
from __future__ import annotations

from functools import partial

from ..shapes import Shape
from . import registry
from .inference import InferenceContext
from .nn_conv import merge_dim

register = partial(registry.register, family="nn")


def _logits_and_batch(ctx: InferenceContext) -> tuple[Shape, int | None]:
    logits = ctx.with_rank(0, 3)
    lengths = ctx.with_rank(ctx.num_inputs - 1, 1)
    return logits, merge_dim(ctx, logits[1], lengths[0])


def _ctc_loss_shapes(ctx: InferenceContext) -> list[Shape]:
    logits, batch = _logits_and_batch(ctx)
    indices, values = ctx.with_rank(1, 2), ctx.with_rank(2, 1)
    merge_dim(ctx, indices[0], values[0])
    merge_dim(ctx, indices[1], 2)
    return [Shape([batch]), Shape([logits[0], batch, logits[2]])]


def _sparse_result(count: int = 1) -> list[Shape]:
    return [Shape([None, 2])] * count + [Shape([None])] * count + [Shape([2])] * count


def _greedy_shapes(ctx: InferenceContext) -> list[Shape]:
    _, batch = _logits_and_batch(ctx)
    return [*_sparse_result(), Shape([batch, 1])]


def _beam_shapes(ctx: InferenceContext) -> list[Shape]:
    _, batch = _logits_and_batch(ctx)
    paths = ctx.attr("top_paths")
    return [*_sparse_result(paths), Shape([batch, paths])]


register("CTCLoss", inputs=["inputs: T", "labels_indices: int64", "labels_values: int32", "sequence_length: int32"],
         outputs=["loss: T", "gradient: T"],
         attrs=["preprocess_collapse_repeated: bool = false", "ctc_merge_repeated: bool = true",
                "ignore_longer_outputs_than_inputs: bool = false", "T: {float32, float64} = float32"],
         shape=_ctc_loss_shapes)
register("CTCGreedyDecoder", inputs=["inputs: T", "sequence_length: int32"],
         outputs=["decoded_indices: int64", "decoded_values: int64", "decoded_shape: int64", "log_probability: T"],
         attrs=["merge_repeated: bool = false", "blank_index: int = -1", "T: {float32, float64} = float32"],
         shape=_greedy_shapes)
register("CTCBeamSearchDecoder", inputs=["inputs: T", "sequence_length: int32"],
         outputs=["decoded_indices: top_paths * int64", "decoded_values: top_paths * int64",
                  "decoded_shape: top_paths * int64", "log_probability: T"],
         attrs=["beam_width: int >= 1", "top_paths: int >= 1", "merge_repeated: bool = true",
                "T: {float32, float64} = float32"],
         shape=_beam_shapes)
