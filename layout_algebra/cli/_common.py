"""Helpers shared by the command modules (argument types, reading files, checking names).

Dimensions are read with commas, spaces or both, so ``4,7``, ``4 7`` and ``'4, 7'`` agree:

>>> parse_dims(["4,7"]), parse_dims(["4", "7"]), parse_dims(["4, 7"]), parse_dims([])
((4, 7), (4, 7), (4, 7), ())

An assumption must speak of sizes the shapes have; a misspelt one is named, with the names
there are and the nearest of them:

>>> check_assumed_names(["m % 128 == 0"], ["N", "M"])
Traceback (most recent call last):
...
layout_algebra.InvalidArgumentError: --assume 'm % 128 == 0' names the size m, which no shape has (the shapes' sizes: M, N); did you mean M?
>>> check_assumed_names(["N % 8 == 0 and M >= 1"], ["N", "M"])
"""

from __future__ import annotations

import argparse
import difflib
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from layout_algebra.model.errors import InvalidArgumentError

__all__ = [
    "check_assumed_names",
    "condition_in_grammar",
    "parse_dims",
    "parse_index",
    "read_text",
    "report_condition",
    "result_text",
    "separated",
    "shape_size_names",
    "value_text",
]


def parse_dims(values: Sequence[str]) -> tuple[int, ...]:
    """Dimension sizes from arguments separated by commas and/or spaces (``ValueError`` quoting a bad one)."""
    parts = [part for value in values for part in re.split(r"[,\s]+", value) if part]
    dims = []
    for part in parts:
        if not re.fullmatch(r"[0-9][0-9_]*", part):
            raise InvalidArgumentError(
                f"{part!r} is not a dimension size (a whole number >= 0; give sizes as 4,7 or 4 7)"
            )
        dims.append(int(part))
    return tuple(dims)


def shape_size_names(shapes: Iterable[str]) -> tuple[str, ...]:
    """The size symbols of shape texts, in order of first appearance (a text that does not parse
    raises its parse error: that is the input's fault to report, before any assumption's)."""
    from layout_algebra.model.shapes import ArrayShape
    from layout_algebra.model.syntax import parse_shape

    names: list[str] = []
    for text in shapes:
        shape = parse_shape(text) if isinstance(text, str) else text
        if isinstance(shape, ArrayShape):
            names += [str(s) for s in shape.size_symbols if str(s) not in names]
    return tuple(names)


def check_assumed_names(assume: Sequence[str] | None, names: Sequence[str]) -> None:
    """Raise ``ValueError`` (exit 2) when an assumption names a size not among ``names``."""
    if not assume:
        return  # nothing to read: SymPy stays unloaded
    from layout_algebra.prove.assumptions import parse_assumptions

    for text in assume or ():
        symbols = sorted({str(s) for c in parse_assumptions(text) for s in getattr(c, "free_symbols", ())})
        for name in symbols:
            if name in names:
                continue
            have = ", ".join(sorted(names)) if names else "none: every size is a number"
            near = [n for n in names if n.lower() == name.lower()] or difflib.get_close_matches(
                name, names, n=1, cutoff=0.5
            )
            hint = f"; did you mean {near[0]}?" if near else ""
            raise InvalidArgumentError(
                f"--assume {text!r} names the size {name}, which no shape has (the shapes' sizes: {have}){hint}"
            )


def value_text(value: Any) -> str:
    """A value of a result for people: numbers with thousands separators, sizes as ``N = 4``,
    indices as ``(2, 3)``; no Python reprs.

    >>> value_text({"N": 17328, "M": 4}), value_text((2, 1030)), value_text("S(1)"), value_text([])
    ('N = 17,328, M = 4', '(2, 1,030)', 'S(1)', '()')
    """
    if isinstance(value, bool) or value is None:
        return {True: "yes", False: "no", None: "none"}[value]
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, dict):
        return ", ".join(f"{k} = {value_text(v)}" for k, v in value.items())
    if isinstance(value, (tuple, list)):
        inner = ", ".join(value_text(v) for v in value)
        return f"({inner},)" if len(value) == 1 and isinstance(value, tuple) else f"({inner})"
    return separated(str(value))


def separated(text: str) -> str:
    """Counts in a sentence with thousands separators; numbers inside a formula keep their digits.

    >>> separated("decided exactly at 1764 sizes; 4096 bytes, 8192*ceiling(N/8) bytes, 2^53, 1024")
    'decided exactly at 1,764 sizes; 4,096 bytes, 8192*ceiling(N/8) bytes, 2^53, 1,024'
    """
    return re.sub(r"(?<![\w.*/+%^(-])\d{4,}(?![\w.*/+%^(-])", lambda m: f"{int(m.group()):,}", text)


def result_text(result: Any) -> str:
    """A proof result (``prove``, ``verify``) for people: status, claim, how; the counterexample's
    values one per line, with none of the fields that do not apply.

    >>> from layout_algebra.prove.result import ProofResult
    >>> r = ProofResult("refuted", "rewrite keeps the root", 0.5, "buffer property",
    ...                 counterexample={"sizes": {"N": 4}, "element": None, "output": (), "before": "4096 bytes"})
    >>> print(result_text(r))
    refuted: rewrite keeps the root [buffer property, 500.0 ms]
      counterexample:
        sizes   N = 4
        before  4,096 bytes
    """
    text = f"{result.status}: {result.claim} [{result.encoding}, {result.seconds * 1000:,.1f} ms]"
    shown = {k: v for k, v in (result.counterexample or {}).items() if v is not None and v != () and v != {}}
    if shown:
        width = max(len(k) for k in shown)
        text += "\n  counterexample:" + "".join(
            f"\n    {k:<{width}}  {value_text(v)}" for k, v in shown.items()
        )
    if result.reason:
        text += f"\n  reason: {result.reason}"
    return text


def condition_in_grammar(expr: Any) -> str | None:
    """A size condition as text ``--assume`` reads back (``N % 8 == 0 and M % 128 == 0``)."""
    if expr is None:
        return None
    from layout_algebra.prove.assumptions import condition_text

    return condition_text(expr)


def parse_index(text: str) -> tuple[int, ...]:
    """``"2,3"`` -> ``(2, 3)``; ``""`` is the scalar's index ``()``."""
    try:
        return tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an index like 2,3") from None


def read_text(path: str) -> str:
    try:
        data = Path(path).read_bytes()
    except OSError as err:
        raise InvalidArgumentError(f"cannot read {path}: {err.strerror or err}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise InvalidArgumentError(
            f"{path} is not UTF-8 text (byte {err.start} is {data[err.start : err.start + 1]!r})"
        ) from None


def report_condition(found: Any, as_json: bool) -> int:
    """Print a size condition (``layout_algebra.decide.conditions.Condition``) as text or JSON.

    Exit status 0 when the condition is exact (proved sufficient and necessary), 3 otherwise.
    """
    if as_json:
        from layout_algebra.cli._batch import print_json

        print_json({**found.to_dict(), "condition": condition_in_grammar(found.expr)})
    else:
        when = "exactly when" if found.status == "exact" else "when (see the status)"
        if found.expr is not None:
            print(f"{found.claim} {when}: {condition_in_grammar(found.expr)}")
        elif getattr(found, "fitted", None) is not None:
            print(
                f"{found.claim}: for which sizes is not known (evidence only, not proved: "
                f"{condition_in_grammar(found.fitted)} matched the exact decision at {len(found.grid)} grid sizes)"
            )
        else:
            print(f"{found.claim}: for which sizes is not known (no condition of the grammar fits)")
        print(f"  status: {found.status} ({found.method})")
        for line in found.details:
            print(f"  {separated(line)}")
    return 0 if found.status == "exact" else 3
