"""Parsing `--apply` values: the Graph Transform Tool's notation, comma separated.

    fold_batch_norms,remove_device
    set_device(device=/gpu:0, if_default=true)
    strip_unused_nodes(name=x, type=float, shape="1,224,224,3")

A value runs to the next ',' or ')' unless it is double-quoted ("..." may hold commas and
parentheses; \\" and \\\\ inside quotes stand for " and \\). A parameter may be given more than
once where the transform says it is repeatable. Errors name the --apply text and the position.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..errors import UsageError

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass
class TransformSpec:
    name: str
    params: dict[str, list[str]] = field(default_factory=dict)

    def __str__(self) -> str:
        if not self.params:
            return self.name
        inner = ", ".join(f"{k}={_quote(v)}" for k, values in self.params.items() for v in values)
        return f"{self.name}({inner})"


def _quote(value: str) -> str:
    if value and not any(ch in value for ch in ',()" \\'):
        return value
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


class _Reader:
    def __init__(self, text: str):
        self.text, self.pos = text, 0

    def error(self, what: str) -> UsageError:
        return UsageError(f"--apply {self.text!r}: {what} at position {self.pos + 1}",
                          hint="syntax: NAME or NAME(key=value, ...), comma separated; quote values holding commas")

    def skip_spaces(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1

    def peek(self) -> str:
        self.skip_spaces()
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def name(self, what: str) -> str:
        self.skip_spaces()
        match = _NAME.match(self.text, self.pos)
        if not match:
            raise self.error(f"expected a {what}")
        self.pos = match.end()
        return match.group()

    def expect(self, char: str) -> None:
        if self.peek() != char:
            raise self.error(f"expected '{char}'")
        self.pos += 1

    def value(self) -> str:
        if self.peek() == '"':
            self.pos += 1
            out = []
            while self.pos < len(self.text):
                ch = self.text[self.pos]
                if ch == "\\" and self.pos + 1 < len(self.text):
                    out.append(self.text[self.pos + 1])
                    self.pos += 2
                    continue
                if ch == '"':
                    self.pos += 1
                    return "".join(out)
                out.append(ch)
                self.pos += 1
            raise self.error("unterminated quoted value")
        start = self.pos
        while self.pos < len(self.text) and self.text[self.pos] not in ",)\"(":
            self.pos += 1
        return self.text[start:self.pos].strip()


def parse_apply(text: str) -> list[TransformSpec]:
    """The transforms one --apply value names, in order."""
    reader = _Reader(text)
    specs: list[TransformSpec] = []
    while True:
        spec = TransformSpec(reader.name("transform name"))
        if reader.peek() == "(":
            reader.pos += 1
            if reader.peek() != ")":
                while True:
                    key = reader.name("parameter name")
                    reader.expect("=")
                    spec.params.setdefault(key, []).append(reader.value())
                    if reader.peek() != ",":
                        break
                    reader.pos += 1
            reader.expect(")")
        specs.append(spec)
        if reader.peek() == "":
            return specs
        reader.expect(",")
