"""One private Ray instance with three worker tasks for the cluster tests of this process (started
on first use, shut down when the session ends, also after failures)."""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.cluster


@pytest.fixture(scope="session")
def cluster3():
    pytest.importorskip("ray")
    from graphtool.cluster import open_cluster

    cluster = open_cluster("local:3")
    try:
        yield cluster
    finally:
        cluster.close()
