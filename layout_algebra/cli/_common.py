"""Helpers shared by the command modules (argument types, reading files)."""

from __future__ import annotations

import argparse
from pathlib import Path

__all__ = ["parse_index", "read_text"]


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
