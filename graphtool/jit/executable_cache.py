"""Compiled cluster programs on disk, so that a new process neither traces nor compiles them.

JAX's persistent cache (runtime.py) keeps XLA executables, but looking one up needs the program's
StableHLO, and making that means tracing every lowering in Python and lowering the result to MLIR
again: for MobileNetV2, 0.95 s of a warm second process's 1.1 s. Here each cluster signature's
executable is kept as JAX serializes it (jax.experimental.serialize_executable), keyed by
everything the program depends on: the cluster's body graph, its input and output names, the
values of its static inputs, the dtypes and shapes of the others, the device (platform, kind, and
for a CPU the instruction-set features XLA compiled for), and the JAX and jaxlib versions. A new
process loads it in milliseconds and calls it.

Files live in <cache dir>/executables/, written atomically; an unreadable, truncated or stale file
is only a miss (the program is traced and compiled again), never a failure of the run.
"""
from __future__ import annotations

import functools
import hashlib
import os
import tempfile
from pathlib import Path

from . import runtime


def _directory() -> Path | None:
    root = runtime.cache_dir()
    return None if root is None else Path(root) / "executables"


def key(parts: list[bytes], jax_device) -> str:
    """The file name for a program described by `parts`, compiled for `jax_device`."""
    import jax
    import jaxlib

    digest = hashlib.sha256()
    device = [jax_device.platform, getattr(jax_device, "device_kind", ""), jax.__version__, jaxlib.__version__]
    if jax_device.platform == "cpu":
        device.append(_cpu_features())
    for part in [*parts, *(text.encode() for text in device)]:
        digest.update(len(part).to_bytes(8, "little"))
        digest.update(part)
    return digest.hexdigest()


@functools.lru_cache(maxsize=1)
def _cpu_features() -> str:
    """XLA compiles for the host's instruction set: an executable made where AVX-512 exists must
    not load where it does not (a cache directory shared between machines)."""
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith(("flags", "Features")):
                    return hashlib.sha256(line.encode()).hexdigest()
    except OSError:
        pass
    import platform

    return platform.machine() + platform.processor()


def load(name: str, inputs: int, outputs: int, jax_device):
    """The executable stored under `name` (taking `inputs` arrays, giving a tuple of `outputs`),
    loaded onto `jax_device`, or None."""
    directory = _directory()
    if directory is None:
        return None
    try:
        data = (directory / name).read_bytes()
    except OSError:
        return None
    try:
        import jax
        from jax.experimental import serialize_executable

        in_tree = jax.tree_util.tree_structure((tuple(range(inputs)), {}))
        out_tree = jax.tree_util.tree_structure(tuple(range(outputs)))
        compiled = serialize_executable.deserialize_and_load(data, in_tree, out_tree,
                                                             execution_devices=[jax_device])
    except Exception:   # noqa: BLE001 - a truncated or foreign file: trace and compile again
        return None
    runtime.cache_events["executables_loaded"] += 1
    return compiled


def store(name: str, compiled) -> None:
    """Keep `compiled` (a jax.stages.Compiled) under `name`."""
    directory = _directory()
    if directory is None:
        return
    temp = None
    try:
        from jax.experimental import serialize_executable

        data, _, _ = serialize_executable.serialize(compiled)
        directory.mkdir(parents=True, exist_ok=True)
        handle, temp = tempfile.mkstemp(dir=directory, prefix=".tmp-")
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.replace(temp, directory / name)
        runtime.cache_events["executables_stored"] += 1
    except Exception:   # noqa: BLE001 - not serializable, a full disk: the next process compiles again
        if temp is not None:
            try:
                os.unlink(temp)
            except OSError:
                pass
