"""The JSON reports of the commands (`--json` on stdout, `--report FILE`): one stamp, one shape.

Every report begins with `schema` ("dftool.<command>/<n>") and `command`; the graph a command
reads is always `graph` (also for the commands that write OUT, which is `output`); counts are
integers. `docs/schemas/<command>.schema.json` describes each report field by field and
`tests/test_report_schemas.py` validates reports the CLI really writes against those files.

Versions: fields may be added within a version; a field that changes meaning or type, or goes
away, bumps <n> (and its schema file). Version 1 of every report was the form before issue 16
(a `schema_version: 1` field, the input named `input`); the reports are at version 2 since.
"""
from __future__ import annotations

import json
import math
import sys

import numpy as np

from graphtool import graph_io

REPORT_VERSIONS = {
    "inspect": 2,
    "run": 2,
    "optimize": 2,
    "prune": 2,
    "place": 2,
    "partition": 2,
    "grad": 2,
    "profile": 2,
    "cluster": 2,
    "replicate": 1,
    "compare": 1,
    "transform": 1,
    # `dftool inspect CKPT`: the report of the inspect command on a checkpoint, not on a graph.
    "inspect_checkpoint": 1,
    # `dftool inspect GRAPH --nodes` (--op, --match): the node listing.
    "inspect_nodes": 1,
}

# `run --json` includes the values of outputs with at most this many elements.
SMALL_OUTPUT_ELEMENTS = 64


def schema_id(command: str) -> str:
    """'run' -> 'dftool.run/2'."""
    return f"dftool.{command}/{REPORT_VERSIONS[command]}"


def stamped(report: dict, kind: str | None = None) -> dict:
    """The report with `schema` and `command` first (a `schema` the library put in is replaced:
    the command line owns the version). `kind` names the report when a command writes more than
    one kind (inspect on a checkpoint: "inspect_checkpoint"); by default it is the command."""
    command = report["command"]
    body = {key: value for key, value in report.items() if key not in ("schema", "command")}
    return {"schema": schema_id(kind or command), "command": command, **body}


def emit_report(report: dict, *, as_json: bool, report_path: str | None, kind: str | None = None) -> None:
    """Write the stamped report to --report FILE (atomically) and/or stdout (--json)."""
    text = json.dumps(stamped(report, kind), indent=2, default=_json_default) + "\n"
    if report_path:
        graph_io.write_atomic(report_path, text.encode())
    if as_json:
        sys.stdout.write(text)
        sys.stdout.flush()


def _json_default(value):
    if hasattr(value, "tolist"):
        return value.tolist()
    return str(value)


# --- tensor values in reports -------------------------------------------------------------------

def _json_float(number: float):
    """A float as JSON has it; NaN and infinities as the strings protobuf's JSON mapping uses
    (JSON itself has no spelling for them)."""
    if math.isnan(number):
        return "NaN"
    if math.isinf(number):
        return "Infinity" if number > 0 else "-Infinity"
    return number


def _element(item):
    if isinstance(item, (bytes, np.bytes_)):
        return bytes(item).decode("utf-8", "backslashreplace")
    if isinstance(item, str):
        return item
    if isinstance(item, complex):
        return [_json_float(item.real), _json_float(item.imag)]
    if isinstance(item, float):
        return _json_float(item)
    return item


def _nested(items):
    if isinstance(items, list):
        return [_nested(item) for item in items]
    return _element(items)


def tensor_value(value: np.ndarray, limit: int = SMALL_OUTPUT_ELEMENTS):
    """The value of a small tensor as nested JSON lists (a scalar as itself); None when it has
    more than `limit` elements or no JSON form (a variant, such as a TensorList handle).

    Floats are JSON numbers, narrower floats (float16, bfloat16, float32) written with the
    fewest digits that give the same value back in their type (0.1, not 0.10000000149011612);
    NaN and infinities are strings, complex numbers [real, imag] pairs, strings UTF-8 text
    (undecodable bytes as backslash escapes), bools true/false."""
    if value.size > limit:
        return None
    if value.dtype == object:
        if any(not isinstance(item, (bytes, str)) for item in value.ravel()):
            return None
    elif value.dtype.kind == "V" or (value.dtype.kind == "f" and value.dtype.itemsize < 8):
        # numpy's str of a narrow float is its shortest round-tripping spelling.
        try:
            shortest = [float(str(item)) for item in value.ravel()]
        except (TypeError, ValueError):       # quantized records and the like: no JSON form
            return None
        value = np.array(shortest, dtype=np.float64).reshape(value.shape)
    elif value.dtype.kind not in "biufcSU":
        return None
    return _nested(value.tolist())
