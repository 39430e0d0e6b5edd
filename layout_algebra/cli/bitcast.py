"""``layout-algebra bitcast``."""

from __future__ import annotations

import argparse

from layout_algebra.cli._common import parse_index

__all__ = ["register", "run"]


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the command's parser."""
    p = subparsers.add_parser(
        "bitcast",
        help="does a reshape, transpose or bitcast move data? (exact: tiles, padding, packing)",
        description="Decide exactly whether reshaping (or, with --permutation, transposing) SRC into DST "
        "moves any data: every element must keep its bit offset and the buffers must have the same size. "
        "Tiles, padding, E(n) packing and L(n) all count (XLA's own ShapeUtil::ReshapeIsBitcast ignores "
        "tiles; its answer is shown beside). Prints the verdict with its reason, a re-checked "
        "counterexample, or a suggested layout (--suggest). Exit status 0 bitcast, 1 not, 2 bad input.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n  layout-algebra bitcast 'f32[16,256]{1,0:T(8,128)}' 'f32[4096]{0}'\n"
        "  layout-algebra bitcast 'f32[5,3]{1,0}' 'f32[3,5]{0,1}' --permutation 1,0\n"
        "  layout-algebra bitcast 'bf16[32,8,24,200]{3,2,1,0:T(8,128)(2,1)}' 256,24,200 --suggest",
    )
    p.add_argument("src", metavar="SRC", help="input shape with layout")
    p.add_argument(
        "dst",
        metavar="DST",
        help="output shape with layout (with --suggest: the output dims, e.g. 256,24,200)",
    )
    p.add_argument(
        "--permutation", type=parse_index, metavar="P0,P1,...", help="a transpose's dimensions attribute"
    )
    p.add_argument(
        "--suggest",
        action="store_true",
        help="suggest a layout for DST dims that makes the reshape a bitcast",
    )
    p.add_argument(
        "--assume", action="append", default=[], metavar="TEXT", help="for symbolic dims, e.g. 'M == 8*N'"
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from layout_algebra.bitcast import reshape_is_bitcast, suggest_bitcast_layout, transpose_is_bitcast

    if args.suggest:
        suggestion = suggest_bitcast_layout(args.src, parse_index(args.dst))
        print(f"{suggestion.shape}: {suggestion.reason}" if suggestion else suggestion.reason)
        return 0 if suggestion else 1
    assume = args.assume or None
    if args.permutation is not None:
        verdict = transpose_is_bitcast(args.src, args.dst, args.permutation, assume=assume)
    else:
        verdict = reshape_is_bitcast(args.src, args.dst, assume=assume)
    print(verdict)
    try:
        from layout_algebra import xla

        if args.permutation is not None:
            theirs = xla.transpose_is_bitcast(args.src, args.dst, args.permutation)
        else:
            theirs = xla.reshape_is_bitcast(args.src, args.dst)
        print(f"  XLA's tile-unaware ShapeUtil check says: {'bitcast' if theirs else 'not a bitcast'}")
    except (AttributeError, ValueError):
        pass
    return 0 if verdict else 1
