"""Lookup tables (tf.lookup): hash tables kept as session resources, and the ops that fill and
query them.

A table op outputs a handle (a scalar resource for the V2 ops, a Ref(string) for the legacy
ones); every other op names its table through that handle. Like TensorFlow's shape functions,
a table's handle data says its keys and values are scalars, so a lookup's output has the keys'
shape.
"""
from __future__ import annotations

from ..shapes import Shape, has_rank
from .inference import HandleData, InferenceContext, no_outputs, scalar
from .registry import register

_TABLE_ATTRS = ["container: string = ''", "shared_name: string = ''", "use_node_name_sharing: bool = false",
                "key_dtype: type", "value_dtype: type"]


def _table_shape(ctx: InferenceContext) -> Shape:
    ctx.output_handles[0] = HandleData(Shape.scalar(), ctx.attr("value_dtype"))
    return Shape.scalar()


def _legacy_table_shape(ctx: InferenceContext) -> Shape:
    return Shape([2])


def _find_shape(ctx: InferenceContext) -> Shape:
    # Scalar values: one per key. Without handle data TensorFlow knows nothing either.
    handle = ctx.handle(0)
    if handle is None or not has_rank(handle.element_shape):
        return Shape.unknown()
    keys = ctx.shape(1)
    return keys.concatenate(handle.element_shape) if has_rank(keys) else Shape.unknown()


def _legacy_find_shape(ctx: InferenceContext) -> Shape:
    return ctx.shape(1)


def _export_shapes(ctx: InferenceContext) -> list[Shape]:
    return [Shape([None]), Shape.unknown()]


for _v2, _legacy, _handle in (("HashTableV2", "HashTable", "resource"),
                              ("MutableHashTableV2", "MutableHashTable", "resource")):
    register(_v2, outputs=["table_handle: resource"], attrs=_TABLE_ATTRS, shape=_table_shape, stateful=True)
    register(_legacy, outputs=["table_handle: Ref(string)"], attrs=_TABLE_ATTRS, shape=_legacy_table_shape,
             stateful=True)

register("LookupTableFindV2", inputs=["table_handle: resource", "keys: Tin", "default_value: Tout"],
         outputs=["values: Tout"], attrs=["Tin: type", "Tout: type"], shape=_find_shape, stateful=True)
register("LookupTableFind", inputs=["table_handle: Ref(string)", "keys: Tin", "default_value: Tout"],
         outputs=["values: Tout"], attrs=["Tin: type", "Tout: type"], shape=_legacy_find_shape)
for _name, _k, _v in (("LookupTableImport", "Tin", "Tout"), ("LookupTableInsert", "Tin", "Tout"),
                      ("InitializeTable", "Tkey", "Tval")):
    register(f"{_name}V2", inputs=["table_handle: resource", f"keys: {_k}", f"values: {_v}"],
             attrs=[f"{_k}: type", f"{_v}: type"], shape=no_outputs, stateful=True)
    register(_name, inputs=["table_handle: Ref(string)", f"keys: {_k}", f"values: {_v}"],
             attrs=[f"{_k}: type", f"{_v}: type"], shape=no_outputs)
# tf.lookup.TextFileInitializer: a vocabulary file, one entry per line.
_TEXT_FILE_ATTRS = ["key_index: int >= -2", "value_index: int >= -2", "vocab_size: int >= -1 = -1",
                    "delimiter: string = '\\t'", "offset: int = 0"]
register("InitializeTableFromTextFileV2", inputs=["table_handle: resource", "filename: string"],
         attrs=_TEXT_FILE_ATTRS, shape=lambda ctx: (ctx.with_rank(1, 0), [])[1], stateful=True)
register("InitializeTableFromTextFile", inputs=["table_handle: Ref(string)", "filename: string"],
         attrs=_TEXT_FILE_ATTRS, shape=lambda ctx: (ctx.with_rank(1, 0), [])[1])
register("LookupTableRemoveV2", inputs=["table_handle: resource", "keys: Tin"], attrs=["Tin: type"],
         shape=no_outputs, stateful=True)
register("LookupTableSizeV2", inputs=["table_handle: resource"], outputs=["size: int64"], shape=scalar,
         stateful=True)
register("LookupTableSize", inputs=["table_handle: Ref(string)"], outputs=["size: int64"], shape=scalar)
register("LookupTableExportV2", inputs=["table_handle: resource"], outputs=["keys: Tkeys", "values: Tvalues"],
         attrs=["Tkeys: type", "Tvalues: type"], shape=_export_shapes, stateful=True)
