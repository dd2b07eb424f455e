"""Kernels of the string family: splitting, joining, substrings, case, regexes, base64, hashing.

String tensors are numpy object arrays of `bytes` (a fed text array may hold `str`, read as
UTF-8). They compute on the host: a GPU device runs them through gpu_host_memory.host_kernel,
as TensorFlow keeps strings in host memory.
Conversions between strings and numbers (StringToNumber, AsString, DecodeCSV, DecodeRaw) are in
strings_convert.py, imported below.

Regexes use RE2 itself (Google's `google-re2` bindings), TensorFlow's engine: the pattern syntax,
UTF-8 matching, leftmost-first semantics and RE2's rewrite rules (`\\0`..`\\9`, `\\\\`) are exactly
TensorFlow's; Python's `re` (whose syntax and empty-match rules differ) is not used.
"""
from __future__ import annotations

import base64
import binascii
import builtins
import re

import numpy as np

from ...shapes import Shape
from . import strings_convert  # noqa: F401  (registers the conversion kernels)
from .gpu_host_memory import host_kernel

_WHITESPACE = b" \t\n\v\f\r"


def as_bytes(value) -> bytes:
    """One string element as bytes (fed text arrays may hold str)."""
    return value.encode() if isinstance(value, str) else bytes(value)


def map_strings(array, fn, dtype=object) -> np.ndarray:
    """fn applied to every element (as bytes), in an array of the input's shape."""
    flat = [fn(as_bytes(v)) for v in np.asarray(array, dtype=object).reshape(-1).tolist()]
    out = np.empty(len(flat), dtype=dtype)
    out[:] = flat
    return out.reshape(np.shape(array))


def scalar_string(ctx, tensor, name: str) -> bytes:
    if np.ndim(tensor) != 0:
        ctx.fail(f"{name} must be a scalar, but has shape {Shape(np.shape(tensor))}")
    return as_bytes(np.asarray(tensor, dtype=object).item())


# --- splitting and joining ---------------------------------------------------------------------

def _split(text: bytes, sep: bytes, maxsplit: int) -> list[bytes]:
    """TensorFlow's SplitV2: Python's str.split, except that a whitespace split that reaches
    maxsplit keeps the (possibly empty) rest as a last token."""
    if maxsplit == 0:
        return [text]
    if sep:
        return text.split(sep, maxsplit if maxsplit > 0 else -1)
    tokens, rest = [], text.lstrip(_WHITESPACE)
    while rest:
        end = next((i for i, byte in enumerate(rest) if byte in _WHITESPACE), len(rest))
        tokens.append(rest[:end])
        rest = rest[end:].lstrip(_WHITESPACE)
        if maxsplit > 0 and len(tokens) == maxsplit:
            tokens.append(rest)
            break
    return tokens


def _split_any(text: bytes, delimiters: bytes, skip_empty: bool) -> list[bytes]:
    """TensorFlow's StringSplit (v1): split at any one of the delimiter bytes; with no
    delimiters, into single bytes."""
    if not text:
        return []   # even without skip_empty: an empty string has no tokens
    if not delimiters:
        return [text[i:i + 1] for i in range(len(text))]
    tokens = re.split(b"[" + re.escape(delimiters) + b"]", text)
    return [t for t in tokens if t] if skip_empty else tokens


@host_kernel("StringSplit")
def string_split(ctx, input, delimiter, *, skip_empty):
    delimiters = scalar_string(ctx, delimiter, "delimiter")
    return _sparse_tokens(ctx, input, lambda text: _split_any(text, delimiters, skip_empty))


@host_kernel("StringSplitV2")
def string_split_v2(ctx, input, sep, *, maxsplit):
    separator = scalar_string(ctx, sep, "sep")
    return _sparse_tokens(ctx, input, lambda text: _split(text, separator, maxsplit))


def _sparse_tokens(ctx, input, split):
    """The tokens of every string of a vector as a SparseTensor (indices, values, shape)."""
    if input.ndim != 1:
        ctx.fail(f"input must be a vector, got shape: {Shape(input.shape)}")
    indices, values, width = [], [], 0
    for row, text in enumerate(input.tolist()):
        tokens = split(as_bytes(text))
        indices.extend((row, column) for column in range(len(tokens)))
        values.extend(tokens)
        width = max(width, len(tokens))
    out_values = np.empty(len(values), dtype=object)
    out_values[:] = values
    return (np.array(indices, dtype=np.int64).reshape(-1, 2), out_values,
            np.array([input.shape[0], width], dtype=np.int64))


@host_kernel("StringJoin")
def string_join(ctx, *inputs, separator):
    shape = ()
    for tensor in inputs:
        if tensor.ndim:
            if shape and tensor.shape != shape:
                ctx.fail(f"Input shapes do not match: {Shape(shape)} vs. {Shape(tensor.shape)}")
            shape = tensor.shape
    sep = as_bytes(separator)
    columns = [np.broadcast_to(np.asarray(t, dtype=object), shape).reshape(-1).tolist() for t in inputs]
    joined = [sep.join(as_bytes(v) for v in row) for row in zip(*columns)] if columns else [b""]
    out = np.empty(len(joined), dtype=object)
    out[:] = joined
    return out.reshape(shape)


@host_kernel("ReduceJoin")
def reduce_join(ctx, inputs, reduction_indices, *, keep_dims, separator):
    """Join along the reduction axes; the first axis listed varies fastest (TensorFlow's order)."""
    rank, axes = inputs.ndim, [int(a) for a in np.ravel(reduction_indices).tolist()]
    for axis in axes:
        if not -rank <= axis < rank:
            ctx.fail(f"Invalid reduction dimension {axis} for input with {rank} dimension(s)")
    axes = [axis % rank for axis in axes]
    if len(set(axes)) != len(axes):
        ctx.fail(f"Duplicate reduction dimension {next(a for a in axes if axes.count(a) > 1)}")
    kept = [i for i in range(rank) if i not in axes]
    moved = np.transpose(np.asarray(inputs, dtype=object), kept + axes[::-1])
    rows = moved.reshape(int(np.prod([inputs.shape[i] for i in kept], dtype=np.int64)),
                         int(np.prod([inputs.shape[a] for a in axes], dtype=np.int64)))
    sep = as_bytes(separator)
    out = np.empty(rows.shape[0], dtype=object)
    out[:] = [sep.join(as_bytes(v) for v in row) for row in rows.tolist()]
    shape = [1 if i in axes else d for i, d in enumerate(inputs.shape)] if keep_dims else \
        [inputs.shape[i] for i in kept]
    return out.reshape(shape)


# --- substrings, case, whitespace, length ---------------------------------------------------------

def _utf8_starts(text: bytes) -> list[int]:
    """Byte offsets of the characters of `text` (a byte that is not a continuation byte starts
    one, as TensorFlow counts them), plus len(text)."""
    return [i for i, byte in enumerate(text) if byte & 0xC0 != 0x80] + [len(text)]


@host_kernel("Substr")
def substr(ctx, input, pos, len, *, unit):
    if pos.shape != len.shape:
        ctx.fail(f"pos and len should have the same shape, got: {Shape(pos.shape)} vs. {Shape(len.shape)}")
    try:
        shape = np.broadcast_shapes(input.shape, pos.shape)
    except ValueError:
        ctx.fail(f"Incompatible shapes: {Shape(input.shape)} vs. {Shape(pos.shape)}")
    texts = np.broadcast_to(np.asarray(input, dtype=object), shape).reshape(-1).tolist()
    starts = np.broadcast_to(pos, shape).reshape(-1).tolist()
    lengths = np.broadcast_to(len, shape).reshape(-1).tolist()
    out = np.empty(np.prod(shape, dtype=np.int64), dtype=object)
    for i, (text, start, length) in enumerate(zip(texts, starts, lengths)):
        text = as_bytes(text)
        offsets = _utf8_starts(text) if unit == "UTF8_CHAR" else None
        size = builtins.len(offsets) - 1 if offsets is not None else builtins.len(text)   # `len` is the op's input here
        if not -size <= start <= size:
            ctx.fail(f"pos {start} out of range for string b'{text.decode('utf-8', 'replace')}' at index {i}")
        start = start + size if start < 0 else start
        # A negative len means "to the end" for bytes (TensorFlow's size_t wrap-around), and
        # nothing for characters.
        end = (size if unit == "BYTE" else start) if length < 0 else min(size, start + length)
        out[i] = text[offsets[start]:offsets[end]] if offsets is not None else text[start:end]
    return out.reshape(shape)


def _check_encoding(ctx, encoding: str) -> None:
    if encoding not in ("", "utf-8", "UTF-8", "utf8"):
        ctx.fail(f"encoding must be '' or 'utf-8', got '{encoding}'")


@host_kernel("StringLower", "StringUpper")
def string_case(ctx, input, *, encoding):
    _check_encoding(ctx, encoding)
    lower = ctx.op == "StringLower"
    if encoding:   # Unicode case mapping of UTF-8 text
        def convert(text):
            decoded = text.decode("utf-8", "surrogateescape")
            return (decoded.lower() if lower else decoded.upper()).encode("utf-8", "surrogateescape")
    else:          # ASCII letters only, as TensorFlow's default
        convert = bytes.lower if lower else bytes.upper
    return map_strings(input, convert)


@host_kernel("StringStrip")
def string_strip(ctx, input):
    return map_strings(input, lambda text: text.strip(_WHITESPACE))


@host_kernel("StringLength")
def string_length(ctx, input, *, unit):
    if unit == "UTF8_CHAR":
        return map_strings(input, lambda text: sum(byte & 0xC0 != 0x80 for byte in text), np.int32)
    return map_strings(input, len, np.int32)


# --- regexes (RE2) ------------------------------------------------------------------------------

_REWRITE_TOKEN = re.compile(rb"\\(.?)", re.S)   # parses rewrite strings, never user patterns


def _compile(ctx, pattern: bytes):
    import re2

    try:
        return re2.compile(pattern)
    except re2.error as exc:
        ctx.fail(f"Invalid pattern: {pattern.decode('utf-8', 'replace')}, error: {exc}")


def _check_rewrite(ctx, rewrite: bytes, groups: int) -> None:
    """RE2::CheckRewriteString: only \\0..\\9 and \\\\, and no group the pattern lacks."""
    highest = -1
    for escape in _REWRITE_TOKEN.findall(rewrite):
        if escape.isdigit():
            highest = max(highest, int(escape))
        elif escape != b"\\":
            ctx.fail(f"Invalid rewrite pattern: {rewrite.decode('utf-8', 'replace')}")
    if highest > groups:
        ctx.fail(f"Rewrite schema requests {highest} matches, but the regexp only has {groups} "
                 f"parenthesized subexpressions.")


def _rewrite(rewrite: bytes, match) -> bytes:
    def substitute(token):
        escape = token.group(1)
        return escape if escape == b"\\" else (match.group(int(escape)) or b"")
    return _REWRITE_TOKEN.sub(substitute, rewrite)


def _utf8_step(text: bytes, at: int) -> int:
    """Bytes of the UTF-8 character at `at` (1 for an invalid sequence), as RE2 advances."""
    byte = text[at]
    size = 1 if byte < 0x80 else 2 if byte >> 5 == 0b110 else 3 if byte >> 4 == 0b1110 else \
        4 if byte >> 3 == 0b11110 else 1
    try:
        text[at:at + size].decode("utf-8")
    except UnicodeDecodeError:
        return 1
    return size


def regex_replace_text(regex, text: bytes, rewrite: bytes, replace_global: bool) -> bytes:
    """RE2::Replace (first match) or RE2::GlobalReplace: an empty match right after the previous
    match is skipped, moving on by one UTF-8 character."""
    if not replace_global:
        match = regex.search(text)
        return text if match is None else text[:match.start()] + _rewrite(rewrite, match) + text[match.end():]
    out, at, last_end, count = [], 0, None, 0
    while at <= len(text):
        match = regex.search(text, at)
        if match is None:
            break
        out.append(text[at:match.start()])
        if match.start() == last_end and match.end() == match.start():
            if at < len(text):
                step = _utf8_step(text, at)
                out.append(text[at:at + step])
                at += step
            else:
                at += 1
            continue
        out.append(_rewrite(rewrite, match))
        at = last_end = match.end()
        count += 1
    if count == 0:
        return text
    out.append(text[at:])
    return b"".join(out)


def _regex_replace(ctx, input, pattern: bytes, rewrite: bytes, replace_global: bool):
    regex = _compile(ctx, pattern)
    _check_rewrite(ctx, rewrite, regex.groups)
    return map_strings(input, lambda text: regex_replace_text(regex, text, rewrite, replace_global))


@host_kernel("RegexReplace")
def regex_replace(ctx, input, pattern, rewrite, *, replace_global):
    return _regex_replace(ctx, input, scalar_string(ctx, pattern, "Pattern"),
                          scalar_string(ctx, rewrite, "Rewrite"), replace_global)


@host_kernel("StaticRegexReplace")
def static_regex_replace(ctx, input, *, pattern, rewrite, replace_global):
    return _regex_replace(ctx, input, as_bytes(pattern), as_bytes(rewrite), replace_global)


def _full_match(ctx, input, pattern: bytes):
    regex = _compile(ctx, pattern)
    return map_strings(input, lambda text: regex.fullmatch(text) is not None, np.bool_)


@host_kernel("RegexFullMatch")
def regex_full_match(ctx, input, pattern):
    return _full_match(ctx, input, scalar_string(ctx, pattern, "Pattern"))


@host_kernel("StaticRegexFullMatch")
def static_regex_full_match(ctx, input, *, pattern):
    return _full_match(ctx, input, as_bytes(pattern))


# --- base64 (web-safe, as TensorFlow) -----------------------------------------------------------

_WEB_SAFE = re.compile(rb"[A-Za-z0-9_-]*={0,2}")


@host_kernel("EncodeBase64")
def encode_base64(ctx, input, *, pad):
    encode = base64.urlsafe_b64encode
    return map_strings(input, (lambda text: encode(text)) if pad else (lambda text: encode(text).rstrip(b"=")))


@host_kernel("DecodeBase64")
def decode_base64(ctx, input):
    def decode(text):
        body = text.rstrip(b"=")
        if not _WEB_SAFE.fullmatch(text) or (len(text) != len(body) and len(text) % 4):
            ctx.fail("Invalid character found in base64.")
        if len(body) % 4 == 1:
            ctx.fail("Base64 string length cannot be 1 modulo 4.")
        try:
            return base64.urlsafe_b64decode(body + b"=" * (-len(body) % 4))
        except binascii.Error:
            ctx.fail("Invalid character found in base64.")
    return map_strings(input, decode)


# --- hashing ------------------------------------------------------------------------------------

@host_kernel("StringToHashBucketFast")
def string_to_hash_bucket_fast(ctx, input, *, num_buckets):
    """FarmHash's Fingerprint64 (TensorFlow's Fingerprint64), modulo the bucket count."""
    import farmhash   # the `cityhash` distribution's FarmHash bindings

    return map_strings(input, lambda text: farmhash.Fingerprint64(text) % num_buckets, np.int64)


@host_kernel("StringToHashBucketStrong")
def string_to_hash_bucket_strong(ctx, input, *, num_buckets, key):
    if len(key) != 2:
        ctx.fail(f"Invalid key size {len(key)}, expected 2.")
    k0, k1 = (k & _MASK for k in key)
    return map_strings(input, lambda text: siphash24(k0, k1, text) % num_buckets, np.int64)


_MASK = (1 << 64) - 1


def _rotl(x: int, b: int) -> int:
    return ((x << b) | (x >> (64 - b))) & _MASK


def siphash24(k0: int, k1: int, data: bytes) -> int:
    """SipHash-2-4 of `data` with the 128-bit key (k0, k1) (TensorFlow's StrongKeyedHash)."""
    v = [k0 ^ 0x736F6D6570736575, k1 ^ 0x646F72616E646F6D, k0 ^ 0x6C7967656E657261, k1 ^ 0x7465646279746573]

    def rounds(count):
        for _ in range(count):
            v[0] = (v[0] + v[1]) & _MASK; v[1] = _rotl(v[1], 13); v[1] ^= v[0]; v[0] = _rotl(v[0], 32)  # noqa: E702
            v[2] = (v[2] + v[3]) & _MASK; v[3] = _rotl(v[3], 16); v[3] ^= v[2]                          # noqa: E702
            v[0] = (v[0] + v[3]) & _MASK; v[3] = _rotl(v[3], 21); v[3] ^= v[0]                          # noqa: E702
            v[2] = (v[2] + v[1]) & _MASK; v[1] = _rotl(v[1], 17); v[1] ^= v[2]; v[2] = _rotl(v[2], 32)  # noqa: E702

    size = len(data)
    tail_start = size - size % 8
    words = [int.from_bytes(data[i:i + 8], "little") for i in range(0, tail_start, 8)]
    words.append(((size & 0xFF) << 56) | int.from_bytes(data[tail_start:], "little"))
    for word in words:
        v[3] ^= word
        rounds(2)
        v[0] ^= word
    v[2] ^= 0xFF
    rounds(4)
    return v[0] ^ v[1] ^ v[2] ^ v[3]
