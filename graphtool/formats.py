"""Recognise the files people hand dftool that are not GraphDefs, so they are refused by name.

identify(data, name) looks at a file's bytes (and, for formats without a signature, its name) and
returns a Foreign (what the file is, and what to do instead) or None when it may well be a
GraphDef. graph_io asks it before parsing, so an ONNX model is called an ONNX model rather than "a
corrupt GraphDef". identify_after_failure(data) holds the checks that are only safe once the bytes
have failed to parse as a GraphDef (a MetaGraphDef shares a GraphDef's leading field numbers).

Protobuf-based formats are told apart by their top-level field numbers and wire types, read with
a schema-less walker: GraphDef's field 1 (node) is a message, never a varint, so a leading varint
field already says "not a GraphDef".
"""
from __future__ import annotations

import re
import struct
import zipfile
from dataclasses import dataclass
from io import BytesIO

from .checkpoint.crc import crc32c, mask
from .checkpoint.table import MAGIC as TABLE_MAGIC

_VARINT, _FIXED64, _LEN, _FIXED32 = 0, 1, 2, 5

_HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"
# A table (SSTable) file as TensorFlow's tensor bundle index uses: the footer ends in this number.
_TABLE_MAGIC = struct.pack("<Q", TABLE_MAGIC)
_CHECKPOINT_DATA = re.compile(r"\.data-\d{5}-of-\d{5}$")
_SAVED_MODEL_HINT = ("pass the SavedModel directory (with variables/) instead, or extract a GraphDef "
                     "from it (e.g. a frozen graph)")
_META_GRAPH_HINT = ("extract its graph_def field (e.g. tf.compat.v1.train.import_meta_graph, then "
                    "freeze and write tf.compat.v1.get_default_graph().as_graph_def())")
_KERAS_HINT = "load it in Keras and save a SavedModel (model.export(DIR)), then pass DIR"
_CHECKPOINT_HINT = ("a checkpoint holds variable values only (`dftool inspect CKPT` lists them); pass the "
                    "SavedModel directory or a frozen GraphDef of the model instead")
# Top-level field names of the text formats of MetaGraphDef and SavedModel.
_META_GRAPH_TEXT_FIELDS = {"meta_info_def", "graph_def", "saver_def", "collection_def",
                           "signature_def", "asset_file_def", "object_graph_def"}
_SAVED_MODEL_TEXT_FIELDS = {"saved_model_schema_version", "meta_graphs"}


@dataclass(frozen=True)
class Foreign:
    """A recognised non-GraphDef format: `what` completes "FILE: ..., not a GraphDef"."""

    kind: str
    what: str
    hint: str | None = None


def identify(data: bytes, name: str | None = None) -> Foreign | None:
    """The foreign format `data` is in, or None when it may be a GraphDef (binary or text).
    `name` is the file name, if any (checkpoint data shards have no signature but their name)."""
    for check in (_hdf5, _zip, _tflite, _table, _tfrecord, _onnx, _saved_model, _fingerprint):
        found = check(data)
        if found is not None:
            return found
    if name and _CHECKPOINT_DATA.search(name):
        return Foreign("checkpoint-data", "a TensorFlow checkpoint data shard", _CHECKPOINT_HINT)
    return None


def identify_after_failure(data: bytes) -> Foreign | None:
    """Checks for bytes that did not parse as a GraphDef (binary or text)."""
    fields = _walk(data)
    if fields is not None and _looks_like_meta_graph(fields):
        return Foreign("meta-graph", "a MetaGraphDef (.meta)", _META_GRAPH_HINT)
    first = _first_text_field(data)
    if first in _SAVED_MODEL_TEXT_FIELDS:
        return Foreign("saved-model", "a SavedModel in text format", _SAVED_MODEL_HINT)
    if first in _META_GRAPH_TEXT_FIELDS:
        return Foreign("meta-graph", "a MetaGraphDef in text format", _META_GRAPH_HINT)
    return None


def looks_like_text(data: bytes) -> bool:
    """True when the first 4 KiB decode as UTF-8 and hold no control characters but whitespace:
    only then is "this might be text format" a useful hint."""
    head = data[:4096]
    for cut in range(4 if len(data) > len(head) else 1):  # a multi-byte character cut at 4 KiB
        try:
            text = head[:len(head) - cut].decode("utf-8")
        except UnicodeDecodeError:
            continue
        return all(ch.isprintable() or ch in "\n\r\t\f\v" for ch in text)
    return False


# --- signatures ---------------------------------------------------------------------------------

def _hdf5(data: bytes) -> Foreign | None:
    # The superblock sits at 0 or after a user block of 512, 1024, 2048, ... bytes.
    offset = 0
    while offset + len(_HDF5_SIGNATURE) <= len(data):
        if data[offset:offset + len(_HDF5_SIGNATURE)] == _HDF5_SIGNATURE:
            return Foreign("keras-h5", "an HDF5 file (a Keras .h5 model?)", _KERAS_HINT)
        offset = 512 if offset == 0 else offset * 2
    return None


def _zip(data: bytes) -> Foreign | None:
    if not data.startswith((b"PK\x03\x04", b"PK\x05\x06")):
        return None
    try:
        names = set(zipfile.ZipFile(BytesIO(data)).namelist())
    except (zipfile.BadZipFile, OSError, ValueError):
        names = set()
    if {"config.json", "metadata.json"} & names:
        return Foreign("keras", "a Keras v3 model archive (.keras)", _KERAS_HINT)
    if any(n.endswith("saved_model.pb") for n in names):
        return Foreign("zip", "a zip archive holding a SavedModel",
                       "unpack it and pass the SavedModel directory")
    return Foreign("zip", "a zip archive", "unpack it and pass the graph file inside")


def _tflite(data: bytes) -> Foreign | None:
    # A flatbuffer starts with the root table offset (4-byte aligned, inside the file), then the
    # 4-byte file identifier. The alignment also rules out a GraphDef, whose first byte is 0x0a.
    if len(data) < 8 or data[4:8] != b"TFL3":
        return None
    (root,) = struct.unpack("<I", data[:4])
    if root % 4 == 0 and 8 <= root < len(data):
        return Foreign("tflite", "a TensorFlow Lite flatbuffer (.tflite)",
                       "dftool reads TensorFlow graphs; use the SavedModel or frozen GraphDef the "
                       ".tflite file was converted from")
    return None


def _table(data: bytes) -> Foreign | None:
    if len(data) >= 48 and data.endswith(_TABLE_MAGIC):
        return Foreign("checkpoint-index", "a TensorFlow checkpoint index (tensor bundle .index)",
                       _CHECKPOINT_HINT)
    return None


def _tfrecord(data: bytes) -> Foreign | None:
    """TFRecord framing: uint64 length, masked CRC-32C of the length, payload, masked CRC."""
    if len(data) < 16:
        return None
    (length,) = struct.unpack("<Q", data[:8])
    (length_crc,) = struct.unpack("<I", data[8:12])
    if length_crc != mask(crc32c(data[:8])) or len(data) < 16 + length:
        return None
    payload = _walk(data[12:12 + length])
    if payload and any(f == 3 and w == _LEN and bytes(v[:12]) == b"brain.Event:" for f, w, v in payload):
        return Foreign("events", "a TensorFlow event file (TensorBoard summaries)",
                       "it holds TensorBoard summaries, not a model: pass the GraphDef or SavedModel "
                       "itself (a graph logged there reads back with "
                       "tf.compat.v1.train.summary_iterator as event.graph_def)")
    return Foreign("tfrecord", "a TFRecord file (records, e.g. for tf.data)", None)


def _starts_with_varint_field_1(data: bytes) -> bool:
    """Field 1 as a varint: never a GraphDef (its field 1 is a message), so the walk is worth it."""
    return data[:1] == b"\x08"


def _onnx(data: bytes) -> Foreign | None:
    """ModelProto: ir_version (1, varint, a small number) and opset_import (8) messages, each an
    OperatorSetIdProto of domain (1, string) and version (2, varint)."""
    if not _starts_with_varint_field_1(data):
        return None
    fields = _walk(data)
    if not fields or not 1 <= fields[0][2] <= 64:
        return None
    opsets = [v for f, w, v in fields if (f, w) == (8, _LEN)]
    if opsets and all(_fields_within(v, {(1, _LEN), (2, _VARINT)}) for v in opsets):
        return Foreign("onnx", "an ONNX model (ModelProto)",
                       "dftool reads TensorFlow graphs: convert the model to TensorFlow (e.g. "
                       "onnx-tf, the reverse of tf2onnx) or export the original TensorFlow graph")
    return None


def _fingerprint(data: bytes) -> Foreign | None:
    """FingerprintDef (a SavedModel's fingerprint.pb): hashes as varints 1-5, version (6), uuid (7)."""
    if not _starts_with_varint_field_1(data):
        return None
    allowed = {(k, _VARINT) for k in range(1, 6)} | {(6, _LEN), (7, _LEN)}
    fields = _walk(data)
    if fields and {(1, _VARINT), (2, _VARINT)} <= {(f, w) for f, w, _ in fields} \
            and _fields_within(data, allowed):
        return Foreign("saved-model-fingerprint", "a SavedModel fingerprint (fingerprint.pb)",
                       _SAVED_MODEL_HINT)
    return None


def _fields_within(data, allowed: set) -> bool:
    fields = _walk(data)
    return fields is not None and all((f, w) in allowed for f, w, _ in fields)


def _saved_model(data: bytes) -> Foreign | None:
    """SavedModel: saved_model_schema_version (1, varint) and meta_graphs (2, MetaGraphDef)."""
    if not _starts_with_varint_field_1(data):
        return None
    fields = _walk(data)
    if not fields or any((f, w) not in ((1, _VARINT), (2, _LEN)) for f, w, _ in fields):
        return None
    metas = [v for f, _, v in fields if f == 2]
    if metas and all((inner := _walk(m)) is not None and _looks_like_meta_graph(inner) for m in metas):
        return Foreign("saved-model", "a SavedModel proto (saved_model.pb)", _SAVED_MODEL_HINT)
    return None


def _looks_like_meta_graph(fields) -> bool:
    """MetaGraphDef: only message fields 1..7, one graph_def (2), and one meta_info_def (1) whose
    own fields are MetaInfoDef's (a GraphDef's field 1 is a NodeDef, whose field 2 is an op name,
    while MetaInfoDef's field 2 is an OpList message)."""
    if any(w != _LEN or not 1 <= f <= 7 for f, w, _ in fields):
        return False
    counts = [sum(1 for f, _, _ in fields if f == k) for k in (1, 2)]
    if counts[1] != 1 or counts[0] > 1:
        return False
    if counts[0] == 0:
        return any(f in (3, 4, 5, 6, 7) for f, _, _ in fields)
    info = _walk(next(v for f, _, v in fields if f == 1))
    if info is None:
        return False
    # stripped_op_list (2) must be a message of OpDefs; tags (4) and versions (5, 6) are strings.
    for f, w, v in info:
        if f == 2 and (_walk(v) is None or any(g != 1 for g, _, _ in _walk(v))):
            return False
        if f == 7 and w != _VARINT:
            return False
    return True


def _first_text_field(data: bytes) -> str | None:
    try:
        text = data[:4096].decode("utf-8", errors="ignore")
    except Exception:
        return None
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        match = re.match(r"([A-Za-z_]\w*)\s*[:{<]", line)
        return match.group(1) if match else None
    return None


# --- wire format ----------------------------------------------------------------------------------

def _walk(data: bytes | memoryview, limit: int = 4096):
    """The top-level (field number, wire type, value) of a protobuf message, or None when the bytes
    are not a well-formed message. Values of length-delimited fields are memoryviews, others ints.
    Only the first `limit` fields are read: the shape of a file shows in its first fields."""
    data = memoryview(data)   # values are slices without copies (a GraphDef may be large)
    fields: list[tuple[int, int, int | memoryview]] = []
    value: int | memoryview
    pos, end = 0, len(data)
    try:
        while pos < end and len(fields) < limit:
            key, pos = _varint(data, pos)
            number, wire = key >> 3, key & 7
            if number == 0:
                return None
            if wire == _VARINT:
                value, pos = _varint(data, pos)
            elif wire == _FIXED64:
                value, pos = int.from_bytes(data[pos:pos + 8], "little"), pos + 8
            elif wire == _FIXED32:
                value, pos = int.from_bytes(data[pos:pos + 4], "little"), pos + 4
            elif wire == _LEN:
                size, pos = _varint(data, pos)
                value, pos = data[pos:pos + size], pos + size
            else:  # groups (3, 4) are not used by any format recognised here; 6, 7 do not exist
                return None
            if pos > end:
                return None
            fields.append((number, wire, value))
    except IndexError:
        return None
    return fields


def _varint(data: bytes | memoryview, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise IndexError("varint too long")

