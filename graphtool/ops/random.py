"""The stateless random ops of TensorFlow's V2 RNG API and the v1 stateless ops beyond uniform and
normal (those two, and the stateful random ops, are registered with the state family).

V2 ops take the generator as data: a uint64 key [1], a uint64 counter [2] and an int32 algorithm
(1 Philox, 2 ThreeFry, 3 auto-select), which StatelessRandomGetKeyCounter(Alg) derive from a seed.
None is stateful but StatelessRandomGetAlg (TensorFlow marks it so: its value depends on the device).
The Stateful*/Rng* ops of tf.random.Generator draw from the same streams, their key and counter kept
in a resource variable.
"""
from __future__ import annotations

from ..shapes import Shape
from .inference import InferenceContext, scalar
from .registry import register
from .state import _FLOAT_DTYPES, _INDEX_DTYPES, _random_shape, _stateless_random_shape
from .tensor_array import vector_of_length

_FULL_INT_DTYPES = "{int32, int64, uint32, uint64}"


def _v2_random_shape(ctx: InferenceContext) -> Shape:
    vector_of_length(ctx, 1, 1, "key")
    ctx.with_rank(2, 1)
    ctx.with_rank(3, 0)
    return _random_shape(ctx)


def _v2_random_int_shape(ctx: InferenceContext) -> Shape:
    ctx.with_rank(4, 0)
    ctx.with_rank(5, 0)
    return _v2_random_shape(ctx)


def _stateless_int_shape(ctx: InferenceContext) -> Shape:
    ctx.with_rank(2, 0)
    ctx.with_rank(3, 0)
    return _stateless_random_shape(ctx)


def _key_counter_shapes(ctx: InferenceContext):
    vector_of_length(ctx, 0, 2, "seed")
    return [Shape([1]), Shape([2])]


_V2_INPUTS = ["shape: Tshape", "key: uint64", "counter: uint64", "alg: int32"]
_V2_SHAPE_ATTR = f"Tshape: {_INDEX_DTYPES} = DT_INT32"

for _name in ("StatelessRandomUniformV2", "StatelessRandomNormalV2", "StatelessTruncatedNormalV2"):
    register(_name, inputs=_V2_INPUTS, outputs=["output: dtype"],
             attrs=[f"dtype: {_FLOAT_DTYPES} = DT_FLOAT", _V2_SHAPE_ATTR], shape=_v2_random_shape)
register("StatelessRandomUniformIntV2", inputs=[*_V2_INPUTS, "minval: dtype", "maxval: dtype"],
         outputs=["output: dtype"], attrs=[f"dtype: {_FULL_INT_DTYPES}", _V2_SHAPE_ATTR],
         shape=_v2_random_int_shape)
register("StatelessRandomUniformFullIntV2", inputs=_V2_INPUTS, outputs=["output: dtype"],
         attrs=[f"dtype: {_FULL_INT_DTYPES} = DT_UINT64", _V2_SHAPE_ATTR], shape=_v2_random_shape)

register("StatelessRandomGetKeyCounter", inputs=["seed: Tseed"], outputs=["key: uint64", "counter: uint64"],
         attrs=[f"Tseed: {_INDEX_DTYPES} = DT_INT64"], shape=_key_counter_shapes)
register("StatelessRandomGetKeyCounterAlg", inputs=["seed: Tseed"],
         outputs=["key: uint64", "counter: uint64", "alg: int32"],
         attrs=[f"Tseed: {_INDEX_DTYPES} = DT_INT64"],
         shape=lambda ctx: [*_key_counter_shapes(ctx), Shape.scalar()])
register("StatelessRandomGetAlg", outputs=["alg: int32"], shape=scalar, stateful=True)

# v1 stateless ops: the seed input is scrambled into a Philox key and counter on every call.
register("StatelessTruncatedNormal", inputs=["shape: T", "seed: Tseed"], outputs=["output: dtype"],
         attrs=[f"dtype: {_FLOAT_DTYPES} = DT_FLOAT", f"T: {_INDEX_DTYPES} = DT_INT32",
                f"Tseed: {_INDEX_DTYPES} = DT_INT64"], shape=_stateless_random_shape)
register("StatelessRandomUniformInt", inputs=["shape: T", "seed: Tseed", "minval: dtype", "maxval: dtype"],
         outputs=["output: dtype"],
         attrs=[f"dtype: {_INDEX_DTYPES}", f"T: {_INDEX_DTYPES}", f"Tseed: {_INDEX_DTYPES} = DT_INT64"],
         shape=_stateless_int_shape)
register("StatelessRandomUniformFullInt", inputs=["shape: T", "seed: Tseed"], outputs=["output: dtype"],
         attrs=[f"dtype: {_FULL_INT_DTYPES} = DT_UINT64", f"T: {_INDEX_DTYPES} = DT_INT32",
                f"Tseed: {_FULL_INT_DTYPES} = DT_INT64"], shape=_stateless_random_shape)


# TF2's tf.random.Generator: the state is a resource variable (int64 [3] for Philox: counter low,
# counter high, key) that each op reads and moves on.
def _stateful_v2_shape(ctx: InferenceContext) -> Shape:
    ctx.with_rank(1, 0)
    ctx.with_rank(2, 1)
    return ctx.shape_from_tensor(2)


def _stateful_v2_int_shape(ctx: InferenceContext) -> Shape:
    ctx.with_rank(3, 0)
    ctx.with_rank(4, 0)
    return _stateful_v2_shape(ctx)


_STATE_INPUTS = ["resource: resource", "algorithm: int64", "shape: shape_dtype"]
for _name, _default in (("StatefulUniform", "DT_FLOAT"), ("StatefulStandardNormalV2", "DT_FLOAT"),
                        ("StatefulTruncatedNormal", "DT_FLOAT"), ("StatefulUniformFullInt", "DT_UINT64")):
    register(_name, inputs=_STATE_INPUTS, outputs=["output: dtype"],
             attrs=[f"dtype: type = {_default}", "shape_dtype: type = DT_INT64"], shape=_stateful_v2_shape,
             stateful=True)
register("StatefulUniformInt", inputs=[*_STATE_INPUTS, "minval: dtype", "maxval: dtype"], outputs=["output: dtype"],
         attrs=["dtype: type = DT_INT64", "shape_dtype: type = DT_INT64"], shape=_stateful_v2_int_shape,
         stateful=True)
register("RngReadAndSkip", inputs=["resource: resource", "alg: int32", "delta: uint64"], outputs=["value: int64"],
         shape=lambda ctx: Shape([3]), stateful=True)
register("RngSkip", inputs=["resource: resource", "algorithm: int64", "delta: int64"], shape=lambda ctx: [],
         stateful=True)
