"""The tensor bound at run time, for kernels whose output size comes from input *values*.

Fill's dims, RandomUniform's shape, CropAndResize's crop_size, a Tile's multiples: a few bytes of
input can ask a kernel for terabytes, and numpy would try (or the machine would swap until the
kernel is killed). Such ops are exactly those whose shape function reads an input's value, so
the op registry already knows how big their outputs will be. Before the kernel of such an op
runs, its shape function is evaluated on the actual input shapes and (small) values; an output
beyond `--max-tensor-bytes` fails the step naming the node, before anything is allocated.

Which ops read values is found by probing each op's shape function once with unknown inputs and
watching whether it asks for a value; other ops pay nothing.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes, limits
from ..ops import registry
from ..ops.inference import MAX_VALUE_ELEMENTS, InferenceContext
from ..shapes import Shape, ShapeError
from .kernels.registry import KernelError

_reads_values: dict[str, bool] = {}
# Ops that read values for their output shape, but whose outputs never hold more elements than
# their inputs already do (a reduction's axes, a Reshape's or Slice's target, a TopK's k): no input
# value makes them allocate beyond what the step already holds, so they skip the check (it costs
# about 8 us a call, as much as the kernel of a small Reshape).
_WITHIN_INPUTS = frozenset({
    "All", "Any", "Max", "Min", "Mean", "Prod", "Sum", "EuclideanNorm", "ReduceJoin",
    "Reshape", "ExpandDims", "Squeeze", "Transpose", "ConjugateTranspose", "ReverseV2",
    "Slice", "StridedSlice", "Split", "SplitV", "ConcatV2", "TopKV2",
    "UniqueV2", "UniqueWithCountsV2", "TensorListGetItem", "TensorListStack", "TensorListGather",
    "TensorListSplit"})


class _ValueProbe(InferenceContext):
    """An InferenceContext that notes whether the shape function asked for an input's value."""

    __slots__ = ("asked",)

    def __init__(self, *args):
        super().__init__(*args)
        self.asked = False

    def value(self, i: int):
        self.asked = True
        return super().value(i)

    def partial_value(self, i: int):
        self.asked = True
        return super().partial_value(i)


def sizes_from_values(node) -> bool:
    """Whether `node`'s op computes its output shapes from input values (probed once per op)."""
    op = node.op
    if op in _WITHIN_INPUTS:
        return False
    if op not in _reads_values:
        spec = registry.lookup(op)
        asked = False
        if spec is not None and spec.shape_fn is not None:
            count = len(node.inputs)
            try:
                out_dtypes = list(spec.output_dtypes(node))
            except Exception:   # a malformed type attr: plan compilation reports that elsewhere
                out_dtypes = []
            probe = _ValueProbe(node, [Shape.unknown()] * count, [dtypes.INVALID] * count, [None] * count,
                                [True] * count, out_dtypes)
            try:
                spec.shape_fn(probe)
            except Exception:   # unknown inputs may not satisfy it; what it asked for still counts
                pass
            asked = probe.asked
        _reads_values[op] = asked
    return _reads_values[op]


def bounded(kernel, node):
    """`kernel` wrapped so that outputs beyond the tensor bound are refused before it runs."""
    spec = registry.lookup(node.op)
    out_dtypes = list(spec.output_dtypes(node))

    def checked(ctx, *inputs):
        _check_outputs(node, spec, out_dtypes, inputs)
        return kernel(ctx, *inputs)

    return checked


def _check_outputs(node, spec, out_dtypes, inputs) -> None:
    shapes, kinds, values = [], [], []
    for value in inputs:
        shape = getattr(value, "shape", None)
        shapes.append(Shape(list(shape)) if shape is not None else Shape.unknown())
        kinds.append(_dtype_of(value))
        values.append(_small_host_value(value))
    ctx = InferenceContext(node, shapes, kinds, values, [True] * len(inputs), out_dtypes)
    try:
        result = spec.shape_fn(ctx)
    except (ShapeError, KeyError, ValueError, TypeError, IndexError, ArithmeticError):
        return   # the kernel itself reports what is wrong with its inputs, in its own words
    for index, shape in enumerate([result] if isinstance(result, Shape) else list(result)):
        shape = Shape.of(shape)
        count = shape.num_elements()
        if count is None or index >= len(out_dtypes):
            continue
        itemsize = _itemsize(out_dtypes[index])
        bound = limits.current().max_tensor_bytes
        if count * itemsize > bound:
            # Raised as the kernel's own error: the executor names the node and its inputs.
            raise KernelError(f"output {index} would be {shape} ({limits.describe_bytes(count * itemsize)}), "
                              f"more than the tensor bound of {limits.describe_bytes(bound)} "
                              f"(raise it with --max-tensor-bytes SIZE if this is meant)")


def _small_host_value(value):
    """Integer inputs small enough to be shape arguments, as numpy (others are not needed)."""
    size = getattr(value, "size", None)
    kind = getattr(getattr(value, "dtype", None), "kind", "")
    if size is None or size > MAX_VALUE_ELEMENTS or kind not in "iub":
        return None
    if not isinstance(value, np.ndarray):
        get = getattr(value, "get", None)   # a cupy array: a shape argument is tiny, copy it
        value = get() if get is not None else np.asarray(value)
    return value


def _dtype_of(value):
    try:
        return dtypes.from_numpy(value.dtype)
    except Exception:   # a Python object (a TensorList, a handle): its type does not size anything
        return dtypes.INVALID


def _itemsize(dtype) -> int:
    numpy_type = getattr(getattr(dtype, "base", dtype), "numpy", None)
    if numpy_type is None or np.dtype(numpy_type).kind == "O":
        return 8   # strings, variants, resources: at least a pointer per element
    return np.dtype(numpy_type).itemsize
