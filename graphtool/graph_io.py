"""The one door in and out: read and write GraphDef files (binary .pb, text .pbtxt, `-` for stdio).

On stdin the format is detected: binary first, then text. Files in another format (ONNX, Keras,
TFLite, event files, SavedModel/MetaGraphDef protos, checkpoints) are recognised by
graphtool.formats and refused by name with a hint. Inputs are read in chunks up to the configured
bound (graphtool.limits). Writes are atomic: the bytes go to a temporary file next to the target,
which is renamed over it only when complete, so a failed command never leaves a half-written or
clobbered output; devices, FIFOs and stdout are written through (see write_atomic).
"""
from __future__ import annotations

import errno
import os
import sys
from pathlib import Path
from stat import S_IMODE, S_ISBLK, S_ISCHR, S_ISDIR, S_ISFIFO, S_ISREG, S_ISSOCK
from typing import BinaryIO

from google.protobuf import text_format
from google.protobuf.message import DecodeError

from . import formats, limits
from .errors import InvalidGraphError, RuntimeFailure, UsageError
from .proto.graph_pb2 import GraphDef

STDIO = "-"
TEXT_SUFFIXES = (".pbtxt", ".txt", ".prototxt")


def _display(path: str) -> str:
    return "<stdin>" if path == STDIO else str(path)


def read_bytes(path: str) -> bytes:
    """Read a whole input file (or stdin), turning OS errors into one-line InvalidGraphErrors.
    At most limits.current().max_input_bytes are read: an endless stream (`/dev/zero`, a pipe
    that never closes with data) stops with an error instead of filling memory."""
    if path == STDIO:
        return read_bounded(sys.stdin.buffer, "<stdin>")
    p = Path(path)
    try:
        if p.is_dir():
            raise InvalidGraphError(f"{path}: is a directory, not a graph file")
        with open(p, "rb") as handle:
            return read_bounded(handle, str(path))
    except FileNotFoundError:
        raise InvalidGraphError(f"{path}: no such file") from None
    except PermissionError:
        raise InvalidGraphError(f"{path}: permission denied") from None
    except OSError as exc:
        raise InvalidGraphError(f"{path}: cannot read ({exc.strerror or exc})") from None


def read_bounded(handle: BinaryIO, source: str, limit: int | None = None) -> bytes:
    """All bytes of an open binary stream, read in chunks; InvalidGraphError (exit 3) naming
    `source` as soon as more than `limit` (default: the configured max_input_bytes) arrive."""
    limit = limits.current().max_input_bytes if limit is None else limit
    try:  # a regular file says its size: read it in one go (one copy, not chunks joined)
        stat = os.fstat(handle.fileno())
        size_hint = stat.st_size if S_ISREG(stat.st_mode) else 0
    except (AttributeError, OSError, ValueError):
        size_hint = 0
    if size_hint > limit:
        raise _too_big(source, limit, size_hint)
    chunks: list[bytes] = []
    total = 0
    while True:
        # Ask for one byte more than the bound allows: receiving it is the proof of "too big".
        chunk = handle.read(min(max(size_hint + 1 - total, _CHUNK), limit + 1 - total))
        if not chunk:
            break
        if not chunks and not size_hint and len(chunk) >= _ZERO_PREFIX and not chunk[:_ZERO_PREFIX].strip(b"\0"):
            # No format dftool reads (protobuf: tag 0 is invalid; text; a zip; a record file
            # with its length and checksum) starts with kilobytes of zero bytes: a stream that
            # does is /dev/zero or a device, and reading it up to the bound would take gigabytes.
            raise InvalidGraphError(f"{source}: the stream starts with {_ZERO_PREFIX} zero bytes, not with data "
                                    f"dftool reads (/dev/zero or a device?)")
        chunks.append(chunk)
        total += len(chunk)
        if total > limit:
            chunks.clear()
            raise _too_big(source, limit)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


_ZERO_PREFIX = 4096


_CHUNK = 1 << 20


def _too_big(source: str, limit: int, size: int | None = None) -> InvalidGraphError:
    bound = limits.describe_bytes(limit)
    message = (f"{source}: {limits.describe_bytes(size)}, more than the input bound of {bound}"
               if size is not None else
               f"{source}: more than {bound} arrived (the input bound), stopped reading: an endless "
               f"stream such as /dev/zero, or not a graph?")
    return InvalidGraphError(message, hint="raise the bound with --max-input-bytes SIZE or "
                                           "DFTOOL_MAX_INPUT_BYTES")


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
    fmt = format_for(path)
    if fmt == "binary" and Path(path).suffix not in (".pb", ".graphdef"):
        fmt = None  # an unusual name: detect rather than insist
    try:
        data = read_bytes(path)
        return parse_graphdef(data, _display(path), fmt, None if path == STDIO else Path(path).name)
    except MemoryError:
        raise out_of_memory_loading(_display(path)) from None


def out_of_memory_loading(source: str) -> InvalidGraphError:
    """The error for a MemoryError while reading or building an input graph (exit 3)."""
    return InvalidGraphError(f"out of memory while loading {source}",
                             hint="a graph too big for this machine, or one whose tensors claim more than "
                                  "it holds; see --max-input-bytes and --max-tensor-bytes")


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


# Temporary files of writes in progress, so that a signal handler (cli.main) can remove them before
# the process exits; named `.OUT.dftool-<pid>.tmp` so that a later run can tell its own stale ones
# (left by SIGKILL or a crash) from anything else and remove those whose process is gone.
_pending_temps: set[str] = set()
_TEMP_MARK = ".dftool-"
_TEMP_SUFFIX = ".tmp"
# Kernel interfaces, not file systems: a graph written there is a mistake (or an attack).
_KERNEL_TREES = ("/proc", "/sys")


def discard_temp_files() -> None:
    """Remove the temporary files of writes in progress (called on SIGINT/SIGTERM/SIGHUP)."""
    for name in list(_pending_temps):
        try:
            os.unlink(name)
        except OSError:
            pass
    _pending_temps.clear()


def write_atomic(path: str, data: bytes) -> None:
    """Write bytes to OUT so that a failed or interrupted command leaves an existing OUT untouched.

    A regular file (or a new name) gets a temporary file beside it that is renamed over it when
    complete, keeping the old file's mode; a symlink's target is replaced (the link stays). What
    is not a file is written through: `-` (stdout), character and block devices (/dev/null stays
    a device), FIFOs. A directory, a read-only file, an unwritable or missing directory, a path
    under /proc or /sys, a socket: UsageError (exit 2). A full disk or I/O error: RuntimeFailure
    (exit 1). A reader that closed stdout: BrokenPipeError (cli.main reports it)."""
    if path == STDIO:
        sys.stdout.flush()  # what was printed before comes first
        try:
            fd = sys.stdout.fileno()
        except (AttributeError, OSError, ValueError):  # an in-memory stdout (tests)
            sys.stdout.buffer.write(data)
            sys.stdout.buffer.flush()
            return
        _write_all(fd, data)
        return
    where = _output_target(path)
    if where is None:
        _write_through(path, data)
        return
    _replace(path, *where, data)


def is_stream(path: str) -> bool:
    """Whether OUT is written through rather than replaced: stdout, a device, a FIFO."""
    if path == STDIO:
        return True
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return S_ISCHR(mode) or S_ISBLK(mode) or S_ISFIFO(mode)


def check_writable(path: str) -> None:
    """The checks write_atomic makes before writing, made up front (a command calls this before
    minutes of work, so that an unwritable OUT fails at once): UsageError (exit 2) naming `path`."""
    if path != STDIO:
        _output_target(path)


def _output_target(path: str) -> "tuple[str, str, os.stat_result | None] | None":
    """(target, directory, status) for a file to replace, or None for a path written through (a
    device, a FIFO); UsageError for a path that cannot take an output file."""
    try:
        status = os.stat(path)  # follows links: /dev/stdout, a link to a FIFO
    except FileNotFoundError:
        status = None
    except OSError as exc:   # e.g. a name too long, a path through a file
        raise UsageError(f"{path}: cannot write ({exc.strerror or exc})") from None
    if status is not None and not S_ISREG(status.st_mode):
        if S_ISDIR(status.st_mode):
            raise UsageError(f"{path}: is a directory, not an output file")
        if S_ISCHR(status.st_mode) or S_ISBLK(status.st_mode) or S_ISFIFO(status.st_mode):
            return None
        kind = "a socket" if S_ISSOCK(status.st_mode) else "not a regular file"
        raise UsageError(f"{path}: is {kind}, not an output file")
    target = os.path.realpath(path)
    if _kernel_tree(target):
        raise UsageError(f"{path}: is under {_kernel_tree(target)}, a kernel interface, not a place for "
                         f"output files")
    directory = os.path.dirname(target) or "."
    if not os.path.isdir(directory):
        raise UsageError(f"{path}: directory {os.path.dirname(path) or directory} does not exist")
    if status is not None and (not os.access(target, os.W_OK) or not status.st_mode & 0o222):
        # Renaming over it would work (the directory is writable), but read-only says "keep".
        raise UsageError(f"{path}: is read-only (no write permission); not replaced")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise UsageError(f"{path}: directory {directory} is not writable")
    return target, directory, status


def ensure_directory(path: str, what: str) -> None:
    """Create an output directory (and its parents) for OPTION `what`; UsageError (exit 2) when it
    cannot be: a file in the way, no permission, under /proc or /sys."""
    tree = _kernel_tree(os.path.realpath(path))
    if tree:
        raise UsageError(f"{what} '{path}': is under {tree}, a kernel interface, not a place for output files")
    if os.path.exists(path) and not os.path.isdir(path):
        raise UsageError(f"{what} '{path}' exists and is not a directory")
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"{what} '{path}': cannot create the directory ({exc.strerror or exc})") from None


def _kernel_tree(real_path: str) -> str | None:
    return next((tree for tree in _KERNEL_TREES if real_path == tree or real_path.startswith(tree + "/")), None)


def _write_through(path: str, data: bytes) -> None:
    """A device or FIFO: open it for writing (no create, no truncate) and write everything."""
    try:
        fd = os.open(path, os.O_WRONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise UsageError(f"{path}: cannot open for writing ({exc.strerror or exc})") from None
    try:
        _write_all(fd, data)
    except BrokenPipeError:
        raise RuntimeFailure(f"{path}: the reader closed the pipe before the output was written "
                             f"(broken pipe)") from None
    except OSError as exc:
        raise RuntimeFailure(f"{path}: cannot write ({exc.strerror or exc})") from None
    finally:
        os.close(fd)


def _replace(path: str, target: str, directory: str, status, data: bytes) -> None:
    name = os.path.basename(target)
    _remove_stale_temps(directory, name)
    tmp_name = os.path.join(directory, f".{name}{_TEMP_MARK}{os.getpid()}{_TEMP_SUFFIX}")
    # Registered before it exists, so a signal arriving at any point finds it.
    _pending_temps.add(tmp_name)
    try:
        try:
            fd = _create_exclusive(tmp_name)
        except OSError as exc:
            if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS, errno.ENAMETOOLONG):
                raise UsageError(f"{path}: cannot create a file in {directory} "
                                 f"({exc.strerror or exc})") from None
            raise
        try:
            _write_all(fd, data)
            os.fsync(fd)
            if status is not None:
                # Keep the replaced file's mode (and owner, where allowed: root replacing a user's file).
                os.fchmod(fd, S_IMODE(status.st_mode))
                if hasattr(os, "fchown") and (status.st_uid, status.st_gid) != (os.geteuid(), os.getegid()):
                    try:
                        os.fchown(fd, status.st_uid, status.st_gid)
                    except OSError:
                        pass
            else:  # the mode a plain open() would give (0666 - umask)
                umask = os.umask(0)
                os.umask(umask)
                os.fchmod(fd, 0o666 & ~umask)
        finally:
            os.close(fd)
        os.replace(tmp_name, target)
    except BaseException as exc:  # also KeyboardInterrupt/SystemExit: never leave the temp file
        try:
            os.unlink(tmp_name)
        except OSError:
            pass
        if isinstance(exc, OSError) and not isinstance(exc, BrokenPipeError):
            if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):  # e.g. a sticky directory
                raise UsageError(f"{path}: cannot replace it ({exc.strerror or exc}); "
                                 f"{'the existing file is untouched' if status else 'nothing written'}") from None
            full = exc.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC), errno.EFBIG)
            raise RuntimeFailure(f"{path}: cannot write ({exc.strerror or exc}); "
                                 f"{'the existing file is untouched' if status else 'nothing written'}",
                                 hint="free some space" if full else None) from None
        raise
    finally:
        _pending_temps.discard(tmp_name)


def _create_exclusive(tmp_name: str) -> int:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    try:
        return os.open(tmp_name, flags, 0o600)
    except FileExistsError:
        # Our own name: left by an earlier process that had this pid (pids are reused).
        os.unlink(tmp_name)
        return os.open(tmp_name, flags, 0o600)


def _remove_stale_temps(directory: str, name: str) -> None:
    """Remove `.NAME.dftool-<pid>.tmp` files whose process no longer exists (SIGKILL, a crash)."""
    prefix = f".{name}{_TEMP_MARK}"
    try:
        entries = [e for e in os.listdir(directory) if e.startswith(prefix) and e.endswith(_TEMP_SUFFIX)]
    except OSError:
        return
    for entry in entries:
        pid_text = entry[len(prefix):-len(_TEMP_SUFFIX)]
        if not pid_text.isdigit() or int(pid_text) == os.getpid() or _process_alive(int(pid_text)):
            continue
        try:
            os.unlink(os.path.join(directory, entry))
        except OSError:
            pass


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return True  # exists under another user (or cannot tell): not ours to remove
    return True


def _write_all(fd: int, data: bytes) -> None:
    """os.write until every byte is out: a pipe accepts part of a large write, and Python's
    buffered stdout can drop the rest silently when the reader goes away; os.write raises
    BrokenPipeError instead."""
    view = memoryview(data).cast("B")
    written = 0
    while written < len(view):
        written += os.write(fd, view[written:written + _CHUNK])
