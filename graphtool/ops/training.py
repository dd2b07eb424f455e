"""Optimizer update ops (TensorFlow's training_ops): Apply* update ref variables (VariableV2) and
output the updated var ref; ResourceApply* update resource variables and output nothing;
SparseApply* / ResourceSparseApply* update only the rows of var (and of its slots) named by
`indices`, with one row of `grad` per index.

Each optimizer is one line of OPTIMIZERS: its inputs in TensorFlow's order, slots (variables the
op updates) marked with `*`, the gradient named `grad` (or `delta`), scalars otherwise; and its
boolean attrs. TensorFlow does not mark the ref forms stateful (their side effect travels on the
Ref inputs, as Assign's does); the resource forms are stateful.
"""
from __future__ import annotations

from ..shapes import Shape
from .inference import InferenceContext, merge_all, no_outputs
from .registry import register
from .state import _INDEX_DTYPES, _NUMBER_DTYPES

# name: (inputs of the dense form, extra bool attrs with defaults, has sparse forms, has a ref form)
OPTIMIZERS: dict[str, tuple[str, tuple[tuple[str, bool], ...], bool, bool]] = {
    "GradientDescent": ("*var alpha delta", (), False, True),
    "ProximalGradientDescent": ("*var alpha l1 l2 delta", (), True, True),
    "Adadelta": ("*var *accum *accum_update lr rho epsilon grad", (), True, True),
    "Adagrad": ("*var *accum lr grad", (("update_slots", True),), True, True),
    "AdagradV2": ("*var *accum lr epsilon grad", (("update_slots", True),), True, True),
    "ProximalAdagrad": ("*var *accum lr l1 l2 grad", (), True, True),
    "Ftrl": ("*var *accum *linear grad lr l1 l2 lr_power", (("multiply_linear_by_lr", False),), True, True),
    "FtrlV2": ("*var *accum *linear grad lr l1 l2 l2_shrinkage lr_power",
               (("multiply_linear_by_lr", False),), True, True),
    "Momentum": ("*var *accum lr grad momentum", (("use_nesterov", False),), True, True),
    "KerasMomentum": ("*var *accum lr grad momentum", (("use_nesterov", False),), True, False),
    "Adam": ("*var *m *v beta1_power beta2_power lr beta1 beta2 epsilon grad", (("use_nesterov", False),),
             False, True),
    "AdaMax": ("*var *m *v beta1_power lr beta1 beta2 epsilon grad", (), False, True),
    "RMSProp": ("*var *ms *mom lr rho momentum epsilon grad", (), True, True),
    "CenteredRMSProp": ("*var *mg *ms *mom lr rho momentum epsilon grad", (), True, True),
    "AddSign": ("*var *m lr alpha sign_decay beta grad", (), False, True),
    "PowerSign": ("*var *m lr logbase sign_decay beta grad", (), False, True),
}


def sparse_inputs(optimizer: str) -> list[str]:
    """The sparse form's inputs: `indices` right after the gradient (so Momentum's `momentum`
    follows it), and ProximalGradientDescent's `delta` is called `grad`."""
    names = OPTIMIZERS[optimizer][0].replace("delta", "grad").split()
    position = names.index("grad") + 1
    return names[:position] + ["indices"] + names[position:]


def op_inputs(op: str) -> tuple[str, list[str]] | None:
    """(optimizer, input names with `*` on slots) of an optimizer op; None for other ops."""
    for prefix in ("ResourceSparseApply", "SparseApply", "ResourceApply", "Apply"):
        if op.startswith(prefix) and op[len(prefix):] in OPTIMIZERS:
            optimizer = op[len(prefix):]
            names = sparse_inputs(optimizer) if "Sparse" in prefix else OPTIMIZERS[optimizer][0].split()
            return optimizer, names
    return None


def _slot_indices(names: list[str]) -> list[int]:
    return [i for i, name in enumerate(names) if name.startswith("*")]


def _ref_shape(names: list[str], sparse: bool):
    """The updated var has var's shape, merged with the slots' (and a dense gradient's)."""
    same = _slot_indices(names) + ([] if sparse else [names.index("grad") if "grad" in names
                                                      else names.index("delta")])

    def infer(ctx: InferenceContext) -> Shape:
        return merge_all(ctx, tuple(same))
    return infer


def _register(op: str, names: list[str], flags, *, resource: bool, sparse: bool) -> None:
    inputs = []
    for name in names:
        if name.startswith("*"):
            inputs.append(f"{name[1:]}: resource" if resource else f"{name[1:]}: Ref(T)")
        elif name == "indices":
            inputs.append("indices: Tindices")
        else:
            inputs.append(f"{name}: T")
    attrs = [f"T: {_NUMBER_DTYPES}"] + ([f"Tindices: {_INDEX_DTYPES}"] if sparse else [])
    attrs += ["use_locking: bool = false"] + [f"{flag}: bool = {str(default).lower()}" for flag, default in flags]
    if resource:
        register(op, inputs=inputs, attrs=attrs, shape=no_outputs, stateful=True)
    else:
        register(op, inputs=inputs, outputs=["out: Ref(T)"], attrs=attrs, shape=_ref_shape(names, sparse))


for _optimizer, (_inputs, _flags, _has_sparse, _has_ref) in OPTIMIZERS.items():
    _forms = [("ResourceApply", True, False)] + ([("Apply", False, False)] if _has_ref else [])
    if _has_sparse:
        _forms += [("ResourceSparseApply", True, True)] + ([("SparseApply", False, True)] if _has_ref else [])
    for _prefix, _resource, _sparse in _forms:
        _names = sparse_inputs(_optimizer) if _sparse else _inputs.split()
        _register(_prefix + _optimizer, _names, _flags, resource=_resource, sparse=_sparse)
