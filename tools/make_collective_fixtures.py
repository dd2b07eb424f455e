"""Record TensorFlow's collective ops on local CPU devices as fixtures (needs TensorFlow).

Each case is a TF1 graph that places one collective member on each of N CPU devices
(/device:CPU:0..N-1, a session with device_count CPU=8) and fetches every member's output. We save its GraphDef, the inputs it was
fed, and TensorFlow's outputs; tests/exec/test_collective_fixtures.py runs the same GraphDef in
dftool and compares. TensorFlow runs CollectiveAllToAllV2 only with NCCL on GPUs, so all-to-all
has no fixture here (the tests check it against numpy). Seeded; run from the repository root:

    python tools/make_collective_fixtures.py
"""
from __future__ import annotations

import json
import os

import numpy as np
import tensorflow as tf

OUT = os.path.join("tests", "fixtures", "collectives")
DEVICES = 8
from tensorflow.python.ops import collective_ops  # noqa: E402

tf.compat.v1.disable_eager_execution()

rng = np.random.default_rng(19)
_instance = iter(range(100, 10_000))


def member_inputs(n, shape, dtype):
    if np.issubdtype(dtype, np.integer):
        return [rng.integers(-20, 21, size=shape).astype(dtype) for _ in range(n)]
    return [rng.standard_normal(shape).astype(dtype) for _ in range(n)]


def record(name, n, shape, dtype, member):
    """`member(i, x, group_size, group_key, instance_key)` builds device i's collective."""
    inputs = member_inputs(n, shape, dtype)
    key = next(_instance)
    graph = tf.Graph()
    with graph.as_default():
        outs = []
        for i in range(n):
            with tf.device(f"/device:CPU:{i}"):
                x = tf.compat.v1.placeholder(tf.as_dtype(dtype), shape, name=f"x{i}")
                outs.append(tf.identity(member(i, x, n, 1 + n, key), name=f"out{i}"))
    config = tf.compat.v1.ConfigProto(device_count={"CPU": DEVICES})
    with tf.compat.v1.Session(graph=graph, config=config) as sess:
        outputs = sess.run(outs, {f"x{i}:0": v for i, v in enumerate(inputs)})
    with open(os.path.join(OUT, f"{name}.pb"), "wb") as f:
        f.write(graph.as_graph_def().SerializeToString())
    np.savez(os.path.join(OUT, f"{name}.feeds.npz"), **{f"x{i}": v for i, v in enumerate(inputs)})
    np.savez(os.path.join(OUT, f"{name}.expected.npz"), **{f"out{i}": v for i, v in enumerate(outputs)})
    return {"name": name, "group_size": n, "shape": list(shape), "dtype": np.dtype(dtype).name,
            "fetches": [f"out{i}" for i in range(n)]}


def main():
    os.makedirs(OUT, exist_ok=True)
    cases = []
    for merge, final in [("Add", "Id"), ("Add", "Div"), ("Mul", "Id"), ("Min", "Id"), ("Max", "Div")]:
        for dtype in (np.float32, np.int32):
            for n in (2, 3):
                def reduce(i, x, size, group, inst, merge=merge, final=final):
                    return collective_ops.all_reduce_v2(x, size, group, inst, merge_op=merge, final_op=final)
                cases.append(record(f"reduce_{merge}_{final}_{np.dtype(dtype).name}_{n}", n, (5, 3), dtype, reduce))
    for n in (2, 4):
        def gather(i, x, size, group, inst):
            return collective_ops.all_gather_v2(x, size, group, inst)
        cases.append(record(f"gather_float64_{n}", n, (3, 2), np.float64, gather))
        cases.append(record(f"gather_int64_{n}", n, (2,), np.int64, gather))

        def bcast(i, x, size, group, inst):
            if i == 0:
                return collective_ops.broadcast_send_v2(x, size, group, inst)
            return collective_ops.broadcast_recv_v2(tf.shape(x), x.dtype, size, group, inst)
        cases.append(record(f"bcast_float32_{n}", n, (4, 2), np.float32, bcast))
    # v1 ops (group and instance as attrs)
    def reduce_v1(i, x, size, group, inst):
        return collective_ops.all_reduce(x, size, group, inst, merge_op="Add", final_op="Div")
    cases.append(record("reduce_v1_Add_Div_float64_4", 4, (7,), np.float64, reduce_v1))

    def gather_v1(i, x, size, group, inst):
        return collective_ops.all_gather(x, size, group, inst)
    cases.append(record("gather_v1_float32_3", 3, (2, 2), np.float32, gather_v1))

    def bcast_v1(i, x, size, group, inst):
        if i == 0:
            return collective_ops.broadcast_send(x, x.shape, x.dtype, size, group, inst)
        return collective_ops.broadcast_recv(x.shape, x.dtype, size, group, inst)
    cases.append(record("bcast_v1_float64_3", 3, (3,), np.float64, bcast_v1))
    with open(os.path.join(OUT, "cases.json"), "w") as f:
        json.dump({"tensorflow": tf.__version__, "cases": cases}, f, indent=1)
    print(len(cases), "cases")


if __name__ == "__main__":
    main()
