"""``layout-algebra size``."""

from __future__ import annotations

import argparse
import json

from layout_algebra.sizes import size_report

__all__ = ["register", "run"]


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the command's parser."""
    p = subparsers.add_parser(
        "size",
        help="logical bytes, exact physical bytes and XLA's allocation of a shape",
        description="Print the sizes of an array shape: logical bytes (elements x element bits), "
        "the exact physical buffer (every tile level's padding, packing, L(n)), and what XLA "
        "allocates (padding to the first tile only; differs only for unusual tilings).",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="example:\n  layout-algebra size 'f32[3,5]{1,0:T(2,2)}' --json",
    )
    p.add_argument("shapes", nargs="+", metavar="SHAPE", help="XLA array shape text (quote it)")
    p.add_argument("--json", action="store_true", help="print one JSON object per shape")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    for text in args.shapes:
        r = size_report(text)
        if args.json:
            record = {
                "shape": str(r.shape),
                "element_bits": r.element_bits,
                "logical_elements": r.logical_elements,
                "logical_bytes": r.logical_bytes,
                "tiled_dimensions": list(r.tiled_dimensions),
                "physical_elements": r.physical_elements,
                "physical_bytes": r.physical_bytes,
                "xla_allocated_bytes": r.first_tile_bytes,
                "padding_bytes": r.padding_bytes,
                "notes": list(r.notes),
            }
            print(json.dumps(record, default=str))  # symbolic sizes print as SymPy text
        else:
            line = f"{r.shape}: logical {r.logical_bytes} bytes, physical {r.physical_bytes} bytes"
            if r.first_tile_bytes != r.physical_bytes:
                line += f", XLA allocates {r.first_tile_bytes} bytes"
            print(line)
    return 0
