"""cse: common subexpression elimination — merge nodes that compute the same value.

    before: a = Mul(x, y);  b = Mul(y, x);  out = Sub(a, b)
    after:  a = Mul(x, y);                  out = Sub(a, a)

Two nodes are the same when they have the same op, device, loop frame, attrs (every AttrValue
except the informational `_output_shapes`), control inputs (as a set) and data inputs (in order;
as a multiset for commutative ops). Consts are compared by value (dtype, shape and bytes), so two
encodings of one value merge and -0.0 never merges with 0.0. Side-effecting nodes (stateful,
control flow, placeholders, NoOps) never merge.

The pass is value numbering (hash-consing): nodes are visited in topological order and each gets
the number of its equivalence class; keys are built from the class numbers of the inputs, so a
merge cascades to the consumers within one run. The survivor of a class is its first node, unless
a later one is protected (fetched/kept): that one then takes over. Two protected duplicates both
stay (each keeps its name), but share a class, so their consumers still merge.
"""
from __future__ import annotations

import hashlib
from itertools import count

from .. import dtypes
from ..errors import DftoolError
from ..ir import Graph, Node
from .base import Pass, PassContext, PassResult, const_value_within, redirect_outputs, register_pass

# Shape annotations describe the outputs; they never make two computations different.
_IGNORED_ATTRS = frozenset({"_output_shapes"})


@register_pass
class CommonSubexpressionElimination(Pass):
    name = "cse"
    description = "merge nodes with the same op, attrs, inputs, device and frame"

    def run(self, graph: Graph, ctx: PassContext) -> PassResult:
        return _ValueNumbering(graph, ctx).run()


class _ValueNumbering:
    """One run of the pass: class numbers per node and the surviving node of each key."""

    def __init__(self, graph: Graph, ctx: PassContext):
        self.graph = graph
        self.ctx = ctx
        self.frame_of = graph.frames().frame_of
        self.class_of: dict[Node, int] = {}
        self.survivor: dict[tuple, Node] = {}
        self._fresh = count()
        self.merged = 0

    def run(self) -> PassResult:
        for node in self.graph.topological_order():
            key = self._key(node)
            if key is None:
                self.class_of[node] = next(self._fresh)
            else:
                self._number(node, key)
        return PassResult.from_counts(nodes_merged=self.merged)

    def _number(self, node: Node, key: tuple) -> None:
        """Give `node` the class of an equal earlier node (merging the two), or a new class."""
        earlier = self.survivor.get(key)
        if earlier is None or not _same_const_value(earlier, node, self.ctx.fold_max_bytes):
            self.survivor[key] = node
            self.class_of[node] = next(self._fresh)
            return
        self.class_of[node] = self.class_of[earlier]
        node_protected, earlier_protected = self.ctx.is_protected(node), self.ctx.is_protected(earlier)
        if node_protected and earlier_protected:
            return  # both names must survive
        if node_protected:
            self._merge(earlier, into=node)
            self.survivor[key] = node
        else:
            self._merge(node, into=earlier)

    def _merge(self, duplicate: Node, into: Node) -> None:
        # `into` has the very same inputs as `duplicate`, so no user of `duplicate` is among its
        # ancestors: rewiring cannot make a cycle.
        redirect_outputs(self.graph, duplicate, into.outputs)
        self.graph.remove_node(duplicate)
        self.merged += 1

    # --- keys -----------------------------------------------------------------------------------
    def _key(self, node: Node) -> tuple | None:
        """What must be equal for two nodes to compute the same value; None: never merge."""
        # Switch is pure routing: two with the same data, predicate and frame are one.
        if self.ctx.is_side_effecting(node) and node.op != "Switch":
            return None
        inputs = self._data_input_key(node)
        controls = self._control_input_key(node)
        if inputs is None or controls is None:
            return None  # an input not numbered yet (only behind a loop back edge)
        attrs = _attrs_key(node, self.ctx.fold_max_bytes)
        if attrs is None:
            return None
        frame = self.frame_of[node].name if node in self.frame_of else ""
        return (node.op, node.device, frame, attrs, inputs, controls)

    def _data_input_key(self, node: Node) -> tuple | None:
        refs = []
        for ref in node.inputs:
            number = self.class_of.get(ref.node)
            if number is None:
                return None
            refs.append((number, ref.index))
        if self._inputs_commute(node):
            refs.sort()
        return tuple(refs)

    def _control_input_key(self, node: Node) -> frozenset | None:
        numbers = [self._control_class(control) for control in node.control_inputs]
        if None in numbers:
            return None
        return frozenset(numbers)

    def _control_class(self, control: Node):
        """What a control input stands for. A loop pivot (Identity of a Switch's true port whose
        predicate is a LoopCond) stands for "this iteration runs": every pivot of one loop is live
        or dead together, so Consts hanging on different pivots of a loop are one value."""
        if control.op == "Identity" and len(control.inputs) == 1:
            switch = control.inputs[0]
            if switch.node.op == "Switch" and switch.index == 1 and len(switch.node.inputs) == 2:
                predicate = switch.node.inputs[1]
                if predicate.node.op == "LoopCond" and predicate.node in self.class_of:
                    return ("pivot", self.class_of[predicate.node], predicate.index)
        return self.class_of.get(control)

    def _inputs_commute(self, node: Node) -> bool:
        """Whether input order may be ignored. Add on strings concatenates (not commutative), and
        reordering a sum of more than two floats changes its rounding (not under strict_fp)."""
        spec = node.spec
        if not spec.commutative or len(node.inputs) < 2:
            return False
        try:
            input_dtypes = spec.input_dtypes(node)
        except Exception:  # malformed attrs: verify() reports them; do not reorder blindly
            return False
        if any(d.base is dtypes.string for d in input_dtypes):
            return False
        if self.ctx.strict_fp and len(node.inputs) > 2:
            return not any(d.base.is_floating or d.base.is_complex for d in input_dtypes)
        return True


def _attrs_key(node: Node, budget: int) -> tuple | None:
    """Every attr but the ignored ones, as deterministic proto bytes; a Const's value by content
    (None when it cannot be decoded: verify() reports that, and such a Const is left alone).
    A filled Const that would expand beyond `budget` bytes is compared by its encoding instead."""
    items = []
    for name in sorted(node.attrs):
        if name in _IGNORED_ATTRS:
            continue
        # A Const can be copied anywhere: its colocation hint (TensorFlow's gradient code adds one
        # pointing at whatever it was made for) does not make two equal constants different.
        if node.op == "Const" and name == "_class":
            continue
        if node.op == "Const" and name == "value":
            try:
                items.append((name, _const_value_key(node, budget)))
            except DftoolError:
                return None
        else:
            items.append((name, node.attrs[name].SerializeToString(deterministic=True)))
    return tuple(items)


def _const_value(node: Node, budget: int):
    """The decoded value, or the proto's own bytes for a filled constant too big to expand (two
    such merge only when encoded alike: conservative, and costs nothing)."""
    value = const_value_within(node, budget)
    return node.attrs["value"].tensor.SerializeToString(deterministic=True) if value is None else value


def _value_bytes(value) -> bytes:
    """The exact content of a decoded tensor: raw bytes (so -0.0 != 0.0 and a NaN payload counts),
    or the joined elements for string/object tensors."""
    if isinstance(value, bytes):
        return value
    if value.dtype == object:
        return b"\x00".join(len(v).to_bytes(8, "little") + v if isinstance(v, bytes) else repr(v).encode()
                            for v in value.reshape(-1))
    return value.tobytes()


def _const_value_key(node: Node, budget: int) -> tuple:
    """dtype, shape and a digest of the bytes (the bytes themselves are compared on a match)."""
    value = _const_value(node, budget)
    if isinstance(value, bytes):
        return "encoded", hashlib.sha256(value).digest()
    return str(value.dtype), value.shape, hashlib.sha256(_value_bytes(value)).digest()


def _same_const_value(a: Node, b: Node, budget: int) -> bool:
    """Confirm a digest match byte for byte (non-Consts matched on their whole key already)."""
    if a.op != "Const":
        return True
    return _value_bytes(_const_value(a, budget)) == _value_bytes(_const_value(b, budget))
