"""TF2 `tf.function` graphs (family `tf_function`): concrete-function GraphDefs exactly as
`tf.function(f).get_concrete_function(...).graph.as_graph_def()` gives them, with functional
control flow (StatelessWhile/While, StatelessIf/If, Case), calls (PartitionedCall,
StatefulPartitionedCall) and a FunctionDefLibrary. They hold no variables; weights are Consts.
Fetches are the concrete function's outputs (`Identity:0`, `Identity_1:0`, ...)."""
import numpy as np

from .recording import Artifact, function_artifact
from .registry import case
from .tf2 import tf

FAMILY = "tf_function"


def _recurrent_loop(rng, trips):
    """x [4] through `n` steps of h = tanh(w h + 0.1 i), summing |h|^2; n fed as `trips`."""
    w_value = rng.standard_normal((4, 4)).astype(np.float32) * 0.4

    def f(x, n, w):
        def body(i, h, s):
            h = tf.tanh(tf.linalg.matvec(w, h) + 0.1 * tf.cast(i, tf.float32))
            return i + 1, h, s + tf.reduce_sum(h * h)

        _, h, s = tf.while_loop(lambda i, h, s: i < n, body, [tf.constant(0), x, tf.constant(0.0)],
                                parallel_iterations=4)
        return {"h": h, "s": s}

    feeds = {"x:0": rng.standard_normal(4).astype(np.float32), "n:0": np.int32(trips)}
    return function_artifact(f, feeds, weights={"w:0": w_value}, y=0,
                             info={"loop_trips": trips})


@case("tf2_while", FAMILY,
      "tf.while_loop (StatelessWhile, parallel_iterations=4) over a loop counter and two float "
      "carries, trip count fed (6); a weight Const `w` used in the body.")
def tf2_while(rng):
    return _recurrent_loop(rng, 6)


@case("tf2_while_no_trips", FAMILY,
      "The tf2_while graph fed a trip count of 0: the body never runs, the loop passes its "
      "initial values through (the gradient w.r.t. x is all ones, w.r.t. w all zeros).")
def tf2_while_no_trips(rng):
    return _recurrent_loop(rng, 0)


@case("tf2_cond", FAMILY,
      "Two tf.cond on data-dependent predicates, one taking each branch: a StatelessIf and an "
      "If (one branch holds a stateful CheckNumerics); the branches use different ops.")
def tf2_cond(rng):
    def branchy(v, checked):
        def small():
            m = tf.reduce_mean(tf.reshape(v, [2, 3]), axis=0, keepdims=True)
            return m * tf.ones([2, 3]) + tf.sin(tf.reshape(v, [2, 3]))

        def big():
            out = tf.nn.softplus(v) * 2.0
            return tf.debugging.check_numerics(out, "softplus") if checked else out

        return tf.cond(tf.reduce_sum(v) > 0.0, big, small)

    def f(x, z):
        a = branchy(tf.reshape(x, [2, 3]), checked=True)
        b = branchy(tf.reshape(z, [2, 3]), checked=False)
        return {"a": a, "b": b, "total": tf.reduce_sum(a) + tf.reduce_sum(b * b)}

    x = np.abs(rng.standard_normal(6)).astype(np.float32)
    z = -np.abs(rng.standard_normal(6)).astype(np.float32)
    return function_artifact(f, {"x:0": x, "z:0": z}, y=2)


@case("tf2_switch_case", FAMILY,
      "tf.switch_case with three branches selected by a fed int32 index, called with index and "
      "(index + 1) % 3 (StatelessCase, two different branches run) and once more with a "
      "stateful CheckNumerics in the branches (Case).")
def tf2_switch_case(rng):
    def f(x, k):
        branches = [lambda: tf.nn.relu(x) + 1.0,
                    lambda: tf.reverse(x, [0]) * x,
                    lambda: tf.math.cumsum(tf.exp(-x * x))]
        a = tf.switch_case(k, branches)
        b = tf.switch_case((k + 1) % 3, branches)
        c = tf.switch_case(k, [lambda fn=fn: tf.debugging.check_numerics(fn(), "branch")
                               for fn in branches])
        return {"a": a, "b": b, "c": c}

    feeds = {"x:0": rng.standard_normal(5).astype(np.float32), "k:0": np.int32(1)}
    return function_artifact(f, feeds, y=1)


@case("tf2_nested_calls", FAMILY,
      "Nested tf.functions: f calls g (PartitionedCall) which calls h twice; g also calls a "
      "function holding a tf.debugging.assert (StatefulPartitionedCall). Weight Const `w`.")
def tf2_nested_calls(rng):
    w_value = rng.standard_normal((3, 5)).astype(np.float32) * 0.5

    @tf.function
    def h(v):
        return tf.nn.sigmoid(v) * v

    @tf.function
    def checked(v):
        tf.debugging.assert_all_finite(v, "not finite")
        with tf.control_dependencies([tf.debugging.assert_rank(v, 2)]):
            return tf.identity(v) - 0.25

    @tf.function
    def g(v, w):
        return h(tf.matmul(v, w)) + checked(h(v @ w * 0.5))

    def f(x, w):
        y = g(x, w)
        return {"y": y, "mean": tf.reduce_mean(y, axis=1)}

    return function_artifact(f, {"x:0": rng.standard_normal((2, 3)).astype(np.float32)},
                             weights={"w:0": w_value}, y=1)


@case("tf2_map_fn", FAMILY,
      "tf.map_fn (parallel_iterations=4) over the rows of a matrix: a While loop reading and "
      "writing a TensorArray (TensorListFromTensor / GetItem / SetItem / Stack in TF2).")
def tf2_map_fn(rng):
    def f(x):
        rows = tf.map_fn(lambda r: tf.reduce_sum(tf.tanh(r) * r) + r * 0.5, x,
                         parallel_iterations=4)
        return {"rows": rows}

    return function_artifact(f, {"x:0": rng.standard_normal((5, 3)).astype(np.float32)}, y=0)


@case("tf2_while_calls_function", FAMILY,
      "A tf.while_loop (parallel_iterations=3) whose body calls another tf.function holding a "
      "stateful CheckNumerics (While, StatefulPartitionedCall inside the body); trip count fed.")
def tf2_while_calls_function(rng):
    u_value = rng.standard_normal((3, 3)).astype(np.float32) * 0.5

    @tf.function
    def step(h, u):
        return tf.debugging.check_numerics(tf.nn.elu(tf.matmul(h, u)), "step") + h * 0.5

    def f(x, n, u):
        _, h = tf.while_loop(lambda i, h: i < n, lambda i, h: (i + 1, step(h, u)),
                             [tf.constant(0), x], parallel_iterations=3)
        return {"h": h}

    feeds = {"x:0": rng.standard_normal((2, 3)).astype(np.float32), "n:0": np.int32(4)}
    return function_artifact(f, feeds, weights={"u:0": u_value}, y=0)


@case("tf2_nested_while", FAMILY,
      "A while loop whose body runs another while loop and a cond (While inside While, If "
      "inside the outer body); parallel_iterations=2 on both loops.")
def tf2_nested_while(rng):
    def f(x, n):
        def outer(i, v):
            _, v = tf.while_loop(lambda j, v: j < i + 1,
                                 lambda j, v: (j + 1, v * 0.9 + tf.sin(v)),
                                 [tf.constant(0), v], parallel_iterations=2)
            v = tf.cond(i % 2 == 0, lambda: v + 1.0, lambda: v * v * 0.5)
            return i + 1, v

        _, v = tf.while_loop(lambda i, v: i < n, outer, [tf.constant(0), x],
                             parallel_iterations=2)
        return {"v": v}

    feeds = {"x:0": rng.standard_normal(4).astype(np.float32) * 0.5, "n:0": np.int32(3)}
    return function_artifact(f, feeds, y=0)


@case("tf2_symbolic_gradient", FAMILY,
      "tf.gradients (graph mode) of a graph calling a stateless tf.function: TensorFlow "
      "differentiates the PartitionedCall with a SymbolicGradient node; fetches the forward "
      "output and the gradient. No recorded gradients (the graph already is one).")
def tf2_symbolic_gradient(rng):
    @tf.function
    def g(v):
        return tf.tanh(v) * v + tf.square(v)

    x_value = rng.standard_normal((2, 3)).astype(np.float32)
    forward = tf.Graph()
    with forward.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [2, 3], name="x")
        tf.identity(g(x), name="y")
    graph = tf.Graph()  # re-imported: no Python gradient function, so SymbolicGradient
    with graph.as_default():
        tf.graph_util.import_graph_def(forward.as_graph_def(), name="")
        (dx,) = tf.compat.v1.gradients(graph.get_tensor_by_name("y:0"),
                                       [graph.get_tensor_by_name("x:0")])
        tf.identity(dx, name="dx")
    ops = {op.type for op in graph.get_operations()}
    assert {"SymbolicGradient", "PartitionedCall"} <= ops, ops
    reference = {"y:0": (np.tanh(x_value) * x_value + x_value ** 2),
                 "dx:0": (1 - np.tanh(x_value) ** 2) * x_value + np.tanh(x_value) + 2 * x_value}
    return Artifact(graph.as_graph_def(), {"x:0": x_value}, ["y:0", "dx:0"], reference=reference)
