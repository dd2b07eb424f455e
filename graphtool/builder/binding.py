"""Binding a call's inputs and attrs to an op's registered signature.

Given `builder.op("ConcatV2", [[a, b], 1])`, the signature `values: N * T, axis: Tidx` says the first
argument is a list: N = 2 and T comes from the dtypes of a and b; the python value 1 becomes a Const
of the type Tidx would get (its default, int32). Every attr TensorFlow's graph construction writes
(all attrs with defaults, besides the inferred type and length attrs) is filled in, in the
signature's order. Nothing here knows about particular ops: everything comes from the OpSpec.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, NoReturn, cast

import numpy as np

from .. import dtypes
from ..dtypes import DType
from ..ir import TensorRef
from ..ops.registry import ArgSpec, OpSpec


class GraphBuildError(ValueError):
    """A node cannot be built: unknown op, wrong inputs or attrs, or a shape error. The message
    names the node and op."""


@dataclass
class BoundInputs:
    """The result of binding: flat input tensors and the attrs inferred from them."""

    refs: list[TensorRef] = field(default_factory=list)
    inferred: dict[str, object] = field(default_factory=dict)


def is_tensor(value) -> bool:
    return isinstance(value, TensorRef)


def python_dtype(value) -> DType:
    """The dtype TensorFlow gives a python or numpy value converted to a tensor: numpy arrays and
    scalars keep theirs; python floats become float32 and python ints int32 (int64 when too big)."""
    if isinstance(value, (np.ndarray, np.generic)):
        return dtypes.from_numpy(value.dtype)
    array = np.asarray(value)
    if array.dtype.kind in "OSU":
        return dtypes.string
    if array.dtype.kind == "f":
        return dtypes.float32
    if array.dtype.kind in "iu":
        fits = array.size == 0 or (array.min() >= np.iinfo(np.int32).min and array.max() <= np.iinfo(np.int32).max)
        return dtypes.int32 if fits else dtypes.int64
    return dtypes.from_numpy(array.dtype)


def to_array(value, dtype: DType | None = None, shape=None, where: str = "value") -> np.ndarray:
    """`value` as a numpy array of `dtype` (default: python_dtype), optionally filled or reshaped to
    `shape`. Refuses lossy conversions such as 1.5 -> int32 (TypeError), as TensorFlow does."""
    if is_tensor(value):
        raise TypeError(f"{where}: expected a python or numpy value, got the tensor '{value.name}'")
    target = dtypes.as_dtype(dtype) if dtype is not None else python_dtype(value)
    if target.base is dtypes.string:
        array = np.asarray(value, dtype=object)
    else:
        source = np.asarray(value)
        if source.dtype.kind in "OSU":
            raise TypeError(f"{where}: cannot convert {value!r} to {target}")
        array = source.astype(target.numpy)
        if source.dtype.kind in "fc" and not target.is_floating and not target.is_complex:
            if not np.array_equal(array.astype(source.dtype), source):
                raise TypeError(f"{where}: {value!r} cannot be represented as {target}")
    if shape is not None:
        shape = tuple(shape)
        if array.size == 1:
            array = np.full(shape, array.reshape(()), dtype=array.dtype)
        elif int(np.prod(shape, dtype=np.int64)) == array.size:
            array = array.reshape(shape)
        else:
            raise ValueError(f"{where}: {array.size} values cannot fill shape {list(shape)}")
    return array


def _show(value) -> str:
    return f"[{', '.join(map(str, value))}]" if isinstance(value, list) else str(value)


def _signature_attrs(spec: OpSpec) -> set[str]:
    """The type, type-list and length attrs that the input and output args refer to."""
    names: set[str] = set()
    for arg in (*spec.inputs, *spec.outputs):
        names.update(n for n in (arg.type_attr, arg.number_attr, arg.type_list_attr) if n)
    return names


def _normalize_signature_attr(kind: str, value):
    if kind == "type":
        return dtypes.as_dtype(value).base
    if kind == "list(type)":
        return [dtypes.as_dtype(v).base for v in value]
    return int(value)


class _Binder:
    """Binds one call. `dtype_of(ref)` reads the builder's inferred dtypes; `make_const(value,
    dtype, arg_name)` turns a python value into a Const tensor."""

    def __init__(self, spec: OpSpec, node_name: str, explicit: dict, dtype_of: Callable,
                 make_const: Callable):
        self.spec = spec
        self.where = f"node '{node_name}' ({spec.name})"
        self.dtype_of = dtype_of
        self.make_const = make_const
        # The value of each type (DType), number (int) or type-list (list[DType]) attr learnt so far.
        self.known: dict[str, Any] = {}
        # Attrs the caller gave that inputs also determine: the inputs are checked against them.
        self.explicit_types = {}
        for name in _signature_attrs(spec):
            if name in explicit:
                self.explicit_types[name] = _normalize_signature_attr(spec.attrs[name].kind, explicit[name])
        self.known.update(self.explicit_types)

    def fail(self, message: str, error=GraphBuildError) -> NoReturn:
        raise error(f"{self.where}: {message}")

    def agree(self, attr: str, value, arg: ArgSpec) -> None:
        """Record attr `attr` = value, or complain if an earlier input or the caller said otherwise."""
        previous = self.known.get(attr)
        if previous is None:
            self.known[attr] = value
        elif previous != value:
            self.fail(f"input '{arg.name}' makes {attr} = {_show(value)}, but it is already {_show(previous)}",
                      TypeError)

    def items(self, arg: ArgSpec, value) -> list:
        if arg.is_list:
            if is_tensor(value) or not isinstance(value, (list, tuple)):
                self.fail(f"input '{arg.name}' is a list of tensors; pass a list or tuple")
            return list(value)
        if not is_tensor(value) and isinstance(value, (list, tuple)) and any(is_tensor(v) for v in value):
            self.fail(f"input '{arg.name}' is one tensor, got a list of {len(value)}")
        return [value]

    # Pass 1: the tensors among the inputs fix the type and length attrs.
    def learn_from_tensors(self, arg: ArgSpec, items: list) -> None:
        if arg.number_attr is not None:
            self.agree(arg.number_attr, len(items), arg)
        if arg.is_ref:
            self.check_references(arg, items)
        found = [self.dtype_of(v).base for v in items if is_tensor(v)]
        if arg.fixed_type is not None:
            for dtype in found:
                if dtype != arg.fixed_type.base:
                    self.fail(f"input '{arg.name}' must be {arg.fixed_type.base}, got {dtype}", TypeError)
        elif arg.type_attr is not None:
            for dtype in found:
                self.agree(arg.type_attr, dtype, arg)
        elif arg.type_list_attr is not None and len(found) == len(items):
            self.agree(arg.type_list_attr, found, arg)

    def check_references(self, arg: ArgSpec, items: list) -> None:
        wrong = next((v for v in items if not (is_tensor(v) and self.dtype_of(v).is_ref)), None)
        if wrong is not None:
            got = self.dtype_of(wrong) if is_tensor(wrong) else "a python value"
            self.fail(f"input '{arg.name}' must be a reference (such as a VariableV2 output), got {got}", TypeError)

    # Pass 2: python values become Consts of the type the signature now asks for.
    def convert_values(self, arg: ArgSpec, items: list) -> list[TensorRef]:
        refs = []
        for position, item in enumerate(items):
            if is_tensor(item):
                refs.append(item)
                continue
            suffix = f"_{position}" if arg.is_list else ""
            try:
                ref = self.make_const(item, self.wanted_dtype(arg, position), arg.name + suffix)
            except (TypeError, ValueError) as exc:
                self.fail(f"input '{arg.name}': {exc}", type(exc))
            if arg.type_attr is not None:  # the first value fixes the type of the ones after it
                self.agree(arg.type_attr, self.dtype_of(ref).base, arg)
            refs.append(ref)
        if arg.type_list_attr is not None:
            self.agree(arg.type_list_attr, [self.dtype_of(r).base for r in refs], arg)
        return refs

    def wanted_dtype(self, arg: ArgSpec, position: int) -> DType | None:
        if arg.fixed_type is not None:
            return arg.fixed_type.base
        if arg.type_attr is not None:
            known = self.known.get(arg.type_attr)
            if known is not None:
                return known
            attr = self.spec.attrs[arg.type_attr]
            return cast("DType | None", attr.default) if attr.has_default else None
        listed = None if arg.type_list_attr is None else self.known.get(arg.type_list_attr)
        return listed[position] if listed is not None and position < len(listed) else None

    def bind(self, inputs) -> BoundInputs:
        inputs = list(inputs)
        if len(inputs) != len(self.spec.inputs):
            names = ", ".join(a.name for a in self.spec.inputs) or "none"
            self.fail(f"takes {len(self.spec.inputs)} input(s) ({names}), got {len(inputs)}")
        per_arg = [self.items(arg, value) for arg, value in zip(self.spec.inputs, inputs)]
        for arg, items in zip(self.spec.inputs, per_arg):
            self.learn_from_tensors(arg, items)
        bound = BoundInputs()
        for arg, items in zip(self.spec.inputs, per_arg):
            bound.refs.extend(self.convert_values(arg, items))
        bound.inferred = {k: v for k, v in self.known.items() if k not in self.explicit_types}
        return bound


def bind_inputs(spec: OpSpec, inputs, explicit: dict, node_name: str, dtype_of: Callable,
                make_const: Callable) -> BoundInputs:
    """Flatten `inputs` (one entry per input arg; a list for list args) into TensorRefs, creating
    Consts for python values, and infer the signature's type/length attrs from them."""
    return _Binder(spec, node_name, explicit, dtype_of, make_const).bind(inputs)


def complete_attrs(spec: OpSpec, explicit: dict, inferred: dict, node_name: str) -> dict:
    """Every attr the node gets, in signature order: the caller's, then inferred ones, then the
    registry defaults (TensorFlow writes all of them into the NodeDef). Private `_attrs` (such as
    `_class`) pass through. Raises GraphBuildError for unknown or missing attrs."""
    where = f"node '{node_name}' ({spec.name})"
    unknown = [k for k in explicit if k not in spec.attrs and not k.startswith("_")]
    if unknown:
        known = ", ".join(spec.attrs) or "none"
        raise GraphBuildError(f"{where}: no attr named {', '.join(map(repr, unknown))} (its attrs: {known})")
    attrs = {}
    for name, attr in spec.attrs.items():
        if name in explicit:
            attrs[name] = explicit[name]
        elif name in inferred:
            attrs[name] = inferred[name]
        elif attr.has_default:
            attrs[name] = attr.default
        else:
            raise GraphBuildError(f"{where}: attr '{name}' ({attr.kind}) is required and cannot be "
                                  f"inferred from the inputs; pass {name}=...")
    attrs.update((k, v) for k, v in explicit.items() if k.startswith("_"))
    return attrs
