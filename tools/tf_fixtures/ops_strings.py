"""String, tf.Example parsing and lookup-table cases (families `strings`, `parsing`, `lookup`,
`preprocessing`): one raw op per fetch, each named after its op and edge case, plus a CSV /
tf.Example preprocessing graph as input pipelines write it."""
import numpy as np

from .registry import case
from .tf_v1 import tf


def _s(*texts):
    """A numpy bytes array of `texts` (str are UTF-8 encoded)."""
    return np.array([t.encode() if isinstance(t, str) else t for t in texts])


@case("op_strings_split_join", "strings",
      "StringSplitV2 (separator, whitespace with and without maxsplit, empty strings, an empty "
      "batch, UTF-8 text), StringSplit (v1: any delimiter byte, skip_empty, bytes), StringJoin (scalars broadcast, separator, N=1), ReduceJoin (axis orders, keep_dims, no axes, "
      "an empty axis), StringStrip.")
def op_strings_split_join(b):
    x = b.placeholder("x", _s("a,b,,c", "", " lead  and trail ", "héllo,wörld", "one"), shape=[None])
    b.raw("StringSplitV2", "split_comma", input=x, sep=",")
    b.raw("StringSplitV2", "split_whitespace", input=x, sep="")
    b.raw("StringSplitV2", "split_whitespace_max1", input=x, sep="", maxsplit=1)
    b.raw("StringSplitV2", "split_comma_max1", input=x, sep=",", maxsplit=1)
    b.raw("StringSplitV2", "split_multichar_sep", input=x, sep="ll")
    b.raw("StringSplitV2", "split_empty_batch", input=b.placeholder("empty", _s("a")[:0], shape=[None]),
          sep=",")
    b.raw("StringSplit", "split_v1_any_char", input=x, delimiter=", ")
    b.raw("StringSplit", "split_v1_keep_empty", input=x, delimiter=",", skip_empty=False)
    b.raw("StringSplit", "split_v1_bytes", input=x, delimiter="")
    y = b.placeholder("y", _s("p", "q", "", "r", "s"), shape=[None])
    b.raw("StringJoin", "join_sep", inputs=[x, y], separator="|")
    b.raw("StringJoin", "join_scalar_broadcast", inputs=["<", x, ">"])
    b.raw("StringJoin", "join_one", inputs=[y])
    m = b.placeholder("m", _s("ab", "c", "ü", "d").reshape(2, 2))
    b.raw("StringJoin", "join_matrix", inputs=[m, m, "!"], separator="-")
    for axes, keep in (([0], False), ([-1], True), ([0, 1], False), ([1, 0], True), ([], False)):
        b.raw("ReduceJoin", f"reduce_join_{'_'.join(str(a).replace('-', 'neg') for a in axes) or 'none'}"
              f"{'_keep' if keep else ''}", inputs=m, reduction_indices=np.array(axes, np.int32), keep_dims=keep,
              separator="+")
    b.raw("ReduceJoin", "reduce_join_empty_axis", inputs=np.zeros([2, 0], "S1"), reduction_indices=[1])
    b.raw("StringStrip", "strip", input=_s(" a ", "\tb\n", "", "  ", "c d"))
    b.variant("second", x=_s("x y z"), y=_s("w"))


@case("op_strings_substr_case", "strings",
      "Substr in BYTE and UTF8_CHAR units (negative pos, len past the end, broadcast pos/len, "
      "int64), StringLower/StringUpper (ASCII default and utf-8), StringLength (both units).")
def op_strings_substr_case(b):
    x = b.placeholder("x", _s("Hello", "wörld", "", "ÀÉÎ straße", "abc"), shape=[None])
    pos = b.placeholder("pos", np.array([1, -3, 0, 2, 3], np.int32))
    length = b.placeholder("len", np.array([3, 2, 0, 4, 5], np.int32))
    b.raw("Substr", "substr_byte", input=x, pos=pos, len=length)
    b.raw("Substr", "substr_utf8", input=x, pos=pos, len=length, unit="UTF8_CHAR")
    b.raw("Substr", "substr_scalar_pos", input=_s("abcdef", "xyz"), pos=np.int64(1), len=np.int64(10))
    b.raw("Substr", "substr_broadcast", input="abcdef", pos=[[0, 1], [2, 3]], len=[[1, 2], [3, 4]])
    for name in ("StringLower", "StringUpper"):
        short = name[6:].lower()
        b.raw(name, f"{short}_ascii", input=x)
        b.raw(name, f"{short}_utf8", input=x, encoding="utf-8")
    b.raw("StringLength", "length_bytes", input=x)
    b.raw("StringLength", "length_chars", input=x, unit="UTF8_CHAR")


@case("op_strings_regex", "strings",
      "RegexReplace / StaticRegexReplace (RE2): global and first-only, empty matches (x*, ''), "
      "groups \\1 and \\0 and an escaped backslash in the rewrite, UTF-8 text, character "
      "classes; RegexFullMatch and StaticRegexFullMatch.")
def op_strings_regex(b):
    x = b.placeholder("x", _s("abxd", "aaa", "", "héllo wörld", "2024-01-31 x", "a.b.c"), shape=[None])
    b.raw("RegexReplace", "regex_star_empty_matches", input=x, pattern="x*", rewrite="-")
    b.raw("RegexReplace", "regex_empty_pattern", input=x, pattern="", rewrite="_")
    b.raw("RegexReplace", "regex_first_only", input=x, pattern="[a-z]", rewrite="#", replace_global=False)
    b.raw("RegexReplace", "regex_groups", input=x, pattern=r"(\d+)-(\d+)", rewrite=r"\2/\1 [\0] \\")
    b.raw("RegexReplace", "regex_unicode_class", input=x, pattern=r"\pL+", rewrite="W")
    b.raw("StaticRegexReplace", "static_regex_dot", input=x, pattern=r"\.", rewrite="::")
    b.raw("StaticRegexReplace", "static_regex_first", input=x, pattern="o|l", rewrite="0",
          replace_global=False)
    b.raw("StaticRegexReplace", "static_regex_anchors", input=x, pattern="^a|d$", rewrite="<>")
    b.raw("RegexFullMatch", "regex_full_match", input=x, pattern=r"[a-z]+")
    b.raw("StaticRegexFullMatch", "static_regex_full_match", input=x, pattern=r".*\d.*")


@case("op_strings_numbers", "strings",
      "StringToNumber to every out_type (whitespace, signs, exponents, hex floats, inf/nan, "
      "float overflow, unsigned and int64 extremes); AsString of ints, floats (precision, "
      "scientific, shortest, width and fill), bool, complex, half and strings; DecodeRaw "
      "(little/big endian, bool, uint8, float64, empty); Encode/DecodeBase64 (web-safe, padded "
      "and not).")
def op_strings_numbers(b):
    floats = b.placeholder("floats", _s(" 1.5", "-2e3", "inf", "-Infinity", "nan", "0x1p3", ".25 ", "1e40",
                                        "+7", "1e-50"))
    b.raw("StringToNumber", "to_float", string_tensor=floats)
    b.raw("StringToNumber", "to_double", string_tensor=floats, out_type=tf.float64)
    ints = b.placeholder("ints", _s("0", "-12", " 42 ", "+3", "010", "2147483647"))
    b.raw("StringToNumber", "to_int32", string_tensor=ints, out_type=tf.int32)
    b.raw("StringToNumber", "to_int64", string_tensor=_s("-9223372036854775808", "9223372036854775807", "5"),
          out_type=tf.int64)
    b.raw("StringToNumber", "to_uint32", string_tensor=_s("4294967295", "0", "+9"), out_type=tf.uint32)
    b.raw("StringToNumber", "to_uint64", string_tensor=_s("18446744073709551615", "1"), out_type=tf.uint64)
    i = b.placeholder("i", np.array([[0, -7], [123, 2**31 - 1]], np.int32))
    f = b.placeholder("f", np.array([0.0, -1.5, 3.14159265, 1e10, 1e-7, np.inf, -np.inf, np.nan], np.float32))
    b.raw("AsString", "as_string_int", input=i)
    b.raw("AsString", "as_string_int_width_fill", input=i, width=6, fill="0")
    b.raw("AsString", "as_string_int_width_left", input=i, width=5, fill="-")
    b.raw("AsString", "as_string_float", input=f)
    b.raw("AsString", "as_string_float_precision", input=f, precision=2)
    b.raw("AsString", "as_string_float_scientific", input=f, scientific=True, precision=3)
    b.raw("AsString", "as_string_float_shortest", input=f, shortest=True)
    b.raw("AsString", "as_string_float_width", input=f, width=12, precision=1)
    b.raw("AsString", "as_string_double", input=np.array([1 / 3, -2.5e-300], np.float64), precision=17)
    b.raw("AsString", "as_string_half", input=np.array([0.1, 65504], np.float16))
    b.raw("AsString", "as_string_bool", input=np.array([True, False]))
    b.raw("AsString", "as_string_complex", input=np.array([1 - 2j, 0.5j], np.complex64), precision=1)
    b.raw("AsString", "as_string_int64", input=np.array([-(2**63), 2**63 - 1], np.int64))
    b.raw("AsString", "as_string_uint8", input=np.array([0, 255], np.uint8), width=4)
    b.raw("AsString", "as_string_string", input=_s("ab", "wörld"), width=7)
    raw = b.placeholder("raw", np.array([np.float32([1.5, -2]).tobytes(), np.float32([3, 1e-3]).tobytes()]))
    b.raw("DecodeRaw", "decode_raw_float", bytes=raw, out_type=tf.float32)
    b.raw("DecodeRaw", "decode_raw_uint8", bytes=raw, out_type=tf.uint8)
    b.raw("DecodeRaw", "decode_raw_int16_big", bytes=raw, out_type=tf.int16, little_endian=False)
    b.raw("DecodeRaw", "decode_raw_float64", bytes=raw, out_type=tf.float64)
    b.raw("DecodeRaw", "decode_raw_bool", bytes=_s(b"\x01\x00\x01"), out_type=tf.bool)
    b.raw("DecodeRaw", "decode_raw_empty", bytes=_s(b"", b""), out_type=tf.int32)
    text = b.placeholder("text", _s("", "a", "ab", "abc", "héllo?>", "\xff\xfe~~"))
    encoded = b.raw("EncodeBase64", "encode_base64", input=text)
    b.raw("EncodeBase64", "encode_base64_pad", input=text, pad=True)
    b.raw("DecodeBase64", "decode_base64", input=encoded)
    b.raw("DecodeBase64", "decode_base64_padded", input=_s("YQ==", "YWI=", "Pz4-", "_-8"))


@case("op_strings_hash", "strings",
      "StringToHashBucketFast (FarmHash Fingerprint64, bit-exact) and StringToHashBucketStrong "
      "(SipHash-2-4 with a key) on empty, short, long (>64 bytes) and UTF-8 strings, 1 and many "
      "buckets, a batch matrix.")
def op_strings_hash(b):
    texts = ["", "a", "hello", "héllo wörld", "x" * 17, "the quick brown fox " * 4, "0123456789abcdef" * 9,
             "\x00\x01bin", "y" * 33, "z" * 200]
    x = b.placeholder("x", _s(*texts).reshape(2, 5))
    for buckets in (1, 10, 2**40):
        b.raw("StringToHashBucketFast", f"hash_fast_{buckets}", input=x, num_buckets=buckets)
    b.raw("StringToHashBucketStrong", "hash_strong", input=x, num_buckets=1000, key=[98765, 132])
    b.raw("StringToHashBucketStrong", "hash_strong_big", input=x, num_buckets=2**62, key=[2**63 - 1, 7])


@case("op_strings_decode_csv", "strings",
      "DecodeCSV: every output type, quoted fields with delimiters and doubled quotes, empty "
      "fields and na_value taking defaults, a custom delimiter, select_cols, a batch matrix.")
def op_strings_decode_csv(b):
    records = b.placeholder("records", _s('1,2.5,"a,b",7,x', ',,"",,', '-3,1e3,"say ""hi""",NA,', '4,-0.5,z,8,w'))
    defaults = [np.array([0], np.int32), np.array([-1.0], np.float32), np.array([b"dflt"]),
                np.array([99], np.int64), np.array([b"?"])]
    b.raw("DecodeCSV", "csv", records=records, record_defaults=defaults, na_value="NA")
    b.raw("DecodeCSV", "csv_select", records=records, record_defaults=[defaults[1], np.array([0.0], np.float64)],
          select_cols=[1, 3], na_value="NA")
    b.raw("DecodeCSV", "csv_no_quotes_pipe",
          records=b.placeholder("piped", _s('a|"b"|3', 'c||4').reshape(2, 1)),
          record_defaults=[np.array([b""]), np.array([b"-"]), np.array([0], np.int64)],
          field_delim="|", use_quote_delim=False)


def _example(**features):
    """A serialized tf.train.Example: lists of text, floats or ints by name (an empty list has
    the kind of its numpy dtype: np.array([], "S") is an empty bytes list), None a Feature with
    no list set."""
    feature = {}
    for key, values in features.items():
        if values is None:
            feature[key] = tf.train.Feature()
            continue
        values = np.asarray(values)
        if values.dtype.kind in "SU":
            feature[key] = tf.train.Feature(bytes_list=tf.train.BytesList(
                value=[v.encode() if isinstance(v, str) else v for v in values.tolist()]))
        elif values.dtype.kind == "f":
            feature[key] = tf.train.Feature(float_list=tf.train.FloatList(value=values.tolist()))
        else:
            feature[key] = tf.train.Feature(int64_list=tf.train.Int64List(value=values.tolist()))
    serialized = tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString(deterministic=True)
    if serialized.endswith(b"\x00"):
        # .npz stores strings as fixed-width bytes, which drop trailing NULs: add an unused
        # feature so the proto survives the round trip.
        return _example(**features, zpad=["pad"])
    return serialized


_FEATURES = {
    "age": tf.io.FixedLenFeature([], tf.int64, default_value=-1),
    "scores": tf.io.FixedLenFeature([2], tf.float32, default_value=[0.0, 0.0]),
    "name": tf.io.FixedLenFeature([], tf.string, default_value="anon"),
    "tags": tf.io.VarLenFeature(tf.string),
    "ids": tf.io.VarLenFeature(tf.int64),
    "weights": tf.io.FixedLenSequenceFeature([], tf.float32, allow_missing=True, default_value=-1.0),
    "pairs": tf.io.FixedLenSequenceFeature([2], tf.int64, allow_missing=True),
    "words": tf.io.RaggedFeature(tf.string),
    "marks": tf.io.RaggedFeature(tf.float32, row_splits_dtype=tf.int32),
}


def _examples():
    return np.array([
        _example(age=[31], scores=[1.5, -2.0], name=["Ann"], tags=["x", "y"], ids=[3], weights=[0.5, 0.25],
                 pairs=[1, 2, 3, 4], words=["hi", "there"], marks=[1.0]),
        _example(scores=[0.0, 9.0], tags=np.array([], "S"), weights=[1.0], words=np.array([], "S"), unused=["z"]),
        _example(age=[7], name=["Bö"], ids=[1, 2, 3], pairs=[5, 6], marks=[2.0, 3.0, 4.0], tags=None),
    ])


@case("op_parse_example", "parsing",
      "ParseExampleV2 of a batch (dense with and without defaults, variable-length dense padded "
      "with a default, sparse string/int64, ragged string/float with int64 and int32 row splits, "
      "a feature with no list set, an unused feature); the same features from one example "
      "(tf.io.parse_single_example: ParseExampleV2 on a scalar) and ParseSingleExample.")
def op_parse_example(b):
    serialized = b.placeholder("serialized", _examples(), shape=[None])
    parsed = tf.io.parse_example(serialized, _FEATURES)
    for key in sorted(_FEATURES):
        value = parsed[key]
        if isinstance(value, tf.SparseTensor):
            b.fetch(value.indices, f"batch_{key}_indices")
            b.fetch(value.values, f"batch_{key}_values")
            b.fetch(value.dense_shape, f"batch_{key}_shape")
        elif isinstance(value, tf.RaggedTensor):
            b.fetch(value.values, f"batch_{key}_values")
            b.fetch(value.row_splits, f"batch_{key}_splits")
        else:
            b.fetch(value, f"batch_{key}")
    one = b.placeholder("one", _examples()[0])
    single = tf.io.parse_single_example(one, {k: v for k, v in _FEATURES.items() if k != "pairs"})
    b.fetch(single["scores"], "single_scores")
    b.fetch(single["tags"].values, "single_tags_values")
    b.fetch(single["tags"].indices, "single_tags_indices")
    b.fetch(single["words"].values if isinstance(single["words"], tf.RaggedTensor) else single["words"],
            "single_words")
    b.raw("ParseSingleExample", "parse_single_example", serialized=one,
          dense_defaults=[np.array(-1, np.int64), np.zeros([2], np.float32), np.array([-2.0], np.float32)],
          num_sparse=2, sparse_keys=["ids", "tags"], dense_keys=["age", "scores", "weights"],
          sparse_types=[tf.int64, tf.string], dense_shapes=[[], [2], [None]])
    b.variant("empty_batch", serialized=_examples()[:0])


@case("op_lookup_tables", "lookup",
      "HashTableV2 (string->int64) filled by InitializeTableV2 and LookupTableImportV2 "
      "(initializing twice with the same entries), LookupTableFindV2 with a default, "
      "LookupTableSizeV2; MutableHashTableV2 (int64->float) with LookupTableInsertV2 (overwrite) "
      "and Find/Size; legacy HashTable/InitializeTable/LookupTableFind/LookupTableSize. The "
      "lookups depend on the initializers by control edges, so one run does everything.")
def op_lookup_tables(b):
    words = b.placeholder("words", _s("the", "cat", "", "sat", "héllo", "zzz").reshape(2, 3))
    keys, ids = _s("the", "cat", "sat", "héllo"), np.array([0, 1, 2, 3], np.int64)
    table = tf.raw_ops.HashTableV2(key_dtype=tf.string, value_dtype=tf.int64, name="vocab")
    init = tf.raw_ops.InitializeTableV2(table_handle=table, keys=keys, values=ids, name="vocab_init")
    again = tf.raw_ops.LookupTableImportV2(table_handle=table, keys=keys, values=ids, name="vocab_import")
    with tf.control_dependencies([init, again]):
        b.fetch(tf.raw_ops.LookupTableFindV2(table_handle=table, keys=words, default_value=np.int64(-1),
                                             name="vocab_find"))
        b.fetch(tf.raw_ops.LookupTableSizeV2(table_handle=table, name="vocab_size"))
    counts = tf.raw_ops.MutableHashTableV2(key_dtype=tf.int64, value_dtype=tf.float32, name="counts")
    insert = tf.raw_ops.LookupTableInsertV2(table_handle=counts, keys=np.array([1, 2, 3], np.int64),
                                            values=np.float32([0.5, 1.5, 2.5]), name="counts_insert")
    with tf.control_dependencies([insert]):
        overwrite = tf.raw_ops.LookupTableInsertV2(table_handle=counts, keys=np.array([2], np.int64),
                                                   values=np.float32([-4.0]), name="counts_overwrite")
    query = b.placeholder("query", np.array([3, 2, 9, 1], np.int64))
    with tf.control_dependencies([overwrite]):
        b.fetch(tf.raw_ops.LookupTableFindV2(table_handle=counts, keys=query, default_value=np.float32(0.0),
                                             name="counts_find"))
        b.fetch(tf.raw_ops.LookupTableSizeV2(table_handle=counts, name="counts_size"))
    legacy = tf.raw_ops.HashTable(key_dtype=tf.int64, value_dtype=tf.string, name="legacy")
    legacy_init = tf.raw_ops.InitializeTable(table_handle=legacy, keys=np.array([5, 6], np.int64),
                                             values=_s("five", "six"), name="legacy_init")
    with tf.control_dependencies([legacy_init]):
        b.fetch(tf.raw_ops.LookupTableFind(table_handle=legacy, keys=query, default_value="none",
                                           name="legacy_find"))
        b.fetch(tf.raw_ops.LookupTableSize(table_handle=legacy, name="legacy_size"))


@case("op_strings_edges", "strings",
      "Edge cases where TensorFlow differs from Python's string functions: Substr with a negative "
      "len (bytes: to the end; UTF-8: nothing), maxsplit=0, whitespace-only text, StringToNumber "
      "of hex integers as floats, '1.', nan(payload), AsString fill flags ' ' and '+', bools "
      "ignore width, a NaN with the sign bit ('-nan'), DecodeCSV trailing delimiters, spaces "
      "around numbers, quoted numbers; RE2's $ (end of text only), . (no newline), (?i), "
      "invalid UTF-8 with an empty pattern; StringLength of invalid UTF-8.")
def op_strings_edges(b):
    x = b.placeholder("x", _s("abcdef", "äbcdéf"))
    b.raw("Substr", "substr_neg_len_byte", input=x, pos=np.int32(1), len=np.int32(-1))
    b.raw("Substr", "substr_neg_len_utf8", input=x, pos=np.int32(1), len=np.int32(-2), unit="UTF8_CHAR")
    b.raw("Substr", "substr_pos_at_end", input=x, pos=np.int32(6), len=np.int32(2))
    y = b.placeholder("y", _s("", " a b", "x,y", "   ", "\x0b a\x0c"), shape=[None])
    b.raw("StringSplitV2", "split_max0", input=y, sep="", maxsplit=0)
    b.raw("StringSplitV2", "split_ws_max2", input=y, sep="", maxsplit=2)
    b.raw("StringToNumber", "to_float_edges", string_tensor=_s("0x10", "1.", "nan(123)", "-0", "1e-45", "3.4028236e38"))
    nan = np.array([np.nan, -np.nan, 1.5, -2.0], np.float32)
    nan[1] = -abs(nan[1])
    f = b.placeholder("f", nan)
    b.raw("AsString", "as_string_fill_space", input=f, width=8, fill=" ", precision=2)
    b.raw("AsString", "as_string_fill_plus", input=f, width=9, fill="+", precision=1)
    b.raw("AsString", "as_string_shortest_nan", input=f, shortest=True)
    b.raw("AsString", "as_string_left_nan", input=f, width=7, fill="-")
    b.raw("AsString", "as_string_fill_no_width", input=np.array([3, -3], np.int32), fill="+")
    b.raw("AsString", "as_string_bool_width", input=np.array([True, False]), width=7)
    b.raw("DecodeCSV", "csv_edges", records=_s("1,2,", " 3 , 4.5 ,x", '"5","6",""'),
          record_defaults=[np.array([0], np.int32), np.array([0.0], np.float32), np.array([b"e"])])
    z = b.placeholder("z", _s("a\nb\n", "aAb", b"a\xffb", ""))
    b.raw("RegexReplace", "regex_dollar", input=z, pattern="$", rewrite="!")
    b.raw("RegexReplace", "regex_dot_newline", input=z, pattern=".", rewrite="_")
    b.raw("RegexReplace", "regex_case_insensitive", input=z, pattern="(?i)a", rewrite="!")
    b.raw("RegexReplace", "regex_empty_invalid_utf8", input=z, pattern="", rewrite="-")
    b.raw("StringLength", "length_invalid_utf8", input=z, unit="UTF8_CHAR")
