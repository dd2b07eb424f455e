"""Kernels that parse serialized tf.Example protos (ParseExampleV2, ParseSingleExample),
computed on the host.

Per feature key and example the values are one of the Example's lists (bytes, float or int64);
a feature that is absent, or present without any list set, counts as missing. Outputs:
- dense: batch + dense_shape, each example's values reshaped; a missing feature takes the
  default (an empty default makes it required). A variable-length dense feature (shape [-1, ...])
  is padded with its default to the batch's longest;
- sparse: COO indices [n, batch rank + 1], values [n], dense shape [batch..., max count];
- ragged: values [n] and row splits [batch + 1] (ragged_split_types).
"""
from __future__ import annotations

import math

import numpy as np

from ...proto import example_pb2
from .gpu_host_memory import host_kernel
from .registry import KernelContext

_KINDS = {"float32": "float_list", "int64": "int64_list", "string": "bytes_list"}
_KIND_NAMES = {"float_list": "float", "int64_list": "int64", "bytes_list": "string"}


def _as_bytes(value) -> bytes:
    return value.encode() if isinstance(value, str) else bytes(value)


def _parse(ctx, serialized: list, names: list) -> list:
    examples = []
    for i, data in enumerate(serialized):
        try:
            examples.append(example_pb2.Example.FromString(_as_bytes(data)))
        except Exception:
            where = f" (name: {_as_bytes(names[i]).decode('utf-8', 'replace')})" if names else ""
            ctx.fail(f"Could not parse example input, value: '{_as_bytes(data)[:40]!r}'{where}")
    return examples


def _values(ctx, example, key: str, dtype, index: int) -> list | None:
    """The example's values of feature `key` as a Python list, or None when it is missing."""
    features = example.features.feature
    if key not in features:
        return None
    feature = features[key]
    kind = feature.WhichOneof("kind")
    if kind is None:
        return None
    wanted = _KINDS[dtype.name]
    if kind != wanted:
        ctx.fail(f"Name: <unknown>, Key: {key}, Index: {index}.  Data types don't match. "
                 f"Data type: {_KIND_NAMES[kind]} Expected type: {_KIND_NAMES[wanted]}")
    return list(getattr(feature, kind).value)


def _array(values: list, dtype, shape=None) -> np.ndarray:
    out = np.empty(len(values), dtype=dtype.numpy)
    out[:] = values
    return out if shape is None else out.reshape(shape)


def _dense(ctx: KernelContext, examples, key: str, default, dtype, shape, batch_shape, index_of_key: int) -> np.ndarray:
    dims = list(shape.dims)
    variable = bool(dims) and dims[0] is None
    if variable and default.size != 1:
        ctx.fail(f"dense_shape[{index_of_key}] is a variable length shape: {shape}, therefore def_value[{index_of_key}] "
                 f"must contain a single element (the padding element).  But its shape is: {list(default.shape)}")
    inner = math.prod(dims[1:] if variable else dims)
    rows = []
    for index, example in enumerate(examples):
        values = _values(ctx, example, key, dtype, index)
        if values is None:
            if variable:
                values = []
            elif default.size == 0:
                ctx.fail(f"Name: <unknown>, Feature: {key} (data type: {dtype.name}) is required but could "
                         f"not be found.")
            else:
                values = default.reshape(-1).tolist()
        elif variable and inner and len(values) % inner:
            ctx.fail(f"Name: <unknown>, Key: {key}, Index: {index}.  Number of {_KIND_NAMES[_KINDS[dtype.name]]} "
                     f"values is not a multiple of stride length. Saw {len(values)} values but output shape is: "
                     f"{shape}")
        elif not variable and len(values) != inner:
            ctx.fail(f"Name: <unknown>, Key: {key}, Index: {index}.  Number of {_KIND_NAMES[_KINDS[dtype.name]]} "
                     f"values != expected.  Values size: {len(values)} but output shape: {shape}")
        rows.append(values)
    if not variable:
        flat = [value for row in rows for value in row]
        return _array(flat, dtype, (*batch_shape, *dims))
    longest = max((len(row) // inner for row in rows), default=0) if inner else 0
    pad = default.reshape(-1).tolist()[0]
    padded = [value for row in rows for value in row + [pad] * (longest * inner - len(row))]
    return _array(padded, dtype, (*batch_shape, longest, *dims[1:]))


def _sparse(ctx, examples, key: str, dtype, scalar: bool):
    indices: list[tuple[int, ...]] = []
    values: list = []
    longest = 0
    for index, example in enumerate(examples):
        found = _values(ctx, example, key, dtype, index) or []
        indices.extend(((j,) if scalar else (index, j)) for j in range(len(found)))
        values.extend(found)
        longest = max(longest, len(found))
    rank = 1 if scalar else 2
    shape = [longest] if scalar else [len(examples), longest]
    return (np.array(indices, dtype=np.int64).reshape(-1, rank), _array(values, dtype),
            np.array(shape, dtype=np.int64))


def _ragged(ctx, examples, key: str, dtype, split_dtype, scalar: bool):
    values, splits = [], [0]
    for index, example in enumerate(examples):
        found = _values(ctx, example, key, dtype, index) or []
        values.extend(found)
        splits.append(len(values))
    return _array(values, dtype), np.array([] if scalar else splits, dtype=split_dtype.numpy)


def _keys(tensor) -> list[str]:
    return [_as_bytes(k).decode("utf-8", "surrogateescape") for k in np.asarray(tensor, dtype=object).reshape(-1).tolist()]


def parse_examples(ctx, serialized, names, sparse_keys, sparse_types, dense_keys, dense_types, dense_defaults,
                   dense_shapes, ragged_keys=(), ragged_types=(), ragged_split_types=()):
    """Every output of ParseExampleV2, in its order."""
    if serialized.ndim > 1:
        ctx.fail(f"Expected serialized to be a scalar or vector, got shape: {serialized.shape}")
    scalar = serialized.ndim == 0
    examples = _parse(ctx, serialized.reshape(-1).tolist(), np.asarray(names, dtype=object).reshape(-1).tolist())
    batch_shape = () if scalar else (len(examples),)
    if len(dense_defaults) != len(dense_keys) or len(dense_shapes) != len(dense_keys):
        ctx.fail(f"Expected len(dense_defaults) == len(dense_keys) but got: {len(dense_defaults)} vs. "
                 f"{len(dense_keys)}")
    sparse = [_sparse(ctx, examples, key, dtype, scalar) for key, dtype in zip(sparse_keys, sparse_types)]
    dense = [_dense(ctx, examples, key, default, dtype, shape, batch_shape, i)
             for i, (key, dtype, default, shape) in enumerate(zip(dense_keys, dense_types, dense_defaults, dense_shapes))]
    ragged = [_ragged(ctx, examples, key, dtype, split, scalar)
              for key, dtype, split in zip(ragged_keys, ragged_types, ragged_split_types)]
    return (*[s[0] for s in sparse], *[s[1] for s in sparse], *[s[2] for s in sparse], *dense,
            *[r[0] for r in ragged], *[r[1] for r in ragged])


@host_kernel("ParseExampleV2")
def parse_example_v2(ctx, serialized, names, sparse_keys, dense_keys, ragged_keys, *dense_defaults, Tdense,
                     num_sparse, sparse_types, ragged_value_types, ragged_split_types, dense_shapes):
    sparse_names, dense_names, ragged_names = _keys(sparse_keys), _keys(dense_keys), _keys(ragged_keys)
    if len(sparse_names) != num_sparse:
        ctx.fail(f"Expected len(sparse_keys) == num_sparse but got: {len(sparse_names)} vs. {num_sparse}")
    if len(ragged_names) != len(ragged_value_types):
        ctx.fail(f"Expected len(ragged_keys) == len(ragged_value_types) but got: {len(ragged_names)} vs. "
                 f"{len(ragged_value_types)}")
    return parse_examples(ctx, serialized, names, sparse_names, sparse_types, dense_names, Tdense, dense_defaults,
                          dense_shapes, ragged_names, ragged_value_types, ragged_split_types)


@host_kernel("ParseSingleExample")
def parse_single_example(ctx, serialized, *dense_defaults, num_sparse, sparse_keys, dense_keys, sparse_types,
                         Tdense, dense_shapes):
    if serialized.ndim != 0:
        ctx.fail(f"Expected serialized to be a scalar, got shape: {serialized.shape}")
    return parse_examples(ctx, serialized, np.empty(0, dtype=object), list(sparse_keys), sparse_types,
                          list(dense_keys), Tdense, dense_defaults, dense_shapes)
