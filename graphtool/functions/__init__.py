"""Library functions (FunctionDefs kept in Graph.library): instantiating one as a body Graph,
inferring shapes through it, and describing the library. Lowering calls and functional control
flow into the graph itself is graphtool/opt/lower.py's job."""
from .instantiate import FunctionBody, instantiate
from .library import (CALL_OPS, FUNCTIONAL_OPS, drop_unreferenced, find_function, referenced_functions,
                      summarize_functions)

__all__ = ["CALL_OPS", "FUNCTIONAL_OPS", "FunctionBody", "drop_unreferenced", "find_function", "instantiate",
           "referenced_functions", "summarize_functions"]
