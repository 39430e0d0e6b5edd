"""``layout-algebra size``."""

from __future__ import annotations

import argparse

from layout_algebra.cli._batch import each, error_record, print_json, report_error

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
    from layout_algebra.meaning.sizes import size_report  # here: --help needs no layout machinery
    from layout_algebra.teach.explain import number_text

    outcomes = list(each(args.shapes, size_report))
    if args.json:
        print_json(
            [{"input": o.text, **o.value.to_dict()} if o.error is None else error_record(o) for o in outcomes]
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
