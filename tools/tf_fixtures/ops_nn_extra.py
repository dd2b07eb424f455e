"""Single-op nn cases for the ops real graphs add to the common set (family `nn`): the inverse
normal functions, space/depth/batch rearrangements and fake quantization. Cases that call
b.differentiate also record TensorFlow's tf.gradients as data."""
import numpy as np

from .registry import case
from .tf_v1 import tf



def _float_and_double(b, op_type, name, x):
    """The op on x (float32) and on x in float64: the only types TensorFlow's CPU registers."""
    b.raw(op_type, name, x=x)
    b.raw(op_type, f"{name}_f64", x=tf.cast(x, tf.float64))
    b.skip(op_type, "float16 and bfloat16 have no CPU kernel in TensorFlow")


@case("op_nn_inverse_normal", "nn",
      "Erfinv and Ndtri in float32/float64: 0, tiny arguments (where TensorFlow "
      "rounds x/2 + 1/2 first), the tails, +-1 and 0/1 (infinities), out of range and NaN; "
      "tf.gradients of both.", rtol=1e-4, atol=1e-5)
def op_nn_inverse_normal(b):
    x = b.placeholder("x", np.array([0.0, 1e-7, -1e-6, 1e-3, 0.3, -0.5, 0.9, 0.999, -0.9999, 1.0, -1.0,
                                     1.5, -2.0, np.nan], np.float32))
    p = b.placeholder("p", np.array([0.0, 1e-30, 1e-7, 0.01, 0.02425, 0.3, 0.5, 0.5000001, 0.9, 0.97575,
                                     0.9999999, 1.0, 1.5, -0.1, np.nan], np.float32))
    _float_and_double(b, "Erfinv", "erfinv", x)
    _float_and_double(b, "Ndtri", "ndtri", p)
    b.raw("Erfinv", "erfinv_empty", x=b.placeholder("x_empty", np.zeros((0, 3), np.float32)))
    gx = b.placeholder("grad_x", b.uniform(-0.95, 0.95, 2, 3))
    gp = b.placeholder("grad_p", b.uniform(0.02, 0.98, 2, 3))
    loss = tf.reduce_sum(tf.math.erfinv(gx) * tf.math.ndtri(gp), name="loss")
    b.differentiate(loss, [gx, gp])


@case("op_nn_space_depth", "nn",
      "SpaceToDepth/DepthToSpace (block 2 and 3, NHWC, int32/uint8/float64/bool too, an empty "
      "batch), SpaceToBatchND/BatchToSpaceND (1-D and 2-D blocks with paddings and crops, trailing "
      "dims, int64 index types, float16 and int8 data); tf.gradients through all four.",
      rtol=1e-6, atol=1e-6)
def op_nn_space_depth(b):
    image = b.placeholder("image", b.normal(2, 4, 6, 3))
    for block in (2, 3):
        source = image if block == 2 else b.placeholder("image_b3", b.normal(1, 6, 3, 2))
        b.raw("SpaceToDepth", f"space_to_depth_b{block}", input=source, block_size=block)
        deep = b.placeholder(f"deep_b{block}", b.normal(1, 2, 3, 4 * block * block))
        b.raw("DepthToSpace", f"depth_to_space_b{block}", input=deep, block_size=block)
    for suffix, dtype in (("i32", tf.int32), ("u8", tf.uint8), ("f64", tf.float64), ("bool", tf.bool)):
        b.raw("SpaceToDepth", f"space_to_depth_{suffix}", input=tf.cast(tf.abs(image) * 10, dtype), block_size=2)
    b.raw("DepthToSpace", "depth_to_space_i32", input=tf.cast(b.placeholder("deep_i", b.normal(1, 2, 2, 8)),
                                                              tf.int32), block_size=2)
    b.raw("SpaceToDepth", "space_to_depth_empty", input=b.placeholder("empty", np.zeros((0, 4, 4, 2), np.float32)),
          block_size=2)

    volume = b.placeholder("volume", b.normal(2, 5, 4, 3))
    b.raw("SpaceToBatchND", "space_to_batch_2d", input=volume, block_shape=[2, 2], paddings=[[1, 0], [0, 2]])
    b.raw("SpaceToBatchND", "space_to_batch_1d", input=volume, block_shape=[3], paddings=[[0, 1]])
    b.raw("SpaceToBatchND", "space_to_batch_i64", input=tf.cast(volume, tf.float16),
          block_shape=tf.constant([2], tf.int64), paddings=tf.constant([[1, 2]], tf.int64))
    b.raw("SpaceToBatchND", "space_to_batch_int8", input=tf.cast(volume * 10, tf.int8), block_shape=[1, 2],
          paddings=[[0, 0], [0, 0]])
    batched = b.placeholder("batched", b.normal(8, 2, 3, 2))
    b.raw("BatchToSpaceND", "batch_to_space_2d", input=batched, block_shape=[2, 2], crops=[[1, 0], [0, 2]])
    b.raw("BatchToSpaceND", "batch_to_space_1d", input=batched, block_shape=[4], crops=[[0, 3]])
    b.raw("BatchToSpaceND", "batch_to_space_i64", input=tf.cast(batched, tf.int32),
          block_shape=tf.constant([2, 1], tf.int64), crops=tf.constant([[0, 0], [1, 1]], tf.int64))

    gx = b.placeholder("grad_x", b.normal(1, 4, 4, 2))
    weights = tf.constant(b.normal(4, 2, 2, 2))
    moved = tf.raw_ops.SpaceToBatchND(input=tf.raw_ops.DepthToSpace(
        input=tf.raw_ops.SpaceToDepth(input=gx, block_size=2), block_size=2),
        block_shape=[2, 2], paddings=[[0, 0], [0, 0]])
    back = tf.raw_ops.BatchToSpaceND(input=moved * weights, block_shape=[2, 1], crops=[[1, 1], [0, 0]])
    b.differentiate(tf.reduce_sum(back * back, name="loss"), [gx])
