"""Pictures of graphs: `dftool draw IN OUT.{dot,svg,png}`.

    picture = layout(graph, expand=["dense"], depth=0)   # what is drawn: boxes, nodes, edges
    text = to_dot(picture)                               # Graphviz DOT (the graphviz package)
    write_drawing(text, "out.svg")                       # .dot as is; .svg/.png through Graphviz `dot`

layout.py decides what is drawn (name scopes and while-loop frames collapsed into boxes, or
expanded into clusters; edges merged between drawn items); dot.py writes it as DOT (colours per
device with a legend, shape labels, dashed control edges); render.py writes the file.
"""
from .dot import to_dot
from .layout import DEFAULT_MAX_ITEMS, Picture, layout
from .render import FORMATS, check_renderable, write_drawing

__all__ = ["DEFAULT_MAX_ITEMS", "FORMATS", "Picture", "check_renderable", "layout", "to_dot", "write_drawing"]
