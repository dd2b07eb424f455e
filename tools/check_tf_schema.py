"""Check that schemas/ matches TensorFlow's protos field for field (needs tensorflow installed).

    python tools/check_tf_schema.py     # prints differences, exit 1 if any

Compares every message reachable from GraphDef, OpList, SavedModel, the tensor-bundle entries, the
V1 checkpoint slices, the checkpoint object graph and step stats (field names, numbers, types) and the DataType / FullTypeId enums between TensorFlow's generated modules and graphtool.proto.
"""
import os
import sys
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tensorflow.core.framework import full_type_pb2 as tf_full_type  # noqa: E402
from tensorflow.core.framework import graph_pb2 as tf_graph  # noqa: E402
from tensorflow.core.framework import op_def_pb2 as tf_op_def  # noqa: E402
from tensorflow.core.framework import step_stats_pb2 as tf_step_stats  # noqa: E402
from tensorflow.core.framework import types_pb2 as tf_types  # noqa: E402
from tensorflow.core.protobuf import saved_model_pb2 as tf_saved_model  # noqa: E402
from tensorflow.core.protobuf import tensor_bundle_pb2 as tf_bundle  # noqa: E402
from tensorflow.core.protobuf import trackable_object_graph_pb2 as tf_trackable  # noqa: E402
from tensorflow.core.util import saved_tensor_slice_pb2 as tf_saved_slices  # noqa: E402

from graphtool.proto import (full_type_pb2, graph_pb2, op_def_pb2, saved_model_pb2,  # noqa: E402
                             saved_tensor_slice_pb2, step_stats_pb2, tensor_bundle_pb2, trackable_object_graph_pb2, types_pb2)


def _collect(*roots):
    """{message or enum name without package: {field: (number, type)}} for everything reachable."""
    out, seen = {}, set()

    def visit(desc):
        if desc.full_name in seen:
            return
        seen.add(desc.full_name)
        out[desc.full_name.split(".", 1)[1]] = {f.name: (f.number, f.type) for f in desc.fields}
        for field in desc.fields:
            if field.message_type:
                visit(field.message_type)
            if field.enum_type:
                enum = field.enum_type
                out["enum " + enum.full_name.split(".", 1)[1]] = {v.name: v.number for v in enum.values}
        for nested in desc.nested_types:
            visit(nested)

    for root in roots:
        visit(root)
    return out


def main() -> int:
    theirs = _collect(tf_graph.GraphDef.DESCRIPTOR, tf_op_def.OpList.DESCRIPTOR, tf_saved_model.SavedModel.DESCRIPTOR,
                      tf_bundle.BundleHeaderProto.DESCRIPTOR, tf_bundle.BundleEntryProto.DESCRIPTOR,
                      tf_trackable.TrackableObjectGraph.DESCRIPTOR, tf_step_stats.StepStats.DESCRIPTOR,
                      tf_saved_slices.SavedTensorSlices.DESCRIPTOR)
    ours = _collect(graph_pb2.GraphDef.DESCRIPTOR, op_def_pb2.OpList.DESCRIPTOR, saved_model_pb2.SavedModel.DESCRIPTOR,
                    tensor_bundle_pb2.BundleHeaderProto.DESCRIPTOR, tensor_bundle_pb2.BundleEntryProto.DESCRIPTOR,
                    trackable_object_graph_pb2.TrackableObjectGraph.DESCRIPTOR, step_stats_pb2.StepStats.DESCRIPTOR,
                    saved_tensor_slice_pb2.SavedTensorSlices.DESCRIPTOR)
    for enum_pair in ((tf_types.DataType, types_pb2.DataType), (tf_full_type.FullTypeId, full_type_pb2.FullTypeId)):
        name = "enum " + enum_pair[1].DESCRIPTOR.name
        theirs[name] = {v.name: v.number for v in enum_pair[0].DESCRIPTOR.values}
        ours[name] = {v.name: v.number for v in enum_pair[1].DESCRIPTOR.values}
    differences = [k for k in sorted(set(theirs) | set(ours)) if theirs.get(k) != ours.get(k)]
    for key in differences:
        print(f"{key}:\n  tensorflow: {theirs.get(key)}\n  dftool:     {ours.get(key)}")
    print(f"{len(theirs)} messages/enums compared, {len(differences)} differ")
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main())
