"""Running a graph's enqueue ops from threads, as TensorFlow's QueueRunner does outside the graph.

    runner = QueueRunner(session, ["batch/fifo_queue_enqueue"], threads=2)
    runner.start()
    ...  session.run(...) steps that dequeue ...
    runner.stop()     # always prompt: closes the queue, cancelling blocked enqueues
    runner.join()     # re-raises the first error a thread hit (other than the end of input)

Each thread runs its enqueue op through `session.run(targets=[op])` in a loop. A thread whose
enqueue raises OutOfRangeError (its input ran out: a reader's filename queue is closed and empty,
a dequeue upstream) ends; when the LAST thread ends that way the runner closes the queue, so the
consumers drain what is left and then get OutOfRange themselves (as TF's QueueRunner runs its
close op). Any other error is kept (join() re-raises it) and the thread ends. stop() asks the
threads to end and closes the queue with cancel_pending_enqueues (TF's cancel op), which fails
enqueues waiting for room (their CancelledError, and any error after the stop, is not an error
of the run).

The queue is the one the enqueue op's handle input comes from. It is closed through the graph's
own QueueCloseV2 node for it when the graph has one (`close_op` / `cancel_op` name them
explicitly), else directly in the session's resources.
"""
from __future__ import annotations

import threading

from ..errors import CancelledError, OutOfRangeError, UsageError
from ..ir import Graph
from ..ops.data_flow import queue_node_of
from .kernels.queue import Queue

ENQUEUE_OPS = ("QueueEnqueueV2", "QueueEnqueueManyV2", "QueueEnqueue", "QueueEnqueueMany")
CLOSE_OPS = ("QueueCloseV2", "QueueClose")
# How long stop() waits for each thread before giving up on it (it is a daemon thread).
STOP_WAIT_S = 5.0


def parse_queue_runner_spec(spec: str) -> tuple[str, int]:
    """`OP[:THREADS]` (the --queue-runner flag) -> (op name, thread count, 1 by default)."""
    op, sep, count = spec.partition(":")
    if not op:
        raise UsageError(f"--queue-runner '{spec}': expected OP[:THREADS], e.g. batch/fifo_queue_enqueue:2")
    if not sep:
        return op, 1
    try:
        threads = int(count)
    except ValueError:
        threads = 0
    if threads < 1:
        raise UsageError(f"--queue-runner '{spec}': THREADS must be a positive integer, not '{count}'")
    return op, threads


def find_queue(graph: Graph, enqueue_op: str) -> str:
    """The name of the queue node `enqueue_op` feeds (its handle input). UsageError when the node
    is missing or is not an enqueue op of a queue node."""
    node = graph.get(enqueue_op)
    if node is None:
        raise UsageError(f"--queue-runner: no node named '{enqueue_op}' in the graph")
    if node.op not in ENQUEUE_OPS:
        raise UsageError(f"--queue-runner: node '{enqueue_op}' is a {node.op}, not an enqueue op "
                         f"({', '.join(ENQUEUE_OPS)})")
    queue = queue_node_of(node)
    if queue is None:
        raise UsageError(f"--queue-runner: the queue handle of '{enqueue_op}' does not come from a queue node")
    return queue.name


def find_close_op(graph: Graph, queue: str, cancel_pending_enqueues: bool) -> str | None:
    """A QueueClose(V2) node of `queue` with that cancel_pending_enqueues attr, if the graph has one
    (TF's QueueRunner adds `<queue>_Close` and `<queue>_Close_1`)."""
    for node in graph.nodes:
        if node.op in CLOSE_OPS and not node.control_inputs:
            source = queue_node_of(node)
            if source is not None and source.name == queue and \
                    bool(node.attr("cancel_pending_enqueues")) == cancel_pending_enqueues:
                return node.name
    return None


class QueueRunner:
    """Threads running enqueue ops of one queue (see the module doc)."""

    def __init__(self, session, enqueue_ops: list[str], threads: int = 1, close_op: str | None = None,
                 cancel_op: str | None = None):
        if not enqueue_ops:
            raise UsageError("a queue runner needs at least one enqueue op")
        if threads < 1:
            raise UsageError(f"a queue runner needs at least one thread per enqueue op, not {threads}")
        queues = {find_queue(session.graph, op) for op in enqueue_ops}
        if len(queues) != 1:
            raise UsageError(f"the enqueue ops {enqueue_ops} feed different queues ({', '.join(sorted(queues))}): "
                             f"give each queue its own runner")
        self.session = session
        self.queue = queues.pop()
        self.enqueue_ops = [op for op in enqueue_ops for _ in range(threads)]
        for name in (close_op, cancel_op):
            if name is not None and session.graph.get(name) is None:
                raise UsageError(f"queue runner: no node named '{name}' in the graph")
        self.close_op = close_op or find_close_op(session.graph, self.queue, False)
        self.cancel_op = cancel_op or find_close_op(session.graph, self.queue, True)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._running = 0
        self._threads: list[threading.Thread] = []
        self.errors: list[BaseException] = []
        self.enqueues = 0   # enqueue ops that completed, all threads together

    @property
    def name(self) -> str:
        """What the runner runs, for messages: its enqueue op (and how many threads)."""
        ops = list(dict.fromkeys(self.enqueue_ops))
        return ", ".join(ops) + (f" ({len(self.enqueue_ops)} threads)" if len(self.enqueue_ops) > 1 else "")

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def error(self) -> BaseException | None:
        """The first error a thread kept (None: none so far); join() re-raises it."""
        with self._lock:
            return self.errors[0] if self.errors else None

    def start(self) -> "QueueRunner":
        """Start the threads. A runner that was stopped (or whose threads ended) may start again
        (e.g. after a restart): its earlier errors are dropped."""
        if any(thread.is_alive() for thread in self._threads):
            raise RuntimeError(f"queue runner for {self.name} is running already")
        self._threads, self._stop = [], threading.Event()
        with self._lock:
            self.errors = []
        self._running = len(self.enqueue_ops)
        for index, op in enumerate(self.enqueue_ops):
            thread = threading.Thread(target=self._run, args=(op,), daemon=True,
                                      name=f"dftool-queue-runner-{self.queue}-{index}")
            self._threads.append(thread)
        for thread in self._threads:
            thread.start()
        return self

    def _run(self, op: str) -> None:
        ended_by_input = False
        try:
            while not self._stop.is_set():
                try:
                    self.session.run([], targets=[op])
                except OutOfRangeError:
                    ended_by_input = True
                    return
                with self._lock:
                    self.enqueues += 1
        except CancelledError as exc:
            if not self._stop.is_set() and not self._queue_closed():
                self._keep(exc)
        except BaseException as exc:   # kept for join(); the thread ends
            if not self._stop.is_set():
                self._keep(exc)
        finally:
            with self._lock:
                self._running -= 1
                last = self._running == 0
            if ended_by_input and last and not self._stop.is_set():
                self._close(cancel=False)

    def _keep(self, exc: BaseException) -> None:
        with self._lock:
            self.errors.append(exc)

    def _queue_object(self) -> Queue | None:
        resources = self.session.resources
        name = resources.lookup(("QueueName", self.queue))
        node = self.session.graph.get(self.queue)
        shared = node.attr("shared_name") if node is not None else ""
        container = (node.attr("container") if node is not None else "") or "localhost"
        queue = resources.lookup(("Queue", container, shared or name)) if (shared or name) else None
        return queue if isinstance(queue, Queue) else None

    def _queue_closed(self) -> bool:
        queue = self._queue_object()
        if queue is None:
            return False
        with queue.lock:
            return queue.closed

    def _close(self, cancel: bool) -> None:
        """Close the queue (errors are ignored, as TF's QueueRunner ignores its close op's)."""
        op = self.cancel_op if cancel else self.close_op
        try:
            if op is not None:
                self.session.run([], targets=[op], timeout=STOP_WAIT_S)
                return
        except Exception:
            pass
        queue = self._queue_object()
        if queue is not None:
            done = threading.Event()
            queue.close(cancel, lambda outputs=(), error=None: done.set())
            done.wait(STOP_WAIT_S)

    def stop(self) -> None:
        """Ask the threads to end and cancel their pending enqueues; returns promptly."""
        if self._stop.is_set():
            return
        self._stop.set()
        if self._threads:
            self._close(cancel=True)
        for thread in self._threads:
            thread.join(STOP_WAIT_S)

    def join(self, timeout: float | None = None) -> None:
        """Wait for the threads to end; re-raise the first error one of them kept."""
        for thread in self._threads:
            thread.join(timeout)
        error = self.error()
        if error is not None:
            raise error

    @property
    def running(self) -> int:
        """Threads still running."""
        with self._lock:
            return self._running
