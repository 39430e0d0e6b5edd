"""``layout-algebra tpu-layout``."""

from __future__ import annotations

import argparse
import json

__all__ = ["register", "run"]


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the command's parser."""
    p = subparsers.add_parser(
        "tpu-layout",
        help="the layout XLA:TPU picks for an array argument, and its bytes",
        description="Print the layout the XLA:TPU compiler chooses for an argument of this element\n"
        "type and dimensions (tiles by element width, small tiles for thin arrays, and the\n"
        "minor_to_major that allocates least), with the bytes it allocates.",
        epilog="examples:\n  layout-algebra tpu-layout bf16 8 1280\n  layout-algebra tpu-layout bf16 8,1280\n"
        "  layout-algebra tpu-layout s8",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("dtype", metavar="DTYPE", help="element type, e.g. f32, bf16, s8, pred, s4")
    p.add_argument(
        "dims",
        nargs="*",
        metavar="DIM",
        help="dimension sizes, separated by spaces or commas: 8 1280 or 8,1280 (none for a scalar)",
    )
    p.add_argument("--json", action="store_true", help="print a JSON object")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from layout_algebra.cli._common import parse_dims
    from layout_algebra.meaning.sizes import size_report
    from layout_algebra.target.tpu import default_layout

    shape = default_layout(args.dtype, list(parse_dims(args.dims)))
    r = size_report(shape)
    if args.json:
        record = {
            "shape": str(shape),
            "xla_allocated_bytes": r.first_tile_bytes,
            "logical_bytes": r.logical_bytes,
        }
        print(json.dumps(record))
    else:
        print(f"{shape}: XLA:TPU allocates {r.first_tile_bytes:,} bytes (logical {r.logical_bytes:,} bytes)")
    return 0
