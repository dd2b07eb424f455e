"""What `--cluster` accepts, and what it refuses with one clear line (no Ray needed)."""
from __future__ import annotations

import json

import pytest

from graphtool.cluster.spec import TaskSpec, parse_cluster
from graphtool.errors import UsageError


def test_local_n_is_a_private_instance_with_n_worker_tasks():
    spec = parse_cluster("local:3")
    assert spec.private and [task.name for task in spec.tasks] == [f"/job:worker/replica:0/task:{k}" for k in range(3)]
    assert spec.tasks[1].devices == ["/job:worker/replica:0/task:1/device:CPU:0"]


def test_joining_names_the_address_and_leaves_the_tasks_to_the_nodes(monkeypatch):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    assert parse_cluster("auto").address == "auto" and parse_cluster("auto").tasks == ()
    monkeypatch.setenv("RAY_ADDRESS", "10.0.0.1:6379")
    assert parse_cluster("auto").address == "10.0.0.1:6379"
    assert parse_cluster("ray://head:10001").address == "ray://head:10001"


def test_a_spec_file_has_jobs_of_counts_options_and_tensorflow_addresses(tmp_path):
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps({"jobs": {"ps": [{"cpus": 2, "gpus": 1, "node": "10.0.0.5"}], "worker": 2,
                                         "eval": ["10.0.0.6:2222"]}}))
    spec = parse_cluster(str(path))
    assert spec.private
    assert spec.tasks == (TaskSpec("ps", 0, 2.0, 1, "10.0.0.5"), TaskSpec("worker", 0), TaskSpec("worker", 1),
                          TaskSpec("eval", 0, node="10.0.0.6"))
    assert spec.tasks[0].devices == ["/job:ps/replica:0/task:0/device:CPU:0", "/job:ps/replica:0/task:0/device:GPU:0"]


@pytest.mark.parametrize("text,message", [
    ("local:0", "number of workers must be 1..256"),
    ("local:x", "not a cluster"),
    ("ray://nohost", "expected ray://HOST:PORT"),
    ("nonsense", "not a cluster"),
])
def test_bad_cluster_names_are_usage_errors(text, message):
    with pytest.raises(UsageError, match=message):
        parse_cluster(text)


@pytest.mark.parametrize("content,message", [
    ("{", "cannot read it"),
    ('{"jobs": {}}', 'expected {"jobs"'),
    ('{"jobs": {"worker": 1}, "extra": 1}', "unknown field 'extra'"),
    ('{"jobs": {"localhost": 1}}', "bad job name 'localhost'"),
    ('{"jobs": {"worker": 0}}', "task count 0"),
    ('{"jobs": {"worker": [{"cpus": -1}]}}', "cpus must be a number"),
    ('{"jobs": {"worker": [{"gpus": 1.5}]}}', "gpus must be an integer"),
    ('{"jobs": {"worker": [{"memory": 1}]}}', "unknown option 'memory'"),
    ('{"address": "nowhere", "jobs": {"worker": 1}}', "address 'nowhere'"),
])
def test_bad_spec_files_name_the_file_and_the_problem(tmp_path, content, message):
    path = tmp_path / "cluster.json"
    path.write_text(content)
    with pytest.raises(UsageError, match=message) as error:
        parse_cluster(str(path))
    assert str(path) in str(error.value)


def test_a_missing_spec_file_is_named(tmp_path):
    with pytest.raises(UsageError, match="no such file"):
        parse_cluster(str(tmp_path / "absent.json"))


def test_run_without_ray_or_with_a_bad_cluster_fails_before_anything_starts(tmp_path):
    from tests.helpers import run_dftool

    code, _, stderr = run_dftool("run", "sample_graphs/mlp.pb", "--feeds", "sample_graphs/mlp.feeds.npz",
                                 "--cluster", "local:0")
    assert code == 2 and stderr.strip().startswith("error: --cluster local:0:"), stderr
    code, _, stderr = run_dftool("run", "sample_graphs/mlp.pb", "--feeds", "sample_graphs/mlp.feeds.npz",
                                 "--compress", "bf16")
    assert code == 2 and "--compress applies to transfers between the tasks of a cluster" in stderr
