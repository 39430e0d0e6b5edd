"""Every packing test starts with no kept recipe: a program replayed from an earlier test's
call would skip the paths a test spies on."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from layout_algebra.packing.numpy_eval import forget_recipes


@pytest.fixture(autouse=True)
def no_kept_recipes() -> Iterator[None]:
    forget_recipes()
    yield
    forget_recipes()
