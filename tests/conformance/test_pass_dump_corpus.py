"""The corpus of per-pass dumps (``tests/data/pass_dumps/corpus``): what each archive holds.

Every ``<program>.<backend>.tar.xz`` must unpack into one dump directory that
``read_dump_directory`` reads as the program's one main module, passes numbered from 0 up
(XLA's numbering may skip a number); the README's provenance table must describe the
archives that are there; and the two backends' dumps must be the same program (the same entry parameters) compiled
differently (only XLA:TPU tiles its layouts). The numbers the validator gives on the corpus
are measured in ``benchmarks/passes_corpus.py``, not asserted here.
"""

from __future__ import annotations

import itertools
import re
import tarfile
from functools import cache
from pathlib import Path

import pytest
from support.ground_truth import TEST_DATA

from layout_algebra.hlo import parse_module
from layout_algebra.hlo.passes import read_dump_directory
from layout_algebra.model import ArrayShape

CORPUS = TEST_DATA / "pass_dumps" / "corpus"
ARCHIVES = sorted(CORPUS.glob("*.tar.xz"))
NAMES = [a.name.removesuffix(".tar.xz") for a in ARCHIVES]
PROGRAMS = sorted({n.rsplit(".", 1)[0] for n in NAMES})


@cache
def unpacked(name: str, root: Path) -> Path:
    with tarfile.open(CORPUS / f"{name}.tar.xz", "r:xz") as tar:
        tar.extractall(root, filter="data")
    return root / name


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("corpus")


def readme_rows() -> dict[str, int]:
    """archive name -> per-pass files, from the README's table."""
    rows = {}
    for line in (CORPUS / "README.md").read_text().splitlines():
        m = re.match(r"^\| `(\S+)\.tar\.xz` \| (\d+) \|", line)
        if m:
            rows[m[1]] = int(m[2])
    return rows


def test_the_corpus_has_both_backends_of_at_least_fourteen_programs() -> None:
    assert len(PROGRAMS) >= 14
    assert set(NAMES) == {f"{p}.{b}" for p in PROGRAMS for b in ("tpu", "cpu")}


def test_the_readme_lists_every_archive_with_its_file_count() -> None:
    rows = readme_rows()
    assert set(rows) == set(NAMES)
    for name in NAMES:
        with tarfile.open(CORPUS / f"{name}.tar.xz", "r:xz") as tar:
            members = tar.getmembers()
        assert all(m.isfile() and m.name.startswith(f"{name}/") for m in members), name
        assert len(members) == rows[name], name


@pytest.mark.parametrize("name", NAMES)
def test_an_archive_is_one_module_in_pass_order(name: str, root: Path) -> None:
    modules, skipped = read_dump_directory(unpacked(name, root))
    assert skipped == []
    ((module, dumps),) = modules.items()
    program = name.rsplit(".", 1)[0]
    assert module.split(".")[1] == f"jit_{program}"
    numbers = [d.number for d in dumps]
    assert numbers[0] == 0 and all(a < b for a, b in itertools.pairwise(numbers))


def entry_parameters(directory: Path, last: bool) -> tuple[list[str], str]:
    """The plain parameter types of the first or last module, and that module's text."""
    (dumps,) = read_dump_directory(directory)[0].values()
    text = dumps[-1 if last else 0].path.read_text()
    module = parse_module(text)
    shapes = [i.shape for i in module.entry.instructions if i.opcode == "parameter"]
    assert all(isinstance(s, ArrayShape) for s in shapes)
    return sorted(f"{s.element_type.text}{list(s.dimensions)}" for s in shapes), text


@pytest.mark.parametrize("program", PROGRAMS)
def test_both_backends_compiled_the_same_program_and_only_tpu_tiles(program: str, root: Path) -> None:
    tpu_first, _ = entry_parameters(unpacked(f"{program}.tpu", root), last=False)
    cpu_first, _ = entry_parameters(unpacked(f"{program}.cpu", root), last=False)
    assert tpu_first == cpu_first
    _, tpu_last = entry_parameters(unpacked(f"{program}.tpu", root), last=True)
    _, cpu_last = entry_parameters(unpacked(f"{program}.cpu", root), last=True)
    tiled = re.compile(r"\{[\d,]*:[^}]*T\(\d")
    assert tiled.search(tpu_last) and not tiled.search(cpu_last)
