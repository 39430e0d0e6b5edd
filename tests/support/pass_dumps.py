"""Small per-pass dump directories written as XLA names its files, for pass-validation tests."""

from __future__ import annotations

from pathlib import Path

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
