"""``layout-algebra bitcast``."""

from __future__ import annotations

import argparse
import json

from layout_algebra.cli._common import check_assumed_names, parse_index, report_condition, shape_size_names
from layout_algebra.model.errors import InvalidArgumentError

__all__ = ["register", "run"]


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the command's parser."""
    p = subparsers.add_parser(
        "bitcast",
        help="does a reshape, transpose or bitcast move data? (exact: tiles, padding, packing)",
        description="Decide exactly whether reshaping SRC into DST (with --permutation: transposing; with "
        "--reinterpret: any of XLA's bitcast correspondences, reshape, transpose or "
        "transpose-reshape-transpose) keeps every element's bits: same memory space, every element at "
        "the same bit offset, and the same XLA allocation. Tiles, padding, E(n) packing and L(n) all "
        "count (XLA's own ShapeUtil::ReshapeIsBitcast ignores tiles; its answer is shown beside). "
        "Prints the verdict (proved / refuted / unknown) with its reason and a re-checked "
        "counterexample, the verdict as JSON (--json), or a suggested layout (--suggest).",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="exit status: 0 bitcast (proved), 1 not a bitcast (refuted), 2 bad input, 3 unknown.\n\n"
        "examples:\n  layout-algebra bitcast 'f32[16,256]{1,0:T(8,128)}' 'f32[4096]{0}'\n"
        "  layout-algebra bitcast 'f32[5,3]{1,0}' 'f32[3,5]{0,1}' --permutation 1,0\n"
        "  layout-algebra bitcast 'bf16[16,256]{1,0:T(8,128)(2,1)}' 'bf16[8,2,256]{2,0,1:T(8,128)(2,1)}' "
        "--reinterpret --json\n"
        "  layout-algebra bitcast 'f32[2,N,128]{2,1,0:T(8,128)}' 'f32[2*N,128]{1,0:T(8,128)}' --when\n"
        "  layout-algebra bitcast 'bf16[32,8,24,200]{3,2,1,0:T(8,128)(2,1)}' 256,24,200 --suggest",
    )
    p.add_argument("src", metavar="SRC", help="input shape with layout")
    p.add_argument(
        "dst",
        metavar="DST",
        help="output shape with layout (with --suggest: the output dims, e.g. 256,24,200)",
    )
    how = p.add_mutually_exclusive_group()
    how.add_argument(
        "--permutation", type=parse_index, metavar="P0,P1,...", help="a transpose's dimensions attribute"
    )
    how.add_argument(
        "--reinterpret",
        action="store_true",
        help="an HLO bitcast: try every correspondence XLA allows and name the one that keeps the bits",
    )
    how.add_argument(
        "--suggest",
        action="store_true",
        help="suggest a layout for DST dims that makes the reshape a bitcast",
    )
    p.add_argument(
        "--json", action="store_true", help="print the verdict as one JSON object (see docs/bitcasts.md)"
    )
    p.add_argument(
        "--assume",
        action="append",
        default=[],
        metavar="TEXT",
        help="for symbolic dims, e.g. 'M == 8*N'; conditions no sizes >= 0 satisfy are refused (exit 2)",
    )
    p.add_argument(
        "--when",
        action="store_true",
        help="for symbolic dims: print the weakest size condition under which it is a bitcast, and how much "
        "of it is proved (exact / sufficient, necessary up to a bound / unknown); see docs/conditions.md",
    )
    p.set_defaults(run=run)


_EXIT = {"proved": 0, "refuted": 1, "unknown": 3}


def run(args: argparse.Namespace) -> int:
    from layout_algebra.decide.bitcast import bitcast_is_valid, reshape_is_bitcast, transpose_is_bitcast

    if args.suggest:
        from layout_algebra.decide.suggest import suggest_bitcast_layout  # here: it loads SymPy and Z3

        try:
            dims = parse_index(args.dst)
        except argparse.ArgumentTypeError as err:
            raise InvalidArgumentError(
                f"--suggest needs DST as output dimensions like 256,24,200: {err}"
            ) from None
        suggestion = suggest_bitcast_layout(args.src, dims)
        if args.json:
            print(json.dumps(suggestion.to_dict()))
        else:
            print(f"{suggestion.shape}: {suggestion.reason}" if suggestion else suggestion.reason)
        return 0 if suggestion else 1
    if args.when:
        return _when(args)
    assume = args.assume or None
    check_assumed_names(assume, shape_size_names([args.src, args.dst]))
    if args.permutation is not None:
        verdict = transpose_is_bitcast(args.src, args.dst, args.permutation, assume=assume)
    elif args.reinterpret:
        verdict = bitcast_is_valid(args.src, args.dst, assume=assume)
    else:
        verdict = reshape_is_bitcast(args.src, args.dst, assume=assume)
    theirs = _xla_answer(args)
    if args.json:
        out = verdict.to_dict()
        out["xla_shape_util"] = theirs
        print(json.dumps(out))
    else:
        print(verdict)
        if theirs is not None:
            print(f"  XLA's tile-unaware ShapeUtil check says: {theirs}")
    return _EXIT[verdict.status]


def _when(args: argparse.Namespace) -> int:
    """``--when``: the size condition; exit 0 when exact, 3 otherwise."""
    from layout_algebra.decide import conditions

    if args.suggest or args.assume:
        raise InvalidArgumentError("--when finds the condition itself: it takes no --assume and no --suggest")
    if args.permutation is not None:
        found = conditions.when_transpose_is_bitcast(args.src, args.dst, args.permutation)
    elif args.reinterpret:
        found = conditions.when_bitcast_is_valid(args.src, args.dst)
    else:
        found = conditions.when_reshape_is_bitcast(args.src, args.dst)
    return report_condition(found, args.json)


def _xla_answer(args: argparse.Namespace) -> str | None:
    """XLA's own (tile-unaware) predicate for the same question, when it applies."""
    from layout_algebra import xla

    try:
        if args.permutation is not None:
            theirs = xla.bitcast_util.transpose_is_bitcast(args.src, args.dst, args.permutation)
        elif args.reinterpret:
            theirs = xla.bitcast_util.is_reshape_or_transpose_bitcast(args.src, args.dst)
        else:
            theirs = xla.bitcast_util.reshape_is_bitcast(args.src, args.dst)
    except (AttributeError, ValueError):
        return None
    return "bitcast" if theirs else "not a bitcast"
