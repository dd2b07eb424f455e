"""Kernels that read data from outside the graph (image bytes, vocabulary files) stay within the
bounds: a few hundred bytes claiming a huge picture, or a vocabulary path naming an endless stream,
fail the step naming the node instead of allocating until the machine gives out."""
from __future__ import annotations

import struct
import zlib

import numpy as np
import pytest

from graphtool import dtypes, limits
from graphtool.builder import GraphBuilder
from graphtool.errors import RuntimeFailure
from graphtool.exec.session import Session
from graphtool.ir import Graph


def _png_header_only(width: int, height: int) -> bytes:
    """A PNG whose IHDR declares width x height RGBA (8-bit) and whose data is one tiny IDAT."""
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\0" * 64)) + chunk(b"IEND", b"")


def test_a_png_declaring_a_huge_picture_is_refused_from_its_header():
    data = _png_header_only(60000, 60000)   # 14.4 GB of RGBA from ~100 bytes
    assert len(data) < 200
    b = GraphBuilder()
    b.op("DecodePng", [b.const(np.array(data, dtype=object))], name="decode")
    with pytest.raises(RuntimeFailure) as info:
        Session(b.graph, threads=1).run(["decode:0"])
    assert "decode" in str(info.value) and "tensor bound" in str(info.value)


def test_the_image_bound_follows_the_configured_tensor_bound(monkeypatch):
    # Not all equal: a constant stored in full (a filled one beyond the bound is refused before the kernel runs).
    pixels = (np.arange(64 * 64 * 3) % 251).astype(np.uint8).reshape(64, 64, 3)
    b = GraphBuilder()
    encoded = b.op("EncodePng", [b.const(pixels)], name="encode")
    b.op("DecodePng", [encoded], name="decode", channels=3)
    np.testing.assert_array_equal(Session(b.graph, threads=1).run(["decode:0"]).values[0], pixels)
    monkeypatch.setattr(limits.current(), "max_tensor_bytes", 1000)
    with pytest.raises(RuntimeFailure, match="tensor bound"):
        Session(b.graph, threads=1).run(["decode:0"])


@pytest.mark.parametrize("path, message", [("/dev/urandom", "input bound"), ("/dev/zero", "zero bytes")])
def test_a_vocabulary_file_that_never_ends_is_refused(monkeypatch, path, message):
    monkeypatch.setattr(limits.current(), "max_input_bytes", 1 << 20)
    g = Graph()
    table = g.add_node("HashTableV2", "table", attrs={"key_dtype": dtypes.string, "value_dtype": dtypes.int64})
    filename = g.add_node("Const", "filename", attrs={"value": np.array(path.encode(), object), "dtype": dtypes.string})
    g.add_node("InitializeTableFromTextFileV2", "init", inputs=[table.output(), filename.output()],
               attrs={"key_index": -2, "value_index": -1})
    with pytest.raises(RuntimeFailure) as info:
        Session(g).run([], targets=["init"])
    assert "init" in str(info.value) and path in str(info.value) and message in str(info.value)
