"""Writing TensorFlow's sorted string table (the format table.py reads), as TensorFlow's
lib/io/table_builder.cc + block_builder.cc do with a bundle's options (no compression):

- data blocks of about `block_size` bytes, keys prefix-compressed against the previous key with
  a restart point (a full key) every `restart_interval` entries;
- every block followed by its trailer: type byte 0 and the masked CRC-32C of block + type byte;
- an empty metaindex block; an index block (restart interval 1) whose entries map a short
  separator key (>= the block's last key, < the next block's first key) to the block's handle;
- the 48-byte footer: metaindex and index handles (varints), zero padding to 40 bytes, magic.

Keys must be added in strictly increasing (bytewise) order.
"""
from __future__ import annotations

import struct

from .crc import crc32c, mask
from .errors import CheckpointError
from .table import BLOCK_TRAILER_SIZE, FOOTER_SIZE, MAGIC, NO_COMPRESSION

# TensorFlow's table::Options defaults.
BLOCK_SIZE = 256 * 1024
RESTART_INTERVAL = 16
_HANDLE_PAD = 40          # two BlockHandles at their maximum encoded length (2 x 2 x 10 bytes)


def varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


class BlockBuilder:
    """One block: prefix-compressed entries, then the restart offsets and their count."""

    def __init__(self, restart_interval: int):
        self.restart_interval = restart_interval
        self.reset()

    def reset(self) -> None:
        self.buffer = bytearray()
        self.restarts = [0]
        self.counter = 0
        self.last_key = b""

    @property
    def empty(self) -> bool:
        return not self.buffer

    def estimated_size(self) -> int:
        return len(self.buffer) + 4 * len(self.restarts) + 4

    def add(self, key: bytes, value: bytes) -> None:
        shared = 0
        if self.counter < self.restart_interval:
            limit = min(len(self.last_key), len(key))
            while shared < limit and self.last_key[shared] == key[shared]:
                shared += 1
        else:
            self.restarts.append(len(self.buffer))
            self.counter = 0
        self.buffer += varint(shared) + varint(len(key) - shared) + varint(len(value))
        self.buffer += key[shared:] + value
        self.last_key = key
        self.counter += 1

    def finish(self) -> bytes:
        return bytes(self.buffer) + struct.pack(f"<{len(self.restarts)}I", *self.restarts) + \
            struct.pack("<I", len(self.restarts))


def shortest_separator(start: bytes, limit: bytes) -> bytes:
    """LevelDB's BytewiseComparator::FindShortestSeparator: a short key in [start, limit)."""
    common = 0
    while common < min(len(start), len(limit)) and start[common] == limit[common]:
        common += 1
    if common >= min(len(start), len(limit)):
        return start                                    # one is a prefix of the other
    byte = start[common]
    if byte < 0xFF and byte + 1 < limit[common]:
        return start[:common] + bytes([byte + 1])
    return start


def short_successor(key: bytes) -> bytes:
    """LevelDB's FindShortSuccessor: the first byte that can be incremented, incremented."""
    for i, byte in enumerate(key):
        if byte != 0xFF:
            return key[:i] + bytes([byte + 1])
    return key


class TableWriter:
    """Build a table in memory; `finish()` returns the file's bytes."""

    def __init__(self, block_size: int = BLOCK_SIZE, restart_interval: int = RESTART_INTERVAL):
        self.block_size = block_size
        self.out = bytearray()
        self.data = BlockBuilder(restart_interval)
        self.index = BlockBuilder(1)
        self.last_key: bytes | None = None
        self.pending_handle: bytes | None = None      # of the last flushed block, awaiting its separator

    def add(self, key: bytes, value: bytes) -> None:
        if self.last_key is not None and key <= self.last_key:
            raise CheckpointError(f"table keys out of order: {key!r} after {self.last_key!r}")
        if self.pending_handle is not None:
            assert self.last_key is not None
            self.index.add(shortest_separator(self.last_key, key), self.pending_handle)
            self.pending_handle = None
        self.data.add(key, value)
        self.last_key = key
        if self.data.estimated_size() >= self.block_size:
            self._flush()

    def _flush(self) -> None:
        if self.data.empty:
            return
        self.pending_handle = self._write_block(self.data)

    def _write_block(self, block: BlockBuilder) -> bytes:
        contents = block.finish()
        block.reset()
        handle = varint(len(self.out)) + varint(len(contents))
        kind = bytes([NO_COMPRESSION])
        self.out += contents + kind + struct.pack("<I", mask(crc32c(kind, crc32c(contents))))
        return handle

    def finish(self) -> bytes:
        self._flush()
        metaindex_handle = self._write_block(BlockBuilder(RESTART_INTERVAL))
        if self.pending_handle is not None:
            assert self.last_key is not None
            self.index.add(short_successor(self.last_key), self.pending_handle)
            self.pending_handle = None
        index_handle = self._write_block(self.index)
        footer = (metaindex_handle + index_handle).ljust(_HANDLE_PAD, b"\0") + struct.pack("<Q", MAGIC)
        assert len(footer) == FOOTER_SIZE and BLOCK_TRAILER_SIZE == 5
        self.out += footer
        return bytes(self.out)


def write_table(entries: list[tuple[bytes, bytes]], **options) -> bytes:
    """The bytes of a table holding `entries` (sorted by key)."""
    writer = TableWriter(**options)
    for key, value in entries:
        writer.add(key, value)
    return writer.finish()
