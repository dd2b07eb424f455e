"""A validator for the Chrome trace event format (the JSON object form), as far as dftool writes
it: what chrome://tracing and Perfetto need to open a file and draw it correctly.

Checked: the top level is {"traceEvents": [...], ...}; every event has a known phase and the
keys that phase requires, with the right types; timestamps and durations are non-negative
numbers; every process and thread that has events is named by metadata; complete events on one
thread never partly overlap; every flow id has exactly one start ("s") and one finish ("f"),
the finish not before the start, each inside a complete event of its thread; counters carry
numeric args. `validate_trace` returns the problems (empty when the trace is valid).
"""
from __future__ import annotations

from collections import defaultdict

_NUMBER = (int, float)
# phase -> required keys (besides "ph") and their types
_REQUIRED = {
    "X": {"name": str, "pid": int, "tid": int, "ts": _NUMBER, "dur": _NUMBER},
    "M": {"name": str, "pid": int, "args": dict},
    "C": {"name": str, "pid": int, "ts": _NUMBER, "args": dict},
    "s": {"name": str, "cat": str, "id": int, "pid": int, "tid": int, "ts": _NUMBER},
    "f": {"name": str, "cat": str, "id": int, "pid": int, "tid": int, "ts": _NUMBER},
}
_METADATA_NAMES = {"process_name", "process_sort_index", "thread_name", "thread_sort_index"}


def validate_trace(document) -> list[str]:
    """Everything wrong with `document` as a trace-event-format file (empty list: valid)."""
    if not isinstance(document, dict) or not isinstance(document.get("traceEvents"), list):
        return ["the top level must be an object with a 'traceEvents' list"]
    events = document["traceEvents"]
    problems = [p for index, event in enumerate(events) for p in _event_problems(index, event)]
    if problems:
        return problems
    return _naming_problems(events) + _overlap_problems(events) + _flow_problems(events) + _counter_problems(events)


def _event_problems(index: int, event) -> list[str]:
    if not isinstance(event, dict):
        return [f"event {index} is not an object"]
    phase = event.get("ph")
    if phase not in _REQUIRED:
        return [f"event {index}: unknown phase {phase!r}"]
    problems = []
    for key, kind in _REQUIRED[phase].items():
        value = event.get(key)
        if not isinstance(value, kind) or isinstance(value, bool):
            problems.append(f"event {index} ({phase}): '{key}' missing or not {kind}")
    for key in ("ts", "dur"):
        if isinstance(event.get(key), _NUMBER) and event[key] < 0:
            problems.append(f"event {index} ({phase}): negative {key}")
    if phase == "M" and event.get("name") not in _METADATA_NAMES:
        problems.append(f"event {index}: unknown metadata {event.get('name')!r}")
    if phase == "M" and event.get("name", "").startswith("thread") and not isinstance(event.get("tid"), int):
        problems.append(f"event {index}: thread metadata without a tid")
    if phase == "f" and event.get("bp") not in (None, "e"):
        problems.append(f"event {index}: flow finish binding point must be 'e'")
    return problems


def _naming_problems(events: list[dict]) -> list[str]:
    named_processes = {e["pid"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
    named_threads = {(e["pid"], e["tid"]) for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    problems = []
    for event in events:
        if event["ph"] == "M":
            continue
        if event["pid"] not in named_processes:
            problems.append(f"pid {event['pid']} has events but no process_name")
        if "tid" in event and (event["pid"], event["tid"]) not in named_threads:
            problems.append(f"thread {event['pid']}/{event['tid']} has events but no thread_name")
    return sorted(set(problems))


def complete_events_by_thread(events: list[dict]) -> dict[tuple, list[dict]]:
    """X events per (pid, tid), in time order."""
    threads = defaultdict(list)
    for event in events:
        if event["ph"] == "X":
            threads[(event["pid"], event["tid"])].append(event)
    for slices in threads.values():
        slices.sort(key=lambda e: (e["ts"], e["dur"]))
    return threads


def _overlap_problems(events: list[dict]) -> list[str]:
    problems = []
    for thread, slices in complete_events_by_thread(events).items():
        for before, after in zip(slices, slices[1:]):
            if after["ts"] < before["ts"] + before["dur"] - 1e-6:
                problems.append(f"thread {thread}: '{before['name']}' and '{after['name']}' overlap")
    return problems


def enclosing_slice(events: list[dict], pid: int, tid: int, ts: float) -> dict | None:
    """The complete event on thread (pid, tid) whose span contains `ts`."""
    for event in complete_events_by_thread(events).get((pid, tid), ()):
        if event["ts"] <= ts <= event["ts"] + event["dur"]:
            return event
    return None


def _flow_problems(events: list[dict]) -> list[str]:
    by_id = defaultdict(list)
    for event in events:
        if event["ph"] in "sf":
            by_id[(event["cat"], event["name"], event["id"])].append(event)
    problems = []
    for key, pair in by_id.items():
        phases = sorted(e["ph"] for e in pair)
        if phases != ["f", "s"]:
            problems.append(f"flow {key}: phases {phases}, expected one 's' and one 'f'")
            continue
        start, finish = sorted(pair, key=lambda e: e["ph"] != "s")
        if finish["ts"] < start["ts"]:
            problems.append(f"flow {key}: finishes before it starts")
        for end in (start, finish):
            if enclosing_slice(events, end["pid"], end["tid"], end["ts"]) is None:
                problems.append(f"flow {key}: its '{end['ph']}' is not inside a slice of its thread")
    return problems


def _counter_problems(events: list[dict]) -> list[str]:
    return [f"counter '{e['name']}' at {e['ts']}: non-numeric args"
            for e in events if e["ph"] == "C" and not all(isinstance(v, _NUMBER) for v in e["args"].values())]
