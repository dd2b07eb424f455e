"""BLAS thread budgets, in the spirit of TensorFlow's intra-op pool.

numpy's BLAS (OpenBLAS, MKL, BLIS) starts its own threads for every big matrix product. The
executor runs independent heavy kernels on its pool at the same time, so without a budget two
pool threads would each start a full set of BLAS threads: 2 cores running 4+ spinning threads,
which costs little on a quiet machine and several times the step time on a busy one.

The budget: a heavy kernel that runs alone may use all of the executor's threads; kernels that run
at the same time share them (one BLAS thread each once there are as many kernels as threads), so
never more threads are busy than the executor was given. The limit is a process-wide setting of
the BLAS library, read and set through threadpoolctl. It is changed only while no heavy kernel of
any executor in the process is running: OpenBLAS resizes its thread pool when the limit changes,
which is not safe under a running call. A kernel that starts while others run keeps the limit
they run with; that limit was chosen for concurrency, so it errs on the side of fewer threads.

Only kernels registered as expensive (products, convolutions, big reductions) take part: the
cheap elementwise ones never call BLAS. Kernels registered `intra_op` divide their own work
(convolutions: blocks of output rows) over the threads they are granted, each block's product on
one BLAS thread, as TensorFlow's kernels split work over its intra-op pool: measured on the
4-layer conv net, OpenBLAS's own threads gain nothing on its skinny products (and lose several
times on a busy machine), while blocks on two threads run 1.7-1.9x faster than on one.
"""
from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity, not the machine's count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


class _BlasThreads:
    """The BLAS libraries numpy loaded, their thread limit, and how many heavy kernels run."""

    def __init__(self):
        self._lock = threading.Lock()
        self._libraries = None      # threadpoolctl LibControllers, found on first use
        self._limit = None          # the limit last set (None: the library's own default)
        self.active = 0             # heavy kernels running now, in every executor

    def _found(self) -> list:
        if self._libraries is None:
            try:
                from threadpoolctl import ThreadpoolController
            except ImportError:   # threadpoolctl missing: BLAS keeps its own default
                self._libraries = []
            else:
                import numpy  # noqa: F401  (threadpoolctl finds the BLAS numpy has loaded)

                self._libraries = ThreadpoolController().select(user_api="blas").lib_controllers
        return self._libraries

    def enter(self, limit: int) -> None:
        """A heavy kernel starts; set BLAS to `limit` threads if nothing else is running."""
        with self._lock:
            if self.active == 0 and limit != self._limit:
                for library in self._found():
                    library.set_num_threads(limit)
                self._limit = limit
            self.active += 1

    def leave(self) -> None:
        with self._lock:
            self.active -= 1

    @property
    def limit(self) -> int | None:
        return self._limit

    def current(self) -> list[int]:
        """What the libraries report now (for tests and `-v`)."""
        return [library.get_num_threads() for library in self._found()]


BLAS = _BlasThreads()


class ThreadBudget:
    """One executor's share of the cores: `threads` busy threads at most, BLAS's included."""

    def __init__(self, threads: int):
        self.threads = max(1, threads)

    def claim(self, concurrent: int, intra_op: bool = False) -> int:
        """Before a heavy kernel starts: `concurrent` heavy kernels (this one included) will run
        at the same time on this executor. Returns the threads granted to an `intra_op` kernel
        (1 for the others, whose share goes to BLAS). Pair every claim with release()."""
        share = max(1, self.threads // max(1, concurrent))
        if intra_op:
            BLAS.enter(1)
            return share
        BLAS.enter(share)
        return 1

    @staticmethod
    def release() -> None:
        BLAS.leave()


# --- intra-op parallelism -----------------------------------------------------------------------
_GRANT = threading.local()
_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def grant(threads: int) -> None:
    """The threads the kernel about to run on this thread may use (the executor sets it)."""
    _GRANT.threads = threads


def granted_threads() -> int:
    return getattr(_GRANT, "threads", 1)


def _intra_op_pool() -> ThreadPoolExecutor:
    global _POOL
    if _POOL is None:
        with _POOL_LOCK:
            if _POOL is None:
                _POOL = ThreadPoolExecutor(usable_cores(), thread_name_prefix="dftool-intra-op")
    return _POOL


def parallel_for(fn, tasks: list, xp=None) -> None:
    """Call fn(task) for every task, on the threads granted to the running kernel (this thread
    and helpers from a shared pool). Tasks must be independent (they write disjoint outputs).
    Device arrays (cupy) run in order: their kernels are asynchronous already."""
    threads = min(granted_threads(), len(tasks))
    if threads <= 1 or (xp is not None and xp.__name__ != "numpy"):
        for task in tasks:
            fn(task)
        return
    pending = iter(tasks)
    lock = threading.Lock()

    def drain():
        # Each thread takes the next task until none is left: uneven blocks balance themselves.
        while True:
            with lock:
                task = next(pending, None)
            if task is None:
                return
            fn(task)
    helpers = [_intra_op_pool().submit(drain) for _ in range(threads - 1)]
    try:
        drain()
    finally:
        for helper in helpers:
            helper.result()   # waits for them all; re-raises the first failure
