"""Rough edges of the rewrite verifier and the HLO executor, each against an independent oracle.

* A size-keeping ``bitcast`` that changes ``E(n)`` of a sub-byte type (``s4[16]{0:E(4)}`` read
  as ``s4[8]{0}``): the bytes are checked by hand (nibbles placed with shifts), and the
  verifier's verdicts against the executor on random small modules.
"""

from __future__ import annotations

import random
import re

import ml_dtypes
import numpy as np
import pytest
import sympy
from support.hlo_text import hlo_module_rooted_at_last

from layout_algebra import parse_shape
from layout_algebra.hlo import verify_rewrite
from layout_algebra.hlo.execute import inferred_sizes, run
from layout_algebra.hlo.execute_compare import compare, random_array
from layout_algebra.hlo.rewrite_conditions import rewrite_claim
from layout_algebra.hlo.validity import InvalidHlo, bitcast_shape_sizes
from layout_algebra.hlo.verify_values import UnsupportedHlo
from layout_algebra.prove import holds


def nibbles(values: np.ndarray) -> list[int]:
    """The 4-bit codes of s4 values (two's complement), computed here from the integers."""
    return [int(v) & 0xF for v in values.astype(np.int64)]


PACKED = "p = s4[16]{0:E(4)} parameter(0)"
WIDENED = hlo_module_rooted_at_last(PACKED, "b = s4[8]{0} bitcast(p)")  # 8 bytes either way
STRIDED = hlo_module_rooted_at_last(
    PACKED, "b = s4[8]{0} slice(p), slice={[0:16:2]}"
)  # the even elements, zeros above
X = np.array([5, 3, -1, 7, 0, -8, 2, 2, -3, 1, 4, -6, 6, 0, 1, -1], ml_dtypes.int4)


# ------------------------------------------------------ 1. bitcasts that change E(n)
def test_widening_bitcast_stores_two_nibbles_per_byte() -> None:
    out = run(WIDENED, [X])
    codes = nibbles(X)
    # the operand's bytes, packed by hand: element 2k in the low nibble of byte k
    assert out.data.tolist() == [codes[2 * k] | codes[2 * k + 1] << 4 for k in range(8)]
    assert nibbles(out.array) == codes[0::2]  # each element's value: the low nibble
    assert out.defined.all()


def test_executor_detail_shows_the_differing_stored_bits() -> None:
    """Old: 'root element (0,): before 5, after 5' (the same number on both sides)."""
    c = compare(WIDENED, STRIDED)
    assert c.same is False
    found = re.search(r"before (-?\d+), after (-?\d+) \(stored bits 0x(\w+) before, 0x(\w+) after", c.detail)
    assert found is not None, c.detail
    value, again, high, low = int(found[1]), int(found[2]), int(found[3], 16), int(found[4], 16)
    assert value == again and high != low  # the same value, other bytes:
    assert high & 0xF == low == value & 0xF  # the value in the low nibble, zeros above it after
    assert "the same 4-bit value, other bits above it in its 8-bit slot" in c.detail


def test_logical_mode_compares_values_not_the_bits_above_them() -> None:
    """Old: the executor compared the bytes holding the values and said 'different'."""
    assert compare(WIDENED, STRIDED, mode="logical").same is True
    assert verify_rewrite(WIDENED, STRIDED, mode="logical").status == "proved"


def test_verifier_decides_a_widening_bitcast_in_physical_mode() -> None:
    """Old: UnsupportedHlo 'bitcast b changes the element size (4 to 8 bits)'."""
    r = verify_rewrite(WIDENED, STRIDED)
    assert r.status == "refuted"
    (k,) = r.counterexample["element"]
    assert r.counterexample["before"] == (
        f"bit {8 * k}: parameter 0 element ({2 * k},) with parameter 0 element ({2 * k + 1},) "
        "stored above it in its slot (bitcast b)"
    )
    assert (
        r.counterexample["after"]
        == f"bit {8 * k}: parameter 0 element ({2 * k},) with zeros above it in its slot"
    )
    assert verify_rewrite(WIDENED, WIDENED).status == "proved"
    assert compare(WIDENED, WIDENED).same is True


def test_narrowing_bitcast_reads_zeros_above_unpacked_elements() -> None:
    """s4[8]{0} holds each element in the low nibble of a byte, zeros above (pack, XLA's
    convention): read as s4[16]{0:E(4)} it is the elements interleaved with zeros, which a
    pad with interior padding builds from the logical array."""
    narrowed = hlo_module_rooted_at_last("p = s4[8]{0} parameter(0)", "b = s4[16]{0:E(4)} bitcast(p)")
    interleaved = hlo_module_rooted_at_last(
        "p = s4[8]{0} parameter(0)",
        "z = s4[] constant(0)",
        "b = s4[16]{0:E(4)} pad(p, z), padding=0_1_1",
    )
    x = X[:8]
    out = run(narrowed, [x])
    assert nibbles(out.array) == [c for v in nibbles(x) for c in (v, 0)]
    for mode in ("physical", "logical"):
        assert verify_rewrite(narrowed, interleaved, mode=mode).status == "proved"
        assert compare(narrowed, interleaved, mode=mode).same is True
    shifted = interleaved.replace("padding=0_1_1", "padding=1_0_1")  # zeros first: wrong
    assert verify_rewrite(narrowed, shifted).status == "refuted"
    assert compare(narrowed, shifted).same is False


def test_round_trip_through_wider_slots_is_the_operand() -> None:
    there_and_back = hlo_module_rooted_at_last(
        PACKED, "b = s4[8]{0} bitcast(p)", "c = s4[16]{0:E(4)} bitcast(b)"
    )
    copied = hlo_module_rooted_at_last(PACKED, "c = s4[16]{0:E(4)} copy(p)")
    for mode in ("physical", "logical"):
        assert verify_rewrite(there_and_back, copied, mode=mode).status == "proved"
        assert compare(there_and_back, copied, mode=mode).same is True


def test_symbolic_sizes() -> None:
    widened = hlo_module_rooted_at_last("p = s4[2*N]{0:E(4)} parameter(0)", "b = s4[N]{0} bitcast(p)")
    back = hlo_module_rooted_at_last(
        "p = s4[2*N]{0:E(4)} parameter(0)", "b = s4[N]{0} bitcast(p)", "c = s4[2*N]{0:E(4)} bitcast(b)"
    )
    copied = hlo_module_rooted_at_last("p = s4[2*N]{0:E(4)} parameter(0)", "c = s4[2*N]{0:E(4)} copy(p)")
    assert verify_rewrite(widened, widened).status == "proved"
    assert verify_rewrite(back, copied).status == "proved"
    narrowed = hlo_module_rooted_at_last("p = s4[N]{0} parameter(0)", "b = s4[2*N]{0:E(4)} bitcast(p)")
    interleaved = hlo_module_rooted_at_last(
        "p = s4[N]{0} parameter(0)", "z = s4[] constant(0)", "b = s4[2*N]{0:E(4)} pad(p, z), padding=0_1_1"
    )
    assert verify_rewrite(narrowed, interleaved).status == "proved"
    r = verify_rewrite(narrowed, interleaved.replace("padding=0_1_1", "padding=1_0_1"))
    assert r.status == "refuted" and r.counterexample["sizes"]["N"] >= 1
    shifted = interleaved.replace("padding=0_1_1", "padding=1_0_1")
    assert compare(narrowed, shifted, sizes=r.counterexample["sizes"]).same is False


def test_padding_above_a_value_makes_it_undefined_in_both() -> None:
    """s4[3]{0:E(4)} is 2 bytes, the 4th nibble padding: s4[2]{0}'s element 1 has it above."""
    m = hlo_module_rooted_at_last("p = s4[3]{0:E(4)} parameter(0)", "b = s4[2]{0} bitcast(p)")
    assert run(m, [X[:3]]).defined.tolist() == [True, False]
    for mode in ("physical", "logical"):
        r = verify_rewrite(m, m, mode=mode)
        assert r.status == "refuted" and r.counterexample["element"] == (1,)
        assert compare(m, m, mode=mode).same is False


@pytest.mark.parametrize(
    ("lines", "says"),
    [
        (
            (PACKED, "b = s4[8]{0} bitcast(p)", "c = s4[8]{0} copy(b)"),
            "copy c reads the result of bitcast b, each of whose slots holds 2 s4 elements",
        ),
        (
            ("p = pred[16]{0:E(1)} parameter(0)", "b = pred[2]{0} bitcast(p)"),
            "bitcast b changes the element size (1 to 8 bits) of pred elements",
        ),
        (
            ("p = s4[16]{0:E(4)} parameter(0)", "b = u4[8]{0} bitcast(p)"),
            "and the element type (s4 to u4)",
        ),
        (
            ("p = s4[16]{0:E(4)} parameter(0)", "b = s4[12]{0:E(5)} bitcast(p)"),
            "only between slots of whole 4-bit s4 digits",
        ),
    ],
)
def test_what_the_verifier_does_not_read_is_named(lines: tuple[str, ...], says: str) -> None:
    m = hlo_module_rooted_at_last(*lines)
    with pytest.raises(UnsupportedHlo, match=None) as err:
        verify_rewrite(m, m)
    assert says in str(err.value)


# ----------------------------- verifier against executor: random modules changing E(n)
TYPES = ("s4", "u4", "s2", "u2", "f4e2m1fn")


def _shape(t: str, count: int, slot: int) -> str:
    return f"{t}[{count}]{{0}}" if slot == 8 else f"{t}[{count}]{{0:E({slot})}}"


def _count_for(nbytes: int, slot: int, rng: random.Random) -> int:
    """An element count whose slots take exactly ``nbytes`` bytes (XLA's size, rounded up)."""
    counts = [n for n in range(1, 8 * nbytes // slot + 1) if -(-n * slot // 8) == nbytes]
    return rng.choice(counts)


def _random_pair(rng: random.Random) -> tuple[str, str]:
    t = rng.choice(TYPES)
    w = parse_shape(f"{t}[1]").element_type.bit_width
    slots = [s for s in (w, 2 * w, 4 * w, 8) if s <= 8 and s % w == 0]
    nbytes = rng.randint(1, 3)
    a = rng.choice(slots)
    param = f"p = {_shape(t, _count_for(nbytes, a, rng), a)} parameter(0)"

    def chain(steps: int, end: tuple[int, int] | None) -> list[str]:
        lines, last = [param], "p"
        for k in range(steps):
            slot = rng.choice(slots)
            count = _count_for(nbytes, slot, rng)
            if end is not None and k == steps - 1:
                slot, count = end
            lines.append(f"b{k} = {_shape(t, count, slot)} bitcast({last})")
            last = f"b{k}"
        return lines

    before = chain(rng.randint(1, 2), None)
    root = before[-1].split(" = ")[1].split(" bitcast")[0]
    count = int(root.split("[")[1].split("]")[0])
    slot = int(root.split("E(")[1].split(")")[0]) if "E(" in root else 8
    pick = rng.random()
    if pick < 0.3:
        after = before
    elif pick < 0.7:
        after = chain(rng.randint(1, 2), (rng.choice(slots) if rng.random() < 0.3 else slot, count))
    else:  # canonical elements: a strided slice of the parameter, when it has enough
        n = int(param.split("[")[1].split("]")[0])
        stride = rng.choice([s for s in (1, 2, 4) if (count - 1) * s < n] or [1])
        if (count - 1) * stride >= n:
            after = before
        else:
            after = [
                param,
                f"b = {_shape(t, count, slot)} slice(p), slice={{[0:{(count - 1) * stride + 1}:{stride}]}}",
            ]

    def consumed(lines: list[str]) -> list[str]:  # sometimes an op reads the root: a reverse
        if rng.random() >= 0.25:
            return lines
        last = lines[-1].split(" = ")[0]
        return [*lines, f"r = {_shape(t, count, slot)} reverse({last}), dimensions={{0}}"]

    return hlo_module_rooted_at_last(*consumed(before)), hlo_module_rooted_at_last(*consumed(after))


@pytest.mark.slow
def test_random_element_size_bitcasts_verifier_agrees_with_executor() -> None:
    rng = random.Random(20261124)
    verdicts: dict[str, int] = {}
    for _ in range(40):
        before, after = _random_pair(rng)
        for mode in ("physical", "logical"):
            try:
                r = verify_rewrite(before, after, mode=mode)
            except InvalidHlo:
                with pytest.raises(InvalidHlo):
                    compare(before, after, mode=mode)
                verdicts["invalid"] = verdicts.get("invalid", 0) + 1
                continue
            except UnsupportedHlo as err:  # only a reverse of slots holding several elements
                assert "reverse r reads the result of bitcast" in str(err), (before, after, err)
                verdicts["unsupported"] = verdicts.get("unsupported", 0) + 1
                continue
            if r.status == "refuted" and "invalid_hlo" in r.counterexample:  # an invalid rewritten module
                with pytest.raises(InvalidHlo):
                    compare(before, after, mode=mode)
                verdicts["invalid"] = verdicts.get("invalid", 0) + 1
                continue
            verdicts[r.status] = verdicts.get(r.status, 0) + 1
            c = compare(before, after, mode=mode)
            assert r.status != "unknown", (before, after, mode, r.reason)
            assert c.same is (r.status == "proved"), (before, after, mode, r, c)
    assert verdicts.get("proved", 0) >= 15 and verdicts.get("refuted", 0) >= 15, verdicts
    assert verdicts.get("unsupported", 0) >= 1, verdicts


def _random_tiled_pair(rng: random.Random) -> tuple[str, str] | None:
    """Two bitcasts of one 2-D parameter into the same type and dimensions, each with a
    random order, small tile and E(n), all of one shape size (or ``None`` if none is found)."""
    t = rng.choice(("s4", "u4", "s2", "u2"))
    w = parse_shape(f"{t}[1]").element_type.bit_width
    slots = [s for s in (w, 2 * w, 4 * w) if s <= 8]

    def shape(rows: int, cols: int) -> str:
        slot = rng.choice(slots)
        attrs = rng.choice(("", "T(2,2)", "T(2,4)", "T(4,2)")) + (f"E({slot})" if slot < 8 else "")
        return f"{t}[{rows},{cols}]{{{rng.choice(('1,0', '0,1'))}{':' + attrs if attrs else ''}}}"

    source = shape(rng.randint(1, 4), rng.randint(1, 6))
    size = bitcast_shape_sizes(source, source)[0]
    fits = [s for s in (shape(rng.randint(1, 6), rng.randint(1, 8)) for _ in range(200))
            if bitcast_shape_sizes(source, s)[1] == size]  # fmt: skip
    if not fits:
        return None
    result = rng.choice(fits)
    same_dims = [s for s in fits if s.split("{")[0] == result.split("{")[0]]
    other = rng.choice(same_dims)
    param = f"p = {source} parameter(0)"
    return hlo_module_rooted_at_last(param, f"b = {result} bitcast(p)"), hlo_module_rooted_at_last(
        param, f"b = {other} bitcast(p)"
    )


@pytest.mark.slow
def test_random_tiled_element_size_bitcasts_verifier_agrees_with_executor() -> None:
    rng = random.Random(7)
    verdicts: dict[str, int] = {}
    for _ in range(15):
        pair = _random_tiled_pair(rng)
        if pair is None:
            continue
        before, after = pair
        for mode in ("physical", "logical"):
            r = verify_rewrite(before, after, mode=mode)
            assert r.status != "unknown", (before, after, mode, r.reason)
            verdicts[r.status] = verdicts.get(r.status, 0) + 1
            assert compare(before, after, mode=mode).same is (r.status == "proved"), (before, after, mode, r)
    assert verdicts.get("proved", 0) >= 5 and verdicts.get("refuted", 0) >= 5, verdicts


def test_random_parameters_hold_canonical_sub_byte_elements() -> None:
    """The executor's inputs have zeros above every unpacked sub-byte value (the convention
    the narrowing bitcast relies on), checked on the parameter's packed bytes."""
    shape = parse_shape("s4[64]{0}")
    x = random_array(shape, np.random.default_rng(1))
    data = run(hlo_module_rooted_at_last("p = s4[64]{0} parameter(0)", "c = s4[64]{0} copy(p)"), [x]).data
    assert (data >> 4 == 0).all() and data.tolist() == nibbles(x)


# ------------------------------------- 2. sizes of symbols the executor must know
OFF_PATH = (
    hlo_module_rooted_at_last(  # the bitcast is not on the path to the root, but XLA's verifier checks it
        "p = f32[8,128]{1,0} parameter(0)",
        "b = f32[K*128]{0} bitcast(p)",
        "c = f32[8,128]{1,0} copy(p)",
    )
)


def test_run_infers_sizes_from_parameters_and_bitcast_sizes() -> None:
    """Old: InvalidHlo 'no value given for ['N']' although the array says N = 8."""
    x = np.arange(16 * 128, dtype=np.float32).reshape(16, 128)
    symbolic = hlo_module_rooted_at_last(
        "p = f32[2*N,128]{1,0} parameter(0)",
        "b = f32[K]{0} bitcast(p)",  # off the root's path: K is the size it keeps, 16*128
        "t = f32[128,2*N]{1,0} transpose(p), dimensions={1,0}",
    )
    out = run(symbolic, [x])
    assert out.array.tolist() == x.T.tolist()
    assert inferred_sizes(symbolic, [x]) == {"N": 8, "K": 2048}
    assert run(OFF_PATH, [x[:8]]).array.tolist() == x[:8].tolist()  # K = 8 from 4096 bytes
    assert compare(OFF_PATH, OFF_PATH).sizes == {"K": 8}


def test_symbol_no_one_determines_is_named_with_its_instruction() -> None:
    tiled = hlo_module_rooted_at_last(  # ceil(K/8) tiles keep 4096 bytes for K = 1..8: no single value
        "p = f32[8,128]{1,0} parameter(0)",
        "b = f32[K,128]{1,0:T(8,128)} bitcast(p)",
        "c = f32[8,128]{1,0} copy(p)",
    )
    x = np.zeros((8, 128), np.float32)
    with pytest.raises(InvalidHlo) as err:
        run(tiled, [x])
    message = str(err.value)
    assert "instruction 'b' (a bitcast: every one is checked, run or not)" in message
    assert "f32[K,128]{1,0:T(8,128)}" in message and "no value for the size symbol K" in message
    assert "sizes={'K': ...}" in message
    assert run(tiled, [x], sizes={"K": 5}).array.tolist() == x.tolist()
    for bad in ("8", 8.5, True):
        with pytest.raises(InvalidHlo, match=f"sizes\\['K'\\] is {re.escape(repr(bad))}"):
            run(tiled, [x], sizes={"K": bad})


def test_a_parameter_of_the_wrong_rank_is_named_before_its_sizes() -> None:
    """Old: 'no value given for ['N']', as if the sizes were missing."""
    copy = hlo_module_rooted_at_last("p = f32[N,128]{1,0} parameter(0)", "c = f32[N,128]{1,0} copy(p)")
    with pytest.raises(InvalidHlo, match=re.escape("expected an array of rank 2, got one of shape (3,)")):
        run(copy, [np.zeros(3, np.float32)])


# ------------------------ 3. 'does not hold' only where a re-checked point shows it
REVERSED = hlo_module_rooted_at_last("p = f32[N]{0} parameter(0)", "r = f32[N]{0} reverse(p), dimensions={0}")
COPIED = hlo_module_rooted_at_last("p = f32[N]{0} parameter(0)", "r = f32[N]{0} copy(p)")
N = sympy.Symbol("N", integer=True, nonnegative=True)


def test_witness_refuted_at_a_rechecked_size_says_does_not_hold() -> None:
    """At N = 1 a reverse is a copy: element 0 does not show that N >= 1 makes it unsafe.
    Old reason: 'some size has no difference at these elements' (from an unchecked model)."""
    claim = rewrite_claim(REVERSED, COPIED)
    r = claim.prove_witnesses([(0,)], (N >= 1,), 5000)
    assert r.status == "unknown"
    assert r.reason.startswith("does not hold at N=1: ")
    assert "re-checked by evaluating both modules" in r.reason
    # the oracle: executing both modules at N = 1 gives the same root
    assert compare(REVERSED, COPIED, sizes={"N": 1}).same is True
    assert claim.prove_witnesses([(0,)], (N >= 2,), 5000).status == "proved"


def test_witness_wording_follows_its_evidence_timeout_or_rechecked_sizes() -> None:
    """Reversing a tiled N x M array: element ((N*M//3) % N, M//2) is its own mirror at some
    sizes (N = 3, M = 7). Given 1 ms Z3 times out: 'could not be proved' (old: 'solver:
    timeout'); given 2 s it finds such sizes, and the reason says 'does not hold at ...' only
    because evaluating both modules there agrees, as the executor does."""
    M = sympy.Symbol("M", integer=True, nonnegative=True)
    tiled = "{1,0:T(8,128)}"
    rev = hlo_module_rooted_at_last(
        f"p = f32[N,M]{tiled} parameter(0)", f"r = f32[N,M]{tiled} reverse(p), dimensions={{0,1}}"
    )
    copy = rev.replace("reverse(p), dimensions={0,1}", "copy(p)")
    claim = rewrite_claim(rev, copy)
    witness = [((N * M // 3) % N, M // 2)]
    for timeout_ms in (1, 2000):
        r = claim.prove_witnesses(witness, (N >= 2, M >= 2), timeout_ms)
        assert r.status == "unknown"
        found = re.match(r"does not hold at M=(\d+), N=(\d+): ", r.reason)
        if found is None:  # the solver did not settle it (1 ms here; a fast machine may settle it)
            assert r.reason.startswith("could not be proved: solver: "), r.reason
            continue
        m, n = int(found[1]), int(found[2])
        assert ((n * m // 3) % n, m // 2) == (n - 1 - (n * m // 3) % n, m - 1 - m // 2)  # its own mirror
        assert compare(rev, copy, sizes={"N": n, "M": m}).same is False  # elsewhere it differs ...
        assert "re-checked by evaluating both modules" in r.reason  # ... but not at the witness
    assert "does not hold" in claim.prove_witnesses(witness, (N >= 2, M >= 2), 2000).reason


def test_side_condition_the_solver_does_not_prove_is_not_said_to_fail() -> None:
    """prove.query's reason for an unproved side condition. Old: '... does not hold'."""
    r = holds("N % M < M")
    assert r.status == "unknown"
    assert "a side condition it relied on" in r.reason and "could not be proved" in r.reason
    assert "does not hold" not in r.reason
    assert holds("N % M < M", assume="M >= 1").status == "proved"
