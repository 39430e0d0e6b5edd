"""``layout-algebra audit``."""

from __future__ import annotations

import argparse
import json
import sys

from layout_algebra.cli._common import read_text
from layout_algebra.model.errors import InvalidArgumentError

__all__ = ["register", "run"]

#: Modules of at least this many characters (a few hundred instructions of a real dump)
#: show a progress bar when stderr is a terminal (drawn on stderr, then erased: never in
#: the printed audit, piped or ``--json``).
PROGRESS_FROM = 200_000


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the command's parser."""
    p = subparsers.add_parser(
        "audit",
        help="memory and data movement of every instruction of an HLO module",
        description="Parse an HLO module (XLA's text dump) and audit its layouts:\n"
        "  - every instruction: shape, layout, logical and physical bytes, padding ratio;\n"
        "  - buffer totals by memory space S(n) (buffers: the values stored outside fusion\n"
        "    bodies; the exact rule is in the layout_algebra.hlo.audit documentation);\n"
        "  - XLA's layout validation;\n"
        "  - whether each bitcast, reshape, transpose and copy moves data.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="exit status: 0 audited (with --strict: and no problem found), 1 with --strict when some\n"
        "layout problem or invalid bitcast was found, 2 bad input (unreadable or malformed module:\n"
        "undefined operands, dependency cycles).\n\n"
        "examples:\n  layout-algebra audit examples/tpu_module.hlo\n"
        "  layout-algebra audit module.hlo --json --top 10\n"
        "  layout-algebra audit module.hlo --all --strict",
    )
    p.add_argument("module", metavar="MODULE.hlo", help="a file holding HLO text (HloModule ...)")
    p.add_argument("--json", action="store_true", help="print the audit as one JSON object")
    p.add_argument(
        "--top",
        type=int,
        metavar="N",
        help="list the N worst padding offenders (table default 25, 0 = all; JSON default all)",
    )
    p.add_argument(
        "--all", action="store_true", help="list every data-movement verdict (default: as many as --top)"
    )
    p.add_argument(
        "--strict",
        action="store_true",
        help="exit with status 1 if any layout problem or invalid bitcast is found",
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from layout_algebra.hlo import HloModuleStream, HloParseError, audit_stream
    from layout_algebra.hlo.report import render_audit

    text = read_text(args.module)
    try:
        # One computation at a time: the module is never held whole (a million
        # instructions would take gigabytes), only each instruction's row.
        stream = HloModuleStream(text)
        if sys.stderr.isatty() and len(text) >= PROGRESS_FROM:
            from rich.console import Console
            from rich.progress import Progress

            with Progress(console=Console(stderr=True), transient=True) as bar:
                task = bar.add_task("auditing", total=len(text))
                report = audit_stream(stream, progress=lambda done, _: bar.update(task, completed=done))
        else:
            report = audit_stream(stream)
    except HloParseError as err:
        raise InvalidArgumentError(f"{args.module}: {err}") from None
    del text, stream
    errors = report.errors
    if errors:
        more = f" (and {len(errors) - 5:,} more)" if len(errors) > 5 else ""
        raise InvalidArgumentError(f"{args.module}: malformed module: " + "; ".join(errors[:5]) + more)
    if args.json:
        print(json.dumps(report.to_dict(top=args.top or None)))
    else:
        top = 25 if args.top is None else args.top
        import shutil

        width = shutil.get_terminal_size((160, 24)).columns
        text = render_audit(report, top=top, width=width, color=sys.stdout.isatty(), all_movements=args.all)
        print(text, end="")
    return 1 if args.strict and report.has_problems else 0
