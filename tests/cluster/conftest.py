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


@pytest.fixture(scope="session")
def join_spec(cluster3, tmp_path_factory):
    """A cluster spec file joining `cluster3`'s Ray instance with two tasks of its own that reserve
    no CPU: a CLI test joins in about a second instead of starting Ray (~12 s)."""
    import json

    import ray

    path = tmp_path_factory.mktemp("join") / "cluster.json"
    path.write_text(json.dumps({"address": ray.get_runtime_context().gcs_address,
                                "jobs": {"worker": [{"cpus": 0}, {"cpus": 0}]}}))
    return path
