"""Which cluster `--cluster` names: the Ray instance to use and the tasks (worker processes) to start.

    local:N          a private Ray instance on this machine (loopback only) with N tasks of job `worker`
    auto             the Ray cluster RAY_ADDRESS names (or the one running on this machine)
    ray://HOST:PORT  the Ray cluster behind that Ray Client address
    FILE.json        a cluster spec, in the spirit of TensorFlow's ClusterSpec:

        {"address": "local" | "auto" | "ray://HOST:PORT" | "HOST:PORT",   (default "local";
                                                 HOST:PORT: the head's GCS, as RAY_ADDRESS holds it)
         "jobs": {"worker": 2,                                   two tasks, default options
                  "ps": [{"cpus": 1, "gpus": 0, "node": "10.0.0.5"}],   per-task options
                  "eval": ["10.0.0.6:2222"]}}                   TensorFlow style: host pins the task

`cpus` are the Ray CPUs a task reserves (default 1), `gpus` its GPUs (each becomes a device
`GPU:k` of the task), `node` the Ray node it must run on (node id or IP address). A task is the
process `/job:NAME/replica:0/task:K`; its devices are `CPU:0` and its GPUs.

Joining a cluster (`auto`, `ray://`) without a file starts one `worker` task per alive Ray node,
pinned to it, with that node's GPUs.
"""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field

from ..errors import UsageError
from ..placement.device_names import DeviceName

MAX_TASKS = 256
_JOB_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
_LOCAL = re.compile(r"local:(\d+)")
_HINT = "use --cluster local:N, auto, ray://HOST:PORT or a cluster spec FILE.json"


@dataclass(frozen=True)
class TaskSpec:
    """One task of the cluster: a worker process and the devices it owns."""

    job: str
    index: int
    cpus: float = 1.0
    gpus: int = 0
    node: str | None = None          # Ray node id or IP address it must run on

    @property
    def name(self) -> str:
        """`/job:worker/replica:0/task:1`"""
        return f"/job:{self.job}/replica:0/task:{self.index}"

    @property
    def short_name(self) -> str:
        """`worker:1`"""
        return f"{self.job}:{self.index}"

    @property
    def devices(self) -> list[str]:
        """Full names of the task's devices: CPU:0, then GPU:0..gpus-1."""
        names = [DeviceName(self.job, 0, self.index, "CPU", 0)]
        names += [DeviceName(self.job, 0, self.index, "GPU", k) for k in range(self.gpus)]
        return [name.to_string() for name in names]


@dataclass(frozen=True)
class ClusterSpec:
    """Where Ray is (`local`, `auto` or a `ray://` address) and the tasks; no tasks listed when
    joining without a file means one worker task per Ray node."""

    address: str
    tasks: tuple[TaskSpec, ...] = field(default_factory=tuple)
    source: str = ""

    @property
    def private(self) -> bool:
        """Whether dftool starts (and stops) its own Ray instance."""
        return self.address == "local"


def parse_cluster(text: str) -> ClusterSpec:
    """The ClusterSpec `--cluster TEXT` names; UsageError (exit 2) naming what is wrong."""
    text = text.strip()
    local = _LOCAL.fullmatch(text)
    if local:
        count = int(local.group(1))
        if not 1 <= count <= MAX_TASKS:
            raise UsageError(f"--cluster {text}: the number of workers must be 1..{MAX_TASKS}")
        return ClusterSpec("local", tuple(TaskSpec("worker", k) for k in range(count)), source=text)
    if text == "auto":
        return ClusterSpec(os.environ.get("RAY_ADDRESS") or "auto", source=text)
    if text.startswith("ray://"):
        if not re.fullmatch(r"ray://[^\s/:]+:\d+/?", text):
            raise UsageError(f"--cluster {text}: expected ray://HOST:PORT", hint=_HINT)
        return ClusterSpec(text, source=text)
    if text.endswith(".json") or os.path.isfile(text):
        return _from_file(text)
    raise UsageError(f"--cluster '{text}': not a cluster", hint=_HINT)


def _from_file(path: str) -> ClusterSpec:
    def fail(problem: str) -> UsageError:
        return UsageError(f"cluster spec '{path}': {problem}", hint="the format is in docs/commands.md (--cluster)")

    try:
        if os.path.getsize(path) > 1 << 20:
            raise fail("larger than 1 MiB")
        with open(path, encoding="utf-8") as file:
            data = json.load(file)
    except FileNotFoundError:
        raise UsageError(f"cluster spec '{path}': no such file", hint=_HINT) from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise fail(f"cannot read it ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("jobs"), dict) or not data["jobs"]:
        raise fail('expected {"jobs": {"worker": N, ...}}')
    unknown = set(data) - {"address", "jobs"}
    if unknown:
        raise fail(f"unknown field '{sorted(unknown)[0]}' (fields: address, jobs)")
    address = data.get("address", "local")
    if not isinstance(address, str) or not (address in ("local", "auto") or address.startswith("ray://")
                                            or re.fullmatch(r"[^\s/:]+:\d+", address)):
        raise fail(f"address '{address}': expected local, auto, ray://HOST:PORT or a cluster's GCS HOST:PORT")
    if address == "auto":
        address = os.environ.get("RAY_ADDRESS") or "auto"
    tasks: list[TaskSpec] = []
    for job, entry in data["jobs"].items():
        if not isinstance(job, str) or not _JOB_NAME.fullmatch(job) or job == "localhost":
            raise fail(f"bad job name '{job}' (letters, digits, _; not 'localhost')")
        tasks += _job_tasks(job, entry, fail)
    if len(tasks) > MAX_TASKS:
        raise fail(f"{len(tasks)} tasks; at most {MAX_TASKS}")
    return ClusterSpec(address, tuple(tasks), source=path)


def _job_tasks(job: str, entry, fail) -> list[TaskSpec]:
    if isinstance(entry, int) and not isinstance(entry, bool):
        if not 1 <= entry <= MAX_TASKS:
            raise fail(f"job '{job}': task count {entry} is not in 1..{MAX_TASKS}")
        return [TaskSpec(job, k) for k in range(entry)]
    if not isinstance(entry, list) or not entry:
        raise fail(f"job '{job}': expected a task count, or a list of tasks")
    tasks = []
    for k, options in enumerate(entry):
        where = f"job '{job}' task {k}"
        if isinstance(options, str):   # TensorFlow's "host:port": the host names the Ray node
            tasks.append(TaskSpec(job, k, node=options.rsplit(":", 1)[0] or None))
            continue
        if not isinstance(options, dict):
            raise fail(f"{where}: expected an object with cpus, gpus, node")
        unknown = set(options) - {"cpus", "gpus", "node"}
        if unknown:
            raise fail(f"{where}: unknown option '{sorted(unknown)[0]}' (options: cpus, gpus, node)")
        cpus, gpus, node = options.get("cpus", 1), options.get("gpus", 0), options.get("node")
        if isinstance(cpus, bool) or not isinstance(cpus, (int, float)) or not 0 <= cpus <= 1024:
            raise fail(f"{where}: cpus must be a number 0..1024")
        if isinstance(gpus, bool) or not isinstance(gpus, int) or not 0 <= gpus <= 64:
            raise fail(f"{where}: gpus must be an integer 0..64")
        if node is not None and not isinstance(node, str):
            raise fail(f"{where}: node must be a Ray node id or IP address")
        tasks.append(TaskSpec(job, k, float(cpus), gpus, node))
    return tasks
