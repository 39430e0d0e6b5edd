"""The ``layout-algebra`` command line.

Examples::

    layout-algebra explain 'bf16[8,1,1280,16384]{3,2,0,1:T(8,128)(2,1)}'
    layout-algebra explain 'f32[3,5]{1,0:T(2,2)}' --element 2,3
    layout-algebra size 'f32[3,5]{1,0:T(2,2)}' --json
    layout-algebra validate 'f32[2,3]{0,0}'
    layout-algebra draw 'f32[3,5]{1,0:T(2,2)}' -o figure1.png

Bad input prints one clear error (the input quoted, a caret under the fault) and exits
with status 2; no traceback. Bad input is what the package refuses on purpose: an error
deriving from :class:`~layout_algebra.LayoutAlgebraError`. Any other exception (a
``ValueError`` from NumPy or SymPy deep inside, an ``IndexError``) is a bug in this package,
not the user's input: the command prints the traceback, asks for a report and exits with
status 70 (``EX_SOFTWARE``).
"""

from __future__ import annotations

import argparse
import importlib
import sys
import traceback
from collections.abc import Sequence

from layout_algebra.model.errors import LayoutAlgebraError
from layout_algebra.model.version import VERSION as __version__

__all__ = ["BUG_EXIT_STATUS", "COMMANDS", "build_parser", "main"]

#: Exit status of a command that failed by a bug of the package (``EX_SOFTWARE`` of sysexits.h).
BUG_EXIT_STATUS = 70

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

#: Every subcommand, in the order ``--help`` lists them: the module under ``layout_algebra.cli``
#: that registers its parser (``register``) and runs it (``run``, set as the parser's default).
COMMANDS = (
    "explain",
    "size",
    "validate",
    "audit",
    "tpu_layout",
    "access",
    "prove",
    "verify",
    "bitcast",
    "proofs",
    "pack",
    "codegen",
    "draw",
    "validate_passes",
)


def build_parser() -> argparse.ArgumentParser:
    """The ``layout-algebra`` argument parser with every command of :data:`COMMANDS`."""
    parser = argparse.ArgumentParser(
        prog="layout-algebra",
        description=_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMANDS:
        importlib.import_module(f"layout_algebra.cli.{name}").register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status.

    With no command it lists the commands (the help) and exits 2, saying so on stderr.
    """
    parser = build_parser()
    if not (sys.argv[1:] if argv is None else list(argv)):
        parser.print_help()
        print(
            "\nlayout-algebra: error: name a COMMAND (listed above); COMMAND --help tells more",
            file=sys.stderr,
        )
        return 2
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except LayoutAlgebraError as err:  # bad input, refused on purpose
        print(f"layout-algebra {args.command}: error: {err}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # e.g. piped into `head`
        return 0
    except Exception as err:  # anything else is a bug, whatever its type: never blame the input
        report_bug(args.command, err)
        return BUG_EXIT_STATUS


def report_bug(command: str, err: BaseException) -> None:
    """The traceback of ``err`` and a plea for a report, on stderr."""
    traceback.print_exception(err, file=sys.stderr)
    print(
        f"layout-algebra {command}: internal error: {type(err).__name__}: {err}\n"
        f"this is a bug in layout_algebra {__version__}, please report it "
        "with the command line and the traceback above",
        file=sys.stderr,
    )


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
