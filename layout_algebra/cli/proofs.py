"""``layout-algebra proofs``."""

from __future__ import annotations

import argparse

__all__ = ["register", "run"]


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the command's parser."""
    p = subparsers.add_parser(
        "proofs",
        help="run the catalog of theorems in proofs/ and report each claim's status",
        description="Run every theorem of the proof catalog (proofs/*.py) and print its status and "
        "time; --write FILE also writes the Markdown report (docs/proofs.md). Exit status 0 when "
        "every claim is proved.",
    )
    p.add_argument("only", nargs="*", help="run only entries whose file name contains one of these")
    p.add_argument("--catalog", metavar="DIR", help="directory of theorem files (default: proofs/)")
    p.add_argument("--write", metavar="FILE", help="write the Markdown report here")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from layout_algebra.proofs import main as run_proofs

    argv = list(args.only)
    if args.catalog:
        argv += ["--catalog", args.catalog]
    if args.write:
        argv += ["--write", args.write]
    return run_proofs(argv)
