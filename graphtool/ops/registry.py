"""The op registry: one OpSpec per op, declared in the family modules of this package.

Signatures use TensorFlow's REGISTER_OP notation, which keeps declarations short and checkable:

    register("MatMul",
             inputs=["a: T", "b: T"], outputs=["product: T"],
             attrs=["transpose_a: bool = false", "transpose_b: bool = false",
                    "T: {bfloat16, half, float, double, int32, int64, complex64, complex128}"],
             shape=matmul_shape)

Input/output args: `name: T` (type attr), `name: N * T` (N tensors of type T), `name: Tlist`
(a list(type) attr), `name: float` (a fixed type), `name: Ref(T)`.
Attrs: `name: kind [= default]` with kind one of string, int, float, bool, type, shape, tensor,
func, list(...), `{t1, t2}` (a type restricted to those), and an optional `>= min`.

Shape, cost, folding, CSE and prune all read this one registry.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import Callable

from .. import attrs as attr_codec
from .. import dtypes
from ..dtypes import DType

_REGISTRY: dict[str, "OpSpec"] = {}
# The most inputs or outputs one argument of a node may have (a number attr such as N or
# num_split): far above real graphs, and a bound on what a tiny node can make every pass allocate.
MAX_ARG_COUNT = 1 << 16

_TYPE_ALIASES = {"half": "float16", "float": "float32", "double": "float64"}
# TensorFlow's named type sets used in signatures.
_QUANTIZED = [dtypes.from_name(n) for n in ("qint8", "quint8", "qint16", "quint16", "qint32")]
_REAL = [dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64, *dtypes.INTEGER]
TYPE_SETS = {
    # As TensorFlow defines them: the classic numeric types only (no float8/int4 and friends).
    "numbertype": _REAL + list(dtypes.COMPLEX) + _QUANTIZED,
    "realnumbertype": _REAL,
    "floattype": list(dtypes.FLOATING),
    "inttype": list(dtypes.INTEGER),
}


@dataclass
class ArgSpec:
    name: str
    fixed_type: DType | None = None
    type_attr: str | None = None
    number_attr: str | None = None
    type_list_attr: str | None = None
    is_ref: bool = False

    @property
    def is_list(self) -> bool:
        return self.number_attr is not None or self.type_list_attr is not None


@dataclass
class AttrSpec:
    name: str
    kind: str                      # 'int', 'list(type)', 'type', ...
    default: object = None
    has_default: bool = False
    allowed: list[DType] | None = None   # for type / list(type) attrs
    minimum: int | None = None
    allowed_strings: list[str] | None = None  # for string attrs written as {'A', 'B'}

    def kind_problem(self, value_proto) -> str | None:
        """Whether the stored value is of this attr's kind (a list where a list belongs, its
        elements of the declared kind): what every reader of the value may assume."""
        found = attr_codec.kind_of(value_proto)
        if found == "placeholder":
            return f"attr '{self.name}' is a function placeholder outside a function"
        if self.kind.startswith("list("):
            if found != "list":
                return f"attr '{self.name}' must be a {self.kind}, got {found}"
            element = attr_codec.list_kind(value_proto)
            if element is not None and element != self.kind[5:-1]:
                return f"attr '{self.name}' must be a {self.kind}, got list({element})"
        elif found != self.kind:
            return f"attr '{self.name}' must be a {self.kind}, got {found or 'nothing'}"
        return None

    def check(self, node) -> str | None:
        """A problem with this attr on `node`, or None."""
        if self.name not in node.attrs:
            return None if self.has_default else f"missing required attr '{self.name}' ({self.kind})"
        value_proto = node.attrs[self.name]
        problem = self.kind_problem(value_proto)
        if problem:
            return problem
        expected_list = self.kind.startswith("list(")
        if self.kind == "tensor":
            # Check the header only: decoding every constant would cost a model's size in time.
            from ..tensor import check_header

            try:
                check_header(value_proto.tensor, f"attr '{self.name}'")
            except Exception as exc:
                return " ".join(str(exc).split())
            return None
        try:
            value = attr_codec.decode(value_proto, f"attr '{self.name}'")
        except Exception as exc:  # malformed values
            return f"attr '{self.name}': {exc}"
        if self.allowed is not None:
            values = value if expected_list else [value]
            for dtype in values:
                if dtype.base not in self.allowed:
                    allowed = ", ".join(d.name for d in self.allowed)
                    return f"attr '{self.name}' = {dtype} is not one of the allowed types ({allowed})"
        if self.allowed_strings is not None and value not in self.allowed_strings:
            return f"attr '{self.name}' = {value!r} is not one of {self.allowed_strings}"
        if self.minimum is not None:
            measure = len(value) if expected_list else value
            if measure < self.minimum:
                return f"attr '{self.name}' = {value} is below its minimum {self.minimum}"
        return None


@dataclass
class OpSpec:
    name: str
    family: str
    inputs: list[ArgSpec]
    outputs: list[ArgSpec]
    attrs: dict[str, AttrSpec]
    shape_fn: Callable | None = None
    # Optional: the (partial) value of a small integer output computed from input values/shapes,
    # so shape tensors built from Shape/Pack/StridedSlice chains give static shapes.
    value_fn: Callable | None = None
    stateful: bool = False
    control_flow: bool = False
    is_async: bool = False
    commutative: bool = False
    # True for ops that take any number of inputs of any type (e.g. NoOp's control inputs only).
    doc: str = ""

    # --- arity and types ----------------------------------------------------------------------
    def _arg_count(self, arg: ArgSpec, node) -> int:
        if arg.number_attr is not None:
            count = int(node.attr(arg.number_attr))
            if count > MAX_ARG_COUNT:
                # A few bytes of attr must not size lists of a billion inputs or outputs.
                raise ValueError(f"attr '{arg.number_attr}' = {count} is more than the {MAX_ARG_COUNT:,} "
                                 f"{'outputs' if arg in self.outputs else 'inputs'} dftool supports per argument")
            return count
        if arg.type_list_attr is not None:
            return len(node.attr(arg.type_list_attr))
        return 1

    def _arg_dtypes(self, arg: ArgSpec, node) -> list[DType]:
        if arg.fixed_type is not None:
            base = [arg.fixed_type]
        elif arg.type_list_attr is not None:
            return [d.ref if arg.is_ref else d for d in node.attr(arg.type_list_attr)]
        else:
            base = [node.attr(arg.type_attr)]
        count = self._arg_count(arg, node)
        dtype = base[0].ref if arg.is_ref else base[0]
        return [dtype] * count

    def num_inputs(self, node) -> int:
        return sum(self._arg_count(a, node) for a in self.inputs)

    def num_outputs(self, node) -> int:
        return sum(self._arg_count(a, node) for a in self.outputs)

    def input_dtypes(self, node) -> list[DType]:
        return [d for a in self.inputs for d in self._arg_dtypes(a, node)]

    def output_dtypes(self, node) -> list[DType]:
        return [d for a in self.outputs for d in self._arg_dtypes(a, node)]

    def input_arg_slots(self, node) -> dict[str, range]:
        """Arg name -> the input slots it occupies."""
        slots, start = {}, 0
        for arg in self.inputs:
            count = self._arg_count(arg, node)
            slots[arg.name] = range(start, start + count)
            start += count
        return slots

    def output_arg_slots(self, node) -> dict[str, range]:
        slots, start = {}, 0
        for arg in self.outputs:
            count = self._arg_count(arg, node)
            slots[arg.name] = range(start, start + count)
            start += count
        return slots

    # --- checking -----------------------------------------------------------------------------
    def check_node(self, node) -> list[str]:
        """Problems with the node's attrs and input count against this signature."""
        problems = [p for a in self.attrs.values() if (p := a.check(node))]
        if problems:
            return problems
        try:
            expected = self.num_inputs(node)
        except Exception as exc:
            return [f"cannot size its inputs: {exc}"]
        if expected != len(node.inputs):
            problems.append(f"expects {expected} data input(s), has {len(node.inputs)}")
        try:
            self.num_outputs(node)
        except Exception as exc:
            problems.append(f"cannot size its outputs: {exc}")
        return problems


# --- declaration ----------------------------------------------------------------------------

_ARG_RE = re.compile(r"^\s*(\w+)\s*:\s*(?:(\w+)\s*\*\s*)?(Ref\()?\s*(\w+)\s*\)?\s*$")
_ATTR_RE = re.compile(r"^\s*(\w+)\s*:\s*([^=>]+?)\s*(?:>=\s*(-?\d+))?\s*(?:=\s*(.+?))?\s*$")


def _parse_type_name(text: str) -> DType:
    text = text.strip()
    return dtypes.from_name(_TYPE_ALIASES.get(text, text))


def _parse_arg(text: str, attrs: dict[str, AttrSpec]) -> ArgSpec:
    match = _ARG_RE.match(text)
    if not match:
        raise ValueError(f"bad arg spec {text!r}")
    name, number_attr, ref, type_text = match.groups()
    arg = ArgSpec(name, number_attr=number_attr, is_ref=bool(ref))
    attr = attrs.get(type_text)
    if attr is not None and attr.kind == "list(type)":
        arg.type_list_attr = type_text
    elif attr is not None:
        arg.type_attr = type_text
    else:
        arg.fixed_type = _parse_type_name(type_text)
    return arg


def _parse_default(kind: str, text: str):
    text = text.strip()
    if kind == "bool":
        return text == "true"
    if kind == "type":
        return _parse_type_name(text.removeprefix("DT_").lower())
    if kind in ("int", "float"):
        return (int if kind == "int" else float)(text)
    if kind == "string":
        return ast.literal_eval(text)
    if kind == "shape":
        from ..shapes import Shape

        return Shape(None) if text in ("unknown", "<unknown>") else Shape(ast.literal_eval(text))
    if kind.startswith("list("):
        element = kind[5:-1]
        items = [t for t in text.strip("[] ").split(",") if t.strip()]
        return [_parse_default(element, t) for t in items]
    raise ValueError(f"no default syntax for {kind}")


def _parse_attr(text: str) -> AttrSpec:
    match = _ATTR_RE.match(text)
    if not match:
        raise ValueError(f"bad attr spec {text!r}")
    name, kind, minimum, default = match.groups()
    allowed = allowed_strings = None
    kind = kind.strip()
    if kind.startswith("{'") or kind.startswith('{"'):
        allowed_strings = [ast.literal_eval(t.strip()) for t in kind.strip("{}").split(",")]
        kind = "string"
    elif kind.startswith("{"):
        allowed = [_parse_type_name(t) for t in kind.strip("{}").split(",") if t.strip()]
        kind = "type"
    elif kind.startswith("list({"):
        allowed = [_parse_type_name(t) for t in kind[6:-2].split(",") if t.strip()]
        kind = "list(type)"
    elif kind in TYPE_SETS:
        allowed, kind = TYPE_SETS[kind], "type"
    elif kind == "alltypes":
        kind = "type"
    spec = AttrSpec(name, kind, allowed=allowed, minimum=int(minimum) if minimum else None,
                    allowed_strings=allowed_strings)
    if default is not None:
        spec.default, spec.has_default = _parse_default(kind, default), True
    return spec


def register(name: str, *, inputs=(), outputs=(), attrs=(), shape=None, value=None,
             family: str = "", stateful=False, control_flow=False, is_async=False,
             commutative=False, doc: str = "") -> OpSpec:
    """Declare an op. Raises on a malformed signature or a duplicate name (a bug, not user input)."""
    if name in _REGISTRY:
        raise ValueError(f"op {name} registered twice")
    attr_specs = {a.name: a for a in map(_parse_attr, attrs)}
    spec = OpSpec(
        name=name, family=family or _caller_family(),
        inputs=[_parse_arg(a, attr_specs) for a in inputs],
        outputs=[_parse_arg(a, attr_specs) for a in outputs],
        attrs=attr_specs, shape_fn=shape, value_fn=value, stateful=stateful,
        control_flow=control_flow, is_async=is_async, commutative=commutative, doc=doc)
    _REGISTRY[name] = spec
    return spec


def alias(new_name: str, existing: str, *, refs: bool = False, **overrides) -> OpSpec:
    """Register `new_name` with the same signature and functions as `existing`. With `refs`, the
    args typed by a type attr become reference-typed (RefEnter, RefSwitch, ...)."""
    import dataclasses

    base = _REGISTRY[existing]
    fields = {**base.__dict__, "name": new_name, **overrides}
    if refs:
        def to_ref(args):
            return [dataclasses.replace(a, is_ref=a.type_attr is not None) for a in args]
        fields["inputs"], fields["outputs"] = to_ref(base.inputs), to_ref(base.outputs)
    spec = OpSpec(**fields)
    if new_name in _REGISTRY:
        raise ValueError(f"op {new_name} registered twice")
    _REGISTRY[new_name] = spec
    return spec


def _caller_family() -> str:
    import sys

    frame = sys._getframe(2)   # the caller of our caller: the module registering ops
    module = frame.f_globals.get("__name__", "")
    return module.rsplit(".", 1)[-1]


def lookup(name: str) -> OpSpec | None:
    return _REGISTRY.get(name)


def get(name: str) -> OpSpec:
    spec = lookup(name)
    if spec is None:
        raise KeyError(f"unknown op '{name}'")
    return spec


def all_ops() -> dict[str, OpSpec]:
    return dict(_REGISTRY)
