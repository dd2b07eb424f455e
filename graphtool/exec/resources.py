"""Resource containers: where stateful kernels keep what outlives one kernel call.

TensorFlow keeps resources in two places, and so do we:
- the step container (`StepResources`, one per Session.run): TensorArrays and stacks. They are
  created and consumed within one step (a while loop's TensorArray, the stacks a loop gradient
  pushes to) and vanish when the step ends;
- the session container (`SessionResources`, one per Session): variables and the generators of
  seeded random ops, which keep their state from one run to the next.

Kernels reach both through `ctx.resources` (a StepResources; `ctx.resources.session` is the
session container). Kernels of one step run on several threads at once, so the containers are
thread-safe, and the resource objects they hold carry their own locks.

Several steps of one Session may run at once (TensorFlow allows concurrent Session.run calls), and
they share the compiled plan, so the step container cannot live on the plan's kernel contexts:
each thread running a kernel says which step it works for (`step_scope`), and `ctx.resources`
reads that (`current_step_resources`).

    resources = StepResources(SessionResources())
    array = resources.lookup_or_create(("TensorArray", name), lambda: TensorArray(...))
"""
from __future__ import annotations

import itertools
import threading
from typing import Callable, Hashable, TypeVar, cast

T = TypeVar("T")

# Resource names are made unique per process, as TensorFlow's counters do ("TensorArrayV3_7"): a
# TensorArrayV3 inside a loop creates a new array in every iteration.
_unique_ids = itertools.count()


def unique_name(base: str) -> str:
    """`base` plus a process-wide counter: a resource name no other creation returns."""
    return f"{base}_{next(_unique_ids)}"


class ResourceContainer:
    """A thread-safe map from keys to resource objects (TensorFlow's ResourceMgr, untyped: the
    key's first element names the kind, e.g. ("TensorArray", name))."""

    def __init__(self):
        self._lock = threading.Lock()
        self._resources: dict[Hashable, object] = {}

    def lookup(self, key: Hashable):
        """The resource under `key`, or None."""
        with self._lock:
            return self._resources.get(key)

    def delete(self, key: Hashable):
        """Remove and return the resource under `key` (None when there is none)."""
        with self._lock:
            return self._resources.pop(key, None)

    def lookup_or_create(self, key: Hashable, create: Callable[[], T]) -> T:
        """The resource under `key`, made by `create()` if there is none yet (atomically: two
        threads asking at once get the same object)."""
        with self._lock:
            resource = self._resources.get(key)
            if resource is None:
                resource = self._resources[key] = create()
            return cast(T, resource)   # what `create` made for this key (keys name their kind)


_current = threading.local()


def current_step_resources() -> "StepResources | None":
    """The step container of the step this thread is running a kernel for (None outside one)."""
    return getattr(_current, "resources", None)


class step_scope:
    """`with step_scope(resources):` kernels run by this thread meanwhile see `resources` (the
    previous value comes back afterwards, so scopes nest)."""

    __slots__ = ("resources", "previous")

    def __init__(self, resources: "StepResources | None"):
        self.resources = resources

    def __enter__(self):
        self.previous = getattr(_current, "resources", None)
        _current.resources = self.resources
        return self.resources

    def __exit__(self, *exc) -> None:
        _current.resources = self.previous


class CancellationManager:
    """Where operations that wait (a blocking dequeue, an enqueue into a full queue) register how
    to stop waiting, as TensorFlow's CancellationManager: `cancel(error)` calls every registered
    callback once with `error`; a registration after the cancellation is refused (None), so the
    caller fails at once instead of waiting for nothing."""

    def __init__(self):
        self._lock = threading.Lock()
        self._callbacks: dict[int, Callable[[BaseException], None]] = {}
        self._tokens = itertools.count()
        self.error: BaseException | None = None   # set once cancelled

    def register(self, callback: Callable[[BaseException], None]) -> int | None:
        """A token for `callback`, or None when cancellation has already started."""
        with self._lock:
            if self.error is not None:
                return None
            token = next(self._tokens)
            self._callbacks[token] = callback
            return token

    def deregister(self, token: int | None) -> None:
        if token is not None:
            with self._lock:
                self._callbacks.pop(token, None)

    def cancel(self, error: BaseException) -> None:
        """Cancel everything registered, now and later (callbacks run on this thread, without
        the lock held: they may finish operations that call back into the step)."""
        with self._lock:
            if self.error is not None:
                return
            self.error = error
            callbacks, self._callbacks = list(self._callbacks.values()), {}
        for callback in callbacks:
            callback(error)


class SessionResources(ResourceContainer):
    """What lives as long as a Session: variables, random generators, queues and readers."""

    def __init__(self):
        super().__init__()
        # Cancelled when the session closes: operations waiting in any of its steps stop.
        self.cancellation = CancellationManager()

    def close(self, error: BaseException | None = None) -> None:
        """Close the session's resources: every waiting operation (in any step) fails with
        `error` (a CancelledError by default), and resources that hold threads' attention
        (queues) are closed. Idempotent."""
        if error is None:
            from ..errors import CancelledError

            error = CancelledError("Session has been closed.")
        self.cancellation.cancel(error)
        with self._lock:
            resources = list(self._resources.values())
        for resource in resources:
            close = getattr(resource, "session_closed", None)
            if close is not None:
                close(error)


class StepResources(ResourceContainer):
    """What lives for one step (TensorArrays, stacks), plus the session's container. Its
    `cancellation` stops the step's waiting operations when the step fails or times out."""

    def __init__(self, session: SessionResources | None = None):
        super().__init__()
        self.session = session if session is not None else SessionResources()
        self.cancellation = CancellationManager()
