"""Queues and readers (TensorFlow's data_flow_ops and io_ops): the input pipelines of TF1 graphs.

A queue op (FIFOQueueV2, PaddingFIFOQueueV2, RandomShuffleQueueV2) outputs a handle to a queue
that lives in the session's resources; the enqueue/dequeue/close/size ops take that handle. A
reader op outputs a handle to a reader, which ReaderReadV2 drives over a queue of filenames.
Dequeues, enqueues, closes (they wait behind pending enqueues) and reads may wait: they are
asynchronous (their kernels hold no executor thread while they wait; exec/kernels/queue.py).
The legacy ops pass the handle as a Ref(string) instead of a resource.

Shapes: a dequeue's components have the shapes its queue declares (the `shapes` attr of the
queue node feeding its handle, when the handle comes straight from one), with the batch
dimension in front for DequeueMany (`n` when it is known) and DequeueUpTo (unknown).
"""
from __future__ import annotations

from ..shapes import Shape
from .inference import InferenceContext, no_outputs, scalar
from .registry import register

QUEUE_OPS = ("FIFOQueueV2", "PaddingFIFOQueueV2", "RandomShuffleQueueV2",
             "FIFOQueue", "PaddingFIFOQueue", "RandomShuffleQueue")
READER_OPS = ("TFRecordReaderV2", "FixedLengthRecordReaderV2", "TextLineReaderV2", "WholeFileReaderV2")

_QUEUE_ATTRS = ["component_types: list(type) >= 1", "shapes: list(shape) = []", "capacity: int = -1",
                "container: string = ''", "shared_name: string = ''"]
_SHUFFLE_ATTRS = _QUEUE_ATTRS[:3] + ["min_after_dequeue: int = 0", "seed: int = 0", "seed2: int = 0"] + _QUEUE_ATTRS[3:]
_TIMEOUT = "timeout_ms: int = -1"


_FORWARDING = ("Identity", "RefIdentity", "Enter", "RefEnter")


def queue_node_of(node):
    """The queue node whose handle `node`'s input 0 carries, following Identity and Enter nodes
    (None when it comes from elsewhere, e.g. a function argument)."""
    producer = node.inputs[0].node if node.inputs else None
    while producer is not None and producer.op in _FORWARDING and producer.inputs:
        producer = producer.inputs[0].node
    return producer if producer is not None and producer.op in QUEUE_OPS else None


def _component_shapes(ctx: InferenceContext) -> list[Shape] | None:
    queue = queue_node_of(ctx.node)
    if queue is None:
        return None
    shapes = queue.attr("shapes")
    return list(shapes) if shapes else None


def _dequeue_shapes(ctx: InferenceContext) -> list[Shape]:
    shapes = _component_shapes(ctx)
    return shapes if shapes is not None and len(shapes) == ctx.num_outputs else [Shape.unknown()] * ctx.num_outputs


def _dequeue_many_shapes(ctx: InferenceContext) -> list[Shape]:
    shapes = _component_shapes(ctx)
    batch = None
    if ctx.op in ("QueueDequeueManyV2", "QueueDequeueMany"):
        value = ctx.value(1)
        batch = int(value) if value is not None and value.ndim == 0 else None
    if shapes is None or len(shapes) != ctx.num_outputs:
        return [Shape.unknown()] * ctx.num_outputs
    return [Shape([batch]).concatenate(shape) if shape.known_rank else Shape.unknown() for shape in shapes]


def _scalar_outputs(ctx: InferenceContext) -> list[Shape]:
    return [Shape.scalar()] * ctx.num_outputs


def _string_pair(ctx: InferenceContext) -> Shape:
    return Shape([2])


def _vectors(ctx: InferenceContext) -> list[Shape]:
    return [Shape([None])] * ctx.num_outputs


for _version, _handle in (("V2", "resource"), ("", "Ref(string)")):
    _out = [f"handle: {_handle}"]
    _in = f"handle: {_handle}"
    for _name, _attrs in (("FIFOQueue", _QUEUE_ATTRS), ("PaddingFIFOQueue", _QUEUE_ATTRS),
                          ("RandomShuffleQueue", _SHUFFLE_ATTRS)):
        # The legacy handle is a string vector of two (container, name), as in TensorFlow.
        register(_name + _version, outputs=_out, attrs=_attrs,
                 shape=scalar if _version else _string_pair, stateful=True)
    register(f"QueueEnqueue{_version}", inputs=[_in, "components: Tcomponents"],
             attrs=["Tcomponents: list(type) >= 1", _TIMEOUT], shape=no_outputs, stateful=True, is_async=True)
    register(f"QueueEnqueueMany{_version}", inputs=[_in, "components: Tcomponents"],
             attrs=["Tcomponents: list(type) >= 1", _TIMEOUT], shape=no_outputs, stateful=True, is_async=True)
    register(f"QueueDequeue{_version}", inputs=[_in], outputs=["components: component_types"],
             attrs=["component_types: list(type) >= 1", _TIMEOUT], shape=_dequeue_shapes, stateful=True,
             is_async=True)
    for _name in ("QueueDequeueMany", "QueueDequeueUpTo"):
        register(_name + _version, inputs=[_in, "n: int32"], outputs=["components: component_types"],
                 attrs=["component_types: list(type) >= 1", _TIMEOUT], shape=_dequeue_many_shapes,
                 stateful=True, is_async=True)
    register(f"QueueClose{_version}", inputs=[_in], attrs=["cancel_pending_enqueues: bool = false"],
             shape=no_outputs, stateful=True, is_async=True)
    register(f"QueueSize{_version}", inputs=[_in], outputs=["size: int32"], shape=scalar, stateful=True)
    register(f"QueueIsClosed{_version}", inputs=[_in], outputs=["is_closed: bool"], shape=scalar, stateful=True)


# --- readers ------------------------------------------------------------------------------------

_READER_ATTRS = ["container: string = ''", "shared_name: string = ''"]
register("TFRecordReaderV2", outputs=["reader_handle: resource"],
         attrs=[*_READER_ATTRS, "compression_type: string = ''"], shape=scalar, stateful=True)
register("FixedLengthRecordReaderV2", outputs=["reader_handle: resource"],
         attrs=["header_bytes: int = 0", "record_bytes: int", "footer_bytes: int = 0", "hop_bytes: int = 0",
                *_READER_ATTRS, "encoding: string = ''"], shape=scalar, stateful=True)
register("TextLineReaderV2", outputs=["reader_handle: resource"],
         attrs=["skip_header_lines: int = 0", *_READER_ATTRS], shape=scalar, stateful=True)
register("WholeFileReaderV2", outputs=["reader_handle: resource"], attrs=_READER_ATTRS, shape=scalar,
         stateful=True)
register("ReaderReadV2", inputs=["reader_handle: resource", "queue_handle: resource"],
         outputs=["key: string", "value: string"], shape=_scalar_outputs, stateful=True, is_async=True)
register("ReaderReadUpToV2", inputs=["reader_handle: resource", "queue_handle: resource", "num_records: int64"],
         outputs=["keys: string", "values: string"], shape=_vectors, stateful=True, is_async=True)
register("ReaderNumRecordsProducedV2", inputs=["reader_handle: resource"], outputs=["records_produced: int64"],
         shape=scalar, stateful=True)
register("ReaderNumWorkUnitsCompletedV2", inputs=["reader_handle: resource"], outputs=["units_completed: int64"],
         shape=scalar, stateful=True)
register("ReaderResetV2", inputs=["reader_handle: resource"], shape=no_outputs, stateful=True)
