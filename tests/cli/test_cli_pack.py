"""``layout-algebra pack``: .npy to raw bytes and back, the same bytes as the library; clean errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from support.cli import run

from layout_algebra.packing.numpy_eval import pack

SHAPE = "f32[3,5]{0,1:T(2,2)}"


def test_pack_writes_the_library_bytes_and_unpack_reads_them_back(capsys, tmp_path: Path) -> None:
    x = np.arange(15, dtype=np.float32).reshape(3, 5)
    np.save(tmp_path / "x.npy", x)
    code, out, _ = run(
        capsys, "pack", str(tmp_path / "x.npy"), SHAPE, "-o", str(tmp_path / "x.bin"), "--fill", "255"
    )
    assert code == 0
    written = np.fromfile(tmp_path / "x.bin", dtype=np.uint8)
    np.testing.assert_array_equal(written, pack(x, SHAPE, fill=255))
    assert f"{written.size} bytes" in out

    code, out, _ = run(
        capsys, "pack", "--unpack", str(tmp_path / "x.bin"), SHAPE, "-o", str(tmp_path / "y.npy")
    )
    assert code == 0
    np.testing.assert_array_equal(np.load(tmp_path / "y.npy"), x)
    assert "float32[3, 5]" in out


def test_ml_dtypes_arrays_survive_the_npy_files(capsys, tmp_path: Path) -> None:
    # np.save stores bfloat16 as raw 2-byte values ('V2'); pack reads them as the shape's type
    x = np.random.default_rng(0).standard_normal((16, 256)).astype(ml_dtypes.bfloat16)
    shape = "bf16[16,256]{1,0:T(8,128)(2,1)}"
    np.save(tmp_path / "x.npy", x)
    assert run(capsys, "pack", str(tmp_path / "x.npy"), shape, "-o", str(tmp_path / "x.bin"))[0] == 0
    np.testing.assert_array_equal(np.fromfile(tmp_path / "x.bin", dtype=np.uint8), pack(x, shape))
    assert (
        run(capsys, "pack", "--unpack", str(tmp_path / "x.bin"), shape, "-o", str(tmp_path / "y.npy"))[0] == 0
    )
    back = np.load(tmp_path / "y.npy").view(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(back.view(np.uint16), x.view(np.uint16))


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["pack", "{tmp}/missing.npy", SHAPE, "-o", "{tmp}/o.bin"],
            "cannot read {tmp}/missing.npy: No such file",
        ),
        (["pack", "{tmp}/raw.bin", SHAPE, "-o", "{tmp}/o.bin"], "is not a .npy file"),
        (
            ["pack", "{tmp}/f64.npy", SHAPE, "-o", "{tmp}/o.bin"],
            "dtype float64, but f32 elements are float32",
        ),
        (["pack", "{tmp}/f64.npy", "f64[5,3]", "-o", "{tmp}/o.bin"], "the array has dimensions [3, 5]"),
        (["pack", "{tmp}/f64.npy", "f64[3,5", "-o", "{tmp}/o.bin"], "cannot parse shape"),
        (["pack", "{tmp}/f64.npy", "(f64[3,5], f32[2])", "-o", "{tmp}/o.bin"], "tuple shape"),
        (["pack", "{tmp}/f64.npy", "f64[3,5]", "-o", "{tmp}/o.bin", "--fill", "256"], "fill 256"),
        (["pack", "{tmp}/f64.npy", "f64[3,5]", "-o", "{tmp}/no/such/dir/o.bin"], "cannot write"),
        (
            ["pack", "--unpack", "{tmp}/raw.bin", SHAPE, "-o", "{tmp}/o.npy"],
            "the buffer has 5 bytes, the layout needs 96",
        ),
    ],
)
def test_errors_are_one_line_with_status_2(capsys, tmp_path: Path, argv: list[str], message: str) -> None:
    np.save(tmp_path / "f64.npy", np.zeros((3, 5)))
    (tmp_path / "raw.bin").write_bytes(b"12345")
    code, out, err = run(capsys, *(a.replace("{tmp}", str(tmp_path)) for a in argv))
    assert code == 2
    assert out == ""
    assert err.startswith("layout-algebra pack: error: ")
    assert message.replace("{tmp}", str(tmp_path)) in err
    assert "Traceback" not in err


def test_the_installed_command_runs(tmp_path: Path) -> None:
    np.save(tmp_path / "x.npy", np.arange(4, dtype=np.uint8).reshape(2, 2))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "layout_algebra",
            "pack",
            str(tmp_path / "x.npy"),
            "u8[2,2]{0,1}",
            "-o",
            str(tmp_path / "x.bin"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "x.bin").read_bytes() == bytes([0, 2, 1, 3])
