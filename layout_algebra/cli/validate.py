"""``layout-algebra validate``."""

from __future__ import annotations

import argparse

from layout_algebra.model.syntax import parse_shape
from layout_algebra.model.validation import validate

__all__ = ["register", "run"]


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the command's parser."""
    p = subparsers.add_parser(
        "validate",
        help="check a shape's layout against XLA's validation rules",
        description="Check shapes against XLA's LayoutUtil::ValidateLayoutForShape rules. "
        "Exit status 0 when every shape is valid, 1 when one is not, 2 when one does not parse.",
    )
    p.add_argument("shapes", nargs="+", metavar="SHAPE", help="XLA shape text (quote it)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    status = 0
    for text in args.shapes:
        shape = parse_shape(text)
        try:
            validate(shape)
            print(f"{shape}: valid")
        except ValueError as err:
            print(str(err))
            status = 1
    return status
