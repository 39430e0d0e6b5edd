"""Helpers shared by the command modules (argument types, reading files)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

__all__ = ["parse_index", "read_text", "report_condition"]


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
        raise ValueError(f"cannot read {path}: {err.strerror or err}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ValueError(
            f"{path} is not UTF-8 text (byte {err.start} is {data[err.start : err.start + 1]!r})"
        ) from None


def report_condition(found: Any, as_json: bool) -> int:
    """Print a size condition (``layout_algebra.decide.conditions.Condition``) as text or JSON.

    Exit status 0 when the condition is exact (proved sufficient and necessary), 3 otherwise.
    """
    if as_json:
        from layout_algebra.cli._batch import print_json

        print_json(found.to_dict())
    else:
        when = "exactly when" if found.status == "exact" else "when (see the status)"
        if found.expr is not None:
            print(f"{found.claim} {when}: {found.expr}")
        elif getattr(found, "fitted", None) is not None:
            print(
                f"{found.claim}: for which sizes is not known (evidence only, not proved: "
                f"{found.fitted} matched the exact decision at {len(found.grid)} grid sizes)"
            )
        else:
            print(f"{found.claim}: for which sizes is not known (no condition of the grammar fits)")
        print(f"  status: {found.status} ({found.method})")
        for line in found.details:
            print(f"  {line}")
    return 0 if found.status == "exact" else 3
