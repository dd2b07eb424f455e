"""fold_batch_norms: batch norms after a contraction folded into its weights.

    before: Conv2D(x, w) -> Mul(., Mul(Rsqrt(var + eps), gamma)) -> AddV2(., beta - mean * ...)
    after:  Conv2D(x, w * s) -> BiasAdd(., b)

    before: DepthwiseConv2dNative(x, w) -> FusedBatchNormV3(., scale, offset, mean, var; is_training=false)
    after:  DepthwiseConv2dNative(x, w * s) -> BiasAdd(., offset - mean * s)     s = scale / sqrt(var + eps)

For Conv2D, DepthwiseConv2dNative and MatMul with a constant filter. "Constant" here includes
subgraphs computed from Consts alone (the Rsqrt/Mul/Sub chain a frozen Keras graph keeps), which are
evaluated with dftool's own CPU kernels; what they leave unused is removed. The rules are those of
`optimize`'s remapper (graphtool/opt/batch_norm_folding.py) plus the inference FusedBatchNorm
fold, applied until nothing changes. The BiasAdd takes the name of the node it replaces; the
graph's inputs and outputs are never folded away (a fold that would remove one is declined).
"""
from __future__ import annotations

import numpy as np

from ..ir import Graph, Node, TensorRef
from ..opt.base import PassContext, Rule, apply_rules, const_value_within
from ..opt.batch_norm_folding import (CONTRACTIONS, ConstantOf, _Site, drop_dead, folding_rules, output_channels,
                                      scaled_filter)
from .base import Param, Transform, TransformContext, TransformResult, register_transform

_BATCH_NORMS = frozenset({"FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3"})
_MAX_DEPTH = 64
MAX_SWEEPS = 10


def evaluated_constant(budget: int) -> ConstantOf:
    """The value of a tensor computed from Consts alone by pure ops (memoized), or None."""
    from ..opt.constant_folding import evaluate, is_random

    cache: dict[Node, list[np.ndarray] | None] = {}

    def outputs(node: Node, depth: int) -> list[np.ndarray] | None:
        if node in cache:
            return cache[node]
        result: list[np.ndarray] | None = None
        if node.op == "Const" and not node.control_inputs:
            value = const_value_within(node, budget)
            result = None if value is None else [value]
        elif (depth < _MAX_DEPTH and node.inputs and not node.control_inputs and node.spec is not None
              and not PassContext.is_side_effecting(node) and not is_random(node.op)):
            values = [outputs(ref.node, depth + 1) for ref in node.inputs]
            if all(v is not None for v in values):
                args = [v[ref.index] for v, ref in zip(values, node.inputs) if v is not None]
                try:
                    computed = evaluate(node, args)
                except Exception:  # a kernel refusing these values: not a constant we can use
                    computed = None
                if computed is not None and sum(v.nbytes for v in computed) <= budget:
                    result = computed
        cache[node] = result
        return result

    def value(ref: TensorRef) -> np.ndarray | None:
        found = outputs(ref.node, 0)
        return None if found is None or ref.index >= len(found) else found[ref.index]

    return value


class FoldFusedBatchNorm(Rule):
    """Conv2D / DepthwiseConv2dNative -> FusedBatchNorm* (inference, only y used) with constant
    operands  =>  contraction(x, w * s) -> BiasAdd(offset - mean * s)."""

    name = "fused_batch_norms_folded"

    def __init__(self, site: _Site):
        self.site = site

    def _match(self, node: Node):
        site = self.site
        if node.op == "MatMul" or not site.contraction(node):
            return None
        bn = site.sole_reader(node, _BATCH_NORMS)
        if bn is None or bn.attr("is_training") or bn.inputs[0] != node.output(0):
            return None
        if bn.attr("data_format") != node.attr("data_format") or any(
                ref.node is bn and ref.index for c, slot in bn.uses() for ref in [c.inputs[slot]]):
            return None
        found = [site.constant(ref) for ref in (node.inputs[1], *bn.inputs[1:5])]
        values = [v for v in found if v is not None]
        if len(values) != len(found):
            return None
        filt, *stats = values
        channels = output_channels(node, filt)
        if channels is None or any(v.shape != (channels,) for v in stats):
            return None
        return bn, filt, [v.astype(np.float64) for v in stats]

    def applies(self, node: Node, ctx: PassContext) -> bool:
        return self._match(node) is not None

    def rewrite(self, node: Node, graph: Graph, ctx: PassContext) -> bool:
        bn, filt, (scale, offset, mean, variance) = self._match(node)
        # epsilon is a float32 attr that the kernel adds in float32: fold with that very value.
        factor = scale / np.sqrt(variance + np.float64(np.float32(bn.attr("epsilon"))))
        dtype = node.attr("T")
        old_filter = node.inputs[1].node
        new_filter = graph.add_node("Const", PassContext.new_name(graph, node, "fold_batch_norms", "filter"),
                                    device=node.device,
                                    attrs={"dtype": dtype, "value": scaled_filter(node, filt, factor)})
        node.set_input(1, new_filter.output(0))
        bias = graph.add_node("Const", PassContext.new_name(graph, bn, "fold_batch_norms", "bias"), device=bn.device,
                              attrs={"dtype": dtype, "value": (offset - mean * factor).astype(dtype.numpy)})
        layout = bn.attr("data_format")
        bias_add = graph.add_node("BiasAdd", PassContext.new_name(graph, bn, "fold_batch_norms"),
                                  inputs=[node.output(0), bias.output(0)], control_inputs=bn.control_inputs,
                                  attrs={"T": dtype, "data_format": layout}, device=bn.device)
        dropped = [ref.node for ref in bn.inputs[1:]]
        graph.replace_all_uses_with(bn.output(0), bias_add.output(0))
        graph.move_control_uses(bn, bias_add)
        name = bn.name
        graph.remove_node(bn)
        graph.rename(bias_add, name)
        drop_dead(graph, ctx, [old_filter, *dropped])
        return True


@register_transform
class FoldBatchNorms(Transform):
    name = "fold_batch_norms"
    description = ("fold batch norms after Conv2D/DepthwiseConv2dNative/MatMul into their weights and a BiasAdd "
                   "(Mul/Add by constants, the unfused Rsqrt/Mul/Sub chain, inference FusedBatchNorm)")
    params = (Param("max_constant_bytes", "largest constant the fold may compute", int, 64 * 1024 * 1024),)

    def apply(self, graph: Graph, ctx: TransformContext, params) -> TransformResult:
        pass_ctx = PassContext(keep=ctx.protected())
        totals: dict[str, int] = {}  # only rules that applied appear in a sweep's stats
        for _ in range(MAX_SWEEPS):
            constant = evaluated_constant(params["max_constant_bytes"])
            site = _Site(graph, pass_ctx, constant, CONTRACTIONS)
            rules = [*folding_rules(graph, pass_ctx, constant, "fold_batch_norms"), FoldFusedBatchNorm(site)]
            result = apply_rules(graph, pass_ctx, rules)
            if not result.changed:
                break
            for key, count in result.stats.items():
                totals[key] = totals.get(key, 0) + count
        return TransformResult(totals)
