"""Gradients of the matrix products: MatMul, BatchMatMul V1-V3 and Einsum."""
from __future__ import annotations

from ..shapes import has_rank
from .op_utils import INDEX, int_const
from .registry import GradContext, gradient

# (transpose a, transpose b) of the forward op -> how each operand's gradient is one product of
# the output gradient g with the other operand: (left, right, transpose left, transpose right).
_PRODUCT_GRADS = {
    (False, False): (("g", "b", False, True), ("a", "g", True, False)),
    (False, True): (("g", "b", False, False), ("g", "a", True, False)),
    (True, False): (("b", "g", False, True), ("a", "g", False, False)),
    (True, True): (("b", "g", True, True), ("g", "a", True, True)),
}


def _product_grads(ctx: GradContext, g, transposed: tuple[bool, bool], product):
    """The two operand gradients of a matrix product; `product(left, right, t_left, t_right)`
    builds one product of the forward op's kind."""
    values = {"a": ctx.input(0), "b": ctx.input(1), "g": g}
    return [product(values[left], values[right], t_left, t_right)
            for left, right, t_left, t_right in _PRODUCT_GRADS[transposed]]


@gradient("MatMul")
def _mat_mul_grad(ctx, grads):
    def product(left, right, t_left, t_right):
        return ctx.b.op("MatMul", [left, right], transpose_a=t_left, transpose_b=t_right)
    return _product_grads(ctx, grads[0], (ctx.attr("transpose_a"), ctx.attr("transpose_b")), product)


@gradient("BatchMatMul", "BatchMatMulV2", "BatchMatMulV3")
def _batch_mat_mul_grad(ctx, grads):
    """As MatMul's, batched; V2/V3 broadcast batch dims, so each gradient is summed back to its
    operand's shape."""
    op = ctx.node.op
    extra = {"Tout": ctx.attr("Tout")} if op == "BatchMatMulV3" else {}

    def product(left, right, t_left, t_right):
        return ctx.b.op(op, [left, right], adj_x=t_left, adj_y=t_right, **extra)
    grad_x, grad_y = _product_grads(ctx, grads[0], (ctx.attr("adj_x"), ctx.attr("adj_y")), product)
    if op == "BatchMatMul":
        return [grad_x, grad_y]
    return [ctx.sum_to_input(0, grad_x), ctx.sum_to_input(1, grad_y)]


# --- einsum ------------------------------------------------------------------------------------

ELLIPSIS = "..."


def _labels(subscript: str) -> list[str]:
    """'ab...c' -> ['a', 'b', '...', 'c']."""
    before, found, after = subscript.replace(" ", "").partition(ELLIPSIS)
    return list(before) + ([ELLIPSIS] if found else []) + list(after)


def _parse(equation: str) -> tuple[list[list[str]], list[str]]:
    inputs, _, output = equation.partition("->")
    return [_labels(s) for s in inputs.split(",")], _labels(output)


def _spell(labels) -> str:
    return "".join(labels)


@gradient("Einsum")
def _einsum_grad(ctx, grads):
    """Operand k's gradient is itself an einsum of the output gradient with the other operands,
    producing k's labels. Labels of k that appear nowhere else were summed over: the gradient is
    constant along them, so they are added back by an outer product with ones. A final
    one-operand einsum puts the labels in k's order and spreads repeated labels ('ii') onto the
    diagonal; ellipsis dims that k had broadcast are summed back to its shape."""
    operand_labels, output_labels = _parse(ctx.attr("equation"))
    grads_out = []
    for k, labels in enumerate(operand_labels):
        others = [i for i in range(len(operand_labels)) if i != k]
        available = set(output_labels).union(*(operand_labels[i] for i in others))
        kept = [label for label in dict.fromkeys(labels) if label in available or label == ELLIPSIS]
        summed = [label for label in dict.fromkeys(labels) if label not in kept]
        spec = ",".join(_spell(s) for s in [output_labels, *(operand_labels[i] for i in others)])
        grad = ctx.b.op("Einsum", [[grads[0], *(ctx.input(i) for i in others)]],
                        equation=f"{spec}->{_spell(kept)}")
        if summed:
            one = ctx.b.const(1.0, dtype=ctx.input_dtype(k))
            ones = ctx.b.op("Fill", [_label_dims(ctx, k, labels, summed), one])
            outer = f"{_spell(kept)},{_spell(summed)}->{_spell(kept + summed)}"
            grad = ctx.b.op("Einsum", [[grad, ones]], equation=outer)
        if kept + summed != labels:
            grad = ctx.b.op("Einsum", [[grad]], equation=f"{_spell(kept + summed)}->{_spell(labels)}")
        grads_out.append(ctx.sum_to_input(k, grad) if ELLIPSIS in labels else grad)
    return grads_out


def _label_dims(ctx: GradContext, k: int, labels: list[str], wanted: list[str]):
    """The sizes of `wanted` labels in operand k, as an int32 vector."""
    shape = ctx.input_shape(k)
    axes = []
    for label in wanted:
        position = labels.index(label)
        after_ellipsis = ELLIPSIS in labels and position > labels.index(ELLIPSIS)
        axes.append(position - len(labels) if after_ellipsis else position)
    if has_rank(shape) and all(shape[axis] is not None for axis in axes):
        return int_const(ctx.b, [shape[axis] for axis in axes])
    b = ctx.b
    dynamic_shape = b.op("Shape", [ctx.input(k)], out_type=INDEX)
    rank = b.op("Rank", [ctx.input(k)])
    positions = b.op("FloorMod", [int_const(b, axes), rank])
    return b.op("GatherV2", [dynamic_shape, positions, int_const(b, 0)])
