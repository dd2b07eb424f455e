"""Device names parse, complete and match like TensorFlow's DeviceNameUtils (the expected fields
of the full, partial and legacy names below were checked against tf.DeviceSpec.from_string)."""
import pytest

from graphtool.placement.device_names import (DeviceName, canonical_device_name, is_local, matches,
                                              parse_device_list, parse_device_name, same_task, short_device_name)
from graphtool.errors import UsageError

FULL_CPU0 = "/job:localhost/replica:0/task:0/device:CPU:0"


@pytest.mark.parametrize("text, expected", [
    (FULL_CPU0, DeviceName("localhost", 0, 0, "CPU", 0)),
    ("/job:worker/replica:2/task:7/device:GPU:3", DeviceName("worker", 2, 7, "GPU", 3)),
    ("/device:GPU:*", DeviceName(type="GPU")),
    ("/device:GPU", DeviceName(type="GPU")),
    ("/job:localhost/device:CPU:1", DeviceName(job="localhost", type="CPU", index=1)),
    ("/job:*/replica:*/task:3", DeviceName(task=3)),
    ("/cpu:0", DeviceName(type="CPU", index=0)),
    ("/gpu:1", DeviceName(type="GPU", index=1)),
    ("/GPU:*", DeviceName(type="GPU")),
    ("/device:cpu:2", DeviceName(type="CPU", index=2)),
    ("cpu:0", DeviceName(type="CPU", index=0)),
    ("CPU:0", DeviceName(type="CPU", index=0)),
    ("gpu:12", DeviceName(type="GPU", index=12)),
    ("cpu", DeviceName(type="CPU")),
    ("gpu", DeviceName(type="GPU")),
    ("", DeviceName()),
    ("/", DeviceName()),
    # Short cluster forms: JOB:TASK[/replica:N][/TYPE:N]; a name that is no device type is a job.
    ("worker:1/cpu:0", DeviceName(job="worker", task=1, type="CPU", index=0)),
    ("ps:0/gpu:1", DeviceName(job="ps", task=0, type="GPU", index=1)),
    ("worker:2", DeviceName(job="worker", task=2)),
    ("worker", DeviceName(job="worker")),
    ("worker/cpu:1", DeviceName(job="worker", type="CPU", index=1)),
    ("worker:1/replica:2/cpu:0", DeviceName("worker", 2, 1, "CPU", 0)),
    ("replica:2/cpu:0", DeviceName(replica=2, type="CPU", index=0)),
    ("replica:2", DeviceName(replica=2)),
    ("worker:1/replica:2", DeviceName(job="worker", replica=2, task=1)),
    ("worker:*/gpu", DeviceName(job="worker", type="GPU")),
    ("tpu:1", DeviceName(type="TPU", index=1)),
    ("npu:1", DeviceName(type="NPU", index=1)),
    ("cpu:1/cpu:0", DeviceName(job="cpu", task=1, type="CPU", index=0)),   # a job named like a type
])
def test_parse(text, expected):
    assert parse_device_name(text) == expected


@pytest.mark.parametrize("text", ["/foo:0", "cpu:", "cpu:x", "/job:1worker", "/device:CPU:0/extra",
                                  "gpu :1", "/replica:-1", "cpu:0:1", "/job:local-host", "worker:1/",
                                  "worker:1/cpu:0/gpu:0", "worker:1/replica:x/cpu:0", "worker:1//cpu:0",
                                  "a/b/c", "worker:one/cpu:0"])
def test_bad_names_raise_usage_error_naming_the_text(text):
    with pytest.raises(UsageError) as info:
        parse_device_name(text)
    assert f"'{text}'" in str(info.value)
    assert info.value.exit_code == 2


@pytest.mark.parametrize("text, expected", [
    ("cpu:0", FULL_CPU0),
    ("/gpu:1", "/job:localhost/replica:0/task:0/device:GPU:1"),
    ("/device:GPU:*", "/job:localhost/replica:0/task:0/device:GPU:0"),
    ("gpu", "/job:localhost/replica:0/task:0/device:GPU:0"),
    ("", FULL_CPU0),
    ("/job:worker/task:2/device:CPU:3", "/job:worker/replica:0/task:2/device:CPU:3"),
    (FULL_CPU0, FULL_CPU0),
    ("worker:1/cpu:0", "/job:worker/replica:0/task:1/device:CPU:0"),
    ("ps:0/gpu:1", "/job:ps/replica:0/task:0/device:GPU:1"),
    ("worker:2", "/job:worker/replica:0/task:2/device:CPU:0"),
    ("worker:1/replica:2/cpu:0", "/job:worker/replica:2/task:1/device:CPU:0"),
])
def test_canonical(text, expected):
    assert canonical_device_name(text) == expected


def test_partial_names_print_like_tensorflow():
    # ParsedNameToString: only the given fields, '*' for an open index.
    assert str(parse_device_name("/device:GPU:*")) == "/device:GPU:*"
    assert str(parse_device_name("/job:localhost/cpu:1")) == "/job:localhost/device:CPU:1"


@pytest.mark.parametrize("spec, name, expected", [
    ("/device:GPU:*", "/job:localhost/replica:0/task:0/device:GPU:3", True),
    ("/device:GPU:*", FULL_CPU0, False),
    ("gpu", "/job:localhost/replica:0/task:0/device:GPU:0", True),
    ("cpu:1", FULL_CPU0, False),
    ("/job:localhost", FULL_CPU0, True),
    ("/job:worker", FULL_CPU0, False),
    ("/task:0/device:CPU:0", FULL_CPU0, True),
    ("", FULL_CPU0, True),
    # IsSpecification: a field the spec gives must be given in the name too.
    ("/device:CPU:0", "/device:CPU:*", False),
    ("/job:ps", "ps:0/cpu:0", True),
    ("worker:1", "/job:worker/replica:0/task:1/device:GPU:0", True),
    ("worker:1", "/job:worker/replica:0/task:2/device:CPU:0", False),
    ("/device:CPU:0", "worker:3/cpu:0", True),
])
def test_matches(spec, name, expected):
    assert matches(spec, name) is expected


def test_short_names():
    assert short_device_name(FULL_CPU0) == "cpu:0"
    assert short_device_name("/job:localhost/replica:0/task:0/device:GPU:2") == "gpu:2"
    assert short_device_name("/device:GPU:*") == "gpu:0"


@pytest.mark.parametrize("full, short", [
    ("/job:worker/replica:0/task:1/device:CPU:0", "worker:1/cpu:0"),
    ("/job:ps/replica:0/task:0/device:GPU:1", "ps:0/gpu:1"),
    ("/job:worker/replica:2/task:1/device:CPU:0", "worker:1/replica:2/cpu:0"),
    ("/job:localhost/replica:0/task:3/device:CPU:1", "localhost:3/cpu:1"),
    ("/job:localhost/replica:1/task:0/device:CPU:0", "localhost:0/replica:1/cpu:0"),
    # A job a short form cannot tell from a device type (or a replica) keeps its full name.
    ("/job:gpu/replica:0/task:1/device:CPU:0", "/job:gpu/replica:0/task:1/device:CPU:0"),
    ("/job:replica/replica:0/task:1/device:CPU:0", "/job:replica/replica:0/task:1/device:CPU:0"),
])
def test_short_names_of_other_tasks_name_the_task_and_parse_back(full, short):
    assert short_device_name(full) == short
    assert canonical_device_name(short) == full
    assert short_device_name(canonical_device_name(short)) == short


def test_every_short_name_round_trips():
    for job in ("localhost", "worker", "ps", "chief", "cpu", "replica", "w_2"):
        for replica in (0, 3):
            for task in (0, 1, 12):
                for kind in ("CPU", "GPU"):
                    full = f"/job:{job}/replica:{replica}/task:{task}/device:{kind}:{task % 3}"
                    assert canonical_device_name(short_device_name(full)) == full


def test_same_task_and_local():
    assert is_local("cpu:1") and is_local(FULL_CPU0) and not is_local("worker:0/cpu:0")
    assert same_task("worker:1/cpu:0", "/job:worker/task:1/device:GPU:0")
    assert not same_task("worker:1/cpu:0", "worker:2/cpu:0")
    assert not same_task("worker:1/cpu:0", "worker:1/replica:1/cpu:0")
    assert not same_task("cpu:0", "worker:0/cpu:0")


def test_device_lists():
    assert parse_device_list("cpu:0, cpu:1,gpu:0,cpu:0") == [
        FULL_CPU0, "/job:localhost/replica:0/task:0/device:CPU:1", "/job:localhost/replica:0/task:0/device:GPU:0"]
    for bad in ("", "cpu:0,,cpu:1", " , "):
        with pytest.raises(UsageError, match="bad device list"):
            parse_device_list(bad)
    with pytest.raises(UsageError, match="'cpu:x'"):
        parse_device_list("cpu:0,cpu:x")


def test_device_lists_of_cluster_tasks():
    assert parse_device_list("worker:0/cpu:0, worker:1/cpu:0,ps:0/cpu:0,worker:1") == [
        "/job:worker/replica:0/task:0/device:CPU:0", "/job:worker/replica:0/task:1/device:CPU:0",
        "/job:ps/replica:0/task:0/device:CPU:0"]
    assert parse_device_list("/job:worker/task:1/device:GPU:0,cpu:0") == [
        "/job:worker/replica:0/task:1/device:GPU:0", FULL_CPU0]

