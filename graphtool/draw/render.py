"""Writing a picture: DOT text as it is, SVG or PNG laid out by Graphviz's `dot` program (the
system package 'graphviz', run through the `graphviz` Python package); without the program those
formats are one error line."""
from __future__ import annotations

import os
import shutil

import graphviz

from .. import graph_io
from ..errors import RuntimeFailure, UsageError

FORMATS = {".dot": "dot", ".gv": "dot", ".svg": "svg", ".png": "png"}


def output_format(path: str, fmt: str | None = None) -> str:
    """'dot', 'svg' or 'png': `fmt` if given, else by the file name's suffix."""
    if fmt is not None:
        if fmt not in set(FORMATS.values()):
            raise UsageError(f"--format {fmt}: expected one of dot, svg, png")
        return fmt
    suffix = os.path.splitext(path)[1].lower()
    if suffix not in FORMATS:
        raise UsageError(f"{path}: cannot tell the picture format from the name",
                         hint="name it .dot (or .gv), .svg or .png, or give --format")
    return FORMATS[suffix]


def check_renderable(fmt: str) -> str | None:
    """The `dot` program's path for svg/png (None for dot text); RuntimeFailure when missing."""
    if fmt == "dot":
        return None
    program = shutil.which("dot")
    if program is None:
        raise _no_dot(fmt)
    return program


def _no_dot(fmt: str) -> RuntimeFailure:
    return RuntimeFailure(f"writing {fmt} needs Graphviz's 'dot' program, which is not installed",
                          hint="install the system package 'graphviz' (apt install graphviz, brew install "
                               "graphviz), or write .dot and render it elsewhere")


def write_drawing(text: str, path: str, fmt: str) -> None:
    """Write DOT `text` to `path` as `fmt` (atomically; '-' is stdout)."""
    data = text.encode()
    if fmt != "dot":
        check_renderable(fmt)
        try:
            data = graphviz.pipe("dot", fmt, data, quiet=True)
        except graphviz.ExecutableNotFound:
            raise _no_dot(fmt) from None
        except graphviz.CalledProcessError as exc:
            message = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else str(exc.stderr or "")
            problem = (message.strip().splitlines() or ["no message"])[0]
            raise RuntimeFailure(f"Graphviz 'dot' failed to render {fmt}: {problem}") from None
        except OSError as exc:
            raise RuntimeFailure(f"cannot run Graphviz 'dot': {exc}") from None
    graph_io.write_atomic(path, data)
