"""The pass-validation report page and the model-zoo command line: many programs, in processes,
one summary, one self-contained HTML page whose facts are the report's."""

from __future__ import annotations

import html
import json
from html.parser import HTMLParser
from pathlib import Path

import pytest
from support.pass_dumps import MOVEMENT, RIGHT, WRONG, write_dump

from layout_algebra.cli import main as cli_main
from layout_algebra.hlo.pass_report import defined_names, named_instructions, pass_report_html
from layout_algebra.hlo.passes import ASSUMPTIONS, validate_passes


class _Structure(HTMLParser):
    """Tags opened and closed, sections by id, timeline cells, and anything fetched from outside."""

    VOID = frozenset({"meta", "br", "img", "hr", "link", "input"})

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.unbalanced: list[str] = []
        self.section_ids: list[str] = []
        self.cells: list[dict[str, str | None]] = []
        self.outside: list[str] = []
        self.in_timeline = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        for key in ("src", "href"):
            if a.get(key) and not str(a[key]).startswith("#"):
                self.outside.append(str(a[key]))
        if tag == "script":
            self.outside.append("<script>")
        if tag == "section" and a.get("id"):
            self.section_ids.append(str(a["id"]))
        if tag == "div" and a.get("class") == "timeline":
            self.in_timeline = len(self.stack) + 1
        if tag == "a" and self.in_timeline:
            self.cells.append(a)
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if not self.stack or self.stack[-1] != tag:
            self.unbalanced.append(tag)
            return
        self.stack.pop()
        if self.in_timeline and len(self.stack) < self.in_timeline:
            self.in_timeline = 0


def structure(page: str) -> _Structure:
    parsed = _Structure()
    parsed.feed(page)
    parsed.close()
    assert not parsed.unbalanced and parsed.stack == [], (parsed.unbalanced, parsed.stack)
    return parsed


def test_defined_and_named_instructions() -> None:
    assert defined_names(MOVEMENT) == {"p", "t"}
    assert named_instructions("operand %t of t.2 vs p", {"p", "t"}) == {"p", "t"}
    assert named_instructions("nothing here", {"p"}) == set()


def test_the_page_of_a_real_report_is_self_contained_and_says_what_the_report_says(tmp_path: Path) -> None:
    dump = write_dump(tmp_path / "d", [MOVEMENT, MOVEMENT, RIGHT, WRONG])
    report = validate_passes(dump)
    statuses = [r.verdict for r in report.results]
    assert statuses[0] == "unchanged" and statuses[-1] == "refuted"
    texts = {p.name: p.read_text() for p in dump.iterdir()}
    page = pass_report_html(report.to_dict(), texts=texts, assumption_texts=ASSUMPTIONS)
    found = structure(page)
    assert found.outside == []  # nothing fetched, nothing run
    assert len(found.cells) == len(report.results)  # one timeline cell per pair
    changed = [r for r in report.results if r.verdict != "unchanged"]
    assert len(found.section_ids) == len(changed)
    refuted = next(p for p in report.to_dict()["pairs"] if p["verdict"] == "refuted")
    shown = json.dumps(refuted["counterexample"], indent=1, default=str)
    assert shown in html.unescape(page)  # the refutation's input and both values, as the report has them
    assert "bitcast" in page


def test_assumptions_are_listed_with_their_text() -> None:
    name, text = next(iter(ASSUMPTIONS.items()))
    pair = {
        "module": "m",
        "pass": "algsimp",
        "number": 3,
        "mode": "physical",
        "status": "proved",
        "seconds": 0.5,
        "reason": "",
        "counterexample": None,
        "assumptions": [name],
        "from": "a",
        "to": "b",
    }
    page = pass_report_html({"pairs": [pair]}, texts={"a": "x\n", "b": "y\n"}, assumption_texts=ASSUMPTIONS)
    structure(page)
    assert html.escape(text, quote=True) in page


def test_text_from_a_dump_is_escaped() -> None:
    pair = {
        "module": "<m>",
        "pass": "<script>alert(1)</script>",
        "number": 1,
        "mode": "logical",
        "status": "unknown",
        "seconds": 0.0,
        "reason": "a <b>reason</b> & more",
        "counterexample": None,
        "assumptions": [],
        "from": "a",
        "to": "b",
    }
    page = pass_report_html({"pairs": [pair]}, texts={"a": "<x>\n", "b": "<y>\n"})
    found = structure(page)
    assert found.outside == []
    assert "<script>" not in page and "&lt;script&gt;" in page


def test_a_zoo_is_validated_program_by_program_with_one_summary(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    zoo = tmp_path / "zoo"
    write_dump(zoo / "right", [MOVEMENT, RIGHT], program="right")
    write_dump(zoo / "wrong", [MOVEMENT, WRONG], program="wrong")
    (zoo / "notes").mkdir()  # a folder without dumps is not a program
    assert cli_main(["validate-passes", str(zoo), "--json", "--jobs", "1"]) == 1
    serial = json.loads(capsys.readouterr().out)
    assert [p["program"] for p in serial["programs"]] == ["right", "wrong"]
    by_name = {row["program"]: row for row in serial["summary"]}
    assert by_name["right"]["proved"] == 1 and by_name["right"]["refuted"] == 0
    assert by_name["wrong"]["refuted"] == 1
    # the same answers from two processes
    html_path = tmp_path / "report.html"
    assert cli_main(["validate-passes", str(zoo), "--json", "--jobs", "2", "--html", str(html_path)]) == 1
    parallel = json.loads(capsys.readouterr().out)

    def answers(out: dict) -> list:
        return [(p["program"], q["pass"], q["verdict"]) for p in out["programs"] for q in p["pairs"]]

    assert answers(parallel) == answers(serial)
    page = html_path.read_text()
    found = structure(page)
    assert found.outside == [] and len(found.cells) == 2 and len(found.section_ids) == 2
    assert "right/" in page and "wrong/" in page


def test_a_folder_with_no_dumps_anywhere_is_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "empty" / "inner").mkdir(parents=True)
    assert cli_main(["validate-passes", str(tmp_path / "empty")]) == 2
    assert "holds no per-pass module files" in capsys.readouterr().err
    assert cli_main(["validate-passes", str(tmp_path / "missing")]) == 2


@pytest.mark.slow
def test_a_local_dask_cluster_of_two_workers_gives_the_serial_answers(tmp_path: Path) -> None:
    pytest.importorskip("distributed", reason="the [cluster] extra (Dask distributed) is not installed")
    from layout_algebra.hlo.pass_programs import programs_of, validate_programs

    zoo = tmp_path / "zoo"
    write_dump(zoo / "right", [MOVEMENT, RIGHT], program="right")
    write_dump(zoo / "wrong", [MOVEMENT, WRONG], program="wrong")
    write_dump(zoo / "same", [MOVEMENT, MOVEMENT, RIGHT], program="same")
    programs = programs_of([str(zoo)])
    serial = validate_programs(programs, jobs=1)
    on_cluster = validate_programs(programs, cluster="local:2")

    def answers(reports) -> list:  # a refutation's element may be another one (each is re-checked)
        return [
            (r.module, r.later.after, r.verdict, r.counterexample is None)
            for report in reports
            for r in report.results
        ]

    assert answers(on_cluster) == answers(serial)
    assert [r.verdict for report in serial for r in report.results] == [
        "proved",
        "unchanged",
        "proved",
        "refuted",
    ]


@pytest.mark.parametrize("address", ["local:0", "local:two"])
def test_a_malformed_local_cluster_is_bad_input(tmp_path: Path, address: str, capsys) -> None:
    pytest.importorskip("distributed", reason="the [cluster] extra (Dask distributed) is not installed")
    write_dump(tmp_path / "d", [MOVEMENT, RIGHT])
    assert cli_main(["validate-passes", str(tmp_path / "d"), "--cluster", address]) == 2
    assert "local:N" in capsys.readouterr().err
