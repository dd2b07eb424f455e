"""Shapes, dtypes and flags of the string, parsing and lookup families on tiny graphs (what
TensorFlow 2.21's shape functions give for the same inputs; the fixtures check the rest)."""
import numpy as np
import pytest

from graphtool import dtypes
from graphtool.errors import InvalidGraphError
from graphtool.ir import Graph
from graphtool.ops import registry
from graphtool.shape_inference import infer_shapes
from graphtool.shapes import Shape

S, I32, I64, F32 = dtypes.string, dtypes.int32, dtypes.int64, dtypes.float32


def placeholder(g, name, dtype=S, shape=None):
    attrs = {"dtype": dtype}
    if shape is not None:
        attrs["shape"] = Shape.of(shape)
    return g.add_node("Placeholder", name, attrs=attrs).output()


def const(g, name, value, dtype):
    return g.add_node("Const", name, attrs={"value": np.asarray(value, dtype.numpy), "dtype": dtype}).output()


def shapes_of(g, node):
    result = infer_shapes(g, strict=True)
    count = len(node.spec.output_dtypes(node))
    return [(result.dtype(node.output(i)), result.shape(node.output(i))) for i in range(count)]


def test_split_join_substr_shapes():
    g = Graph()
    x = placeholder(g, "x", shape=[None])
    split = g.add_node("StringSplitV2", "split", inputs=[x, const(g, "sep", b",", S)])
    m = placeholder(g, "m", shape=[2, 3])
    join = g.add_node("StringJoin", "join", inputs=[m, const(g, "lit", b"!", S), m], attrs={"N": 3})
    pos = placeholder(g, "pos", I32, [3])
    sub = g.add_node("Substr", "sub", inputs=[m, pos, pos], attrs={"T": I32})
    raw = g.add_node("DecodeRaw", "raw", inputs=[m], attrs={"out_type": F32})
    assert shapes_of(g, split) == [(I64, Shape([None, 2])), (S, Shape([None])), (I64, Shape([2]))]
    assert shapes_of(g, join) == [(S, Shape([2, 3]))]
    assert shapes_of(g, sub) == [(S, Shape([2, 3]))]
    assert shapes_of(g, raw) == [(F32, Shape([2, 3, None]))]


def test_join_refuses_different_non_scalar_shapes():
    g = Graph()
    g.add_node("StringJoin", "join", inputs=[placeholder(g, "a", shape=[2]), placeholder(g, "b", shape=[3])],
               attrs={"N": 2})
    with pytest.raises(InvalidGraphError, match="same shape"):
        infer_shapes(g, strict=True)


def test_decode_csv_shapes_and_default_ranks():
    g = Graph()
    records = placeholder(g, "records", shape=[4, None])
    csv = g.add_node("DecodeCSV", "csv", inputs=[records, const(g, "d0", [1], I32), const(g, "d1", [b"x"], S)],
                     attrs={"OUT_TYPE": [I32, S]})
    assert shapes_of(g, csv) == [(I32, Shape([4, None])), (S, Shape([4, None]))]
    g2 = Graph()
    g2.add_node("DecodeCSV", "csv", inputs=[placeholder(g2, "r", shape=[2]), const(g2, "d", [[1]], I32)],
                attrs={"OUT_TYPE": [I32]})
    with pytest.raises(InvalidGraphError, match="scalar or a vector"):
        infer_shapes(g2, strict=True)


@pytest.mark.parametrize("batch, rank", [([None], 2), ([], 1)])
def test_parse_example_v2_shapes(batch, rank):
    g = Graph()
    serialized = placeholder(g, "serialized", shape=batch)
    empty = const(g, "empty", np.empty(0, object), S)
    keys = const(g, "dense_keys", [b"a", b"b"], S)
    node = g.add_node("ParseExampleV2", "parse",
                      inputs=[serialized, empty, const(g, "sparse_keys", [b"s"], S), keys,
                              const(g, "ragged_keys", [b"r"], S), const(g, "da", [0.0, 0.0], F32),
                              const(g, "db", [0], I64)],
                      attrs={"Tdense": [F32, I64], "num_sparse": 1, "sparse_types": [S], "ragged_value_types": [F32],
                             "ragged_split_types": [I32], "dense_shapes": [Shape([2]), Shape([None])]})
    assert shapes_of(g, node) == [(I64, Shape([None, rank])), (S, Shape([None])), (I64, Shape([rank])),
                                  (F32, Shape([*batch, 2])), (I64, Shape([*batch, None])), (F32, Shape([None])),
                                  (I32, Shape([None]))]


def test_lookup_find_has_the_keys_shape_through_handle_data():
    g = Graph()
    table = g.add_node("HashTableV2", "table", attrs={"key_dtype": S, "value_dtype": I64})
    keys = placeholder(g, "keys", shape=[2, None])
    find = g.add_node("LookupTableFindV2", "find", inputs=[table.output(), keys, const(g, "d", -1, I64)],
                      attrs={"Tin": S, "Tout": I64})
    size = g.add_node("LookupTableSizeV2", "size", inputs=[table.output()])
    assert shapes_of(g, table) == [(dtypes.resource, Shape.scalar())]
    assert shapes_of(g, find) == [(I64, Shape([2, None]))]
    assert shapes_of(g, size) == [(I64, Shape.scalar())]
    legacy = g.add_node("HashTable", "legacy", attrs={"key_dtype": S, "value_dtype": I64})
    assert shapes_of(g, legacy) == [(S.ref, Shape([2]))]


def test_side_effect_flags_follow_tensorflow():
    for op in ("HashTableV2", "MutableHashTableV2", "LookupTableFindV2", "LookupTableImportV2",
               "LookupTableInsertV2", "InitializeTableV2", "LookupTableSizeV2", "LookupTableExportV2", "HashTable"):
        assert registry.get(op).stateful, op
    for op in ("StringSplitV2", "DecodeCSV", "ParseExampleV2", "StringToHashBucketFast", "RegexReplace",
               "LookupTableFind", "InitializeTable"):
        assert not registry.get(op).stateful, op
