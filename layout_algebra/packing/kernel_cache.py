"""numba's disk cache of the compiled kernels, kept in step with their sources.

numba (``cache=True``) keeps a kernel's machine code on disk, keyed on the file the kernel is
defined in (its modification time and size). A kernel is compiled together with every kernel
it calls, inlined or not, so its cached code also holds theirs; when only a callee's file
changes (a ``git pull`` that edits ``weave_kernels.py`` and not ``copy_kernels.py``), numba
still loads the callers' old code, and the old code runs: no error, old bytes. Measured on this
package: with ``weave_kernels.weave_bytes`` edited, ``pack`` of an ``s8`` array gave the bytes
of the code before the edit until the cache files were removed.

So the cache is checked against a digest of the package's kernel sources, the modules that
import numba or llvmlite (:func:`sources_digest`), kept beside the cache files (``DIGEST_FILE``): before the first
kernel of a process compiles or loads, :func:`check_sources` compares them and, if they
differ, removes every cache file of the package's folder (numba compiles afresh, about a
second per kernel, once) and writes the new digest. Each module that caches kernels calls it
when it is imported; only the first call does anything. Where numba keeps no cache, or the
folder cannot be written, nothing is done.

>>> import tempfile
>>> from pathlib import Path
>>> with tempfile.TemporaryDirectory() as tmp:
...     sources, cache = Path(tmp, "src"), Path(tmp, "cache")
...     sources.mkdir(); cache.mkdir()
...     _ = Path(sources, "kernels.py").write_text("from numba import njit\\nx = 1")
...     _ = Path(cache, "kernels.add-3.py311.nbi").write_text("old index")
...     first = refresh(sources, cache)                  # no digest yet: the old files go
...     _ = Path(cache, "kernels.add-3.py311.nbi").write_text("index")
...     second = refresh(sources, cache)                 # same sources: kept
...     _ = Path(sources, "kernels.py").write_text("from numba import njit\\nx = 2")
...     third = refresh(sources, cache)                  # a source changed: removed again
...     first, second, third, sorted(p.name for p in cache.iterdir())
(1, 0, 1, ['layout_algebra_kernels.digest'])
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from numba import njit

__all__ = ["DIGEST_FILE", "cache_folder", "check_sources", "is_kernel_source", "refresh", "sources_digest"]

#: The file, in numba's cache folder, holding the digest of the sources the cache was made from.
DIGEST_FILE = "layout_algebra_kernels.digest"
#: The suffixes of numba's cache files: an index per function, and its compiled code.
CACHE_SUFFIXES = (".nbi", ".nbc")
#: A module's top-level imports that make it a kernel source (:func:`is_kernel_source`).
KERNEL_IMPORTS = (b"from numba", b"import numba", b"from llvmlite", b"import llvmlite")

_checked = False


def is_kernel_source(text: bytes) -> bool:
    """Whether a module's source imports numba or llvmlite at its top level (it defines
    compiled code: kernels, intrinsics), rather than only calling kernels from Python.

    >>> is_kernel_source(b"import numpy as np\\nfrom numba import njit\\n"), is_kernel_source(b"import numpy\\n")
    (True, False)
    """
    return any(line.startswith(KERNEL_IMPORTS) for line in text.splitlines())


def sources_digest(folder: Path) -> str:
    """A SHA-256 digest of the names and bytes of the kernel sources directly in ``folder``
    (:func:`is_kernel_source`: an edit of a module that only calls kernels keeps the cache)."""
    digest = hashlib.sha256()
    for path in sorted(folder.glob("*.py")):
        text = path.read_bytes()
        if is_kernel_source(text):
            digest.update(path.name.encode() + b"\0" + text + b"\0")
    return digest.hexdigest()


def refresh(sources: Path, cache: Path) -> int:
    """Make ``cache`` (numba's cache folder of the kernels in ``sources``) hold only code of the
    current sources: if its digest file differs from :func:`sources_digest` of ``sources`` (or
    is missing), remove every cache file in it and write the new digest. The files removed."""
    digest = sources_digest(sources)
    stamp = cache / DIGEST_FILE
    try:
        if stamp.read_text() == digest:
            return 0
    except OSError:  # no digest yet (a new cache, or one made before this check): start afresh
        pass
    removed = 0
    for path in cache.glob("*"):
        if path.suffix in CACHE_SUFFIXES:
            try:
                path.unlink()
                removed += 1
            except FileNotFoundError:  # another process removed it first
                pass
    cache.mkdir(parents=True, exist_ok=True)
    stamp.write_text(digest)
    return removed


@njit(cache=True)
def _probe() -> int:  # pragma: no cover - never called: numba's cache folder for this package's files
    return 0


def cache_folder() -> Path | None:
    """The folder where numba keeps the cache of this package's kernels (it depends on the
    package's folder, not on the module: ``__pycache__`` beside it, or under
    ``NUMBA_CACHE_DIR``, or a user-wide folder when that one cannot be written), or None
    where numba caches nothing."""
    path = getattr(getattr(_probe, "_cache", None), "_cache_path", None)  # numba's FunctionCache
    return Path(path) if isinstance(path, str) else None


def check_sources() -> int:
    """:func:`refresh` numba's cache of this package's kernels, once per process (the first
    call; the others return 0 at once): the cache files removed. A folder that cannot be
    read or written is left as it is."""
    global _checked
    if _checked:
        return 0
    _checked = True
    folder = cache_folder()
    if folder is None:
        return 0
    try:
        return refresh(Path(__file__).parent, folder)
    except OSError:  # a read-only install: numba then caches elsewhere, or not at all
        return 0
