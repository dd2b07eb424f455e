"""Event files for TensorBoard, written by TensorBoard's own writer.

    log = EventLog("runs/mlp")                 # creates runs/mlp/events.out.tfevents.<time>.<host>...
    log.add_graph(graph_def_bytes)             # the Graphs dashboard
    log.add_summary(fetched_summary, step=1)   # a serialized Summary (a summary op's output)
    log.add_run_metadata(run_metadata, "step1", step=1)
    log.close()                                # or use it as a context manager

The records (TFRecord framing, masked CRC-32C) are written by
`tensorboard.summary.writer.event_file_writer.EventFileWriter`, from the optional `tensorboard`
extra: without it, EventLog raises a UsageError saying how to install it. Events are TensorFlow's
`Event` messages (schemas/event.proto): the first record of a file is its `file_version`
("brain.Event:2"), as TensorFlow's FileWriter writes it.

TensorBoard's writer reaches the file system through `tensorboard.compat.tf`, which imports
TensorFlow when it is installed; dftool never imports TensorFlow, so before loading the writer
this module selects TensorBoard's TensorFlow stub (the `tensorboard.compat.notf` switch
TensorBoard itself provides for running without TensorFlow).
"""
from __future__ import annotations

import sys
import time
import types
from pathlib import Path
from typing import Any

from ..errors import RuntimeFailure, UsageError

_INSTALL_HINT = "install dftool[tensorboard] (or pip install tensorboard)"


def _tensorboard() -> tuple[Any, Any, Any]:
    """(EventFileWriter, TensorBoard's event_pb2, summary_pb2), or UsageError naming the extra."""
    if "tensorboard.compat.notf" not in sys.modules:
        # TensorBoard's switch for the stub TensorFlow API (tensorboard/compat/__init__.py imports
        # this module by name and, when it exists, never imports tensorflow).
        sys.modules["tensorboard.compat.notf"] = types.ModuleType("tensorboard.compat.notf")
    try:
        from tensorboard.compat.proto import event_pb2, summary_pb2
        from tensorboard.summary.writer.event_file_writer import EventFileWriter
    except ImportError as exc:
        raise UsageError(f"writing TensorBoard event files needs the tensorboard package ({exc})",
                         hint=_INSTALL_HINT) from None
    return EventFileWriter, event_pb2, summary_pb2


class EventLog:
    """One event file in `logdir` (created if needed) holding a run's graph, the summaries of
    its steps and the run metadata of traced steps. Every method raises a DftoolError naming the
    file when writing fails; `close()` is idempotent."""

    def __init__(self, logdir: str | Path, *, flush_secs: float = 120, max_queue: int = 10,
                 filename_suffix: str = ""):
        writer_class, self._event_pb2, self._summary_pb2 = _tensorboard()
        self.logdir = str(logdir)
        self._closed = False
        try:
            self._writer = writer_class(self.logdir, max_queue_size=max_queue, flush_secs=flush_secs,
                                        filename_suffix=filename_suffix)
        except OSError as exc:
            raise UsageError(f"cannot write event files to '{self.logdir}': {exc.strerror or exc}") from None

    # --- events ------------------------------------------------------------------------------

    def add_graph(self, graph_def: bytes, step: int | None = None) -> None:
        """The serialized GraphDef, as TensorFlow's FileWriter.add_graph records it."""
        event = self._event_pb2.Event(graph_def=bytes(graph_def))
        self._add(event, step)

    def add_summary(self, summary: bytes, step: int, *, source: str = "summary") -> None:
        """A serialized `Summary` (what a summary op outputs) at global step `step`; `source`
        names where it came from (a tensor) in the error for bytes that are not a Summary."""
        try:
            parsed = self._summary_pb2.Summary.FromString(bytes(summary))
        except Exception:   # protobuf's DecodeError (a different class per implementation)
            raise RuntimeFailure(f"{source}: the value is not a serialized Summary "
                                 f"({len(bytes(summary))} bytes)") from None
        self._add(self._event_pb2.Event(summary=parsed), step)

    def add_run_metadata(self, run_metadata: bytes, tag: str, step: int) -> None:
        """A serialized RunMetadata (step stats of a traced step) under `tag`, shown by the Graphs
        dashboard's per-step view (TensorFlow's FileWriter.add_run_metadata)."""
        tagged = self._event_pb2.TaggedRunMetadata(tag=tag, run_metadata=bytes(run_metadata))
        self._add(self._event_pb2.Event(tagged_run_metadata=tagged), step)

    def flush(self) -> None:
        """Write every event added so far to disk."""
        self._check_open()
        try:
            self._writer.flush()
        except OSError as exc:
            raise RuntimeFailure(f"cannot write event file in '{self.logdir}': {exc}") from None

    def close(self) -> None:
        """Flush and close the file (later calls do nothing)."""
        if self._closed:
            return
        self._closed = True
        try:
            self._writer.close()
        except OSError as exc:
            raise RuntimeFailure(f"cannot write event file in '{self.logdir}': {exc}") from None

    def __enter__(self) -> "EventLog":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    # --- internals ---------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeFailure(f"the event log in '{self.logdir}' is closed")

    def _add(self, event, step: int | None) -> None:
        self._check_open()
        event.wall_time = time.time()
        if step is not None:
            event.step = int(step)
        try:
            self._writer.add_event(event)
        except OSError as exc:
            # The writer thread's failure (a full disk, a removed directory) surfaces here.
            raise RuntimeFailure(f"cannot write event file in '{self.logdir}': {exc}") from None
