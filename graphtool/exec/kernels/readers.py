"""Kernels for readers (TFRecordReaderV2, FixedLengthRecordReaderV2, TextLineReaderV2,
WholeFileReaderV2) and the ops that drive them (ReaderReadV2, ReaderReadUpToV2,
ReaderNumRecordsProducedV2, ReaderNumWorkUnitsCompletedV2, ReaderResetV2).

A reader is a session resource, made and named like a queue (queue.py). It reads records from one
file at a time; when it has no file, or its file is exhausted, it dequeues the next filename from
the queue given to ReaderRead (a queue of scalar strings). Reads wait for a filename without
holding a thread: ReaderReadV2 is an asynchronous kernel and the filename dequeue an ordinary
queue attempt. A closed, empty filename queue ends the reads with the queue's OutOfRange error
(ReaderReadUpTo returns up to n records of ONE file: at the end of a file it returns what it
has, and moves to the next file only when it has nothing yet). Reads of one reader run one at a
time, in the order they started, as TensorFlow's ReaderBase holds its mutex over a read.

Files are read within dftool's bounds (graphtool/limits.py): a whole file (WholeFileReader,
FixedLengthRecordReader, a ZLIB stream inflated) within the input bound, one record or line
within the tensor bound, so an endless stream (/dev/zero) fails naming the file.

Keys and values as TensorFlow makes them (reader_base.cc and the reader kernels):
- TFRecordReader: key "<file>:<byte offset of the record>", value the record; the length and data
  masked CRC-32C are checked (DataLoss "corrupted record at <offset>"); compression_type "", "ZLIB"
  or "GZIP";
- TextLineReader: key "<file>:<line number>" (1-based, skipped header lines counted), value the
  line without its "\\n" (or "\\r\\n"); skip_header_lines lines of each file are skipped;
- FixedLengthRecordReader: header_bytes skipped, then records of record_bytes starting every
  hop_bytes (record_bytes when 0), as long as a whole record fits before the footer_bytes; key
  "<file>:<record number>" (0-based); encoding "", "ZLIB" or "GZIP" (the whole file);
- WholeFileReader: key the filename, value the file's bytes.
"""
from __future__ import annotations

import gzip
import io
import struct
import threading
import zlib
from collections import deque
from collections.abc import Callable, Iterator

import numpy as np

from ... import limits
from ...checkpoint.crc import crc32c, mask
from ...errors import RuntimeFailure
from ...graph_io import read_bounded
from .queue import QueueHandle, host_kernel, managers, queue_of, session_resource
from .registry import KernelError


class DataLossError(RuntimeFailure):
    """A corrupted record (TensorFlow's DataLoss)."""


class Reader:
    """One reader: its current file's record iterator and counters, and its line of reads."""

    kind = "Reader"

    def __init__(self, name: str, attrs: dict):
        self.name = name
        self.attrs = attrs
        self.lock = threading.Lock()
        self.records: Iterator[tuple[bytes, bytes]] | None = None
        self.work = ""                 # the current file
        self.produced = 0
        self.completed = 0
        self.busy = False
        self.waiting: deque[Callable[[], None]] = deque()

    # --- what a kind of reader defines --------------------------------------------------------
    def open(self, filename: str) -> Iterator[tuple[bytes, bytes]]:
        raise NotImplementedError

    # --- reading ------------------------------------------------------------------------------
    def reset(self) -> None:
        with self.lock:
            self.records, self.work, self.produced, self.completed = None, "", 0, 0

    def read(self, queue, cancellation: tuple, count: int, up_to: bool, done) -> None:
        """Read `count` records (one, unbatched, for ReaderRead) and call done(keys, values)."""
        start = lambda: _Read(self, queue, cancellation, count, up_to, done).step()   # noqa: E731
        with self.lock:
            if self.busy:
                self.waiting.append(start)
                return
            self.busy = True
        start()

    def finished_read(self) -> None:
        """A read is over: start the next waiting one."""
        with self.lock:
            if not self.waiting:
                self.busy = False
                return
            start = self.waiting.popleft()
        start()

    def next_record(self) -> tuple[bytes, bytes] | None:
        """The current file's next (key, value), or None when it has no (more) records."""
        if self.records is None:
            return None
        record = next(self.records, None)
        if record is None:
            self.records, self.work = None, ""
            self.completed += 1
        return record


class _Read:
    """One ReaderRead(UpTo) in progress: records from the current file, else the next file."""

    def __init__(self, reader: Reader, queue, cancellation: tuple, count: int, up_to: bool, done):
        self.reader, self.queue, self.cancellation = reader, queue, cancellation
        self.count, self.up_to, self.done = count, up_to, done
        self.keys: list[bytes] = []
        self.values: list[bytes] = []

    def step(self) -> None:
        reader = self.reader
        try:
            while len(self.keys) < self.count:
                record = reader.next_record()
                if record is None:   # the file has no (more) records
                    if self.keys:    # ReadUpTo returns what one file gave (as TF's ReaderBase)
                        break
                    # Nothing yet: ask the queue for the next file.
                    self.queue.dequeue(self.cancellation, 1, False, False, self._got_filename)
                    return
                self.keys.append(record[0])
                self.values.append(record[1])
                reader.produced += 1
        except Exception as exc:
            self._end(error=exc)
            return
        self._end()

    def _got_filename(self, outputs=(), error: BaseException | None = None) -> None:
        if error is not None:
            # Out of files: ReadUpTo returns what it has, ReaderRead fails with the queue's error.
            self._end(error=None if self.up_to and self.keys else error)
            return
        if len(outputs) != 1 or getattr(outputs[0], "shape", None) != () or outputs[0].dtype != object:
            self._end(error=KernelError("Expected to dequeue a one-element string tensor (the filename queue must "
                                        "hold scalar strings)"))
            return
        filename = outputs[0][()]
        filename = filename.decode("utf-8", "surrogateescape") if isinstance(filename, bytes) else str(filename)
        try:
            self.reader.records = self.reader.open(filename)
            self.reader.work = filename
        except OSError as exc:
            self._end(error=KernelError(f"{filename}; {exc.strerror or exc}"))
            return
        except Exception as exc:
            self._end(error=exc)
            return
        self.step()

    def _end(self, error: BaseException | None = None) -> None:
        self.reader.finished_read()
        if error is not None:
            self.done(error=error)
        elif self.up_to:
            self.done((np.array(self.keys, dtype=object), np.array(self.values, dtype=object)))
        else:
            self.done((_scalar(self.keys[0]), _scalar(self.values[0])))


def _scalar(value: bytes) -> np.ndarray:
    out = np.empty((), dtype=object)
    out[()] = value
    return out


def _open_bytes(filename: str, compression: str) -> io.BufferedIOBase:
    if compression == "GZIP":
        return gzip.open(filename, "rb")
    if compression == "ZLIB":
        with open(filename, "rb") as raw:
            compressed = read_bounded(raw, filename)
        limit = limits.current().max_input_bytes
        inflater = zlib.decompressobj()
        data = inflater.decompress(compressed, limit + 1)
        if len(data) > limit:   # a small file inflating without end
            raise KernelError(f"{filename}: inflates to more than the input bound of {limits.describe_bytes(limit)}")
        return io.BytesIO(data)
    return open(filename, "rb")


def _read_all(stream, filename: str) -> bytes:
    """A whole (decompressed) file, within the input bound (an endless stream such as /dev/zero
    fails naming the file instead of filling memory)."""
    with stream:
        return read_bounded(stream, filename)


def _check_compression(ctx, value: str, what: str) -> None:
    if value not in ("", "ZLIB", "GZIP"):
        ctx.fail(f"{what} '{value}' is not supported (use '', 'ZLIB' or 'GZIP')")


class TFRecordReader(Reader):
    kind = "TFRecordReader"

    def open(self, filename: str) -> Iterator[tuple[bytes, bytes]]:
        stream = _open_bytes(filename, self.attrs["compression_type"])
        return self._records(filename, stream)

    @staticmethod
    def _records(filename: str, stream) -> Iterator[tuple[bytes, bytes]]:
        key_prefix = filename.encode("utf-8", "surrogateescape") + b":"
        offset = 0
        with stream:
            while True:
                header = stream.read(12)
                if not header:
                    return
                if len(header) < 12:
                    raise DataLossError(f"truncated record at {offset} in {filename}")
                length, length_crc = struct.unpack("<QI", header)
                if mask(crc32c(header[:8])) != length_crc:
                    raise DataLossError(f"corrupted record at {offset} in {filename} (length checksum mismatch)")
                if length > limits.current().max_tensor_bytes:
                    raise DataLossError(f"record at {offset} in {filename} claims {limits.describe_bytes(length)}, "
                                        f"more than the tensor bound of "
                                        f"{limits.describe_bytes(limits.current().max_tensor_bytes)}")
                data = stream.read(length)
                footer = stream.read(4)
                if len(data) < length or len(footer) < 4:
                    raise DataLossError(f"truncated record at {offset} in {filename}")
                if mask(crc32c(data)) != struct.unpack("<I", footer)[0]:
                    raise DataLossError(f"corrupted record at {offset} in {filename} (data checksum mismatch)")
                yield key_prefix + str(offset).encode(), data
                offset += 16 + length


class TextLineReader(Reader):
    kind = "TextLineReader"

    def open(self, filename: str) -> Iterator[tuple[bytes, bytes]]:
        return self._lines(filename, open(filename, "rb"), self.attrs["skip_header_lines"])

    @staticmethod
    def _lines(filename: str, stream, skip: int) -> Iterator[tuple[bytes, bytes]]:
        key_prefix = filename.encode("utf-8", "surrogateescape") + b":"
        number = 0
        limit = limits.current().max_tensor_bytes
        with stream:
            while True:
                line = stream.readline(limit + 1)   # a line is a tensor: within the bound
                if not line:
                    return
                if len(line) > limit:
                    raise KernelError(f"{filename}: line {number + 1} is longer than the tensor bound of "
                                      f"{limits.describe_bytes(limit)}")
                number += 1
                if number <= skip:
                    continue
                if line.endswith(b"\n"):
                    line = line[:-1]
                if line.endswith(b"\r"):
                    line = line[:-1]
                yield key_prefix + str(number).encode(), line


class FixedLengthRecordReader(Reader):
    kind = "FixedLengthRecordReader"

    def open(self, filename: str) -> Iterator[tuple[bytes, bytes]]:
        return self._records(filename, _read_all(_open_bytes(filename, self.attrs["encoding"]), filename))

    def _records(self, filename: str, data: bytes) -> Iterator[tuple[bytes, bytes]]:
        header, record, footer = (self.attrs[k] for k in ("header_bytes", "record_bytes", "footer_bytes"))
        hop = self.attrs["hop_bytes"] or record
        key_prefix = filename.encode("utf-8", "surrogateescape") + b":"
        end = len(data) - footer
        number, start = 0, header
        while start + record <= end:
            yield key_prefix + str(number).encode(), data[start:start + record]
            number += 1
            start += hop


class WholeFileReader(Reader):
    kind = "WholeFileReader"

    def open(self, filename: str) -> Iterator[tuple[bytes, bytes]]:
        data = _read_all(open(filename, "rb"), filename)
        return iter([(filename.encode("utf-8", "surrogateescape"), data)])


@host_kernel("TFRecordReaderV2")
def tfrecord_reader(ctx, *, container, shared_name, compression_type):
    _check_compression(ctx, compression_type, "compression_type")
    return reader_handle(ctx, container, shared_name,
                         lambda name: TFRecordReader(name, {"compression_type": compression_type}),
                                 TFRecordReader)


@host_kernel("TextLineReaderV2")
def text_line_reader(ctx, *, skip_header_lines, container, shared_name):
    if skip_header_lines < 0:
        ctx.fail(f"skip_header_lines must be >= 0 not {skip_header_lines}")
    return reader_handle(ctx, container, shared_name,
                         lambda name: TextLineReader(name, {"skip_header_lines": skip_header_lines}),
                                 TextLineReader)


@host_kernel("FixedLengthRecordReaderV2")
def fixed_length_record_reader(ctx, *, header_bytes, record_bytes, footer_bytes, hop_bytes, container,
                               shared_name, encoding):
    attrs = {"header_bytes": header_bytes, "record_bytes": record_bytes, "footer_bytes": footer_bytes,
             "hop_bytes": hop_bytes, "encoding": encoding}
    for name in ("header_bytes", "footer_bytes", "hop_bytes"):
        if attrs[name] < 0:
            ctx.fail(f"{name} must be >= 0 not {attrs[name]}")
    if record_bytes <= 0:
        ctx.fail(f"record_bytes must be > 0 not {record_bytes}")
    _check_compression(ctx, encoding, "encoding")
    return reader_handle(ctx, container, shared_name,
                         lambda name: FixedLengthRecordReader(name, attrs), FixedLengthRecordReader)


@host_kernel("WholeFileReaderV2")
def whole_file_reader(ctx, *, container, shared_name):
    return reader_handle(ctx, container, shared_name, lambda name: WholeFileReader(name, {}),
                                 WholeFileReader)


def reader_handle(ctx, container: str, shared_name: str, make: Callable[[str], Reader], cls: type[Reader]):
    """A reader op's output: the handle of its reader, made on first use in the session."""
    container, name, reader = session_resource(ctx, "Reader", container, shared_name, make)
    if type(reader) is not cls:
        ctx.fail(f"Shared reader '{name}' is a {reader.kind}, but the node declares a {cls.kind}")
    if reader.attrs != make(name).attrs:
        ctx.fail(f"Shared reader '{name}' was made with attrs {reader.attrs}, this node asks for {make(name).attrs}")
    handle = np.empty((), dtype=object)
    handle[()] = QueueHandle(container, name)
    return handle


def reader_of(ctx, handle) -> Reader:
    value = handle[()] if getattr(handle, "ndim", None) == 0 else None
    container, name = getattr(value, "container", None), getattr(value, "name", None)
    reader = ctx.resources.session.lookup(("Reader", container, name)) if name is not None else None
    if not isinstance(reader, Reader):
        raise KernelError("input 0 is not a reader handle of this session")
    return reader


@host_kernel("ReaderReadV2", asynchronous=True)
def reader_read(ctx, done, reader_handle, queue_handle):
    reader = reader_of(ctx, reader_handle)
    reader.read(queue_of(ctx, queue_handle), managers(ctx), 1, False, done)


@host_kernel("ReaderReadUpToV2", asynchronous=True)
def reader_read_up_to(ctx, done, reader_handle, queue_handle, num_records):
    count = int(num_records)
    if count <= 0:
        ctx.fail(f"num_records ({count}) must be > 0")
    reader = reader_of(ctx, reader_handle)
    reader.read(queue_of(ctx, queue_handle), managers(ctx), count, True, done)


@host_kernel("ReaderNumRecordsProducedV2")
def reader_num_records_produced(ctx, reader_handle):
    reader = reader_of(ctx, reader_handle)
    with reader.lock:
        return np.array(reader.produced, dtype=np.int64)


@host_kernel("ReaderNumWorkUnitsCompletedV2")
def reader_num_work_units_completed(ctx, reader_handle):
    reader = reader_of(ctx, reader_handle)
    with reader.lock:
        return np.array(reader.completed, dtype=np.int64)


@host_kernel("ReaderResetV2")
def reader_reset(ctx, reader_handle):
    reader_of(ctx, reader_handle).reset()
    return ()
