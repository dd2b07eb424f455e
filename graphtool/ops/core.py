"""Sources, identities and call-frame ops: Const, Placeholder, Identity, NoOp, _Arg, _Retval, ..."""
from __future__ import annotations

from .. import tensor
from ..errors import InvalidGraphError
from ..shapes import Shape
from .inference import InferenceContext, may_build, no_outputs, unchanged
from .registry import register


def _value_proto(ctx: InferenceContext):
    where = f"node '{ctx.node.name}' attr 'value'"
    if "value" not in ctx.node.attrs:
        raise KeyError(f"{where} is missing")
    return ctx.node.attrs["value"].tensor, where


def _const_shape(ctx: InferenceContext) -> Shape:
    # From the header: a filled constant may claim gigabytes, and its shape is all inference needs.
    proto, where = _value_proto(ctx)
    try:
        return Shape(tensor.header(proto, where)[1])
    except InvalidGraphError as exc:  # verify() rejects it; inference marks only this node
        ctx.fail(str(exc))


def _const_value(ctx: InferenceContext):
    proto, where = _value_proto(ctx)
    try:
        return tensor.to_ndarray(proto, where) if may_build(tensor.header(proto, where)[2]) else None
    except InvalidGraphError as exc:
        ctx.fail(str(exc))


def _placeholder_shape(ctx: InferenceContext) -> Shape:
    return ctx.attr("shape")


def _passthrough_value(ctx: InferenceContext):
    return ctx.partial_value(0)


def _placeholder_with_default_shape(ctx: InferenceContext) -> Shape:
    declared = ctx.attr("shape")
    if not declared.is_compatible_with(ctx.shape(0)):
        ctx.fail(f"default value of shape {ctx.shape(0)} does not fit the declared shape {declared}")
    return declared


def _identity_n_shapes(ctx: InferenceContext) -> list[Shape]:
    return ctx.shapes()


register("Const", outputs=["output: dtype"], attrs=["value: tensor", "dtype: type"],
         shape=_const_shape, value=_const_value)
register("HostConst", outputs=["output: dtype"], attrs=["value: tensor", "dtype: type"],
         shape=_const_shape, value=_const_value)
register("Placeholder", outputs=["output: dtype"], attrs=["dtype: type", "shape: shape = unknown"],
         shape=_placeholder_shape)
register("PlaceholderV2", outputs=["output: dtype"], attrs=["dtype: type", "shape: shape"],
         shape=_placeholder_shape)
register("PlaceholderWithDefault", inputs=["input: dtype"], outputs=["output: dtype"],
         attrs=["dtype: type", "shape: shape"], shape=_placeholder_with_default_shape)

for _name in ("Identity", "Snapshot", "StopGradient"):
    register(_name, inputs=["input: T"], outputs=["output: T"], attrs=["T: type"],
             shape=unchanged, value=_passthrough_value)
register("PreventGradient", inputs=["input: T"], outputs=["output: T"],
         attrs=["T: type", "message: string = ''"], shape=unchanged, value=_passthrough_value)
register("CheckNumerics", inputs=["tensor: T"], outputs=["output: T"],
         attrs=["T: {bfloat16, half, float, double}", "message: string"], shape=unchanged,
         stateful=True)
register("IdentityN", inputs=["input: T"], outputs=["output: T"], attrs=["T: list(type) >= 1"],
         shape=_identity_n_shapes)
register("NoOp", shape=no_outputs)
# Assert fails the step when condition is false; frozen graphs keep it (dynamic_rnn adds one).
register("Assert", inputs=["condition: bool", "data: T"], attrs=["T: list(type) >= 1", "summarize: int = 3"],
         shape=no_outputs, stateful=True)
# Print passes `input` through and logs `data` (stderr), the first `first_n` times (-1: always);
# `dftool transform insert_logging` adds it.
register("Print", inputs=["input: T", "data: U"], outputs=["output: T"],
         attrs=["T: type", "U: list(type) >= 0", "message: string = ''", "first_n: int = -1",
                "summarize: int = 3"], shape=unchanged, stateful=True)

# Ops whose value the caller supplies at run time: Placeholders, and the _Args of a call-frame
# graph (fed by node name). The session, prune and inspect all read this one list.
FED_INPUT_OPS = frozenset({"Placeholder", "PlaceholderV2", "_Arg"})

# Call-frame ops: prune --call-frame turns feeds into _Arg and fetches into _Retval.
def _arg_shape(ctx: InferenceContext) -> Shape:
    # _Arg has no shape attr; like TensorFlow's function graphs, prune records it in _output_shapes.
    declared = ctx.node.attr("_output_shapes", None)
    return Shape.of(declared[0]) if declared else Shape.unknown()


register("_Arg", outputs=["output: T"], attrs=["T: type", "index: int >= 0"],
         shape=_arg_shape, stateful=True)
register("_Retval", inputs=["input: T"], attrs=["T: type", "index: int >= 0"],
         shape=no_outputs, stateful=True)


def _fed_output_shapes(ctx: InferenceContext) -> list[Shape]:
    declared = ctx.node.attr("_output_shapes", None)
    if declared and len(declared) == ctx.num_outputs:
        return [Shape.of(shape) for shape in declared]
    return [Shape.unknown()] * ctx.num_outputs


# What a run's pruned copy makes of a fed node that has inputs (a Saver's RestoreV2 whose outputs
# are fed, an intermediate tensor fed to skip its producer): the caller supplies every value, so
# the node keeps its name, device and output types and loses its inputs, staying a valid node
# for placement and partitioning (prune.pruned_copy).
register("_FedOutputs", outputs=["output: dtypes"], attrs=["dtypes: list(type) >= 1"],
         shape=_fed_output_shapes, stateful=True)
