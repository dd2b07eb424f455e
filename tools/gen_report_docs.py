"""Write docs/reports.md from the JSON Schemas in docs/schemas/.

    python tools/gen_report_docs.py            # rewrite docs/reports.md
    python tools/gen_report_docs.py --check    # exit 1 if it is stale (tests/test_docs.py does this)

The schemas are where each report field is described (their `description`s); this page lays
them out as one table per report, so the two cannot disagree.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCHEMAS = ROOT / "docs" / "schemas"
PAGE = ROOT / "docs" / "reports.md"
# Reports in the order of docs/commands.md, then the cost model file.
ORDER = ["inspect", "inspect_nodes", "inspect_checkpoint", "prune", "optimize", "transform", "place", "partition", "grad", "replicate", "run", "profile", "compare", "cluster", "cost_model"]

INTRO = """\
# Reports

Every command writes a JSON report with `--json` (to stdout) or `--report FILE` (to a file;
both may be given). This page is generated from the JSON Schemas in [schemas/](schemas/) by
`tools/gen_report_docs.py`; `tests/test_report_schemas.py` validates reports the CLI really
writes against those schemas.

## Conventions

- Every report begins with `schema`, `"dftool.<command>/<n>"`, and `command`. Within one
  version fields are only added; a field that changes meaning or type, or is removed, bumps
  `<n>`. (Version 1 of each report was the older form that carried `schema_version: 1` and
  named its input `input`.)
- The graph a command read is `graph`, as given on the command line (`-` for standard input);
  commands that write a graph also give `output`.
- Counts and sizes in bytes are JSON integers (`18`, never `18.0`). Times are seconds
  (`*_seconds`) or milliseconds (`*_ms`), as the field name says.
- Device names are full (`/job:localhost/replica:0/task:0/device:CPU:0`) unless a field says
  short (`cpu:0`). Shapes are lists of dimensions with `null` for an unknown dimension, or
  `null` for an unknown rank.
- In the tables, `a.b` is field `b` of object `a`, `a[]` an element of list `a`, and `a{}` a
  value of map `a` (an object whose keys are names).

Two other files dftool writes are JSON too: the measured cost model (`profile
--cost-model-out`, read by `place --cost-model`; [below](#cost-model)) and the timeline of
`run --trace` / `profile --trace`, in the Chrome trace event format that chrome://tracing and
Perfetto open (one process per device, named short: `cpu:0`, or `worker:1/cpu:0` for a
device of a cluster task; one track per thread, an "X" event per node execution with its op,
inputs, frame and iteration in `args`, flow arrows from each `_Send` to its `_Recv` whose `args`
(and the `_Recv`'s, under `transfer`) give `tensor`, `from`, `to`, `bytes` and `latency_us`,
from the Send's start to the Recv's end, category `network` between tasks and `rendezvous`
within one; a memory counter per device; `otherData` carries `schema: "dftool.trace/1"`,
`wall_time_us`, `nodes_executed`, `loop_iterations` and `graph`).
"""


def type_text(schema: dict) -> str:
    if "const" in schema:
        return f'`"{schema["const"]}"`'
    if "enum" in schema:
        return "one of " + ", ".join(f"`{value}`" for value in schema["enum"])
    kind = schema.get("type")
    kinds = kind if isinstance(kind, list) else [kind] if kind else []
    nullable = "null" in kinds
    kinds = [k for k in kinds if k != "null"]
    if not kinds:
        text = "any"
    elif kinds == ["array"] and "items" in schema:
        items = type_text(schema["items"])
        text = f"list of ({items})" if " or " in items else f"list of {items}"
    elif kinds == ["object"] and isinstance(schema.get("additionalProperties"), dict) \
            and not schema.get("properties"):
        text = f"map of {type_text(schema['additionalProperties'])}"
    else:
        text = " or ".join(kinds)
    if not nullable:
        return text
    return f"{text}, or null" if " of " in text else f"{text} or null"


def rows(schema: dict, prefix: str = "") -> list[tuple[str, str, str]]:
    """(field path, type, meaning) for every field, depth first."""
    found = []
    required = set(schema.get("required", []))
    for name, field in schema.get("properties", {}).items():
        path = f"{prefix}{name}"
        meaning = field.get("description", "")
        if name not in required:
            meaning = f"(optional) {meaning}"
        found.append((path, type_text(field), meaning))
        found += _children(field, path)
    return found


def _children(field: dict, path: str) -> list[tuple[str, str, str]]:
    kinds = field.get("type")
    kinds = kinds if isinstance(kinds, list) else [kinds]
    if "array" in kinds and isinstance(field.get("items"), dict) and field["items"].get("properties"):
        return rows(field["items"], f"{path}[].")
    if "object" in kinds and field.get("properties"):
        return rows(field, f"{path}.")
    values = field.get("additionalProperties")
    if "object" in kinds and isinstance(values, dict) and values.get("properties"):
        return rows(values, f"{path}{{}}.")
    return []


def section(name: str) -> str:
    schema = json.loads((SCHEMAS / f"{name}.schema.json").read_text())
    lines = [f"## {name.replace('_', ' ')}", "", f"`{schema['title']}`. {schema['description']}", "",
             f"Schema: [schemas/{name}.schema.json](schemas/{name}.schema.json)", "",
             "| field | type | meaning |", "| --- | --- | --- |"]
    for path, kind, meaning in rows(schema):
        lines.append(f"| `{path}` | {kind} | {meaning.replace('|', '/')} |")
    return "\n".join(lines) + "\n"


def render() -> str:
    return INTRO + "".join("\n" + section(name) for name in ORDER)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if docs/reports.md is stale")
    args = parser.parse_args()
    text = render()
    if args.check:
        if PAGE.read_text() != text:
            print("docs/reports.md is stale: run python tools/gen_report_docs.py", file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
