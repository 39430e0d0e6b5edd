"""``layout-algebra size``."""

from __future__ import annotations

import argparse
from typing import Any

from layout_algebra.cli._batch import each, error_record, print_json, report_error
from layout_algebra.meaning.sizes import SizeReport, size_report
from layout_algebra.teach.explain import number_text

__all__ = ["register", "run"]


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the command's parser."""
    p = subparsers.add_parser(
        "size",
        help="logical bytes, exact physical bytes and XLA's allocation of a shape",
        description="Print the sizes of an array shape: logical bytes (elements x element bits), "
        "the exact physical buffer (every tile level's padding, packing, L(n)), and what XLA "
        "allocates (padding to the first tile only; differs only for unusual tilings). Every "
        "shape is measured; a bad one is reported on stderr and makes the exit status 2.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="example:\n  layout-algebra size 'f32[3,5]{1,0:T(2,2)}' --json",
    )
    p.add_argument("shapes", nargs="+", metavar="SHAPE", help="XLA array shape text (quote it)")
    p.add_argument(
        "--json", action="store_true", help="print one JSON list, a record per shape (docs/cli.md)"
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    outcomes = list(each(args.shapes, size_report))
    if args.json:
        print_json(
            [{"input": o.text, **_record(o.value)} if o.error is None else error_record(o) for o in outcomes]
        )
    else:
        for o in outcomes:
            if o.error is not None:
                report_error("size", o)
                continue
            r = o.value
            line = f"{r.shape}: logical {number_text(r.logical_bytes)} bytes, physical {number_text(r.physical_bytes)} bytes"
            if r.first_tile_bytes != r.physical_bytes:
                line += f", XLA allocates {number_text(r.first_tile_bytes)} bytes"
            print(line)
    return 2 if any(o.error is not None for o in outcomes) else 0


def _record(r: SizeReport) -> dict[str, Any]:
    """A size report as JSON: sizes in bytes or elements; symbolic sizes as SymPy text."""

    def size(x: Any) -> Any:
        return x if isinstance(x, int) else str(x)

    return {
        "shape": str(r.shape),
        "element_bits": r.element_bits,
        "logical_elements": size(r.logical_elements),
        "logical_bytes": size(r.logical_bytes),
        "tiled_dimensions": [size(d) for d in r.tiled_dimensions],
        "physical_elements": size(r.physical_elements),
        "physical_bytes": size(r.physical_bytes),
        "xla_allocated_bytes": size(r.first_tile_bytes),
        "padding_bytes": size(r.padding_bytes),
        "notes": list(r.notes),
    }
