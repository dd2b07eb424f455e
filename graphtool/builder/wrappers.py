"""Short names for common ops: each is a thin wrapper over GraphBuilder.op with the op's usual
attrs as keyword arguments. Anything not here is one `b.op("OpName", [inputs], **attrs)` away.

Default node names are the op type (as `b.op` gives them); pass `name=` to choose another.
Inputs may be tensors or python/numpy values (which become Consts of the matching dtype).
"""
from __future__ import annotations

from .. import dtypes
from ..shapes import Shape
from .core import BuilderCore


def _spatial(value, data_format: str) -> list[int]:
    """An int or 2-list of window sizes/strides as the 4-list the op wants for `data_format`."""
    if isinstance(value, int):
        value = [value, value]
    value = list(value)
    if len(value) == 4:
        return value
    return [1, 1, *value] if data_format == "NCHW" else [1, *value, 1]


class OpWrappers(BuilderCore):
    """Convenience methods mixed into GraphBuilder."""

    # --- sources --------------------------------------------------------------------------------
    def placeholder(self, dtype, shape=None, name: str = "Placeholder"):
        """A value fed at run time; `shape` may have None dims, or be None for an unknown rank.

            x = b.placeholder("float32", [None, 16], name="x")
        """
        return self.op("Placeholder", [], name=name, dtype=dtypes.as_dtype(dtype), shape=Shape.of(shape))

    def zeros(self, shape, dtype="float32", name: str = "zeros"):
        return self.const(0, dtypes.as_dtype(dtype), shape=shape, name=name)

    def no_op(self, name: str = "NoOp"):
        """A node without outputs, useful as a control dependency; returns the Node."""
        return self.op("NoOp", [], name=name)

    # --- element-wise ---------------------------------------------------------------------------
    def identity(self, x, name: str = "Identity"):
        return self.op("Identity", [x], name=name)

    def add(self, x, y, name: str = "AddV2"):
        return self.op("AddV2", [x, y], name=name)

    def sub(self, x, y, name: str = "Sub"):
        return self.op("Sub", [x, y], name=name)

    def mul(self, x, y, name: str = "Mul"):
        return self.op("Mul", [x, y], name=name)

    def div(self, x, y, name: str = "RealDiv"):
        return self.op("RealDiv", [x, y], name=name)

    def maximum(self, x, y, name: str = "Maximum"):
        return self.op("Maximum", [x, y], name=name)

    def less(self, x, y, name: str = "Less"):
        return self.op("Less", [x, y], name=name)

    def greater(self, x, y, name: str = "Greater"):
        return self.op("Greater", [x, y], name=name)

    def relu(self, x, name: str = "Relu"):
        return self.op("Relu", [x], name=name)

    def tanh(self, x, name: str = "Tanh"):
        return self.op("Tanh", [x], name=name)

    def sigmoid(self, x, name: str = "Sigmoid"):
        return self.op("Sigmoid", [x], name=name)

    def softmax(self, logits, name: str = "Softmax"):
        return self.op("Softmax", [logits], name=name)

    def cast(self, x, dtype, name: str = "Cast"):
        return self.op("Cast", [x], name=name, DstT=dtypes.as_dtype(dtype))

    # --- linear algebra and nn ------------------------------------------------------------------
    def matmul(self, a, b, transpose_a: bool = False, transpose_b: bool = False, name: str = "MatMul"):
        """a @ b for matrices.

            logits = b.matmul(x, w)          # [?,16] @ [16,10] -> [?,10]
        """
        return self.op("MatMul", [a, b], name=name, transpose_a=transpose_a, transpose_b=transpose_b)

    def bias_add(self, value, bias, data_format: str = "NHWC", name: str = "BiasAdd"):
        return self.op("BiasAdd", [value, bias], name=name, data_format=data_format)

    def conv2d(self, input, filter, strides=1, padding: str = "SAME", data_format: str = "NHWC",
               dilations=1, name: str = "Conv2D"):
        """2-D convolution; `strides`/`dilations` are an int, a [h, w] pair or the full 4-list.

            y = b.conv2d(images, kernel, strides=2, padding="VALID")
        """
        return self.op("Conv2D", [input, filter], name=name, strides=_spatial(strides, data_format),
                       padding=padding, data_format=data_format, dilations=_spatial(dilations, data_format))

    def max_pool(self, value, ksize, strides, padding: str = "VALID", data_format: str = "NHWC",
                 name: str = "MaxPool"):
        return self.op("MaxPool", [value], name=name, ksize=_spatial(ksize, data_format),
                       strides=_spatial(strides, data_format), padding=padding, data_format=data_format)

    def avg_pool(self, value, ksize, strides, padding: str = "VALID", data_format: str = "NHWC",
                 name: str = "AvgPool"):
        return self.op("AvgPool", [value], name=name, ksize=_spatial(ksize, data_format),
                       strides=_spatial(strides, data_format), padding=padding, data_format=data_format)

    def fused_batch_norm(self, x, scale, offset, mean, variance, epsilon: float = 0.001,
                         data_format: str = "NHWC", is_training: bool = False, name: str = "FusedBatchNormV3"):
        """FusedBatchNormV3; returns its six outputs (y first). With is_training False (the
        default here), `mean` and `variance` are the moving statistics (inference)."""
        return self.op("FusedBatchNormV3", [x, scale, offset, mean, variance], name=name, epsilon=epsilon,
                       data_format=data_format, is_training=is_training)

    # --- shapes ---------------------------------------------------------------------------------
    def reshape(self, tensor, shape, name: str = "Reshape"):
        """`shape` is a list (-1 for the one inferred dim) or an int32 tensor."""
        return self.op("Reshape", [tensor, shape], name=name)

    def shape_of(self, x, out_type="int32", name: str = "Shape"):
        return self.op("Shape", [x], name=name, out_type=dtypes.as_dtype(out_type))

    def expand_dims(self, x, axis: int, name: str = "ExpandDims"):
        return self.op("ExpandDims", [x, axis], name=name)

    def squeeze(self, x, axis=(), name: str = "Squeeze"):
        return self.op("Squeeze", [x], name=name, squeeze_dims=list(axis))

    def concat(self, values, axis: int, name: str = "concat"):
        return self.op("ConcatV2", [list(values), axis], name=name)

    def stack(self, values, axis: int = 0, name: str = "stack"):
        return self.op("Pack", [list(values)], name=name, axis=axis)

    def reduce_sum(self, x, axis, keep_dims: bool = False, name: str = "Sum"):
        return self.op("Sum", [x, axis], name=name, keep_dims=keep_dims)

    def reduce_mean(self, x, axis, keep_dims: bool = False, name: str = "Mean"):
        return self.op("Mean", [x, axis], name=name, keep_dims=keep_dims)

    def range(self, start, limit, delta=1, name: str = "range"):
        return self.op("Range", [start, limit, delta], name=name)
