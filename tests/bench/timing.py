"""What the benchmarks share: timing a step the same way everywhere, TensorFlow as the reference,
and a busy machine to measure under.

Benchmarks run in the environment a user has: no BLAS or OpenMP variables are set here.
"""
from __future__ import annotations

import contextlib
import importlib.util
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

import numpy as np

HERE = Path(__file__).resolve().parent


def best_of(fn, repeat: int) -> float:
    """The fastest of `repeat` calls of `fn`, in seconds, after one warm-up call (plan compilation,
    placement, caches). The minimum is the least noisy figure on a shared machine."""
    return min(times_of(fn, repeat))


def median_of(fn, repeat: int) -> float:
    """The median of `repeat` calls of `fn` after one warm-up call: what a user sees per step."""
    return statistics.median(times_of(fn, repeat))


def times_of(fn, repeat: int) -> list[float]:
    fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times


# --- TensorFlow, in its own process -----------------------------------------------------------
def tensorflow_python(explicit: str | None = None) -> str | None:
    """A Python that can import TensorFlow: --tf-python, $TF_PYTHON, or this one when it has it."""
    for candidate in (explicit, os.environ.get("TF_PYTHON")):
        if candidate:
            return candidate
    if importlib.util.find_spec("tensorflow") is not None:
        return sys.executable
    return None


class TensorFlowReference:
    """Times graphs in TensorFlow (tf_reference.py in a subprocess), or says it is not installed."""

    def __init__(self, python: str | None):
        self.python = python
        self.version = None

    @property
    def available(self) -> bool:
        return self.python is not None

    def _command(self, scratch: str, graph, fetches: list[str], feeds: dict[str, np.ndarray], mode: str) -> list[str]:
        """tf_reference.py's command line, with the graph and feeds written into `scratch`."""
        from graphtool.ir.export import to_graphdef

        graph_path, feeds_path = os.path.join(scratch, "g.pb"), os.path.join(scratch, "f.npz")
        with open(graph_path, "wb") as handle:
            handle.write(to_graphdef(graph).SerializeToString())
        np.savez(feeds_path, **feeds)
        return [self.python, str(HERE / "tf_reference.py"), graph_path, feeds_path if feeds else "-",
                ",".join(fetches), mode]

    def median(self, graph, fetches: list[str], feeds: dict[str, np.ndarray], repeat: int) -> float | None:
        """TensorFlow's median step time for `graph` (an IR Graph), or None without TensorFlow."""
        if self.python is None:
            return None
        with tempfile.TemporaryDirectory() as scratch:
            done = subprocess.run(self._command(scratch, graph, fetches, feeds, str(repeat)),
                                  capture_output=True, text=True, timeout=1800)
        if done.returncode != 0:
            raise RuntimeError(f"TensorFlow failed: {done.stderr.strip().splitlines()[-1:]}")
        result = json.loads(done.stdout.strip().splitlines()[-1])
        self.version = result["version"]
        return result["median"]


    @contextlib.contextmanager
    def live(self, graph, fetches: list[str], feeds: dict[str, np.ndarray]):
        """A TensorFlow process holding `graph` warm; yields a step timer for interleaved(): timer(n)
        runs n steps there and returns TensorFlow's own time for each (None without TensorFlow)."""
        if self.python is None:
            yield None
            return
        with tempfile.TemporaryDirectory() as scratch:
            process = subprocess.Popen(self._command(scratch, graph, fetches, feeds, "serve"),
                                       stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                       text=True)
            try:
                hello = process.stdout.readline()
                if not hello:
                    raise RuntimeError(f"TensorFlow failed: {process.stderr.read().strip().splitlines()[-1:]}")
                self.version = json.loads(hello)["version"]

                def steps(count: int) -> list[float]:
                    process.stdin.write(f"{count}\n")
                    process.stdin.flush()
                    return json.loads(process.stdout.readline())
                yield steps
            finally:
                process.stdin.close()
                try:
                    process.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()


def timed(fn) -> Callable[[int], list[float]]:
    """`fn` as a step timer: timer(n) runs `fn` n times and returns the seconds each call took."""
    def steps(count: int) -> list[float]:
        times = []
        for _ in range(count):
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
        return times
    return steps


def interleaved(timers: dict[str, Callable[[int], list[float]] | None], rounds: int,
                round_seconds: float = 0.25) -> dict:
    """Median step time of each timer in `timers`, taken in rounds that give each contender a turn,
    so that all of them see the same machine load: a shared machine's speed drifts over seconds,
    and timing one contender after the other turns that drift into a false ratio. In its turn a
    contender first runs one untimed step (pool threads of the previous contender, BLAS's and
    Eigen's, spin for a while after their work is done), then back-to-back steps for about
    `round_seconds`, as a user's training or serving loop would. None timers give None."""
    live = {name: timer for name, timer in timers.items() if timer is not None}
    per_turn = {}
    for name, timer in live.items():   # warm-up, and how many steps make a turn
        timer(1)
        one = min(timer(2))
        per_turn[name] = max(1, min(50, int(round_seconds / max(one, 1e-6))))
    times = {name: [] for name in live}
    for _ in range(rounds):
        for name, timer in live.items():
            timer(1)
            times[name].extend(timer(per_turn[name]))
    return {name: statistics.median(times[name]) if name in times else None for name in timers}


def ratio(a: float | None, b: float | None) -> str:
    return "-" if a is None or b is None else f"{a / b:.2f}x"


# --- a busy machine -----------------------------------------------------------------------------
def _spin() -> None:
    while True:
        pass


@contextlib.contextmanager
def busy_cores(count: int):
    """`count` processes that each keep one core busy (a user's other work), stopped on exit."""
    context = multiprocessing.get_context("spawn")
    spinners = [context.Process(target=_spin, daemon=True) for _ in range(count)]
    for process in spinners:
        process.start()
    try:
        time.sleep(0.2)
        yield
    finally:
        for process in spinners:
            process.terminate()
        for process in spinners:
            process.join()
