"""The CPU caches the packer sizes its work by: how many bytes stay cached between two calls.

Whether a relayout should store its output past the caches (non-temporal stores of whole
lines) depends on whether its two arrays would otherwise still be in a cache on the next
call. A copy of ``n`` bytes reads ``n`` and writes ``n``: while both fit the cache that
keeps them, the next call finds them there, and plain stores win (the lines are written
where they already are). Once they do not, every plain store first reads its line from
memory, and streaming the output saves that read.

Which cache keeps them is a property of the machine, read once from the operating system
(Linux: ``/sys/devices/system/cpu/cpu0/cache``):

* a last-level cache of a few tens of MB shared by a few cores (AMD's L3 of one core
  complex, 32 MB on the Zen 4 VM of ``benchmarks/README.md``): it serves data at nearly the
  speed of the L2 (``np.copyto`` of 4 MB: 46 GB/s; of 64 MB, from memory: 12 GB/s), so it
  is the one that counts;
* a last-level cache of hundreds of MB (a mesh across a whole many-core socket: Intel's,
  480 MB reported on the Xeon VM the packer was first tuned on) gave a VM with two CPUs
  no more than memory's speed beyond its L2 (``np.copyto`` of 48-160 MB: 7.3 GB/s), so
  there the L2 counts.

``LAYOUT_ALGEBRA_CACHE_BYTES`` (a number of bytes, or with a ``K``/``M``/``G`` suffix)
overrides what is read, for a machine that reports its caches wrongly.

>>> parse_bytes("32M"), parse_bytes("1024K"), parse_bytes("65536")
(33554432, 1048576, 65536)
>>> kept_bytes_of({1: 32 << 10, 2: 1 << 20, 3: 32 << 20})     # a Zen 4 core complex
33554432
>>> kept_bytes_of({1: 48 << 10, 2: 2 << 20, 3: 480 << 20})    # a many-core mesh
2097152
>>> kept_bytes_of({})                                           # nothing reported
2097152
"""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path

__all__ = ["MESH_MIN_BYTES", "cache_levels", "kept_bytes", "kept_bytes_of", "parse_bytes"]

#: A last-level cache of at least this many bytes is taken to be a many-core mesh, which
#: gave a small VM no more than memory's speed (see the module's docstring): the L2 counts.
MESH_MIN_BYTES = 128 << 20
#: What counts where the operating system reports no cache (a common L2's size).
DEFAULT_BYTES = 2 << 20
#: Where Linux describes the first CPU's caches.
CACHE_DIR = Path("/sys/devices/system/cpu/cpu0/cache")
#: The environment variable that overrides what is read.
OVERRIDE = "LAYOUT_ALGEBRA_CACHE_BYTES"

_UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def parse_bytes(text: str) -> int:
    """``"32768K"`` (sysfs' form), ``"32M"`` or ``"65536"`` as bytes; ValueError quoting ``text``
    if it is none of these."""
    s = text.strip().upper().removesuffix("B")
    scale = _UNITS.get(s[-1:], 1)
    digits = s[:-1] if scale > 1 else s
    if not digits.isdigit():
        raise ValueError(f"{text!r} is not a number of bytes (e.g. 33554432, 32768K, 32M)")
    return int(digits) * scale


def cache_levels(directory: Path = CACHE_DIR) -> dict[int, int]:
    """The data (or unified) cache of each level of the first CPU, in bytes; empty where the
    operating system does not say."""
    levels: dict[int, int] = {}
    try:
        entries = sorted(directory.glob("index*"))
        for entry in entries:
            if (entry / "type").read_text().strip() == "Instruction":
                continue
            level = int((entry / "level").read_text())
            levels[level] = max(levels.get(level, 0), parse_bytes((entry / "size").read_text()))
    except (OSError, ValueError):
        return {}
    return levels


def kept_bytes_of(levels: dict[int, int]) -> int:
    """The bytes that stay cached between calls, given each level's size (see the module's
    docstring): the largest level under ``MESH_MIN_BYTES``."""
    fitting = [size for size in levels.values() if 0 < size < MESH_MIN_BYTES]
    return max(fitting, default=DEFAULT_BYTES)


@cache
def kept_bytes() -> int:
    """:func:`kept_bytes_of` this machine's caches, or ``LAYOUT_ALGEBRA_CACHE_BYTES`` where set."""
    override = os.environ.get(OVERRIDE)
    if override:
        try:
            return max(1, parse_bytes(override))
        except ValueError as err:
            raise ValueError(f"{OVERRIDE}: {err}") from None
    return kept_bytes_of(cache_levels())
