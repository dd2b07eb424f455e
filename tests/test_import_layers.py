"""No import cycles among graphtool's modules (each layer imports only downward).

The check is static: every module under graphtool/ is parsed with `ast` and each import becomes
an edge to the graphtool module it loads (`from . import x` loads the submodule x when there is
one, otherwise the package). Importing a submodule also runs its parents' `__init__`, but that
is not an edge here: a package's `__init__` importing its own children is the normal direction.

Function-level ("lazy") imports count as edges too. A lazy import hides a cycle from the
interpreter, not from the design: `plan.py` importing the executor inside a function still made
the plan depend on the module that runs plans, and which of the two loads first then decides
whether a name exists yet. Imports under `if TYPE_CHECKING:` never run and are left out.
The generated protobuf modules (graphtool/proto) are left out as well.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE_DIR = Path(__file__).resolve().parents[1] / "graphtool"


def _modules(root: Path) -> dict[str, tuple[Path, bool]]:
    """Dotted module name -> (file, is a package __init__)."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts.pop()
        found[".".join(parts)] = (path, is_package)
    return found


def _absolute(module: str, is_package: bool, level: int, name: str | None) -> str:
    if not level:
        return name or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[:len(base) - (level - 1)]
    return ".".join(base + ([name] if name else []))


def _imports(tree: ast.AST):
    """Every Import/ImportFrom statement, at any depth, except under `if TYPE_CHECKING:`."""
    pending = [tree]
    while pending:
        node = pending.pop()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                pending.extend(child.orelse)
                continue
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                yield child
            else:
                pending.append(child)


def import_graph(root: Path = PACKAGE_DIR) -> dict[str, set[str]]:
    """Module -> the graphtool modules it imports (module-level and function-level imports)."""
    modules = _modules(root)
    edges: dict[str, set[str]] = {name: set() for name in modules}
    for name, (path, is_package) in modules.items():
        if "proto" in name.split("."):   # generated code
            continue
        for statement in _imports(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(statement, ast.Import):
                edges[name].update(alias.name for alias in statement.names if alias.name in modules)
                continue
            target = _absolute(name, is_package, statement.level, statement.module)
            for alias in statement.names:
                submodule = f"{target}.{alias.name}"
                if submodule in modules:
                    edges[name].add(submodule)
                elif target in modules:
                    edges[name].add(target)
        edges[name].discard(name)
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _describe(component: list[str], edges: dict[str, set[str]]) -> str:
    inside = set(component)
    return "; ".join(f"{m} -> {', '.join(sorted(edges[m] & inside))}" for m in component)


def test_graphtool_has_no_import_cycle():
    edges = import_graph()
    assert len(edges) > 100   # the walk found the package
    found = cycles(edges)
    assert not found, "import cycles:\n" + "\n".join(_describe(c, edges) for c in found)


@pytest.mark.parametrize("source, expected", [
    # A lazy import closing the loop counts; TYPE_CHECKING imports do not.
    ({"a.py": "from . import b\n", "b.py": "def f():\n    from .a import x\n"}, [["pkg.a", "pkg.b"]]),
    ({"a.py": "from . import b\n",
      "b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import x\n"}, []),
    # Through a package __init__ and an absolute import.
    ({"sub/__init__.py": "from .c import y\n", "sub/c.py": "import pkg.a\n", "a.py": "from .sub import y\n"},
     [["pkg.a", "pkg.sub", "pkg.sub.c"]]),
])
def test_the_check_finds_cycles(tmp_path, source, expected):
    root = tmp_path / "pkg"
    for name, text in {"__init__.py": "", **source}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    assert cycles(import_graph(root)) == expected


# Layers that work on graphs; the IR and the op registry sit below all of them.
_GRAPH_WORK = ("builder", "exec", "grad", "inspect", "jit", "loader", "opt", "partition", "placement",
               "profiling", "prune", "saved_model", "shape_inference")


@pytest.mark.parametrize("low", ["graphtool.ir", "graphtool.ops"])
def test_the_ir_and_the_registry_import_no_layer_above_them(low):
    edges = import_graph()
    above = {f"graphtool.{name}" for name in _GRAPH_WORK}
    found = sorted(f"{module} -> {target}" for module, targets in edges.items()
                   if module == low or module.startswith(low + ".")
                   for target in targets if ".".join(target.split(".")[:2]) in above)
    assert not found, found


def test_only_the_cli_reads_the_inspect_report():
    """`inspect` builds a command's report; a question several layers ask (the graph's outputs,
    for `run`'s default fetches) belongs to the IR (ir/queries.py), not to that report."""
    users = sorted(module for module, targets in import_graph().items() if "graphtool.inspect" in targets)
    assert users == [], users
