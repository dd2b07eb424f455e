"""The resource bounds every command works within: how big an input file and a decoded tensor may be.

One home for the numbers, so that the next hostile input of a known kind (an endless stream as a
graph, a 59-byte Const claiming gigabytes, a zip bomb of feeds) is stopped by the same check. Each
bound has a default sane for real models, an environment variable and a command-line option
(`--max-input-bytes`, `--max-tensor-bytes`) that override it; sizes accept K/M/G/T suffixes (powers
of 1024).
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass

from .errors import UsageError

KIB, MIB, GIB, TIB = 1 << 10, 1 << 20, 1 << 30, 1 << 40
_SUFFIXES = {"": 1, "B": 1, "K": KIB, "KB": KIB, "KIB": KIB, "M": MIB, "MB": MIB, "MIB": MIB,
             "G": GIB, "GB": GIB, "GIB": GIB, "T": TIB, "TB": TIB, "TIB": TIB}


@dataclass
class Limits:
    # A serialized protobuf message cannot exceed 2 GiB, so no valid GraphDef (or SavedModel proto)
    # is bigger; beyond this an input is an endless stream or not a graph.
    max_input_bytes: int = 2 * GIB
    # The decoded size of any one tensor built from the graph's own data (a Const whose few stored
    # values are "filled" out to a large shape, a Fill/Tile/Range materialised at load or fold time)
    # and of any one feed array. Real weights are stored in full, so they are also bounded by
    # max_input_bytes; this stops a claim of gigabytes from a handful of bytes.
    max_tensor_bytes: int = 1 * GIB


ENV_VARS = {"max_input_bytes": "DFTOOL_MAX_INPUT_BYTES", "max_tensor_bytes": "DFTOOL_MAX_TENSOR_BYTES"}


def parse_size(text: str, what: str) -> int:
    """'512M', '2G', '1048576' -> bytes; a UsageError naming `what` otherwise."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*", str(text))
    if not match or match.group(2).upper() not in _SUFFIXES:
        raise UsageError(f"{what}: '{text}' is not a size (a number of bytes, optionally with K, M, G or T)")
    value = int(float(match.group(1)) * _SUFFIXES[match.group(2).upper()])
    if value <= 0:
        raise UsageError(f"{what}: '{text}' must be positive")
    return value


def _from_environment() -> Limits:
    limits = Limits()
    for field_name, variable in ENV_VARS.items():
        if os.environ.get(variable):
            setattr(limits, field_name, parse_size(os.environ[variable], variable))
    return limits


_current: Limits | None = None


def current() -> Limits:
    """The bounds in force: defaults, overridden by the environment, then by `configure`."""
    global _current
    if _current is None:
        _current = _from_environment()
    return _current


def configure(**values: int | None) -> Limits:
    """Set bounds for this process (the CLI calls this from its options); None leaves one as is."""
    limits = current()
    for field_name, value in values.items():
        if not hasattr(limits, field_name):
            raise TypeError(f"unknown limit {field_name}")
        if value is not None:
            setattr(limits, field_name, int(value))
    return limits


def reset() -> None:
    """Forget configured values (tests); the next `current()` reads the environment again."""
    global _current
    _current = None


def describe_bytes(count: int) -> str:
    """1536 -> '1.5 KiB': sizes in error messages."""
    value = float(count)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if value < 1024 or unit == "PiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{count} B"
