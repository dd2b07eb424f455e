"""`_JitCluster`: the node a compiled cluster becomes, its op registration, and its kernel.

    _JitCluster(args: Tin) -> (results: Tout), attrs: cluster (the program's key),
                                                      output_shapes (what shape inference knew)

The kernel looks its ClusterProgram up by key. A program traces the cluster's body graph
(trace.py) inside `jax.jit`; jax.jit caches one executable per input dtypes and shapes, and the
inputs XLA needs as constants (static inputs from outside the cluster) are bound per value, so
their values are part of the cache key too. The first call per signature is timed as its compile
(trace + XLA compile, or a load from the persistent cache).
"""
from __future__ import annotations

import itertools
import threading
import time
import weakref
from functools import partial

import numpy as np

from ..exec.kernels.registry import kernel
from ..ir import Graph, TensorRef
from ..shapes import Shape
from . import executable_cache, runtime, trace

OP = "_JitCluster"

# Weak: the Session's JitReport holds its programs, so they go with the Session.
_PROGRAMS: "weakref.WeakValueDictionary[str, ClusterProgram]" = weakref.WeakValueDictionary()
_counter = itertools.count()
_programs_lock = threading.Lock()


class _StaticValue:
    """A concrete input as a hashable key (dtype, shape and bytes)."""

    __slots__ = ("array", "_key")

    def __init__(self, array):
        self.array = np.asarray(array)
        self._key = (self.array.dtype.str, self.array.shape, self.array.tobytes())

    def __hash__(self):
        return hash(self._key)

    def __eq__(self, other):
        return isinstance(other, _StaticValue) and self._key == other._key


class ClusterProgram:
    """One cluster's body graph and its compiled forms."""

    def __init__(self, body: Graph, inputs: list[TensorRef], outputs: list[TensorRef],
                 static_positions: tuple[int, ...], ops: list[str], list_outputs=(), held_inputs=()):
        self.body = body
        self.inputs = inputs                  # body placeholders, one per cluster input
        self.outputs = outputs                # body tensors, one per cluster output
        self.static_positions = static_positions
        self.ops = ops                        # the ops of the nodes it holds (for reports)
        self.key = f"cluster_{next(_counter)}"
        # One callable per input signature (static values, dtypes and shapes), compiled on its first call.
        self._callables: dict[tuple, object] = {}
        self._disk_key: bytes | None = None
        self._lock = threading.Lock()
        self.compile_seconds = 0.0
        self.compiles = 0
        self.calls = 0
        # Outputs that are TensorLists (arrays here): the interpreter gets its TensorList value.
        self.list_outputs = dict(list_outputs or {})   # position -> declared element shape
        self.failure: str | None = None   # why XLA could not compile it (then it is interpreted)
        self._fallback = None
        self._jax_devices: dict = {}
        # Positions (among the non-static inputs) of inputs made by Const nodes, and their device copies.
        static_set = set(static_positions)
        dynamic_positions = [k for k in range(len(inputs)) if k not in static_set]
        self.held_positions = tuple(dynamic_positions.index(k) for k in held_inputs if k in dynamic_positions)
        self._held: dict[int, tuple] = {}
        with _programs_lock:
            _PROGRAMS[self.key] = self

    def _trace(self, statics: tuple, *dynamic):
        env, dyn = {}, iter(dynamic)
        static_values = dict(zip(self.static_positions, statics))
        for position, ref in enumerate(self.inputs):
            env[ref] = static_values[position].array if position in static_values else next(dyn)
        return tuple(trace.evaluate(self.body, env, self.outputs))

    def _build(self, statics: tuple, dynamic: list, jax_device):
        """The compiled program for one signature: loaded from the disk cache of an earlier
        process (executable_cache.py), or traced and compiled here (and stored there)."""
        jax = runtime.load()
        traced = jax.jit(partial(self._trace, statics))
        name = self._cache_name(statics, dynamic, jax_device)
        if name is None:
            return traced
        compiled = executable_cache.load(name, len(dynamic), len(self.outputs), jax_device)
        if compiled is None:
            compiled = traced.lower(*dynamic).compile()   # XLA's part may come from JAX's cache
            executable_cache.store(name, compiled)
        return compiled

    def _cache_name(self, statics: tuple, dynamic: list, jax_device) -> str | None:
        if runtime.cache_dir() is None:
            return None
        if self._disk_key is None:
            from ..ir.convert import to_graphdef

            names = "|".join(ref.full_name for ref in self.inputs) + ">" + "|".join(ref.full_name for ref in self.outputs)
            self._disk_key = to_graphdef(self.body).SerializeToString(deterministic=True) + names.encode()
        signature = repr([(tuple(a.shape), str(a.dtype)) for a in dynamic]).encode()
        return executable_cache.key([self._disk_key, *(repr(v._key).encode() for v in statics), signature],
                                    jax_device)

    def __call__(self, device, inputs) -> tuple:
        if self.failure is not None:
            return self._interpret(device, inputs)
        try:
            return self._compiled_call(device, inputs)
        except _CompileFailed as failed:
            # `--jit` never refuses a graph: a cluster XLA cannot compile (a loop whose carried
            # shapes change, a list read before written) runs interpreted from now on.
            exc = failed.__cause__
            first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            self.failure = f"{type(exc).__name__}: {first_line}"[:300]
            return self._interpret(device, inputs)

    def _interpret(self, device, inputs) -> tuple:
        """The cluster's body run by the interpreter (a cluster XLA could not compile)."""
        if self._fallback is None:
            from ..exec.session import Session

            with self._lock:
                if self._fallback is None:
                    self._fallback = Session(self.body, device=device, jit=False)
        feeds = {ref.node.name: device.to_host(v) for ref, v in zip(self.inputs, inputs)}
        result = self._fallback.run([ref.full_name for ref in self.outputs], feeds)
        return tuple(device.to_device(v) for v in result.values)

    def _held_inputs(self, dynamic: list, jax_device) -> list:
        """Inputs from constants (weights) are the same array every step: put on the device once.
        (Passing a numpy array to jax.jit copies it, every call: 100 MB of ResNet50 weights.)"""
        dynamic = list(dynamic)
        for position in self.held_positions:
            value = dynamic[position]
            held = self._held.get(position)
            if held is None or held[0] is not value:
                held = self._held[position] = (value, runtime.to_jax(value, jax_device))
            dynamic[position] = held[1]
        return dynamic

    def _compiled_call(self, device, inputs) -> tuple:
        jax_device = self._jax_devices.get(device)
        if jax_device is None:
            jax_device = self._jax_devices[device] = runtime.jax_device(device)
        if self.static_positions:
            statics = tuple(_StaticValue(device.to_host(inputs[i])) for i in self.static_positions)
            static_set = set(self.static_positions)
            inputs = [v for i, v in enumerate(inputs) if i not in static_set]
        else:
            statics = ()
        # Where the CPU is JAX's default device, jax.jit takes numpy arrays as they are (cheaper
        # than a device_put first); elsewhere inputs are put on the cluster's device, and a
        # cluster without inputs runs there by default_device.
        on_default = jax_device == runtime.default_device()
        dynamic = inputs if on_default and device.xp is np else [runtime.to_jax(v, jax_device) for v in inputs]
        if self.held_positions:
            dynamic = self._held_inputs(dynamic, jax_device)
        signature = (statics, *[(a.shape, a.dtype) for a in dynamic])
        self.calls += 1
        fn = self._callables.get(signature)
        if fn is not None:
            results = fn(*dynamic)
        else:
            start = time.perf_counter()
            try:
                fn = self._build(statics, dynamic, jax_device)
                if not on_default:
                    fn = partial(runtime.call_on, jax_device, fn)
                results = fn(*dynamic)
                for r in results:
                    r.block_until_ready()
            except Exception as exc:   # noqa: BLE001 - whatever a lowering or XLA refused
                raise _CompileFailed() from exc
            with self._lock:
                if signature not in self._callables:
                    self._callables[signature] = fn
                    self.compiles += 1
                    self.compile_seconds += time.perf_counter() - start
        lists = self.list_outputs
        if not lists and device.xp is np:
            return tuple(np.asarray(r) for r in results)
        return tuple(_to_tensor_list(r, lists[k]) if k in lists else runtime.from_jax(r, device)
                     for k, r in enumerate(results))


def _to_tensor_list(array, element_shape: Shape):
    """A [n, *element_shape] array as the interpreter's TensorList value of n elements."""
    from .. import dtypes
    from ..exec.kernels.tensor_list_value import TensorList

    host = np.asarray(array)
    handle = np.empty((), dtype=object)   # a variant tensor: a scalar holding the list
    handle[()] = TensorList(dtypes.from_numpy(host.dtype), element_shape, list(host))
    return handle


class _CompileFailed(Exception):
    """Tracing or compiling a new signature failed (the cause says why)."""


def program(key: str) -> ClusterProgram:
    return _PROGRAMS[key]


def release(key: str) -> None:
    with _programs_lock:
        _PROGRAMS.pop(key, None)


@kernel(OP)   # inline: XLA parallelizes inside; a pool hop costs more than small clusters take
def run_cluster(ctx, *inputs, cluster):
    return program(cluster)(ctx.device, inputs)
