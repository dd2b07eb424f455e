"""The one place the JIT imports JAX: x64 on, the persistent compilation cache, the device clusters
run on, and how arrays cross between the interpreter's devices and JAX's.

    jax = runtime.load()          # UsageError naming the `jit` extra when JAX is not installed

The compilation cache lives under the user cache dir ($XDG_CACHE_HOME or ~/.cache)/dftool/jax, or
in $DFTOOL_JIT_CACHE (`off` disables it). Its thresholds are 0 so every cluster is cached: a
second `dftool run --jit` in a new process loads the executables instead of compiling them.
"""
from __future__ import annotations

import os
import threading
from pathlib import Path

from ..errors import UsageError

CACHE_ENV = "DFTOOL_JIT_CACHE"
INSTALL_HINT = "pip install 'dftool[jit]'"

_lock = threading.Lock()
_jax = None
_cache_dir: str | None = None
_chosen_dir: str | None = None   # --jit-cache
# Counts in this process: JAX's persistent compilation cache hits and misses (its monitoring
# events), and cluster executables loaded from / stored to dftool's own cache (executable_cache.py;
# a loaded executable needs no compilation, so JAX's cache is not asked).
cache_events = {"hits": 0, "misses": 0, "executables_loaded": 0, "executables_stored": 0}


def available() -> bool:
    """Whether JAX can be imported (without importing it when it was not yet)."""
    if _jax is not None:
        return True
    import importlib.util

    return importlib.util.find_spec("jax") is not None


def default_cache_dir() -> str | None:
    """$DFTOOL_JIT_CACHE, else <user cache dir>/dftool/jax; None when the variable says `off`."""
    configured = _chosen_dir or os.environ.get(CACHE_ENV)
    if configured:
        return None if configured.lower() in ("off", "none", "0") else configured
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return str(Path(base) / "dftool" / "jax")


def set_cache_dir(directory: str) -> None:
    """Use `directory` for the persistent cache (`off`: none); before the first load() only."""
    global _chosen_dir
    _chosen_dir = directory


def load(cache_dir: str | None = "default"):
    """The jax module, configured once per process (x64, the persistent cache)."""
    global _jax
    if _jax is not None:
        return _jax
    with _lock:
        if _jax is not None:
            return _jax
        try:
            import jax
        except ImportError:
            raise UsageError("--jit needs JAX, which is not installed", hint=INSTALL_HINT) from None
        # TensorFlow's int64/float64 stay exact; without it JAX silently narrows them to 32 bits.
        jax.config.update("jax_enable_x64", True)
        _configure_cache(jax, default_cache_dir() if cache_dir == "default" else cache_dir)
        _listen_for_cache_events(jax)
        _jax = jax
        return jax


def cache_dir() -> str | None:
    return _cache_dir


def _configure_cache(jax, directory: str | None) -> None:
    global _cache_dir
    if directory is None:
        return
    try:
        Path(directory).mkdir(parents=True, exist_ok=True)
    except OSError:
        return   # an unwritable cache dir costs recompiles, never the run
    jax.config.update("jax_compilation_cache_dir", directory)
    # JAX caches only executables that took over a second to compile by default; dftool's clusters
    # are many small ones, and each recompile is what a second process must not pay.
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
    _cache_dir = directory


def _listen_for_cache_events(jax) -> None:
    def on_event(event: str, **_kwargs) -> None:
        if event == "/jax/compilation_cache/cache_hits":
            cache_events["hits"] += 1
        elif event == "/jax/compilation_cache/cache_misses":
            cache_events["misses"] += 1

    try:
        jax.monitoring.register_event_listener(on_event)
    except AttributeError:   # an older JAX without monitoring: counts stay 0
        pass


# --- the array module lowerings trace with ---------------------------------------------------

class XlaNumpy:
    """jax.numpy as the lowerings (and the interpreter kernels traced with it) see it, plus
    `exact_divide`. XLA's simplifier turns a division by a constant or by a broadcast value
    (x / scalar) into a multiplication by its reciprocal, which differs from IEEE division in the
    last bit for about a third of the values; where a floor or a comparison follows (FloorDiv,
    fake quantization's nudged range) that bit becomes a whole step. TensorFlow divides exactly,
    so the divisor, broadcast to the result's shape, is put out of the simplifier's sight (an
    optimization barrier). Kernels reach it through
    exec/kernels/math_common.true_divide, which is plain `/` for numpy and cupy."""

    def __init__(self, jax):
        self._jnp, self._lax = jax.numpy, jax.lax

    def __getattr__(self, name):
        return getattr(self._jnp, name)

    def exact_divide(self, x, y):
        jnp = self._jnp
        x, y = jnp.asarray(x), jnp.asarray(y)
        shape = jnp.broadcast_shapes(x.shape, y.shape)
        if jnp.issubdtype(jnp.result_type(x, y), jnp.inexact):
            y = self._lax.optimization_barrier(jnp.broadcast_to(y, shape))
        return x / y


_array_module: XlaNumpy | None = None


def array_module() -> XlaNumpy:
    global _array_module
    if _array_module is None:
        _array_module = XlaNumpy(load())
    return _array_module


# --- devices ----------------------------------------------------------------------------------

def jax_device(device):
    """The JAX device a cluster on interpreter `device` runs on: the matching GPU when the device
    is a (real) GPU and this JAX has CUDA, else the CPU."""
    jax = load()
    if getattr(device, "kernel_device_type", "CPU") == "GPU" and getattr(device, "xp", None) is not None \
            and device.xp.__name__ == "cupy":
        try:
            gpus = jax.devices("gpu")
        except RuntimeError:
            gpus = []
        index = getattr(device, "index", 0) or 0
        if index < len(gpus):
            return gpus[index]
    return jax.devices("cpu")[0]


def default_device():
    """The device JAX runs a computation on when nothing says otherwise."""
    global _default
    if _default is None:
        _default = load().devices()[0]
    return _default


_default = None


def call_on(target, fn, *args):
    with load().default_device(target):
        return fn(*args)


def to_jax(value, target):
    """An interpreter array (numpy, or cupy on a GPU device) as a JAX array on `target`."""
    jax = load()
    module = type(value).__module__
    if module.startswith("cupy"):
        if target.platform == "gpu":
            return jax.dlpack.from_dlpack(value)   # zero-copy: both sides are CUDA memory
        value = value.get()
    return jax.device_put(value, target)


def from_jax(value, device):
    """A JAX result as the interpreter device's array type (cupy via dlpack on a GPU)."""
    import numpy as np

    xp = getattr(device, "xp", np)
    if xp is not np and xp.__name__ == "cupy":
        if value.devices().pop().platform == "gpu":
            return xp.from_dlpack(value)
        return xp.asarray(np.asarray(value))
    return np.asarray(value)
