"""Model-parallel graphs from the dynamic-control-flow paper, built with graphtool's GraphBuilder.
Used by make_samples.py (small sizes, committed) and tests/bench/bench_model_parallel.py (large).

- `stacked_rnn`: an L-layer tanh RNN, layer k on device k, all inside ONE while loop over the time
  steps (the paper's Figure 12 model). As tf.while_loop does, the loop's own nodes (counter,
  predicate, every layer's Enter/Merge/Switch/NextIteration/Exit) sit on the first device, so with
  `parallel_iterations=1` one time step finishes on every layer before the next starts; more
  parallel iterations let layer k work on step t while layer k-1 is already on step t+1.
  `colocate_state=True` moves each layer's loop plumbing onto that layer's device instead.
- `pipeline`: a feed-forward pipeline of S dense stages over micro-batches, stage k on device k,
  inside one while loop; each loop variable's plumbing sits with its value, so stages overlap.
  (Every loop variable is read by the body: TensorFlow cannot fetch a dangling in-loop Identity.)
"""
from __future__ import annotations

import numpy as np

from graphtool.builder import GraphBuilder
from graphtool.ir import Graph

NEXT_ITERATION_OPS = ("NextIteration", "RefNextIteration")


def _weights(rng, *shape, scale) -> np.ndarray:
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def local_cpu(index: int) -> str:
    return f"/job:localhost/replica:0/task:0/device:CPU:{index}"


def stacked_rnn(rng, *, layers: int = 8, hidden: int = 16, batch: int = 4, steps: int = 12,
                parallel_iterations: int = 32, devices=None, colocate_state: bool = False):
    """The model-parallel RNN: h[k]_t = tanh(h[k-1]_t @ Wx[k] + h[k]_(t-1) @ Wh[k] + b[k]) for
    k = 1..layers, h[0]_t = x[t], over time-major `x` [steps, batch, hidden]. Outputs:
    `final_state` (the top layer's last h) and `top_sum` (the top layer's h summed over time).
    Returns (builder, feeds)."""
    devices = devices or [local_cpu(k) for k in range(layers)]
    b = GraphBuilder()
    params = []
    for k in range(layers):
        with b.device(devices[k]), b.name_scope(f"layer{k}"):
            params.append((b.const(_weights(rng, hidden, hidden, scale=hidden ** -0.5), name="wx"),
                           b.const(_weights(rng, hidden, hidden, scale=0.5 * hidden ** -0.5), name="wh"),
                           b.const(_weights(rng, hidden, scale=0.1), name="bias")))
    with b.device(devices[0]):
        x = b.placeholder("float32", [steps, batch, hidden], name="x")
        zero_state = b.zeros([batch, hidden], name="zero_state")

        def body(t, top_sum, *states):
            inputs = b.op("GatherV2", [x, t, 0], name="x_t")
            new_states = []
            for k, (wx, wh, bias) in enumerate(params):
                with b.device(devices[k]), b.name_scope(f"layer{k}"):
                    pre = b.add(b.matmul(inputs, wx), b.matmul(states[k], wh))
                    inputs = b.tanh(b.bias_add(pre, bias), name="h")
                new_states.append(inputs)
            with b.device(devices[-1]):
                top_sum = b.add(top_sum, inputs, name="accumulate")
            return [b.add(t, 1), top_sum, *new_states]

        outputs = b.while_loop(lambda t, *_: b.less(t, steps), body,
                               [0, zero_state] + [zero_state] * layers,
                               parallel_iterations=parallel_iterations, name="rnn")
    with b.device(devices[-1]):
        b.identity(outputs[-1], name="final_state")
        b.identity(outputs[1], name="top_sum")
    if colocate_state:
        colocate_loop_state(b.graph)
    return b, {"x": _weights(rng, steps, batch, hidden, scale=1.0)}


def pipeline(rng, *, stages: int = 4, width: int = 16, batch: int = 4, micro_batches: int = 8,
             parallel_iterations: int = 8, devices=None):
    """S dense+relu stages, stage k on device k, applied to each of `micro_batches` micro-batches
    of `x` [micro_batches, batch, width] in one while loop; `total` sums the last stage's outputs
    over the micro-batches. Returns (builder, feeds)."""
    devices = devices or [local_cpu(k) for k in range(stages)]
    b = GraphBuilder()
    params = []
    for k in range(stages):
        with b.device(devices[k]), b.name_scope(f"stage{k}"):
            params.append((b.const(_weights(rng, width, width, scale=width ** -0.5), name="kernel"),
                           b.const(_weights(rng, width, scale=0.1), name="bias")))
    with b.device(devices[0]):
        x = b.placeholder("float32", [micro_batches, batch, width], name="x")

        def body(m, total):
            h = b.op("GatherV2", [x, m, 0], name="micro_batch")
            for k, (kernel, bias) in enumerate(params):
                with b.device(devices[k]), b.name_scope(f"stage{k}"):
                    h = b.relu(b.bias_add(b.matmul(h, kernel), bias), name="out")
            with b.device(devices[-1]):
                total = b.add(total, h, name="accumulate")
            return [b.add(m, 1), total]

        zeros = b.zeros([batch, width], name="zeros")
        _, total = b.while_loop(lambda m, _: b.less(m, micro_batches), body, [0, zeros],
                                parallel_iterations=parallel_iterations, name="pipeline")
    with b.device(devices[-1]):
        b.identity(total, name="total")
    colocate_loop_state(b.graph)
    return b, {"x": _weights(rng, micro_batches, batch, width, scale=1.0)}


def colocate_loop_state(graph: Graph) -> None:
    """Put each loop variable's Enter/Merge/Switch/Identity/NextIteration/Exit on the device of
    the value its NextIteration carries back (and keep the Switch's colocation hint true)."""
    for next_iteration in [n for n in graph.nodes if n.op in NEXT_ITERATION_OPS]:
        device = next_iteration.inputs[0].node.device
        merge = next(consumer for consumer, _ in next_iteration.uses())
        plumbing = [next_iteration, merge, merge.inputs[0].node]
        for switch, _ in merge.uses():
            if switch.op == "Switch":
                plumbing += [switch] + [consumer for consumer, _ in switch.uses()
                                        if consumer.op in ("Identity", "Exit")]
        for node in plumbing:
            node.device = device
