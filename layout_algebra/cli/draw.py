"""``layout-algebra draw``."""

from __future__ import annotations

import argparse

from layout_algebra.model.errors import InvalidArgumentError
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
        "dimensions with the other indices 0; large arrays are cropped to a corner (said in the title). "
        "With --html, write an interactive page instead (one self-contained file, no network): point "
        "at an element to see its slot, tile, offsets in elements, bits and bytes and the arithmetic, "
        "at a slot to see its element or padding; several shapes are shown side by side, and buttons "
        "move the window over a large array.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n  layout-algebra draw 'f32[3,5]{1,0:T(2,2)}' -o figure1.png\n"
        "  layout-algebra draw 'bf16[8,1,1280,16384]{3,2,0,1:T(8,128)(2,1)}' -o bf16.svg --rows 16 --cols 16\n"
        "  layout-algebra draw 'f32[16,256]{1,0:T(8,128)}' 'f32[16,256]{0,1:T(8,128)}' --html compare.html",
    )
    p.add_argument(
        "shapes",
        nargs="+",
        metavar="SHAPE",
        help="XLA array shape with its layout (quote it); several with --html",
    )
    out = p.add_mutually_exclusive_group(required=True)
    out.add_argument("-o", "--output", metavar="FILE", help="picture to write (.png, .svg or .html)")
    out.add_argument(
        "--html", metavar="FILE", help="interactive explorer page to write (self-contained HTML)"
    )
    p.add_argument("--no-memory", action="store_true", help="leave out the memory strip (pictures only)")
    p.add_argument("--rows", type=int, default=16, metavar="N", help="draw at most N rows (default 16)")
    p.add_argument("--cols", type=int, default=32, metavar="N", help="draw at most N columns (default 32)")
    p.add_argument(
        "--json", action="store_true", help="print what was written as one JSON object (docs/cli.md)"
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from layout_algebra.teach.draw import draw

    if args.html is not None:
        draw(args.shapes, args.html, fmt="html", max_rows=args.rows, max_cols=args.cols)
        path = args.html
    else:
        path = args.output
        several = len(args.shapes) > 1
        if several and not path.lower().endswith(".html"):
            raise InvalidArgumentError(
                f"{len(args.shapes)} shapes: several layouts go on one page only with --html FILE "
                "(a picture shows one)"
            )
        shape = args.shapes if several else args.shapes[0]
        draw(shape, path, memory_strip=not args.no_memory, max_rows=args.rows, max_cols=args.cols)
    shapes = [str(parse_shape(s)) for s in args.shapes]
    if args.json:
        from layout_algebra.cli._batch import print_json

        kind = (
            "html"
            if args.html is not None or path.lower().endswith(".html")
            else path.rsplit(".", 1)[-1].lower()
        )
        print_json({"path": path, "format": kind, "shapes": shapes})
    else:
        print(f"{path}: {', '.join(shapes)}")
    return 0
