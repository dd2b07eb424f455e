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
cheap elementwise ones never call BLAS.
"""
from __future__ import annotations

import os
import threading


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

    def claim(self, concurrent: int) -> None:
        """Before a heavy kernel starts: `concurrent` heavy kernels (this one included) will run
        at the same time on this executor. Pair every claim with release()."""
        BLAS.enter(max(1, self.threads // max(1, concurrent)))

    @staticmethod
    def release() -> None:
        BLAS.leave()
