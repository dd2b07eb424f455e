"""Finding and reading a SavedModel: saved_model.pb(.pbtxt), its "serve" MetaGraph, its signatures.

A SavedModel is a directory:

    saved_model.pb (or saved_model.pbtxt)   SavedModel proto: MetaGraphDefs, each with tags
    variables/variables.index               tensor bundle index (graphtool.checkpoint)
    variables/variables.data-00000-of-00001
    assets/, fingerprint.pb                 (not needed to run the graph)

A signature maps user-facing keys (`input_1`, `output_0`) to tensors of the MetaGraph's graph.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from google.protobuf import text_format

from .. import dtypes
from ..errors import InvalidGraphError, UsageError
from ..graph_io import read_bounded
from ..proto.meta_graph_pb2 import MetaGraphDef, TensorInfo
from ..proto.saved_model_pb2 import SavedModel

SAVED_MODEL_FILES = ("saved_model.pb", "saved_model.pbtxt")
SERVING_TAG = "serve"
DEFAULT_SIGNATURE = "serving_default"


def find_saved_model(path: str) -> Path | None:
    """The saved_model.pb(.pbtxt) file if `path` is a SavedModel directory or that file itself."""
    if path == "-":
        return None
    candidate = Path(path)
    if candidate.is_dir():
        for name in SAVED_MODEL_FILES:
            if (candidate / name).is_file():
                return candidate / name
        return None
    if candidate.name in SAVED_MODEL_FILES and candidate.is_file():
        return candidate
    return None


def read_saved_model(file: Path) -> SavedModel:
    """Parse saved_model.pb (binary) or saved_model.pbtxt (text); InvalidGraphError naming the file."""
    try:
        with open(file, "rb") as handle:
            data = read_bounded(handle, str(file))  # bounded: saved_model.pb may be a link to /dev/zero
    except OSError as exc:
        raise InvalidGraphError(f"{file}: cannot read ({exc.strerror or exc})") from None
    saved = SavedModel()
    try:
        if file.suffix == ".pbtxt":
            text_format.Parse(data.decode("utf-8"), saved)
        else:
            saved.ParseFromString(data)
    except Exception as exc:
        raise InvalidGraphError(f"{file}: not a valid SavedModel ({' '.join(str(exc).split()) or 'decode error'})") \
            from None
    if not saved.meta_graphs:
        raise InvalidGraphError(f"{file}: the SavedModel holds no MetaGraph",
                                hint="a GraphDef saved under this name? give it another name (e.g. graph.pb)")
    return saved


def serving_meta_graph(saved: SavedModel, source: str) -> MetaGraphDef:
    """The MetaGraph tagged exactly {"serve"}, else the first one whose tags include "serve"."""
    tagged = [m for m in saved.meta_graphs if SERVING_TAG in m.meta_info_def.tags]
    if not tagged:
        found = "; ".join(",".join(m.meta_info_def.tags) or "(no tags)" for m in saved.meta_graphs)
        raise InvalidGraphError(f"{source}: no MetaGraph tagged '{SERVING_TAG}' (tag sets found: {found})")
    exact = [m for m in tagged if set(m.meta_info_def.tags) == {SERVING_TAG}]
    return (exact or tagged)[0]


@dataclass(frozen=True)
class SignatureTensor:
    key: str                     # the signature's name for it: input_1, output_0, ...
    tensor: str                  # the graph tensor 'node:k'
    dtype: str
    shape: list | None           # None: unknown rank; None entries: unknown dims

    def to_json(self) -> dict:
        return {"key": self.key, "tensor": self.tensor, "dtype": self.dtype, "shape": self.shape}


@dataclass(frozen=True)
class Signature:
    key: str
    method: str
    inputs: tuple[SignatureTensor, ...]
    outputs: tuple[SignatureTensor, ...]

    def to_json(self) -> dict:
        return {"name": self.key, "method": self.method, "inputs": [t.to_json() for t in self.inputs],
                "outputs": [t.to_json() for t in self.outputs]}


def signatures(meta_graph: MetaGraphDef, source: str) -> dict[str, Signature]:
    """Every user-facing signature, sorted by name (internal ones such as __saved_model_init_op
    are left out), with inputs and outputs sorted by key."""
    out = {}
    for key in sorted(meta_graph.signature_def):
        if key.startswith("__"):
            continue
        definition = meta_graph.signature_def[key]
        out[key] = Signature(key, definition.method_name,
                             tuple(_tensor(k, definition.inputs[k], source, key) for k in sorted(definition.inputs)),
                             tuple(_tensor(k, definition.outputs[k], source, key) for k in sorted(definition.outputs)))
    return out


def select_signature(meta_graph: MetaGraphDef, name: str, source: str) -> Signature:
    available = signatures(meta_graph, source)
    if name not in available:
        listed = ", ".join(available) or "none"
        raise UsageError(f"--signature {name}: {source} has no such signature (available: {listed})")
    return available[name]


def _tensor(key: str, info: TensorInfo, source: str, signature: str) -> SignatureTensor:
    if info.WhichOneof("encoding") != "name":
        raise InvalidGraphError(f"{source}: signature '{signature}' {key}: {info.WhichOneof('encoding')} "
                                f"tensors (sparse or composite) are not supported")
    shape = None if info.tensor_shape.unknown_rank else \
        [d.size if d.size >= 0 else None for d in info.tensor_shape.dim]
    try:
        dtype = dtypes.from_enum(info.dtype).name
    except InvalidGraphError:
        dtype = f"enum {info.dtype}"
    name = info.name if ":" in info.name else f"{info.name}:0"
    return SignatureTensor(key, name, dtype, shape)
