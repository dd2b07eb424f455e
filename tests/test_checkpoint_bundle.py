"""The tensor-bundle reader against bundles written by TensorFlow's SaveV2/MergeV2Checkpoints
(tests/fixtures/bundles, made by tools/make_saved_model_fixtures.py) and corrupted copies of them."""
import json
import shutil
import struct

import numpy as np
import pytest

from graphtool.checkpoint import BundleReader, CheckpointError, read_table
from graphtool.checkpoint.crc import crc32c, mask, unmask
from graphtool.checkpoint.slices import _signed_num_increasing, parse_slice_spec
from graphtool.checkpoint.table import MAGIC, snappy_decompress

from .helpers import REPO_ROOT

BUNDLES = REPO_ROOT / "tests" / "fixtures" / "bundles"


def _expected(name):
    manifest = json.loads((BUNDLES / f"{name}.json").read_text())
    return manifest, np.load(BUNDLES / f"{name}.values.npz")


@pytest.mark.parametrize("name", ["dtypes", "many_keys", "sharded"])
def test_every_tensor_matches_what_tensorflow_saved(name):
    manifest, values = _expected(name)
    reader = BundleReader(BUNDLES / name)
    assert reader.keys() == sorted(manifest)    # the table is sorted by key
    for key, info in manifest.items():
        got = reader.read(key)
        assert list(got.shape) == info["shape"], key
        assert str(reader.entry(key).dtype) == info["dtype"], key
        want = values[key]
        if info["dtype"] == "bfloat16":
            got = got.view(np.uint16)
        elif info["dtype"] == "string":
            assert got.dtype == object
            got = np.array(list(got.ravel()), dtype=bytes).reshape(got.shape)
        assert got.dtype == want.dtype, key
        np.testing.assert_array_equal(got, want, err_msg=key)


def test_header_and_entries():
    reader = BundleReader(BUNDLES / "sharded")
    assert reader.num_shards == 2
    assert reader.header.version.producer == 1
    assert not reader.big_endian
    shards = {reader.entry(k).shard_id for k in reader.keys()}
    assert shards == {0, 1}
    assert reader.entry("shard_a/w").size == 16
    assert BundleReader(BUNDLES / "dtypes").num_shards == 1


def test_crc32c_and_mask():
    assert crc32c(b"123456789") == 0xE3069283          # the standard CRC-32C check value
    assert crc32c(b"6789", crc32c(b"12345")) == 0xE3069283
    for value in (0, 1, 0xE3069283, 0xFFFFFFFF):
        assert unmask(mask(value)) == value
    assert mask(0) != 0


# --- partitioned variables (slices) --------------------------------------------------------------

PARTITIONED = REPO_ROOT / "tests" / "fixtures" / "saved_models" / "tf1_partitioned"


def test_partitioned_tensor_is_assembled_from_its_slices():
    reader = BundleReader(PARTITIONED / "model" / "variables" / "variables")
    table = np.load(PARTITIONED / "serving_default" / "expected.npz")["table"]   # TensorFlow's view
    entry = reader.entry("table")
    assert len(entry.slices) == 3 and entry.shape == (10, 3)
    np.testing.assert_array_equal(reader.read("table"), table)
    np.testing.assert_array_equal(reader.read_slice("table", "10 3 4,3:0,3"), table[4:7])
    np.testing.assert_array_equal(reader.read_slice("table", "10 3 2,5:-"), table[2:7])   # across parts
    assert list(reader.read_all()) == ["table"]          # the parts' own keys are not tensors


def test_slice_spec_errors():
    reader = BundleReader(PARTITIONED / "model" / "variables" / "variables")
    with pytest.raises(CheckpointError, match="shape \\[10, 3\\], the restore asks for a slice of shape \\[9, 3\\]"):
        reader.read_slice("table", "9 3 0,4:0,3")
    with pytest.raises(CheckpointError, match="malformed slice spec"):
        parse_slice_spec("10 3 0;4", "t")
    with pytest.raises(CheckpointError, match="does not fit its shape"):
        parse_slice_spec("10 3 8,4:-", "t")


def test_signed_ordered_code_sorts_like_the_numbers():
    values = sorted({0, 1, -1, 63, 64, -64, -65, 8191, 8192, -8193, 2**20, -(2**20), 2**40 + 3, -(2**55),
                     2**62, -(2**63), 2**63 - 1, 5, 100, 1000})
    encoded = [_signed_num_increasing(v) for v in values]
    assert encoded == sorted(encoded)
    assert _signed_num_increasing(0) == b"\x80" and _signed_num_increasing(-1) == b"\x7f"
    assert _signed_num_increasing(0x424242) == bytes([0xF0, 0x42, 0x42, 0x42])   # TensorFlow's documented example
    assert _signed_num_increasing(-0x800) == bytes([0x38, 0x00])
    assert len(_signed_num_increasing(2**63 - 1)) == 10


# --- corrupted copies --------------------------------------------------------------------------

@pytest.fixture
def copy(tmp_path):
    """Copy a fixture bundle into tmp_path; returns its prefix there."""
    def make(name):
        for path in BUNDLES.glob(f"{name}.*"):
            if ".index" in path.name or ".data-" in path.name:
                shutil.copy(path, tmp_path / path.name)
        return tmp_path / name
    return make


def _flip(path, offset):
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x40
    path.write_bytes(bytes(data))


def test_missing_index_names_the_file(tmp_path):
    with pytest.raises(CheckpointError, match=r"nothing\.index: no such file"):
        BundleReader(tmp_path / "nothing")


def test_truncated_index(copy):
    prefix = copy("dtypes")
    index = prefix.with_name("dtypes.index")
    index.write_bytes(index.read_bytes()[:30])
    with pytest.raises(CheckpointError, match=r"dtypes\.index: truncated: 30 bytes"):
        BundleReader(prefix)


def test_index_cut_short_has_bad_magic(copy):
    prefix = copy("dtypes")
    index = prefix.with_name("dtypes.index")
    index.write_bytes(index.read_bytes()[:-3])
    with pytest.raises(CheckpointError, match=r"dtypes\.index: bad magic number"):
        BundleReader(prefix)


def test_corrupt_index_block_fails_its_checksum(copy):
    prefix = copy("many_keys")
    _flip(prefix.with_name("many_keys.index"), 100)
    with pytest.raises(CheckpointError, match=r"many_keys\.index: checksum mismatch in data block at offset 0"):
        BundleReader(prefix)


def test_corrupt_tensor_bytes_fail_the_entry_checksum(copy):
    prefix = copy("dtypes")
    reader = BundleReader(prefix)
    entry = reader.entry("float32")
    _flip(prefix.with_name("dtypes.data-00000-of-00001"), entry.offset + 3)
    with pytest.raises(CheckpointError, match=r"dtypes\.data-00000-of-00001: checksum mismatch for tensor 'float32'"):
        reader.read("float32")
    reader.read("float64")     # the other tensors are intact


def test_corrupt_string_bytes(copy):
    prefix = copy("dtypes")
    reader = BundleReader(prefix)
    entry = reader.entry("strings")
    _flip(prefix.with_name("dtypes.data-00000-of-00001"), entry.offset + entry.size - 1)
    with pytest.raises(CheckpointError, match=r"checksum mismatch for tensor 'strings'"):
        reader.read("strings")


def test_truncated_data_shard(copy):
    prefix = copy("dtypes")
    data = prefix.with_name("dtypes.data-00000-of-00001")
    data.write_bytes(data.read_bytes()[:40])
    reader = BundleReader(prefix)
    last = max(reader.entries.values(), key=lambda e: e.offset)
    with pytest.raises(CheckpointError, match=rf"dtypes\.data-00000-of-00001: truncated: tensor '{last.key}'"):
        reader.read(last.key)


def test_missing_shard_names_the_file(copy):
    prefix = copy("sharded")
    prefix.with_name("sharded.data-00001-of-00002").unlink()
    reader = BundleReader(prefix)
    second = next(k for k in reader.keys() if reader.entry(k).shard_id == 1)
    with pytest.raises(CheckpointError, match=r"sharded\.data-00001-of-00002: no such file \(data shard 2 of 2"):
        reader.read(second)
    reader.read(next(k for k in reader.keys() if reader.entry(k).shard_id == 0))


def test_unknown_key(copy):
    with pytest.raises(CheckpointError, match="no tensor 'nope'"):
        BundleReader(copy("dtypes")).read("nope")


def test_checkpoint_errors_are_invalid_input():
    assert CheckpointError("x").exit_code == 3


# --- table features TensorFlow's small bundles do not exercise ----------------------------------
# TensorFlow writes 256 KiB data blocks, so its small index files have one data block. A minimal
# table writer (LevelDB's layout, written here from the format description) makes tables with
# several blocks, restart points and a Snappy-compressed block.

def _varint(value):
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _block(items, restart_interval=3):
    out, restarts, previous = bytearray(), [], b""
    for i, (key, value) in enumerate(items):
        shared = 0
        if i % restart_interval == 0:
            restarts.append(len(out))
        else:
            while shared < min(len(key), len(previous)) and key[shared] == previous[shared]:
                shared += 1
        out += _varint(shared) + _varint(len(key) - shared) + _varint(len(value)) + key[shared:] + value
        previous = key
    out += b"".join(struct.pack("<I", r) for r in restarts) + struct.pack("<I", len(restarts))
    return bytes(out)


def _with_trailer(contents, kind=0):
    return contents + bytes([kind]) + struct.pack("<I", mask(crc32c(bytes([kind]), crc32c(contents))))


def _table(blocks, compress_first=False):
    data, index_items = bytearray(), []
    for i, items in enumerate(blocks):
        contents = _block(items)
        kind = 0
        if compress_first and i == 0:
            contents, kind = _snappy_literal(contents), 1
        handle = _varint(len(data)) + _varint(len(contents))
        data += _with_trailer(contents, kind)
        index_items.append((max(k for k, _ in items), handle))
    meta_handle = _varint(len(data)) + _varint(len(_block([])))
    data += _with_trailer(_block([]))
    index = _block(index_items, restart_interval=1)
    index_handle = _varint(len(data)) + _varint(len(index))
    data += _with_trailer(index)
    footer = (meta_handle + index_handle).ljust(40, b"\0") + struct.pack("<Q", MAGIC)
    return bytes(data + footer)


def _snappy_literal(raw):
    """Snappy stream: the first 8 bytes as a literal, the rest as literals and one copy when the
    data repeats (enough to exercise both element kinds)."""
    out = bytearray(_varint(len(raw)))
    out += bytes([(8 - 1) << 2]) + raw[:8]
    rest = raw[8:]
    out += bytes([60 << 2, len(rest) - 1]) + rest
    return bytes(out)


def test_multi_block_table_with_restarts():
    keys = [f"layer_{i:02d}/w".encode() for i in range(20)]
    items = [(k, b"v" + k) for k in keys]
    table = _table([items[:7], items[7:15], items[15:]])
    assert read_table(table, "t") == items


def test_snappy_compressed_block():
    items = [(f"k{i}".encode(), bytes([i]) * 5) for i in range(10)]
    assert read_table(_table([items], compress_first=True), "t") == items


def test_snappy_copies_overlap():
    # "ab" then a copy of length 6 at offset 2: "abababab"
    stream = _varint(8) + bytes([(2 - 1) << 2]) + b"ab" + bytes([((6 - 4) << 2) | 1, 2])
    assert snappy_decompress(stream, "t", "block") == b"abababab"


def test_keys_out_of_order_are_corruption():
    items = [(b"b", b"1"), (b"a", b"2")]
    with pytest.raises(CheckpointError, match="keys out of order"):
        read_table(_table([items]), "t")


def test_big_endian_bundle(tmp_path):
    """A bundle written on a big-endian machine (header endianness BIG): built here with the test
    table writer from TensorFlow's little-endian values, byte-swapped."""
    from graphtool.proto.tensor_bundle_pb2 import BundleEntryProto, BundleHeaderProto
    from graphtool.proto.types_pb2 import DataType

    values = {"a/float": np.arange(6, dtype=np.float32).reshape(2, 3) / 7,
              "b/int64": np.array([1, -2, 2**40], np.int64),
              "c/strings": np.array([b"big", b"", b"endian"], dtype=object)}
    data, records = bytearray(), []
    for key, value in values.items():
        if value.dtype == object:
            crc = 0
            raw = bytearray()
            for item in value:
                raw += _varint(len(item))
                crc = crc32c(struct.pack(">I", len(item)), crc)
            stored = struct.pack(">I", mask(crc))
            crc = crc32c(stored, crc)
            raw += stored
            for item in value:
                raw += item
                crc = crc32c(item, crc)
            dtype = DataType.DT_STRING
        else:
            raw = value.astype(value.dtype.newbyteorder(">")).tobytes()
            crc = crc32c(raw)
            dtype = DataType.DT_FLOAT if value.dtype == np.float32 else DataType.DT_INT64
        entry = BundleEntryProto(dtype=dtype, offset=len(data), size=len(raw), crc32c=mask(crc))
        for dim in value.shape:
            entry.shape.dim.add(size=dim)
        records.append((key.encode(), entry.SerializeToString()))
        data += raw
    header = BundleHeaderProto(num_shards=1, endianness=BundleHeaderProto.BIG)
    header.version.producer = 1
    (tmp_path / "be.index").write_bytes(_table([[(b"", header.SerializeToString()), *records]]))
    (tmp_path / "be.data-00000-of-00001").write_bytes(bytes(data))
    reader = BundleReader(tmp_path / "be")
    assert reader.big_endian
    for key, value in values.items():
        got = reader.read(key)
        assert got.dtype == value.dtype and got.dtype.isnative
        np.testing.assert_array_equal(got, value)
