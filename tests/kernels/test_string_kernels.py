"""String, parsing and lookup-table kernels beyond the TensorFlow fixtures (tests/fixtures/tf/
op_strings_*, op_parse_example, op_lookup_tables): TensorFlow's error messages, RE2 semantics
that Python's `re` does not share, hash reference vectors, tables living across runs."""
from __future__ import annotations

import numpy as np
import pytest

from graphtool import dtypes
from graphtool.exec.kernels import KernelError
from graphtool.exec.kernels.strings import regex_replace_text, siphash24
from graphtool.exec.session import Session
from graphtool.ir import Graph
from graphtool.proto import example_pb2

from .harness import run_node


def strings(*texts) -> np.ndarray:
    out = np.empty(len(texts), dtype=object)
    out[:] = [t.encode() if isinstance(t, str) else t for t in texts]
    return out


def make_node(op, inputs, **attrs):
    """A node of `op` whose inputs are placeholders of the given values' dtypes."""
    g = Graph()
    refs = []
    for i, value in enumerate(inputs):
        dtype = dtypes.string if np.asarray(value).dtype.kind in "OS" else dtypes.from_numpy(np.asarray(value).dtype)
        refs.append(g.add_node("Placeholder", f"in{i}", attrs={"dtype": dtype}).output())
    return g.add_node(op, "node", inputs=refs, attrs=attrs)


def run(op, *inputs, **attrs):
    outputs = run_node(make_node(op, inputs, **attrs), inputs)
    return outputs[0] if len(outputs) == 1 else outputs


# --- regexes: RE2, not Python's re ------------------------------------------------------------

def test_global_replace_skips_the_empty_match_after_a_match_unlike_python_re():
    import re
    import re2

    assert re.sub("x*", "-", "abxd") == "-a-b--d-"          # Python: empty match after "x" too
    assert regex_replace_text(re2.compile(b"x*"), b"abxd", b"-", True) == b"-a-b-d-"   # RE2, as TensorFlow


def test_empty_matches_step_over_whole_utf8_characters():
    import re2

    assert regex_replace_text(re2.compile(b""), "hé".encode(), b".", True) == ".h.é.".encode()


@pytest.mark.parametrize("pattern", [r"(a)\1", r"a(?=b)", r"(?<=a)b", "a++"])
def test_patterns_re2_refuses_are_errors(pattern):
    """Backreferences and lookaround are Python re features RE2 (and so TensorFlow) rejects."""
    with pytest.raises(KernelError, match="Invalid pattern"):
        run("StaticRegexReplace", strings("ab"), pattern=pattern, rewrite="x")


@pytest.mark.parametrize("rewrite, message", [(r"\2", "Rewrite schema requests 2 matches"),
                                              (r"\n", "Invalid rewrite pattern")])
def test_bad_rewrites(rewrite, message):
    with pytest.raises(KernelError, match=message):
        run("RegexReplace", strings("ab"), np.array(b"(a)", dtype=object), np.array(rewrite.encode(), dtype=object))


def test_regex_semantics_are_re2s():
    # Unicode classes (\pN) as RE2 has them; Python's re has none.
    out = run("StaticRegexReplace", strings("a1b22", "ab", "٣x"), pattern=r"\pN+|b", rewrite="#")
    assert out.tolist() == [b"a###", b"a#", b"#x"]


# --- hashing ---------------------------------------------------------------------------------

def test_siphash_reference_vector():
    """SipHash-2-4 paper, appendix A: key 00..0f, message 00..0e."""
    key = bytes(range(16))
    k0, k1 = int.from_bytes(key[:8], "little"), int.from_bytes(key[8:], "little")
    assert siphash24(k0, k1, bytes(range(15))) == 0xA129CA6149BE45E5


def test_hash_bucket_fast_is_farmhash_fingerprint64():
    # Values TensorFlow 2.21 computes (tf.strings.to_hash_bucket_fast(..., 2**62)).
    out = run("StringToHashBucketFast", strings("hello"), num_buckets=2**62)
    assert out.tolist() == [3786372426573024488]


def test_hash_bucket_strong_needs_a_two_part_key():
    with pytest.raises(KernelError, match="Invalid key size 3"):
        run("StringToHashBucketStrong", strings("a"), num_buckets=3, key=[1, 2, 3])


# --- conversions -----------------------------------------------------------------------------

@pytest.mark.parametrize("text, out_type", [("0x10", dtypes.int32), ("2147483648", dtypes.int32), ("1.0", dtypes.int64),
                                            ("", dtypes.float32), ("1_000", dtypes.float32), ("-1", dtypes.uint32),
                                            ("1,5", dtypes.float64)])
def test_string_to_number_rejects_what_tensorflow_rejects(text, out_type):
    with pytest.raises(KernelError, match="StringToNumberOp could not correctly convert string"):
        run("StringToNumber", strings(text), out_type=out_type)


def test_as_string_refuses_float_options_for_ints():
    with pytest.raises(KernelError, match="Cannot specify precision"):
        run("AsString", np.array([1], np.int32), T=dtypes.int32, precision=2)
    with pytest.raises(KernelError, match="both scientific and shortest"):
        run("AsString", np.array([1.0], np.float32), T=dtypes.float32, scientific=True, shortest=True)


def test_decode_raw_needs_equal_lengths():
    with pytest.raises(KernelError, match="same size"):
        run("DecodeRaw", strings(b"abcd", b"ab"), out_type=dtypes.int16)
    with pytest.raises(KernelError, match="not a multiple of 4"):
        run("DecodeRaw", strings(b"abc"), out_type=dtypes.float32)


def test_decode_base64_rejects_standard_alphabet():
    with pytest.raises(KernelError, match="Invalid character"):
        run("DecodeBase64", strings("a+b/"))


def test_substr_position_out_of_range():
    with pytest.raises(KernelError, match="pos 4 out of range"):
        run("Substr", strings("abc"), np.array([4], np.int32), np.array([1], np.int32), T=dtypes.int32)


def csv_defaults():
    return [np.array([0], np.int32), np.zeros([0], np.float32)]


@pytest.mark.parametrize("record, message", [
    ("1", "Expect 2 fields but have 1 in record 0"),
    ("x,1", "Field 0 in record 0 is not a valid int32: x"),
    ("1,", "Field 1 is required but missing in record 0"),
    ('1,"2', "Quoted field has to end with quote"),
    ('1,"2"x', "Quote inside a string has to be escaped"),
    ('1,2"', "Unquoted fields cannot have quotes inside"),
])
def test_decode_csv_errors(record, message):
    with pytest.raises(KernelError, match=message):
        run("DecodeCSV", strings(record), *csv_defaults(), OUT_TYPE=[dtypes.int32, dtypes.float32])


# --- tf.Example parsing ----------------------------------------------------------------------

def example(**floats) -> bytes:
    proto = example_pb2.Example()
    for key, values in floats.items():
        proto.features.feature[key].float_list.value.extend(values)
    return proto.SerializeToString()


def parse(serialized, default, shape):
    return run("ParseExampleV2", serialized, np.empty(0, object), np.empty(0, object), strings("f"),
               np.empty(0, object), default, Tdense=[dtypes.float32], num_sparse=0, sparse_types=[],
               ragged_value_types=[], ragged_split_types=[], dense_shapes=[shape])


def test_parse_example_dense_required_and_wrong_sizes():
    from graphtool.shapes import Shape

    assert parse(strings(example(f=[1.0, 2.0])), np.zeros([0], np.float32), Shape([2])).tolist() == [[1.0, 2.0]]
    with pytest.raises(KernelError, match="is required but could not be found"):
        parse(strings(example(g=[1.0])), np.zeros([0], np.float32), Shape([2]))
    with pytest.raises(KernelError, match="Values size: 3 but output shape: \\[2\\]"):
        parse(strings(example(f=[1.0, 2.0, 3.0])), np.zeros([0], np.float32), Shape([2]))
    with pytest.raises(KernelError, match="must contain a single element \\(the padding element\\)"):
        parse(strings(example(f=[1.0])), np.zeros([0], np.float32), Shape([None]))
    padded = parse(strings(example(f=[1.0, 2.0]), example(g=[0.0]), example(f=[3.0])), np.float32([-1]), Shape([None]))
    assert padded.tolist() == [[1.0, 2.0], [-1.0, -1.0], [3.0, -1.0]]
    with pytest.raises(KernelError, match="Could not parse example input"):
        parse(strings(b"\xff\xff"), np.zeros([0], np.float32), Shape([2]))


# --- lookup tables: session resources --------------------------------------------------------

def table_graph(op="HashTableV2"):
    g = Graph()
    table = g.add_node(op, "table", attrs={"key_dtype": dtypes.string, "value_dtype": dtypes.int64})
    keys = g.add_node("Placeholder", "keys", attrs={"dtype": dtypes.string})
    values = g.add_node("Placeholder", "values", attrs={"dtype": dtypes.int64})
    init_op, types = (("InitializeTableV2", {"Tkey": dtypes.string, "Tval": dtypes.int64}) if op == "HashTableV2"
                      else ("LookupTableInsertV2", {"Tin": dtypes.string, "Tout": dtypes.int64}))
    g.add_node(init_op, "init", inputs=[table.output(), keys.output(), values.output()], attrs=types)
    query = g.add_node("Placeholder", "query", attrs={"dtype": dtypes.string})
    default = g.add_node("Const", "default", attrs={"value": np.array(-1, np.int64), "dtype": dtypes.int64})
    g.add_node("LookupTableFindV2", "find", inputs=[table.output(), query.output(), default.output()],
               attrs={"Tin": dtypes.string, "Tout": dtypes.int64})
    g.add_node("LookupTableSizeV2", "size", inputs=[table.output()])
    g.add_node("LookupTableExportV2", "export", inputs=[table.output()],
               attrs={"Tkeys": dtypes.string, "Tvalues": dtypes.int64})
    return g


def test_a_table_initialized_in_one_run_serves_the_next():
    session = Session(table_graph())
    with pytest.raises(Exception, match="Table not initialized"):
        session.run(["find:0"], {"query:0": strings("a")})
    session.run([], {"keys:0": strings("a", "b"), "values:0": np.array([1, 2], np.int64)}, targets=["init"])
    assert session.run(["find:0", "size:0"], {"query:0": strings("b", "zz")}).values[0].tolist() == [2, -1]
    # Again with the same entries: fine; with others: TensorFlow's error.
    session.run([], {"keys:0": strings("a", "b"), "values:0": np.array([1, 2], np.int64)}, targets=["init"])
    with pytest.raises(Exception, match="already initialized with different data"):
        session.run([], {"keys:0": strings("a"), "values:0": np.array([5], np.int64)}, targets=["init"])


def test_mutable_table_inserts_overwrite_and_export():
    session = Session(table_graph("MutableHashTableV2"))
    assert session.run(["find:0"], {"query:0": strings("a")}).values[0].tolist() == [-1]
    session.run([], {"keys:0": strings("a", "b"), "values:0": np.array([1, 2], np.int64)}, targets=["init"])
    session.run([], {"keys:0": strings("b"), "values:0": np.array([7], np.int64)}, targets=["init"])
    keys, values = session.run(["export:0", "export:1"]).values
    assert sorted(zip(keys.tolist(), values.tolist())) == [(b"a", 1), (b"b", 7)]
    assert session.run(["size:0"]).values[0] == 2


# --- vocabulary files: expected entries as TensorFlow 2.21 read the same file ------------------

VOCAB = b"apple\t10\nbanana\t20\ncherry pie\t30\r\nd\t40\n"


def text_file_table(tmp_path, key_dtype, value_dtype, content=VOCAB, **attrs):
    path = tmp_path / "vocab.txt"
    path.write_bytes(content)
    g = Graph()
    table = g.add_node("HashTableV2", "table", attrs={"key_dtype": key_dtype, "value_dtype": value_dtype})
    filename = g.add_node("Const", "filename", attrs={"value": np.array(str(path).encode(), object),
                                                      "dtype": dtypes.string})
    g.add_node("InitializeTableFromTextFileV2", "init", inputs=[table.output(), filename.output()], attrs=attrs)
    g.add_node("LookupTableExportV2", "export", inputs=[table.output()],
               attrs={"Tkeys": key_dtype, "Tvalues": value_dtype})
    session = Session(g)
    session.run([], targets=["init"])
    keys, values = session.run(["export:0", "export:1"]).values
    return sorted(zip(keys.tolist(), values.tolist()))


@pytest.mark.parametrize("key_dtype, value_dtype, attrs, expected", [
    (dtypes.string, dtypes.int64, {"key_index": -2, "value_index": -1},
     [(b"apple\t10", 0), (b"banana\t20", 1), (b"cherry pie\t30", 2), (b"d\t40", 3)]),
    (dtypes.string, dtypes.int64, {"key_index": -2, "value_index": -1, "offset": 5},
     [(b"apple\t10", 5), (b"banana\t20", 6), (b"cherry pie\t30", 7), (b"d\t40", 8)]),
    (dtypes.string, dtypes.int64, {"key_index": 0, "value_index": 1},
     [(b"apple", 10), (b"banana", 20), (b"cherry pie", 30), (b"d", 40)]),
    (dtypes.string, dtypes.int64, {"key_index": 0, "value_index": -1, "vocab_size": 2}, [(b"apple", 0), (b"banana", 1)]),
    (dtypes.int64, dtypes.string, {"key_index": -1, "value_index": 0, "offset": 3},
     [(3, b"apple"), (4, b"banana"), (5, b"cherry pie"), (6, b"d")]),
    (dtypes.string, dtypes.float32, {"key_index": 0, "value_index": 1},
     [(b"apple", 10.0), (b"banana", 20.0), (b"cherry pie", 30.0), (b"d", 40.0)]),
    (dtypes.string, dtypes.int64, {"key_index": 1, "value_index": -1}, [(b"10", 0), (b"20", 1), (b"30", 2), (b"40", 3)]),
])
def test_vocabulary_file_reads_as_tensorflow(tmp_path, key_dtype, value_dtype, attrs, expected):
    assert text_file_table(tmp_path, key_dtype, value_dtype, **attrs) == expected


@pytest.mark.parametrize("content, attrs, message", [
    (b"apple\t10\n\nb\t2\n", {"key_index": -2, "value_index": -1}, "empty line found at position 10"),
    (VOCAB, {"key_index": 0, "value_index": -1, "vocab_size": 10}, "expected 10 but got 4"),
    (VOCAB, {"key_index": 0, "value_index": 1, "delimiter": " "}, "expected at least 2 got 1"),
    (VOCAB, {"key_index": 0, "value_index": 0}, "Field apple in line 0 is not a valid int64"),
])
def test_vocabulary_file_errors(tmp_path, content, attrs, message):
    with pytest.raises(Exception, match=message):
        text_file_table(tmp_path, dtypes.string, dtypes.int64, content, **attrs)
