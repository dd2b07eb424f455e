"""The graph IR: Graph, Node, TensorRef, frames, GraphDef conversion."""
from .convert import from_graphdef
from .export import node_to_nodedef, to_graphdef
from .frames import Frame, FrameInfo
from .graph import Graph, parse_tensor_name
from .node import Node, TensorRef

__all__ = ["Frame", "FrameInfo", "Graph", "Node", "TensorRef", "from_graphdef", "node_to_nodedef",
           "parse_tensor_name", "to_graphdef"]
