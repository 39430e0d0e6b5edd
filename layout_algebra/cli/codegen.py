"""``layout-algebra codegen``."""

from __future__ import annotations

import argparse

__all__ = ["register", "run"]


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the command's parser."""
    p = subparsers.add_parser(
        "codegen",
        help="closed-form index code (C, Python, NumPy, MLIR, LaTeX, JavaScript), certified equal to the layout",
        description="Print a layout's index arithmetic as code: the offset of a logical index "
        "(default), the logical index at an offset (--inverse) or whether an offset is padding "
        "(--padding). The expression is simplified, read back from the printed text and checked "
        "equal to the layout map; a last comment gives its operation count and that check.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n  layout-algebra codegen 'bf16[16,256]{1,0:T(8,128)(2,1)}' --lang c\n"
        "  layout-algebra codegen 'f32[N,M]{1,0:T(8,128)}' --lang mlir --inverse --unit byte\n"
        "  layout-algebra codegen 's4[64,256]{1,0:T(64,128)(8,1)E(4)}' --lang js --unit bit",
    )
    p.add_argument("shape", metavar="SHAPE", help="XLA array shape with its layout (quote it)")
    p.add_argument(
        "--lang", choices=["c", "python", "numpy", "mlir", "latex", "js"], default="c", help="default c"
    )
    which = p.add_mutually_exclusive_group()
    which.add_argument("--inverse", action="store_true", help="offset -> logical index")
    which.add_argument("--padding", action="store_true", help="offset -> is it padding")
    p.add_argument("--unit", choices=["element", "byte", "bit"], default="element", help="offset unit")
    p.add_argument("--name", metavar="FN", help="function name (default from the direction)")
    p.add_argument("--json", action="store_true", help="print the code and its checks as one JSON object")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from layout_algebra.codegen import generate_code

    direction = "inverse" if args.inverse else "padding" if args.padding else "forward"
    code = generate_code(args.shape, args.lang, direction, args.unit, args.name)
    if args.json:
        from layout_algebra.cli._batch import print_json

        print_json(code.to_dict())
    else:
        print(code.text.rstrip("\n"))
        print(code.comment())
    return 1 if code.certification.status == "refuted" else 0
