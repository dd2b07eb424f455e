"""CRC-32C (Castagnoli) and the masking TensorFlow's file formats apply to stored checksums.

A checksum stored inside checksummed data would make the outer checksum degenerate, so TensorFlow
(like LevelDB) stores `mask(crc)`: the crc rotated right by 15 bits plus a constant.
"""
from __future__ import annotations

import google_crc32c

_MASK_DELTA = 0xA282EAD8
_U32 = 0xFFFFFFFF


def crc32c(data: bytes, initial: int = 0) -> int:
    """CRC-32C of `data`, continuing from `initial` (the crc of what came before)."""
    return google_crc32c.extend(initial, bytes(data))


def mask(crc: int) -> int:
    return ((((crc >> 15) | (crc << 17)) & _U32) + _MASK_DELTA) & _U32


def unmask(masked: int) -> int:
    rotated = (masked - _MASK_DELTA) & _U32
    return ((rotated >> 17) | (rotated << 15)) & _U32
