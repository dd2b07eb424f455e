"""Collective ops: every member of a group (one op per device) contributes a tensor and gets a
result computed from all of them, as TensorFlow's CollectiveReduce/Gather/Bcast/AllToAll.

A group is named by `group_key` and has `group_size` members on distinct devices; `instance_key`
names one collective among the group's (the members of one instance must agree on op, shape and
dtype). v1 ops carry the three keys as attrs; v2 ops take them as scalar int32 inputs, plus
optional `ordering_token` resource inputs that only order them (TensorFlow's automatic control
dependencies). The executor runs them itself over the step's rendezvous (exec/collective/), so
they have no kernels; they wait for their peers, so they are asynchronous.

Ranks follow the group's devices in canonical order (task, then device type and index), as
TensorFlow's parameter resolver sorts them: a gather concatenates the members' inputs in rank
order, and an all-to-all sends the k-th block of dim 0 to rank k.
"""
from __future__ import annotations

from ..shapes import Shape, has_rank
from .inference import InferenceContext, unchanged
from .registry import register

_REDUCE_TYPES = "T: {bfloat16, float, half, double, int32, int64}"
_GATHER_TYPES = "T: {float, half, double, int32, int64}"
_BCAST_TYPES = "T: {bool, float, half, double, int32, int64}"
_GROUP_ATTRS = ["group_size: int", "group_key: int", "instance_key: int"]
_TUNING_ATTRS = ["communication_hint: string = 'auto'", "timeout_seconds: float = 0"]
_MERGE_ATTRS = ["merge_op: {'Min', 'Max', 'Mul', 'Add'}", "final_op: {'Id', 'Div'}"]
_KEY_INPUTS = ["group_size: int32", "group_key: int32", "instance_key: int32"]
_ORDERED = ["ordering_token: Nordering_token * resource"]
_V2_ATTRS = [*_TUNING_ATTRS, "is_stateless: bool = false", "Nordering_token: int >= 0 = 0"]



def _declared_shape(ctx: InferenceContext) -> Shape:
    # v1 broadcasts take their output shape from the attr (TensorFlow does not check
    # the input against it; the executor does).
    return ctx.attr("shape")


def _group_size(ctx: InferenceContext) -> int | None:
    value = ctx.value(1)
    return int(value) if value is not None and value.ndim == 0 else None


def _gathered(ctx: InferenceContext) -> Shape:
    """Dim 0 grows group_size times (unknown when the size is not a constant)."""
    shape = ctx.with_rank_at_least(0, 1)
    if not has_rank(shape):
        return shape
    size, first = _group_size(ctx), shape.dims[0]
    return Shape([first * size if size is not None and first is not None else None, *shape.dims[1:]])


def _gathered_v1(ctx: InferenceContext) -> Shape:
    """The input's shape with dim 0 multiplied by the group_size attr (TensorFlow's graphs carry
    a rank-1 placeholder in the `shape` attr, so it is not used)."""
    shape = ctx.with_rank_at_least(0, 1)
    if not has_rank(shape):
        return shape
    first = shape.dims[0]
    return Shape([first * ctx.attr("group_size") if first is not None else None, *shape.dims[1:]])


def _scattered(ctx: InferenceContext) -> Shape:
    """Dim 0 shrinks group_size times (a reduce-scatter)."""
    shape = ctx.with_rank_at_least(0, 1)
    if not has_rank(shape):
        return shape
    size, first = _group_size(ctx), shape.dims[0]
    if size is not None and first is not None and size > 0:
        if first % size:
            ctx.fail(f"dim 0 ({first}) is not divisible by the group size {size}")
        first = first // size
    elif size is not None:
        first = None
    return Shape([first, *shape.dims[1:]])


def _received(ctx: InferenceContext) -> Shape:
    return ctx.shape_from_tensor(3)


# --- v1: group and instance as attrs ----------------------------------------------------------------

register("CollectiveReduce", inputs=["input: T"], outputs=["data: T"],
         attrs=[_REDUCE_TYPES, *_GROUP_ATTRS, *_MERGE_ATTRS, "subdiv_offsets: list(int)",
                "wait_for: list(int) = []", *_TUNING_ATTRS],
         shape=unchanged, stateful=True, is_async=True)
register("CollectiveGather", inputs=["input: T"], outputs=["data: T"],
         attrs=[_GATHER_TYPES, *_GROUP_ATTRS, "shape: shape", *_TUNING_ATTRS],
         shape=_gathered_v1, stateful=True, is_async=True)
register("CollectiveBcastSend", inputs=["input: T"], outputs=["data: T"],
         attrs=[_BCAST_TYPES, *_GROUP_ATTRS, "shape: shape", *_TUNING_ATTRS],
         shape=_declared_shape, stateful=True, is_async=True)
register("CollectiveBcastRecv", outputs=["data: T"],
         attrs=[_BCAST_TYPES, *_GROUP_ATTRS, "shape: shape", *_TUNING_ATTRS],
         shape=_declared_shape, stateful=True, is_async=True)

# --- v2: group and instance as inputs ---------------------------------------------------------------

register("CollectiveReduceV2", inputs=["input: T", *_KEY_INPUTS, *_ORDERED], outputs=["data: T"],
         attrs=[_REDUCE_TYPES, *_MERGE_ATTRS, *_V2_ATTRS, "max_subdivs_per_device: int = -1"],
         shape=unchanged, stateful=True, is_async=True)
register("CollectiveReduceScatterV2", inputs=["input: T", *_KEY_INPUTS, *_ORDERED], outputs=["data: T"],
         attrs=[_REDUCE_TYPES, *_MERGE_ATTRS, *_V2_ATTRS, "max_subdivs_per_device: int = -1"],
         shape=_scattered, stateful=True, is_async=True)
register("CollectiveGatherV2", inputs=["input: T", *_KEY_INPUTS, *_ORDERED], outputs=["data: T"],
         attrs=[_GATHER_TYPES, *_V2_ATTRS], shape=_gathered, stateful=True, is_async=True)
register("CollectiveAllToAllV2", inputs=["input: T", *_KEY_INPUTS, *_ORDERED], outputs=["data: T"],
         attrs=[_REDUCE_TYPES, *_V2_ATTRS], shape=unchanged, stateful=True, is_async=True)
register("CollectiveBcastSendV2", inputs=["input: T", *_KEY_INPUTS], outputs=["data: T"],
         attrs=[_BCAST_TYPES, *_TUNING_ATTRS], shape=unchanged, stateful=True, is_async=True)
register("CollectiveBcastRecvV2", inputs=[*_KEY_INPUTS, "shape: Tshape"], outputs=["data: T"],
         attrs=[_BCAST_TYPES, "Tshape: {int32, int64} = DT_INT32", *_TUNING_ATTRS],
         shape=_received, stateful=True, is_async=True)
