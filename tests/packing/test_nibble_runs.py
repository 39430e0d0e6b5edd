"""The nibble kernels' path for one run of words per outer index (``s4`` under ``(8,128)(8,1)E(4)``).

Each group of 8 rows of an ``s4[R,C]{1,0:T(8,128)(8,1)E(4)}`` array makes one run of ``C``
words; the kernels call their inner loop directly for it (``copy_kernels._one_run``). Checked
against the definition by a loop (``sum_j (part_j & 0xF) << 4j``, nibbles zero-extended on the
way back), with and without non-temporal stores, at any alignment, with gaps between the
groups on either side, and nothing written outside the parts or words.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("numba", reason="the kernels need numba (the test extra installs it)")
from layout_algebra.packing import copy_kernels  # needs numba


@pytest.mark.parametrize("streamed", [False, True])
@pytest.mark.parametrize(
    ("groups", "n", "word_gap", "row_gap", "shift"),
    [(1, 1, 0, 0, 0), (3, 70, 0, 0, 5), (4, 128, 0, 0, 0), (5, 200, 16, 3, 11), (2, 640, 1, 64, 3)],
)
def test_one_run_per_group_matches_the_definition(groups, n, word_gap, row_gap, shift, streamed) -> None:
    rng = np.random.default_rng(groups * 1000 + n)
    step = n + row_gap  # from one row of a group to the next
    group = 8 * step  # from one group of rows to the next
    parts = rng.integers(0, 256, groups * group + shift, dtype=np.uint8)[shift:]
    ws = np.array([n + word_gap, 0, 0, 1], np.int64)
    ps = np.array([group, 0, 0, 1], np.int64)
    shape = np.array([groups, 1, 1, n], np.int64)
    span = (groups - 1) * (n + word_gap) + n
    storage = np.full(span + 32, 0xA5A5A5A5, np.uint32)
    words = storage[shift % 16 : shift % 16 + span]
    copy_kernels.words_from_nibbles(words, 0, ws, parts, 0, ps, step, shape, False, streamed)
    expected = np.full(span, 0xA5A5A5A5, np.uint32)
    for g in range(groups):
        rows = parts[g * group : (g + 1) * group].reshape(8, step)[:, :n].astype(np.uint32) & 0xF
        expected[g * (n + word_gap) : g * (n + word_gap) + n] = sum(
            rows[j] << np.uint32(4 * j) for j in range(8)
        )
    np.testing.assert_array_equal(words, expected)
    assert (storage[: shift % 16] == 0xA5A5A5A5).all() and (storage[shift % 16 + span :] == 0xA5A5A5A5).all()
    back = np.full(parts.size, 0xEE, np.uint8)
    copy_kernels.nibbles_from_words(back, 0, ps, step, words, 0, ws, shape, False, streamed)
    written = np.zeros(parts.size, bool)
    for g in range(groups):
        for j in range(8):
            at = g * group + j * step
            written[at : at + n] = True
            np.testing.assert_array_equal(back[at : at + n], parts[at : at + n] & 0xF)
    assert (back[~written] == 0xEE).all()
