"""Freezing Keras models the way TF2 users do: a concrete function of `model(x, training=False)`
through `convert_variables_to_constants_v2`, with control flow lowered to v1 frames
(`lower_control_flow=True`) or kept functional (`False`: While/If plus a function library)."""
import numpy as np
from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2

from .recording import Artifact
from .tf2 import tf

FUNCTIONAL_LOOPS = {"While", "StatelessWhile"}


def weight_const(graph_def, variable):
    """The name ("node:0") of the Const that freezing made of `variable` (matched by value)."""
    value = variable.numpy()
    matches = [node.name for node in graph_def.node if node.op == "Const"
               and tf.make_ndarray(node.attr["value"].tensor).shape == value.shape
               and np.array_equal(tf.make_ndarray(node.attr["value"].tensor), value)]
    if len(matches) != 1:
        raise ValueError(f"{variable.path}: {len(matches)} Consts hold its value: {matches}")
    return f"{matches[0]}:0"


def frozen_keras_artifact(model, x_value, *, lower, weight=None, info=None):
    """`model` frozen at input `x_value` (placeholder "x", its exact shape).

    Expected grads: tf.GradientTape of the sum of the model's output w.r.t. x and, if given,
    the variable `weight` (recorded under the name of the Const it became)."""
    spec = tf.TensorSpec(x_value.shape, tf.as_dtype(x_value.dtype), name="x")
    concrete = tf.function(lambda x: model(x, training=False)).get_concrete_function(spec)
    frozen = convert_variables_to_constants_v2(concrete, lower_control_flow=lower)
    graph_def = frozen.graph.as_graph_def()
    ops = {node.op for node in graph_def.node}
    if lower and (ops & FUNCTIONAL_LOOPS or graph_def.library.function):
        raise ValueError(f"lower_control_flow=True left {sorted(ops & FUNCTIONAL_LOOPS)}")
    if not lower and "Enter" in ops:
        raise ValueError("lower_control_flow=False made v1 loop frames")
    (x_name,) = [t.name for t in frozen.inputs]
    fetches = [t.name for t in frozen.outputs]
    assert x_name == "x:0", x_name
    x = tf.constant(x_value)
    watched = [x] + ([weight] if weight is not None else [])
    with tf.GradientTape() as tape:
        tape.watch(x)
        outputs = tf.nest.flatten(model(x, training=False))
        target = tf.add_n([tf.reduce_sum(out) for out in outputs])
    grads = tape.gradient(target, watched)
    xs = [x_name] + ([weight_const(graph_def, weight)] if weight is not None else [])
    if len(fetches) != 1:
        raise ValueError("one output expected (the gradient is of the sum of the output)")
    return Artifact(graph_def, {x_name: x_value}, fetches,
                    reference={fetches[0]: outputs[0].numpy()},
                    grad_y=fetches[0], grad_xs=xs,
                    grads={name: tf.convert_to_tensor(g).numpy() for name, g in zip(xs, grads)},
                    info={"lowered": lower, **(info or {})})
