"""The caches the packer sizes its work by: read from a sysfs-like tree, chosen, overridden."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from layout_algebra.packing import caches


def write_cache(root: Path, index: int, level: int, kind: str, size: str) -> None:
    entry = root / f"index{index}"
    entry.mkdir(parents=True)
    (entry / "level").write_text(f"{level}\n")
    (entry / "type").write_text(f"{kind}\n")
    (entry / "size").write_text(f"{size}\n")


def test_levels_are_read_from_the_tree_without_instruction_caches(tmp_path: Path) -> None:
    write_cache(tmp_path, 0, 1, "Data", "48K")
    write_cache(tmp_path, 1, 1, "Instruction", "64K")
    write_cache(tmp_path, 2, 2, "Unified", "2048K")
    write_cache(tmp_path, 3, 3, "Unified", "491520K")
    assert caches.cache_levels(tmp_path) == {1: 48 << 10, 2: 2 << 20, 3: 480 << 20}


def test_an_unreadable_tree_reports_nothing(tmp_path: Path) -> None:
    assert caches.cache_levels(tmp_path / "missing") == {}
    write_cache(tmp_path, 0, 2, "Unified", "lots")
    assert caches.cache_levels(tmp_path) == {}


@given(st.dictionaries(st.integers(1, 4), st.integers(1, 1 << 32), max_size=4))
def test_the_kept_cache_is_the_largest_level_under_a_mesh(levels: dict[int, int]) -> None:
    kept = caches.kept_bytes_of(levels)
    small = [size for size in levels.values() if size < caches.MESH_MIN_BYTES]
    if small:
        assert kept == max(small) and kept in levels.values()
    else:
        assert kept == caches.DEFAULT_BYTES


@pytest.mark.parametrize(
    ("text", "expected"),
    [("32768K", 32 << 20), ("32M", 32 << 20), ("1G", 1 << 30), ("4096", 4096), ("2mb", 2 << 20)],
)
def test_sizes_parse(text: str, expected: int) -> None:
    assert caches.parse_bytes(text) == expected


@pytest.mark.parametrize("text", ["", "M", "-1", "1.5M", "12Q", "lots"])
def test_a_bad_size_is_an_error_quoting_it(text: str) -> None:
    with pytest.raises(ValueError, match="is not a number of bytes") as caught:
        caches.parse_bytes(text)
    assert repr(text) in str(caught.value)


def test_the_environment_overrides_the_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    caches.kept_bytes.cache_clear()
    try:
        monkeypatch.setenv(caches.OVERRIDE, "3M")
        assert caches.kept_bytes() == 3 << 20
        caches.kept_bytes.cache_clear()
        monkeypatch.setenv(caches.OVERRIDE, "three")
        with pytest.raises(ValueError, match=caches.OVERRIDE):
            caches.kept_bytes()
    finally:
        caches.kept_bytes.cache_clear()
        monkeypatch.delenv(caches.OVERRIDE)
        assert caches.kept_bytes() == caches.kept_bytes_of(caches.cache_levels())
