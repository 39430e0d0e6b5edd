"""The lemma cache: proved general lemmas are read back only for the same query text and Z3.

Every test runs with its own cache directory and an empty in-process lemma store, so
what it sees on disk is what it wrote.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import z3
from hypothesis import HealthCheck, given, settings
from support.strategies_maps import small_layout_shapes

from layout_algebra import prove
from layout_algebra.meaning.layout_map import layout_map
from layout_algebra.meaning.stages.arith import ARITHMETIC
from layout_algebra.meaning.stages.stages import AlignTail, Pad, Split
from layout_algebra.prove import core, lemma_cache
from layout_algebra.prove.general import GeneralStage, generalize, instance_of

CACHED = "read from the lemma cache"


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    """A private cache directory and empty in-process stores (restored afterwards).

    The package's first import is put an hour ahead, so that a source file someone saves
    while the tests run does not turn records off under tests about something else; the
    rule itself is tested on its own below, and end to end in fresh processes."""

    start = time.time() + 3600
    monkeypatch.setattr(lemma_cache, "_loaded_since", lambda: start)
    fingerprint = lemma_cache.code_fingerprint  # tests may replace it; the cache is this one's
    fingerprint.cache_clear()
    folder = tmp_path / "lemmas"
    monkeypatch.setenv(lemma_cache.DIRECTORY_VARIABLE, str(folder))
    monkeypatch.delenv(lemma_cache.SWITCH_VARIABLE, raising=False)
    saved, layouts = dict(core._GENERAL_LEMMAS), dict(lemma_cache._LAYOUTS)
    _forget_in_process()
    yield folder
    _forget_in_process()
    fingerprint.cache_clear()  # taken with the load time above: not for later tests
    core._GENERAL_LEMMAS.update(saved)
    lemma_cache._LAYOUTS.update(layouts)


@pytest.fixture
def exact_cache_dir(cache_dir, monkeypatch):
    """``cache_dir`` with the records by general stage off: every query is built and looked up by its text."""
    monkeypatch.setenv(lemma_cache.SWITCH_VARIABLE, "exact")
    return cache_dir


def _once_file_times_pass(moment_ns: int, scratch: Path) -> None:
    """Return once a file written now is stamped later than ``moment_ns``: the kernel stamps
    writes with a coarse clock, so two writes a moment apart may carry the same time. Waits on
    the file system's own stamps (no fixed sleep that a busy machine could make too short)."""
    while True:
        scratch.write_bytes(b"")
        if os.stat(scratch).st_ctime_ns > moment_ns:
            return
        time.sleep(0.001)


def _forget_in_process() -> None:
    """What a fresh process knows: nothing but the disk."""
    core._GENERAL_LEMMAS.clear()
    lemma_cache._LAYOUTS.clear()
    core.mixed_radix_pair_lemma.cache_clear()


def _leaves(result):
    """The solver-answered lemmas under a result (Linearize wraps the mixed-radix pair lemma)."""
    if not result.lemmas:
        return [result]
    return [leaf for lemma in result.lemmas for leaf in _leaves(lemma)]


def _split_lemma() -> GeneralStage:
    general, _values = generalize(Split(domain=(16, 256), start=0, tile=(8, 128)))
    return general


def test_a_proved_lemma_is_read_back_in_a_fresh_store(exact_cache_dir) -> None:
    first = core.general_stage_lemma(_split_lemma())
    assert first.proved and CACHED not in first.encoding
    assert len(list(exact_cache_dir.glob("*.smt2"))) == 1
    _forget_in_process()
    again = core.general_stage_lemma(_split_lemma())
    assert again.proved and CACHED in again.encoding


def test_a_whole_layout_is_proved_from_the_cache_with_the_same_verdicts(cache_dir) -> None:
    shapes = [
        "f32[1000,300]{1,0:T(8,128)}",
        "bf16[5,7,300]{0,2,1:T(8,128)(2,1)}",
        "s4[3,129]{1,0:T(8,128)(8,1)L(1024)E(4)}",
    ]
    cold = [(prove.injective(s).status, prove.in_bounds(s).status) for s in shapes]
    stored = sorted(p.name for p in cache_dir.glob("*.smt2"))
    assert stored and cold == [("proved", "proved")] * len(shapes)
    _forget_in_process()
    warm = [(prove.injective(s), prove.in_bounds(s)) for s in shapes]
    assert [(a.status, b.status) for a, b in warm] == cold
    assert all(CACHED in lemma.encoding for a, _b in warm for lemma in _leaves(a))
    assert sorted(p.name for p in cache_dir.glob("*.smt2")) == stored  # nothing new was proved


def test_an_entry_counts_only_for_exactly_its_text(exact_cache_dir) -> None:
    core.general_stage_lemma(_split_lemma())
    (entry,) = exact_cache_dir.glob("*.smt2")
    text = entry.read_text()
    entry.write_text(text.replace("(assert", "(assert (not true)) (assert", 1))  # another formula, same file
    _forget_in_process()
    again = core.general_stage_lemma(_split_lemma())
    assert again.proved and CACHED not in again.encoding  # proved by Z3 again
    assert entry.read_text() == text  # and the entry written back


@pytest.mark.parametrize("damage", [b"", b"\xff\xfe\x00garbage", b"; layout_algebra"])
def test_truncated_or_foreign_entries_are_ignored(exact_cache_dir, damage) -> None:
    core.general_stage_lemma(_split_lemma())
    (entry,) = exact_cache_dir.glob("*.smt2")
    entry.write_bytes(damage)
    _forget_in_process()
    again = core.general_stage_lemma(_split_lemma())
    assert again.proved and CACHED not in again.encoding


def test_an_unreadable_exact_cache_directory_is_ignored(tmp_path, monkeypatch, exact_cache_dir) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    monkeypatch.setenv(lemma_cache.DIRECTORY_VARIABLE, str(blocker / "lemmas"))
    assert core.general_stage_lemma(_split_lemma()).proved
    _forget_in_process()
    assert CACHED not in core.general_stage_lemma(_split_lemma()).encoding


def test_another_z3_version_misses(exact_cache_dir, monkeypatch) -> None:
    core.general_stage_lemma(_split_lemma())
    _forget_in_process()
    monkeypatch.setattr(z3, "get_full_version", lambda: "0.0.0.0-other")
    again = core.general_stage_lemma(_split_lemma())
    assert again.proved and CACHED not in again.encoding
    assert len(list(exact_cache_dir.glob("*.smt2"))) == 2  # one entry per Z3 version


def test_the_cache_can_be_turned_off(cache_dir, monkeypatch) -> None:
    monkeypatch.setenv(lemma_cache.SWITCH_VARIABLE, "0")
    assert core.general_stage_lemma(_split_lemma()).proved
    assert not cache_dir.exists()


class DropsTheRemainder(Split):
    """A split that forgets the position inside the tile: not injective."""

    def forward(self, x, ar=ARITHMETIC):
        out = list(super().forward(x, ar))
        for k in range(len(self.tile)):
            out[self.start + 2 * k + 1] = 0
        return tuple(out)


def test_a_cached_true_lemma_does_not_prove_a_broken_stage_of_the_same_structure(exact_cache_dir) -> None:
    general = _split_lemma()
    assert core.general_stage_lemma(general).proved
    broken = GeneralStage(
        DropsTheRemainder(domain=general.stage.domain, start=0, tile=general.stage.tile), general.minimum
    )
    _forget_in_process()
    result = core.general_stage_lemma(broken)
    assert result.status == "refuted"
    found = result.counterexample  # re-checked concretely by the prover; check it once more here
    sizes = found["sizes"]
    concrete = DropsTheRemainder(
        domain=(sizes["K0"] * sizes["t0"], sizes["K1"] * sizes["t1"]),
        start=0,
        tile=(sizes["t0"], sizes["t1"]),
    )
    assert concrete.forward(found["element"]) == concrete.forward(found["other_element"])


def test_refuted_and_unknown_answers_are_never_stored(cache_dir) -> None:
    general, _values = generalize(Pad(domain=(3,), padded=(4,)))
    (d,), (padded,) = general.stage.domain, general.stage.padded
    short = GeneralStage(Pad(domain=(d,), padded=(padded - 1,)), general.minimum)
    assert core.general_stage_lemma(short).status == "refuted"
    aligned, _values = generalize(AlignTail(domain=(5,), alignment=8))
    loose = GeneralStage(aligned.stage, tuple((s, 0) for s, _low in aligned.minimum))
    assert core.general_stage_lemma(loose).status != "proved"
    assert not list(cache_dir.glob("*.smt2"))


def test_the_default_location_follows_xdg_when_platformdirs_is_absent(monkeypatch, tmp_path) -> None:
    monkeypatch.delenv(lemma_cache.DIRECTORY_VARIABLE, raising=False)
    monkeypatch.delenv(lemma_cache.SWITCH_VARIABLE, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setitem(sys.modules, "platformdirs", None)  # import fails
    assert lemma_cache.cache_directory() == tmp_path / "layout_algebra" / "lemmas"


@pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the plain rule is Linux's (elsewhere platformdirs decides)"
)
@pytest.mark.parametrize(
    "xdg, home",
    [
        ("{tmp}/xdg", "{tmp}/home"),
        ("{tmp}/xdg/", "{tmp}/home"),
        (None, "{tmp}/home"),
        ("", "{tmp}/home/"),
        ("relative/xdg", "{tmp}/home"),
        ("  ", "{tmp}/home"),
    ],
    ids=["xdg", "xdg-slash", "no-xdg", "empty-xdg", "relative-xdg", "blank-xdg"],
)
def test_the_default_location_is_platformdirs_answer_without_importing_it(monkeypatch, tmp_path, xdg, home):
    platformdirs = pytest.importorskip("platformdirs")
    monkeypatch.delenv(lemma_cache.DIRECTORY_VARIABLE, raising=False)
    monkeypatch.delenv(lemma_cache.SWITCH_VARIABLE, raising=False)
    monkeypatch.setenv("HOME", home.format(tmp=tmp_path))
    if xdg is None:
        monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    else:
        monkeypatch.setenv("XDG_CACHE_HOME", xdg.format(tmp=tmp_path))
    expected = Path(platformdirs.user_cache_dir("layout_algebra")) / "lemmas"
    assert lemma_cache.cache_directory() == expected
    if lemma_cache._plain_user_cache() is not None:  # read without platformdirs
        monkeypatch.setitem(sys.modules, "platformdirs", None)  # import fails
        assert lemma_cache.cache_directory() == expected
    else:
        assert xdg not in (None, "") and not xdg.startswith("{tmp}")  # only the odd cases ask platformdirs


@pytest.mark.slow
def test_a_fresh_process_reads_what_another_process_proved(cache_dir) -> None:
    """The records and query texts are the same in every process (no per-process names or counters)."""
    program = (
        "import json; from layout_algebra import prove; "
        "r = prove.injective('bf16[1000,300]{0,1:T(8,128)(2,1)}'); "
        "print(json.dumps([r.status, [l.encoding for l in r.lemmas]]))"
    )
    outputs = []
    for switch in ("", "", "exact"):
        env = {
            **os.environ,
            lemma_cache.DIRECTORY_VARIABLE: str(cache_dir),
            lemma_cache.SWITCH_VARIABLE: switch,
        }
        run = subprocess.run(
            [sys.executable, "-c", program], env=env, capture_output=True, text=True, timeout=120
        )
        assert run.returncode == 0, run.stderr
        outputs.append(json.loads(run.stdout))
    (first, cold), (second, by_record), (third, by_text) = outputs
    assert first == second == third == "proved" and len(cold) == len(by_record) == len(by_text) >= 5
    assert not any(CACHED in e for e in cold)
    assert all(RECORDED in e for e in by_record)
    # without the records, each query is built again and found by its exact text
    assert all(CACHED in e and RECORDED not in e for e in by_text if "mixed-radix" not in e)


# ------------------------------------------------------ records by general stage (no query built)
RECORDED = "same general stage, same code and library versions"


def test_a_lemma_is_read_from_its_record_without_building_its_query(cache_dir, monkeypatch) -> None:
    first = core.general_stage_lemma(_split_lemma())
    assert first.proved and CACHED not in first.encoding
    assert len(list(cache_dir.glob("*.lemma.json"))) == 1
    _forget_in_process()
    monkeypatch.setattr(core, "_stage_lemma", lambda *a, **k: pytest.fail("the query was built"))
    again = core.general_stage_lemma(_split_lemma())
    assert again.proved and RECORDED in again.encoding
    assert again.claim == first.claim


def test_a_record_is_for_one_version_of_the_code(cache_dir, monkeypatch) -> None:
    core.general_stage_lemma(_split_lemma())
    _forget_in_process()
    monkeypatch.setattr(lemma_cache, "code_fingerprint", lambda: "another version of the code")
    again = core.general_stage_lemma(_split_lemma())
    assert again.proved and RECORDED not in again.encoding  # the query was built (its text found)
    assert CACHED in again.encoding
    assert len(list(cache_dir.glob("*.lemma.json"))) == 2


@pytest.mark.parametrize(
    "damage", ["", "[]", "{}", '{"identity": "x", "query": "q", "claim": "c", "encoding": "e"}', "\xff"]
)
def test_damaged_records_are_ignored(cache_dir, damage) -> None:
    core.general_stage_lemma(_split_lemma())
    (record,) = cache_dir.glob("*.lemma.json")
    record.write_text(damage)
    _forget_in_process()
    again = core.general_stage_lemma(_split_lemma())
    assert again.proved and RECORDED not in again.encoding


def test_only_the_package_s_own_stage_kinds_have_records(cache_dir) -> None:
    general = _split_lemma()
    broken = GeneralStage(
        DropsTheRemainder(domain=general.stage.domain, start=0, tile=general.stage.tile), general.minimum
    )
    assert lemma_cache.stage_identity(general) is not None
    assert lemma_cache.stage_identity(broken) is None
    assert core.general_stage_lemma(general).proved
    _forget_in_process()
    assert core.general_stage_lemma(broken).status == "refuted"


def test_records_differ_for_different_structures_and_minima() -> None:
    identities = {
        lemma_cache.stage_identity(generalize(stage)[0])
        for stage in [
            Split(domain=(16, 256), start=0, tile=(8, 128)),
            Split(domain=(16, 256), start=1, tile=(128,)),
            Split(domain=(3, 16, 256), start=1, tile=(8, 128)),
            Pad(domain=(3,), padded=(4,)),
            Pad(domain=(3, 5), padded=(4, 8)),
            AlignTail(domain=(5,), alignment=8),
        ]
    }
    assert len(identities) == 6 and None not in identities
    aligned, _ = generalize(AlignTail(domain=(5,), alignment=8))
    loose = GeneralStage(aligned.stage, tuple((s, 0) for s, _low in aligned.minimum))
    assert lemma_cache.stage_identity(loose) != lemma_cache.stage_identity(aligned)


@pytest.mark.slow
def test_every_record_holds_exactly_the_query_the_code_builds(cache_dir) -> None:
    shapes = [
        "f32[1000,300]{1,0:T(8,128)}",
        "bf16[5,7,300]{0,2,1:T(8,128)(2,1)}",
        "s4[3,129]{1,0:T(8,128)(8,1)L(1024)E(4)}",
        "pred[9,1025]{0,1:T(32,128)(32,1)E(1)}",
        "s8[2,3,4,5]{3,1,2,0:T(8,128)(4,1)}",
    ]
    for shape in shapes:
        assert prove.injective(shape).proved
    generals = {
        found[0]
        for shape in shapes
        for stage in core.position_stages(prove.layout_index_map(shape).shape)
        if (found := generalize(stage)) is not None
    }
    records = list(cache_dir.glob("*.lemma.json"))
    assert len(records) >= 5

    def rebuild(general):
        core.mixed_radix_pair_lemma.cache_clear()  # Linearize and Combine use it: build it again too
        return core._general_stage_query(general, 30_000)

    pairs = [(lemma_cache.stage_identity(g), lambda g=g: rebuild(g)) for g in generals]
    assert lemma_cache.verify_records(pairs) == []
    # a record whose query text is not what the code builds is reported
    identities = {identity for identity, _prove in pairs}
    record = next(
        r for r in records if json.loads(r.read_text())["identity"].split("\ncode ")[0] in identities
    )
    data = json.loads(record.read_text())
    data["query"] = data["query"].replace("(assert", "(assert true) (assert", 1)
    record.write_text(json.dumps(data))
    assert len(lemma_cache.verify_records(pairs)) == 1


def test_no_records_when_the_source_cannot_be_fingerprinted(cache_dir, monkeypatch) -> None:
    monkeypatch.setattr(lemma_cache, "code_fingerprint", lambda: None)  # e.g. a zipped installation
    assert core.general_stage_lemma(_split_lemma()).proved
    assert not list(cache_dir.glob("*.lemma.json"))
    assert list(cache_dir.glob("*.smt2"))  # the exact-text entries still work


def test_the_suite_never_touches_the_users_lemma_cache() -> None:
    """tests/conftest.py gives the whole run a private cache directory (hermetic test runs)."""
    import tempfile
    from pathlib import Path

    from layout_algebra.prove import lemma_cache

    directory = lemma_cache.cache_directory()
    assert directory is not None
    assert Path(tempfile.gettempdir()) in directory.resolve().parents
    assert "layout-algebra-test-lemmas-" in str(directory)


# ------------------------------------------------ the code fingerprint, remembered by file status
@pytest.fixture
def fresh_fingerprint():
    lemma_cache.code_fingerprint.cache_clear()
    yield
    lemma_cache.code_fingerprint.cache_clear()


def test_the_fingerprint_is_the_digest_of_the_code_whether_remembered_or_not(
    cache_dir, fresh_fingerprint
) -> None:
    import hashlib
    from pathlib import Path

    import sympy

    # Written out again: the versions, then every query-building file's name and bytes.
    package = Path(lemma_cache.__file__).resolve().parents[1]
    digest = hashlib.sha256(
        f"python {sys.version} sympy {sympy.__version__} z3 {z3.get_full_version()}".encode()
    )
    for part in ("prove", "stages", "model"):
        for path in sorted((package / part).glob("*.py")):
            digest.update(f"\n{part}/{path.name}\n".encode())
            digest.update(path.read_bytes())
    first = lemma_cache.code_fingerprint()  # hashed, and remembered in the folder
    assert first == digest.hexdigest()
    assert (cache_dir / "code-fingerprint.json").exists()
    lemma_cache.code_fingerprint.cache_clear()
    assert lemma_cache.code_fingerprint() == first  # read back


def test_a_remembered_fingerprint_is_used_only_for_the_same_file_status(
    cache_dir, fresh_fingerprint, monkeypatch
) -> None:
    lemma_cache.code_fingerprint()
    memo = cache_dir / "code-fingerprint.json"
    status = json.loads(memo.read_text())["status"]
    memo.write_text(json.dumps({"status": status, "sha256": "planted"}))
    lemma_cache.code_fingerprint.cache_clear()
    assert lemma_cache.code_fingerprint() == "planted"  # the memo is what is read
    lemma_cache.code_fingerprint.cache_clear()
    monkeypatch.setattr(lemma_cache, "_code_status", lambda *_: "some file was written since")
    assert lemma_cache.code_fingerprint() == lemma_cache._code_digest() != "planted"
    for damage in ("", "[]", '{"status": 1}', "\xff"):
        memo.write_text(damage)
        lemma_cache.code_fingerprint.cache_clear()
        assert lemma_cache.code_fingerprint() == lemma_cache._code_digest()


def test_rewriting_a_file_changes_its_status_even_with_the_old_size_and_time(tmp_path, monkeypatch) -> None:
    """What the memo relies on: writing a file's bytes (same length, modification time put
    back with os.utime) still changes the status (the status change time moves)."""
    (tmp_path / "__init__.py").write_text("")
    code = tmp_path / "stage.py"
    code.write_text("x = 1\n")
    monkeypatch.setattr(
        lemma_cache, "_query_code_files", lambda: [("prove", tmp_path / "__init__.py"), ("prove", code)]
    )
    before = lemma_cache._code_status()
    assert lemma_cache._code_status() == before  # nothing written: the same status
    st = os.stat(code)
    _once_file_times_pass(st.st_ctime_ns, tmp_path / "clock")
    code.write_text("x = 2\n")
    os.utime(code, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert os.stat(code).st_size == st.st_size and os.stat(code).st_mtime_ns == st.st_mtime_ns
    assert lemma_cache._code_status() != before


# ------------------------------------------------------ one record per layout structure
LAYOUT_READ = "one record for all of the layout's general stages"
TWO_LAYOUTS = ("f32[1000,300]{1,0:T(8,128)}", "bf16[5,7,300]{0,2,1:T(8,128)(2,1)}")


def _layout_records(folder):
    return sorted(folder.glob("*.layout.json"))


def _record_of(shape, folder):
    """Prove ``shape`` alone into ``folder`` and return the layout record it wrote."""
    before = set(_layout_records(folder))
    assert prove.injective(shape).proved
    (new,) = set(_layout_records(folder)) - before
    return new


@pytest.mark.slow
def test_a_layout_is_read_from_one_record_without_general_stages_or_z3(cache_dir, monkeypatch) -> None:
    shapes = [*TWO_LAYOUTS, "s4[3,129]{1,0:T(8,128)(8,1)L(1024)E(4)}"]
    cold = [prove.injective(s) for s in shapes]
    assert len(_layout_records(cache_dir)) == len(shapes)
    _forget_in_process()
    for name in ("general_stage", "general_stage_lemma", "_stage_lemma"):
        monkeypatch.setattr(core, name, lambda *a, _name=name, **k: pytest.fail(f"{_name} was called"))
    monkeypatch.setattr(z3, "Solver", lambda *a, **k: pytest.fail("a solver was made"))
    for shape, first in zip(shapes, cold, strict=True):
        warm, bounds = prove.injective(shape), prove.in_bounds(shape)
        assert warm.proved and bounds.proved
        assert [lemma.claim for lemma in warm.lemmas] == [lemma.claim for lemma in first.lemmas]
        assert all(LAYOUT_READ in lemma.encoding and RECORDED in lemma.encoding for lemma in warm.lemmas)
        assert all(CACHED in leaf.encoding for leaf in _leaves(warm))


def test_a_layout_record_names_each_general_stage_it_stands_for(cache_dir) -> None:
    record = json.loads(_record_of(TWO_LAYOUTS[1], cache_dir).read_text())
    stages = position_stages_of(TWO_LAYOUTS[1])
    distinct = list(dict.fromkeys(instance_of(s) for s in stages))
    assert [lemma["stage"] for lemma in record["lemmas"]] == [p.identity for p in distinct]
    assert all(f"stage {p.identity}" in record["identity"] for p in distinct)
    assert record["identity"].endswith(f"code {lemma_cache.code_fingerprint()}")


def position_stages_of(shape):
    return core.position_stages(prove.layout_index_map(shape).shape)


def _proved_without_the_layout_record(shape) -> None:
    _forget_in_process()
    again = prove.injective(shape)
    assert again.proved and not any(LAYOUT_READ in lemma.encoding for lemma in again.lemmas)
    assert all(CACHED in leaf.encoding for leaf in _leaves(again))  # from the stages' records


@pytest.mark.slow
def test_a_record_copied_onto_another_layout_s_record_is_not_accepted(cache_dir) -> None:
    first, second = (_record_of(s, cache_dir) for s in TWO_LAYOUTS)
    second.write_bytes(first.read_bytes())  # the second layout's file now holds the first's record
    _proved_without_the_layout_record(TWO_LAYOUTS[1])
    assert (
        json.loads(second.read_text())["identity"] != json.loads(first.read_text())["identity"]
    )  # rewritten


@pytest.mark.slow
def test_a_record_edited_to_claim_another_structure_is_not_accepted(cache_dir) -> None:
    first, second = (_record_of(s, cache_dir) for s in TWO_LAYOUTS)
    forged = json.loads(first.read_text())
    forged["identity"] = json.loads(second.read_text())["identity"]  # claims the second layout's stages
    second.write_text(json.dumps(forged))
    _proved_without_the_layout_record(TWO_LAYOUTS[1])
    # and a record whose identity names other stages is not read for its own layout either
    edited = json.loads(first.read_text())
    edited["identity"] = edited["identity"].replace("Split of rank 2", "Split of rank 3", 1)
    assert edited["identity"] != json.loads(first.read_text())["identity"]
    first.write_text(json.dumps(edited))
    _proved_without_the_layout_record(TWO_LAYOUTS[0])


def test_a_layout_record_is_for_one_version_of_the_code(cache_dir, monkeypatch) -> None:
    _record_of(TWO_LAYOUTS[0], cache_dir)
    _forget_in_process()
    monkeypatch.setattr(lemma_cache, "code_fingerprint", lambda: "another version of the code")
    again = prove.injective(TWO_LAYOUTS[0])
    assert again.proved and not any(RECORDED in lemma.encoding for lemma in again.lemmas)
    assert len(_layout_records(cache_dir)) == 2  # one record per version of the code


@pytest.mark.slow
@pytest.mark.parametrize(
    "damage",
    [
        "truncated",
        "",
        "[]",
        "{}",
        '{"identity": 1, "lemmas": []}',
        "same identity, no lemmas",
        "same identity, one lemma missing",
        "same identity, lemmas swapped",
        "same identity, a claim that is no text",
    ],
)
def test_a_damaged_layout_record_is_ignored_and_written_again(cache_dir, damage) -> None:
    record = _record_of(TWO_LAYOUTS[1], cache_dir)
    good = record.read_text()
    data = json.loads(good)
    assert len(data["lemmas"]) >= 3
    if damage == "truncated":
        text = good[: len(good) // 2]
    elif damage.startswith("same identity"):
        lemmas = data["lemmas"]
        lemmas = {
            "same identity, no lemmas": [],
            "same identity, one lemma missing": lemmas[:-1],
            "same identity, lemmas swapped": [lemmas[1], lemmas[0], *lemmas[2:]],
            "same identity, a claim that is no text": [{**lemmas[0], "claim": 7}, *lemmas[1:]],
        }[damage]
        text = json.dumps({**data, "lemmas": lemmas})
    else:
        text = damage
    record.write_text(text)
    _proved_without_the_layout_record(TWO_LAYOUTS[1])
    assert json.loads(record.read_text()) == data  # the record was written again


def test_unproved_lemmas_make_no_layout_record(cache_dir) -> None:
    patterns = [instance_of(s) for s in position_stages_of(TWO_LAYOUTS[0])]
    lemmas = core._by_general_lemmas("claim", prove.layout_index_map(TWO_LAYOUTS[0]), None, 30_000).lemmas
    _forget_in_process()
    assert all(lemma.proved for lemma in lemmas)
    for path in _layout_records(cache_dir):
        path.unlink()  # the real proof's record
    unknown = dataclasses.replace(lemmas[0], status="unknown")
    lemma_cache.record_layout(patterns, (unknown, *lemmas[1:]))
    lemma_cache.record_layout(patterns, lemmas[1:])  # one lemma short
    assert not _layout_records(cache_dir) and lemma_cache.recorded_layout(patterns) is None
    lemma_cache.record_layout(patterns, lemmas)  # all proved: kept
    assert len(_layout_records(cache_dir)) == 1 and lemma_cache.recorded_layout(patterns) is not None


def test_the_exact_switch_reads_and_writes_no_layout_record(exact_cache_dir) -> None:
    assert prove.injective(TWO_LAYOUTS[0]).proved
    assert not _layout_records(exact_cache_dir)


@pytest.mark.slow
@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(shape=small_layout_shapes(max_slots=512))
def test_layouts_read_from_their_record_agree_with_the_direct_query_and_enumeration(cache_dir, shape) -> None:
    m = prove.layout_index_map(shape)
    prove.injective(m)  # proved (or read) once: the record is there now
    _forget_in_process()
    injective, bounds = prove.injective(m), prove.in_bounds(m)
    assert all(LAYOUT_READ in lemma.encoding for lemma in injective.lemmas + bounds.lemmas)
    assert (injective.status, bounds.status, prove.injective(m, method="direct").status) == ("proved",) * 3
    positions = [m.evaluate(p) for p in itertools.product(*(range(d) for d in m.dimensions))]
    assert len(set(positions)) == len(positions)
    assert all(0 <= p < layout_map(shape).size_in_elements for p in positions)


@pytest.mark.slow
@pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the default place is read without platformdirs on Linux"
)
def test_a_fresh_process_proves_a_known_structure_without_sympy_general_stages_z3_or_platformdirs(tmp_path):
    """End to end, in new processes, the lemma cache at its default place: the second process
    (another layout of the same structure) builds no SymPy general stage, makes no Z3
    context and imports no platformdirs; the first, with the cache empty, proves without
    importing ``sympy.tensor``."""
    program = (
        "import json, sys, z3\n"
        "from layout_algebra import prove\n"
        "from layout_algebra.prove import general\n"
        "r = prove.injective(sys.argv[1])\n"
        "print(json.dumps([r.status, general.general_stage.cache_info().currsize,"
        " z3.z3._main_ctx is not None, 'platformdirs' in sys.modules, 'sympy.tensor.tensor' in sys.modules]))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAYOUT_ALGEBRA_")}
    env["XDG_CACHE_HOME"] = str(tmp_path)
    outputs = []
    for shape in ("bf16[16,256]{1,0:T(8,128)(2,1)}", "bf16[24,384]{1,0:T(8,128)(2,1)}"):
        run = subprocess.run(
            [sys.executable, "-c", program, shape], env=env, capture_output=True, text=True, timeout=120
        )
        assert run.returncode == 0, run.stderr
        outputs.append(json.loads(run.stdout))
    (first, built, solver, _, tensor), (second, built_again, solver_again, imported, _) = outputs
    assert first == second == "proved" and built > 0 and solver  # the first proved its lemmas
    # ... without sympy.tensor, which SymPy's first evaluated sum imports (20-45 ms): the
    # Split stages' tile counts K*t/t are read off the product instead of divided
    assert not tensor
    assert (built_again, solver_again, imported) == (0, False, False)
    assert list((tmp_path / "layout_algebra" / "lemmas").glob("*.layout.json"))


# --------------------------------------------- the fingerprint names the code that runs
@pytest.mark.slow
def test_the_load_time_is_the_packages_first_import_and_a_reload_keeps_it() -> None:

    before = time.time()
    run = subprocess.run(
        [
            sys.executable,
            "-c",
            "import importlib, time, layout_algebra, layout_algebra.model._loaded as l; first = l.LOADED_AT; "
            "time.sleep(0.05); importlib.reload(l); importlib.reload(layout_algebra); "
            "from layout_algebra.prove import lemma_cache; "
            "print(first, l.LOADED_AT, lemma_cache._loaded_since())",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    after = time.time()
    assert run.returncode == 0, run.stderr
    first, reloaded, used = (float(v) for v in run.stdout.split())
    assert before <= first <= after, (before, first, after)
    assert first == reloaded == used  # modules read before a reload may still run


def test_the_package_records_its_load_time_before_it_imports_any_other_module_of_its_own() -> None:
    # every module of the package is read at or after LOADED_AT: the first statement that
    # imports anything of the package in its __init__ is the import of _loaded
    import ast

    import layout_algebra

    tree = ast.parse(Path(layout_algebra.__file__).read_text())
    own = [
        node
        for node in tree.body
        if isinstance(node, ast.Import | ast.ImportFrom)
        and any(
            name.startswith("layout_algebra")
            for name in (
                [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            )
        )
    ]
    assert isinstance(own[0], ast.Import) and own[0].names[0].name == "layout_algebra.model._loaded"


def _query_files_in(folder: Path, monkeypatch) -> Path:
    """Two stand-in query-code files in ``folder``; returns the second."""
    (folder / "__init__.py").write_text("")
    code = folder / "stage.py"
    code.write_text("x = 1\n")
    files = [("prove", str(folder / "__init__.py")), ("prove", str(code))]
    monkeypatch.setattr(lemma_cache, "_query_code_files", lambda: files)
    return code


def test_no_fingerprint_when_a_source_file_was_written_after_the_package_was_loaded(
    cache_dir, fresh_fingerprint, tmp_path, monkeypatch
) -> None:

    _query_files_in(tmp_path, monkeypatch)
    monkeypatch.setattr(lemma_cache, "_loaded_since", lambda: time.time() + 10)  # files older than the load
    assert lemma_cache.code_fingerprint() is not None
    lemma_cache.code_fingerprint.cache_clear()
    monkeypatch.setattr(lemma_cache, "_loaded_since", lambda: time.time() - 10)  # written since the load
    assert lemma_cache.code_fingerprint() is None


def test_a_module_loaded_after_the_fingerprint_must_be_the_file_it_hashed(tmp_path, monkeypatch) -> None:
    code = _query_files_in(tmp_path, monkeypatch)
    monkeypatch.setattr(lemma_cache, "code_fingerprint", lambda: "the code")
    monkeypatch.setattr(
        lemma_cache, "_LATE", {"late_query_module": (str(code), lemma_cache._file_status(str(code)))}
    )
    assert lemma_cache._fingerprint() == "the code"  # not loaded yet: nothing to check
    code.write_text("x = 2\n")  # written before it is loaded
    monkeypatch.setitem(sys.modules, "late_query_module", object())
    assert lemma_cache._fingerprint() is None
    monkeypatch.setattr(
        lemma_cache, "_LATE", {"late_query_module": (str(code), lemma_cache._file_status(str(code)))}
    )
    assert lemma_cache._fingerprint() == "the code"  # loaded as it was when hashed
    assert not lemma_cache._LATE  # checked once


EDIT_AFTER_IMPORT = (
    "import json, pathlib, sys\n"
    "import layout_algebra\n"
    "from layout_algebra.model import shapes\n"
    "if sys.argv[1] == 'edit':\n"
    "    source = pathlib.Path(shapes.__file__)\n"
    "    source.write_text(source.read_text() + '\\n# edited after the import\\n')\n"
    "from layout_algebra import prove\n"
    "print(json.dumps([prove.injective('f32[16,256]{1,0:T(8,128)}').status, layout_algebra.__file__]))\n"
)


@pytest.mark.slow
def test_a_source_file_edited_between_import_and_first_proof_keys_no_record(tmp_path) -> None:
    """Regression: the fingerprint was taken at the first proof, from the files on disk, so a
    process that had loaded ``model/shapes.py`` and then saw it edited recorded what its old
    code proved under the new code's fingerprint. In a copy of the package: the process that
    sees no edit writes records, the one that does writes none (its proofs still use the
    exact-text entries)."""
    import shutil

    source = tmp_path / "src"
    shutil.copytree(
        Path(lemma_cache.__file__).resolve().parents[1],
        source / "layout_algebra",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    newest = max(os.stat(f).st_ctime_ns for f in (source / "layout_algebra").rglob("*"))
    # the copy is older than the processes below by the margin the cache allows
    _once_file_times_pass(newest + int(lemma_cache.START_MARGIN_S * 1e9), tmp_path / "clock")
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAYOUT_ALGEBRA_")}
    env["PYTHONPATH"] = str(source)
    for mode in ("plain", "edit"):
        folder = tmp_path / mode
        env[lemma_cache.DIRECTORY_VARIABLE] = str(folder)
        run = subprocess.run(
            [sys.executable, "-c", EDIT_AFTER_IMPORT, mode],
            env=env,
            cwd=tmp_path,  # not the checkout: its package would come first
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert run.returncode == 0, run.stderr
        status, loaded_from = json.loads(run.stdout)
        assert status == "proved" and loaded_from.startswith(str(source))
        records = list(folder.glob("*.lemma.json")) + list(folder.glob("*.layout.json"))
        assert list(folder.glob("*.smt2"))
        assert bool(records) == (mode == "plain"), (mode, records)


# ------------------------------------------------------ the audit of the layout records
def _rebuild_each(patterns):
    """The lemma of each distinct general stage of ``patterns``, built and proved afresh."""
    from layout_algebra.prove.general import general_stage

    core.mixed_radix_pair_lemma.cache_clear()
    return [core._general_stage_query(general_stage(p), 30_000) for p in dict.fromkeys(patterns)]


@pytest.mark.slow
def test_every_layout_record_is_proved_again_and_a_tampered_one_is_caught(cache_dir) -> None:
    shapes = [*TWO_LAYOUTS, "s8[2,3,4,5]{3,1,2,0:T(8,128)(4,1)}"]
    layouts = []
    for shape in shapes:
        _record_of(shape, cache_dir)
        patterns = [instance_of(stage) for stage in position_stages_of(shape)]
        layouts.append((patterns, lambda patterns=patterns: _rebuild_each(patterns)))
    assert lemma_cache.verify_records([], layouts) == []
    path = lemma_cache._layout_path(lemma_cache._layout_identity(layouts[0][0]), cache_dir)
    honest = path.read_text()
    named = lemma_cache._layout_identity(layouts[0][0]).rsplit("\ncode ", 1)[0]
    # a claim changed
    record = json.loads(honest)
    record["lemmas"][0]["claim"] = record["lemmas"][-1]["claim"] + " "
    path.write_text(json.dumps(record))
    assert lemma_cache.verify_records([], layouts) == [named]
    # another layout's record in its place
    path.write_text(
        lemma_cache._layout_path(lemma_cache._layout_identity(layouts[1][0]), cache_dir).read_text()
    )
    assert lemma_cache.verify_records([], layouts) == [named]
    # a lemma that is no longer proved
    path.write_text(honest)
    unknown = dataclasses.replace(_rebuild_each(layouts[0][0])[0], status="unknown")
    broken = [(layouts[0][0], lambda: [unknown, *_rebuild_each(layouts[0][0])[1:]]), *layouts[1:]]
    assert lemma_cache.verify_records([], broken) == [named]
    assert lemma_cache.verify_records([], layouts) == []
