"""Every packing test starts with no kept recipe (a program replayed from an earlier test's call
would skip the paths a test spies on) and with the compiled kernels started when numba is
there, as in a process that has packed before: until then small calls run on NumPy
(``copy_engine.cold_call``), which tests/packing/test_kernel_start.py checks on its own."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from layout_algebra.packing import copy_engine
from layout_algebra.packing.numpy_eval import forget_recipes


@pytest.fixture(autouse=True)
def no_kept_recipes() -> Iterator[None]:
    copy_engine.start_kernels()
    forget_recipes()
    yield
    forget_recipes()
