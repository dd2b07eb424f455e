"""Executor behaviour: dynamic control flow with TensorFlow v1 semantics, failures that are
reported instead of hanging, and real overlap of independent heavy work."""
import time

import numpy as np
import pytest

from graphtool import dtypes
from graphtool.builder import GraphBuilder
from graphtool.errors import RuntimeFailure, UsageError
from graphtool.exec.kernels import kernel
from graphtool.exec.session import Session
from graphtool.ops.inference import unchanged
from graphtool.ops.registry import register

# A test-only op whose kernel sleeps (releasing the GIL like BLAS does) and logs when it ran.
SLEEP_LOG: list[tuple[str, float, float]] = []
register("TestSleep", inputs=["x: T"], outputs=["y: T"], attrs=["T: type", "seconds: float"],
         shape=unchanged, family="test")


@kernel("TestSleep", expensive=True)
def _test_sleep(ctx, x, *, seconds):
    start = time.perf_counter()
    time.sleep(seconds)
    SLEEP_LOG.append((ctx.node_name, start, time.perf_counter()))
    return x


def run(builder, fetches, feeds=None, **session_args):
    return Session(builder.graph, **session_args).run(fetches, feeds or {})


def test_while_loop_from_the_paper():
    b = GraphBuilder()
    (i,) = b.while_loop(lambda i: b.less(i, 16), lambda i: [b.mul(i, 2)], [b.const(4)], name="loop")
    result = run(b, [i.name])
    assert result.values[0] == 16
    assert list(result.iterations.values()) == [3]


@pytest.mark.parametrize("parallel_iterations", [1, 2, 10])
def test_loop_results_do_not_depend_on_parallel_iterations(parallel_iterations):
    b = GraphBuilder()
    x = b.placeholder(dtypes.float32, [3], name="x")
    _, acc = b.while_loop(lambda i, acc: b.less(i, 20),
                          lambda i, acc: [b.add(i, 1), b.add(b.mul(acc, 1.5), x)],
                          [b.const(0), b.zeros([3])], parallel_iterations=parallel_iterations, name="loop")
    feed = np.array([1.0, -2.0, 0.5], np.float32)
    expected = np.zeros(3, np.float32)
    for _ in range(20):
        expected = expected * np.float32(1.5) + feed
    np.testing.assert_allclose(run(b, [acc.name], {"x": feed}).values[0], expected, rtol=1e-6)


def test_nested_loops():
    b = GraphBuilder()

    def outer_body(i, total):
        (j, inner_total) = b.while_loop(lambda j, t: b.less(j, i), lambda j, t: [b.add(j, 1), b.add(t, j)],
                                        [b.const(0), total], name="inner")
        return [b.add(i, 1), inner_total]

    _, total = b.while_loop(lambda i, t: b.less(i, 5), outer_body, [b.const(0), b.const(0)], name="outer")
    # sum over i < 5 of sum over j < i of j = 0+0+1+3+6
    assert run(b, [total.name]).values[0] == 10


@pytest.mark.parametrize("flag, expected", [(True, 6.0), (False, -3.0)])
def test_cond_takes_one_branch(flag, expected):
    b = GraphBuilder()
    p = b.placeholder(dtypes.bool_, [], name="p")
    x = b.const(3.0)
    (out,) = b.cond(p, lambda: [b.add(x, x)], lambda: [b.sub(b.const(0.0), x)])
    assert run(b, [out.name], {"p": np.array(flag)}).values[0] == expected


def test_loop_inside_an_untaken_branch_does_not_block_the_step():
    b = GraphBuilder()
    p = b.placeholder(dtypes.bool_, [], name="p")

    def with_loop():
        (i,) = b.while_loop(lambda i: b.less(i, 10), lambda i: [b.add(i, 1)], [b.const(0)], name="loop")
        return [i]

    (out,) = b.cond(p, with_loop, lambda: [b.const(-1)])
    assert run(b, [out.name], {"p": np.array(False)}).values[0] == -1
    assert run(b, [out.name], {"p": np.array(True)}).values[0] == 10


def test_fetching_a_dead_branch_is_an_error():
    b = GraphBuilder()
    p = b.placeholder(dtypes.bool_, [], name="p")
    x = b.const(1.0)
    false_out, true_out = b.op("Switch", [x, p], name="switch")
    b.identity(true_out, name="only_if_true")
    with pytest.raises(RuntimeFailure, match="'only_if_true:0' is dead"):
        run(b, ["only_if_true"], {"p": np.array(False)})


def _loop_in_a_cond_branch():
    """A builder with a while loop inside the true branch of a cond on placeholder `p`, and the
    loop's output (taken from inside the branch, which the builder itself would not let out)."""
    b = GraphBuilder()
    p = b.placeholder(dtypes.bool_, [], name="p")
    captured = {}

    def with_loop():
        (i,) = b.while_loop(lambda i: b.less(i, 3), lambda i: [b.add(i, 1)], [b.const(0)], name="loop")
        captured["i"] = i
        return [i]

    b.cond(p, with_loop, lambda: [b.const(-1)])
    return b, captured["i"]


def test_a_value_from_a_loop_on_an_untaken_branch_is_dead():
    """A loop entered only with dead values never runs: what leaves it is dead (TensorFlow's
    semantics), so a value computed from it outside the cond is dead too, not awaited forever."""
    b, loop_output = _loop_in_a_cond_branch()
    # The builder refuses such an edge (as TensorFlow does), so wire it through the IR directly.
    b.graph.add_node("AddV2", "needs_loop", inputs=[loop_output, loop_output], attrs={"T": dtypes.int32})
    with pytest.raises(RuntimeFailure, match="'needs_loop:0' is dead"):
        run(b, ["needs_loop"], {"p": np.array(False)})
    assert run(b, ["needs_loop"], {"p": np.array(True)}).values[0] == 6


def test_timeout_stops_a_runaway_loop():
    b = GraphBuilder()
    (i,) = b.while_loop(lambda i: b.greater(i, -1), lambda i: [b.add(i, 1)], [b.const(0)], name="forever")
    started = time.monotonic()
    with pytest.raises(RuntimeFailure, match="timed out after 0.3 s"):
        Session(b.graph).run([i.name], timeout=0.3)
    assert time.monotonic() - started < 5


def test_independent_heavy_branches_overlap():
    b = GraphBuilder()
    x = b.const(np.ones(4, np.float32))
    outs = [b.op("TestSleep", [x], name=f"sleep{k}", seconds=0.3) for k in range(2)]
    SLEEP_LOG.clear()
    run(b, [o.name for o in outs], threads=2)
    (_, start_a, end_a), (_, start_b, end_b) = sorted(SLEEP_LOG[-2:])
    assert start_b < end_a and start_a < end_b, "the two sleeps ran one after the other"


def test_missing_feed_and_unknown_fetch_are_usage_errors():
    b = GraphBuilder()
    x = b.placeholder(dtypes.float32, [2], name="x")
    b.add(x, x, name="y")
    with pytest.raises(UsageError, match="missing feed for placeholder 'x'"):
        run(b, ["y"])
    with pytest.raises(UsageError, match="fetch 'nope'"):
        run(b, ["nope"], {"x": np.zeros(2, np.float32)})
    with pytest.raises(UsageError, match=r"feed 'x': shape \[3\] does not fit \[2\]"):
        run(b, ["y"], {"x": np.zeros(3, np.float32)})
    with pytest.raises(UsageError, match="feed 'x': dtype bool does not match the expected float32"):
        run(b, ["y"], {"x": np.zeros(2, bool)})


def test_kernel_errors_name_the_node_and_inputs():
    b = GraphBuilder()
    a = b.placeholder(dtypes.float32, [None, None], name="a")
    b.matmul(a, a, name="product")
    with pytest.raises(RuntimeFailure, match=r"node 'product' \(MatMul\) failed on inputs \[float32\[2, 3\], float32\[2, 3\]\]"):
        run(b, ["product"], {"a": np.zeros((2, 3), np.float32)})


def test_check_numerics_names_the_producer():
    b = GraphBuilder()
    x = b.placeholder(dtypes.float32, [2], name="x")
    y = b.op("Log", [x], name="log")
    b.add(y, y, name="out")
    with pytest.raises(RuntimeFailure, match="node 'log' \\(Log\\) produced Inf"):
        run(b, ["out"], {"x": np.array([1.0, 0.0], np.float32)}, check_numerics=True)
    assert run(b, ["out"], {"x": np.array([1.0, 0.0], np.float32)}).values[0][1] == -np.inf


def test_feeding_an_intermediate_tensor_skips_its_producers():
    b = GraphBuilder()
    x = b.placeholder(dtypes.float32, [2], name="x")
    y = b.mul(x, 2.0, name="y")
    b.add(y, 1.0, name="z")
    assert run(b, ["z"], {"y": np.array([1.0, 2.0], np.float32)}).values[0].tolist() == [2.0, 3.0]


def test_values_are_released_after_their_last_consumer():
    """A chain of 40 ops on 4 MB arrays keeps only a few alive at once, not all 40."""
    import tracemalloc

    b = GraphBuilder()
    x = b.placeholder(dtypes.float32, [1024, 1024], name="x")
    y = x
    for k in range(40):
        y = b.add(y, 1.0, name=f"step{k}")
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


def test_ctrl_c_stops_a_run_cleanly(tmp_path):
    import signal
    import subprocess
    import sys

    from tests.helpers import REPO_ROOT

    b = GraphBuilder()
    (i,) = b.while_loop(lambda i: b.greater(i, -1), lambda i: [b.add(i, 1)], [b.const(0)], name="forever")
    b.identity(i, name="out")
    path = tmp_path / "forever.pb"
    path.write_bytes(b.to_graphdef().SerializeToString())
    proc = subprocess.Popen([sys.executable, "-m", "cli.main", "run", str(path)], cwd=REPO_ROOT,
                            env={"PYTHONPATH": str(REPO_ROOT), "PATH": "/usr/bin:/bin"},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    time.sleep(2.0)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=20)
    assert proc.returncode == 130
    assert stderr.decode().strip() == "error: interrupted"


def test_a_merge_of_dead_loop_outputs_is_dead():
    """Both inputs of `never` come from a loop inside the untaken branch: both arrive dead, so the
    Merge is dead (every input dead), not waiting."""
    b, loop_output = _loop_in_a_cond_branch()
    b.graph.add_node("Merge", "never", inputs=[loop_output, loop_output], attrs={"T": dtypes.int32, "N": 2})
    with pytest.raises(RuntimeFailure, match="'never:0' is dead"):
        run(b, ["never"], {"p": np.array(False)})


def test_a_loop_whose_exit_waits_on_an_edge_that_never_arrives_is_reported():
    """The Exit also waits on a control edge from the body's NextIteration, which arrives one
    iteration later. The loop runs no iteration (5 < 3 is false), so the Exit fires in iteration 0
    and waits forever for an edge from an iteration that never existed: the step must end with the
    waiting node named, not hang."""
    b = GraphBuilder()
    (i,) = b.while_loop(lambda i: b.less(i, 3), lambda i: [b.add(i, 1)], [b.const(5)], name="main")
    graph = b.graph
    next_iteration = next(n for n in graph.nodes if n.op == "NextIteration")
    graph.node("main/Exit").add_control_input(next_iteration)
    with pytest.raises(RuntimeFailure, match=r"cannot finish: main/Exit:0 never computed; nodes waiting .*main/Exit"):
        run(b, [i.name])


def test_a_loop_on_an_untaken_branch_ends_even_with_a_live_loop_constant():
    """The loop var enters dead but a loop constant enters live (as a gradient's stack handle,
    entered from outside the cond, does): the dead Enter makes its loop Merge dead, as in
    TensorFlow, so the loop ends at once with a dead Exit instead of waiting for the Merge's
    NextIteration input forever."""
    b = GraphBuilder()
    p = b.placeholder(dtypes.bool_, [], name="p")

    def with_loop():
        (i,) = b.while_loop(lambda i: b.less(i, 3), lambda i: [b.add(i, 1)], [b.const(0)], name="loop")
        return [i]

    (out,) = b.cond(p, with_loop, lambda: [b.const(-1)])
    graph = b.graph
    step = b.const(2, name="step")   # at the root: live whatever p is
    enter = graph.add_node("Enter", "cond/loop/step", inputs=[step],
                           attrs={"T": dtypes.int32, "frame_name": "cond/loop/while_context",
                                  "is_constant": True, "parallel_iterations": 10})
    graph.node("cond/loop/AddV2").set_input(1, enter.output(0))
    # What waits for the loop to end, the way a gradient orders its stack pushes: a ControlTrigger
    # fires on a dead input too, so `after` is live once the Exit has come, dead or not.
    trigger = graph.add_node("ControlTrigger", "loop_ended", control_inputs=[graph.node("cond/loop/Exit")])
    after = graph.add_node("Identity", "after", inputs=[out], attrs={"T": dtypes.int32},
                           control_inputs=[trigger])
    session = Session(graph)
    assert session.run([after.name], {"p": np.array(False)}, timeout=20).values[0] == -1
    assert session.run([after.name], {"p": np.array(True)}, timeout=20).values[0] == 4
