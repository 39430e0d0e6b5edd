"""``layout-algebra verify``: is rewriting one HLO module into another safe?"""

from __future__ import annotations

import argparse
import json

from layout_algebra.cli._common import check_assumed_names, read_text, report_condition, result_text
from layout_algebra.model.errors import InvalidArgumentError

__all__ = ["register", "run"]

#: Exit status per answer (2 is bad input, as for every command).
EXIT_STATUS = {"proved": 0, "refuted": 1, "unknown": 3}


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the command's parser."""
    p = subparsers.add_parser(
        "verify",
        help="prove or refute that a rewrite of an HLO module keeps its result",
        description="Verify that AFTER.hlo computes what BEFORE.hlo computes, for every size:\n"
        "  physical (default): same parameter buffers in -> the same root buffer out, bit for bit\n"
        "    (memory space S(n), E(n), exact and allocated sizes, every element's bits);\n"
        "  logical: the same root array as a function of the parameters' arrays, layouts free.\n"
        "Data movement (copy, bitcast, reshape, transpose, slice, pad, ...) is interpreted\n"
        "exactly; elementwise ops are uninterpreted functions. See docs/verify.md.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="exit status: 0 proved, 1 refuted (with a counterexample re-checked at concrete sizes),\n"
        "3 unknown (with the reason), 2 bad input (unreadable, invalid or unsupported HLO).\n\n"
        "examples:\n  layout-algebra verify before.hlo after.hlo\n"
        "  layout-algebra verify before.hlo after.hlo --assume 'N % 8 == 0' --json\n"
        "  layout-algebra verify before.hlo after.hlo --mode logical\n"
        "  layout-algebra verify before.hlo after.hlo --when --json\n\n"
        "--when: print the weakest condition on the size symbols under which the rewrite is safe,\n"
        "and how much of it is proved (exact / sufficient, necessary up to a bound / unknown);\n"
        "exit 0 when exact, 3 otherwise. See docs/conditions.md.",
    )
    p.add_argument("before", metavar="BEFORE.hlo", help="the module before the rewrite (HLO text)")
    p.add_argument("after", metavar="AFTER.hlo", help="the module after the rewrite")
    p.add_argument(
        "--assume",
        action="append",
        metavar="COND",
        help="a condition on the symbolic sizes, e.g. 'N %% 8 == 0' (repeatable)",
    )
    p.add_argument(
        "--mode", choices=("physical", "logical"), default="physical", help="what 'the same' means"
    )
    p.add_argument("--timeout-ms", type=int, default=30_000, help="per solver query (default 30000)")
    p.add_argument("--json", action="store_true", help="print the result as one JSON object")
    p.add_argument(
        "--when",
        action="store_true",
        help="for symbolic sizes: the weakest size condition under which the rewrite is safe (docs/conditions.md)",
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from layout_algebra.hlo import HloParseError, parse_module
    from layout_algebra.hlo.verify import verify_rewrite

    modules = []
    for path in (args.before, args.after):
        try:
            modules.append(parse_module(read_text(path)))
        except HloParseError as err:
            raise InvalidArgumentError(f"{path}: {err}") from None
    if args.when:
        from layout_algebra.hlo.rewrite_conditions import when_rewrite_is_safe

        if args.assume:
            raise InvalidArgumentError("--when finds the condition itself: it takes no --assume")
        return report_condition(when_rewrite_is_safe(modules[0], modules[1], mode=args.mode), args.json)
    check_assumed_names(args.assume, _size_names(modules))
    result = verify_rewrite(
        modules[0], modules[1], assume=args.assume or None, mode=args.mode, timeout_ms=args.timeout_ms
    )
    if args.json:  # the schema of `layout-algebra prove --json`, and the mode
        print(json.dumps({**result.to_dict(), "mode": args.mode}))
    else:
        print(result_text(result))
    return EXIT_STATUS[result.status]


def _size_names(modules: list) -> tuple[str, ...]:
    """The size symbols the modules' arrays are written in."""
    from layout_algebra.model.shapes import ArrayShape, TupleShape

    names: list[str] = []

    def visit(shape: object) -> None:
        if isinstance(shape, TupleShape):
            for element in shape.elements:
                visit(element)
        elif isinstance(shape, ArrayShape):
            names.extend(str(s) for s in shape.size_symbols if str(s) not in names)

    for module in modules:
        for _, instruction in module.instructions():
            visit(instruction.shape)
    return tuple(names)
