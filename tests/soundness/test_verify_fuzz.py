"""Soundness fuzz: the rewrite verifier against the HLO executor, on random module pairs.

Each test draws pairs of small modules (``tests/support/strategies_hlo.py``): safe rewrites and
their mutations (wrong permutation, wrong tile, changed ``L(n)``, off-by-one slice,
reversed dims, a copy across memory spaces dropped), re-laid-out chains of 1-6 ops, and
symbolic sizes under ``assume``. For each pair ``check_case`` asserts that the verifier
never proves what execution on real packed bytes contradicts, and never refutes what
execution confirms at the counterexample's sizes. With ``CI`` set (Hypothesis profile
``ci``, derandomized) the tests below run 620 pairs; ``benchmarks/verify_fuzz.py`` runs
the long version.

Each test also checks that its fuzz is not vacuous: both answers (same / different)
occur, and the two sides agree on most pairs (so the cases exercise the verifier rather
than its ``unknown``).
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import strategies_hlo as sh

from layout_algebra.hlo.execute_compare import compare


def fuzz(strategy: st.SearchStrategy[sh.Case], examples: int) -> sh.Tally:
    """Check ``examples`` cases drawn from ``strategy``; the tally of their outcomes."""
    tally = sh.Tally()

    @settings(max_examples=examples, suppress_health_check=[HealthCheck.too_slow])
    @given(strategy)
    def check(case: sh.Case) -> None:
        tally.add(sh.check_case(case))

    check()
    print(f"\n{tally.summary()}")
    return tally


def assert_exercised(tally: sh.Tally, *, both_answers: bool = True) -> None:
    """The fuzz ran, saw both answers, and the two sides mostly answered together."""
    answered = sum(
        n
        for (_, verdict, same), n in tally.counts.items()
        if verdict in ("proved", "refuted") and same in (True, False)
    )
    sames = {same for (_, verdict, same) in tally.counts if verdict in ("proved", "refuted")}
    assert answered >= tally.total // 2, tally.summary()
    if both_answers:
        assert {True, False} <= sames, tally.summary()


@pytest.mark.slow
def test_transpose_to_bitcast_and_mutations() -> None:
    assert_exercised(fuzz(sh.transpose_to_bitcast(), 90))


@pytest.mark.slow
def test_reshape_to_bitcast_wrong_tile_and_tail_padding() -> None:
    assert_exercised(fuzz(sh.reshape_to_bitcast(), 90))


@pytest.mark.slow
def test_copy_elimination_and_dropped_copy_across_memory_spaces() -> None:
    assert_exercised(fuzz(sh.copy_elimination(), 60))


@pytest.mark.slow
def test_transpose_pairs_fused() -> None:
    assert_exercised(fuzz(sh.transpose_pair(), 60), both_answers=False)


@pytest.mark.slow
def test_slices_and_off_by_one() -> None:
    assert_exercised(fuzz(sh.slices(), 60))


@pytest.mark.slow
def test_reshape_across_elementwise() -> None:
    assert_exercised(fuzz(sh.reshape_across_elementwise(), 60))


@pytest.mark.slow
def test_relayout_chains() -> None:
    assert_exercised(fuzz(sh.relayout(), 100))


@pytest.mark.slow
def test_chains_moved_into_fusions() -> None:
    assert_exercised(fuzz(sh.fused(), 60))


@pytest.mark.slow
def test_symbolic_sizes_with_assumptions() -> None:
    assert_exercised(fuzz(sh.symbolic(), 40))


# ----------------------------------------------------- hand-checked pairs of the fuzz
def test_dropped_copy_across_memory_spaces_is_refuted_by_both() -> None:
    before = sh.Module()
    before.add("p", "f32[4,4]{1,0}", "parameter(0)")
    before.add("c", "f32[4,4]{1,0:S(1)}", "copy(p)")
    after = sh.Module()
    after.add("p", "f32[4,4]{1,0}", "parameter(0)")
    case = sh.Case(before.text(), after.text(), "physical", "hand")
    outcome = sh.check_case(case)
    assert (outcome.verdict, outcome.same) == ("refuted", False)
    assert compare(case.before, case.after, mode="logical").same is True


def test_wrong_tile_under_a_bitcast_is_refuted_by_both() -> None:
    # One 2x4 tile of f32[2,4] is row-major; 2x2 tiles put (0,2) at slot 4, not 2.
    before = sh.Module()
    before.add("p", "f32[2,4]{1,0:T(2,4)}", "parameter(0)")
    before.add("r", "f32[8]{0}", "reshape(p)")
    after = sh.Module()
    after.add("p", "f32[2,4]{1,0:T(2,4)}", "parameter(0)")
    after.add("r", "f32[8]{0}", "bitcast(p)")
    assert sh.check_case(sh.Case(before.text(), after.text(), "physical", "hand")).verdict == "proved"
    wrong = [t.replace("T(2,4)", "T(2,2)") for t in (before.text(), after.text())]
    outcome = sh.check_case(sh.Case(*wrong, "physical", "hand"))
    assert (outcome.verdict, outcome.same) == ("refuted", False)
    c = compare(*wrong)
    assert c.element == (2,)  # slot 2 of the 2x2 tiling holds element (1, 0), not (0, 2)


# ------------------------------------------ verifier bugs the fuzz found (now fixed)
def test_identical_modules_reading_padding_are_not_the_same() -> None:
    # Found by the fuzz: the verifier proved a module equal to itself although its root
    # reads a padding slot (element (0,1) of f32[1,2]{0,1:T(2,2)} is at slot 2, slot 1 is padding).
    # Read as f32[2] (8 of its 16 bytes) that bitcast is invalid HLO now, as in XLA: refused by
    # both; as f32[4] it keeps the size and reads the padding slots.
    m = sh.Module()
    m.add("p", "f32[1,2]{0,1:T(2,2)}", "parameter(0)")
    m.add("b", "f32[4]{0}", "bitcast(p)")
    outcome = sh.check_case(sh.Case(m.text(), m.text(), "physical", "hand"))
    assert (outcome.verdict, outcome.same) == ("refuted", False)
    short = m.text().replace("f32[4]{0} bitcast", "f32[2]{0} bitcast")
    outcome = sh.check_case(sh.Case(short, short, "physical", "hand"))
    assert (outcome.verdict, outcome.same) == ("rejected", "invalid HLO")


def test_sub_byte_roots_of_equal_bytes_are_the_same_buffer() -> None:
    # Found by the fuzz: s4[3]{0:E(4)} (12 bits) and s4[3]{0:L(2)E(4)} (16 bits) are both
    # one 2-byte buffer with the elements at the same bits; the verifier refuted on "size in bits".
    before, after = sh.Module(), sh.Module()
    for m in (before, after):
        m.add("p", "s4[1,1,3]{0,1,2:E(4)}", "parameter(0)")
    before.add("r", "s4[3]{0:E(4)}", "reshape(p)")
    after.add("r", "s4[3]{0:L(2)E(4)}", "bitcast(p)")
    outcome = sh.check_case(sh.Case(before.text(), after.text(), "physical", "hand"))
    assert (outcome.verdict, outcome.same) == ("proved", True)


# ------------------------------------------------------- the check itself can fail
def test_check_case_catches_a_verifier_that_proves_everything(monkeypatch) -> None:
    from layout_algebra.prove.result import ProofResult

    monkeypatch.setattr(sh, "verify", lambda case: ProofResult("proved", "lie", 0.0, "none"))
    before = sh.Module()
    before.add("p", "s8[3,5]{1,0}", "parameter(0)")
    before.add("s", "s8[3,4]{1,0}", "slice(p), slice={[0:3], [0:4]}")
    after = sh.Case(before.text(), before.text().replace("[0:4]", "[1:5]"), "logical", "hand")
    with pytest.raises(AssertionError, match="SOUNDNESS: the verifier proved"):
        sh.check_case(after)


def test_check_case_catches_a_verifier_that_refutes_everything(monkeypatch) -> None:
    from layout_algebra.prove.result import ProofResult

    lie = ProofResult("refuted", "lie", 0.0, "none", counterexample={"element": (0,)})
    monkeypatch.setattr(sh, "verify", lambda case: lie)
    m = sh.Module()
    m.add("p", "f32[4]{0}", "parameter(0)")
    m.add("c", "f32[4]{0}", "copy(p)")
    with pytest.raises(AssertionError, match="SOUNDNESS: the verifier refuted"):
        sh.check_case(sh.Case(m.text(), m.text(), "physical", "hand"))


def test_concatenate_of_one_bitcast_twice_is_refuted() -> None:
    # Found by the fuzz: the verifier's main query was unsat (only a side condition kept it
    # from "proved") although the bitcast reads other elements: slot 1 of u8[2,3]{1,0:T(2,2)}
    # holds element (0,1), slot 1 of u8[2,3]{0,1} holds (1,0).
    # T(2,2) pads u8[2,3] to 8 bytes, so its bitcast to u8[6] is invalid HLO now (as in XLA),
    # refused by both; T(1,3) keeps 6 bytes with (0,1) at slot 1, as T(2,2) did.
    def pair(tiled: str) -> sh.Case:
        before, after = sh.Module(), sh.Module()
        for m, layout in ((before, tiled), (after, "{0,1}")):
            m.add("p", "u8[2,3]{1,0}", "parameter(0)")
            m.add("i1", f"u8[2,3]{layout}", "copy(p)")
            m.add("i2", "u8[6]{0}", "bitcast(i1)")
            m.add("c", "u8[12]{0}", "concatenate(i2, i2), dimensions={0}")
        return sh.Case(before.text(), after.text(), "physical", "hand")

    outcome = sh.check_case(pair("{1,0:T(1,3)}"))
    assert (outcome.verdict, outcome.same) == ("refuted", False)
    outcome = sh.check_case(pair("{1,0:T(2,2)}"))
    assert (outcome.verdict, outcome.same) == ("rejected", "invalid HLO")
