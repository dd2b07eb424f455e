"""TensorFlow's Philox4x32-10 streams and distributions, in vectorised numpy (uint32 arithmetic).

Facts carried over from TensorFlow (philox_random.h, random_distributions.h, stateless ops):
- A generator is a 64-bit key (two uint32 words) and a 128-bit counter (four words, word 0 lowest).
  One call maps (counter, key) through 10 rounds to four uint32 samples, then adds 1 to the
  counter; "skip n" adds n. Calls are independent, so we compute many counters at once.
- Seeded from (seed, seed2) (the stateful ops' attrs): key = seed's two halves, counter words 2..3 =
  seed2's halves. Stateless ops scramble their 2-element seed with one Philox call under a fixed key
  (TensorFlow's GenerateKey); StatelessRandomGetKeyCounter returns that key and counter.
- Fixed-sample distributions fill output group g (its kResultElementCount values) from call g.
  Truncated normal uses a variable number of samples: group g starts at call g * K * 256 / 4 and
  reads samples one at a time until K values lie in (-2, 2).
- Uniform floats put random bits in the mantissa of a number in [1, 2) and subtract 1; normals are
  Box-Muller on pairs of such uniforms in the output's float type (float for half/bfloat16), with
  u1 clamped to at least 1e-7.
"""
from __future__ import annotations

from collections.abc import Sequence

import ml_dtypes
import numpy as np

from .libm import float_function

_M0, _M1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
_W0, _W1 = np.uint32(0x9E3779B9), np.uint32(0xBB67AE85)
_MASK32 = np.uint64(0xFFFFFFFF)
# TensorFlow's fixed key for scrambling a stateless seed into a key and counter.
_SEED_SCRAMBLE_KEY = (0x3EC8F720, 0x02461E29)
# Calls a variable-sample distribution may use per output (TensorFlow's kReservedSamplesPerOutput).
RESERVED_SAMPLES_PER_OUTPUT = 256


class Philox:
    """A Philox4x32-10 generator position: key (k0, k1) and counter as four uint32 words."""

    def __init__(self, key: Sequence[int], counter: Sequence[int]):
        """`key`: 2 and `counter`: 4 uint32 words (taken modulo 2**32)."""
        self.key = tuple(int(k) & 0xFFFFFFFF for k in key)
        self.counter = tuple(int(c) & 0xFFFFFFFF for c in counter)

    @classmethod
    def from_seeds(cls, seed: int, seed2: int) -> "Philox":
        """TensorFlow's PhiloxRandom(seed_lo, seed_hi), what the stateful ops' attrs make."""
        seed, seed2 = seed & 0xFFFFFFFFFFFFFFFF, seed2 & 0xFFFFFFFFFFFFFFFF
        return cls((seed, seed >> 32), (0, 0, seed2, seed2 >> 32))

    @classmethod
    def from_key_counter(cls, key: int, counter: tuple[int, int]) -> "Philox":
        """The uint64 key and counter words of the V2 stateless ops."""
        low, high = counter
        return cls((key, key >> 32), (low, low >> 32, high, high >> 32))

    @classmethod
    def from_stateless_seed(cls, seed0: int, seed1: int) -> "Philox":
        """The key/counter a stateless op derives from its seed input (TensorFlow's GenerateKey)."""
        seed0, seed1 = seed0 & 0xFFFFFFFFFFFFFFFF, seed1 & 0xFFFFFFFFFFFFFFFF
        scramble = cls(_SEED_SCRAMBLE_KEY, (seed0, seed0 >> 32, seed1, seed1 >> 32))
        mixed = [int(word) for word in scramble.blocks(1)[0]]
        return cls((mixed[0], mixed[1]), (0, 0, mixed[2], mixed[3]))

    def key_counter_words(self) -> tuple[int, tuple[int, int]]:
        """(key, (counter_low, counter_high)) as the uint64 words the V2 ops exchange."""
        c = self.counter
        return self.key[0] | self.key[1] << 32, (c[0] | c[1] << 32, c[2] | c[3] << 32)

    def skipped(self, count: int) -> "Philox":
        """This generator advanced by `count` calls (128-bit counter arithmetic)."""
        value = sum(word << (32 * i) for i, word in enumerate(self.counter)) + int(count)
        value &= (1 << 128) - 1
        return Philox(self.key, tuple((value >> (32 * i)) & 0xFFFFFFFF for i in range(4)))

    def blocks(self, count: int, start: int = 0) -> np.ndarray:
        """Samples of calls start .. start+count-1: a [count, 4] uint32 array."""
        return self.blocks_at(np.arange(start, start + count, dtype=np.uint64))

    def blocks_at(self, offsets: np.ndarray) -> np.ndarray:
        """Samples of the calls at the given offsets from this counter: [len(offsets), 4] uint32."""
        offsets = np.asarray(offsets, dtype=np.uint64)
        c0 = np.uint64(self.counter[0]) + (offsets & _MASK32)
        c1 = np.uint64(self.counter[1]) + (offsets >> np.uint64(32)) + (c0 >> np.uint64(32))
        c2 = np.uint64(self.counter[2]) + (c1 >> np.uint64(32))
        c3 = np.uint64(self.counter[3]) + (c2 >> np.uint64(32))
        words = [(c & _MASK32).astype(np.uint32) for c in (c0, c1, c2, c3)]
        k0, k1 = np.uint32(self.key[0]), np.uint32(self.key[1])
        with np.errstate(over="ignore"):
            for round_index in range(10):
                if round_index:
                    k0, k1 = k0 + _W0, k1 + _W1
                p0 = _M0 * words[0].astype(np.uint64)
                p1 = _M1 * words[2].astype(np.uint64)
                hi0, lo0 = (p0 >> np.uint64(32)).astype(np.uint32), (p0 & _MASK32).astype(np.uint32)
                hi1, lo1 = (p1 >> np.uint64(32)).astype(np.uint32), (p1 & _MASK32).astype(np.uint32)
                words = [hi1 ^ words[1] ^ k0, lo1, hi0 ^ words[3] ^ k1, lo0]
        return np.stack(words, axis=-1)


# --- bits to values -----------------------------------------------------------------------------

def _uniform_from_bits(bits: np.ndarray, dtype) -> np.ndarray:
    """[0, 1) in dtype from one uint32 per value (float, half, bfloat16)."""
    dtype = np.dtype(dtype)
    if dtype == np.float32:
        return ((bits & np.uint32(0x7FFFFF)) | np.uint32(0x3F800000)).view(np.float32) - np.float32(1)
    if dtype == np.float16:
        halves = ((bits & np.uint32(0x3FF)) | np.uint32(15 << 10)).astype(np.uint16).view(np.float16)
        return halves - np.float16(1)
    if dtype == ml_dtypes.bfloat16:
        shorts = ((bits & np.uint32(0x7F)) | np.uint32(127 << 7)).astype(np.uint16).view(ml_dtypes.bfloat16)
        return (shorts.astype(np.float32) - np.float32(1)).astype(ml_dtypes.bfloat16)
    raise TypeError(dtype)


def _uniform_double(high_bits: np.ndarray, low_bits: np.ndarray) -> np.ndarray:
    """[0, 1) in double from two uint32 per value: 20 mantissa bits from the first, 32 from the second."""
    mantissa = (high_bits & np.uint32(0xFFFFF)).astype(np.uint64) << np.uint64(32) | low_bits.astype(np.uint64)
    return (mantissa | np.uint64(1023 << 52)).view(np.float64) - 1.0


def uniform_double_pairs(bits: np.ndarray) -> np.ndarray:
    """One uniform double per pair of consecutive uint32 samples (TensorFlow's RandDouble)."""
    return _uniform_double(bits[0::2], bits[1::2])


def _box_muller_float(x0: np.ndarray, x1: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Two standard normals in float32 from pairs of uint32, as TensorFlow's BoxMullerFloat (its
    float log/sin/cos are the C library's: libm.py)."""
    u1 = np.maximum(_uniform_from_bits(x0, np.float32), np.float32(1e-7))
    # TensorFlow writes 2.0f * M_PI * u: the product is taken in double, then stored as float.
    v1 = (2 * np.pi * _uniform_from_bits(x1, np.float32).astype(np.float64)).astype(np.float32)
    u2 = np.sqrt(np.float32(-2.0) * float_function("logf", u1))
    return float_function("sinf", v1) * u2, float_function("cosf", v1) * u2


def _box_muller_double(x0, x1, x2, x3) -> tuple[np.ndarray, np.ndarray]:
    u1 = np.maximum(_uniform_double(x0, x1), 1e-7)
    v1 = 2 * np.pi * _uniform_double(x2, x3)
    u2 = np.sqrt(-2.0 * np.log(u1))
    return np.sin(v1) * u2, np.cos(v1) * u2


def _calls(count: int, per_call: int) -> int:
    return -(-count // per_call)


def uniform(gen: Philox, count: int, dtype) -> np.ndarray:
    """`count` uniforms in [0, 1) of a float dtype, flat."""
    dtype = np.dtype(dtype)
    if dtype == np.float64:
        blocks = gen.blocks(_calls(count, 2))
        return np.stack([_uniform_double(blocks[:, 0], blocks[:, 1]),
                         _uniform_double(blocks[:, 2], blocks[:, 3])], axis=1).reshape(-1)[:count]
    return _uniform_from_bits(gen.blocks(_calls(count, 4)), dtype).reshape(-1)[:count]


def _normal_pairs(blocks: np.ndarray, dtype) -> np.ndarray:
    """Per call, its normals in order: [calls, 4] in float32 (for float/half/bfloat16) or [calls, 2]
    in double."""
    if np.dtype(dtype) == np.float64:
        return np.stack(_box_muller_double(*(blocks[:, i] for i in range(4))), axis=1)
    a0, a1 = _box_muller_float(blocks[:, 0], blocks[:, 1])
    b0, b1 = _box_muller_float(blocks[:, 2], blocks[:, 3])
    return np.stack([a0, a1, b0, b1], axis=1)


def normal(gen: Philox, count: int, dtype) -> np.ndarray:
    """`count` standard normals, flat; half and bfloat16 are rounded from float32."""
    per_call = 2 if np.dtype(dtype) == np.float64 else 4
    return _normal_pairs(gen.blocks(_calls(count, per_call)), dtype).reshape(-1)[:count].astype(dtype)


def truncated_normal(gen: Philox, count: int, dtype) -> np.ndarray:
    """`count` standard normals in (-2, 2), flat, by TensorFlow's per-group rejection sampling:
    group g (K values, K = 4, or 2 for double) reads calls from g * K * 64 on, pair by pair,
    keeping the values of magnitude under 2 in order."""
    per_call = 2 if np.dtype(dtype) == np.float64 else 4
    groups = _calls(count, per_call)
    stride = per_call * RESERVED_SAMPLES_PER_OUTPUT // 4
    result = np.zeros((groups, per_call), np.float64 if per_call == 2 else np.float32)
    filled = np.zeros(groups, np.int64)
    pending = np.arange(groups, dtype=np.int64)
    batch, start = 1, 0       # one call per round: most groups need just one (0.954**4 of them)
    while pending.size:
        offsets = (pending[:, None] * stride + start + np.arange(batch)[None, :]).astype(np.uint64)
        candidates = _normal_pairs(gen.blocks_at(offsets.reshape(-1)), dtype).reshape(pending.size, -1)
        for column in range(candidates.shape[1]):
            values = candidates[:, column]
            keep = (np.abs(values) < 2.0) & (filled[pending] < per_call)
            rows = pending[keep]
            result[rows, filled[rows]] = values[keep]
            filled[rows] += 1
        pending = pending[filled[pending] < per_call]
        start += batch
    return result.reshape(-1)[:count].astype(dtype)


def uniform_int(gen: Philox, count: int, dtype, low: int, high: int) -> np.ndarray:
    """Integers in [low, high): low + bits % (high - low), 32 bits per value for 32-bit types and
    64 (two samples, low word first) for 64-bit ones, as TensorFlow's UniformDistribution."""
    bits = _full_int_bits(gen, count, dtype)
    span = (high - low) & (0xFFFFFFFF if bits.dtype == np.uint32 else 0xFFFFFFFFFFFFFFFF)
    offsets = bits % bits.dtype.type(span)
    with np.errstate(over="ignore"):
        return (offsets + bits.dtype.type(low & (0xFFFFFFFF if bits.dtype == np.uint32
                                                 else 0xFFFFFFFFFFFFFFFF))).view(dtype)


def _full_int_bits(gen: Philox, count: int, dtype) -> np.ndarray:
    if np.dtype(dtype).itemsize == 4:
        return gen.blocks(_calls(count, 4)).reshape(-1)[:count]
    blocks = gen.blocks(_calls(count, 2)).astype(np.uint64)
    words = blocks[:, 0::2] | blocks[:, 1::2] << np.uint64(32)
    return words.reshape(-1)[:count]


def full_int(gen: Philox, count: int, dtype) -> np.ndarray:
    """Every bit pattern of an integer dtype equally likely."""
    return _full_int_bits(gen, count, dtype).view(dtype)
