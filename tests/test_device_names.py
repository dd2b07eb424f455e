"""Device names parse, complete and match like TensorFlow's DeviceNameUtils (the expected fields
of the full, partial and legacy names below were checked against tf.DeviceSpec.from_string)."""
import pytest

from graphtool.placement.device_names import (DeviceName, canonical_device_name, matches, parse_device_list,
                                    parse_device_name, short_device_name)
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
])
def test_parse(text, expected):
    assert parse_device_name(text) == expected


@pytest.mark.parametrize("text", ["/foo:0", "cpu:", "cpu:x", "/job:1worker", "/device:CPU:0/extra",
                                  "gpu :1", "/replica:-1", "cpu:0:1", "/job:local-host"])
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
])
def test_matches(spec, name, expected):
    assert matches(spec, name) is expected


def test_short_names():
    assert short_device_name(FULL_CPU0) == "cpu:0"
    assert short_device_name("/job:localhost/replica:0/task:0/device:GPU:2") == "gpu:2"
    assert short_device_name("/device:GPU:*") == "gpu:0"


def test_device_lists():
    assert parse_device_list("cpu:0, cpu:1,gpu:0,cpu:0") == [
        FULL_CPU0, "/job:localhost/replica:0/task:0/device:CPU:1", "/job:localhost/replica:0/task:0/device:GPU:0"]
    for bad in ("", "cpu:0,,cpu:1", " , "):
        with pytest.raises(UsageError, match="bad device list"):
            parse_device_list(bad)
    with pytest.raises(UsageError, match="'cpu:x'"):
        parse_device_list("cpu:0,cpu:x")

