"""The one door in and out: read and write GraphDef files (binary .pb, text .pbtxt, `-` for stdio).

On stdin the format is detected: binary first, then text. Files in another format (ONNX, Keras,
TFLite, event files, SavedModel/MetaGraphDef protos, checkpoints) are recognised by
graphtool.formats and refused by name with a hint. Writes are atomic: the bytes go to a
temporary file next to the target, which is renamed over it only when complete, so a failed command
never leaves a half-written or clobbered output.
"""
from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from google.protobuf import text_format
from google.protobuf.message import DecodeError

from . import formats
from .errors import InvalidGraphError, UsageError
from .proto.graph_pb2 import GraphDef

STDIO = "-"
TEXT_SUFFIXES = (".pbtxt", ".txt", ".prototxt")


def _display(path: str) -> str:
    return "<stdin>" if path == STDIO else str(path)


def read_bytes(path: str) -> bytes:
    """Read a whole input file (or stdin), turning OS errors into one-line InvalidGraphErrors."""
    if path == STDIO:
        return sys.stdin.buffer.read()
    p = Path(path)
    try:
        if p.is_dir():
            raise InvalidGraphError(f"{path}: is a directory, not a graph file")
        return p.read_bytes()
    except FileNotFoundError:
        raise InvalidGraphError(f"{path}: no such file") from None
    except PermissionError:
        raise InvalidGraphError(f"{path}: permission denied") from None
    except OSError as exc:
        raise InvalidGraphError(f"{path}: cannot read ({exc.strerror or exc})") from None


def parse_graphdef(data: bytes, source: str = "<bytes>", fmt: str | None = None,
                   name: str | None = None) -> GraphDef:
    """Parse bytes as a GraphDef. `fmt` is "binary", "text" or None (detect: binary, then text).
    Files in another format (ONNX, Keras, TFLite, SavedModel, event files, ...; see
    graphtool.formats) are refused by name; `name` is the file name, when there is one."""
    if not data.strip():
        raise InvalidGraphError(f"{source}: file is empty, not a GraphDef")
    _refuse_foreign(formats.identify(data, name), source)
    binary_error = text_error = None
    if fmt in (None, "binary"):
        graph_def, binary_error = _parse_binary(data)
        if graph_def is not None:
            return graph_def
    if fmt in (None, "text") or formats.looks_like_text(data):
        graph_def, text_error = _parse_text(data)
        if graph_def is not None and fmt != "binary":
            return graph_def
        if graph_def is not None:  # text in a file whose name says binary
            raise InvalidGraphError(f"{source}: a text-format GraphDef in a file named as binary",
                                    hint="use a .pbtxt name for text format")
    # Only once both parses failed: a binary GraphDef whose first node is 91 or 123 bytes long
    # starts with b"\n[" or b"\n{" too.
    if data.lstrip()[:1] in (b"{", b"["):
        raise InvalidGraphError(f"{source}: looks like JSON, not a GraphDef (binary .pb or text .pbtxt)")
    _refuse_foreign(formats.identify_after_failure(data), source)
    if fmt == "binary":
        raise InvalidGraphError(f"{source}: not a valid binary GraphDef ({binary_error})",
                                hint=f"text parser: {text_error}" if text_error else "truncated or corrupt?")
    if fmt == "text":
        hint = None
        if not formats.looks_like_text(data):
            hint = ("the bytes are binary, not text: use a .pb name for a binary GraphDef"
                    if _parse_binary(data)[0] is not None else "the bytes are binary, not text")
        raise InvalidGraphError(f"{source}: not a valid text GraphDef ({text_error})", hint=hint)
    raise InvalidGraphError(f"{source}: not a GraphDef: neither a binary protobuf nor text format "
                            f"(truncated or corrupt? text parser: {text_error})")


def _refuse_foreign(found, source: str) -> None:
    if found is not None:
        raise InvalidGraphError(f"{source}: {found.what}, not a GraphDef", hint=found.hint)


def _parse_binary(data: bytes) -> tuple[GraphDef | None, str]:
    graph_def = GraphDef()
    try:
        graph_def.ParseFromString(data)
    except (DecodeError, RuntimeError, ValueError) as exc:
        return None, str(exc) or "decode error"
    # Random bytes sometimes parse as a message made only of unknown fields; a GraphDef has nodes
    # (or at least one known field), so such a parse is not one.
    if not graph_def.ListFields():
        return None, "no GraphDef fields found"
    if _has_unknown_fields(graph_def):
        return None, "unknown fields (corrupt data?)"
    return graph_def, ""


def _has_unknown_fields(graph_def: GraphDef) -> bool:
    from google.protobuf.unknown_fields import UnknownFieldSet

    if len(UnknownFieldSet(graph_def)):
        return True
    return any(len(UnknownFieldSet(node)) for node in graph_def.node)


def _parse_text(data: bytes) -> tuple[GraphDef | None, str]:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None, "not UTF-8 text"
    graph_def = GraphDef()
    try:
        text_format.Parse(text, graph_def)
    except text_format.ParseError as exc:
        return None, str(exc)
    except (ValueError, RuntimeError) as exc:  # e.g. bad enum value deep in an attr
        return None, str(exc)
    if not graph_def.ListFields():
        return None, "no GraphDef fields found"
    return graph_def, ""


def format_for(path: str) -> str | None:
    """'text' for .pbtxt names, 'binary' for other names, None (detect) for stdin."""
    if path == STDIO:
        return None
    return "text" if str(path).endswith(TEXT_SUFFIXES) else "binary"


def load_graphdef(path: str) -> GraphDef:
    """Read and parse a GraphDef file, `-` meaning stdin."""
    data = read_bytes(path)
    fmt = format_for(path)
    if fmt == "binary" and Path(path).suffix not in (".pb", ".graphdef"):
        fmt = None  # an unusual name: detect rather than insist
    return parse_graphdef(data, _display(path), fmt, None if path == STDIO else Path(path).name)


def serialize_graphdef(graph_def: GraphDef, text: bool) -> bytes:
    if text:
        return text_format.MessageToString(graph_def).encode()
    return graph_def.SerializeToString(deterministic=True)


def save_graphdef(graph_def: GraphDef, path: str, *, text: bool | None = None) -> None:
    """Write a GraphDef to `path` (`-`: stdout). Text format when `text` is True, or when it is
    None and the name ends in .pbtxt."""
    if text is None:
        text = path != STDIO and format_for(path) == "text"
    write_atomic(path, serialize_graphdef(graph_def, text))


def write_atomic(path: str, data: bytes) -> None:
    """Write bytes to a file by temp-file-and-rename (or to stdout for `-`)."""
    if path == STDIO:
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return
    target = Path(path)
    directory = target.parent if str(target.parent) else Path(".")
    if not directory.is_dir():
        raise UsageError(f"{path}: directory {directory} does not exist")
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        # mkstemp creates the file 0600; give it the mode a plain open() would (0666 - umask).
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp_name, 0o666 & ~umask)
        os.replace(tmp_name, target)
    except BaseException:
        try:
            os.unlink(tmp_name)
        except OSError:
            pass
        raise
