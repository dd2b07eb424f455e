"""The arithmetic pass's matrix-product rule: an operand transposed (or adjoined) just for a
product is read directly by the product with its transpose/adjoint flag flipped, as Grappler's
FoldTransposeIntoMatMul and FoldConjugateIntoTranspose do.

    before: t = Transpose(b, [0, 2, 1]); y = BatchMatMulV2(a, t)       (real b)
    after:  y = BatchMatMulV2(a, b, adj_y=True)                        (t removed when unused)

MatMul's flags are plain transposes: a Transpose of a matrix folds for every dtype, a
ConjugateTranspose only for real ones. BatchMatMul's flags are adjoints: a ConjugateTranspose of
the two innermost dims folds for every dtype, a Transpose only for real ones. The product keeps its
name; the rewrite moves no value across frames and skips maybe-dead transposes (the permutation
would no longer gate the product).
"""
from __future__ import annotations

from ..ir import Graph, Node
from .arithmetic_rules import FactRule, add_control_inputs, remove_unused
from .base import PassContext

_FLAGS = {"MatMul": ("transpose_a", "transpose_b"), "BatchMatMul": ("adj_x", "adj_y"),
          "BatchMatMulV2": ("adj_x", "adj_y"), "BatchMatMulV3": ("adj_x", "adj_y")}
_TRANSPOSES = frozenset({"Transpose", "ConjugateTranspose"})


class FoldTransposeIntoMatMul(FactRule):
    name = "transpose_folded_into_matmul"
    ops = frozenset(_FLAGS)

    def applies(self, node: Node, ctx: PassContext) -> bool:
        return node.op in self.ops and ctx.can_rewrite(node) and bool(self._foldable(node, ctx))

    def _foldable(self, node: Node, ctx: PassContext) -> list[tuple[int, Node]]:
        found = []
        for slot, ref in enumerate(node.inputs[:2]):
            producer = ref.node
            if (producer.op in _TRANSPOSES and ref.index == 0 and producer.device == node.device
                    and not self.facts.may_be_dead(producer) and self.facts.one_frame(nodes=[node, producer])
                    and self._swaps_last_two(producer) and self._flag_matches(node, producer)):
                found.append((slot, producer))
        return found

    def _swaps_last_two(self, transpose: Node) -> bool:
        value = self.facts.value(transpose.inputs[1])
        if value is None or value.ndim != 1:
            return False
        perm = [int(v) for v in value]
        rank = len(perm)
        return rank >= 2 and perm == [*range(rank - 2), rank - 1, rank - 2]

    def _flag_matches(self, product: Node, transpose: Node) -> bool:
        """Does flipping the product's flag compute exactly what this transpose does?"""
        dtype = self.facts.dtype(transpose.inputs[0])
        if dtype is None:
            return False
        conjugates = transpose.op == "ConjugateTranspose" and dtype.is_complex
        flag_conjugates = product.op != "MatMul" and dtype.is_complex
        return conjugates == flag_conjugates

    def rewrite(self, node: Node, graph: Graph, ctx: PassContext) -> bool:
        folded = self._foldable(node, ctx)
        if not folded:
            return False
        for slot, transpose in folded:
            flag = _FLAGS[node.op][slot]
            node.set_input(slot, transpose.inputs[0])
            node.set_attr(flag, not node.attr(flag))
            add_control_inputs(node, transpose.control_inputs)
            remove_unused(graph, ctx, transpose)
        return True
