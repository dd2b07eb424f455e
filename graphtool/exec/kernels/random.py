"""Kernels for the random-number ops, drawing TensorFlow's own Philox4x32-10 streams (philox.py),
so a seeded graph gives TensorFlow's numbers bit for bit.

Stateful ops (RandomUniform, ...) keep one generator per node in the session container, made from
the node's (seed, seed2) attrs (fresh random seeds when both are 0, as TensorFlow does). Each run
takes the generator's current position and moves it on by 256 calls per output value, as
TensorFlow's kernels conservatively reserve their samples, so the n-th run of a node gives
TensorFlow's n-th result. Stateless ops derive their generator from their inputs on every call.
"""
from __future__ import annotations

import secrets
import threading

import numpy as np

from ...shapes import Shape
from . import philox
from .gpu_host_memory import device_holds
from .registry import CPU, kernel
from .state import _missing_variable, _resource_variable

_RESERVE_MULTIPLE = 256           # Philox calls TensorFlow's PhiloxRandomOp reserves per output
_PHILOX, _THREEFRY, _AUTO_SELECT = 1, 2, 3


def _host(array) -> np.ndarray:
    return array if isinstance(array, np.ndarray) else array.get()   # cupy -> numpy


def _output_shape(ctx, shape) -> tuple[int, ...]:
    dims = _host(shape).reshape(-1).tolist()
    for dim in dims:
        if dim < 0:
            ctx.fail(f"Dimension {dim} must be >= 0")
    return tuple(int(dim) for dim in dims)


def _result(ctx, values: np.ndarray):
    """Values computed on the host, on ctx's device; bfloat16 stays in host memory on a GPU (cupy
    has no bfloat16; gpu_host_memory.py)."""
    return ctx.xp.asarray(values) if device_holds(values.dtype) else values


def _size(dims) -> int:
    return int(np.prod(dims, dtype=np.int64))


_FLOAT_SAMPLERS = {"Uniform": philox.uniform, "Normal": philox.normal, "TruncatedNormal": philox.truncated_normal}
_OP_DISTRIBUTIONS = {
    "RandomUniform": "Uniform", "RandomStandardNormal": "Normal", "TruncatedNormal": "TruncatedNormal",
    "StatelessRandomUniform": "Uniform", "StatelessRandomNormal": "Normal",
    "StatelessTruncatedNormal": "TruncatedNormal", "StatelessRandomUniformV2": "Uniform",
    "StatelessRandomNormalV2": "Normal", "StatelessTruncatedNormalV2": "TruncatedNormal",
}


def _float_values(ctx, generator: philox.Philox, dims) -> np.ndarray:
    sampler = _FLOAT_SAMPLERS[_OP_DISTRIBUTIONS[ctx.op]]
    return sampler(generator, _size(dims), ctx.out_dtype()).reshape(dims)


def _int_bounds(ctx, minval, maxval, dims) -> tuple[int, int] | None:
    """The scalar bounds; None when there are no values to draw (then any bounds will do)."""
    for name, bound in (("minval", minval), ("maxval", maxval)):
        if bound.ndim != 0:
            ctx.fail(f"{name} must be 0-D, got shape {Shape(bound.shape)}")
    low, high = int(minval), int(maxval)
    if _size(dims) == 0:
        return None
    if low >= high:
        ctx.fail(f"Need minval < maxval, got {low} >= {high}")
    return low, high


def _int_values(ctx, generator: philox.Philox, dims, minval, maxval) -> np.ndarray:
    bounds = _int_bounds(ctx, minval, maxval, dims)
    dtype = ctx.out_dtype()
    if bounds is None:
        return np.zeros(dims, dtype=dtype)
    return philox.uniform_int(generator, _size(dims), dtype, *bounds).reshape(dims)


# --- stateful ops -------------------------------------------------------------------------------

class _NodeGenerator:
    """One node's Philox position across the runs of a session; loop iterations may draw at once."""

    def __init__(self, seed: int, seed2: int):
        if seed == 0 and seed2 == 0:
            seed, seed2 = secrets.randbits(64), secrets.randbits(64)
        self.position = philox.Philox.from_seeds(seed, seed2)
        self.lock = threading.Lock()

    def reserve(self, calls: int) -> philox.Philox:
        """The position to make `calls` Philox calls from; the next run starts past all of them."""
        with self.lock:
            start, self.position = self.position, self.position.skipped(calls)
        return start


def _reserve(ctx, seed: int, seed2: int, outputs: int) -> philox.Philox:
    """The node's generator for `outputs` values, reserving 256 calls each (PhiloxRandomOp's
    ReserveRandomOutputs)."""
    return _reserve_calls(ctx, seed, seed2, outputs * _RESERVE_MULTIPLE)


def _reserve_calls(ctx, seed: int, seed2: int, calls: int) -> philox.Philox:
    source = ctx.resources.session.lookup_or_create(("RandomGenerator", ctx.node_name),
                                                    lambda: _NodeGenerator(seed, seed2))
    return source.reserve(calls)


@kernel("RandomUniform", "RandomStandardNormal", "TruncatedNormal")
def random_float(ctx, shape, *, seed, seed2):
    dims = _output_shape(ctx, shape)
    return _result(ctx, _float_values(ctx, _reserve(ctx, seed, seed2, _size(dims)), dims))


@kernel("RandomUniformInt")
def random_uniform_int(ctx, shape, minval, maxval, *, seed, seed2):
    dims = _output_shape(ctx, shape)
    if _int_bounds(ctx, minval, maxval, dims) is None:
        return ctx.xp.zeros(dims, dtype=ctx.out_dtype())
    generator = _reserve(ctx, seed, seed2, _size(dims))
    return ctx.xp.asarray(_int_values(ctx, generator, dims, minval, maxval))


_INT32_MAX = 2 ** 31 - 1


@kernel("RandomShuffle")
def random_shuffle(ctx, value, *, seed, seed2, T):
    """TensorFlow's random_shuffle_op.cc: rows of at most one element, or at most one row, come
    back as they are (and draw nothing); else a Fisher-Yates pass over the row indices swaps row i
    with row i + u % (rows - i), u the next uint32 of the node's stream taken one at a time
    (SingleSampleAdapter), from rows - 1 samples reserved (ReserveSamples32). TensorFlow has a
    CPU kernel only; on a GPU the permutation is drawn on the host and the rows gathered where
    they are (strings and bfloat16 stay in host memory)."""
    if value.size <= 1 or value.shape[0] <= 1:
        return value
    rows = value.shape[0]
    if rows >= _INT32_MAX:
        ctx.fail(f"RandomShuffle of {rows} rows: TensorFlow's 64-bit index path is not supported")
    samples = rows - 1
    generator = _reserve_calls(ctx, seed, seed2, -(-samples // 4))
    draws = generator.blocks(-(-samples // 4)).reshape(-1)[:samples]
    offsets = (draws % np.arange(rows, 1, -1, dtype=np.uint32)).tolist()   # u_i % (rows - i)
    order = list(range(rows))
    for i, offset in enumerate(offsets):
        j = i + offset
        order[i], order[j] = order[j], order[i]
    index = np.array(order, dtype=np.int64)
    return value[index if isinstance(value, np.ndarray) else ctx.xp.asarray(index)]


# --- stateless ops ------------------------------------------------------------------------------

def _seed_generator(ctx, seed) -> philox.Philox:
    if tuple(seed.shape) != (2,):
        ctx.fail(f"seed must have shape [2], not {Shape(seed.shape)}")
    # int32 seeds widen with their sign, as TensorFlow's static_cast<uint64> does.
    first, second = (int(value) for value in _host(seed).astype(np.int64))
    return philox.Philox.from_stateless_seed(first, second)


def _key_counter_generator(ctx, key, counter, alg) -> philox.Philox:
    """The generator a V2 op's key, counter and alg inputs describe (Philox only, as TensorFlow's
    CPU kernels; auto-select means Philox there)."""
    algorithm = int(_host(alg))
    if algorithm == _THREEFRY:
        ctx.fail("Unsupported algorithm id: 2 (ThreeFry has no CPU kernel in TensorFlow)")
    if algorithm not in (_PHILOX, _AUTO_SELECT):
        ctx.fail(f"Unsupported algorithm id: {algorithm}")
    key, counter = _host(key).reshape(-1), _host(counter).reshape(-1)
    if key.size != 1:
        ctx.fail(f"key must have shape [1], not {Shape(key.shape)}")
    if counter.size < 2:
        ctx.fail(f"counter must have at least 2 elements for Philox, got shape {Shape(counter.shape)}")
    return philox.Philox.from_key_counter(int(key[0]), (int(counter[0]), int(counter[1])))


@kernel("StatelessRandomUniform", "StatelessRandomNormal", "StatelessTruncatedNormal")
def stateless_random_float(ctx, shape, seed):
    dims = _output_shape(ctx, shape)
    return _result(ctx, _float_values(ctx, _seed_generator(ctx, seed), dims))


@kernel("StatelessRandomUniformInt")
def stateless_random_uniform_int(ctx, shape, seed, minval, maxval):
    dims = _output_shape(ctx, shape)
    return ctx.xp.asarray(_int_values(ctx, _seed_generator(ctx, seed), dims, minval, maxval))


@kernel("StatelessRandomUniformFullInt")
def stateless_random_uniform_full_int(ctx, shape, seed):
    dims = _output_shape(ctx, shape)
    values = philox.full_int(_seed_generator(ctx, seed), _size(dims), ctx.out_dtype())
    return ctx.xp.asarray(values.reshape(dims))


@kernel("StatelessRandomUniformV2", "StatelessRandomNormalV2", "StatelessTruncatedNormalV2")
def stateless_random_float_v2(ctx, shape, key, counter, alg):
    dims = _output_shape(ctx, shape)
    return _result(ctx, _float_values(ctx, _key_counter_generator(ctx, key, counter, alg), dims))


@kernel("StatelessRandomUniformIntV2")
def stateless_random_uniform_int_v2(ctx, shape, key, counter, alg, minval, maxval):
    dims = _output_shape(ctx, shape)
    generator = _key_counter_generator(ctx, key, counter, alg)
    return ctx.xp.asarray(_int_values(ctx, generator, dims, minval, maxval))


@kernel("StatelessRandomUniformFullIntV2")
def stateless_random_uniform_full_int_v2(ctx, shape, key, counter, alg):
    dims = _output_shape(ctx, shape)
    values = philox.full_int(_key_counter_generator(ctx, key, counter, alg), _size(dims), ctx.out_dtype())
    return ctx.xp.asarray(values.reshape(dims))


def _key_counter(ctx, seed):
    key, (low, high) = _seed_generator(ctx, seed).key_counter_words()
    return ctx.xp.asarray(np.array([key], np.uint64)), ctx.xp.asarray(np.array([low, high], np.uint64))


@kernel("StatelessRandomGetKeyCounter")
def stateless_random_get_key_counter(ctx, seed):
    return _key_counter(ctx, seed)


@kernel("StatelessRandomGetKeyCounterAlg")
def stateless_random_get_key_counter_alg(ctx, seed):
    return (*_key_counter(ctx, seed), ctx.xp.asarray(np.int32(_PHILOX)))


@kernel("StatelessRandomGetAlg")
def stateless_random_get_alg(ctx):
    return ctx.xp.asarray(np.int32(_PHILOX))


# --- tf.random.Generator: state in a resource variable --------------------------------------------

def _advance_state(ctx, resource, algorithm, calls: int):
    """(generator at the state's position, the state's old value); the state moves on by `calls`."""
    algorithm = int(_host(algorithm))
    if algorithm != _PHILOX:
        ctx.fail(f"Unsupported algorithm id: {algorithm}" + (" (ThreeFry has no CPU kernel in TensorFlow)"
                                                              if algorithm == _THREEFRY else ""))
    handle, variable = _resource_variable(ctx, resource)
    with variable.lock:
        if variable.value is None:
            _missing_variable(ctx, handle)
        old = np.array(_host(variable.value))
        if old.dtype != np.int64 or old.ndim != 1 or old.size < 3:
            ctx.fail(f"The RNG state must be an int64 vector of at least 3 elements, got {old.dtype} "
                     f"{Shape(old.shape)}")
        words = old.view(np.uint64)
        generator = philox.Philox.from_key_counter(int(words[2]), (int(words[0]), int(words[1])))
        key, (low, high) = generator.skipped(calls).key_counter_words()
        new = old.copy()
        new[:3] = np.array([low, high, key], np.uint64).view(np.int64)
        variable.store(ctx.xp, ctx.xp.asarray(new))
    return generator, old


@kernel("StatefulUniform", "StatefulStandardNormalV2", "StatefulTruncatedNormal", devices=(CPU,))
def stateful_random_float(ctx, resource, algorithm, shape, *, dtype, shape_dtype):
    dims = _output_shape(ctx, shape)
    sampler = {"StatefulUniform": philox.uniform, "StatefulStandardNormalV2": philox.normal,
               "StatefulTruncatedNormal": philox.truncated_normal}[ctx.op]
    generator, _ = _advance_state(ctx, resource, algorithm, _size(dims) * _RESERVE_MULTIPLE)
    return _result(ctx, sampler(generator, _size(dims), ctx.out_dtype()).reshape(dims))


@kernel("StatefulUniformInt", devices=(CPU,))
def stateful_uniform_int(ctx, resource, algorithm, shape, minval, maxval, *, dtype, shape_dtype):
    dims = _output_shape(ctx, shape)
    _int_bounds(ctx, minval, maxval, dims)
    generator, _ = _advance_state(ctx, resource, algorithm, _size(dims) * _RESERVE_MULTIPLE)
    return ctx.xp.asarray(_int_values(ctx, generator, dims, minval, maxval))


@kernel("StatefulUniformFullInt", devices=(CPU,))
def stateful_uniform_full_int(ctx, resource, algorithm, shape, *, dtype, shape_dtype):
    dims = _output_shape(ctx, shape)
    generator, _ = _advance_state(ctx, resource, algorithm, _size(dims) * _RESERVE_MULTIPLE)
    return ctx.xp.asarray(philox.full_int(generator, _size(dims), ctx.out_dtype()).reshape(dims))


@kernel("RngReadAndSkip", devices=(CPU,))
def rng_read_and_skip(ctx, resource, alg, delta):
    _, old = _advance_state(ctx, resource, alg, int(_host(delta)) * _RESERVE_MULTIPLE)
    return ctx.xp.asarray(old[:3])


@kernel("RngSkip", devices=(CPU,))
def rng_skip(ctx, resource, algorithm, delta):
    _advance_state(ctx, resource, algorithm, int(_host(delta)) * _RESERVE_MULTIPLE)
    return ()


# --- multinomial --------------------------------------------------------------------------------

@kernel("Multinomial")
def multinomial(ctx, logits, num_samples, *, seed, seed2, T, output_dtype):
    """TensorFlow's CPU sampler run as one shard (a single-threaded TensorFlow session): one
    stream for all rows, two samples (one uniform double) per draw, row after row; each draw is
    the first class whose cumulative (unnormalised, double) probability exceeds u * total. A
    multi-threaded TensorFlow splits the rows into shards whose streams start elsewhere."""
    if logits.ndim != 2:
        ctx.fail(f"logits should be a matrix, got shape {Shape(logits.shape)}")
    count = int(num_samples)
    if count < 0:
        ctx.fail(f"num_samples should be nonnegative, got {count}")
    batch, classes = logits.shape
    if classes <= 0:
        ctx.fail(f"num_classes should be positive, got {classes}")
    # TensorFlow reserves 256 calls per output, counting doubles as two and rounding up to 4.
    generator = _reserve(ctx, seed, seed2, batch * (-(-count // 4) * 4) * 2)
    if batch * count == 0:
        return ctx.xp.zeros((batch, count), dtype=ctx.out_dtype())
    bits = generator.blocks(-(-batch * count * 2 // 4)).reshape(-1)[:batch * count * 2]
    uniforms = philox.uniform_double_pairs(bits).reshape(batch, count)
    cdf = _row_cdf(_host(logits))
    return ctx.xp.asarray(_sample_rows(cdf, uniforms * cdf[:, -1:]).astype(ctx.out_dtype()))


def _row_cdf(logits: np.ndarray) -> np.ndarray:
    """Per row, the running sum of exp(logit - max) in double over the finite logits (the max
    taken in the logits' own type), as TensorFlow accumulates it."""
    finite = np.isfinite(logits)
    peak = np.max(np.where(finite, logits, np.finfo(np.float64).min).astype(logits.dtype), axis=1, keepdims=True)
    weights = np.where(finite, np.exp(logits.astype(np.float64) - peak.astype(np.float64)), 0.0)
    return np.cumsum(weights, axis=1)


def _sample_rows(cdf: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """Per row, for each target the number of cdf entries <= it (C++'s upper_bound). Row by row:
    shifting rows into one sorted array would round the values being compared."""
    return np.stack([np.searchsorted(row, wanted, side="right") for row, wanted in zip(cdf, targets)])
