"""remove_attribute, rename_op, add_default_attributes: node attributes and op names."""
from __future__ import annotations

from .base import Param, Transform, TransformResult, register_transform


@register_transform
class RemoveAttribute(Transform):
    name = "remove_attribute"
    description = "delete an attribute from the nodes of one op type (or of every op: op_name=*)"
    params = (Param("attribute_name", "the attribute to delete, e.g. _class or T", required=True),
              Param("op_name", "only nodes of this op type; * for every node", default="*"))

    def apply(self, graph, ctx, params):
        attribute, op = params["attribute_name"], params["op_name"]
        removed = 0
        for node in graph.nodes:
            if (op == "*" or node.op == op) and node.has_attr(attribute):
                node.del_attr(attribute)
                removed += 1
        return TransformResult.from_counts(attributes_removed=removed)


@register_transform
class RenameOp(Transform):
    name = "rename_op"
    description = "change the op type of every node of one type (e.g. a custom op to a standard one)"
    params = (Param("old_op_name", "the op type to replace", required=True),
              Param("new_op_name", "the op type it becomes", required=True))

    def apply(self, graph, ctx, params):
        old, new = params["old_op_name"], params["new_op_name"]
        renamed = 0
        for node in graph.nodes:
            if node.op == old and old != new:
                node.op = new
                renamed += 1
        notes = []
        if renamed and next(n for n in graph.nodes if n.op == new).spec is None:
            notes.append(f"{new} is not an op dftool knows: those nodes are kept as opaque ops")
        return TransformResult.from_counts(notes, ops_renamed=renamed)


@register_transform
class AddDefaultAttributes(Transform):
    name = "add_default_attributes"
    description = "write out every attribute a node leaves at its op's default (from the registered OpDefs)"

    def apply(self, graph, ctx, params):
        added, nodes = 0, 0
        unknown: set[str] = set()
        for node in graph.nodes:
            spec = node.spec
            if spec is None:
                unknown.add(node.op)
                continue
            missing = [a for a in spec.attrs.values() if a.has_default and not node.has_attr(a.name)]
            for attr in missing:
                node.set_attr(attr.name, attr.default, attr.kind)
            added += len(missing)
            nodes += bool(missing)
        notes = [f"ops dftool does not know (left as they are): {', '.join(sorted(unknown))}"] if unknown else []
        return TransformResult.from_counts(notes, attributes_added=added, nodes_changed=nodes)
