"""remapper: fuse a contraction with the ops after it into one kernel (TensorFlow Grappler's remapper).

    before: Conv2D(x, w) -> BiasAdd(., b) -> Relu 'act'
    after:  _FusedConv2D(x, w, b, fused_ops=[BiasAdd, Relu]) 'act'

    before: Conv2D(x, w) -> FusedBatchNormV3(., scale, offset, mean, var; is_training=false) 'bn'
    after:  _FusedConv2D(x, w * s, offset - mean * s, fused_ops=[BiasAdd]) 'bn'   s = scale / sqrt(var + eps)

    before: MatMul(a, b) -> BiasAdd(., bias) -> Tanh 'out'
    after:  _FusedMatMul(a, b, bias, fused_ops=[BiasAdd, Tanh]) 'out'

    before: Conv2D(x, w) -> Mul(., s) -> AddV2(., b)       (s, b per-channel Consts: a frozen Keras batch norm)
    after:  Conv2D(x, w * s) -> BiasAdd(., b), fused as above in the next iteration
            (graphtool/opt/batch_norm_folding.py; also for DepthwiseConv2dNative, which keeps its BiasAdd)

Patterns: Conv2D or MatMul, then BiasAdd (or for Conv2D an inference-mode FusedBatchNorm), then
optionally one activation the fused kernel implements (graphtool/exec/kernels/nn_fused.py, after
TensorFlow's CPU kernels). The fused node takes the NAME of the last node it replaces, so fetches of
the pattern's result keep working; the nodes before it must have no other user (data or control)
and be neither fetched nor kept, and every node of a pattern shares one device and one frame.

Folding a batch norm into the filter rounds differently from running it, so under strict_fp (or
when its operands are not constants, or inside a loop frame) the batch norm is fused unfolded
(fused_ops=[FusedBatchNorm, ...]), which computes exactly what the separate kernels compute.
Sigmoid is fused only outside strict_fp: the fused kernel's formula differs in the last bits.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import dtypes
from ..ir import Graph, Node, TensorRef
from .batch_norm_folding import CONTRACTIONS, folding_rules, plain_constant
from .base import (Pass, PassContext, PassResult, Rule, apply_rules, const_value_within, redirect_outputs,
                   register_pass)

_BIAS_ADDS = frozenset({"BiasAdd", "BiasAddV1"})
_BATCH_NORMS = frozenset({"FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3"})
# The dtypes TensorFlow's CPU fused kernels are registered for (so the output also runs there).
_CONV_TYPES = frozenset({dtypes.float32, dtypes.float64})
_MATMUL_TYPES = frozenset({dtypes.float32})
# The activations each fused kernel implements after its BiasAdd or batch norm (TensorFlow's CPU
# kernels; ours: graphtool/exec/kernels/nn_fused.py, which a test keeps these in step with).
CONV_ACTIVATIONS = ("Relu", "Relu6", "Elu", "LeakyRelu")
MATMUL_ACTIVATIONS = CONV_ACTIVATIONS + ("Tanh", "Sigmoid")
# The fused kernel computes these differently from the op's own kernel (not bit-exact).
_INEXACT_ACTIVATIONS = frozenset({"Sigmoid"})
# Attrs the fused ops take over from the contraction as they are.
_CONV_ATTRS = ("T", "strides", "padding", "explicit_paddings", "data_format", "dilations", "use_cudnn_on_gpu")
_MATMUL_ATTRS = ("T", "transpose_a", "transpose_b")


@dataclass
class Fusion:
    """A matched pattern: contraction -> first (BiasAdd or batch norm) -> optional activation."""

    contraction: Node
    first: Node
    activation: Node | None

    @property
    def nodes(self) -> list[Node]:
        return [n for n in (self.contraction, self.first, self.activation) if n is not None]

    @property
    def last(self) -> Node:
        return self.activation or self.first

    def fused_ops(self, first_op: str) -> list[str]:
        return [first_op] + ([self.activation.op] if self.activation is not None else [])

    def leakyrelu_alpha(self) -> float:
        if self.activation is not None and self.activation.op == "LeakyRelu":
            return self.activation.attr("alpha")
        return 0.2


class _Matcher:
    """Finds patterns starting at a contraction, with the conditions every rule shares."""

    def __init__(self, graph: Graph, ctx: PassContext):
        self.ctx = ctx
        self.frame_of = graph.frames().frame_of

    def in_loop(self, node: Node) -> bool:
        return not self.frame_of[node].is_root

    def sole_consumer(self, node: Node) -> Node | None:
        """The one node reading `node`'s output 0 (as its input 0), when `node` is an intermediate
        result the pattern may swallow: one data use, no control use, not fetched or kept, and the
        consumer on the same device and in the same frame."""
        uses = node.uses()
        if len(uses) != 1 or node.control_uses or self.ctx.is_protected(node):
            return None
        consumer, slot = uses[0]
        if slot != 0 or consumer.inputs[0].index != 0:
            return None
        # .get: nodes fused earlier in this sweep are not in the map (and never match)
        if consumer.device != node.device or self.frame_of.get(consumer) is not self.frame_of[node]:
            return None
        return consumer

    def activation_after(self, node: Node, allowed: tuple[str, ...]) -> Node | None:
        """The activation `node` feeds alone, if the fused kernel implements it here."""
        consumer = self.sole_consumer(node)
        if consumer is None or consumer.op not in allowed:
            return None
        if self.ctx.strict_fp and consumer.op in _INEXACT_ACTIVATIONS:
            return None
        return consumer if consumer.attr("T") == node.attr("T") else None

    def bias_fusion(self, contraction: Node, allowed: tuple[str, ...]) -> Fusion | None:
        """contraction -> BiasAdd in the contraction's layout (-> activation)."""
        bias = self.sole_consumer(contraction)
        if bias is None or bias.op not in _BIAS_ADDS or bias.attr("T") != contraction.attr("T"):
            return None
        if _channels_format(bias) != _channels_format(contraction):
            return None
        return Fusion(contraction, bias, self.activation_after(bias, allowed))

    def needs_statistics(self, bn: Node) -> bool:
        """Are outputs other than y used, fetched, or kept (a kept node keeps all its outputs)?
        The fused node has only y."""
        if bn.name in self.ctx.keep or any(consumer.inputs[slot].index for consumer, slot in bn.uses()):
            return True
        return any(ref.node.name == bn.name and ref.index for ref in self.ctx.fetches)

    def batch_norm_fusion(self, conv: Node) -> Fusion | None:
        """Conv2D -> FusedBatchNorm* in inference mode, only its output y used (-> activation)."""
        bn = self.sole_consumer(conv)
        if bn is None or bn.op not in _BATCH_NORMS or bn.attr("is_training") or self.needs_statistics(bn):
            return None
        if bn.attr("data_format") != conv.attr("data_format") or bn.attr("T") != conv.attr("T"):
            return None
        if _statistics_type(bn) != dtypes.float32:
            return None
        return Fusion(conv, bn, self.activation_after(bn, CONV_ACTIVATIONS))


def _channels_format(node: Node) -> str:
    """Where a node keeps its channels: MatMul and BiasAddV1 always last."""
    if node.op in ("MatMul", "BiasAddV1"):
        return "NHWC"
    return node.attr("data_format")


def _statistics_type(bn: Node):
    """The dtype of scale, offset, mean and variance (U; FusedBatchNorm V1 has only T)."""
    return bn.attr("U") if bn.op != "FusedBatchNorm" else bn.attr("T")


class _FusionRule(Rule):
    """A rule that replaces a matched Fusion by one fused node (what every pattern shares)."""

    def __init__(self, matcher: _Matcher):
        self.matcher = matcher

    def match(self, node: Node) -> Fusion | None:  # pragma: no cover - interface
        raise NotImplementedError

    def applies(self, node: Node, ctx: PassContext) -> bool:
        return self.match(node) is not None

    def fusable_conv(self, node: Node) -> bool:
        return node.op == "Conv2D" and node.attr("T") in _CONV_TYPES and self.matcher.ctx.can_rewrite(node)

    @staticmethod
    def replace(graph: Graph, ctx: PassContext, fusion: Fusion, op: str, inputs: list[TensorRef],
                attrs: dict) -> Node:
        """Put one `op` node in place of the fusion's nodes. It takes the last node's name (so
        fetches keep working), every control input of the nodes it replaces, the contraction's
        attrs that `op` shares with it, and `attrs`."""
        last, contraction = fusion.last, fusion.contraction
        controls = {c: None for n in fusion.nodes for c in n.control_inputs}
        fused = graph.add_node(op, ctx.new_name(graph, last, "remapper"), inputs=inputs,
                               control_inputs=list(controls), device=last.device)
        shared = _CONV_ATTRS if contraction.op == "Conv2D" else _MATMUL_ATTRS
        for name in shared:
            if name in contraction.attrs:
                fused.attrs[name] = contraction.attrs[name]
        for name, value in attrs.items():
            fused.set_attr(name, value)
        if "_output_shapes" in last.attrs:
            fused.attrs["_output_shapes"] = last.attrs["_output_shapes"]
        redirect_outputs(graph, last, [fused.output(0)])
        name = last.name
        graph.remove_nodes(fusion.nodes)
        graph.rename(fused, name)
        return fused


def _fused_attrs(fusion: Fusion, first_op: str, arg_types: list, epsilon: float = 0.0001) -> dict:
    """The attrs saying what a fused node applies after its contraction."""
    attrs = {"num_args": len(arg_types), "fused_ops": fusion.fused_ops(first_op), "epsilon": epsilon,
             "leakyrelu_alpha": fusion.leakyrelu_alpha()}
    if fusion.contraction.op == "Conv2D":
        attrs |= {"TArgs": arg_types, "num_host_args": 0, "filter_format": "HWIO"}
    return attrs


class ContractionBias(_FusionRule):
    """Conv2D or MatMul -> BiasAdd (-> activation)."""

    name = "contraction_bias"

    def match(self, node):
        if self.fusable_conv(node):
            return self.matcher.bias_fusion(node, CONV_ACTIVATIONS)
        if node.op == "MatMul" and node.attr("T") in _MATMUL_TYPES and self.matcher.ctx.can_rewrite(node):
            return self.matcher.bias_fusion(node, MATMUL_ACTIVATIONS)
        return None

    def rewrite(self, node, graph, ctx):
        fusion = self.match(node)
        attrs = _fused_attrs(fusion, "BiasAdd", [fusion.first.attr("T")])
        op = "_FusedConv2D" if node.op == "Conv2D" else "_FusedMatMul"
        self.replace(graph, ctx, fusion, op, [*node.inputs, fusion.first.inputs[1]], attrs)
        return True


class ConvBatchNorm(_FusionRule):
    """Conv2D -> FusedBatchNorm (inference) (-> activation), the batch norm run by the fused kernel."""

    name = "conv_batch_norm"

    def match(self, node):
        return self.matcher.batch_norm_fusion(node) if self.fusable_conv(node) else None

    def rewrite(self, node, graph, ctx):
        fusion = self.match(node)
        bn = fusion.first
        attrs = _fused_attrs(fusion, "FusedBatchNorm", [_statistics_type(bn)] * 4, bn.attr("epsilon"))
        self.replace(graph, ctx, fusion, "_FusedConv2D", [*node.inputs, *bn.inputs[1:5]], attrs)
        return True


class FoldBatchNorm(ConvBatchNorm):
    """Conv2D -> FusedBatchNorm (inference) with constant operands (-> activation): the batch norm
    folded into a new filter and bias, leaving a cheaper BiasAdd (rounds differently: not under
    strict_fp; creates Consts: not inside loop frames)."""

    name = "conv_batch_norm_folded"

    def match(self, node):
        fusion = super().match(node)
        if fusion is None or self.matcher.ctx.strict_fp or self.matcher.in_loop(node):
            return None
        return fusion if self._operands(fusion) is not None else None

    def _operands(self, fusion: Fusion) -> list[np.ndarray] | None:
        """filter, scale, offset, mean, variance (float64) when all are constants of fitting shapes."""
        refs = (fusion.contraction.inputs[1], *fusion.first.inputs[1:5])
        constant = plain_constant(self.matcher.ctx.fold_max_bytes)
        values = [v for v in (constant(ref) for ref in refs) if v is not None]
        if len(values) != len(refs) or values[0].ndim != 4:
            return None
        if any(v.shape != values[0].shape[-1:] for v in values[1:]):
            return None
        return [v.astype(np.float64) for v in values]

    def rewrite(self, node, graph, ctx):
        fusion = self.match(node)
        bn = fusion.first
        filt, scale, offset, mean, variance = self._operands(fusion)
        # epsilon is a float32 attr that the kernel adds in float32: fold with that very value.
        factor = scale / np.sqrt(variance + np.float64(np.float32(bn.attr("epsilon"))))
        dtype = node.attr("T")
        new_filter = _new_const(graph, ctx, node, "filter", (filt * factor).astype(dtype.numpy))
        new_bias = _new_const(graph, ctx, node, "bias", (offset - mean * factor).astype(dtype.numpy))
        replaced = [ref.node for ref in (node.inputs[1], *bn.inputs[1:5])]
        attrs = _fused_attrs(fusion, "BiasAdd", [dtype])
        self.replace(graph, ctx, fusion, "_FusedConv2D", [node.inputs[0], new_filter, new_bias], attrs)
        for producer in replaced:
            _remove_dead_constant(graph, ctx, producer)
        return True


def _new_const(graph: Graph, ctx: PassContext, conv: Node, what: str, value: np.ndarray) -> TensorRef:
    const = graph.add_node("Const", ctx.new_name(graph, conv, "remapper", what), device=conv.device,
                           attrs={"dtype": dtypes.from_numpy(value.dtype), "value": value})
    return const.output(0)


def _remove_dead_constant(graph: Graph, ctx: PassContext, node: Node) -> None:
    """Remove a Const (and the Identity chain to it) that the fold left without users."""
    while graph.get(node.name) is node and node.op in ("Const", "Identity") and not node.has_users \
            and ctx.can_rewrite(node):
        producer = node.inputs[0].node if node.op == "Identity" else None
        graph.remove_node(node)
        if producer is None:
            return
        node = producer


@register_pass
class Remapper(Pass):
    name = "remapper"
    description = ("fold per-channel Mul/Add batch norms into Conv2D/DepthwiseConv2dNative/MatMul filters and "
                   "BiasAdds; fuse Conv2D/MatMul with BiasAdd or batch norm and an activation into one kernel")

    def run(self, graph: Graph, ctx: PassContext) -> PassResult:
        if not graph.ops() & CONTRACTIONS:
            return PassResult(False)
        matcher = _Matcher(graph, ctx)
        # Batch norms left as Mul/Add by constants (frozen Keras) first become filter and BiasAdd
        # (graphtool/opt/batch_norm_folding.py); a later iteration fuses the BiasAdd.
        folding = folding_rules(graph, ctx, plain_constant(ctx.fold_max_bytes), "remapper")
        return apply_rules(graph, ctx, [ContractionBias(matcher), FoldBatchNorm(matcher), ConvBatchNorm(matcher),
                                        *folding])
