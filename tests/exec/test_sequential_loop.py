"""Simple while loops run iteration after iteration (graphtool/exec/sequential_loop.py): the same
values, node counts and iteration counts as the dependency-counting executor (a traced step counts
dependencies), on random loops, nested loops, loops on cond branches and every TF fixture with a
loop; the same errors and timeouts; and the loops that cannot run that way are told apart."""
import json
import time
from pathlib import Path

import numpy as np
import pytest

from graphtool import dtypes, graph_io
from graphtool.builder import GraphBuilder
from graphtool.errors import RuntimeFailure
from graphtool.exec.executor import StepTimeout
from graphtool.exec.kernels import kernel
from graphtool.exec.session import Session
from graphtool.ir import from_graphdef
from graphtool.ops.inference import unchanged
from graphtool.ops.registry import register

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

register("TestSequentialFailAbove", inputs=["x: T"], outputs=["y: T"], attrs=["T: type", "limit: float"],
         shape=unchanged, family="test")


@kernel("TestSequentialFailAbove")
def _fail_above(ctx, x, *, limit):
    if np.any(x > limit):
        raise ValueError(f"value above {limit}")
    return x


def _loops_of(session: Session) -> dict[str, str]:
    """Frame name -> why it does not run sequentially ("" when it does), of the session's plans."""
    reasons = {}
    for executor, *_ in session._executors.values():
        for plan in getattr(executor, "plans", None) or [executor.plan]:
            for template in plan.frames.values():
                if template.parent is not None:
                    reasons[template.name] = template.sequential_reason
    return reasons


def _same_as_counting(session: Session, fetches: list[str], feeds: dict):
    sequential = session.run(fetches, feeds)
    counted = session.run(fetches, feeds, trace=True)   # a recorder times every node: counting
    for name, got, expected in zip(fetches, sequential.values, counted.values):
        np.testing.assert_array_equal(got, expected, err_msg=name)
    assert sequential.nodes_executed == counted.nodes_executed
    assert sequential.iterations == counted.iterations
    return sequential


# --- random loops ---------------------------------------------------------------------------------

_UNARY = {"Tanh": np.tanh, "Neg": np.negative, "Square": np.square, "Identity": lambda v: v}
_BINARY = {"AddV2": np.add, "Mul": np.multiply, "Sub": np.subtract, "Maximum": np.maximum}


def _random_body(b, rng, values: list, invariants: list, n_out: int) -> list:
    """Random elementwise ops over the loop vars and loop constants; n_out results, each squashed
    by tanh so that long loops stay finite."""
    pool = list(values) + list(invariants)
    for _ in range(int(rng.integers(2, 9))):
        if rng.random() < 0.4:
            op = list(_UNARY)[int(rng.integers(len(_UNARY)))]
            pool.append(b.op(op, [pool[int(rng.integers(len(pool)))]]))
        else:
            op = list(_BINARY)[int(rng.integers(len(_BINARY)))]
            pool.append(b.op(op, [pool[int(rng.integers(len(pool)))], pool[int(rng.integers(len(pool)))]]))
    return [b.tanh(b.add(pool[-1 - k % len(pool)], values[k])) for k in range(n_out)]


@pytest.mark.parametrize("seed", range(10))
def test_random_loops_agree_with_counting(seed):
    rng = np.random.default_rng(seed)
    b = GraphBuilder()
    n = b.placeholder(dtypes.int32, [], name="n")
    shape = [3] if seed % 2 else [64, 48]
    outside = [b.placeholder(dtypes.float32, shape, name=f"c{k}") for k in range(2)]
    count = int(rng.integers(1, 4))
    starts = [b.placeholder(dtypes.float32, shape, name=f"v{k}") for k in range(count)]

    def body(i, *vs):
        return [b.add(i, 1)] + _random_body(b, rng, list(vs), outside, len(vs))
    results = b.while_loop(lambda i, *vs: b.less(i, n), body, [b.const(0)] + starts, name="loop")
    fetches = [r.name for r in results]
    session = Session(b.graph)
    for iterations in (0, 1, 7):
        feeds = {"n": np.int32(iterations), **{f"c{k}": rng.standard_normal(shape).astype(np.float32)
                                                 for k in range(2)},
                 **{f"v{k}": rng.standard_normal(shape).astype(np.float32) for k in range(count)}}
        result = _same_as_counting(session, fetches, feeds)
        assert result.values[0] == iterations
        assert result.iterations == {"loop/while_context": iterations + 1}
    assert _loops_of(session) == {"loop/while_context": ""}


def test_nested_loops_run_their_inner_loop_sequentially():
    b = GraphBuilder()
    x = b.placeholder(dtypes.float32, [5], name="x")

    def outer_body(i, acc):
        (_, inner) = b.while_loop(lambda j, a: b.less(j, i), lambda j, a: [b.add(j, 1), b.mul(a, 1.5)],
                                  [b.const(0), acc], name="inner")
        return [b.add(i, 1), b.add(inner, x)]
    _, result = b.while_loop(lambda i, a: b.less(i, 4), outer_body, [b.const(0), x], name="outer")
    session = Session(b.graph)
    got = _same_as_counting(session, [result.name], {"x": np.arange(5, dtype=np.float32)})
    expected = np.arange(5, dtype=np.float32)
    for i in range(4):
        expected = expected * 1.5 ** i + np.arange(5, dtype=np.float32)
    np.testing.assert_allclose(got.values[0], expected, rtol=1e-6)
    reasons = _loops_of(session)
    assert reasons["outer/inner/while_context"] == ""
    assert "Enter" in reasons["outer/while_context"]   # a nested loop: counted


@pytest.mark.parametrize("taken", [True, False])
def test_a_loop_on_a_cond_branch(taken):
    # Untaken, its Enters are dead: the counting way (its Exits are dead, the cond's Merge takes
    # the other branch).
    b = GraphBuilder()
    p = b.placeholder(dtypes.bool_, [], name="p")
    x = b.placeholder(dtypes.float32, [2], name="x")
    out = b.cond(p, lambda: b.while_loop(lambda i, v: b.less(i, 3), lambda i, v: [b.add(i, 1), b.mul(v, 2.0)],
                                         [b.const(0), x], name="loop")[1],
                 lambda: b.op("Neg", [x]))
    session = Session(b.graph)
    got = _same_as_counting(session, [out.name], {"p": np.bool_(taken), "x": np.ones(2, np.float32)})
    assert got.values[0].tolist() == ([8.0, 8.0] if taken else [-1.0, -1.0])
    assert list(_loops_of(session).values()) == [""]


def test_a_cond_inside_the_body_is_counted():
    b = GraphBuilder()
    x = b.placeholder(dtypes.float32, [], name="x")
    _, v = b.while_loop(lambda i, v: b.less(i, 6),
                        lambda i, v: [b.add(i, 1), b.cond(b.less(v, 10.0), lambda: b.mul(v, 3.0), lambda: b.sub(v, 4.0))],
                        [b.const(0), x], name="loop")
    session = Session(b.graph)
    assert _same_as_counting(session, [v.name], {"x": np.float32(1)}).values[0] == 15.0   # 3 9 27 23 19 15
    assert "cond inside the loop" in _loops_of(session)["loop/while_context"]


def _fixture_cases():
    cases = []
    for case_file in sorted(FIXTURES.glob("*/*/case.json")):
        graph = from_graphdef(graph_io.load_graphdef(str(case_file.parent / "graph.pb")))
        if any(node.op == "Enter" for node in graph.nodes):
            cases.append(pytest.param(case_file.parent, id=f"{case_file.parent.parent.name}/{case_file.parent.name}"))
    return cases


@pytest.mark.parametrize("folder", _fixture_cases())
def test_every_fixture_loop_agrees_with_counting(folder):
    spec = json.loads((folder / "case.json").read_text())
    graph = from_graphdef(graph_io.load_graphdef(str(folder / "graph.pb")))
    feeds = {}
    if (folder / "feeds.npz").exists():
        with np.load(folder / "feeds.npz") as archive:
            feeds = {k: archive[k] for k in archive.files}
    session = Session(graph)
    _same_as_counting(session, spec["fetches"], feeds)


def test_the_fixture_loops_that_qualify():
    # The plain TF1 loops and the inner loop of a nest run sequentially; a loop with a cond inside
    # or a nested loop is counted.
    def reasons(name):
        folder = FIXTURES / "tf" / name
        spec = json.loads((folder / "case.json").read_text())
        session = Session(from_graphdef(graph_io.load_graphdef(str(folder / "graph.pb"))))
        with np.load(folder / "feeds.npz") as archive:
            session.run(spec["fetches"], {k: archive[k] for k in archive.files})
        return _loops_of(session)
    assert set(reasons("while_loop").values()) == {""}
    nested = reasons("nested_while")
    assert nested["outer/inner/while_context"] == "" and nested["outer/while_context"] != ""
    assert all(reason for reason in reasons("cond_in_while").values())


# --- failures -------------------------------------------------------------------------------------

def _growing_loop(limit: float, iterations: int = 10):
    b = GraphBuilder()
    x = b.placeholder(dtypes.float32, [3], name="x")
    _, v = b.while_loop(lambda i, v: b.less(i, iterations),
                        lambda i, v: [b.add(i, 1), b.op("TestSequentialFailAbove", [b.mul(v, 2.0)], name="check",
                                                        limit=limit)],
                        [b.const(0), x], name="loop")
    return b, v


def test_a_failing_kernel_in_the_body_is_named():
    b, v = _growing_loop(limit=100.0)
    session = Session(b.graph)
    for trace in (False, True):
        with pytest.raises(RuntimeFailure, match=r"node 'loop/check' \(TestSequentialFailAbove\) failed on "
                                                 r"inputs \[float32\[3\]\]: value above 100"):
            session.run([v.name], {"x": np.ones(3, np.float32)}, trace=trace)
    ok = session.run([v.name], {"x": np.full(3, 0.01, np.float32)})   # the next step starts clean
    np.testing.assert_allclose(ok.values[0], np.full(3, 0.01 * 2 ** 10), rtol=1e-6)


def test_a_long_loop_stops_at_the_deadline():
    b = GraphBuilder()
    (i,) = b.while_loop(lambda i: b.less(i, 10**9), lambda i: [b.add(i, 1)], [b.const(0)], name="forever")
    session = Session(b.graph)
    start = time.monotonic()
    with pytest.raises(StepTimeout, match="step timed out after 0.3 s"):
        session.run([i.name], timeout=0.3)
    assert time.monotonic() - start < 5
