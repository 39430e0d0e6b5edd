"""Draw the figures of the layout-algebra page (``docs/algebra.md``) into ``docs/algebra_figures/``.

The PNGs are committed (small; ``docs/figures/`` is the build hook's, ignored by git).

Run:  python docs/generate_algebra_figures.py [OUT_DIR]

Each CuTe layout of rank 2 is drawn as a grid: row ``r``, column ``c`` holds the offset
``L((r, c))`` (mode 0 down, mode 1 across, as CuTe's own pictures do); cells are coloured by
a group (the tile an element belongs to). The XLA layout of the page is drawn with the
package's :func:`layout_algebra.teach.draw`.
"""

from __future__ import annotations

import sys
from pathlib import Path

FIGURE_DIR = Path(__file__).resolve().parent / "algebra_figures"


def grid(path: Path, layout_text: str, title: str, group=None) -> None:
    """A rank-2 CuTe layout as a grid of its offsets; ``group(r, c)`` colours the cells."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from layout_algebra.interop.cute.algebra import layout

    L = layout(layout_text)
    rows, cols = L[0].size, L[1].size
    fig, ax = plt.subplots(figsize=(0.5 * cols + 1.2, 0.42 * rows + 0.9), dpi=100)
    palette = plt.get_cmap("tab20").colors
    for r in range(rows):
        for c in range(cols):
            colour = palette[(group(r, c) if group else 0) % len(palette)]
            ax.add_patch(plt.Rectangle((c, r), 1, 1, facecolor=colour, edgecolor="white", linewidth=1.5))
            ax.text(c + 0.5, r + 0.5, str(L((r, c))), ha="center", va="center", fontsize=9)
    ax.set_xlim(0, cols)
    ax.set_ylim(rows, 0)
    ax.set_xticks([c + 0.5 for c in range(cols)], [str(c) for c in range(cols)], fontsize=7)
    ax.set_yticks([r + 0.5 for r in range(rows)], [str(r) for r in range(rows)], fontsize=7)
    ax.tick_params(length=0)
    for side in ax.spines.values():
        side.set_visible(False)
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def generate(out_dir: Path = FIGURE_DIR) -> list[Path]:
    from layout_algebra import draw
    from layout_algebra.interop.cute.algebra import logical_divide

    out_dir.mkdir(parents=True, exist_ok=True)
    written = []

    path = out_dir / "algebra_xla_tiled.png"
    draw("f32[4,8]{1,0:T(2,4)}", path)
    written.append(path)

    # the XLA layout above in CuTe's notation, mode 0 = rows, mode 1 = columns
    path = out_dir / "algebra_cute_tiled.png"
    grid(
        path,
        "((2,2),(4,2)):((4,16),(1,8))",
        "f32[4,8]{1,0:T(2,4)} as ((2,2),(4,2)):((4,16),(1,8))",
        lambda r, c: 2 * (r // 2) + c // 4,
    )
    written.append(path)

    # divide a row-major 8x8 matrix into 2x4 tiles: colour = which tile
    divided = logical_divide("(8,8):(8,1)", ("2:1", "4:1"))
    path = out_dir / "algebra_divide.png"
    grid(
        path,
        "(8,8):(8,1)",
        f"(8,8):(8,1) divided by <2:1, 4:1> = {divided}",
        lambda r, c: 2 * (r // 2) + c // 4,
    )
    written.append(path)

    # composition: CuTe's example R = (6,2):(8,2) o (4,3):(3,1)
    path = out_dir / "algebra_composition.png"
    grid(path, "((2,2),3):((24,2),8)", "(6,2):(8,2) o (4,3):(3,1) = ((2,2),3):((24,2),8)", lambda r, c: c)
    written.append(path)
    return written


if __name__ == "__main__":
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else FIGURE_DIR
    for p in generate(out):
        print(p)
