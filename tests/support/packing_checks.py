"""Checks of ``pack``/``unpack`` on one thread against the oracle, shared by the replay tests."""

from __future__ import annotations

import numpy as np

from layout_algebra.packing.numpy_eval import pack, unpack
from support.oracles import random_array, raw_bytes, reference_pack


def check_one_thread_round_trip(
    m, text: str, rng: np.random.Generator, fill: int
) -> tuple[np.ndarray, np.ndarray]:
    """Pack a new random array of ``m`` (the layout map of ``text``) on one thread: allocating,
    read-only into a buffer of random bytes, into buffers misaligned by 1, 2 and 4 bytes (and
    unpack each); unpack into an array given. Every result against ``reference_pack``.
    Returns the array (now read-only) and its expected bytes."""
    x = random_array(m, rng)
    expected = reference_pack(x, text, fill=fill)
    np.testing.assert_array_equal(pack(x, text, fill=fill, threads=1), expected, err_msg=text)
    x.flags.writeable = False  # a read-only array packs the same
    into = rng.integers(0, 256, m.size_in_bytes, dtype=np.uint8)
    assert pack(x, text, fill=fill, out=into, threads=1) is into
    np.testing.assert_array_equal(into, expected, err_msg=text)
    raw = rng.integers(0, 256, m.size_in_bytes + 8, dtype=np.uint8)
    for shift in (1, 2, 4):  # misaligned words (1, 2): the full path; aligned (4): the entry
        out = raw[shift : shift + m.size_in_bytes]
        np.testing.assert_array_equal(pack(x, text, fill=fill, out=out, threads=1), expected)
        np.testing.assert_array_equal(raw_bytes(unpack(out, text, threads=1)), raw_bytes(x))
    back = random_array(m, rng)
    assert unpack(expected, text, out=back, threads=1) is back
    np.testing.assert_array_equal(raw_bytes(back), raw_bytes(x), err_msg=text)
    return x, expected
