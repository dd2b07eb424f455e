"""Partitioned variables in a bundle: slice specs and the keys their slices are stored under.

A variable saved in parts (TF1 partitioners) has one full-tensor entry whose `slices` list the
parts (TensorSliceProto: start and optional length per dimension), and one ordinary entry per
part under a key that encodes (name, slice) with TensorFlow's OrderedCode:

    NumIncreasing(0) String(name) NumIncreasing(rank) {SignedNumIncreasing(start),
    SignedNumIncreasing(length or -1 for "all of it")} per dimension

A restore asks for a slice with a spec string "d0 d1 ... s0,l0:s1,l1:..." (full shape, then per
dimension start,length or '-' for the whole dimension), as RestoreV2's shape_and_slices holds.
"""
from __future__ import annotations

from .errors import CheckpointError

FULL = -1     # a dimension taken whole


def parse_slice_spec(spec: str, where: str) -> tuple[tuple[int, ...], list[tuple[int, int]]]:
    """'10 3 0,4:0,3' -> ((10, 3), [(0, 4), (0, 3)]): the full shape and (start, length) per dim."""
    try:
        *dims, slices = spec.split()
        shape = tuple(int(d) for d in dims)
        extents = []
        for dim, part in zip(shape, slices.split(":")):
            if part == "-":
                extents.append((0, dim))
            else:
                start, length = (int(v) for v in part.split(","))
                extents.append((start, length))
    except ValueError:
        raise CheckpointError(f"{where}: malformed slice spec '{spec}'") from None
    if len(extents) != len(shape) or any(s < 0 or l < 0 or s + l > d for (s, l), d in zip(extents, shape)):
        raise CheckpointError(f"{where}: slice spec '{spec}' does not fit its shape")
    return shape, extents


def proto_extents(slice_proto, shape: tuple[int, ...]) -> list[tuple[int, int]]:
    """(start, length) per dimension of a stored TensorSliceProto (no length: to the end)."""
    out = []
    for dim, extent in zip(shape, slice_proto.extent):
        has_length = extent.WhichOneof("has_length_hack") is not None
        out.append((extent.start, extent.length if has_length else dim - extent.start))
    out += [(0, d) for d in shape[len(out):]]     # missing trailing extents are full
    return out


def part_overlap(extents: list[tuple[int, int]], wanted: list[tuple[int, int]],
                 wanted_size: int) -> list[tuple[int, int]] | None:
    """The (lo, hi) per dim that a stored part's `extents` share with the `wanted` region (both
    (start, length) per dim); None when they share nothing and the wanted region is not empty
    (an empty one takes every part, which still has to be there)."""
    overlap = [(max(s, ws), min(s + l, ws + wl)) for (s, l), (ws, wl) in zip(extents, wanted)]
    if wanted_size and any(lo >= hi for lo, hi in overlap):
        return None
    return overlap


def copy_overlap(out, covered, value, extents, wanted, overlap) -> None:
    """Copy the `overlap` of a stored part's `value` into `out` (the wanted region) and mark it
    in `covered`."""
    source = tuple(slice(lo - s, hi - s) for (lo, hi), (s, _) in zip(overlap, extents))
    target = tuple(slice(lo - ws, hi - ws) for (lo, hi), (ws, _) in zip(overlap, wanted))
    out[target] = value[source]
    covered[target] = True


def slice_key(name: str, slice_proto) -> bytes:
    """The bundle key under which the part `slice_proto` of tensor `name` is stored."""
    out = bytearray(_num_increasing(0))
    out += _string(name.encode("utf-8", "surrogateescape"))
    out += _num_increasing(len(slice_proto.extent))
    for extent in slice_proto.extent:
        has_length = extent.WhichOneof("has_length_hack") is not None
        out += _signed_num_increasing(extent.start)
        out += _signed_num_increasing(extent.length if has_length else FULL)
    return bytes(out)


def _num_increasing(value: int) -> bytes:
    """Length byte, then the value big-endian in that many bytes (0: just the length byte)."""
    payload = value.to_bytes((value.bit_length() + 7) // 8, "big") if value else b""
    return bytes([len(payload)]) + payload


def _string(data: bytes) -> bytes:
    """0x00 and 0xff escaped (00 -> 00 ff, ff -> ff 00), terminated by 00 01."""
    out = bytearray()
    for byte in data:
        out += b"\x00\xff" if byte == 0 else b"\xff\x00" if byte == 0xFF else bytes([byte])
    return bytes(out) + b"\x00\x01"


# Header bits of the first two bytes for each encoded length (1..10), and how many value bits fit.
_HEADER = {1: (0x80, 0), 2: (0xC0, 0), 3: (0xE0, 0), 4: (0xF0, 0), 5: (0xF8, 0), 6: (0xFC, 0), 7: (0xFE, 0),
           8: (0xFF, 0), 9: (0xFF, 0x80), 10: (0xFF, 0xC0)}


def _signed_num_increasing(value: int) -> bytes:
    """n bytes hold values in [-2^(7n-1), 2^(7n-1)): sign bit, n-1 size bits, a delimiter bit,
    then the two's-complement value, so the bytes sort like the numbers."""
    magnitude = ~value if value < 0 else value
    length = next(n for n in range(1, 11) if magnitude < 1 << (7 * n - 1) or n == 10)
    raw = bytearray((value & ((1 << 80) - 1)).to_bytes(10, "big"))[10 - length:]
    first, second = _HEADER[length]
    raw[0] ^= first
    if length > 1:
        raw[1] ^= second
    return bytes(raw)
