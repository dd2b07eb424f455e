"""set_device and remove_device: where nodes ask to run."""
from __future__ import annotations

from ..errors import UsageError
from ..placement.device_names import parse_device_name
from .base import Param, Transform, TransformResult, register_transform


@register_transform
class SetDevice(Transform):
    name = "set_device"
    description = "give nodes a device (all of them, or with if_default=true only those without one)"
    params = (Param("device", "the device, e.g. /gpu:0, cpu:1 or /job:worker/task:1/device:CPU:0 (written as "
                              "TensorFlow spells it: /device:GPU:0)", required=True),
              Param("if_default", "only set it on nodes that have no device", bool, False))

    def apply(self, graph, ctx, params):
        try:  # written as TensorFlow spells it: cpu:0 -> /device:CPU:0
            device = parse_device_name(params["device"]).to_string()
        except UsageError as exc:
            raise UsageError(f"set_device(device={params['device']}): {exc}", hint=exc.hint) from None
        changed = 0
        for node in graph.nodes:
            if (params["if_default"] and node.device) or node.device == device:
                continue
            node.device = device
            changed += 1
        return TransformResult.from_counts(devices_set=changed)


@register_transform
class RemoveDevice(Transform):
    name = "remove_device"
    description = "clear every node's device (placement decides again at run time)"

    def apply(self, graph, ctx, params):
        changed = 0
        for node in graph.nodes:
            if node.device:
                node.device = ""
                changed += 1
        return TransformResult.from_counts(devices_cleared=changed)
