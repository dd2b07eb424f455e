"""Random-number cases (family `random`): TensorFlow's Philox streams, compared bit for bit.

Every float output is fetched through a Bitcast (bfloat16 after an exact Cast to float32) to the integer of its width, so the fixture
comparison (exact for integers) checks every bit. Shapes have odd sizes (not multiples of the
4 values one Philox call makes) so the tail of the last call is exercised too.
"""
import numpy as np

from .registry import case
from .tf_v1 import tf

_FLOATS = (tf.float16, tf.bfloat16, tf.float32, tf.float64)
_BITS = {2: tf.int16, 4: tf.int32, 8: tf.int64}


def _fetch_bits(b, tensor, name):
    if tensor.dtype == tf.bfloat16:      # through float32 (exact), as a GPU keeps bfloat16 on the host
        tensor = tf.cast(tensor, tf.float32)
    b.fetch(tf.bitcast(tensor, _BITS[tensor.dtype.size], name=name))


@case("op_random_stateless_v2", "random",
      "StatelessRandomGetKeyCounter(Alg)/GetAlg and the V2 stateless ops (uniform, normal, "
      "truncated normal in half/bfloat16/float/double; uniform int and full int in every CPU "
      "dtype), with a seed fed as int64 and as int32 (negative words), odd shapes, an empty shape "
      "and an explicit key/counter with a counter near 2**64 (the carry into the high word).")
def op_random_stateless_v2(b):
    seed = b.placeholder("seed", np.array([12345, -987], np.int64))
    seed32 = b.placeholder("seed32", np.array([7, -3], np.int32))
    key, counter = b.raw("StatelessRandomGetKeyCounter", "key_counter", seed=seed)
    key32, counter32, alg = b.raw("StatelessRandomGetKeyCounterAlg", "key_counter_alg", seed=seed32)
    b.raw("StatelessRandomGetAlg", "get_alg")
    near_wrap = tf.constant(np.array([2**64 - 3, 41], np.uint64), name="counter_near_wrap")
    for dtype in _FLOATS:
        for op, shape in (("StatelessRandomUniformV2", [3, 7]), ("StatelessRandomNormalV2", [1001]),
                          ("StatelessTruncatedNormalV2", [5, 201])):
            name = f"{op[9:].lower()}_{dtype.name}"
            tensor = getattr(tf.raw_ops, op)(shape=shape, key=key, counter=counter, alg=1, dtype=dtype,
                                             name=name)
            _fetch_bits(b, tensor, f"{name}_bits")
        tensor = tf.raw_ops.StatelessRandomNormalV2(shape=[2, 9], key=key32, counter=counter32, alg=alg,
                                                    dtype=dtype, name=f"normal_seed32_{dtype.name}")
        _fetch_bits(b, tensor, f"normal_seed32_{dtype.name}_bits")
        tensor = tf.raw_ops.StatelessTruncatedNormalV2(shape=[13], key=key, counter=near_wrap, alg=3,
                                                       dtype=dtype, name=f"truncated_wrap_{dtype.name}")
        _fetch_bits(b, tensor, f"truncated_wrap_{dtype.name}_bits")
    empty = tf.raw_ops.StatelessRandomNormalV2(shape=[0, 3], key=key, counter=counter, alg=1,
                                               name="normal_empty")
    b.fetch(empty)
    for dtype, low, high in ((tf.int32, -5, 1000003), (tf.int64, -(2**40), 2**62 + 7)):
        b.raw("StatelessRandomUniformIntV2", f"uniform_int_{dtype.name}", shape=tf.constant([101], tf.int64),
              key=key, counter=counter, alg=1, minval=tf.constant(low, dtype), maxval=tf.constant(high, dtype))
    for dtype in (tf.int32, tf.int64, tf.uint32, tf.uint64):
        b.raw("StatelessRandomUniformFullIntV2", f"full_int_{dtype.name}", shape=[3, 11], key=key,
              counter=counter, alg=1, dtype=dtype)
    b.skip("StatelessRandomUniformIntV2", "uint32/uint64 have no CPU kernel in TensorFlow")


@case("op_random_stateless_v1", "random",
      "The v1 stateless ops, whose seed input is scrambled into a Philox key and counter: uniform, "
      "normal and truncated normal in every float dtype, uniform int in int32/int64, full int in "
      "every dtype, int32 and int64 seeds.")
def op_random_stateless_v1(b):

    seed = b.placeholder("seed", np.array([-1, 2**40 + 3], np.int64))
    seed32 = b.placeholder("seed32", np.array([99, -100], np.int32))
    for dtype in _FLOATS:
        for op, shape, which in (("StatelessRandomUniform", [7, 3], seed), ("StatelessRandomNormal", [257], seed32),
                                 ("StatelessTruncatedNormal", [3, 131], seed)):
            name = f"{op[9:].lower()}_{dtype.name}"
            _fetch_bits(b, getattr(tf.raw_ops, op)(shape=shape, seed=which, dtype=dtype, name=name), f"{name}_bits")
    for dtype, low, high in ((tf.int32, 0, 10), (tf.int64, -7, 2**33)):
        b.raw("StatelessRandomUniformInt", f"uniform_int_{dtype.name}", shape=[5, 5], seed=seed,
              minval=tf.constant(low, dtype), maxval=tf.constant(high, dtype))
    for dtype in (tf.int32, tf.int64, tf.uint32, tf.uint64):
        b.raw("StatelessRandomUniformFullInt", f"full_int_{dtype.name}", shape=[9], seed=seed32, dtype=dtype)


@case("op_random_stateful", "random",
      "The stateful random ops seeded by attrs (seed, seed2), as tf.random.set_seed plus an op "
      "seed make them: uniform, standard normal and truncated normal in every float dtype, uniform "
      "int; one run (each run of a stateful node moves its generator on, see the training tests).")
def op_random_stateful(b):
    for index, dtype in enumerate(_FLOATS):
        for op, shape in (("RandomUniform", [3, 5]), ("RandomStandardNormal", [11]), ("TruncatedNormal", [2, 9])):
            name = f"{op.lower()}_{dtype.name}"
            tensor = getattr(tf.raw_ops, op)(shape=shape, dtype=dtype, seed=87654321 + index, seed2=-5 - index,
                                             name=name)
            _fetch_bits(b, tensor, f"{name}_bits")
    for dtype in (tf.int32, tf.int64):
        b.raw("RandomUniformInt", f"uniform_int_{dtype.name}", shape=[17], seed=3, seed2=2**40,
              minval=tf.constant(-9, dtype), maxval=tf.constant(1000, dtype))
