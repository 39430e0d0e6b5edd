"""The compiled kernels' start in a process (numba's first call, about half a second) is paid
only when it pays: a one-off small ``pack``/``unpack`` runs on NumPy, a large one (or NumPy's
time adding up) starts the kernels, and the bytes never depend on which ran. Checked in fresh
processes (``sys.modules`` says whether numba was imported) and, for the rule, in this one
with its state set back."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest
from support.oracles import reference_pack

from layout_algebra.packing import copy_engine
from layout_algebra.packing.numpy_eval import forget_recipes, pack, unpack

pytest.importorskip("numba", reason="the compiled kernels need numba (the [fast] extra)")

LAYOUT = "s8[1024,1024]{1,0:T(32,128)(4,1)}"  # 1 MB: words a kernel would build


def fresh_process(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.split()[-1]


def test_a_one_off_small_pack_in_a_fresh_process_does_not_start_numba() -> None:
    code = f"""
        import sys, numpy as np
        from layout_algebra.packing.numpy_eval import pack, unpack
        x = np.arange(1 << 20, dtype=np.int64).astype(np.int8).reshape(1024, 1024)
        b = pack(x, "{LAYOUT}")
        assert (unpack(b, "{LAYOUT}") == x).all()
        print("numba" in sys.modules)
    """
    assert fresh_process(code) == "False"


def test_a_large_pack_in_a_fresh_process_starts_the_kernels() -> None:
    code = """
        import sys, numpy as np
        from layout_algebra.packing import copy_engine
        from layout_algebra.packing.numpy_eval import pack
        copy_engine.COLD_KERNEL_MIN_BYTES = 1 << 20
        pack(np.zeros((1024, 1024), np.int8), "s8[1024,1024]{1,0:T(32,128)(4,1)}")
        print("numba" in sys.modules and copy_engine._started)
    """
    assert fresh_process(code) == "True"


@pytest.fixture
def cold(monkeypatch: pytest.MonkeyPatch) -> None:
    """This process as if the kernels had not started (numba stays imported: only the rule is tested)."""
    monkeypatch.setattr(copy_engine, "_started", False)
    monkeypatch.setattr(copy_engine, "_cold_seconds", 0.0)
    forget_recipes()


def test_small_calls_run_on_numpy_until_their_time_adds_up(
    cold: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = np.random.default_rng(0)
    x = rng.integers(-128, 128, (1024, 1024), dtype=np.int8)
    want = reference_pack(x, LAYOUT)
    used: list[bool] = []
    real = copy_engine.kernels
    monkeypatch.setattr(copy_engine, "kernels", lambda: used.append(real() is not None) or real())
    monkeypatch.setattr(copy_engine, "COLD_NUMPY_SECONDS", 3600.0)
    for _ in range(3):
        assert np.array_equal(pack(x, LAYOUT), want)
        assert np.array_equal(unpack(want, LAYOUT), x)
    assert not copy_engine._started and not any(used)
    assert copy_engine._cold_seconds > 0
    monkeypatch.setattr(copy_engine, "COLD_NUMPY_SECONDS", copy_engine._cold_seconds)  # the budget is spent
    forget_recipes()
    assert np.array_equal(pack(x, LAYOUT), want)
    assert copy_engine._started and any(used)
    assert np.array_equal(unpack(want, LAYOUT), x)


def test_one_large_call_starts_the_kernels_at_once(cold: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(copy_engine, "COLD_KERNEL_MIN_BYTES", 1 << 20)
    x = np.random.default_rng(1).integers(-128, 128, (1024, 1024), dtype=np.int8)
    assert np.array_equal(pack(x, LAYOUT), reference_pack(x, LAYOUT))
    assert copy_engine._started


def test_without_kernels_nothing_starts(cold: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(copy_engine, "USE_KERNELS", False)
    monkeypatch.setattr(copy_engine, "COLD_KERNEL_MIN_BYTES", 0)
    assert not copy_engine.kernels_cold()
    assert not copy_engine.start_kernels() and not copy_engine._started
    x = np.zeros((1024, 1024), np.int8)
    assert np.array_equal(pack(x, LAYOUT), reference_pack(x, LAYOUT))
