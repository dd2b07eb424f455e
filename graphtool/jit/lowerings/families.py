"""Imports every family module of lowerings (each registers itself on import)."""
from . import array, array_index, conv, math, nn, nn_train, pool, pool_grad, reduce, segment, space  # noqa: F401
from . import control_flow  # noqa: F401
from . import tensor_list  # noqa: F401
