"""Constant literals of HLO text: the one grammar of ``constant({...})`` that the rewrite verifier and
the executor read (each gives the entries its own values).
"""

from __future__ import annotations

import math
import re
from typing import Any

from layout_algebra.hlo.validity import InvalidHlo

# --------------------------------------------------------------------------- the grammar
# One grammar for every reader of a literal (the verifier and the executor): braces, commas
# and entries; parentheses belong to tuple and complex literals, which neither reads.
_LITERAL_TOKEN = re.compile(r"\s*(?:([{}(),])|([^\s{}(),]+))")


def is_tuple_or_complex_literal(text: str) -> bool:
    """Whether a literal holds parentheses: a tuple or complex literal, read by no one here.

    >>> is_tuple_or_complex_literal("(1, 2)"), is_tuple_or_complex_literal("{1, 2}")
    (True, False)
    """
    return "(" in text or ")" in text


def literal_entries(text: str, dims: tuple[int, ...], where: str) -> list[str]:
    """The entries of a dense literal as text, row-major, nested as ``dims`` says (XLA's rule: a
    scalar is bare, an array of rank r nests r braces deep; an empty array may be ``{}``).

    User text is data: nothing is evaluated. Raises :class:`InvalidHlo` (naming ``where``) for a
    literal that does not fit ``dims``.

    >>> literal_entries("{ {1, 2}, {3, 4} }", (2, 2), "c")
    ['1', '2', '3', '4']
    >>> literal_entries("-inf", (), "c")
    ['-inf']
    >>> literal_entries("{1, 2, 3}", (2,), "c")
    Traceback (most recent call last):
    ...
    layout_algebra.hlo.validity.InvalidHlo: c: the literal '{1, 2, 3}' has 3 entries where the shape needs 2
    """
    tokens: list[str] = []
    pos = 0
    while pos < len(text):
        m = _LITERAL_TOKEN.match(text, pos)
        if m is None:
            if text[pos:].strip():
                raise InvalidHlo(f"{where}: cannot read the literal {text!r} at {text[pos : pos + 10]!r}")
            break
        tokens.append(m.group(1) or m.group(2))
        pos = m.end()
    if any(t in "()" for t in tokens):
        raise InvalidHlo(f"{where}: the literal {text!r} is a tuple or complex literal, not a dense array")
    at = 0

    def nested() -> Any:
        nonlocal at
        if at >= len(tokens):
            raise InvalidHlo(f"{where}: the literal {text!r} ends early")
        if tokens[at] != "{":
            if tokens[at] in "},":
                raise InvalidHlo(f"{where}: unexpected {tokens[at]!r} in the literal {text!r}")
            at += 1
            return tokens[at - 1]
        at += 1
        items: list[Any] = []
        while at < len(tokens) and tokens[at] != "}":
            items.append(nested())
            if at < len(tokens) and tokens[at] == ",":
                at += 1
            elif at < len(tokens) and tokens[at] != "}":
                raise InvalidHlo(
                    f"{where}: expected ',' or '}}' in the literal {text!r}, found {tokens[at]!r}"
                )
        if at >= len(tokens):
            raise InvalidHlo(f"{where}: '{{' is never closed in the literal {text!r}")
        at += 1
        return items

    if not tokens:
        raise InvalidHlo(f"{where}: the literal is empty")
    tree = nested()
    if at != len(tokens):
        raise InvalidHlo(f"{where}: unexpected {tokens[at]!r} in the literal {text!r}")
    flat: list[str] = []

    def walk(node: Any, rest: tuple[int, ...]) -> None:
        if not rest:
            if isinstance(node, list):
                raise InvalidHlo(
                    f"{where}: the literal {text!r} nests deeper than its {len(dims)} dimensions"
                )
            flat.append(node)
            return
        if not isinstance(node, list):
            raise InvalidHlo(f"{where}: the literal {text!r} has a scalar where the shape needs {rest[0]}")
        if len(node) != rest[0] and not (math.prod(rest) == 0 and not node):
            raise InvalidHlo(
                f"{where}: the literal {text!r} has {len(node)} entries where the shape needs {rest[0]}"
            )
        for item in node:
            walk(item, rest[1:])

    walk(tree, dims)
    return flat
