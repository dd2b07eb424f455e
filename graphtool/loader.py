"""Where every command's input graph comes from: a GraphDef file or stdin, or a SavedModel.

    load_graph("model.pb")                                  # binary or text GraphDef, or '-'
    load_graph("saved_model_dir", signature="serving_default")
    load_graph("saved_model_dir/saved_model.pb")            # the same SavedModel

A SavedModel (a directory holding saved_model.pb or saved_model.pbtxt, or that file) is loaded as
the frozen graph of one signature (graphtool.saved_model); anything else goes through graph_io.
"""
from __future__ import annotations

from pathlib import Path

from . import graph_io
from .errors import InvalidGraphError, UsageError
from .ir import Graph, from_graphdef
from .saved_model.loader import SavedModelInfo, is_saved_model, load_saved_model


def load_graph(path: str, *, signature: str | None = None, verify: bool = True,
               problems: list[str] | None = None) -> Graph:
    """The IR of GRAPH; `signature` selects a SavedModel signature (UsageError for other inputs).
    `problems`: see from_graphdef (a GraphDef that fails to build or verify is still returned)."""
    return load_graph_and_origin(path, signature=signature, verify=verify, problems=problems)[0]


def load_graph_and_origin(path: str, *, signature: str | None = None, verify: bool = True,
                          problems: list[str] | None = None) -> tuple[Graph, SavedModelInfo | None]:
    """load_graph, plus what the SavedModel held (signatures, frozen variables) when it was one."""
    if is_saved_model(path):
        return load_saved_model(path, signature, verify=verify)
    if path != graph_io.STDIO and Path(path).is_dir():
        raise InvalidGraphError(f"{path}: is a directory without saved_model.pb or saved_model.pbtxt "
                                f"(neither a SavedModel nor a graph file)")
    if signature is not None:
        raise UsageError(f"--signature {signature}: {path} is not a SavedModel; signatures belong to "
                         f"SavedModel directories")
    graph_def = graph_io.load_graphdef(path)
    source = "<stdin>" if path == graph_io.STDIO else path
    try:
        return from_graphdef(graph_def, source, verify=verify, problems=problems), None
    except MemoryError:
        raise graph_io.out_of_memory_loading(source) from None
