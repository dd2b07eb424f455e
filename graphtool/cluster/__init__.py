"""The cluster runtime: a graph's partitions on Ray worker processes, on one machine or many.

    spec.py               what `--cluster` names: a private local instance, a Ray cluster to
                          join, or a cluster spec file; the tasks and their devices
    ray_engine.py         Ray underneath: starting/joining it, one actor per task, calls, deaths
    worker.py             a task's worker: registered partitions, its share of each step
    remote_rendezvous.py  Send/Recv across tasks, with the same keys as in one process
    master.py             placement over the cluster, registration, steps, health checks

    >>> with open_cluster("local:3") as cluster:               # doctest: +SKIP
    ...     session = Session(graph, cluster=cluster)
    ...     session.run(["probs"], {"x": x})
"""
from __future__ import annotations

from .master import Cluster, ClusterExecutor, open_cluster
from .ray_engine import INSTALL_HINT, WorkerLost, available, shutdown_all
from .spec import ClusterSpec, TaskSpec, parse_cluster

__all__ = ["Cluster", "ClusterExecutor", "ClusterSpec", "INSTALL_HINT", "TaskSpec", "WorkerLost", "available",
           "open_cluster", "parse_cluster", "shutdown_all"]
