"""A bitcast between memory spaces: the verifier and the NumPy executor give XLA's answer.

XLA's layout-sensitive ``HloVerifier`` (``ShapeVerifier::HandleBitcast``) refuses a bitcast
whose operand and result disagree on being in host memory ``S(5)`` (``kHostMemorySpace``),
unless the operand is a constant (seen through copies); ``S(0)`` <-> ``S(1)`` and ``S(0)``
<-> ``S(6)`` are valid HLO. A valid one still moves no data, so the result's elements are
undefined in both tools. (The verifier used to answer ``refuted`` for ``S(5)``, the executor
"invalid HLO" for ``S(1)``.)
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from support.hlo_text import hlo_module

from layout_algebra.hlo import InvalidHlo, verify_rewrite
from layout_algebra.hlo.execute import run
from layout_algebra.hlo.execute_compare import compare


def moved(space_in: int, space_out: int, op: str) -> str:
    """``f32[4]`` in ``S(space_in)`` made ``S(space_out)`` by ``op`` (copy or bitcast)."""
    return hlo_module(
        f"p = f32[4]{{0:S({space_in})}} parameter(0)",
        f"ROOT r = f32[4]{{0:S({space_out})}} {op}(p)",
    )


HOST_CROSSINGS = [(0, 5), (5, 0), (1, 5), (5, 6)]
DEVICE_CROSSINGS = [(0, 1), (1, 0), (0, 6), (6, 0), (2, 1)]


@pytest.mark.parametrize(("space_in", "space_out"), HOST_CROSSINGS)
@pytest.mark.parametrize("mode", ["physical", "logical"])
def test_a_bitcast_in_or_out_of_host_memory_is_invalid_in_both(space_in, space_out, mode) -> None:
    copy, bitcast = moved(space_in, space_out, "copy"), moved(space_in, space_out, "bitcast")
    r = verify_rewrite(copy, bitcast, mode=mode)  # the rewritten module is invalid: unsafe
    assert r.status == "refuted" and "S(5)" in r.counterexample["invalid_hlo"], str(r)
    with pytest.raises(InvalidHlo, match=r"S\(5\)"):  # as the input: bad input
        verify_rewrite(bitcast, bitcast, mode=mode)
    with pytest.raises(InvalidHlo, match=r"S\(5\)"):
        compare(copy, bitcast, mode=mode)
    with pytest.raises(InvalidHlo, match="host memory"):
        run(bitcast, [np.zeros(4, np.float32)])


@pytest.mark.parametrize(("space_in", "space_out"), DEVICE_CROSSINGS)
@pytest.mark.parametrize("mode", ["physical", "logical"])
def test_a_bitcast_between_device_memories_is_valid_but_moves_nothing(space_in, space_out, mode) -> None:
    copy, bitcast = moved(space_in, space_out, "copy"), moved(space_in, space_out, "bitcast")
    r = verify_rewrite(copy, bitcast, mode=mode)
    assert r.status == "refuted", str(r)
    assert "between memories" in r.counterexample["after"]
    c = compare(copy, bitcast, mode=mode)
    assert c.same is False, c
    out = run(bitcast, [np.arange(4, dtype=np.float32)])
    assert not out.defined.any()


def test_the_copy_itself_is_the_same_as_itself() -> None:
    """The refutation above is the bitcast's doing: the copy is proved against itself."""
    copy = moved(0, 1, "copy")
    assert verify_rewrite(copy, copy).status == "proved"
    assert compare(copy, copy).same is True


@pytest.mark.parametrize("chain", [["c"], ["c", "k1"], ["c", "k1", "k2"]])
def test_a_constant_may_be_bitcast_into_host_memory(chain) -> None:
    """XLA exempts a constant operand (through copies) from the host-memory rule."""
    lines = ["c = f32[2]{0} constant({1, 2})"]
    for a, b in itertools.pairwise(chain):
        lines.append(f"{b} = f32[2]{{0}} copy({a})")
    lines.append(f"ROOT b = f32[2]{{0:S(5)}} bitcast({chain[-1]})")
    bitcast = hlo_module(*lines)
    copy = bitcast.replace(f"bitcast({chain[-1]})", f"copy({chain[-1]})")
    r = verify_rewrite(copy, bitcast)
    assert r.status == "refuted", str(r)  # valid, but no data moves into host memory
    assert compare(copy, bitcast).same is False
    assert not run(bitcast, []).defined.any()


def test_a_computed_operand_is_not_exempt() -> None:
    """Only a constant is exempt: a negate of one is a computed array."""
    bitcast = hlo_module(
        "c = f32[2]{0} constant({1, 2})",
        "n = f32[2]{0} negate(c)",
        "ROOT b = f32[2]{0:S(5)} bitcast(n)",
    )
    copy = bitcast.replace("bitcast(n)", "copy(n)")
    r = verify_rewrite(copy, bitcast)
    assert r.status == "refuted" and "S(5)" in r.counterexample["invalid_hlo"], str(r)
    with pytest.raises(InvalidHlo, match=r"S\(5\)"):
        compare(copy, bitcast)
