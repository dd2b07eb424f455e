"""Record TF1 training graphs made with tf.compat.v1.train optimizers, and the values of every
variable after each training step, for tests/test_training_fixtures.py.

    python tools/make_training_fixtures.py        # with TensorFlow installed (e.g. a TF venv)

Per case, tests/fixtures/training/<case>/ holds graph.pb (unfrozen: variables, their initializer
`init`, the update op `train`, and `read_<i>` Identity nodes reading every variable, slots too),
case.json (steps, fetches) and expected.npz (`step<k>/<fetch>`: values after k runs of `train`).
Ref-variable and resource-variable versions of each optimizer; optimizers with sparse updates
also train an embedding table through tf.gather (duplicate ids), so their Sparse* ops run.
Single-threaded session, fixed inputs: re-running gives the same files.
"""
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

tf1 = tf.compat.v1
tf1.disable_eager_execution()
ROOT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "training"
STEPS = 4

OPTIMIZERS = {
    "sgd": (lambda: tf1.train.GradientDescentOptimizer(0.1), False),
    "momentum": (lambda: tf1.train.MomentumOptimizer(0.05, 0.9), True),
    "nesterov": (lambda: tf1.train.MomentumOptimizer(0.05, 0.9, use_nesterov=True), True),
    "adam": (lambda: tf1.train.AdamOptimizer(0.01), False),
    "adagrad": (lambda: tf1.train.AdagradOptimizer(0.1), True),
    "adadelta": (lambda: tf1.train.AdadeltaOptimizer(1.0, rho=0.9), True),
    "rmsprop": (lambda: tf1.train.RMSPropOptimizer(0.01, momentum=0.5), True),
    "rmsprop_centered": (lambda: tf1.train.RMSPropOptimizer(0.01, momentum=0.5, centered=True), True),
    "ftrl": (lambda: tf1.train.FtrlOptimizer(0.1, l1_regularization_strength=0.01,
                                             l2_regularization_strength=0.02), True),
    "ftrl_shrinkage": (lambda: tf1.train.FtrlOptimizer(0.1, learning_rate_power=-0.75,
                                                       l2_shrinkage_regularization_strength=0.03), True),
    "proximal_adagrad": (lambda: tf1.train.ProximalAdagradOptimizer(0.1, l1_regularization_strength=0.001), True),
}


def build(make_optimizer, sparse, resource):
    rng = np.random.default_rng(13)
    x = tf.constant(rng.normal(size=(7, 5)).astype(np.float32), name="x")
    target = tf.constant(rng.normal(size=(7, 3)).astype(np.float32), name="target")
    w = tf1.get_variable("w", initializer=rng.normal(size=(5, 3)).astype(np.float32), use_resource=resource)
    b = tf1.get_variable("b", initializer=np.full(3, 0.1, np.float32), use_resource=resource)
    y = tf.matmul(x, w) + b
    if sparse:
        table = tf1.get_variable("table", initializer=rng.normal(size=(6, 3)).astype(np.float32),
                                 use_resource=resource)
        ids = tf.constant([4, 0, 4, 2, 1, 4, 0], name="ids")
        y = y + tf.gather(table, ids)
    loss = tf.reduce_mean(tf.square(y - target))
    train = make_optimizer().minimize(loss, name="train")
    init = tf1.global_variables_initializer()
    assert init.name == "init", init.name
    reads = [tf.identity(v, name=f"read_{i}") for i, v in enumerate(tf1.global_variables())]
    return train, reads, [v.op.name for v in tf1.global_variables()]


# Single update ops on fixed gradients (no gradient graph, so the update alone is compared, bit for
# bit): optimizer -> (slots, scalar inputs with values, bool attrs).
UPDATES = {
    "GradientDescent": ([], {"alpha": 0.1}, {}),
    "ProximalGradientDescent": ([], {"alpha": 0.1, "l1": 0.05, "l2": 0.02}, {}),
    "Adadelta": (["accum", "accum_update"], {"lr": 1.0, "rho": 0.9, "epsilon": 1e-6}, {}),
    "Adagrad": (["accum"], {"lr": 0.1}, {}),
    "AdagradV2": (["accum"], {"lr": 0.1, "epsilon": 1e-7}, {}),
    "ProximalAdagrad": (["accum"], {"lr": 0.1, "l1": 0.01, "l2": 0.02}, {}),
    "Ftrl": (["accum", "linear"], {"lr": 0.1, "l1": 0.01, "l2": 0.02, "lr_power": -0.5}, {}),
    "FtrlV2": (["accum", "linear"], {"lr": 0.1, "l1": 0.01, "l2": 0.02, "l2_shrinkage": 0.03, "lr_power": -0.75},
               {"multiply_linear_by_lr": True}),
    "Momentum": (["accum"], {"lr": 0.05, "momentum": 0.9}, {"use_nesterov": True}),
    "KerasMomentum": (["accum"], {"lr": 0.05, "momentum": 0.9}, {}),
    "Adam": (["m", "v"], {"beta1_power": 0.9, "beta2_power": 0.999, "lr": 0.01, "beta1": 0.9, "beta2": 0.999,
                          "epsilon": 1e-7}, {}),
    "AdaMax": (["m", "v"], {"beta1_power": 0.9, "lr": 0.01, "beta1": 0.9, "beta2": 0.999, "epsilon": 1e-7}, {}),
    "RMSProp": (["ms", "mom"], {"lr": 0.01, "rho": 0.9, "momentum": 0.5, "epsilon": 1e-7}, {}),
    "CenteredRMSProp": (["mg", "ms", "mom"], {"lr": 0.01, "rho": 0.9, "momentum": 0.5, "epsilon": 1e-7}, {}),
    "AddSign": (["m"], {"lr": 0.1, "alpha": 1.0, "sign_decay": 0.9, "beta": 0.9}, {}),
    "PowerSign": (["m"], {"lr": 0.1, "logbase": 0.5, "sign_decay": 0.9, "beta": 0.9}, {}),
}
SPARSE = {"ProximalGradientDescent", "Adadelta", "Adagrad", "AdagradV2", "ProximalAdagrad", "Ftrl", "FtrlV2",
          "Momentum", "KerasMomentum", "RMSProp", "CenteredRMSProp"}


def build_update(optimizer, resource, sparse, dtype=np.float32):
    """var and slots [6, 5], a fixed gradient (rows for indices with duplicates when sparse), and
    the raw update op as `train`."""
    slots, scalars, flags = UPDATES[optimizer]
    rng = np.random.default_rng(len(optimizer))
    variables = {}
    for slot in ["var", *slots]:
        value = rng.normal(size=(6, 5))
        if slot in ("accum", "ms", "v", "accum_update"):
            value = np.abs(value) + 0.1     # accumulators of squares are positive
        value = value.astype(dtype)
        variables[slot] = tf1.get_variable(slot, initializer=value, use_resource=resource)
    args = {slot: (variables[slot].handle if resource else variables[slot]) for slot in variables}
    args.update({key: tf.constant(value, dtype, name=key) for key, value in scalars.items()})
    grad_name = "delta" if optimizer in ("GradientDescent", "ProximalGradientDescent") and not sparse else "grad"
    indices = np.array([3, 0, 3, 5, 3, 1], np.int32)
    grad = rng.normal(size=(len(indices) if sparse else 6, 5)).astype(dtype)
    args[grad_name] = tf.constant(grad, name="grad")
    if sparse:
        args["indices"] = tf.constant(indices, name="indices")
    prefix = ("Resource" if resource else "") + ("SparseApply" if sparse else "Apply")
    op = getattr(tf.raw_ops, prefix + optimizer)(**args, **flags, name="train")
    op = op if isinstance(op, tf.Operation) else op.op
    tf1.global_variables_initializer()
    reads = [tf.identity(v, name=f"read_{i}") for i, v in enumerate(variables.values())]
    return op, reads, [v.op.name for v in variables.values()]


def update_cases():
    for optimizer in UPDATES:
        for sparse in (False, True) if optimizer in SPARSE else (False,):
            for resource in (False, True):
                if optimizer == "KerasMomentum" and not resource:
                    continue              # resource forms only
                case = f"update_{optimizer}_{'sparse_' if sparse else ''}{'resource' if resource else 'ref'}"
                yield case, optimizer, resource, sparse, lambda o=optimizer, r=resource, s=sparse: build_update(o, r, s)
    # other dtypes TensorFlow registers for the CPU, on a few optimizers (ref variables)
    for optimizer, sparse in (("GradientDescent", False), ("Momentum", True), ("Adam", False), ("RMSProp", False),
                              ("Ftrl", True), ("AdagradV2", False)):
        for dtype in (np.float16, np.float64):
            case = f"update_{optimizer}_{'sparse_' if sparse else ''}{np.dtype(dtype).name}_ref"
            yield case, optimizer, False, sparse, lambda o=optimizer, s=sparse, d=dtype: build_update(o, False, s, d)


def build_random_runs():
    """Stateful random ops seeded like tf.random.set_seed + op seeds: each run of `train` assigns
    fresh draws to variables, so the reads show TensorFlow's n-th draw of each node (its
    generator moves on by 256 Philox calls per output value per run)."""
    tf1.set_random_seed(1234)
    draws = {
        "uniform": tf1.random_uniform([3, 101], seed=1),
        "normal_f64": tf1.random_normal([7], dtype=tf.float64, seed=2),
        "truncated": tf1.truncated_normal([1030], seed=3),
        "ints": tf1.random_uniform([5], minval=-3, maxval=2**40, dtype=tf.int64, seed=4),
        "normal_f16": tf1.random_normal([9], dtype=tf.float16),       # graph seed only
        "categorical": tf.random.categorical(
            tf.constant([[0.5, -1.0, 2.0, -np.inf, 0.0], [1.0, 1.0, 1.0, 1.0, 3.0], [-2.0, 0.1, 0.2, 0.3, 0.4]]),
            num_samples=11, seed=5),
    }
    variables = {name: tf1.get_variable(f"v_{name}", initializer=tf.zeros_like(draw), use_resource=False)
                 for name, draw in draws.items()}
    train = tf.group(*[variables[name].assign(draw) for name, draw in draws.items()], name="train")
    tf1.global_variables_initializer()
    reads = [tf.identity(v, name=f"read_{i}") for i, v in enumerate(variables.values())]
    return train, reads, [v.op.name for v in variables.values()]


def build_generator_runs():
    """tf.random.Generator's ops on a Philox state variable, chained by control dependencies (they
    share the state): each run of `train` draws the next values and moves the state on."""
    from tensorflow.python.ops import gen_stateful_random_ops as ops

    state = tf1.get_variable("rng_state", initializer=np.array([5, 2**40, 77], np.int64), use_resource=True)
    draws, previous = {}, []
    for name, make in (
            ("uniform", lambda: ops.stateful_uniform(state.handle, 1, [3, 101], dtype=tf.float32)),
            ("normal_f64", lambda: ops.stateful_standard_normal_v2(state.handle, 1, [7], dtype=tf.float64)),
            ("truncated_f16", lambda: ops.stateful_truncated_normal(state.handle, 1, [41], dtype=tf.float16)),
            ("ints", lambda: ops.stateful_uniform_int(state.handle, 1, [9], tf.constant(-3, tf.int64),
                                                      tf.constant(2**40, tf.int64))),
            ("full_u32", lambda: ops.stateful_uniform_full_int(state.handle, 1, [5], dtype=tf.uint32)),
            ("read_and_skip", lambda: ops.rng_read_and_skip(state.handle, 1, tf.constant(3, tf.uint64)))):
        with tf.control_dependencies(previous):
            draws[name] = make()
        previous = [draws[name]]
    with tf.control_dependencies(previous):
        skip = ops.rng_skip(state.handle, 1, tf.constant(2, tf.int64))
    variables = {name: tf1.get_variable(f"v_{name}", initializer=tf.zeros_like(draw), use_resource=False)
                 for name, draw in draws.items()}
    train = tf.group(skip, *[variables[name].assign(draw) for name, draw in draws.items()], name="train")
    tf1.global_variables_initializer()
    reads = [tf.identity(v, name=f"read_{i}") for i, v in enumerate([state, *variables.values()])]
    return train, reads, [v.op.name for v in [state, *variables.values()]]


def main():
    graph = tf.Graph()
    with graph.as_default():
        record(graph, "random_generator_runs", "random", True, False, *build_generator_runs(), exact=True)
    graph = tf.Graph()
    with graph.as_default():
        record(graph, "random_stateful_runs", "random", False, False, *build_random_runs(), exact=True)
    for case, optimizer, resource, sparse, make in update_cases():
        graph = tf.Graph()
        with graph.as_default():
            train, reads, variables = make()
            record(graph, case, optimizer, resource, sparse, train, reads, variables, exact=True)
    for name, (make_optimizer, sparse) in OPTIMIZERS.items():
        for resource in (False, True):
            case = f"{name}_{'resource' if resource else 'ref'}"
            graph = tf.Graph()
            with graph.as_default():
                tf1.set_random_seed(13)
                train, reads, variables = build(make_optimizer, sparse, resource)
                record(graph, case, name, resource, sparse, train, reads, variables, exact=False)


def record(graph, case, optimizer, resource, sparse, train, reads, variables, exact):
    config = tf1.ConfigProto(intra_op_parallelism_threads=1, inter_op_parallelism_threads=1)
    expected = {}
    with tf1.Session(graph=graph, config=config) as sess:
        sess.run("init")
        for step in range(STEPS + 1):
            if step:
                sess.run(train)
            for tensor, value in zip(reads, sess.run(reads)):
                expected[f"step{step}/{tensor.name}"] = value
    ops = sorted({op.type for op in graph.get_operations()})
    out = ROOT / case
    out.mkdir(parents=True, exist_ok=True)
    (out / "graph.pb").write_bytes(graph.as_graph_def().SerializeToString(deterministic=True))
    np.savez(out / "expected.npz", **expected)
    info = {"name": case, "optimizer": optimizer, "resource": resource, "sparse": sparse, "steps": STEPS,
            "init": "init", "train": train.name, "fetches": [t.name for t in reads], "exact": exact,
            "variables": variables, "ops": ops}
    (out / "case.json").write_text(json.dumps(info, indent=1, sort_keys=True) + "\n")
    print(case, len(graph.get_operations()), "nodes", file=sys.stderr)


if __name__ == "__main__":
    main()
