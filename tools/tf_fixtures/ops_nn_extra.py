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
