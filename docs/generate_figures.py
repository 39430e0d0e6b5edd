"""Draw the documentation's figures with ``layout_algebra.teach.draw``, into ``docs/figures/``.

Run:  python docs/generate_figures.py [OUT_DIR]

Every picture on the documentation pages is listed in :data:`FIGURES` (file name, shape,
options) and drawn by the library; the pictures are generated, not kept in git (CI draws
them before building the site). The tests check that every image a page shows is listed
here and draws.

This file is also the docs site's mkdocs hook (``hooks:`` in ``mkdocs.yml``): before a
build it draws the figures that are missing, and it publishes the repository files the
pages link to (the theorems in ``proofs/``, the scripts in ``examples/``), so a link such
as ``../proofs/NAME.py`` works both on the site and when the Markdown is read in the
repository.

>>> FIGURES["figure1.png"].shape
'f32[3,5]{1,0:T(2,2)}'
"""

from __future__ import annotations

import posixpath
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DOCS = Path(__file__).resolve().parent
FIGURE_DIR = DOCS / "figures"


@dataclass(frozen=True)
class FigureSpec:
    """One picture: the shape to draw and the options for ``draw``."""

    shape: str
    options: dict[str, Any] = field(default_factory=dict)


FIGURES: dict[str, FigureSpec] = {
    # the tiled-layout document's figures
    "figure1.png": FigureSpec("f32[3,5]{1,0:T(2,2)}"),
    # the home page's picture: Figure 2 with the buffer in rows of 8 slots, legible at the column's width
    "home.png": FigureSpec("f32[4,8]{1,0:T(2,4)(2,1)}", {"max_cols": 8}),
    "figure2.png": FigureSpec("f32[4,8]{1,0:T(2,4)(2,1)}"),
    "cross_tile.png": FigureSpec("f32[8,8]{1,0:T(2,4)(2,1,1,1)}"),
    # minor_to_major
    "minor_to_major_10.png": FigureSpec("f32[2,3]{1,0}"),
    "minor_to_major_01.png": FigureSpec("f32[2,3]{0,1}"),
    # a real TPU layout, cropped
    "bf16_tpu.png": FigureSpec(
        "bf16[8,1,1280,16384]{3,2,0,1:T(8,128)(2,1)}", {"max_rows": 16, "max_cols": 16}
    ),
    # packing
    "bf16_pairs.png": FigureSpec("bf16[16,256]{1,0:T(8,128)(2,1)}", {"max_rows": 16, "max_cols": 16}),
    # the pass-validation walkthrough (docs/passes.md): layouts from XLA:TPU's dumps
    "passes_reshape_thin.png": FigureSpec(
        "bf16[128,2,512]{2,1,0:T(2,128)(2,1)}", {"max_rows": 8, "max_cols": 16}
    ),
    "passes_copy.png": FigureSpec("bf16[128,2,512]{0,2,1:T(8,128)(2,1)}", {"max_rows": 16, "max_cols": 16}),
    "passes_root.png": FigureSpec("bf16[2,512,128]{2,1,0:T(8,128)(2,1)}", {"max_rows": 16, "max_cols": 16}),
    "passes_pool_split.png": FigureSpec(
        "bf16[16,2,8,3,32]{4,0,3,2,1:T(8,128)(2,1)}", {"max_rows": 16, "max_cols": 16}
    ),
    "int8_quads.png": FigureSpec("s8[8,256]{1,0:T(8,128)(4,1)}", {"max_rows": 8, "max_cols": 16}),
    "s4_eights.png": FigureSpec("s4[8,256]{1,0:T(8,128)(8,1)E(4)}", {"max_rows": 8, "max_cols": 16}),
    # small-tile formats: a 2-row array in (8,128) and in (2,128)
    "thin_8x128.png": FigureSpec(
        "f32[2,300]{1,0:T(8,128)}", {"max_rows": 8, "max_cols": 16, "memory_strip": False}
    ),
    "thin_2x128.png": FigureSpec(
        "f32[2,300]{1,0:T(2,128)}", {"max_rows": 8, "max_cols": 16, "memory_strip": False}
    ),
    # the tutorial's copy (XLA:TPU's s8 copy fusion): 32-row tiles vs 8-row tiles
    "copy_s8_32_rows.png": FigureSpec("s8[32,256]{1,0:T(32,128)(4,1)}", {"max_rows": 16, "max_cols": 16}),
    "copy_s8_8_rows.png": FigureSpec("s8[32,256]{1,0:T(8,128)(4,1)}", {"max_rows": 16, "max_cols": 16}),
}


def generate(
    out_dir: Path = FIGURE_DIR, *, only_missing: bool = False, names: Iterable[str] | None = None
) -> list[Path]:
    """Draw the figures of :data:`FIGURES` (all, or those in ``names``) into ``out_dir``;
    returns the files written."""
    from layout_algebra import draw

    out_dir.mkdir(parents=True, exist_ok=True)
    wanted = set(FIGURES if names is None else names)
    written = []
    for name, figure in FIGURES.items():
        path = out_dir / name
        if name not in wanted or (only_missing and path.is_file()):
            continue
        draw(figure.shape, path, **figure.options)
        written.append(path)
    return written


# ----------------------------------------------------------------------------- mkdocs hook
def on_pre_build(config: Any) -> None:
    """mkdocs hook: draw the figures a fresh checkout does not have yet."""
    generate(only_missing=True)


def on_files(files: Any, config: Any) -> Any:
    """mkdocs hook: publish the repository files the pages link to (``../proofs/NAME.py``,
    ``../examples/NAME.py``, ...) with the site, under ``source/``, shown as they are.

    A link that leaves ``docs/`` then works both on the site and when the Markdown is read
    in the repository, and ``mkdocs build --strict`` still reports one whose file is missing.
    """
    from mkdocs.structure.files import File, InclusionLevel

    class SourceFile(File):
        def is_documentation_page(self) -> bool:  # a linked .md outside docs/ is shown as text
            return False

    docs_dir = Path(config["docs_dir"]).resolve()
    root = docs_dir.parent
    known = {f.src_uri for f in files}
    for target in sorted(_outside_links(docs_dir)):
        path = (docs_dir / target).resolve()
        if target in known or not path.is_file() or root not in path.parents:
            continue
        known.add(target)
        files.append(
            SourceFile(
                target,
                str(docs_dir),
                config["site_dir"],
                config["use_directory_urls"],
                dest_uri=f"source/{path.relative_to(root).as_posix()}",
                inclusion=InclusionLevel.INCLUDED,
            )
        )
    return files


def _outside_links(docs_dir: Path) -> set[str]:
    """Targets of the pages' relative links that leave ``docs_dir``, relative to it
    (``../proofs/x.py``), anchors dropped."""
    targets = set()
    for page in docs_dir.rglob("*.md"):
        folder = page.parent.relative_to(docs_dir).as_posix()
        for link in re.findall(r"\]\(([^)\s]+)\)", page.read_text(encoding="utf-8")):
            link = link.split("#", 1)[0]
            if "://" in link or not link:
                continue
            target = posixpath.normpath(posixpath.join(folder, link))
            if target.startswith("../"):
                targets.add(target)
    return targets


def main(argv: list[str]) -> int:
    out_dir = Path(argv[0]) if argv else FIGURE_DIR
    for path in generate(out_dir):
        print(f"{path}: {FIGURES[path.name].shape}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
