"""The ``layout-algebra`` command line.

Examples::

    layout-algebra explain 'bf16[8,1,1280,16384]{3,2,0,1:T(8,128)(2,1)}'
    layout-algebra explain 'f32[3,5]{1,0:T(2,2)}' --element 2,3
    layout-algebra size 'f32[3,5]{1,0:T(2,2)}' --json
    layout-algebra validate 'f32[2,3]{0,0}'

Bad input prints one clear error (the input quoted, a caret under the fault) and exits
with status 2; no traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from layout_algebra import __version__
from layout_algebra.explain import explain
from layout_algebra.model.syntax import parse_shape
from layout_algebra.model.validation import validate
from layout_algebra.sizes import size_report

__all__ = ["main"]

_DESCRIPTION = """\
Turn XLA array layouts into mathematics you can compute with.

A shape is written as XLA prints it:  TYPE[DIMS]{MINOR_TO_MAJOR:ATTRIBUTES}
  bf16[8,1,1280,16384]{3,2,0,1:T(8,128)(2,1)}
  |    |               |       |
  |    |               |       tiles: 8x128 tiles of the two minor dims, then 2x1 sub-tiles
  |    |               minor_to_major: dim 3 varies fastest, dim 1 slowest
  |    dimensions (N, <=N bounded dynamic, ? unbounded, or a name for a symbolic size)
  element type (pred, s4, s8, bf16, f32, ...)

Quote shapes in the shell: they contain brackets, braces and parentheses.
"""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="layout-algebra",
        description=_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    p = sub.add_parser(
        "explain",
        help="explain a shape's layout step by step: fields, tiling, sizes, padding",
        description="Explain how a shape's layout places its elements in memory: the physical "
        "order of the dimensions, each tiling step, the tiled shape, and the logical and "
        "physical sizes with their padding.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n  layout-algebra explain 'bf16[8,1,1280,16384]{3,2,0,1:T(8,128)(2,1)}'\n"
        "  layout-algebra explain 'f32[3,5]{1,0:T(2,2)}' --element 2,3   # the document's 17",
    )
    p.add_argument("shapes", nargs="+", metavar="SHAPE", help="XLA shape text (quote it)")
    p.add_argument(
        "--element",
        metavar="I,J,...",
        type=_index,
        help="also show the worked arithmetic that takes this logical element to its offset",
    )

    p = sub.add_parser(
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

    p = sub.add_parser(
        "validate",
        help="check a shape's layout against XLA's validation rules",
        description="Check shapes against XLA's LayoutUtil::ValidateLayoutForShape rules. "
        "Exit status 0 when every shape is valid, 1 when one is not, 2 when one does not parse.",
    )
    p.add_argument("shapes", nargs="+", metavar="SHAPE", help="XLA shape text (quote it)")
    return parser


def _index(text: str) -> tuple[int, ...]:
    """``"2,3"`` -> ``(2, 3)``; ``""`` is the scalar's index ``()``."""
    try:
        return tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an index like 2,3") from None


def _size(args: argparse.Namespace) -> int:
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


def _validate(args: argparse.Namespace) -> int:
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


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        if args.command == "explain":
            for i, text in enumerate(args.shapes):
                if i:
                    print()
                print(explain(text, element=args.element))
            return 0
        if args.command == "size":
            return _size(args)
        return _validate(args)
    except ValueError as err:
        print(f"layout-algebra {args.command}: error: {err}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # e.g. piped into `head`
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
