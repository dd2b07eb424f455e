"""Compare dftool's op registry with TensorFlow's op definitions (needs tensorflow installed).

    python tools/check_tf_opdefs.py [OP ...]    # default: every registered op

For each op: input/output arg names and typing (fixed type, type attr, number attr, type-list attr,
ref), and attrs (name, kind, default, allowed types/strings). Ops TensorFlow does not know (our own
fused ops, for instance) are listed separately. Exit 1 on any difference.
"""
import os
import sys
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import tensorflow  # noqa: E402,F401  (loads TensorFlow's op registry)
from tensorflow.python.framework import op_def_registry  # noqa: E402

from graphtool import dtypes  # noqa: E402
from graphtool.attrs import decode  # noqa: E402
from graphtool.ops import registry  # noqa: E402
from graphtool.proto.attr_value_pb2 import AttrValue  # noqa: E402


def _their_arg(arg):
    return (arg.name, dtypes.from_enum(arg.type).name if arg.type else None, arg.type_attr or None,
            arg.number_attr or None, arg.type_list_attr or None, arg.is_ref)


def _our_arg(arg):
    return (arg.name, arg.fixed_type.name if arg.fixed_type else None, arg.type_attr,
            arg.number_attr, arg.type_list_attr, arg.is_ref)


def _their_attr(attr):
    default = None
    if attr.HasField("default_value"):
        converted = AttrValue()
        converted.ParseFromString(attr.default_value.SerializeToString())
        default = _normalize(decode(converted))
    allowed = None
    if attr.HasField("allowed_values"):
        values = attr.allowed_values.list
        if values.type:
            allowed = sorted(dtypes.from_enum(t).name for t in values.type)
        elif values.s:
            allowed = sorted(v.decode() for v in values.s)
    minimum = attr.minimum if attr.has_minimum else None
    return (attr.type, default, allowed, minimum)


def _our_attr(spec):
    allowed = None
    if spec.allowed is not None:
        allowed = sorted(d.name for d in spec.allowed)
    elif spec.allowed_strings is not None:
        allowed = sorted(spec.allowed_strings)
    default = _normalize(spec.default) if spec.has_default else None
    return (spec.kind, default, allowed, spec.minimum)


def _normalize(value):
    if isinstance(value, list):
        return [_normalize(v) for v in value]
    if hasattr(value, "dims"):
        return ("shape", value.dims)
    if hasattr(value, "tolist") and hasattr(value, "shape"):   # a tensor attr's value (numpy array)
        return ("tensor", str(value.dtype), list(value.shape), value.tolist())
    if hasattr(value, "enum"):
        return value.name
    if isinstance(value, float):
        return round(value, 6)
    return value


def compare(name):
    ours = registry.get(name)
    theirs = op_def_registry.get(name)
    if theirs is None:
        return None
    diffs = []
    for label, their_args, our_args in (("inputs", theirs.input_arg, ours.inputs),
                                        ("outputs", theirs.output_arg, ours.outputs)):
        a = [_their_arg(x) for x in their_args]
        b = [_our_arg(x) for x in our_args]
        if a != b:
            diffs.append(f"{label}: tensorflow {a} vs dftool {b}")
    their_attrs = {a.name: _their_attr(a) for a in theirs.attr}
    our_attrs = {n: _our_attr(s) for n, s in ours.attrs.items()}
    for attr_name in sorted(set(their_attrs) | set(our_attrs)):
        if their_attrs.get(attr_name) != our_attrs.get(attr_name):
            diffs.append(f"attr {attr_name}: tensorflow {their_attrs.get(attr_name)} vs dftool {our_attrs.get(attr_name)}")
    if bool(theirs.is_stateful) != ours.stateful:
        diffs.append(f"stateful: tensorflow {theirs.is_stateful} vs dftool {ours.stateful}")
    return diffs


def main(argv):
    names = argv or sorted(registry.all_ops())
    unknown, failing = [], 0
    for name in names:
        diffs = compare(name)
        if diffs is None:
            unknown.append(name)
            continue
        if diffs:
            failing += 1
            print(f"{name}:")
            for d in diffs:
                print(f"  {d}")
    if unknown:
        print("not TensorFlow ops (not compared): " + ", ".join(unknown))
    print(f"{len(names) - len(unknown)} ops compared, {failing} differ")
    return 1 if failing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
