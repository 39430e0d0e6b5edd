"""A wheel is whole: built from the sources, it ships the proof catalog, and
``layout-algebra proofs`` run from the installed wheel (no checkout beside it) proves it.

The wheel is built from a copy of the sources in a temporary directory (the build writes
``build/`` next to them; the work tree stays clean). Without build isolation when this
interpreter can build wheels itself, so no package index is needed; otherwise pip fetches
the build requirements of ``pyproject.toml`` from its configured index.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "layout_algebra", "proofs")


def _can_build_without_isolation() -> bool:
    if importlib.util.find_spec("wheel") is None:
        return False
    import setuptools

    return int(setuptools.__version__.split(".")[0]) >= 68


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("wheel")
    source = tmp / "src"
    source.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in SOURCES:
        path = ROOT / name
        if path.is_dir():
            shutil.copytree(path, source / name, ignore=ignore)
        else:
            shutil.copy2(path, source / name)
    command = [sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "-q", "-w", str(tmp / "dist")]
    if _can_build_without_isolation():
        command.append("--no-build-isolation")
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    (built,) = (tmp / "dist").glob("layout_algebra-*.whl")
    return built


def test_the_wheel_ships_every_theorem_of_the_catalog(wheel) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    theorems = sorted(p.name for p in (ROOT / "proofs").glob("*.py"))
    assert len(theorems) >= 13
    missing = [t for t in theorems if f"layout_algebra/teach/proofs_catalog/{t}" not in names]
    assert not missing
    assert not any(n.startswith("proofs/") for n in names), "the catalog must live inside the package"


def test_proofs_runs_from_the_installed_wheel(wheel, tmp_path) -> None:
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    env = {**os.environ, "PYTHONPATH": str(site)}
    where = [
        sys.executable,
        "-c",
        "import layout_algebra.teach.proofs as p; print(p.__file__, p.default_catalog())",
    ]
    out = subprocess.run(where, capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
    module_file, catalog = out.stdout.split()
    assert Path(module_file).is_relative_to(site), "the test must run the wheel's copy, not the checkout"
    assert Path(catalog) == site / "layout_algebra" / "teach" / "proofs_catalog"
    run = [sys.executable, "-m", "layout_algebra", "proofs", "minor_to_major"]
    done = subprocess.run(run, capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("proved")


def test_a_missing_catalog_says_how_to_get_one(tmp_path, capsys, monkeypatch) -> None:
    import layout_algebra.teach.proofs
    from layout_algebra.cli import main

    monkeypatch.setattr(layout_algebra.teach.proofs, "default_catalog", lambda: tmp_path / "proofs")
    assert main(["proofs"]) == 2
    err = capsys.readouterr().err
    assert "proofs does not exist" in err and "--catalog DIR" in err and "wheel" in err
