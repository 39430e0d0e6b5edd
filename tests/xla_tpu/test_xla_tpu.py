"""Differential tests: the package against the real XLA:TPU compiler (compile-only, on a CPU machine).

Opt-in: every test here is marked ``oracle``, which the default run deselects
(``tests/conftest.py``, unless ``-m`` names it); run ``pytest -m oracle tests/xla_tpu`` with
``ORACLE_PYTHON`` pointing at a Python that has ``jax[tpu]``. Hypothesis draws the
cases (``questions.py``); ``harness.ask`` sends them to the compiler in child processes;
``compare.py`` holds the package's side and the explanations. Every disagreement is
written to ``docs/oracle_report.md``; a test fails only on a disagreement nobody has explained.
"""

from __future__ import annotations

import os

import pytest
from compare import compare_bitcast, compare_bytes, compare_default, compare_parse
from harness import Report, ask, oracle_python, oracle_unavailable
from questions import questions

pytestmark = pytest.mark.oracle

N = int(os.environ.get("ORACLE_EXAMPLES", "50"))
REPORT = Report()


@pytest.fixture(scope="module")
def asked() -> dict:
    """The questions, once the compiler is known to be there (a skip, inside the opt-in suite only)."""
    why_not = oracle_unavailable()
    if why_not:
        pytest.skip(f"the XLA:TPU oracle is not available: {why_not}")
    REPORT.notes.append(f"Compiler: libtpu via `{oracle_python()}`, topology v5e:2x2, compile-only.")
    yield questions(N)
    REPORT.write()


def _run(asked: dict, category: str, compare) -> None:
    cases = asked[category]
    answers = ask([query for _, query in cases])
    start = len(REPORT.findings)
    for (args, _), answer in zip(cases, answers, strict=True):
        for outcome in compare(*args, answer):
            REPORT.add(outcome)
    bad = [f for f in REPORT.findings[start:] if not f.explanation]
    assert not bad, "\n".join(
        f"{f.category}: {f.case}: package {f.package}; compiler {f.compiler}" for f in bad
    )


def test_allocation_bytes_and_compiled_formats(asked: dict) -> None:
    _run(asked, "bytes", compare_bytes)


def test_default_layouts(asked: dict) -> None:
    _run(asked, "default", compare_default)


def test_reshape_bitcasts(asked: dict) -> None:
    _run(asked, "reshape", compare_bitcast)


def test_transpose_bitcasts(asked: dict) -> None:
    _run(asked, "transpose", compare_bitcast)


def test_parse_and_print_match_xla(asked: dict) -> None:
    _run(asked, "parse", compare_parse)
