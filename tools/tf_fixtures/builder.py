"""`Builder`: what a case function uses to make inputs, fetches and extra runs; naming helpers."""
import re

import numpy as np

from .tf_v1 import tf


def snake(op_type):
    """'AddV2' -> 'add_v2', 'DivNoNan' -> 'div_no_nan'."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", op_type).lower()


def flag_suffix(**flags):
    """'_<flag>' for every true flag, in order: flag_suffix(ta=True, tb=False) -> '_ta'."""
    return "".join(f"_{flag}" for flag, on in flags.items() if on)


def _tf_dtype(array):
    return tf.string if array.dtype.kind in "SO" else tf.as_dtype(array.dtype)


def _check_name(op, name):
    if op.name != name:
        raise ValueError(f"name {name!r} is taken; TensorFlow made {op.name!r}")


class Builder:
    """What a case builder uses to make inputs, outputs and runs (inside the case's graph)."""

    def __init__(self, rng):
        self.rng = rng
        self.feeds = {}          # "x:0" -> value
        self.fetches = []        # "probs:0", in creation order
        self.variants = {}       # run label -> {"x:0": value}
        self.skipped = []        # {"op", "reason"}
        self.cpu_devices = 1
        self.grad_y = None       # "loss:0": the tensor tf.gradients differentiates, if any
        self.grad_xs = []        # ["w:0", ...]: what it is differentiated with respect to
        self.session_runs = []   # (label, targets, fetches): a stateful case's runs, in order

    # -- random values -------------------------------------------------------------------
    def normal(self, *shape, scale=1.0, dtype=np.float32):
        return (self.rng.standard_normal(shape) * scale).astype(dtype)

    def uniform(self, low, high, *shape, dtype=np.float32):
        return self.rng.uniform(low, high, shape).astype(dtype)

    def integers(self, low, high, *shape, dtype=np.int32):
        return self.rng.integers(low, high, shape).astype(dtype)

    # -- graph pieces --------------------------------------------------------------------
    def placeholder(self, name, value, shape="exact"):
        """A Placeholder fed with `value`; `shape` defaults to the value's full shape."""
        value = np.asarray(value)
        tensor = tf.placeholder(_tf_dtype(value), value.shape if shape == "exact" else shape,
                                name=name)
        _check_name(tensor.op, name)
        self.feeds[tensor.name] = value
        return tensor

    def variable(self, name, value):
        """A reference variable (VariableV2) initialized to `value`; the case gets frozen."""
        var = tf.Variable(np.asarray(value), name=name, use_resource=False)
        _check_name(var.op, name)
        return var

    def fetch(self, tensor, name=None):
        """Fetch `tensor`; with `name`, through an Identity of that name unless it already is."""
        if tensor is None:
            raise ValueError(f"fetch {name!r} is None (no gradient path?)")
        if name is not None and tensor.op.name != name:
            tensor = tf.identity(tensor, name=name)
            _check_name(tensor.op, name)
        self.fetches.append(tensor.name)
        return tensor

    def raw(self, op_type, name, take=None, **args):
        """Create one `tf.raw_ops.<op_type>` node named `name` and fetch its outputs (or those at
        the indices in `take`). Returns its only output, or the list of outputs."""
        getattr(tf.raw_ops, op_type)(name=name, **args)
        op = tf.get_default_graph().get_operation_by_name(name)
        assert op.type == op_type, (op.type, op_type)
        for index in range(len(op.outputs)) if take is None else take:
            self.fetch(op.outputs[index])
        return op.outputs[0] if len(op.outputs) == 1 else list(op.outputs)

    def differentiate(self, y, xs):
        """Record TensorFlow's tf.gradients(y, xs) as data, keeping the GraphDef forward-only.

        `y` is fetched; the gradients are added only after graph.pb has been exported (see
        recording.run_graph), so they are values in expected_grads.npz, not nodes."""
        if self.grad_y is not None:
            raise ValueError("a case differentiates one y")
        self.grad_y = self.fetch(y).name
        self.grad_xs = [x.name for x in xs]

    def variant(self, label, **feeds):
        """Another run of the same graph, replacing the feeds of the named placeholders."""
        self.variants[label] = {f"{name}:0": np.asarray(value, self.feeds[f"{name}:0"].dtype)
                                for name, value in feeds.items()}

    def session_run(self, label, targets=(), fetches=()):
        """One run of a stateful case's session (stateful.py): node names to run, tensors to fetch."""
        self.session_runs.append((label, list(targets), list(fetches)))

    def skip(self, op_type, reason):
        """Record an op variant the case leaves out because TensorFlow cannot run it."""
        self.skipped.append({"op": op_type, "reason": reason})
