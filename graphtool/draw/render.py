"""Writing a picture: DOT text as it is (no dependency), SVG or PNG through Graphviz's `dot`
program (the system package 'graphviz'); without it those formats are one error line."""
from __future__ import annotations

import os
import shutil
import subprocess

from .. import graph_io
from ..errors import RuntimeFailure, UsageError

FORMATS = {".dot": "dot", ".gv": "dot", ".svg": "svg", ".png": "png"}
DOT_TIMEOUT_SECONDS = 300.0


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
        raise RuntimeFailure(f"writing {fmt} needs Graphviz's 'dot' program, which is not installed",
                             hint="install the system package 'graphviz' (apt install graphviz, brew install "
                                  "graphviz), or write .dot and render it elsewhere")
    return program


def write_drawing(text: str, path: str, fmt: str) -> None:
    """Write DOT `text` to `path` as `fmt` (atomically; '-' is stdout)."""
    data = text.encode()
    if fmt != "dot":
        program = check_renderable(fmt)
        assert program is not None
        try:
            done = subprocess.run([program, f"-T{fmt}"], input=data, capture_output=True,
                                  timeout=DOT_TIMEOUT_SECONDS, check=False)
        except subprocess.TimeoutExpired:
            raise RuntimeFailure(f"Graphviz 'dot' took longer than {DOT_TIMEOUT_SECONDS:g} s to lay out the picture",
                                 hint="collapse more (a smaller --depth, fewer --expand)") from None
        except OSError as exc:
            raise RuntimeFailure(f"cannot run Graphviz 'dot': {exc}") from None
        if done.returncode != 0:
            problem = (done.stderr.decode(errors="replace").strip().splitlines() or ["no message"])[0]
            raise RuntimeFailure(f"Graphviz 'dot' failed to render {fmt}: {problem}")
        data = done.stdout
    graph_io.write_atomic(path, data)
