"""What the benchmarks share: timing a step the same way everywhere."""
from __future__ import annotations

import time


def best_of(fn, repeat: int) -> float:
    """The fastest of `repeat` calls of `fn`, in seconds, after one warm-up call (plan compilation,
    placement, caches). The minimum is the least noisy figure on a shared machine."""
    fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)
