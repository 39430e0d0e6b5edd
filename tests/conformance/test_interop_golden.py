"""Replay the XLA:TPU compiler's recorded answers (``tests/data/tpu_oracle_golden.jsonl``).

The live oracle suite (``tests/xla_tpu/``, opt-in, needs ``jax[tpu]``) asks the compiler;
``scripts/regenerate_golden.py`` records its answers here so that this default test keeps
comparing the package with the compiler, with the same rules (``tests/xla_tpu/compare.py``),
without JAX. A disagreement without an explanation fails.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "xla_tpu"))

from compare import Outcome, compare_bitcast, compare_bytes, compare_default, compare_parse

from layout_algebra.model import parse_shape

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "tpu_oracle_golden.jsonl"
ROWS = [json.loads(line) for line in GOLDEN.read_text(encoding="utf-8").splitlines() if line.strip()]


def _outcomes(row: dict) -> list[Outcome]:
    case, answer = row["case"], row["answer"]
    category = row["category"]
    if category == "bytes":
        return compare_bytes(parse_shape(case[0]), answer)
    if category == "default":
        return compare_default(case[0], tuple(case[1]), answer)
    if category in ("reshape", "transpose"):
        src, dst = parse_shape(case[0]), parse_shape(case[1])
        return compare_bitcast(src, dst, None if case[2] is None else tuple(case[2]), answer)
    if category == "parse":
        return compare_parse(case[0], answer)
    raise AssertionError(f"unknown category {category}")


def test_the_golden_file_covers_every_category() -> None:
    categories = {row["category"] for row in ROWS}
    assert categories == {"bytes", "default", "reshape", "transpose", "parse"}
    answered = [r for r in ROWS if "error" not in r["answer"] and "crash" not in r["answer"]]
    assert len(answered) >= 100


#: Disagreements that are package bugs, reported and not yet fixed: ``(category, case text) -> reason``.
#: Strict xfails: when the package is fixed, the XPASS fails and the entry must go.
KNOWN_PACKAGE_BUGS: dict[
    tuple[str, str], str
] = {}  # the 4-bit (64,128) rule, found here, is fixed in tpu.tile_rows


def _param(k: int, row: dict):
    reason = KNOWN_PACKAGE_BUGS.get((row["category"], str(row["case"])))
    marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
    return pytest.param(row, id=f"{row['category']}-{k}", marks=marks)


@pytest.mark.parametrize("row", [_param(k, r) for k, r in enumerate(ROWS)])
def test_package_agrees_with_the_recorded_compiler(row: dict) -> None:
    for outcome in _outcomes(row):
        assert outcome.agree or outcome.explanation, (
            f"{outcome.category}: {outcome.case}\n  package:  {outcome.package}\n  compiler: {outcome.compiler}"
        )
