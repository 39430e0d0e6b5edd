"""Per-pass dumps for pass-validation tests: small directories written as XLA names its files,
and the corpus's archives (``tests/data/pass_dumps/corpus``) read in pass order."""

from __future__ import annotations

import dataclasses
import tarfile
from functools import cache
from pathlib import Path

from layout_algebra.hlo.passes import PassDump, parse_pass_file_name

#: A layout-assigned module whose transpose a "pass" turns into a bitcast: wrong (row-major read).
MOVEMENT = """HloModule m, entry_computation_layout={(f32[8,128]{1,0})->f32[128,8]{0,1:T(8,128)}}
ENTRY e {
  p = f32[8,128]{1,0} parameter(0)
  ROOT t = f32[128,8]{0,1:T(8,128)} transpose(p), dimensions={1,0}
}"""
WRONG = MOVEMENT.replace(
    "  ROOT t = f32[128,8]{0,1:T(8,128)} transpose(p), dimensions={1,0}",
    "  b = f32[128,8]{1,0} bitcast(p)\n  ROOT t = f32[128,8]{0,1:T(8,128)} copy(b)",
)
#: The same transpose, written with a copy of the parameter first: the same root buffer.
RIGHT = MOVEMENT.replace(
    "  ROOT t = f32[128,8]{0,1:T(8,128)} transpose(p), dimensions={1,0}",
    "  c = f32[8,128]{1,0} copy(p)\n  ROOT t = f32[128,8]{0,1:T(8,128)} transpose(c), dimensions={1,0}",
)


def write_dump(folder: Path, texts: list[str], program: str = "g") -> Path:
    """Per-pass files as XLA names them: pass 1 is layout assignment, then one file per later pass."""
    folder.mkdir(parents=True, exist_ok=True)
    stem = f"module_0001.jit_{program}.cl_1"
    names = ["Layout_assignment.after_layout-assignment"] + [
        f"simplification.after_pass-{k}" for k in range(2, len(texts) + 1)
    ]
    for k, (text, name) in enumerate(zip(texts, names, strict=True), start=1):
        (folder / f"{stem}.{k:04d}.{name}.before_pipeline-end.txt").write_text(text)
    return folder


# ------------------------------------------------------------------ the corpus
CORPUS = Path(__file__).resolve().parents[1] / "data" / "pass_dumps" / "corpus"


@cache
def corpus_dumps(name: str) -> tuple[tuple[PassDump, str], ...]:
    """``<program>.<backend>``'s per-pass modules from its archive in the corpus, in pass
    order: (its ``PassDump``, its text), read from the ``.tar.xz`` without unpacking it."""
    found = []
    with tarfile.open(CORPUS / f"{name}.tar.xz", "r:xz") as tar:
        for member in tar.getmembers():
            dump = parse_pass_file_name(Path(member.name).name)
            handle = tar.extractfile(member)
            if dump is None or handle is None:
                continue
            found.append((dataclasses.replace(dump, path=Path(member.name)), handle.read().decode("utf-8")))
    found.sort(key=lambda pair: pair[0].number)
    return tuple(found)


def corpus_names() -> list[str]:
    """Every ``<program>.<backend>`` of the corpus."""
    return sorted(p.name.removesuffix(".tar.xz") for p in CORPUS.glob("*.tar.xz"))
