"""The TensorFlow fixture generator behind tools/make_tf_fixtures.py (see its docstring).

Infrastructure:
    tf_v1         TensorFlow configured for v1 graphs; every module takes `tf` from here
    registry      Case, REGISTRY and the @case decorator
    builder       Builder (placeholders, fetches, raw ops, extra runs), snake(), flag_suffix()
    recording     run a case in TensorFlow, write its files and manifest.json reproducibly
    layers        LSTM cell, conv and pool helpers shared by the model and gradient cases

Cases, one module per family (importing a module registers its cases):
    models, control_flow (with tensor_array), gradients, multi_device,
    ops_math, ops_array, ops_nn, ops_nn_extra, ops_dtype, ops_tensor_list, ops_linalg (linalg and fft),
    ops_random, ops_image, ops_strings, preprocessing, ops_segment,
    grad_reference (forward-only graphs + tf.gradients values, for `dftool grad`),
    stateful (unfrozen graphs recorded as session runs, under tests/fixtures/tf_stateful)
"""
# Importing a case module registers its cases; --list and a full run follow this order.
from . import models, control_flow, gradients, multi_device  # noqa: F401, I001
from . import ops_math, ops_array, ops_nn, ops_dtype, ops_tensor_list  # noqa: F401, I001
from . import ops_linalg  # noqa: F401, I001
from . import ops_nn_extra  # noqa: F401, I001
from . import ops_random  # noqa: F401, I001
from . import ops_image  # noqa: F401, I001
from . import ops_strings, preprocessing  # noqa: F401, I001
from . import ops_segment  # noqa: F401, I001
from . import grad_reference, stateful  # noqa: F401, I001
from .recording import generate, write_manifest
from .registry import REGISTRY

__all__ = ["REGISTRY", "generate", "write_manifest"]
