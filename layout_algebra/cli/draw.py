"""``layout-algebra draw``."""

from __future__ import annotations

import argparse

from layout_algebra.model.syntax import parse_shape

__all__ = ["register", "run"]


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the command's parser."""
    p = subparsers.add_parser(
        "draw",
        help="draw a layout: the array as a grid of memory positions, tiles, padding, packing",
        description="Draw a picture of a layout (PNG or SVG, by the output's suffix): the logical "
        "array as a grid, each element labelled with its position in memory, first-level tiles in "
        "colours, padding white, last-level tiles (packing, e.g. the 2x1 pairs of bf16) outlined in "
        "red, and the start of the buffer as a strip below. Higher ranks show the two minor-most "
        "dimensions with the other indices 0; large arrays are cropped to a corner (said in the title).",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n  layout-algebra draw 'f32[3,5]{1,0:T(2,2)}' -o figure1.png\n"
        "  layout-algebra draw 'bf16[8,1,1280,16384]{3,2,0,1:T(8,128)(2,1)}' -o bf16.svg --rows 16 --cols 16",
    )
    p.add_argument("shape", metavar="SHAPE", help="XLA array shape with its layout (quote it)")
    p.add_argument("-o", "--output", metavar="FILE", required=True, help="picture to write (.png or .svg)")
    p.add_argument("--no-memory", action="store_true", help="leave out the memory strip")
    p.add_argument("--rows", type=int, default=16, metavar="N", help="draw at most N rows (default 16)")
    p.add_argument("--cols", type=int, default=32, metavar="N", help="draw at most N columns (default 32)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from layout_algebra.draw import draw

    draw(args.shape, args.output, memory_strip=not args.no_memory, max_rows=args.rows, max_cols=args.cols)
    print(f"{args.output}: {parse_shape(args.shape)}")
    return 0
