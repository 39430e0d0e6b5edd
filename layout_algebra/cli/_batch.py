"""Commands that take several shapes: every shape is checked, a bad one does not stop the rest.

Each input gives either its result or its error (printed on stderr, quoting the input); the
command exits 2 if any input was bad. With ``--json`` the command prints one JSON list, one
record per input in order, a bad input as ``{"input": TEXT, "error": MESSAGE}``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, cast

from layout_algebra.model.errors import LayoutAlgebraError

__all__ = ["Outcome", "each", "error_message", "error_record", "print_json", "report_error"]

T = TypeVar("T")


@dataclass(frozen=True)
class Outcome(Generic[T]):
    """One input and what became of it: its ``result``, or the ``error`` it raised."""

    text: str
    result: T | None = None
    error: LayoutAlgebraError | None = None

    @property
    def value(self) -> T:
        """The result of an input that had no error (raises that error otherwise)."""
        if self.error is not None:
            raise self.error
        return cast(T, self.result)


def each(texts: Sequence[str], compute: Callable[[str], T]) -> Iterator[Outcome[T]]:
    """``compute`` on every text, in order; an error of the package (bad input) is
    recorded and the rest go on; any other exception is a bug and stops the command."""
    for text in texts:
        try:
            yield Outcome(text, result=compute(text))
        except LayoutAlgebraError as err:
            yield Outcome(text, error=err)


def error_message(text: str, err: LayoutAlgebraError) -> str:
    """The error, with the input quoted unless the message already shows it."""
    message = str(err)
    return message if text in message else f"{quoted(text)}: {message}"


def quoted(text: str, limit: int = 120) -> str:
    """``text`` quoted for an error line; a long input is shortened in the middle (its length said)."""
    if len(text) <= limit:
        return repr(text)
    keep = limit // 2
    return f"{text[:keep]!r} ... {text[-keep // 2 :]!r} ({len(text):,} characters)"


def report_error(command: str, outcome: Outcome[Any]) -> None:
    assert outcome.error is not None
    print(f"layout-algebra {command}: error: {error_message(outcome.text, outcome.error)}", file=sys.stderr)


def error_record(outcome: Outcome[Any]) -> dict[str, Any]:
    assert outcome.error is not None
    return {"input": outcome.text, "error": error_message(outcome.text, outcome.error)}


def print_json(value: Any) -> None:
    """One JSON document on stdout (symbolic sizes, if any slipped through, as text)."""
    print(json.dumps(value, indent=2, default=str, ensure_ascii=False))
