"""The transform contract: a small class with one job, a description and declared parameters.

    @register_transform
    class RemoveDevice(Transform):
        name = "remove_device"
        description = "clear every node's device"

        def apply(self, graph, ctx, params) -> TransformResult:
            ...
            return TransformResult.from_counts(devices_cleared=12)

`params` holds the values given for the declared Params, parsed to their kinds (str, int, float,
bool; a `repeatable` Param collects a list), with defaults filled in. `ctx` says which nodes are
the graph's inputs and outputs: transforms keep those names and values.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from importlib import import_module
from typing import Any, ClassVar

from ..errors import UsageError
from ..ir import Graph, Node
from ..suggest import did_you_mean, join_hints

_TRUE = ("true", "1", "yes")
_FALSE = ("false", "0", "no")


@dataclass(frozen=True)
class Param:
    """One parameter of a transform: `kind` is str, int, float or bool."""

    name: str
    help: str
    kind: type = str
    default: Any = None
    required: bool = False
    repeatable: bool = False

    def parse(self, transform: str, text: str) -> Any:
        where = f"{transform}({self.name}={text})"
        if self.kind is bool:
            if text.lower() in _TRUE:
                return True
            if text.lower() in _FALSE:
                return False
            raise UsageError(f"{where}: expected true or false")
        if self.kind in (int, float):
            try:
                return self.kind(text)
            except ValueError:
                raise UsageError(f"{where}: expected {'an integer' if self.kind is int else 'a number'}") from None
        return text

    def describe(self) -> str:
        kind = {str: "text", int: "integer", float: "number", bool: "true|false"}[self.kind]
        extra = "required" if self.required else (f"default {self.default}" if self.default not in (None, [], "")
                                                  else "optional")
        return f"{self.name}=<{kind}>{' (repeatable)' if self.repeatable else ''}: {self.help} [{extra}]"


@dataclass
class TransformContext:
    """The graph's inputs (placeholders fed from outside) and outputs (node names) to preserve."""

    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)

    def protected(self) -> set[str]:
        return set(self.inputs) | set(self.outputs)


@dataclass
class TransformResult:
    """What one transform changed: counts by kind (zero counts left out) and notes for the user."""

    counts: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    # A transform that builds a new graph instead of changing the given one returns it here.
    graph: Graph | None = field(default=None, repr=False)

    @classmethod
    def from_counts(cls, notes: list[str] | None = None, **counts: int) -> "TransformResult":
        return cls({k: int(v) for k, v in counts.items() if v}, list(notes or []))

    @property
    def changed(self) -> bool:
        return bool(self.counts)


class Transform:
    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    params: ClassVar[tuple[Param, ...]] = ()

    def apply(self, graph: Graph, ctx: TransformContext, params: dict[str, Any]) -> TransformResult:
        raise NotImplementedError  # pragma: no cover - interface

    @classmethod
    def bind(cls, given: dict[str, list[str]]) -> dict[str, Any]:
        """The parsed parameter values; UsageError naming an unknown, missing or repeated one."""
        declared = {p.name: p for p in cls.params}
        values: dict[str, Any] = {}
        for key, texts in given.items():
            if key not in declared:
                valid = ", ".join(declared) or "none"
                raise UsageError(f"transform {cls.name}: unknown parameter '{key}'",
                                 hint=join_hints(did_you_mean(key, declared), f"its parameters: {valid}"))
            param = declared[key]
            if len(texts) > 1 and not param.repeatable:
                raise UsageError(f"transform {cls.name}: parameter '{key}' given {len(texts)} times")
            parsed = [param.parse(cls.name, text) for text in texts]
            values[key] = parsed if param.repeatable else parsed[0]
        for param in cls.params:
            if param.name not in values:
                if param.required:
                    raise UsageError(f"transform {cls.name} needs {param.name}=...", hint=param.describe())
                values[param.name] = list(param.default or []) if param.repeatable else param.default
        return values


_TRANSFORMS: dict[str, type[Transform]] = {}


def register_transform(cls: type[Transform]) -> type[Transform]:
    if not cls.name or cls.name in _TRANSFORMS:
        raise ValueError(f"transform {cls.__name__} needs a unique name (got {cls.name!r})")
    _TRANSFORMS[cls.name] = cls
    return cls


def registered_transforms() -> dict[str, type[Transform]]:
    # Importing the package registers every transform (by name: the package imports this module).
    import_module(__name__.rsplit(".", 1)[0])
    return dict(sorted(_TRANSFORMS.items()))


def lookup(name: str) -> type[Transform]:
    transforms = registered_transforms()
    if name not in transforms:
        raise UsageError(f"unknown transform '{name}'",
                         hint=join_hints(did_you_mean(name, transforms), "dftool transform --list describes them"))
    return transforms[name]


def is_protected(node: Node, ctx: TransformContext) -> bool:
    return node.name in ctx.protected()
