"""The JIT on partitioned graphs: clusters are per device (one JIT pass per partition), and random
placements of the partition tests (tests/exec/test_partitioned_equivalence.py) give what the
interpreter gives on one device (float32 rtol 1e-4)."""
from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("jax")

from graphtool.exec.session import Session  # noqa: E402
from graphtool.partition import partition  # noqa: E402

from ..exec.test_partitioned_equivalence import RANDOM_CASES, baseline, load_case, random_placement  # noqa: E402


def _assert_jit_matches(case, placed, graph, feeds, fetches):
    partition(placed)
    session = Session(placed, threads=1, jit=True)
    result = session.run(fetches, feeds, timeout=60, allow_dead=True)
    for name, got, want in zip(fetches, result.values, baseline(case, graph, feeds, fetches)):
        assert (got is None) == (want is None), name
        if want is None:
            continue
        assert got.dtype == want.dtype, name
        if want.dtype.kind in "fc":
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5, equal_nan=True, err_msg=f"{case}: {name}")
        else:
            np.testing.assert_array_equal(got, want, err_msg=f"{case}: {name}")
    for cluster in session.jit_report.clusters:   # every cluster lies on one device
        devices = {n.device for n in cluster.program.body.nodes if n.op != "Placeholder"}
        assert len(devices) <= 1, devices


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow],
          derandomize="FUZZ_RANDOM" not in os.environ)
@given(case=st.sampled_from(RANDOM_CASES), data=st.data())
def test_random_placements_with_jit_match_one_device(case, data):
    graph, feeds, fetches = load_case(case)
    _assert_jit_matches(case, random_placement(graph, data.draw), graph, feeds, fetches)
