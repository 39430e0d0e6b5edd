"""``layout-algebra proofs``."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from layout_algebra.model.errors import InvalidArgumentError

__all__ = ["register", "run"]


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the command's parser."""
    p = subparsers.add_parser(
        "proofs",
        help="run the catalog of theorems in proofs/ and report each claim's status",
        description="Run every theorem of the proof catalog (proofs/*.py) and print its status and "
        "time, then the total; --write FILE also writes the Markdown report (docs/proofs.md). Exit "
        "status 0 when every claim is proved, 1 when one is not, 2 for bad input (no theorem of "
        "that name, an empty catalog).",
    )
    p.add_argument("only", nargs="*", help="run only entries whose file name contains one of these")
    p.add_argument("--catalog", metavar="DIR", help="directory of theorem files (default: proofs/)")
    p.add_argument("--write", metavar="FILE", help="write the Markdown report here")
    p.add_argument("--jobs", "-j", type=int, metavar="N", help="prove in N processes (default: every CPU)")
    p.add_argument("--json", action="store_true", help="print the entries and the total as JSON")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from layout_algebra.teach.proofs import main as run_proofs

    argv = list(args.only)
    if args.catalog:
        argv += ["--catalog", args.catalog]
    if args.write:
        _check_writable(args.write)  # before the catalog runs, not after
        argv += ["--write", args.write]
    if args.jobs is not None:
        argv += ["--jobs", str(args.jobs)]
    if args.json:
        argv.append("--json")
    try:
        return run_proofs(argv)
    except OSError as err:
        if args.write and err.filename is not None and Path(err.filename) == Path(args.write):
            raise InvalidArgumentError(f"cannot write the report to {args.write!r}: {err.strerror}") from None
        raise


def _check_writable(path: str) -> None:
    """A clear error (exit 2) when the report cannot be written to ``path``."""
    target = Path(path)
    if target.is_dir():
        raise InvalidArgumentError(f"--write {path!r} is a directory; give a file name")
    folder = target.parent
    if not folder.is_dir():
        raise InvalidArgumentError(f"--write {path!r}: the directory {str(folder)!r} does not exist")
    if not os.access(folder, os.W_OK) or (target.exists() and not os.access(target, os.W_OK)):
        raise InvalidArgumentError(f"--write {path!r}: not writable")
