"""Readers: TensorFlow-made fixtures (tests/fixtures/queues: a TextLineReader feeding a seeded
shuffle_batch, FixedLengthRecordReader with and without hop_bytes) replayed in one dftool
Session, and TFRecord files written here checked for framing, checksums and compression."""
from __future__ import annotations

import gzip
import struct
import zlib

import numpy as np
import pytest

from graphtool import dtypes
from graphtool.builder import GraphBuilder
from graphtool.checkpoint.crc import crc32c, mask
from graphtool.errors import DftoolError, OutOfRangeError
from graphtool.exec.session import Session

from .test_queues import FIXTURES, replay


@pytest.fixture(autouse=True)
def in_fixtures(monkeypatch):
    """The fixture graphs name their files relative to tests/fixtures/queues."""
    monkeypatch.chdir(FIXTURES)


def test_text_line_reader_and_seeded_shuffle_batch_replay_tensorflow():
    replay("text_shuffle")


def test_fixed_length_reader_replays_tensorflow():
    replay("fixed_length")


def _record(data: bytes) -> bytes:
    length = struct.pack("<Q", len(data))
    return length + struct.pack("<I", mask(crc32c(length))) + data + struct.pack("<I", mask(crc32c(data)))


def _reader_graph(reader_op: str, **attrs):
    b = GraphBuilder()
    q = b.op("FIFOQueueV2", [], name="files", component_types=[dtypes.string], shapes=[[]])
    names = b.placeholder("string", [None], name="names")
    b.op("QueueEnqueueManyV2", [q, [names]], name="fill")
    b.op("QueueCloseV2", [q], name="close")
    reader = b.op(reader_op, [], name="reader", **attrs)
    b.op("ReaderReadV2", [reader, q], name="read")
    b.op("ReaderReadUpToV2", [reader, q, b.const(np.int64(100))], name="read_up_to")
    b.op("ReaderNumWorkUnitsCompletedV2", [reader], name="completed")
    return b.graph


def _session(graph, *files) -> Session:
    session = Session(graph)
    session.run([], {"names": np.array([str(f).encode() for f in files], dtype=object)}, targets=["fill"])
    session.run([], targets=["close"])
    return session


def test_tfrecord_reader_reads_files_in_turn_then_ends(tmp_path):
    payloads = [b"x", b"", b"y" * 300]
    (tmp_path / "a.tfrecord").write_bytes(b"".join(_record(p) for p in payloads[:2]))
    (tmp_path / "b.tfrecord").write_bytes(_record(payloads[2]))
    session = _session(_reader_graph("TFRecordReaderV2"), tmp_path / "a.tfrecord", tmp_path / "b.tfrecord")
    got = [session.run(["read:0", "read:1"]).values for _ in range(3)]
    assert [v.item() for _, v in got] == payloads
    assert [k.item() for k, _ in got] == [f"{tmp_path}/a.tfrecord:0".encode(), f"{tmp_path}/a.tfrecord:17".encode(),
                                          f"{tmp_path}/b.tfrecord:0".encode()]
    with pytest.raises(OutOfRangeError, match=r"node 'read' \(ReaderReadV2\): FIFOQueue '_\d+_files' is closed"):
        session.run(["read:0"])
    assert session.run(["completed:0"]).values[0] == 2


@pytest.mark.parametrize("compression", ["GZIP", "ZLIB"])
def test_tfrecord_reader_compressed(tmp_path, compression):
    data = b"".join(_record(p) for p in (b"one", b"two"))
    path = tmp_path / "c.tfrecord"
    path.write_bytes(gzip.compress(data) if compression == "GZIP" else zlib.compress(data))
    session = _session(_reader_graph("TFRecordReaderV2", compression_type=compression), path)
    assert session.run(["read_up_to:1"]).values[0].tolist() == [b"one", b"two"]


def test_tfrecord_corruption_is_data_loss_naming_node_and_file(tmp_path):
    good = _record(b"payload")
    bad = good[:-1] + bytes([good[-1] ^ 1])
    (tmp_path / "bad.tfrecord").write_bytes(good + bad)
    session = _session(_reader_graph("TFRecordReaderV2"), tmp_path / "bad.tfrecord")
    session.run(["read:1"])
    with pytest.raises(DftoolError, match=r"node 'read'.*corrupted record at 23 in .*bad.tfrecord"):
        session.run(["read:1"])


def test_missing_file_names_node_and_file(tmp_path):
    session = _session(_reader_graph("TextLineReaderV2"), tmp_path / "missing.txt")
    with pytest.raises(DftoolError, match=r"node 'read'.*missing.txt; No such file or directory"):
        session.run(["read:1"])


def test_whole_file_reader(tmp_path):
    (tmp_path / "f.bin").write_bytes(b"\x00\x01whole")
    session = _session(_reader_graph("WholeFileReaderV2"), tmp_path / "f.bin")
    key, value = session.run(["read:0", "read:1"]).values
    assert key.item() == str(tmp_path / "f.bin").encode() and value.item() == b"\x00\x01whole"


def test_bad_reader_attrs_name_the_node():
    graph = _reader_graph("FixedLengthRecordReaderV2", record_bytes=0)
    with pytest.raises(DftoolError, match="node 'reader'.*record_bytes must be > 0"):
        Session(graph).run(["completed:0"])
    graph = _reader_graph("TFRecordReaderV2", compression_type="LZ4")
    with pytest.raises(DftoolError, match="node 'reader'.*compression_type 'LZ4' is not supported"):
        Session(graph).run(["completed:0"])


@pytest.mark.parametrize("reader, attrs", [("WholeFileReaderV2", {}), ("TextLineReaderV2", {}),
                                           ("FixedLengthRecordReaderV2", {"record_bytes": 4})])
def test_an_endless_file_is_refused_naming_it(monkeypatch, reader, attrs):
    from graphtool import limits

    monkeypatch.setattr(limits.current(), "max_input_bytes", 1 << 20)
    monkeypatch.setattr(limits.current(), "max_tensor_bytes", 1 << 20)
    session = _session(_reader_graph(reader, **attrs), "/dev/zero")
    with pytest.raises(DftoolError, match="node 'read'.*/dev/zero"):
        session.run(["read:1"], timeout=30)


def test_reads_of_one_reader_in_one_step_take_turns(tmp_path):
    """Two ReaderReads of the same reader in one step get different records (reads of one
    reader run one at a time, as TF's ReaderBase holds its mutex)."""
    (tmp_path / "a.txt").write_bytes(b"1\n2\n3\n")
    b = GraphBuilder()
    q = b.op("FIFOQueueV2", [], name="files", component_types=[dtypes.string], shapes=[[]])
    b.op("QueueEnqueueV2", [q, [b.const(np.array(str(tmp_path / "a.txt").encode(), dtype=object))]], name="fill")
    reader = b.op("TextLineReaderV2", [], name="reader")
    first = b.op("ReaderReadV2", [reader, q], name="first")
    second = b.op("ReaderReadV2", [reader, q], name="second")
    session = Session(b.graph)
    session.run([], targets=["fill"])
    values = session.run([first[1].full_name, second[1].full_name]).values
    assert sorted(v.item() for v in values) == [b"1", b"2"]
