"""The proof catalog: every theorem in proofs/ is proved, and the report lists each one."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from layout_algebra.cli import main
from layout_algebra.teach.proofs import default_catalog, render_markdown, run_catalog

#: Every test here shares the catalog proved once (about 20 s): the whole file is slow.
pytestmark = pytest.mark.slow

CATALOG = Path(__file__).resolve().parents[2] / "proofs"


@pytest.fixture(scope="module")
def entries():
    return run_catalog(CATALOG)


def test_the_catalog_is_where_the_runner_looks() -> None:
    assert default_catalog() == CATALOG


def test_every_claim_is_proved(entries) -> None:
    assert len(entries) >= 13
    not_proved = [
        f"{e.path.name}: {[str(r) for r in e.results if not r.proved]}"
        for e in entries
        if e.status != "proved"
    ]
    assert not not_proved


def test_every_entry_states_its_claim(entries) -> None:
    for e in entries:
        assert e.claim and len(e.explanation) > 40, e.path
        assert e.results, e.path


def test_report_lists_every_claim(entries) -> None:
    text = render_markdown(entries)
    for e in entries:
        assert e.claim in text and f"proofs/{e.path.name}" in text


def test_the_checked_in_report_covers_the_catalog(entries) -> None:
    report = (CATALOG.parent / "docs" / "proofs.md").read_text(encoding="utf-8")
    for e in entries:
        assert e.claim in report, (
            "docs/proofs.md is stale: regenerate with `layout-algebra proofs --write docs/proofs.md`"
        )


def test_cli_proofs_runs_a_subset(capsys) -> None:
    assert main(["proofs", "minor_to_major"]) == 0
    assert "proved" in capsys.readouterr().out


def test_cli_prove(capsys) -> None:
    assert main(["prove", "injective", "bf16[N,M]{1,0:T(8,128)(2,1)}"]) == 0
    assert main(["prove", "in-bounds", "s16[1000,200]{0,1:T(1,128)(2,1)}", "--allocation", "xla"]) == 1
    out = capsys.readouterr().out
    assert "proved" in out and "refuted" in out and "counterexample" in out
    assert main(["prove", "equivalent", "f32[3,5]"]) == 2
    assert "compares two shapes" in capsys.readouterr().err


def test_cli_prove_method(capsys) -> None:
    shape = "bf16[1000,300]{1,0:T(8,128)(2,1)}"
    assert main(["prove", "injective", shape]) == 0
    assert "general stage lemma" in capsys.readouterr().out
    assert main(["prove", "injective", shape, "--method", "direct"]) == 0
    out = capsys.readouterr().out
    assert "proved" in out and "general stage lemma" not in out


def test_a_claim_that_a_rewrite_is_unsafe_is_proved_only_by_its_refutation(tmp_path) -> None:
    from layout_algebra.teach.proofs import run_catalog

    theorem = """
from layout_algebra import prove
CLAIM = "N % 8 == 0 does not hold for every N; N >= 0 does"
EXPECTED = ({first!r}, "proved")
def prove_claim():
    return [prove.holds("N % 8 == 0"), prove.holds("N >= 0")]
"""
    (tmp_path / "unsafe.py").write_text(theorem.format(first="refuted"))
    (entry,) = run_catalog(tmp_path)
    assert entry.status == "proved" and entry.results[0].status == "refuted"
    assert entry.results[0].counterexample  # re-checked by the prover before it said refuted
    (tmp_path / "unsafe.py").write_text(theorem.format(first="proved"))  # now claims it holds: false
    (entry,) = run_catalog(tmp_path)
    assert entry.status == "refuted"
    (tmp_path / "unsafe.py").write_text(theorem.format(first="maybe"))
    with pytest.raises(ValueError, match="EXPECTED"):
        run_catalog(tmp_path)


THEOREMS = {
    "holds_everywhere.py": """
'''N >= 0 for every size N: the solver answers unsat on its negation.'''
from layout_algebra import prove
CLAIM = "N >= 0 for every N"
def prove_claim():
    return [prove.holds("N >= 0")]
""",
    "fails_somewhere.py": """
'''N % 8 == 0 fails for some N: proved by the refutation of the claim that it always holds.'''
from layout_algebra import prove
CLAIM = "N % 8 == 0 fails for some N"
EXPECTED = ("refuted",)
def prove_claim():
    return [prove.holds("N % 8 == 0")]
""",
}


def write_catalog(folder: Path, theorems: dict[str, str]) -> Path:
    folder.mkdir(exist_ok=True)
    for name, text in theorems.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def test_cli_proofs_on_several_processes_prints_each_entry_in_order_and_a_total(capsys, tmp_path) -> None:
    catalog = write_catalog(tmp_path / "catalog", THEOREMS)
    assert main(["proofs", "--catalog", str(catalog), "--jobs", "2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("proved") and lines[0].endswith("N % 8 == 0 fails for some N")
    # the refutation the claim expects reads as what it proves, with its counterexample
    assert "proved by a counterexample to its opposite (as claimed)" in lines[1]
    assert "counterexample: N=" in lines[2]
    assert lines[3].startswith("proved") and lines[3].endswith("N >= 0 for every N")
    assert lines[-1].startswith("2 claims: 2 proved, 0 refuted, 0 unknown, 2 queries in ")
    assert lines[-1].endswith("(2 processes)")


def test_cli_proofs_json_has_every_entry_and_the_total(capsys, tmp_path) -> None:
    catalog = write_catalog(tmp_path / "catalog", THEOREMS)
    assert main(["proofs", "--catalog", str(catalog), "--json", "-j", "1"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [e["file"] for e in data["entries"]] == ["fails_somewhere.py", "holds_everywhere.py"]
    assert data["entries"][0]["results"][0]["status"] == "refuted"
    assert data["entries"][0]["results"][0]["expected"] == "refuted"
    assert data["entries"][0]["results"][0]["counterexample"]
    assert data["total"] | {"seconds": 0} == {
        "claims": 2,
        "proved": 2,
        "refuted": 0,
        "unknown": 0,
        "seconds": 0,
        "processes": 1,
    }


def test_cli_proofs_a_claim_not_proved_exits_1_and_says_so(capsys, tmp_path) -> None:
    wrong = THEOREMS["fails_somewhere.py"].replace('EXPECTED = ("refuted",)', 'EXPECTED = ("proved",)')
    catalog = write_catalog(tmp_path / "catalog", {"fails_somewhere.py": wrong})
    assert main(["proofs", "--catalog", str(catalog)]) == 1
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].startswith("refuted") and lines[1].strip().startswith("refuted: ")
    assert lines[-1].startswith("1 claim: 0 proved, 1 refuted, 0 unknown, 1 query in ")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["proofs", "no_such_name"],
            r"no theorem in .* has 'no_such_name' in its name; the theorems: .*row_major",
        ),
        (["proofs", "--jobs", "0"], r"--jobs 0 must be at least 1"),
    ],
)
def test_cli_proofs_bad_input_is_a_clear_error_with_exit_2(capsys, argv, message) -> None:
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert re.search(message, captured.err) and not captured.out


def test_cli_proofs_an_empty_catalog_is_a_clear_error_with_exit_2(capsys, tmp_path) -> None:
    assert main(["proofs", "--catalog", str(tmp_path)]) == 2
    assert "holds no theorem file" in capsys.readouterr().err


def test_a_theorem_file_that_fails_to_load_is_a_clear_error_on_several_processes(capsys, tmp_path) -> None:
    """The files are loaded once before the processes fork (their imports shared); one that
    fails there is loaded again by its worker, which reports the error as before."""
    broken = "raise ValueError('this theorem file is broken on purpose')\n"
    catalog = write_catalog(tmp_path / "catalog", {**THEOREMS, "broken.py": broken})
    assert main(["proofs", "--catalog", str(catalog), "--jobs", "2"]) == 2
    assert "broken on purpose" in capsys.readouterr().err


@pytest.mark.parametrize("terminal", [True, False])
def test_the_progress_display_goes_to_stderr_on_a_terminal_only(
    capsys, monkeypatch, tmp_path, terminal
) -> None:
    catalog = write_catalog(tmp_path / "catalog", THEOREMS)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: terminal)
    assert main(["proofs", "--catalog", str(catalog), "--jobs", "2"]) == 0
    captured = capsys.readouterr()
    assert ("proving" in captured.err) == terminal, captured.err
    assert "proving" not in captured.out and "\x1b" not in captured.out
    assert captured.out.splitlines()[-1].startswith("2 claims: 2 proved")
