"""What a placeholder's consumers require of its values, for generated feeds.

An integer placeholder that indexes (Gather, GatherV2, ResourceGather, GatherNd, OneHot,
UnsortedSegment*), divides, permutes (Transpose, InvertPermutation), names an axis, gives a
shape (Reshape, Slice, StridedSlice, Tile, Fill) or a sequence length (ReverseSequence) gets
values that work there; a string placeholder parsed as numbers, CSV records or tf.train.Example
protos gets text of that form; the three placeholders of a SparseTensor (indices, values,
dense_shape) get consistent coordinates. Consumers are found through ops that pass values along
(Identity, Cast, Enter, Switch, Merge, Exit, Reshape/ExpandDims/Squeeze of the value...).

`constraints(graph, shapes, feed_dims)` -> node name -> Constraint, where `shapes` is the
ShapeResult of the graph with the generated feeds' concrete shapes (so a Gather's params dim is
known); `values_for` then draws values meeting one; `derived_dims` fills unknown dims a consumer
fixes.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .. import dtypes
from ..ir import Graph, Node, TensorRef
from ..proto import example_pb2
from ..shape_inference import ShapeResult
from ..shapes import has_rank

# Ops whose output 0 carries input 0's values (or a reshaped / cast copy of them).
_PASS_ALONG = frozenset({"Identity", "RefIdentity", "Snapshot", "StopGradient", "Cast", "Enter", "RefEnter",
                         "Switch", "RefSwitch", "Merge", "RefMerge", "Exit", "RefExit", "NextIteration",
                         "Reshape", "ExpandDims", "Squeeze", "IdentityN", "Unique",
                         # text cleaned before it is parsed (a number stays a number)
                         "StaticRegexReplace", "RegexReplace", "StringStrip", "StringLower", "StringUpper"})
# Ops whose input `slot` is an axis of input `of` (value in [0, rank)).
_AXIS_SLOTS = {
    **{op: (1, 0) for op in ("Sum", "Mean", "Max", "Min", "Prod", "All", "Any", "ArgMax", "ArgMin", "Cumsum",
                              "Cumprod", "ReverseV2", "EuclideanNorm")},
    "Split": (0, 1), "SplitV": (2, 0), "GatherV2": (2, 0), "ConcatV2": (-1, 0), "Concat": (0, 1),
}
_DIVIDING = frozenset({"Div", "FloorDiv", "FloorMod", "Mod", "TruncateDiv", "TruncateMod", "RealDiv", "DivNoNan"})
# Sparse ops: (indices slot, dense shape slot) of the SparseTensor they read.
_SPARSE_SLOTS = {"SparseFillEmptyRows": (0, 2), "SparseReshape": (0, 1)}
_MAX_WALK = 256


@dataclass
class Constraint:
    """What the values of one placeholder must be. `low`/`high`: integers in [low, high);
    `permutation`; `exact`: these values (when their size fits); `text`: a string form
    ("number:int", "number:float", "csv" with `csv` fields and `delimiter`, "example" with the
    serialized `example`); `sparse`: a SparseTensor part ("indices" or "dense_shape") of the
    dense shape `sparse_dense`."""

    low: int = 0
    high: int | None = None
    permutation: bool = False
    exact: np.ndarray | None = None
    text: str | None = None
    csv: list[str] = field(default_factory=list)
    delimiter: str = ","
    example: bytes | None = None
    sparse: str | None = None
    sparse_dense: list[int] | None = None

    def bound(self, low: int | None = None, high: int | None = None) -> None:
        if low is not None:
            self.low = max(self.low, low)
        if high is not None:
            self.high = high if self.high is None else min(self.high, high)


def constraints(graph: Graph, shapes: ShapeResult, feed_dims: dict[str, list[int]]) -> dict[str, Constraint]:
    """Node name -> Constraint for each placeholder in `feed_dims` (name -> the dims it will be
    generated with) that some consumer constrains."""
    found: dict[str, Constraint] = {}
    for name, dims in feed_dims.items():
        node = graph.get(name)
        if node is None:
            continue
        constraint = Constraint()
        if _collect(node, constraint, shapes, dims, feed_dims):
            found[name] = constraint
    return found


def _uses(node: "Node | _OutputView"):
    """(consumer, slot) of every use of `node`'s values, through ops that pass them along."""
    seen, pending, steps = {node}, [node], 0
    while pending and steps < _MAX_WALK:
        current = pending.pop()
        steps += 1
        for consumer, slot in current.uses():
            if consumer.op in _PASS_ALONG and slot == 0:
                if consumer not in seen:
                    seen.add(consumer)
                    pending.append(consumer)
                continue
            yield consumer, slot


def _shape(shapes: ShapeResult, ref: TensorRef) -> list[int | None] | None:
    shape = shapes.shape(ref)
    return list(shape.dims) if has_rank(shape) else None


def _dim(shapes: ShapeResult, ref: TensorRef, axis: int) -> int | None:
    dims = _shape(shapes, ref)
    if dims is None or not -len(dims) <= axis < len(dims):
        return None
    return dims[axis]


def _scalar(shapes: ShapeResult, ref: TensorRef) -> int | None:
    value = shapes.value(ref)
    if value is None or value.size != 1:
        return None
    return int(value.reshape(-1)[0])


def _collect(node: Node, c: Constraint, shapes: ShapeResult, dims: list[int], feed_dims) -> bool:
    """Fill `c` from the consumers of `node`; whether anything constrains it."""
    dtype = node.attr("dtype", None) if node.op != "_Arg" else node.attr("T", None)
    is_int = isinstance(dtype, dtypes.DType) and dtype.base.is_integer
    is_text = isinstance(dtype, dtypes.DType) and dtype.base is dtypes.string
    constrained = False
    for consumer, slot in _uses(node):
        ins = consumer.inputs
        op = consumer.op
        if is_text:
            constrained |= _text_use(consumer, slot, c, shapes)
            continue
        if not is_int:
            continue
        if op in _SPARSE_SLOTS:
            constrained |= _sparse_use(consumer, slot, c, shapes, feed_dims)
            continue
        if op == "Gather" and slot == 1:
            c.bound(0, _dim(shapes, ins[0], 0))
        elif op == "GatherV2" and slot == 1:
            axis = _scalar(shapes, ins[2])
            c.bound(0, _dim(shapes, ins[0], axis) if axis is not None else None)
        elif op == "ResourceGather" and slot == 1:
            c.bound(0, _variable_dim0(ins[0]))
        elif op == "GatherNd" and slot == 1:
            params = _shape(shapes, ins[0])
            depth = dims[-1] if dims else None
            if params is not None and depth is not None and depth <= len(params):
                known = [d for d in params[:depth] if d is not None]
                c.bound(0, min(known) if known else None)
        elif op == "OneHot" and slot == 0:
            c.bound(0, _scalar(shapes, ins[1]))
        elif op == "OneHot" and slot == 1:
            c.bound(1, 4)
        elif op in ("UnsortedSegmentSum", "UnsortedSegmentMax", "UnsortedSegmentMin", "UnsortedSegmentProd") \
                and slot == 1:
            c.bound(0, _scalar(shapes, ins[2]))
        elif op in _DIVIDING and slot == 1:
            c.bound(1)
        elif (op in ("Transpose", "ConjugateTranspose") and slot == 1) or (op == "InvertPermutation" and slot == 0):
            c.permutation = True
        elif op == "Reshape" and slot == 1:
            c.exact = _known(shapes, ins[0])
        elif op == "Slice" and slot in (1, 2):
            full = _known(shapes, ins[0])
            c.exact = None if full is None else (np.zeros_like(full) if slot == 1 else full)
        elif op == "StridedSlice" and slot in (1, 2, 3):
            full = _known(shapes, ins[0])
            c.exact = None if full is None else (np.zeros_like(full) if slot == 1 else full if slot == 2
                                                 else np.ones_like(full))
        elif (op == "Tile" and slot == 1) or (op == "Fill" and slot == 0) or (op == "Range" and slot == 2):
            c.bound(1, 3)
        elif op == "ReverseSequence" and slot == 1:
            length = _dim(shapes, ins[0], consumer.attr("seq_dim", 1))
            c.bound(0, None if length is None else length + 1)
        elif op == "ExpandDims" and slot == 1:
            c.bound(0, 1)
        elif op in _AXIS_SLOTS and slot == (_AXIS_SLOTS[op][0] % len(ins)):
            rank = _shape(shapes, ins[_AXIS_SLOTS[op][1]])
            c.bound(0, max(1, len(rank)) if rank is not None else None)
        else:
            continue
        constrained = True
    return constrained


def _known(shapes: ShapeResult, ref: TensorRef) -> np.ndarray | None:
    dims = _shape(shapes, ref)
    if dims is None or any(d is None for d in dims):
        return None
    return np.array(dims, np.int64)


def _variable_dim0(ref: TensorRef) -> int | None:
    """Dim 0 of the variable a resource handle reads (its VarHandleOp's shape attr)."""
    node = ref.node
    for _ in range(_MAX_WALK):
        if node.op == "VarHandleOp":
            shape = node.attr("shape", None)
            return shape.dims[0] if shape is not None and has_rank(shape) and shape.dims else None
        if node.op not in _PASS_ALONG or not node.inputs:
            return None
        node = node.inputs[0].node
    return None


def _text_use(consumer: Node, slot: int, c: Constraint, shapes: ShapeResult) -> bool:
    op = consumer.op
    if op == "StringToNumber" and slot == 0:
        out = consumer.attr("out_type", dtypes.float32)
        c.text = "number:int" if out.base.is_integer else "number:float"
    elif op == "DecodeCSV" and slot == 0:
        c.text = "csv"
        fields = _csv_fields(consumer, shapes)
        # Several parses of the same records (select_cols): the longest record, typed by each.
        width = max(len(c.csv), len(fields))
        c.csv = [mine if mine is not None else theirs for mine, theirs in
                 zip(c.csv + [None] * (width - len(c.csv)), fields + [None] * (width - len(fields)))]
        delimiter = consumer.attr("field_delim", ",")
        c.delimiter = delimiter.decode() if isinstance(delimiter, bytes) else str(delimiter)
    elif op in ("ParseSingleExample", "ParseExampleV2") and slot == 0:
        c.text = "example"
        c.example = _example(consumer, shapes)
    else:
        return False
    return True


def _csv_fields(decode: Node, shapes: ShapeResult) -> list:
    """One text field per column a DecodeCSV reads (all of them up to its last select_cols entry):
    a number where the column's default is numeric or its text is converted to a number."""
    defaults = decode.inputs[1:]
    select = [int(i) for i in decode.attr("select_cols", [])]
    columns = select if select else list(range(len(defaults)))
    fields: list = ["1"] * ((max(columns) + 1) if columns else 0)
    for index, column in enumerate(columns):
        dtype = shapes.dtype(defaults[index]).base
        numeric = dtype.is_integer or dtype.is_floating or any(
            use.op == "StringToNumber" for use, _ in _uses(_OutputView(decode, index)))
        fields[column] = "1" if dtype.is_integer or (numeric and not dtype.is_floating) else \
            "0.5" if numeric else "text"
    return fields


class _OutputView:
    """Output `index` of a node, seen as a node for _uses (which follows output 0 onwards)."""

    def __init__(self, node: Node, index: int):
        self.node, self.index = node, index

    def uses(self):
        return self.node.uses(self.index)


def _example(consumer: Node, shapes: ShapeResult) -> bytes:
    """A serialized tf.train.Example with every key the parse op reads: dense features with as
    many values as their shape holds (unknown dims 1), sparse and ragged ones with one value."""
    ins = consumer.inputs
    if consumer.op == "ParseSingleExample":
        dense_keys = [str(k) for k in consumer.attr("dense_keys", [])]
        sparse_keys = [str(k) for k in consumer.attr("sparse_keys", [])]
        ragged: list[tuple[str, dtypes.DType]] = []
    else:   # ParseExampleV2(serialized, names, sparse_keys, dense_keys, ragged_keys, dense_defaults)
        sparse_keys = _text_list(shapes, ins[2])
        dense_keys = _text_list(shapes, ins[3])
        ragged = list(zip(_text_list(shapes, ins[4]), consumer.attr("ragged_value_types", [])))
    example = example_pb2.Example()
    features = example.features.feature
    for key, dtype, shape in zip(dense_keys, consumer.attr("Tdense", []), consumer.attr("dense_shapes", [])):
        count = int(np.prod([1 if d is None else d for d in shape.dims])) if has_rank(shape) else 1
        _fill(features[key], dtype, count)
    for key, dtype in zip(sparse_keys, consumer.attr("sparse_types", [])):
        _fill(features[key], dtype, 1)
    for key, dtype in ragged:
        _fill(features[key], dtype, 1)
    return example.SerializeToString()


def _text_list(shapes: ShapeResult, ref: TensorRef) -> list[str]:
    found = shapes.info.get(ref)
    value = found.value if found is not None else None
    if value is None and ref.node.op == "Const":
        value = ref.node.attr("value", None)
    if value is None:
        return []
    return [v.decode() if isinstance(v, bytes) else str(v) for v in np.asarray(value).reshape(-1)]


def _fill(feature, dtype: dtypes.DType, count: int) -> None:
    base = dtype.base
    if base.is_integer:
        feature.int64_list.value.extend([1] * count)
    elif base.is_floating:
        feature.float_list.value.extend([0.5] * count)
    else:
        feature.bytes_list.value.extend([b"text"] * count)


def _sparse_use(consumer: Node, slot: int, c: Constraint, shapes: ShapeResult, feed_dims) -> bool:
    """The indices or dense shape of a SparseTensor: `rows` coordinates (one per value, row i at
    [i, 0, ...]) inside a dense shape of [rows, 2, ...]."""
    indices_slot, shape_slot = _SPARSE_SLOTS[consumer.op]
    if slot not in (indices_slot, shape_slot):
        return False
    indices = consumer.inputs[indices_slot]
    rows_dims = feed_dims.get(_source(indices).name) or _shape(shapes, indices)
    dense_ref = consumer.inputs[shape_slot]
    rank_dims = feed_dims.get(_source(dense_ref).name) or _shape(shapes, dense_ref)
    rows = rows_dims[0] if rows_dims and rows_dims[0] is not None else 1
    rank = rank_dims[0] if rank_dims and rank_dims[0] is not None else 2
    dense = [max(rows, 1)] + [2] * (rank - 1)
    c.sparse = "indices" if slot == indices_slot else "dense_shape"
    c.sparse_dense = dense
    return True


def _source(ref: TensorRef) -> Node:
    node = ref.node
    for _ in range(_MAX_WALK):
        if node.op not in _PASS_ALONG or not node.inputs:
            return node
        node = node.inputs[0].node
    return node


# Elementwise ops whose inputs broadcast together: an unknown dim takes its partner's size.
_BROADCASTING = frozenset({"Add", "AddV2", "Sub", "Mul", "RealDiv", "Div", "DivNoNan", "Maximum", "Minimum", "Pow",
                           "SquaredDifference", "Less", "LessEqual", "Greater", "GreaterEqual", "Equal", "NotEqual",
                           "LogicalAnd", "LogicalOr", "FloorDiv", "FloorMod", "Mod", "TruncateDiv", "Substr",
                           "SelectV2", "Atan2"})


def derived_dims(node: Node, dims: list[int | None], shapes: ShapeResult) -> list[int | None]:
    """`dims` (a placeholder's declared dims) with unknown dims filled in where a consumer fixes
    them: a Reshape of the value to a constant shape (one unknown dim: the element counts must
    match), a MatMul's inner dimension, an elementwise op's other operand (broadcasting)."""
    dims = list(dims)
    for consumer, slot in _direct_uses(node):
        if None not in dims:
            break
        if consumer.op == "Reshape" and slot == 0:
            dims = _reshaped(dims, shapes.value(consumer.inputs[1]))
        elif consumer.op == "MatMul" and len(dims) == 2:
            other = _shape(shapes, consumer.inputs[1 - slot])
            if other is None or len(other) != 2:
                continue
            transposed = consumer.attr("transpose_a" if slot == 0 else "transpose_b", False)
            other_transposed = consumer.attr("transpose_b" if slot == 0 else "transpose_a", False)
            inner = other[(1 if other_transposed else 0) if slot == 0 else (0 if other_transposed else 1)]
            mine = (0 if transposed else 1) if slot == 0 else (1 if transposed else 0)
            if dims[mine] is None and inner is not None:
                dims[mine] = inner
        elif consumer.op in _BROADCASTING:
            for ref in consumer.inputs:
                other = _shape(shapes, ref)
                if ref.node is node or other is None:
                    continue
                for back in range(1, min(len(dims), len(other)) + 1):
                    size = other[-back]
                    if dims[-back] is None and size is not None and size > 1:
                        dims[-back] = size
    return dims


def _reshaped(dims: list[int | None], target) -> list[int | None]:
    """One unknown dim set so that the element count matches a constant Reshape target."""
    if target is None or (target < 0).any() or sum(d is None for d in dims) != 1:
        return dims
    known = int(np.prod([d for d in dims if d is not None]))
    count = int(np.prod(target))
    if known == 0 or count % known:
        return dims
    return [count // known if d is None else d for d in dims]


def _direct_uses(node: Node):
    """(consumer, slot) of `node`'s output 0, through Identity-like ops only."""
    pending, steps = [node], 0
    while pending and steps < _MAX_WALK:
        current = pending.pop()
        steps += 1
        for consumer, slot in current.uses(0):
            if consumer.op in ("Identity", "Snapshot", "StopGradient"):
                pending.append(consumer)
            else:
                yield consumer, slot


def values_for(c: Constraint, rng, dims: list[int], dtype: dtypes.DType) -> np.ndarray | None:
    """Values of `dims` and `dtype` meeting `c`, or None when `c` cannot be met at that shape
    (the caller falls back to its default values)."""
    count = int(np.prod(dims)) if dims else 1
    if c.text is not None:
        if c.text == "number:int":
            return np.array([str(v).encode() for v in rng.integers(0, 10, count)], dtype=object).reshape(dims)
        if c.text == "number:float":
            return np.array([f"{v:.3f}".encode() for v in rng.uniform(0.5, 1.5, count)], dtype=object).reshape(dims)
        if c.text == "csv":
            return np.full(dims, c.delimiter.join(c.csv).encode(), dtype=object)
        if c.text == "example":
            return np.full(dims, c.example or b"", dtype=object)
        return None
    if c.sparse is not None and c.sparse_dense is not None:
        dense = c.sparse_dense
        if c.sparse == "dense_shape":
            return np.array(dense, dtype=dtype.numpy) if dims == [len(dense)] else None
        if len(dims) != 2 or dims[1] != len(dense):
            return None
        coords = np.zeros(dims, dtype=dtype.numpy)
        coords[:, 0] = np.arange(dims[0]) % max(dense[0], 1)
        return coords
    if c.exact is not None:
        return c.exact.astype(dtype.numpy).reshape(dims) if c.exact.size == count else None
    if c.permutation:
        return rng.permutation(dims[0]).astype(dtype.numpy) if len(dims) == 1 else None
    high = c.high if c.high is not None else c.low + 3   # unbounded: small values from the low end
    if high <= c.low:
        return None
    return rng.integers(c.low, high, size=dims).astype(dtype.numpy)
