"""TensorFlow device names: parsing, canonical forms and matching.

A device name is `/job:NAME/replica:N/task:N/device:TYPE:N`. Every field may be left out (it is
then unspecified, i.e. "any") and `*` stands for "any" too, as in TensorFlow's
`DeviceNameUtils::ParseFullName`. Accepted spellings:

    /job:localhost/replica:0/task:0/device:CPU:0   full name
    /device:GPU:*  /job:localhost/device:CPU:1     partial specifications
    /cpu:0  /gpu:1  /CPU:0                         TensorFlow's legacy forms
    cpu:0  CPU:0  gpu:1  cpu  gpu                  short forms (the --devices list, `dftool run`)
    worker:1/cpu:0  ps:0/gpu:1  worker:2           short cluster forms: JOB:TASK[/replica:N][/TYPE:N]
    worker:1/replica:2/cpu:0  worker/cpu:1         (a task alone, `worker:2`, made canonical is its cpu:0)
    ""                                             no constraint at all

In a short form, a lone `NAME:N` is a device when NAME is a device type TensorFlow knows
(KNOWN_DEVICE_TYPES: cpu, gpu, tpu, ...) and a job's task otherwise: `gpu:1` is a GPU, `worker:1`
task 1 of job worker.

Device types are upper-cased (TensorFlow treats legacy `cpu`/`gpu` as `CPU`/`GPU`; types are
otherwise case-sensitive, and we upper-case every type so `/device:cpu:0` means CPU too).

    >>> canonical_device_name("gpu:1")
    '/job:localhost/replica:0/task:0/device:GPU:1'
    >>> matches("/device:GPU:*", "/job:localhost/replica:0/task:0/device:GPU:3")
    True
    >>> short_device_name("/job:localhost/replica:0/task:0/device:CPU:0")
    'cpu:0'
    >>> canonical_device_name("worker:1/cpu:0")
    '/job:worker/replica:0/task:1/device:CPU:0'
    >>> short_device_name("/job:worker/replica:0/task:1/device:CPU:0")
    'worker:1/cpu:0'
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from functools import lru_cache

from ..errors import UsageError

DEFAULT_JOB = "localhost"
# Device types of TensorFlow and its pluggable-device plugins (Intel XPU, Ascend NPU, DirectML):
# in a short form, `NAME:N` with NAME one of these is a device, any other NAME a job (`worker:1`).
KNOWN_DEVICE_TYPES = frozenset({"CPU", "GPU", "TPU", "TPU_SYSTEM", "XLA_CPU", "XLA_GPU", "XLA_TPU_JIT",
                          "XPU", "NPU", "DML"})

_JOB = r"[A-Za-z][A-Za-z0-9_]*"
_TYPE = r"[A-Za-z][A-Za-z0-9_]*"
_NUMBER = r"\d+"
# One field of a full name; `*` means "any". The legacy `/cpu:N` / `/gpu:N` forms are folded in
# by the caller before matching these.
_FIELD = re.compile(
    rf"/job:(?P<job>\*|{_JOB})"
    rf"|/replica:(?P<replica>\*|{_NUMBER})"
    rf"|/task:(?P<task>\*|{_NUMBER})"
    rf"|/device:(?P<type>\*|{_TYPE})(?::(?P<index>\*|{_NUMBER}))?"
    rf"|/(?P<legacy_type>cpu|gpu|CPU|GPU):(?P<legacy_index>\*|{_NUMBER})"
)
# One `/`-separated part of a short form: `TYPE[:N]` (TensorFlow's ParseLocalName, plus a bare
# type for convenience), `JOB[:TASK]` or `replica:N`.
_SHORT_PART = re.compile(rf"(?P<name>{_TYPE})(?::(?P<number>\*|{_NUMBER}))?")


@dataclass(frozen=True)
class DeviceName:
    """A parsed device name; None in a field means unspecified (matches anything)."""

    job: str | None = None
    replica: int | None = None
    task: int | None = None
    type: str | None = None
    index: int | None = None

    @property
    def is_full(self) -> bool:
        """Whether every field is given (the name of one concrete device)."""
        return None not in (self.job, self.replica, self.task, self.type, self.index)

    def completed(self) -> "DeviceName":
        """This name with unspecified fields filled: job localhost, replica/task/index 0, type CPU."""
        return DeviceName(
            job=self.job if self.job is not None else DEFAULT_JOB,
            replica=self.replica if self.replica is not None else 0,
            task=self.task if self.task is not None else 0,
            type=self.type if self.type is not None else "CPU",
            index=self.index if self.index is not None else 0,
        )

    def to_string(self) -> str:
        """TensorFlow's ParsedNameToString: given fields only; `TYPE:*` when the index is open."""
        parts = []
        if self.job is not None:
            parts.append(f"/job:{self.job}")
        if self.replica is not None:
            parts.append(f"/replica:{self.replica}")
        if self.task is not None:
            parts.append(f"/task:{self.task}")
        if self.type is not None:
            parts.append(f"/device:{self.type}:{'*' if self.index is None else self.index}")
        return "".join(parts)

    def __str__(self) -> str:
        return self.to_string()


def _number_or_any(text: str | None) -> int | None:
    return None if text in (None, "*") else int(text)


def _text_or_any(text: str | None) -> str | None:
    return None if text in (None, "*") else text


def _bad_name(text: str) -> UsageError:
    return UsageError(f"bad device name '{text}'",
                      hint="use /job:localhost/replica:0/task:0/device:CPU:0, /device:GPU:*, cpu:0, gpu:1 "
                           "or worker:1/cpu:0")


def _parse_full(text: str) -> DeviceName:
    """Parse a `/`-separated name field by field; later fields override earlier ones like in TF."""
    fields: dict = {}
    position = 0
    while position < len(text):
        match = _FIELD.match(text, position)
        if match is None:
            raise _bad_name(text)
        groups = match.groupdict()
        if match.group(0).startswith("/job:"):
            fields["job"] = _text_or_any(groups["job"])
        elif groups["replica"] is not None:
            fields["replica"] = _number_or_any(groups["replica"])
        elif groups["task"] is not None:
            fields["task"] = _number_or_any(groups["task"])
        elif groups["type"] is not None:
            fields["type"] = _text_or_any(groups["type"])
            fields["index"] = _number_or_any(groups["index"])
        else:
            fields["type"] = groups["legacy_type"]
            fields["index"] = _number_or_any(groups["legacy_index"])
        position = match.end()
    return _normalized(DeviceName(**fields))


def _normalized(name: DeviceName) -> DeviceName:
    # TF types are case-sensitive, but `cpu`/`gpu` are legacy spellings of CPU/GPU and no
    # lower-case device type exists, so every type is upper-cased.
    return replace(name, type=name.type.upper()) if name.type else name


@lru_cache(maxsize=4096)   # placement parses the same few names many times; DeviceName is immutable
def parse_device_name(text: str) -> DeviceName:
    """Parse any accepted spelling (see the module docstring); UsageError names a bad one.

    >>> parse_device_name("/job:localhost/device:CPU:1")
    DeviceName(job='localhost', replica=None, task=None, type='CPU', index=1)
    >>> parse_device_name("gpu")
    DeviceName(job=None, replica=None, task=None, type='GPU', index=None)
    """
    stripped = text.strip()
    if stripped in ("", "/"):
        return DeviceName()
    if stripped.startswith("/"):
        return _parse_full(stripped)
    return _parse_short(stripped, text)


def _parse_short(stripped: str, text: str) -> DeviceName:
    """`[JOB[:TASK]/][replica:N/]TYPE[:N]` or `JOB[:TASK]` (see the module docstring)."""
    parts = []
    for part in stripped.split("/"):
        match = _SHORT_PART.fullmatch(part)
        if match is None:
            raise _bad_name(text)
        parts.append((match.group("name"), match.group("number")))
    fields: dict = {}
    (name, number), rest = parts[0], parts[1:]
    # The first part is a task when more parts follow or its name is no device type; `replica:N`
    # first means no job was given.
    starts_with_task = name != "replica" and (bool(rest) or name.upper() not in KNOWN_DEVICE_TYPES)
    if starts_with_task:
        fields.update(job=_text_or_any(name), task=_number_or_any(number))
    else:
        rest = parts
    if rest and rest[0][0] == "replica":
        fields["replica"] = _number_or_any(rest[0][1])
        rest = rest[1:]
    if len(rest) > 1:
        raise _bad_name(text)
    if rest:
        fields.update(type=rest[0][0], index=_number_or_any(rest[0][1]))
    return _normalized(DeviceName(**fields))


def canonical_device_name(text: str) -> str:
    """The full name of the device `text` names, with missing fields filled in (job localhost,
    replica 0, task 0, type CPU, index 0; `*` counts as missing).

    >>> canonical_device_name("/cpu:1")
    '/job:localhost/replica:0/task:0/device:CPU:1'
    """
    return parse_device_name(text).completed().to_string()


def _as_parsed(name: str | DeviceName) -> DeviceName:
    return name if isinstance(name, DeviceName) else parse_device_name(name)


def matches(spec: str | DeviceName, full_name: str | DeviceName) -> bool:
    """Whether device `full_name` satisfies the specification `spec` (TF's IsSpecification:
    every field `spec` gives must be given, and equal, in `full_name`).

    >>> matches("gpu", "/job:localhost/replica:0/task:0/device:GPU:1")
    True
    >>> matches("/job:worker", "/job:localhost/replica:0/task:0/device:CPU:0")
    False
    """
    pattern, name = _as_parsed(spec), _as_parsed(full_name)
    return all(
        wanted is None or wanted == getattr(name, field)
        for field in ("job", "replica", "task", "type", "index")
        for wanted in (getattr(pattern, field),)
    )


def is_local(name: str | DeviceName) -> bool:
    """Whether a device name is in this process's task (/job:localhost/replica:0/task:0), its
    missing fields filled like canonical_device_name does."""
    parsed = _as_parsed(name).completed()
    return (parsed.job, parsed.replica, parsed.task) == (DEFAULT_JOB, 0, 0)


def same_task(a: str | DeviceName, b: str | DeviceName) -> bool:
    """Whether two devices are in one job/replica/task (one process: no network between them)."""
    first, second = _as_parsed(a).completed(), _as_parsed(b).completed()
    return (first.job, first.replica, first.task) == (second.job, second.replica, second.task)


def device_order(name: str) -> tuple:
    """A sort key putting device names in the order job, replica, task, device type, index
    (task:10 after task:2); a name that does not parse sorts first, by its text."""
    try:
        parsed = parse_device_name(name).completed()
    except UsageError:
        return ("", 0, 0, name, 0)
    return (parsed.job, parsed.replica, parsed.task, parsed.type, parsed.index)


def short_device_name(full: str | DeviceName) -> str:
    """The spelling tables and --devices use: `type:index` in lower case for a device of this
    process's task ('cpu:0'), `job:task/type:index` for any other ('worker:1/cpu:0'), with
    `/replica:N` after the task when N is not 0 ('worker:1/replica:2/cpu:0'). It parses back to
    the same device; a job named like a device type (which a short form cannot tell from one)
    keeps its full name.

    A name without a type or index fills them like canonical_device_name does."""
    name = _as_parsed(full).completed()
    assert name.type is not None   # completed() fills every field
    device = f"{name.type.lower()}:{name.index}"
    if is_local(name):
        return device
    if name.job is None or name.job.upper() in KNOWN_DEVICE_TYPES or name.job == "replica":
        return name.to_string()
    replica = f"/replica:{name.replica}" if name.replica else ""
    return f"{name.job}:{name.task}{replica}/{device}"


def parse_device_list(text: str) -> list[str]:
    """A comma-separated --devices list to canonical full names, in order, without duplicates.

    >>> parse_device_list("cpu:0, gpu:0")
    ['/job:localhost/replica:0/task:0/device:CPU:0', '/job:localhost/replica:0/task:0/device:GPU:0']
    """
    items = [item.strip() for item in text.split(",")]
    if not text.strip() or any(not item for item in items):
        raise UsageError(f"bad device list '{text}'",
                         hint="expected e.g. cpu:0,cpu:1,gpu:0 or worker:0/cpu:0,worker:1/cpu:0,ps:0/cpu:0")
    names: list[str] = []
    for item in items:
        name = canonical_device_name(item)
        if name not in names:
            names.append(name)
    return names


__all__ = ["DEFAULT_JOB", "KNOWN_DEVICE_TYPES", "DeviceName", "canonical_device_name", "is_local", "matches",
           "parse_device_list", "parse_device_name", "same_task", "short_device_name"]
