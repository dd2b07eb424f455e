"""Gradients of while loops inside conds inside while loops, when the cond does not take the
branch holding the inner loop (in some or all outer iterations).

That inner loop is entered with dead loop vars but live loop constants (the stack handles the
gradient enters from where it is taken), and so is its backward loop (a dead popped trip count,
live pop handles). Both must end at once with dead Exits, as in TensorFlow, and the gradient
through the untaken branch is the other branch's. Every case runs with a timeout, so a step that
waits forever fails, and is checked against central finite differences in float64."""
import numpy as np
import pytest

from graphtool.builder import GraphBuilder
from graphtool.exec.session import Session
from graphtool.grad.driver import add_gradients, gradient_name

from .grad_check import numeric_gradient, random_feeds

TIMEOUT = 20   # seconds: these steps take milliseconds, a hang fails instead of blocking the suite


def _check(graph, y: str, xs: list[str], feeds: dict) -> None:
    add_gradients(graph, y, xs)
    session = Session(graph, threads=2)
    got = session.run([gradient_name(x) for x in xs], feeds, timeout=TIMEOUT).values
    for x, value in zip(xs, got):
        want = numeric_gradient(session, y, feeds, x)
        np.testing.assert_allclose(value, want, rtol=1e-6, atol=1e-8, err_msg=f"d {y} / d {x}")


def _total(b, x, name=None):
    return b.op("Sum", [x, np.array([0], np.int32)], name=name)


# --- hand-built: outer loop > cond > inner loop ------------------------------------------------

def _loop_cond_loop(pred_of):
    """h <- cond(pred_of(i, h), inner loop of tanh(g * w + x) twice from h, sigmoid(h) + w) + x,
    three times from h = x; y = sum(h * h)."""
    b = GraphBuilder()
    x = b.placeholder("float64", [3], name="x")
    w = b.placeholder("float64", [3], name="w")
    p = b.placeholder("bool", [], name="p")

    def outer(i, h):
        def with_loop():
            return b.while_loop(lambda j, g: b.less(j, 2),
                                lambda j, g: (b.add(j, 1), b.tanh(b.add(b.mul(g, w), x))), [0, h],
                                name="inner")[1]

        chosen = b.cond(pred_of(b, p, i, h), with_loop, lambda: b.add(b.sigmoid(h), w))
        return b.add(i, 1), b.add(b.mul(chosen, 0.5), x)

    _, h = b.while_loop(lambda i, h: b.less(i, 3), outer, [0, x], name="outer")
    _total(b, b.mul(h, h), name="y")
    return b.graph


def _fed(b, p, i, h):
    return p


def _first_iteration_only(b, p, i, h):
    """Computed in the outer loop: the inner loop runs in its first iteration (when p), the
    other branch in the rest."""
    return b.op("LogicalAnd", [p, b.less(i, 1)])


def _state_is_positive(b, p, i, h):
    """Computed from the loop's state: which branch runs changes with the values."""
    return b.op("LogicalOr", [p, b.greater(_total(b, h), 0.0)])


@pytest.mark.parametrize("p", [True, False])
@pytest.mark.parametrize("pred_of", [_fed, _first_iteration_only, _state_is_positive])
def test_loop_cond_loop_matches_finite_differences(pred_of, p):
    feeds = {**random_feeds(3, x=3, w=3), "p": np.bool_(p)}
    _check(_loop_cond_loop(pred_of), "y", ["x", "w"], feeds)


def test_state_dependent_predicate_takes_both_branches():
    """With p false the _state_is_positive case really changes branches between iterations (else
    it would test nothing the fed predicate does not): the same computation in numpy says which
    branch each iteration took, and gives the graph's y."""
    feeds = {**random_feeds(3, x=3, w=3), "p": np.bool_(False)}
    x, w = feeds["x"], feeds["w"]
    h, taken = x, []
    for _ in range(3):
        taken.append(bool(h.sum() > 0))
        if taken[-1]:
            g = h
            for _ in range(2):
                g = np.tanh(g * w + x)
        else:
            g = 1 / (1 + np.exp(-h)) + w
        h = g * 0.5 + x
    assert set(taken) == {True, False}
    y = Session(_loop_cond_loop(_state_is_positive)).run(["y"], feeds, timeout=TIMEOUT).values[0]
    np.testing.assert_allclose(y, np.sum(h * h), rtol=1e-12)


# --- the random nests that found the hang (seeds 6, 7, 8, 20) ---------------------------------

def _random_nest(b: GraphBuilder, rng, x, p, depth: int):
    """A float64 [3] tensor computed from `x` through random nests of loops and conds; the same
    choices, for the same seed, as the functionalize tests' generator (so the seeds that showed
    the hang build the same structures)."""
    choice = rng.integers(0, 6 if depth < 3 else 1)
    if choice == 0:
        return b.add(b.mul(x, float(rng.uniform(0.5, 1.5))), float(rng.uniform(-1, 1)))
    if choice == 1:   # a cond on the fed predicate or on a value computed here
        pred = p if rng.integers(0, 2) else b.less(_total(b, x), 0.0)
        return b.cond(pred, lambda: _random_nest(b, rng, x, p, depth + 1),
                      lambda: _random_nest(b, rng, b.tanh(x), p, depth + 1))
    if choice == 2:   # a loop carrying a counter and the value, reading x as an invariant
        trips = int(rng.integers(0, 4))

        def body(i, v):
            return b.add(i, 1), b.add(b.mul(_random_nest(b, rng, v, p, depth + 1), 0.5), x)
        return b.while_loop(lambda i, v: b.less(i, trips), body, [0, x])[1]
    if choice == 3:   # two results of one cond, one passed through, one a constant
        y, z = b.cond(p, lambda: (b.tanh(x), _random_nest(b, rng, x, p, depth + 1)),
                      lambda: (x, b.const(np.array([1.0, 2.0, 3.0]))))
        return b.add(y, z)
    if choice == 4:   # a TensorArray the loop fills, stacked and summed afterwards
        def fill(i, ta):
            scaled = b.mul(x, b.cast(i, "float64"))
            return b.add(i, 1), ta.write(i, _random_nest(b, rng, scaled, p, depth + 1))
        _, ta = b.while_loop(lambda i, ta: b.less(i, 3), fill, [0, b.tensor_array("float64", 3)])
        return _total(b, ta.stack())

    def step(i, v):   # a loop whose condition reads a value it computes, a cond deciding the step
        up = b.cond(b.less(_total(b, v), 5.0), lambda: b.add(i, 1), lambda: b.add(i, 2))
        return up, _random_nest(b, rng, b.add(v, 1.0), p, depth + 1)
    return b.while_loop(lambda i, v: b.less(i, 4), step, [0, x])[1]


@pytest.mark.parametrize("p", [True, False])
@pytest.mark.parametrize("seed", [6, 7, 8, 20])
def test_random_nests_with_loops_under_untaken_branches(seed, p):
    rng = np.random.default_rng(seed)
    b = GraphBuilder()
    x = b.placeholder("float64", [3], name="x")
    pred = b.placeholder("bool", [], name="p")
    out = _random_nest(b, rng, x, pred, 0)
    _total(b, b.mul(out, out), name="loss")
    value = [0.3, -1.2, 2.0] if p else [-0.7, 0.1, -0.4]
    _check(b.graph, "loss", ["x"], {"x": np.array(value), "p": np.bool_(p)})
