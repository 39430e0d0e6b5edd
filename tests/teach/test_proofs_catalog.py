"""The proof catalog: every theorem in proofs/ is proved, and the report lists each one."""

from __future__ import annotations

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
    assert "takes 2 shape(s)" in capsys.readouterr().err


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
