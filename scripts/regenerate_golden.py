"""Regenerate ``tests/data/tpu_oracle_golden.jsonl``: the XLA:TPU compiler's answers to the oracle's questions.

The default test suite replays these answers (``tests/conformance/test_interop_golden.py``) with the
same comparison rules as the live oracle suite, so it keeps checking the package against
the compiler without JAX. CI never runs this script; run it by hand after changing the
questions (``tests/xla_tpu/questions.py``) or to refresh the answers for a new libtpu:

    python3 -m venv /tmp/oracle-venv && /tmp/oracle-venv/bin/pip install 'jax[tpu]'
    ORACLE_PYTHON=/tmp/oracle-venv/bin/python .venv/bin/python scripts/regenerate_golden.py --examples 40

The compiler runs compile-only on this machine (no TPU needed), in child processes
(``tests/xla_tpu/tpu_worker.py``). Rows whose child crashed keep ``{"crash": ...}``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests" / "xla_tpu"), str(ROOT / "tests"), str(ROOT)]

from harness import ask, oracle_python, oracle_unavailable  # noqa: E402
from questions import questions  # noqa: E402

GOLDEN = ROOT / "tests" / "data" / "tpu_oracle_golden.jsonl"


def _plain(value: object) -> object:
    """Shapes as their text, tuples as lists: JSON the replay can read back."""
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, (int, str)):
        return value
    return str(value)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=40, help="cases per category (default 40)")
    parser.add_argument("--output", type=Path, default=GOLDEN)
    args = parser.parse_args(argv)
    why_not = oracle_unavailable()
    if why_not:
        print(f"cannot ask the compiler: {why_not}", file=sys.stderr)
        return 2
    rows = []
    for category, cases in questions(args.examples).items():
        answers = ask([query for _, query in cases])
        for (case, _), answer in zip(cases, answers, strict=True):
            answer = {k: v for k, v in answer.items() if k != "id"}
            rows.append({"category": category, "case": _plain(case), "answer": answer})
        print(f"{category}: {len(cases)} answers", file=sys.stderr)
    args.output.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in rows), encoding="utf-8")
    print(f"wrote {len(rows)} rows to {args.output} (compiler: {oracle_python()})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
