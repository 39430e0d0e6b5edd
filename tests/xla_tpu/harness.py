"""Run queries against the XLA:TPU compiler in child processes, and keep a report of disagreements.

The compiler runs in ``tpu_worker.py`` under ``ORACLE_PYTHON`` (a Python with
``jax[tpu]``; default: this one). libtpu may abort the whole process on an odd layout, so
queries go to a child in batches; when a child dies, its unanswered queries are re-run
one child each, and the one that kills its own child is answered ``{"crash": ...}``.
libtpu also allows only one process at a time (``/tmp/libtpu_lockfile``): a child that
finds it taken is retried after a pause, and two oracle runs should not overlap.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from layout_algebra.interop import jax_layout_fields
from layout_algebra.interop.jax_layouts import numpy_dtype_name
from layout_algebra.model import ArrayShape

WORKER = Path(__file__).with_name("tpu_worker.py")
REPORT = Path(__file__).resolve().parents[2] / "docs" / "oracle_report.md"
BATCH = 25
TIMEOUT_S = 600


def oracle_python() -> str:
    return os.environ.get("ORACLE_PYTHON", sys.executable)


def oracle_unavailable() -> str | None:
    """Why the compiler cannot be asked here, or None if it can."""
    probe = "import jax, libtpu; from jax.experimental import topologies"
    try:
        done = subprocess.run([oracle_python(), "-c", probe], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as err:
        return f"{oracle_python()} cannot run: {err}"
    if done.returncode:
        return f"{oracle_python()} has no jax[tpu]: {done.stderr.strip().splitlines()[-1:]}"
    return None


def _run_child(queries: list[dict], tries: int = 5) -> tuple[dict[int, dict], str]:
    """One child process; libtpu allows one process at a time, so a busy lockfile is waited for."""
    for attempt in range(tries):
        answers, why = _run_child_once(queries)
        if "libtpu_lockfile" not in why:
            return answers, why
        time.sleep(5 * (attempt + 1))
    return answers, why


def _run_child_once(queries: list[dict]) -> tuple[dict[int, dict], str]:
    env = dict(os.environ)
    done = subprocess.run(
        [oracle_python(), str(WORKER)],
        input=json.dumps(queries),
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        env=env,
    )
    answers = {}
    for line in done.stdout.splitlines():
        if line.startswith("{"):
            a = json.loads(line)
            answers[a["id"]] = a
    lines = done.stderr.strip().splitlines()
    fatal = [line for line in lines if "Check failed" in line or (line[:1] == "F" and line[1:5].isdigit())]
    why = (fatal[0] if fatal else " | ".join(lines[-2:]))[:400]
    return answers, f"exit code {done.returncode}: {why}" if done.returncode else ""


def ask(queries: Sequence[dict]) -> list[dict]:
    """Answers to ``queries`` (each gets an ``id``), in order."""
    queries = [dict(q, id=k) for k, q in enumerate(queries)]
    answers: dict[int, dict] = {}
    for start in range(0, len(queries), BATCH):
        batch = queries[start : start + BATCH]
        got, crash = _run_child(batch)
        answers.update(got)
        if crash:
            for q in batch:
                if q["id"] not in answers:
                    one, why = _run_child([q])
                    answers.update(one)
                    if q["id"] not in answers:
                        answers[q["id"]] = {"id": q["id"], "crash": why}
    return [answers[q["id"]] for q in queries]


def jax_fields(shape: ArrayShape) -> dict[str, Any]:
    f = jax_layout_fields(shape)
    return {
        "major_to_minor": list(f.major_to_minor),
        "tiling": None if f.tiling is None else [list(t) for t in f.tiling],
        "sub_byte": f.sub_byte_element_size_in_bits,
    }


def numpy_dtype(shape: ArrayShape) -> str:
    """The NumPy/JAX dtype name of the shape's element type."""
    return numpy_dtype_name(shape.element_type)


def collect(strategy: st.SearchStrategy, n: int) -> list:
    """``n`` examples drawn by Hypothesis (derandomized: the same cases every run)."""
    out: list = []

    @settings(
        max_examples=n,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def gather(x: Any) -> None:
        out.append(x)

    gather()
    return out[:n]


@dataclass
class Finding:
    category: str
    case: str
    package: str
    compiler: str
    explanation: str  # "" = unexplained


@dataclass
class Report:
    """Counts per category and every disagreement, written to ``docs/oracle_report.md``."""

    counts: dict[str, dict[str, int]] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def add(self, outcome: Any) -> None:
        """Record a ``compare.Outcome``."""
        if outcome.agree:
            self.count(outcome.category, outcome.note or "agree")
        else:
            self.disagree(
                outcome.category, outcome.case, outcome.package, outcome.compiler, outcome.explanation
            )

    def count(self, category: str, outcome: str) -> None:
        c = self.counts.setdefault(category, {})
        c[outcome] = c.get(outcome, 0) + 1

    def disagree(self, category: str, case: str, package: str, compiler: str, explanation: str) -> None:
        self.count(category, "disagree (explained)" if explanation else "DISAGREE (unexplained)")
        self.findings.append(Finding(category, case, package, compiler, explanation))

    def unexplained(self, category: str) -> list[Finding]:
        return [f for f in self.findings if f.category == category and not f.explanation]

    def write(self, path: Path = REPORT) -> None:
        lines = [
            "# Differential test against the XLA:TPU compiler",
            "",
            "Written by the opt-in oracle suite (`tests/xla_tpu/`); reproduce with",
            "",
            "```sh",
            "ORACLE_PYTHON=/path/to/venv-with-jax-tpu/bin/python .venv/bin/pytest -m oracle tests/xla_tpu",
            "```",
            "",
            "(`ORACLE_EXAMPLES=n` sets the cases per category.) Cases are drawn by Hypothesis,",
            "derandomized, so every run asks the same questions.",
            "",
            *self.notes,
            "",
            "| category | outcome | cases |",
            "|---|---|---|",
        ]
        for category in sorted(self.counts):
            for outcome, n in sorted(self.counts[category].items()):
                lines.append(f"| {category} | {outcome} | {n} |")
        lines += ["", "## Disagreements", ""]
        if not self.findings:
            lines.append("None.")
        for f in self.findings:
            lines += [
                f"### {f.category}: `{f.case}`",
                "",
                f"- package: {f.package}",
                f"- compiler: {f.compiler}",
                f"- explanation: {f.explanation or '**UNEXPLAINED**'}",
                "",
            ]
        path.write_text("\n".join(lines).rstrip() + "\n", encoding="utf-8")
