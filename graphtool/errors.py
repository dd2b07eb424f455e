"""The exceptions dftool raises on purpose, each tied to an exit code of the command contract.

A command catches DftoolError at the top and prints `error: <message>` (plus the hint) as one line;
anything else is a bug and shows a traceback only under --debug.
"""
from __future__ import annotations


class DftoolError(Exception):
    """An error the user can act on. `exit_code` follows docs/commands.md."""

    exit_code = 1

    def __init__(self, message: str, *, hint: str | None = None):
        super().__init__(message)
        self.hint = hint

    def one_line(self) -> str:
        text = " ".join(str(self).split())
        if self.hint:
            text += f" (hint: {' '.join(self.hint.split())})"
        return text


class RuntimeFailure(DftoolError):
    """The computation itself failed, or a verification did not hold (exit 1)."""

    exit_code = 1


class UsageError(DftoolError):
    """A bad flag, or a node/feed/fetch/pass name that does not exist (exit 2)."""

    exit_code = 2


class InvalidGraphError(DftoolError):
    """An unreadable or unparseable input file, or a graph that fails validation (exit 3)."""

    exit_code = 3


class DeviceUnavailable(DftoolError):
    """A requested device or backend is not present (exit 4)."""

    exit_code = 4


class TaskLost(RuntimeFailure):
    """A cluster task's process or node went away during a step (exit 1). `task` is its short
    name (worker:1); a multi-step run with --max-restarts restarts from the latest checkpoint."""

    def __init__(self, message: str, *, task: str, hint: str | None = None):
        super().__init__(message, hint=hint)
        self.task = task


class OutOfRangeError(RuntimeFailure):
    """TensorFlow's OutOfRange: a dequeue from a closed queue holding too few elements, a reader
    past its last file (exit 1 for a single run; a multi-step run ends cleanly on it)."""


class CancelledError(RuntimeFailure):
    """TensorFlow's Cancelled: a waiting operation was cancelled (its queue was closed with
    cancel_pending_enqueues, its step failed or timed out, or its session was closed)."""
