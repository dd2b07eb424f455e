"""Gradient decisions of the string, tf.Example parsing and lookup-table families: none is
differentiable. Strings carry no gradient, and the numeric outputs (StringToNumber, DecodeRaw,
DecodeCSV's numbers, hash buckets, parsed features, looked-up values) are functions of strings or
of table contents, as TensorFlow declares them (NotDifferentiable in string_ops.py,
parsing_ops.py and lookup_ops.py or no gradient at all)."""
from __future__ import annotations

from .registry import not_differentiable

not_differentiable(
    "StringSplit", "StringSplitV2", "StringToNumber", "StringJoin", "ReduceJoin", "Substr", "RegexReplace", "StaticRegexReplace",
    "RegexFullMatch", "StaticRegexFullMatch", "StringLower", "StringUpper", "StringStrip", "StringLength",
    "AsString", "StringToHashBucketFast", "StringToHashBucketStrong", "DecodeRaw", "DecodeBase64",
    "EncodeBase64", "DecodeCSV",
    "ParseExampleV2", "ParseSingleExample",
    "HashTableV2", "HashTable", "MutableHashTableV2", "MutableHashTable", "LookupTableFindV2",
    "LookupTableFind", "LookupTableSizeV2", "LookupTableSize", "LookupTableExportV2",
)
