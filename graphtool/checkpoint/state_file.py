"""The `checkpoint` state file of a checkpoint directory, as tf.train.Saver keeps it.

A CheckpointState in protobuf text format:

    model_checkpoint_path: "model.ckpt-30"
    all_model_checkpoint_paths: "model.ckpt-10"
    all_model_checkpoint_paths: "model.ckpt-20"
    all_model_checkpoint_paths: "model.ckpt-30"

The newest checkpoint is model_checkpoint_path (also last in all_model_checkpoint_paths, oldest
first). Paths inside the directory are written relative to it (TF's save_relative_paths; TF also
makes them relative whenever the directory itself is given relative), others as given; a reader
joins relative paths to the directory. TF's CheckpointManager also writes timestamps
(all_model_checkpoint_timestamps, last_preserved_timestamp): they are read and kept.

`record_checkpoint(dir, prefix, keep=N)` is what a Saver does after each save: the new prefix
becomes the latest, and with keep=N (max_to_keep) the files of all but the newest N prefixes
are deleted (`.index`, `.data-*-of-*`, `.meta`).
"""
from __future__ import annotations

import glob
import os
from dataclasses import dataclass, field

from .bundle import index_filename
from .errors import CheckpointError
from .writer import write_atomically

STATE_FILENAME = "checkpoint"
_STRING_FIELDS = ("model_checkpoint_path", "all_model_checkpoint_paths")
_FLOAT_FIELDS = ("all_model_checkpoint_timestamps", "last_preserved_timestamp")


@dataclass
class CheckpointState:
    model_checkpoint_path: str = ""
    all_model_checkpoint_paths: list[str] = field(default_factory=list)
    all_model_checkpoint_timestamps: list[float] = field(default_factory=list)
    last_preserved_timestamp: float | None = None


# --- text format ----------------------------------------------------------------------------------

def _escape(text: str) -> str:
    """Protobuf text-format string escaping (C escapes; other bytes outside printable ASCII in octal)."""
    out = []
    for byte in text.encode("utf-8", "surrogateescape"):
        char = chr(byte)
        if char in "\"'\\":
            out.append("\\" + char)
        elif char == "\n":
            out.append("\\n")
        elif char == "\r":
            out.append("\\r")
        elif char == "\t":
            out.append("\\t")
        elif 0x20 <= byte < 0x7F:
            out.append(char)
        else:
            out.append(f"\\{byte:03o}")
    return "".join(out)


_SIMPLE_ESCAPES = {"n": 10, "r": 13, "t": 9, "\"": 34, "'": 39, "\\": 92, "a": 7, "b": 8, "f": 12, "v": 11, "?": 63}


def _unescape(body: str, where: str) -> str:
    out = bytearray()
    i = 0
    while i < len(body):
        char = body[i]
        if char != "\\":
            out += char.encode("utf-8")
            i += 1
            continue
        if i + 1 >= len(body):
            raise CheckpointError(f"{where}: bad escape at the end of a string")
        nxt = body[i + 1]
        if nxt in _SIMPLE_ESCAPES:
            out.append(_SIMPLE_ESCAPES[nxt])
            i += 2
        elif nxt in "01234567":
            j = i + 1
            while j < len(body) and j < i + 4 and body[j] in "01234567":
                j += 1
            out.append(int(body[i + 1:j], 8) & 0xFF)
            i = j
        elif nxt in "xX":
            j = i + 2
            while j < len(body) and j < i + 4 and body[j] in "0123456789abcdefABCDEF":
                j += 1
            if j == i + 2:
                raise CheckpointError(f"{where}: bad \\x escape in a string")
            out.append(int(body[i + 2:j], 16))
            i = j
        else:
            raise CheckpointError(f"{where}: unknown escape '\\{nxt}' in a string")
    return out.decode("utf-8", "surrogateescape")


def format_state(state: CheckpointState) -> str:
    lines = [f'model_checkpoint_path: "{_escape(state.model_checkpoint_path)}"']
    lines += [f'all_model_checkpoint_paths: "{_escape(p)}"' for p in state.all_model_checkpoint_paths]
    lines += [f"all_model_checkpoint_timestamps: {_float(t)}" for t in state.all_model_checkpoint_timestamps]
    if state.last_preserved_timestamp is not None:
        lines.append(f"last_preserved_timestamp: {_float(state.last_preserved_timestamp)}")
    return "\n".join(lines) + "\n"


def _float(value: float) -> str:
    return repr(float(value))


def parse_state(text: str, source: str) -> CheckpointState:
    """A CheckpointState from its text format; CheckpointError naming `source` when malformed."""
    state = CheckpointState()
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        where = f"{source}:{number}"
        name, colon, value = line.partition(":")
        name, value = name.strip(), value.strip()
        if not colon or not value:
            raise CheckpointError(f"{where}: not a checkpoint state line: {raw.strip()!r}")
        if name in _STRING_FIELDS:
            if len(value) < 2 or value[0] not in "\"'" or value[-1] != value[0]:
                raise CheckpointError(f"{where}: {name} must be a quoted string")
            text_value = _unescape(value[1:-1], where)
            if name == "model_checkpoint_path":
                state.model_checkpoint_path = text_value
            else:
                state.all_model_checkpoint_paths.append(text_value)
        elif name in _FLOAT_FIELDS:
            try:
                number_value = float(value)
            except ValueError:
                raise CheckpointError(f"{where}: {name} must be a number, got {value!r}") from None
            if name == "last_preserved_timestamp":
                state.last_preserved_timestamp = number_value
            else:
                state.all_model_checkpoint_timestamps.append(number_value)
        else:
            raise CheckpointError(f"{where}: unknown field '{name}' (not a CheckpointState)")
    return state


# --- the directory's state --------------------------------------------------------------------------

def state_path(directory: str | os.PathLike) -> str:
    return os.path.join(os.fspath(directory), STATE_FILENAME)


def read_state(directory: str | os.PathLike) -> CheckpointState | None:
    """The directory's CheckpointState with every path made usable from here (relative ones joined
    to the directory), or None when it has no state file."""
    path = state_path(directory)
    try:
        with open(path, "rb") as handle:
            data = handle.read(1 << 20)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise CheckpointError(f"{path}: cannot read ({exc.strerror or exc})") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise CheckpointError(f"{path}: not a text file (not a checkpoint state file)") from None
    state = parse_state(text, path)
    if not state.model_checkpoint_path:
        raise CheckpointError(f"{path}: invalid checkpoint state: no model_checkpoint_path")
    state.model_checkpoint_path = _resolve(directory, state.model_checkpoint_path)
    state.all_model_checkpoint_paths = [_resolve(directory, p) for p in state.all_model_checkpoint_paths]
    return state


def _resolve(directory, path: str) -> str:
    return path if os.path.isabs(path) else os.path.join(os.fspath(directory), path)


def _relative(directory, path: str, relative: bool) -> str:
    directory = os.fspath(directory)
    if relative:
        inside = os.path.abspath(path)
        base = os.path.abspath(directory)
        if os.path.dirname(inside) == base or inside.startswith(base + os.sep):
            return os.path.relpath(inside, base)
        return path
    if not os.path.isabs(directory) and not os.path.isabs(path):     # TF's rule for relative dirs
        return os.path.relpath(path, directory)
    return path


def write_state(directory: str | os.PathLike, model_checkpoint_path: str, all_paths: list[str] | None = None,
                *, relative: bool = True, timestamps: list[float] | None = None,
                last_preserved_timestamp: float | None = None) -> None:
    """Write the state file atomically; the latest path ends the list, as TF keeps it."""
    paths = list(all_paths or [])
    if not paths or paths[-1] != model_checkpoint_path:
        paths.append(model_checkpoint_path)
    state = CheckpointState(_relative(directory, model_checkpoint_path, relative),
                            [_relative(directory, p, relative) for p in paths],
                            list(timestamps or []), last_preserved_timestamp)
    write_atomically(state_path(directory), format_state(state).encode("utf-8"))


def checkpoint_exists(prefix: str) -> bool:
    """A V2 bundle (PREFIX.index) or a V1 checkpoint file (PREFIX itself)."""
    return os.path.isfile(index_filename(prefix)) or os.path.isfile(prefix)


def latest_checkpoint(directory: str | os.PathLike) -> str | None:
    """The newest checkpoint prefix of the directory (tf.train.latest_checkpoint), or None when
    it has no state file or the checkpoint it names is gone."""
    state = read_state(directory)
    if state is None:
        return None
    prefix = state.model_checkpoint_path
    return prefix if checkpoint_exists(prefix) else None


def checkpoint_files(prefix: str) -> list[str]:
    """The files of one checkpoint that exist: index, data shards, meta graph (and a V1 file)."""
    candidates = [index_filename(prefix), f"{prefix}.meta"]
    candidates += sorted(glob.glob(f"{glob.escape(prefix)}.data-?????-of-?????"))
    if os.path.isfile(prefix):
        candidates.append(prefix)
    return [path for path in candidates if os.path.isfile(path)]


def delete_checkpoint(prefix: str) -> list[str]:
    """Delete one checkpoint's files (the index first, so it is never half there); returns them."""
    deleted = []
    for path in checkpoint_files(prefix):
        try:
            os.remove(path)
            deleted.append(path)
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise CheckpointError(f"{path}: cannot delete an old checkpoint file ({exc.strerror or exc})") from None
    return deleted


def record_checkpoint(directory: str | os.PathLike, prefix: str, keep: int | None = 5,
                      *, relative: bool = True) -> list[str]:
    """After saving `prefix`: make it the directory's latest checkpoint and, with keep=N > 0,
    delete the files of the older prefixes beyond the newest N (tf.train.Saver's max_to_keep;
    keep 0 or None deletes nothing and lists only the latest). Returns the prefixes deleted."""
    state = read_state(directory)
    known = state.all_model_checkpoint_paths if state is not None else []
    target = os.path.abspath(prefix)
    paths = [p for p in known if os.path.abspath(p) != target] + [prefix]
    deleted: list[str] = []
    if keep:
        while len(paths) > keep:
            old = paths.pop(0)
            delete_checkpoint(old)
            deleted.append(old)
    else:
        paths = [prefix]
    write_state(directory, prefix, paths, relative=relative)
    return deleted


__all__ = ["CheckpointState", "STATE_FILENAME", "checkpoint_exists", "checkpoint_files", "delete_checkpoint",
           "format_state", "latest_checkpoint", "parse_state", "read_state", "record_checkpoint", "write_state"]
