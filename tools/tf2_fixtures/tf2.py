"""TensorFlow 2 set up as the TF2 fixtures are recorded: eager by default, v2 control flow and
resource variables, one thread, deterministic kernels, quiet logs.

Every module of the package takes `tf` (and `keras`) from here so the switches are set before
TensorFlow loads. Never import this together with tools/tf_fixtures (which switches TensorFlow
into v1 mode for the whole process)."""
import os

os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"
os.environ["TF_ENABLE_ONEDNN_OPTS"] = "0"  # oneDNN kernels would make float results vary by CPU
os.environ["CUDA_VISIBLE_DEVICES"] = ""    # CPU kernels only, as the v1 fixtures

import tensorflow as tf  # noqa: E402

tf.get_logger().setLevel("ERROR")
tf.config.threading.set_inter_op_parallelism_threads(1)
tf.config.threading.set_intra_op_parallelism_threads(1)
tf.config.experimental.enable_op_determinism()

import keras  # noqa: E402  (Keras 3, shipped with TensorFlow 2.21; runs on the TensorFlow backend)

__all__ = ["tf", "keras"]
