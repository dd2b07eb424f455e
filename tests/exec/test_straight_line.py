"""Loop-free plans run as a straight line (graphtool/exec/straight_line.py): the same values as
the dependency-counting executor and as numpy, the same errors, timeouts between nodes, values
released after their last reader, and independent heavy kernels still overlapping on the pool;
and the untraced ready loop, which passes control-flow values on itself, agreeing with a traced step."""
import threading
import time

import numpy as np
import pytest

from graphtool import dtypes
from graphtool.builder import GraphBuilder
from graphtool.errors import RuntimeFailure
from graphtool.exec import straight_line
from graphtool.exec.kernels import kernel
from graphtool.exec.session import Session
from graphtool.ops.inference import unchanged
from graphtool.ops.registry import register

# A test-only op: logs when it ran, sleeps (releasing the GIL like BLAS does), optionally fails.
RUN_LOG: list[tuple[str, float, float]] = []
register("TestStraightLineStep", inputs=["x: T"], outputs=["y: T"],
         attrs=["T: type", "seconds: float", "fail: bool"], shape=unchanged, family="test")


@kernel("TestStraightLineStep", expensive=True)
def _test_step(ctx, x, *, seconds, fail):
    start = time.perf_counter()
    time.sleep(seconds)
    RUN_LOG.append((ctx.node_name, start, time.perf_counter()))
    if fail:
        raise ValueError("asked to fail")
    return x


def _step(b, x, name, seconds=0.0, fail=False):
    return b.op("TestStraightLineStep", [x], name=name, seconds=seconds, fail=fail)


# --- random DAGs: straight line == dependency counting == numpy ------------------------------------

_UNARY = {"Tanh": np.tanh, "Neg": np.negative, "Square": np.square, "Identity": lambda v: v}
_BINARY = {"AddV2": np.add, "Mul": np.multiply, "Sub": np.subtract, "Maximum": np.maximum}


def _random_dag(seed: int, shape):
    """A random loop-free graph (unary, binary and two-output IdentityN nodes, random control
    edges) and the numpy value of every tensor in it."""
    rng = np.random.default_rng(seed)
    b = GraphBuilder()
    feeds = {f"x{k}": rng.uniform(-1, 1, shape).astype(np.float32) for k in range(2)}
    tensors = [(b.placeholder(dtypes.float32, list(shape), name=name), value) for name, value in feeds.items()]
    c = np.float32(0.5)
    tensors.append((b.const(c, name="half"), c))
    nodes = []
    for k in range(int(rng.integers(20, 60))):
        pick = [tensors[int(i)] for i in rng.integers(0, len(tensors), 2)]
        kind = rng.random()
        controls = [nodes[int(rng.integers(len(nodes)))]] if nodes and rng.random() < 0.2 else []
        with b.control_dependencies(controls):
            if kind < 0.35:
                op = list(_UNARY)[int(rng.integers(len(_UNARY)))]
                made = [(b.op(op, [pick[0][0]], name=f"n{k}"), _UNARY[op](pick[0][1]))]
            elif kind < 0.9:
                op = list(_BINARY)[int(rng.integers(len(_BINARY)))]
                made = [(b.op(op, [pick[0][0], pick[1][0]], name=f"n{k}"), _BINARY[op](pick[0][1], pick[1][1]))]
            else:   # a node with two outputs, of which maybe only one is ever read
                refs = b.op("IdentityN", [[pick[0][0], pick[1][0]]], name=f"n{k}")
                made = list(zip(refs, [pick[0][1], pick[1][1]]))
        nodes.append(made[0][0].node)
        tensors.extend((ref, np.asarray(value, np.float32)) for ref, value in made)
    picks = rng.choice(len(tensors), size=6)
    fetches = [tensors[int(i)] for i in picks] + [tensors[int(picks[0])]]   # one fetched twice
    return b, feeds, fetches


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("seed", range(8))
def test_random_dags_give_the_same_values_as_counting_and_numpy(seed, threads):
    # Big values go to the thread pool (their consumers wait for them); small ones run inline.
    shape = (4, 6) if seed % 2 else (256, 300)
    b, feeds, fetches = _random_dag(seed, shape)
    session = Session(b.graph, threads=threads)
    names = [ref.name for ref, _ in fetches]
    straight = session.run(names, feeds)
    counted = session.run(names, feeds, trace=True)   # a traced step counts dependencies
    for (ref, expected), got, other in zip(fetches, straight.values, counted.values):
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6, err_msg=ref.name)
        np.testing.assert_array_equal(got, other, err_msg=ref.name)
    assert straight.nodes_executed == counted.nodes_executed
    compiled = next(iter(session._executors.values()))[0]
    assert straight_line.applies(compiled.plan)


def test_plans_with_control_flow_do_not_run_as_a_straight_line():
    b = GraphBuilder()
    (i,) = b.while_loop(lambda i: b.less(i, 3), lambda i: [b.add(i, 1)], [b.const(0)], name="loop")
    session = Session(b.graph)
    assert session.run([i.name]).values[0] == 3
    compiled = next(iter(session._executors.values()))[0]
    assert not straight_line.applies(compiled.plan)


def test_targets_run_and_fetches_of_one_node_on_several_ports():
    b = GraphBuilder()
    x = b.placeholder(dtypes.float32, [4], name="x")
    left, right = b.op("Split", [np.int32(0), x], name="halves", num_split=2)
    b.add(left, right, name="sum")
    _step(b, x, "side_effect")
    RUN_LOG.clear()
    result = Session(b.graph).run(["halves:1", "sum", "halves:0", "halves:1"],
                                  {"x": np.arange(4, dtype=np.float32)}, targets=["side_effect"])
    assert [v.tolist() for v in result.values] == [[2, 3], [2, 4], [0, 1], [2, 3]]
    assert [name for name, _, _ in RUN_LOG] == ["side_effect"]


# --- failures -------------------------------------------------------------------------------------

@pytest.mark.parametrize("threads", [1, 2])
def test_a_failing_kernel_is_named_also_on_the_pool(threads):
    b = GraphBuilder()
    x = b.placeholder(dtypes.float32, [2, 3], name="x")
    bad = _step(b, x, "bad", fail=True)
    good = _step(b, x, "good", seconds=0.05)   # beside it: the failing one goes to the pool
    b.add(bad, good, name="out")
    session = Session(b.graph, threads=threads)
    feed = {"x": np.ones((2, 3), np.float32)}
    for _ in range(2):   # the step after a failure starts clean
        with pytest.raises(RuntimeFailure, match=r"node 'bad' \(TestStraightLineStep\) failed on inputs "
                                                 r"\[float32\[2, 3\]\]: asked to fail"):
            session.run(["out"], feed)
    assert session.run(["good"], feed).values[0].shape == (2, 3)


@pytest.mark.parametrize("threads", [1, 2])
def test_the_deadline_is_checked_between_nodes(threads):
    b = GraphBuilder()
    y = b.placeholder(dtypes.float32, [2], name="x")
    for k in range(20):
        y = b.op("Neg", [_step(b, y, f"slow{k}", seconds=0.05)])
    session = Session(b.graph, threads=threads)
    feed = {"x": np.ones(2, np.float32)}
    RUN_LOG.clear()
    with pytest.raises(RuntimeFailure, match=r"timed out after 0.12 s .*'slow\d+' \(TestStraightLineStep\)"):
        session.run([y.name], feed, timeout=0.12)
    assert 2 <= len(RUN_LOG) < 10, [name for name, _, _ in RUN_LOG]
    time.sleep(0.1)
    assert session.run([y.name], feed).values[0].tolist() == [1, 1]


# --- parallelism and memory -----------------------------------------------------------------------

def test_independent_heavy_chains_overlap_at_every_stage():
    """Chain a: sleep -> neg -> sleep; chain b: neg -> neg -> sleep -> neg -> sleep. The graph's
    own order reaches a's neg (which waits for a's first sleep) before b's first sleep; the
    straight line still starts both first sleeps together, and both second ones."""
    b = GraphBuilder()
    x = b.placeholder(dtypes.float32, [2], name="x")
    first_a = _step(b, x, "a0", seconds=0.2)
    ends = [_step(b, b.op("Neg", [first_a]), "a1", seconds=0.2)]
    first_b = _step(b, b.op("Neg", [b.op("Neg", [x])]), "b0", seconds=0.2)
    ends.append(_step(b, b.op("Neg", [first_b]), "b1", seconds=0.2))
    RUN_LOG.clear()
    Session(b.graph, threads=2).run([e.name for e in ends], {"x": np.ones(2, np.float32)})
    spans = {name: (start, end) for name, start, end in RUN_LOG}
    for level in "01":
        (start_a, end_a), (start_b, end_b) = spans["a" + level], spans["b" + level]
        assert start_b < end_a and start_a < end_b, f"level {level} ran one after the other: {spans}"


def test_values_are_released_after_their_last_reader():
    """A diamond-rich chain of 4 MB arrays keeps only a few alive at once."""
    import tracemalloc

    b = GraphBuilder()
    y = b.placeholder(dtypes.float32, [1024, 1024], name="x")
    for k in range(20):
        side = b.add(y, 1.0, name=f"side{k}")
        y = b.mul(y, side, name=f"step{k}")
    session = Session(b.graph, threads=1)
    feed = {"x": np.zeros((1024, 1024), np.float32)}
    session.run([y.name], feed)
    tracemalloc.start()
    try:
        session.run([y.name], feed)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 6 * 4 * 1024 * 1024, f"peak {peak / 2**20:.0f} MiB: values are kept after use"


def test_concurrent_steps_of_one_session_keep_their_values_apart():
    b = GraphBuilder()
    x = b.placeholder(dtypes.float32, [3], name="x")
    y = x
    for k in range(50):
        y = b.add(b.mul(y, 1.0), 1.0, name=f"n{k}")
    session = Session(b.graph, threads=2)
    session.run([y.name], {"x": np.zeros(3, np.float32)})
    errors = []

    def worker(start: float):
        for _ in range(20):
            got = session.run([y.name], {"x": np.full(3, start, np.float32)}).values[0]
            if got.tolist() != [start + 50] * 3:
                errors.append((start, got))

    threads = [threading.Thread(target=worker, args=(float(k),)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


# --- control flow: the untraced ready loop (control-flow nodes inline) == a traced step ----------

def _control_flow_graph(parallel_iterations: int):
    """Nested loops, a cond inside the outer loop, loop constants and a loop that never runs
    (on the untaken side of a cond)."""
    b = GraphBuilder()
    x = b.placeholder(dtypes.float32, [3], name="x")
    p = b.placeholder(dtypes.bool_, [], name="p")

    def outer_body(i, acc):
        (_, inner) = b.while_loop(lambda j, t: b.less(j, i), lambda j, t: [b.add(j, 1), b.add(t, x)],
                                  [b.const(0), acc], parallel_iterations=parallel_iterations, name="inner")
        (picked,) = b.cond(b.less(i, 3), lambda: [b.mul(inner, 0.5)], lambda: [b.sub(inner, x)])
        return [b.add(i, 1), picked]

    _, total = b.while_loop(lambda i, acc: b.less(i, 6), outer_body, [b.const(0), b.zeros([3])],
                            parallel_iterations=parallel_iterations, name="outer")
    (side,) = b.cond(p, lambda: [b.identity(x)],
                     lambda: [b.while_loop(lambda k, v: b.less(k, 4), lambda k, v: [b.add(k, 1), b.mul(v, 2.0)],
                                           [b.const(0), x], name="never")[1]])
    return b, [total.name, side.name]


@pytest.mark.parametrize("parallel_iterations", [1, 4, 32])
@pytest.mark.parametrize("flag", [True, False])
def test_loops_and_conds_run_the_same_traced_and_untraced(parallel_iterations, flag):
    b, fetches = _control_flow_graph(parallel_iterations)
    session = Session(b.graph, threads=2)
    feeds = {"x": np.array([1.0, -2.0, 0.5], np.float32), "p": np.array(flag)}
    plain = session.run(fetches, feeds)
    traced = session.run(fetches, feeds, trace=True)
    for got, other in zip(plain.values, traced.values):
        np.testing.assert_array_equal(got, other)
    assert plain.nodes_executed == traced.nodes_executed
    assert plain.iterations == traced.iterations
    expected = np.zeros(3, np.float32)
    for i in range(6):
        expected = expected + i * feeds["x"]
        expected = expected * np.float32(0.5) if i < 3 else expected - feeds["x"]
    np.testing.assert_allclose(plain.values[0], expected, rtol=1e-6)
    np.testing.assert_array_equal(plain.values[1], feeds["x"] if flag else feeds["x"] * 16)
