"""Sub-byte codes on 64-bit lanes: bytes made of ``8 // bits`` codes, and back, 8 bytes per
NumPy operation (the NumPy path of the packer for ``E(n)`` slots that divide a byte).

* :func:`pack_lanes` / :func:`unpack_lanes` build bytes of ``8 // bits`` sub-byte codes
  (and split them) on 64-bit lanes; :func:`codes_to_bytes` / :func:`bytes_to_codes` do the
  same for a contiguous run of codes.

>>> import numpy as np
>>> codes = np.array([1, 2, 3, 0xF], np.uint8)
>>> out = np.empty(2, np.uint8)
>>> codes_to_bytes(codes, 4, out); bytes_to_codes(out, 4).tolist()
[1, 2, 3, 15]
"""

from __future__ import annotations

import numpy as np

__all__ = ["bytes_to_codes", "codes_to_bytes", "lane_mask", "pack_lanes", "unpack_lanes"]


def lane_mask(bits: int) -> int:
    """The low ``bits`` of every byte of a 64-bit lane."""
    return ((1 << bits) - 1) * 0x0101010101010101


def pack_lanes(codes: np.ndarray, bits: int, out: np.ndarray) -> None:
    """``out[k] = sum((codes[i, k] & mask) << (bits * i))``: the bytes made of ``8 // bits``
    rows of codes, computed on 64-bit lanes (8 bytes at a time; masking each code first
    keeps every shift inside its byte). Row lengths are multiples of 8.

    >>> out = np.empty(8, np.uint8)
    >>> pack_lanes(np.array([[1, 2, 3, 0xFF, 0, 0, 0, 0], [2, 0, 0xF, 1, 0, 0, 0, 0]], np.uint8), 4, out)
    >>> [hex(v) for v in out[:4]]
    ['0x21', '0x2', '0xf3', '0x1f']
    """
    mask = lane_mask(bits)
    lanes, acc = codes.view(np.uint64), out.view(np.uint64)
    np.bitwise_and(lanes[0], mask, out=acc)
    shifted = np.empty_like(acc)
    for i in range(1, codes.shape[0]):
        np.bitwise_and(lanes[i], mask, out=shifted)
        np.left_shift(shifted, bits * i, out=shifted)
        np.bitwise_or(acc, shifted, out=acc)


def unpack_lanes(data: np.ndarray, bits: int, codes: np.ndarray) -> None:
    """The inverse of :func:`pack_lanes`: ``codes[i, k] = (data[k] >> (bits * i)) & mask``.

    >>> codes = np.empty((2, 8), np.uint8)
    >>> unpack_lanes(np.array([0x21, 0xF3, 0, 0, 0, 0, 0, 0x5A], np.uint8), 4, codes); codes[:, [0, 1, 7]]
    array([[ 1,  3, 10],
           [ 2, 15,  5]], dtype=uint8)
    """
    mask = lane_mask(bits)
    lanes = data.view(np.uint64)
    for i in range(codes.shape[0]):
        row = codes[i].view(np.uint64)
        np.right_shift(lanes, bits * i, out=row)
        np.bitwise_and(row, mask, out=row)


def codes_to_bytes(codes: np.ndarray, bits: int, out: np.ndarray) -> None:
    """Pack codes (one per byte, the value in the low ``bits``) little-endian into ``out``.

    >>> out = np.empty(2, np.uint8)
    >>> codes_to_bytes(np.array([1, 2, 3, 0xFF], np.uint8), 4, out); [hex(v) for v in out]
    ['0x21', '0xf3']
    """
    mask = (1 << bits) - 1
    np.bitwise_and(codes, mask, out=codes)
    if bits == 1:
        out[...] = np.packbits(codes, bitorder="little")
        return
    columns = codes.reshape(-1, 8 // bits)
    np.copyto(out, columns[:, 0])
    shifted = np.empty_like(out)
    for i in range(1, columns.shape[1]):
        np.left_shift(columns[:, i], bits * i, out=shifted)
        np.bitwise_or(out, shifted, out=out)


def bytes_to_codes(data: np.ndarray, bits: int) -> np.ndarray:
    """Unpack bytes into codes, one per byte (the inverse of :func:`codes_to_bytes`).

    >>> bytes_to_codes(np.array([0x21, 0xF3], np.uint8), 4)
    array([ 1,  2,  3, 15], dtype=uint8)
    """
    if bits == 1:
        return np.unpackbits(data, bitorder="little")
    per_byte = 8 // bits
    codes = np.empty((data.size, per_byte), np.uint8)
    for i in range(per_byte):
        np.right_shift(data, bits * i, out=codes[:, i])
        np.bitwise_and(codes[:, i], (1 << bits) - 1, out=codes[:, i])
    return codes.reshape(-1)
