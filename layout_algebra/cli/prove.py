"""``layout-algebra prove``."""

from __future__ import annotations

import argparse

from layout_algebra.cli._common import check_assumed_names, report_condition, result_text, shape_size_names
from layout_algebra.model.errors import InvalidArgumentError

__all__ = ["register", "run"]


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the command's parser."""
    p = subparsers.add_parser(
        "prove",
        help="prove a layout injective, in bounds, or equal to another map (Z3)",
        description="Prove a claim about layouts with Z3. Answers 'proved' only when the solver "
        "found no counterexample on a trusted encoding, 'refuted' with a counterexample that was "
        "re-checked by evaluating it, or 'unknown' with the reason. Dimensions may be names "
        "(f32[N,M]); give assumptions with --assume. Exit status: 0 proved, 1 refuted or unknown, "
        "2 bad input.\n\nclaims:\n"
        "  injective SHAPE          no two elements share a position\n"
        "  in-bounds SHAPE          every element lies inside the buffer (--allocation xla: inside\n"
        "                           what XLA allocates, padding to the first tile only)\n"
        "  tiling SHAPE             the document's tiled formula = pad-reshape-transpose = the layout\n"
        "  equivalent SHAPE SHAPE   two layouts place every element at the same position\n"
        "  no-padding SHAPE         the layout adds no padding slot\n\n"
        "--when (in-bounds, no-padding): print the weakest size condition under which the claim\n"
        "holds and its status (exact / sufficient, necessary up to a bound / unknown); exit 0 exact.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n  layout-algebra prove injective 'bf16[N,M]{1,0:T(8,128)(2,1)}'\n"
        "  layout-algebra prove equivalent 'f32[N,M]{1,0:T(1,128)}' 'f32[N,M]{1,0}' --assume 'M % 128 == 0'\n"
        "  layout-algebra prove in-bounds 's16[1000,200]{0,1:T(1,128)(2,1)}' --allocation xla\n"
        "  layout-algebra prove no-padding 'bf16[N,M]{1,0:T(8,128)(2,1)}' --when",
    )
    p.add_argument(
        "claim",
        choices=["injective", "in-bounds", "tiling", "equivalent", "no-padding"],
        help="what to prove",
    )
    p.add_argument(
        "shapes",
        nargs="+",
        metavar="SHAPE",
        help="shape text: exactly two for 'equivalent'; for the other claims one or more, each proved in turn",
    )
    p.add_argument(
        "--assume",
        action="append",
        default=[],
        metavar="TEXT",
        help="a condition on the sizes, e.g. 'N %% 8 == 0 or N == 3' (repeatable; grammar: docs/assumptions.md); "
        "conditions no sizes >= 0 satisfy are refused (exit 2), never a vacuous proof",
    )
    p.add_argument("--allocation", choices=["exact", "xla"], default="exact", help="buffer for in-bounds")
    p.add_argument(
        "--method",
        choices=["auto", "direct"],
        default="auto",
        help="injective/in-bounds: 'auto' composes stage lemmas (general ones, proved once for all "
        "sizes, when sizes are concrete); 'direct' asks the solver one query about the whole map",
    )
    p.add_argument("--timeout-ms", type=int, default=30_000, help="per solver query (default 30000)")
    p.add_argument("--json", action="store_true", help="print the result as one JSON object (docs/cli.md)")
    p.add_argument(
        "--when", action="store_true", help="in-bounds, no-padding: the size condition (docs/conditions.md)"
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from layout_algebra import prove

    if args.claim == "equivalent" and len(args.shapes) != 2:
        raise InvalidArgumentError(f"'equivalent' compares two shapes, got {len(args.shapes)}")
    if args.when:
        return _when(args)
    check_assumed_names(args.assume, shape_size_names(args.shapes))
    options = {"assume": args.assume or None, "timeout_ms": args.timeout_ms}
    if args.claim == "equivalent":
        results = [prove.equivalent(args.shapes[0], args.shapes[1], **options)]
    else:
        results = []
        for text in args.shapes:
            if args.claim == "no-padding":
                results.append(prove.no_padding(text, **options))
            elif args.claim == "injective":
                results.append(prove.injective(text, method=args.method, **options))
            elif args.claim == "in-bounds":
                results.append(
                    prove.in_bounds(text, allocation=args.allocation, method=args.method, **options)
                )
            else:
                results.append(prove.tiling_is_pad_reshape_transpose(text, **options))
    if args.json:
        from layout_algebra.cli._batch import print_json

        records = [r.to_dict() for r in results]
        print_json(records[0] if len(records) == 1 else records)
    else:
        for result in results:
            print(result_text(result))
        if len(results) > 1:
            proved = sum(1 for r in results if r.proved)
            print(f"{proved:,} of {len(results):,} claims proved")
    return 0 if all(r.proved for r in results) else 1


def _when(args: argparse.Namespace) -> int:
    """``--when``: the size condition of in-bounds or no-padding; exit 0 when exact, 3 otherwise."""
    from layout_algebra.decide import conditions

    if args.claim not in ("in-bounds", "no-padding"):
        raise InvalidArgumentError(
            f"--when applies to the claims in-bounds and no-padding, not {args.claim!r}"
        )
    if args.assume:
        raise InvalidArgumentError("--when finds the condition itself: it takes no --assume")
    if len(args.shapes) != 1:
        raise InvalidArgumentError(f"--when takes one shape, got {len(args.shapes)}")
    if args.claim == "no-padding":
        found = conditions.when_no_padding(args.shapes[0])
    else:
        found = conditions.when_in_bounds(args.shapes[0], args.allocation)
    return report_condition(found, args.json)
