"""The lemma cache: proved general lemmas are read back only for the same query text and Z3.

Every test runs with its own cache directory and an empty in-process lemma store, so
what it sees on disk is what it wrote.
"""

from __future__ import annotations

import os
import re
import sys
import time
from pathlib import Path

import pytest
import z3

from layout_algebra import prove
from layout_algebra.meaning.stages.arith import ARITHMETIC
from layout_algebra.meaning.stages.stages import AlignTail, Pad, Split
from layout_algebra.prove import core, lemma_cache
from layout_algebra.prove.general import GeneralStage, generalize

CACHED = "read from the lemma cache"


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    """A private cache directory and empty in-process stores (restored afterwards)."""
    folder = tmp_path / "lemmas"
    monkeypatch.setenv(lemma_cache.DIRECTORY_VARIABLE, str(folder))
    monkeypatch.delenv(lemma_cache.SWITCH_VARIABLE, raising=False)
    saved = dict(core._GENERAL_LEMMAS)
    _forget_in_process()
    yield folder
    _forget_in_process()
    core._GENERAL_LEMMAS.update(saved)


@pytest.fixture
def exact_cache_dir(cache_dir):
    """``cache_dir`` (every query is built and looked up by its exact text: there is no other key)."""
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


def test_the_suite_never_touches_the_users_lemma_cache() -> None:
    """tests/conftest.py gives the whole run a private cache directory (hermetic test runs)."""
    import tempfile
    from pathlib import Path

    from layout_algebra.prove import lemma_cache

    directory = lemma_cache.cache_directory()
    assert directory is not None
    assert Path(tempfile.gettempdir()) in directory.resolve().parents
    assert "layout-algebra-test-lemmas-" in str(directory)


def test_a_poisoned_entry_for_a_query_one_constant_away_is_never_served(cache_dir, monkeypatch) -> None:
    """Someone stores ``proved`` for queries whose text differs from a false lemma's query
    by one constant. The false lemma (a split that forgets the position inside its tile)
    is still asked of Z3 and refuted, with a counterexample checked here."""
    general = _split_lemma()
    broken = GeneralStage(
        DropsTheRemainder(domain=general.stage.domain, start=0, tile=general.stage.tile), general.minimum
    )
    asked: list[str] = []
    looked_up = lemma_cache.is_known_proved
    monkeypatch.setattr(
        lemma_cache, "is_known_proved", lambda key, *a: asked.append(key) or looked_up(key, *a)
    )
    assert core.general_stage_lemma(broken).status == "refuted"
    (key,) = asked
    numbers = [m for m in re.finditer(r"(?<=[ (])\d+(?=[ )])", key)]
    assert numbers
    poisoned = {key[: m.start()] + str(int(m.group()) + 1) + key[m.end() :] for m in numbers}
    for text in poisoned:
        lemma_cache.record_proved(text)
    _forget_in_process()
    again = core.general_stage_lemma(broken)
    assert again.status == "refuted" and CACHED not in again.encoding
    found, sizes = again.counterexample, again.counterexample["sizes"]
    concrete = DropsTheRemainder(
        domain=(sizes["K0"] * sizes["t0"], sizes["K1"] * sizes["t1"]),
        start=0,
        tile=(sizes["t0"], sizes["t1"]),
    )
    assert concrete.forward(found["element"]) == concrete.forward(found["other_element"])


def test_nothing_but_the_query_text_and_the_solver_is_a_key() -> None:
    """No fingerprint of source folders, no file times, no per-stage records: the module
    offers only the exact-text cache."""
    assert set(lemma_cache.__all__) == {"cache_directory", "is_known_proved", "query_key", "record_proved"}
    for gone in ("_QUERY_CODE", "code_fingerprint", "stage_identity", "recorded_layout", "_loaded_since"):
        assert not hasattr(lemma_cache, gone), gone
