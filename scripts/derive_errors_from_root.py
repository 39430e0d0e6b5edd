"""Make every error of the package derive from ``LayoutAlgebraError`` (replayable, idempotent).

Two rewrites of every module under ``layout_algebra/``:

1. a public exception class whose bases are all built-in exceptions gets the root first:
   ``class ParseError(ValueError):`` -> ``class ParseError(LayoutAlgebraError, ValueError):``
   (``class X(Exception):`` -> ``class X(LayoutAlgebraError):``); classes deriving from
   another error of the package inherit the root from it;
2. ``raise ValueError(`` -> ``raise InvalidArgumentError(`` (a ``ValueError`` too), so that
   the command line, which treats the root as bad input and anything else as a bug, still
   calls the package's own refusals bad input;
3. a doctest's expected ``ValueError: ...`` line -> ``layout_algebra.InvalidArgumentError: ...``
   (what the traceback of the rewritten raise shows).

The import of the names used is added to the module's imports; run ``ruff check --fix``
afterwards to sort it into place. Run from the repository root::

    python scripts/derive_errors_from_root.py && ruff check --fix layout_algebra && ruff format layout_algebra
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

PACKAGE = Path("layout_algebra")
ERRORS_MODULE = PACKAGE / "model" / "errors.py"
BUILTIN_ERRORS = {"Exception", "ValueError", "ArithmeticError", "TypeError", "LookupError", "KeyError"}
CLASS = re.compile(r"^(class (?!_)\w+)\(([\w, ]+)\):", re.MULTILINE)
RAISE = re.compile(r"\braise ValueError\(")
DOCTEST_ERROR = re.compile(r"^(\s*)ValueError: ", re.MULTILINE)


def rebase(match: re.Match[str]) -> str:
    bases = [b.strip() for b in match.group(2).split(",")]
    if not set(bases) <= BUILTIN_ERRORS:
        return match.group(0)
    kept = [b for b in bases if b != "Exception"]
    return f"{match.group(1)}({', '.join(['LayoutAlgebraError', *kept])}):"


def add_import(text: str, names: list[str]) -> str:
    """``text`` importing ``names`` from the errors module (placed after the first import)."""
    missing = [n for n in names if not re.search(rf"^\s*(from .* import .*\b{n}\b|{n},)", text, re.M)]
    if not missing:
        return text
    line = f"from layout_algebra.model.errors import {', '.join(sorted(missing))}\n"
    lines = text.splitlines(keepends=True)
    for i, current in enumerate(lines):
        if re.match(r"(from \S+ import|import )", current) and not current.startswith("from __future__"):
            lines.insert(i, line)
            return "".join(lines)
    raise SystemExit(f"no import statement to place the errors' import next to in a module: {text[:80]!r}")


def rewrite(text: str) -> str:
    new = CLASS.sub(rebase, text)
    new = RAISE.sub("raise InvalidArgumentError(", new)
    new = DOCTEST_ERROR.sub(r"\1layout_algebra.InvalidArgumentError: ", new)
    names = [n for n in ("LayoutAlgebraError", "InvalidArgumentError") if re.search(rf"\b{n}\b", new)]
    return add_import(new, names) if new != text else text


def main() -> int:
    changed = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == ERRORS_MODULE:
            continue
        text = path.read_text(encoding="utf-8")
        new = rewrite(text)
        if new != text:
            path.write_text(new, encoding="utf-8")
            changed.append(str(path))
    print("\n".join(changed) or "nothing to change")
    return 0


if __name__ == "__main__":
    sys.exit(main())
