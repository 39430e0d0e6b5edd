"""``layout-algebra explain``."""

from __future__ import annotations

import argparse

from layout_algebra.cli._batch import each, error_record, print_json, report_error
from layout_algebra.cli._common import parse_index

__all__ = ["register", "run"]


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the command's parser."""
    p = subparsers.add_parser(
        "explain",
        help="explain a shape's layout step by step: fields, tiling, sizes, padding",
        description="Explain how a shape's layout places its elements in memory: the physical "
        "order of the dimensions, each tiling step, the tiled shape, and the logical and "
        "physical sizes with their padding. Every shape is explained; a bad one is reported "
        "on stderr (quoting it) and makes the exit status 2.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n  layout-algebra explain 'bf16[8,1,1280,16384]{3,2,0,1:T(8,128)(2,1)}'\n"
        "  layout-algebra explain 'f32[3,5]{1,0:T(2,2)}' --element 2,3   # the document's 17",
    )
    p.add_argument("shapes", nargs="+", metavar="SHAPE", help="XLA shape text (quote it)")
    p.add_argument(
        "--element",
        metavar="I,J,...",
        type=parse_index,
        help="also show the worked arithmetic that takes this logical element to its offset",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="print one JSON list, a record per shape (schema: docs/cli.md)",
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from layout_algebra.teach.explain import explain

    outcomes = list(each(args.shapes, lambda text: explain(text, element=args.element)))
    if args.json:
        print_json(
            [{"input": o.text, **o.value.to_dict()} if o.error is None else error_record(o) for o in outcomes]
        )
    else:
        printed = 0
        for o in outcomes:
            if o.error is not None:
                report_error("explain", o)
                continue
            if printed:
                print()
            print(o.value)
            printed += 1
    return 2 if any(o.error is not None for o in outcomes) else 0
