"""Pass pairs in processes: the same answers as the serial loop, in pass order; a progress bar on
stderr only; a pair that runs out of memory (or kills its process) is one unknown pair, named.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from support.ground_truth import TEST_DATA

import layout_algebra.cli.validate_passes as validate_passes_cli
import layout_algebra.hlo.passes as passes
from layout_algebra.cli import main as cli_main
from layout_algebra.hlo.pass_jobs import Progress, run_in_order
from layout_algebra.hlo.passes import OUT_OF_MEMORY, validate_passes

DUMP = TEST_DATA / "pass_dumps" / "mlp_train_step"


def answers(report) -> list[tuple]:
    return [
        (r.module, r.later.number, r.later.after, r.mode, r.verdict, r.reason, r.assumptions)
        for r in report.results
    ]


def test_pairs_in_two_processes_give_the_serial_answers_in_pass_order() -> None:
    serial = validate_passes(DUMP, jobs=1)
    parallel = validate_passes(DUMP, jobs=2)
    assert answers(parallel) == answers(serial)
    numbers = [r.later.number for r in parallel.results]
    assert numbers == sorted(numbers) and len(numbers) > 40
    assert {r.verdict for r in serial.results} >= {"proved", "unchanged"}


def test_the_cli_gives_the_same_json_with_any_number_of_jobs(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["validate-passes", str(DUMP), "--json", "--jobs", "1"]) == 0
    one = json.loads(capsys.readouterr().out)
    assert cli_main(["validate-passes", str(DUMP), "--json", "--jobs", "2"]) == 0
    captured = capsys.readouterr()
    two = json.loads(captured.out)
    strip = (
        [{k: v for k, v in pair.items() if k != "seconds"} for pair in one["pairs"]],
        [{k: v for k, v in pair.items() if k != "seconds"} for pair in two["pairs"]],
    )
    assert strip[0] == strip[1]
    assert captured.err == ""  # --json: no progress bar unless asked


def test_the_progress_bar_writes_to_stderr_only(capsys: pytest.CaptureFixture[str]) -> None:
    report = validate_passes(TEST_DATA / "pass_dumps" / "dense_relu_reshape", progress=True)
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "validating dense_relu_reshape" in captured.err
    assert f"{len(report.results)}/{len(report.results)}" in captured.err


def test_no_bar_when_not_asked_and_stderr_is_not_a_terminal(capsys: pytest.CaptureFixture[str]) -> None:
    validate_passes(TEST_DATA / "pass_dumps" / "dense_relu_reshape", progress=None)
    assert capsys.readouterr().err == ""
    assert Progress.wanted(True) and not Progress.wanted(False)


def dies_on_three(n: int) -> int:
    if n == 3:
        os._exit(9)  # what the kernel's out-of-memory kill looks like from the pool
    return n * n


def test_a_job_that_kills_its_process_gets_its_own_answer_and_the_others_theirs() -> None:
    got = run_in_order(dies_on_three, [1, 2, 3, 4, 5], jobs=2, on_crash=lambda n, why: -n)
    assert got == [1, 4, -3, 16, 25]


def test_pairs_out_of_memory_are_unknown_and_summarized(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    def exhausted(*args, **kwargs):
        raise MemoryError

    monkeypatch.setattr(passes, "_validate_modules", exhausted)
    monkeypatch.setattr(validate_passes_cli, "_cap_memory", lambda gib: None)  # keep pytest's own limit
    status = cli_main(["validate-passes", str(DUMP), "--json", "--jobs", "1", "--max-memory", "64"])
    captured = capsys.readouterr()
    pairs = json.loads(captured.out)["pairs"]
    assert status == 0 and pairs and all(p["reason"] == OUT_OF_MEMORY for p in pairs)
    assert (
        f"{len(pairs)} pair(s) ran out of memory under the memory cap (--max-memory 64 GiB)" in captured.err
    )
    assert "raise --max-memory" in captured.err
