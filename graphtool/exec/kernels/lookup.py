"""Lookup-table kernels (tf.lookup): tables are session resources, so one initialized by one run
serves later runs, as in TensorFlow.

- HashTable(V2) is TensorFlow's initializable static table: filled once by InitializeTable(V2)
  or LookupTableImport(V2) (initializing again with the same entries is a no-op, with other
  entries an error), read-only afterwards; finding in it before that fails ("Table not
  initialized.").
- MutableHashTable(V2) accepts inserts (overwriting), removals and imports (replacing all).

A V2 table op outputs a scalar resource holding a TableHandle; a legacy op outputs its
Ref(string) handle as TensorFlow does, the vector [container, name]. Keys are compared as
Python values (bytes for strings); values are scalars.
"""
from __future__ import annotations

import threading

import numpy as np

from ...shapes import Shape
from .gpu_host_memory import host_kernel

_DEFAULT_CONTAINER = "localhost"


class TableHandle:
    """What a table's resource handle holds: where the table lives."""

    __slots__ = ("container", "name")

    def __init__(self, container: str, name: str):
        self.container, self.name = container, name

    def __repr__(self) -> str:
        return f"TableHandle({self.container}/{self.name})"


class Table:
    def __init__(self, name: str, key_dtype, value_dtype, mutable: bool):
        self.name, self.key_dtype, self.value_dtype, self.mutable = name, key_dtype, value_dtype, mutable
        self.entries: dict = {}
        self.initialized = mutable
        self.lock = threading.Lock()


def _key(value):
    return value.encode() if isinstance(value, str) else value


@host_kernel("HashTableV2", "MutableHashTableV2", "HashTable", "MutableHashTable")
def hash_table(ctx, *, container, shared_name, use_node_name_sharing, key_dtype, value_dtype):
    # Without a shared name the table is the node's own (TensorFlow names it after the kernel).
    name = shared_name or (ctx.node_name if use_node_name_sharing else f"_table_of_{ctx.node_name}")
    container = container or _DEFAULT_CONTAINER
    mutable = ctx.op.startswith("Mutable")
    table = ctx.resources.session.lookup_or_create(
        ("LookupTable", container, name), lambda: Table(name, key_dtype, value_dtype, mutable))
    if (table.key_dtype, table.value_dtype, table.mutable) != (key_dtype, value_dtype, mutable):
        ctx.fail(f"Table {name} exists with key/value types {table.key_dtype}/{table.value_dtype}, "
                 f"not {key_dtype}/{value_dtype}")
    if ctx.op.endswith("V2"):
        handle = np.empty((), dtype=object)
        handle[()] = TableHandle(container, name)
        return handle
    handle = np.empty(2, dtype=object)
    handle[:] = [container.encode(), name.encode()]
    return handle


def _table(ctx, handle) -> Table:
    if handle.dtype == object and handle.ndim == 0 and isinstance(handle[()], TableHandle):
        where = handle[()]
        container, name = where.container, where.name
    elif handle.shape == (2,):
        container, name = (v.decode() if isinstance(v, bytes) else str(v) for v in handle.tolist())
    else:
        ctx.fail("table_handle is not a lookup table handle")
    table = ctx.resources.session.lookup(("LookupTable", container, name))
    if table is None:
        ctx.fail(f"Table {name} does not exist (container {container})")
    return table


def _check_types(ctx, table: Table, keys, values=None):
    from ... import dtypes

    got_key = dtypes.string if keys.dtype == object else dtypes.from_numpy(keys.dtype)
    if got_key != table.key_dtype:
        ctx.fail(f"Key must be type {table.key_dtype.name} but got {got_key.name}")
    if values is not None:
        got_value = dtypes.string if values.dtype == object else dtypes.from_numpy(values.dtype)
        if got_value != table.value_dtype:
            ctx.fail(f"Value must be type {table.value_dtype.name} but got {got_value.name}")


@host_kernel("LookupTableFindV2", "LookupTableFind")
def lookup_table_find(ctx, table_handle, keys, default_value, *, Tin, Tout):
    table = _table(ctx, table_handle)
    _check_types(ctx, table, keys, default_value)
    if default_value.size != 1:
        ctx.fail(f"Expected shape [] or [1] for default value but got {Shape(default_value.shape)}")
    default = default_value.reshape(-1).tolist()[0]
    with table.lock:
        if not table.initialized:
            ctx.fail("Table not initialized.")
        found = [table.entries.get(_key(k), default) for k in keys.reshape(-1).tolist()]
    out = np.empty(len(found), dtype=ctx.out_dtype())
    out[:] = found
    return out.reshape(keys.shape)


def _pairs(ctx, table: Table, keys, values) -> list:
    _check_types(ctx, table, keys, values)
    if keys.shape != values.shape:
        ctx.fail(f"Expected shape {Shape(keys.shape)} for value, got {Shape(values.shape)}")
    return list(zip(map(_key, keys.reshape(-1).tolist()), map(_key, values.reshape(-1).tolist())))


def _initialize(ctx, table: Table, pairs: list) -> None:
    """Fill a static table once; again with the same entries is a no-op (TensorFlow's rule)."""
    entries: dict = {}   # key -> value (of the table's key and value types)
    for key, value in pairs:
        if entries.setdefault(key, value) != value:
            ctx.fail(f"HashTable has different value for same key. Key {key!r} has {entries[key]!r} and "
                     f"trying to add value {value!r}")
    if table.initialized:
        if entries != table.entries:
            ctx.fail("Table was already initialized with different data.")
        return
    table.entries, table.initialized = entries, True


@host_kernel("InitializeTableV2", "InitializeTable")
def initialize_table(ctx, table_handle, keys, values, *, Tkey, Tval):
    table = _table(ctx, table_handle)
    pairs = _pairs(ctx, table, keys, values)
    with table.lock:
        if table.mutable:
            ctx.fail("Only initializable (static) tables can be initialized")
        _initialize(ctx, table, pairs)
    return ()


@host_kernel("LookupTableImportV2", "LookupTableImport")
def lookup_table_import(ctx, table_handle, keys, values, *, Tin, Tout):
    table = _table(ctx, table_handle)
    pairs = _pairs(ctx, table, keys, values)
    with table.lock:
        if table.mutable:
            table.entries = dict(pairs)
        else:
            _initialize(ctx, table, pairs)
    return ()


@host_kernel("LookupTableInsertV2", "LookupTableInsert")
def lookup_table_insert(ctx, table_handle, keys, values, *, Tin, Tout):
    table = _table(ctx, table_handle)
    pairs = _pairs(ctx, table, keys, values)
    with table.lock:
        if not table.mutable:
            ctx.fail("Insert not supported by InitializableLookupTable implementations")
        table.entries.update(pairs)
    return ()


@host_kernel("LookupTableRemoveV2")
def lookup_table_remove(ctx, table_handle, keys, *, Tin):
    table = _table(ctx, table_handle)
    _check_types(ctx, table, keys)
    with table.lock:
        if not table.mutable:
            ctx.fail("Remove not supported by InitializableLookupTable implementations")
        for key in keys.reshape(-1).tolist():
            table.entries.pop(_key(key), None)
    return ()


@host_kernel("LookupTableSizeV2", "LookupTableSize")
def lookup_table_size(ctx, table_handle):
    table = _table(ctx, table_handle)
    with table.lock:
        return np.asarray(len(table.entries), dtype=np.int64)


@host_kernel("LookupTableExportV2")
def lookup_table_export(ctx, table_handle, *, Tkeys, Tvalues):
    table = _table(ctx, table_handle)
    with table.lock:
        items = list(table.entries.items())
    keys = np.empty(len(items), dtype=Tkeys.numpy)
    values = np.empty(len(items), dtype=Tvalues.numpy)
    keys[:] = [k for k, _ in items]
    values[:] = [v for _, v in items]
    return keys, values


# --- vocabulary files (tf.lookup.TextFileInitializer) -------------------------------------------

_WHOLE_LINE, _LINE_NUMBER = -2, -1


def _text_file_entries(ctx, path: str, key_index: int, value_index: int, vocab_size: int, delimiter: str,
                       offset: int, key_dtype, value_dtype) -> list:
    """(key, value) per line as TensorFlow's TextFileLineIterator reads them: lines end at '\\n'
    (a '\\r' before it is dropped), an empty line is an error, columns are split at the
    one-character delimiter, index -1 is the line number plus `offset`, -2 the whole line."""
    from .strings_convert import parse_number

    if len(delimiter) != 1:
        ctx.fail("delimiter should be only 1 char")
    from ... import graph_io
    from ...errors import InvalidGraphError

    try:
        with open(path, "rb") as file:   # bounded: the path may name /dev/zero or a FIFO
            data = graph_io.read_bounded(file, path)
    except OSError as exc:
        ctx.fail(f"{path}; {exc.strerror or 'cannot be read'}")
    except InvalidGraphError as exc:
        ctx.fail(f"vocabulary file {exc.one_line()}")
    lines: list[bytes] = []
    position = 0
    for raw in data.split(b"\n")[:-1] if data.endswith(b"\n") else data.split(b"\n"):
        position += len(raw) + 1
        if vocab_size != -1 and len(lines) == vocab_size:
            break
        line = raw[:-1] if raw.endswith(b"\r") else raw
        if not line:
            ctx.fail(f"Invalid content in {path}: empty line found at position {position}.")
        lines.append(line)
    if vocab_size != -1 and len(lines) != vocab_size:
        ctx.fail(f"Invalid vocab_size in {path}: expected {vocab_size} but got {len(lines)}")
    needed = max(key_index, value_index) + 1
    entries = []
    for number, line in enumerate(lines):
        columns = line.split(delimiter.encode())
        if len(columns) < needed:
            ctx.fail(f"Invalid number of columns in {path} line {number} ({line.decode('utf-8', 'replace')}) : "
                     f"expected at least {needed} got {len(columns)}")

        def field(index, dtype):
            if index == _LINE_NUMBER:
                return number + offset
            text = line if index == _WHOLE_LINE else columns[index]
            if dtype.name == "string":
                return text
            value = parse_number(text, np.dtype(dtype.numpy))
            if value is None:
                ctx.fail(f"Field {text.decode('utf-8', 'replace')} in line {number} is not a valid {dtype.name}.")
            return value
        entries.append((field(key_index, key_dtype), field(value_index, value_dtype)))
    return entries


@host_kernel("InitializeTableFromTextFileV2", "InitializeTableFromTextFile")
def initialize_table_from_text_file(ctx, table_handle, filename, *, key_index, value_index, vocab_size, delimiter,
                                    offset):
    table = _table(ctx, table_handle)
    if np.ndim(filename) != 0:
        ctx.fail(f"filename should be a single string, but got {Shape(np.shape(filename))}")
    path = filename[()]
    path = path.decode() if isinstance(path, bytes) else str(path)
    pairs = _text_file_entries(ctx, path, key_index, value_index, vocab_size, delimiter, offset,
                               table.key_dtype, table.value_dtype)
    with table.lock:
        if table.mutable:
            table.entries.update(pairs)
        else:
            _initialize(ctx, table, pairs)
    return ()
