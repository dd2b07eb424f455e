"""Fold batch norms written as per-channel arithmetic into the contraction before them.

    before: Conv2D(x, w) -> Mul(., s) -> AddV2(., b) -> Relu6       (s, b: per-channel constants)
    after:  Conv2D(x, w * s) -> BiasAdd(., b) -> Relu6

Two rules, shared by `optimize`'s remapper and `dftool transform fold_batch_norms`:

- FoldScale: Conv2D / DepthwiseConv2dNative / MatMul with a constant filter, read only by a Mul by
  a constant that scales each output channel (shape [], [C], [1,1,1,C] ... along the channel axis
  of the data format): the scale is multiplied into a new filter and the Mul goes. Rounds
  differently from running the Mul (not under strict_fp).
- AddToBias: such a contraction read only by Add/AddV2 of (or Sub of) a per-channel constant:
  the Add becomes a BiasAdd in the contraction's layout (exact), which the remapper then fuses
  with the contraction (and an activation) into one kernel.

Keras leaves exactly this chain in a frozen graph once its Rsqrt/Mul/Sub constants are folded.
A rule declines (leaving the graph untouched) when the contraction or the arithmetic node is
fetched or kept, has other users, sits on another device or inside a loop frame, or when the
constant does not broadcast per channel. `constant` says what counts as a constant: the remapper
accepts Consts (seen through Identity), the transform also evaluates constant subgraphs.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from .. import dtypes
from ..ir import Graph, Node, TensorRef
from .base import PassContext, Rule

CONTRACTIONS = frozenset({"Conv2D", "DepthwiseConv2dNative", "MatMul"})
_FLOAT_TYPES = frozenset({dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64})
_ADDS = frozenset({"Add", "AddV2", "Sub"})

ConstantOf = Callable[[TensorRef], "np.ndarray | None"]


def plain_constant(budget: int) -> ConstantOf:
    """A Const's value seen through Identity nodes, or None. Nodes with control inputs do not
    count (a folded copy would lose the ordering they impose), nor does a filled Const that
    would expand beyond `budget` bytes."""
    from .base import const_value_within

    def value(ref: TensorRef) -> np.ndarray | None:
        node = ref.node
        while node.op == "Identity" and not node.control_inputs:
            node = node.inputs[0].node
        if node.op != "Const" or node.control_inputs:
            return None
        return const_value_within(node, budget)

    return value


def channel_axis(contraction: Node) -> int:
    """The axis of the output that holds the channels (rank 4 for convolutions, 2 for MatMul)."""
    if contraction.op == "MatMul":
        return 1
    return 1 if contraction.attr("data_format") == "NCHW" else 3


def output_rank(contraction: Node) -> int:
    return 2 if contraction.op == "MatMul" else 4


def output_channels(contraction: Node, filt: np.ndarray) -> int | None:
    """How many output channels a filter of this shape makes, or None for a malformed filter."""
    if contraction.op == "MatMul":
        if filt.ndim != 2:
            return None
        return filt.shape[0] if contraction.attr("transpose_b") else filt.shape[1]
    if filt.ndim != 4:
        return None
    return filt.shape[2] * filt.shape[3] if contraction.op == "DepthwiseConv2dNative" else filt.shape[3]


def per_channel(value: np.ndarray, rank: int, axis: int, channels: int) -> np.ndarray | None:
    """`value` as a vector of `channels` when broadcasting it against an output of `rank` dims
    varies it only along `axis` (and does not grow the output), else None."""
    if value.ndim > rank:
        return None
    shape = (1,) * (rank - value.ndim) + value.shape
    if any(size != 1 for i, size in enumerate(shape) if i != axis) or shape[axis] not in (1, channels):
        return None
    return np.broadcast_to(value.reshape(shape[axis]), (channels,))


def scaled_filter(contraction: Node, filt: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """The filter whose outputs are the original outputs times `scale` (per output channel),
    computed in float64 and rounded once to the filter's dtype."""
    wide = filt.astype(np.float64)
    scale = scale.astype(np.float64)
    if contraction.op == "MatMul":
        wide = wide * (scale[:, None] if contraction.attr("transpose_b") else scale[None, :])
    elif contraction.op == "DepthwiseConv2dNative":
        wide = wide * scale.reshape(filt.shape[2], filt.shape[3])  # channel c = i * multiplier + m
    else:
        wide = wide * scale
    return wide.astype(filt.dtype)


class _Site:
    """Where a rule may act: the contraction and the one node reading it."""

    def __init__(self, graph: Graph, ctx: PassContext, constant: ConstantOf, ops: frozenset[str]):
        self.frame_of = graph.frames().frame_of
        self.ctx, self.constant, self.ops = ctx, constant, ops

    def contraction(self, node: Node) -> bool:
        return (node.op in self.ops and node.attr("T") in _FLOAT_TYPES and self.ctx.can_rewrite(node)
                and self.frame_of.get(node) is not None and self.frame_of[node].is_root)

    def sole_reader(self, node: Node, ops: frozenset[str]) -> Node | None:
        uses = node.uses()
        if len(uses) != 1 or node.control_uses or self.ctx.is_protected(node):
            return None
        reader = uses[0][0]
        if reader.op not in ops or not self.ctx.can_rewrite(reader) or reader.device != node.device:
            return None
        return reader if self.frame_of.get(reader) is self.frame_of[node] else None

    def other_operand(self, reader: Node, node: Node) -> tuple[int, TensorRef] | None:
        """(slot, ref) of the reader's operand that is not `node`'s output 0."""
        if len(reader.inputs) != 2:
            return None
        slots = [i for i, ref in enumerate(reader.inputs) if ref == node.output(0)]
        if len(slots) != 1:
            return None
        other = 1 - slots[0]
        return other, reader.inputs[other]


def _new_const(graph: Graph, near: Node, what: str, value: np.ndarray, dtype, pass_name: str) -> Node:
    return graph.add_node("Const", PassContext.new_name(graph, near, pass_name, what), device=near.device,
                          attrs={"dtype": dtype, "value": value.astype(dtype.numpy, copy=False)})


def _free_constant(node: Node) -> bool:
    """A Const, or an Identity chain down to one, with no control inputs anywhere: never dead and
    ready as the step starts, so a control edge from it orders nothing."""
    while node.op == "Identity" and not node.control_inputs:
        node = node.inputs[0].node
    return node.op == "Const" and not node.control_inputs


def drop_dead(graph: Graph, ctx: PassContext, nodes: list[Node]) -> None:
    """Remove producers a fold left without users, and theirs in turn (pure nodes only). A
    constant that only control edges still reach (a frozen Keras graph hangs its variable reads on
    the output's NoOp) goes too, with those edges: they ordered nothing."""
    stack = list(dict.fromkeys(nodes))
    while stack:
        node = stack.pop()
        if graph.get(node.name) is not node or node.uses() or not ctx.can_rewrite(node):
            continue
        if node.control_uses:
            if not _free_constant(node):
                continue
            for user in node.control_uses:
                user.remove_control_input(node)
        producers = list(dict.fromkeys(node.input_nodes()))
        graph.remove_node(node)
        stack.extend(producers)


class _PerChannelOperand(Rule):
    """The shared match of the folding rules: a contraction with constant weights whose only
    reader is one of `readers`, whose other operand is a per-channel constant; `_match` gives
    (reader, the weights, the operand as a vector over the output channels) or None."""

    readers: frozenset[str] = frozenset()

    def __init__(self, site: _Site, pass_name: str):
        self.site, self.pass_name = site, pass_name

    def _enabled(self) -> bool:
        return True

    def _accepts(self, reader: Node, operand: tuple[int, TensorRef]) -> bool:
        return True

    def _match(self, node: Node):
        site = self.site
        if not self._enabled() or not site.contraction(node):
            return None
        reader = site.sole_reader(node, self.readers)
        operand = None if reader is None else site.other_operand(reader, node)
        if reader is None or operand is None or not self._accepts(reader, operand):
            return None
        filt = site.constant(node.inputs[1])
        value = site.constant(operand[1])
        if filt is None or value is None:
            return None
        channels = output_channels(node, filt)
        vector = None if channels is None else per_channel(value, output_rank(node), channel_axis(node), channels)
        return None if vector is None else (reader, filt, vector)

    def applies(self, node: Node, ctx: PassContext) -> bool:
        return self._match(node) is not None


class FoldScale(_PerChannelOperand):
    """contraction(x, w) -> Mul(., s)  =>  contraction(x, w * s)."""

    name = "scales_folded"
    readers = frozenset({"Mul"})

    def _enabled(self) -> bool:
        return not self.site.ctx.strict_fp     # w * s rounds differently from (x . w) * s

    def rewrite(self, node: Node, graph: Graph, ctx: PassContext) -> bool:
        mul, filt, vector = self._match(node)
        old_filter = node.inputs[1].node
        const = _new_const(graph, node, "filter", scaled_filter(node, filt, vector), node.attr("T"), self.pass_name)
        node.set_input(1, const.output(0))
        dropped = [ref.node for ref in mul.inputs if ref.node is not node]
        for control in mul.control_inputs:
            node.add_control_input(control)
        graph.replace_all_uses_with(mul.output(0), node.output(0))
        graph.move_control_uses(mul, node)
        graph.remove_node(mul)
        drop_dead(graph, ctx, [old_filter, *dropped])
        return True


class AddToBias(_PerChannelOperand):
    """contraction -> Add/AddV2(., b) or Sub(., b), b per channel  =>  contraction -> BiasAdd(., ±b)."""

    name = "adds_to_bias"
    readers = _ADDS

    def _accepts(self, reader: Node, operand: tuple[int, TensorRef]) -> bool:
        return reader.op != "Sub" or operand[0] == 1       # only x - b, not b - x

    def rewrite(self, node: Node, graph: Graph, ctx: PassContext) -> bool:
        add, _, vector = self._match(node)
        dtype = node.attr("T")
        vector = (-vector if add.op == "Sub" else vector).astype(dtype.numpy)  # x - b == x + (-b) exactly
        const = _new_const(graph, add, "bias", np.ascontiguousarray(vector), dtype, self.pass_name)
        layout = "NCHW" if node.op != "MatMul" and node.attr("data_format") == "NCHW" else "NHWC"
        bias_add = graph.add_node("BiasAdd", PassContext.new_name(graph, add, self.pass_name),
                                  inputs=[node.output(0), const.output(0)], control_inputs=add.control_inputs,
                                  attrs={"T": dtype, "data_format": layout}, device=add.device)
        dropped = [ref.node for ref in add.inputs if ref.node is not node]
        graph.replace_all_uses_with(add.output(0), bias_add.output(0))
        graph.move_control_uses(add, bias_add)
        name = add.name
        graph.remove_node(add)
        graph.rename(bias_add, name)
        drop_dead(graph, ctx, dropped)
        return True


def folding_rules(graph: Graph, ctx: PassContext, constant: ConstantOf, pass_name: str,
                  ops: frozenset[str] = CONTRACTIONS) -> list[Rule]:
    """The two rules for contractions of `ops`, seeing constants through `constant`."""
    site = _Site(graph, ctx, constant, ops)
    return [FoldScale(site, pass_name), AddToBias(site, pass_name)]
