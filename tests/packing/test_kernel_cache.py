"""numba's cached kernels follow their sources: an edit of a callee's module alone is not ignored."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("numba", reason="the kernels need numba (the test extra installs it)")
from layout_algebra.packing import kernel_cache

PACKING = Path(kernel_cache.__file__).parent
PACKAGE = PACKING.parent


def kernel_file(folder: Path, name: str, body: str) -> Path:
    path = folder / name
    path.write_text(f"from numba import njit\n{body}\n")
    return path


def cache_files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.suffix in kernel_cache.CACHE_SUFFIXES)


def test_an_edit_of_a_kernel_source_removes_the_cache_and_others_keep_it(tmp_path: Path) -> None:
    sources, cache = tmp_path / "src", tmp_path / "cache"
    sources.mkdir()
    kernel = kernel_file(sources, "kernels.py", "x = 1")
    caller = sources / "calls.py"  # calls kernels from Python only: not part of the digest
    caller.write_text("import numpy\ny = 1\n")
    assert kernel_cache.refresh(sources, cache) == 0  # a new cache folder: made, its digest written
    (cache / "kernels.f-2.py311.nbi").write_text("index")
    (cache / "kernels.f-2.py311.1.nbc").write_text("code")
    (cache / "notes.txt").write_text("not numba's")
    caller.write_text("import numpy\ny = 2\n")
    assert kernel_cache.refresh(sources, cache) == 0
    assert cache_files(cache) == ["kernels.f-2.py311.1.nbc", "kernels.f-2.py311.nbi"]
    kernel.write_text("from numba import njit\nx = 2\n")
    assert kernel_cache.refresh(sources, cache) == 2
    assert cache_files(cache) == []
    assert (cache / "notes.txt").exists()
    assert kernel_cache.refresh(sources, cache) == 0  # the new digest kept: nothing more to do


def test_a_cache_made_before_the_check_is_started_afresh(tmp_path: Path) -> None:
    sources, cache = tmp_path / "src", tmp_path / "cache"
    sources.mkdir()
    cache.mkdir()
    kernel_file(sources, "kernels.py", "x = 1")
    (cache / "kernels.f-2.py311.nbi").write_text("index of unknown sources")
    assert kernel_cache.refresh(sources, cache) == 1
    assert (cache / kernel_cache.DIGEST_FILE).read_text() == kernel_cache.sources_digest(sources)


def test_the_digest_covers_exactly_the_modules_that_import_numba_or_llvmlite() -> None:
    kernel_modules = {
        path.name for path in PACKING.glob("*.py") if kernel_cache.is_kernel_source(path.read_bytes())
    }
    importing = set()
    for path in PACKING.glob("*.py"):
        for node in ast.parse(path.read_text()).body:  # top-level imports only
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            if any(name.split(".")[0] in ("numba", "llvmlite") for name in names):
                importing.add(path.name)
    assert kernel_modules == importing
    assert {"copy_kernels.py", "weave_kernels.py", "transpose_kernels.py"} <= kernel_modules


def test_every_module_that_caches_kernels_checks_the_cache_when_imported() -> None:
    for path in PACKING.glob("*.py"):
        tree = ast.parse(path.read_text())
        caches = "cache=True" in path.read_text() and path.name != "kernel_cache.py"
        calls = any(
            isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Call)
            and getattr(node.value.func, "id", None) == "check_sources"
            for node in tree.body
        )
        assert calls == caches, path.name


EDITED_RUN = """
import numpy as np
from layout_algebra.packing import copy_engine
from layout_algebra.packing.numpy_eval import pack
copy_engine.start_kernels()
x = (np.arange(1 << 20) % 251).astype(np.int8).reshape(1024, 1024)
print(pack(x, "s8[1024,1024]{1,0:T(32,128)(4,1)}", threads=1)[:4].tolist())
"""


def run_copy(root: Path) -> list[int]:
    env = {**os.environ, "PYTHONPATH": str(root)}
    env.pop("NUMBA_CACHE_DIR", None)  # the copy's own __pycache__
    done = subprocess.run(
        [sys.executable, "-c", EDITED_RUN],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    return [int(v) for v in done.stdout.strip().strip("[]").split(",")]


def test_an_edited_callee_is_compiled_again_not_loaded_from_the_callers_cache(tmp_path: Path) -> None:
    # a copy of the package whose kernels are compiled and cached, then only weave_kernels.py
    # edited: the word kernel of copy_kernels.py inlines weave_bytes from it
    shutil.copytree(PACKAGE, tmp_path / "layout_algebra", ignore=shutil.ignore_patterns("__pycache__"))
    first = run_copy(tmp_path)
    assert first == [0, 20, 40, 60]  # bytes 0, 20, 40, 60 of rows 0-3: (32,128)(4,1) words
    weave = tmp_path / "layout_algebra" / "packing" / "weave_kernels.py"
    text = weave.read_text()
    loop = "        _weave_bytes_64(words, w + i, parts, p + i, step)\n"
    assert text.count(loop) == 1
    weave.write_text(text.replace(loop, loop + "    words[w] = U32(7)  # the edit: each run's first word\n"))
    assert run_copy(tmp_path) == [7, 0, 0, 0]
