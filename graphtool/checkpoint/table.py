"""TensorFlow's sorted string table (LevelDB's table format), the container of a bundle's index.

Layout of a table file:

    [data block 0][trailer] ... [data block N][trailer] [metaindex block][trailer]
    [index block][trailer] [footer: 48 bytes]

- footer: the BlockHandles (varint64 offset, varint64 size) of the metaindex and the index block,
  zero padding to 40 bytes, then the 8-byte magic number (little endian).
- trailer (5 bytes after every block): compression type (0 none, 1 snappy) and the masked CRC-32C
  of the block's bytes followed by that type byte.
- block: entries, then the restart array (fixed32 offsets) and its length (fixed32). An entry is
  varint32 shared-prefix length, varint32 unshared length, varint32 value length, the unshared key
  bytes and the value. Keys are prefix-compressed against the previous key; at every restart point
  the prefix length is 0, so a reader could binary-search the restarts.
- index block: one entry per data block; its value is the data block's BlockHandle, its key a
  separator >= every key in that block.

Index files are small (one entry per tensor), so the reader decodes every block eagerly and checks
every checksum; any inconsistency is a one-line error naming the file.
"""
from __future__ import annotations

import struct

from .crc import crc32c, unmask
from .errors import CheckpointError

MAGIC = 0xDB4775248B80FB57
FOOTER_SIZE = 48
BLOCK_TRAILER_SIZE = 5
NO_COMPRESSION, SNAPPY_COMPRESSION = 0, 1


def read_varint(data: bytes, pos: int, limit: int, what: str, source: str) -> tuple[int, int]:
    """(value, next position) of the varint at `pos`; CheckpointError if it runs past `limit`."""
    result, shift = 0, 0
    while pos < limit and shift <= 63:
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
    raise CheckpointError(f"{source}: corrupt {what} (bad varint)")


def read_table(data: bytes, source: str) -> list[tuple[bytes, bytes]]:
    """Every (key, value) of a table file's bytes in key order. `source` names the file in errors."""
    if len(data) < FOOTER_SIZE:
        raise CheckpointError(f"{source}: truncated: {len(data)} bytes, smaller than a table footer "
                              f"({FOOTER_SIZE} bytes)")
    footer = data[-FOOTER_SIZE:]
    magic = struct.unpack_from("<Q", footer, FOOTER_SIZE - 8)[0]
    if magic != MAGIC:
        raise CheckpointError(f"{source}: bad magic number {magic:#018x} (not a TensorFlow table, "
                              f"or truncated)")
    limit = FOOTER_SIZE - 8
    _, pos = read_varint(footer, 0, limit, "footer", source)           # metaindex offset
    _, pos = read_varint(footer, pos, limit, "footer", source)         # metaindex size (unused)
    index_offset, pos = read_varint(footer, pos, limit, "footer", source)
    index_size, _ = read_varint(footer, pos, limit, "footer", source)
    body_size = len(data) - FOOTER_SIZE
    index = _read_block(data, index_offset, index_size, body_size, source, "index block")

    entries: list[tuple[bytes, bytes]] = []
    for separator, handle in _block_entries(index, source, "index block"):
        offset, pos = read_varint(handle, 0, len(handle), "block handle", source)
        size, _ = read_varint(handle, pos, len(handle), "block handle", source)
        block = _read_block(data, offset, size, index_offset, source, f"data block at offset {offset}")
        for key, value in _block_entries(block, source, f"data block at offset {offset}"):
            if entries and key <= entries[-1][0]:
                raise CheckpointError(f"{source}: keys out of order in data block at offset {offset}")
            if key > separator:
                raise CheckpointError(f"{source}: key beyond its index separator in data block at offset {offset}")
            entries.append((key, value))
    return entries


def _read_block(data: bytes, offset: int, size: int, end: int, source: str, what: str) -> bytes:
    """The checked, decompressed contents of one block that must lie before `end`."""
    if offset + size + BLOCK_TRAILER_SIZE > end:
        raise CheckpointError(f"{source}: truncated: {what} ({size} bytes at offset {offset}) runs past "
                              f"the end of the data ({end} bytes)")
    contents = data[offset:offset + size]
    kind = data[offset + size]
    stored = struct.unpack_from("<I", data, offset + size + 1)[0]
    actual = crc32c(bytes([kind]), crc32c(contents))
    if unmask(stored) != actual:
        raise CheckpointError(f"{source}: checksum mismatch in {what} (stored {unmask(stored):#010x}, "
                              f"computed {actual:#010x}): the file is corrupt")
    if kind == NO_COMPRESSION:
        return contents
    if kind == SNAPPY_COMPRESSION:
        return snappy_decompress(contents, source, what)
    raise CheckpointError(f"{source}: {what} has unknown compression type {kind}")


def _block_entries(block: bytes, source: str, what: str):
    """(key, value) pairs of one decoded block, keys expanded from their shared prefixes."""
    if len(block) < 4:
        raise CheckpointError(f"{source}: corrupt {what} (too short)")
    num_restarts = struct.unpack_from("<I", block, len(block) - 4)[0]
    restarts_at = len(block) - 4 - 4 * num_restarts
    if restarts_at < 0:
        raise CheckpointError(f"{source}: corrupt {what} (restart array larger than the block)")
    restarts = set(struct.unpack_from(f"<{num_restarts}I", block, restarts_at))
    key, pos = b"", 0
    while pos < restarts_at:
        start = pos
        shared, pos = read_varint(block, pos, restarts_at, what, source)
        unshared, pos = read_varint(block, pos, restarts_at, what, source)
        value_size, pos = read_varint(block, pos, restarts_at, what, source)
        if shared > len(key) or (start in restarts and shared) or pos + unshared + value_size > restarts_at:
            raise CheckpointError(f"{source}: corrupt {what} (bad entry at byte {start})")
        key = key[:shared] + block[pos:pos + unshared]
        pos += unshared
        yield key, block[pos:pos + value_size]
        pos += value_size


def snappy_decompress(data: bytes, source: str, what: str) -> bytes:
    """Decode a raw Snappy block (TensorFlow may write compressed table blocks)."""
    def corrupt():
        return CheckpointError(f"{source}: corrupt snappy data in {what}")

    length, pos = read_varint(data, 0, len(data), what, source)
    out = bytearray()
    while pos < len(data):
        tag = data[pos]
        pos += 1
        kind = tag & 3
        if kind == 0:                                   # literal
            size = tag >> 2
            if size >= 60:
                extra = size - 59
                size = int.from_bytes(data[pos:pos + extra], "little")
                pos += extra
            size += 1
            if pos + size > len(data):
                raise corrupt()
            out += data[pos:pos + size]
            pos += size
            continue
        if kind == 1:                                   # copy, 11-bit offset
            size = 4 + ((tag >> 2) & 7)
            offset = ((tag >> 5) << 8) | data[pos]
            pos += 1
        else:                                           # copy, 16- or 32-bit offset
            width = 2 if kind == 2 else 4
            size = (tag >> 2) + 1
            offset = int.from_bytes(data[pos:pos + width], "little")
            pos += width
        if offset == 0 or offset > len(out) or pos > len(data):
            raise corrupt()
        start = len(out) - offset
        for i in range(size):                           # copies may overlap what they produce
            out.append(out[start + i])
    if len(out) != length:
        raise corrupt()
    return bytes(out)
