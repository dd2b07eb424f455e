"""The Philox core and the random kernels' error paths (values against TensorFlow are in the
op_random_* fixtures and tests/fixtures/training/random_stateful_runs)."""
from __future__ import annotations

import numpy as np
import pytest

from graphtool import dtypes
from graphtool.builder import GraphBuilder
from graphtool.exec.kernels import philox
from graphtool.exec.session import Session


def test_philox_known_answers():
    # Random123's published Philox4x32-10 known-answer vectors.
    zero = philox.Philox((0, 0), (0, 0, 0, 0)).blocks(1)[0]
    assert [hex(int(w)) for w in zero] == ["0x6627e8d5", "0xe169c58d", "0xbc57ac4c", "0x9b00dbd8"]
    ones = philox.Philox((0xFFFFFFFF,) * 2, (0xFFFFFFFF,) * 4).blocks(1)[0]
    assert [hex(int(w)) for w in ones] == ["0x408f276d", "0x41c83b0e", "0xa20bc7c6", "0x6d5451fd"]


def test_counter_offsets_carry_across_words():
    start = philox.Philox((1, 2), (0xFFFFFFFE, 0xFFFFFFFF, 0xFFFFFFFF, 7))
    batched = start.blocks(4)
    one_by_one = np.stack([start.skipped(i).blocks(1)[0] for i in range(4)])
    np.testing.assert_array_equal(batched, one_by_one)
    assert start.skipped(2).counter == (0, 0, 0, 8)


def _run(op, inputs, **attrs):
    builder = GraphBuilder()
    builder.op(op, inputs, name="op", **attrs)
    return Session(builder.graph, threads=1).run(["op:0"]).values[0]


KEY, COUNTER = np.array([5], np.uint64), np.array([1, 2], np.uint64)
SHAPE = np.array([3], np.int32)


@pytest.mark.parametrize("alg, message", [(2, "ThreeFry has no CPU kernel"), (7, "Unsupported algorithm id: 7")])
def test_v2_ops_refuse_algorithms_tensorflow_cannot_run_on_a_cpu(alg, message):
    with pytest.raises(Exception, match=message):
        _run("StatelessRandomUniformV2", [SHAPE, KEY, COUNTER, np.int32(alg)], dtype=dtypes.float32)


def test_auto_select_is_philox():
    auto = _run("StatelessRandomNormalV2", [SHAPE, KEY, COUNTER, np.int32(3)], dtype=dtypes.float32)
    explicit = _run("StatelessRandomNormalV2", [SHAPE, KEY, COUNTER, np.int32(1)], dtype=dtypes.float32)
    np.testing.assert_array_equal(auto, explicit)


def test_uniform_int_needs_minval_below_maxval_unless_empty():
    with pytest.raises(Exception, match="Need minval < maxval, got 4 >= 4"):
        _run("StatelessRandomUniformIntV2", [SHAPE, KEY, COUNTER, np.int32(1), np.int32(4), np.int32(4)])
    empty = _run("StatelessRandomUniformIntV2", [np.array([0], np.int32), KEY, COUNTER, np.int32(1),
                                                 np.int32(4), np.int32(4)])
    assert empty.shape == (0,)


def test_seed_must_have_two_elements():
    with pytest.raises(Exception, match=r"seed \(input 0\) must be a vector of 2 elements, has shape \[3\]"):
        _run("StatelessRandomGetKeyCounter", [np.array([1, 2, 3], np.int64)])


def test_negative_dimensions_fail():
    with pytest.raises(Exception, match="Dimension -1 must be >= 0"):
        _run("StatelessRandomUniform", [np.array([-1], np.int32), np.array([1, 2], np.int64)], dtype=dtypes.float32)
