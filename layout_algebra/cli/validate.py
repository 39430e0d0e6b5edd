"""``layout-algebra validate``."""

from __future__ import annotations

import argparse
from typing import Any

from layout_algebra.cli._batch import each, error_record, print_json, report_error
from layout_algebra.model.shapes import Shape
from layout_algebra.model.syntax import parse_shape
from layout_algebra.model.validation import layout_problems

__all__ = ["register", "run"]


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the command's parser."""
    p = subparsers.add_parser(
        "validate",
        help="check a shape's layout against XLA's validation rules",
        description="Check shapes against XLA's LayoutUtil::ValidateLayoutForShape rules. "
        "Every shape is checked. Exit status 0 when every shape is valid, 1 when one is not, "
        "2 when one does not parse.",
    )
    p.add_argument("shapes", nargs="+", metavar="SHAPE", help="XLA shape text (quote it)")
    p.add_argument(
        "--json", action="store_true", help="print one JSON list, a record per shape (docs/cli.md)"
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    outcomes = list(each(args.shapes, lambda text: _record(parse_shape(text))))
    if args.json:
        print_json([{"input": o.text, **o.value} if o.error is None else error_record(o) for o in outcomes])
    else:
        for o in outcomes:
            if o.error is not None:
                report_error("validate", o)
            elif o.value["valid"]:
                print(f"{o.value['shape']}: valid")
            else:
                print(f"invalid layout in {o.value['shape']}:")
                print("\n".join(f"  - {p}" for p in o.value["problems"]))
    if any(o.error is not None for o in outcomes):
        return 2
    return 0 if all(o.value["valid"] for o in outcomes) else 1


def _record(shape: Shape) -> dict[str, Any]:
    """``shape`` (canonical text), ``valid``, and ``problems``: every rule it breaks."""
    problems = layout_problems(shape)
    return {"shape": str(shape), "valid": not problems, "problems": problems}
