"""A pair's cost follows what the pass changed: the verifier sees the changed region only, and still
finds a change deep inside a big module.

The modules are a residual network of ``BLOCKS`` blocks (``x' = x + 0.5 * rowsum(tanh(x))``: five
instructions each, about 2,000 in all). A *rewrite* changes one block near the parameters
(far from the root) without changing its meaning; a *mutant* changes its meaning there. The
oracle that a mutant really computes something else is the NumPy executor, run on both modules.
"""

from __future__ import annotations

import numpy as np
import pytest

import layout_algebra.hlo.pass_diff as pass_diff
from layout_algebra.hlo import parse_module
from layout_algebra.hlo.pass_cuts import Cuts, Side
from layout_algebra.hlo.pass_diff import changed_region
from layout_algebra.hlo.passes import validate_pair

BLOCKS = 400
SUM = "sum {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}"
DEEP = 3  # the block a rewrite or a mutant changes: three blocks above the parameters


def block(k: int, tanh: str | None = None, update: str = "add", scale: str = "half") -> list[str]:
    t = tanh or f"  t{k} = f32[8,8]{{1,0}} tanh(x{k})"
    return [
        t,
        f"  d{k} = f32[8]{{0}} reduce(t{k}, z), dimensions={{1}}, to_apply=sum",
        f"  b{k} = f32[8,8]{{1,0}} broadcast(d{k}), dimensions={{0}}",
        f"  s{k} = f32[8,8]{{1,0}} multiply(b{k}, {scale})",
        f"  x{k + 1} = f32[8,8]{{1,0}} {update}(s{k}, x{k})",
    ]


def network(changed: dict[str, str] | None = None, extra: list[str] | None = None) -> str:
    """The module; ``changed`` replaces block DEEP's keyword arguments, ``extra`` adds lines before it."""
    lines = [
        "  x0 = f32[8,8]{1,0} parameter(0)",
        "  z = f32[] constant(0)",
        "  c = f32[] constant(0.5)",
        "  half = f32[8,8]{1,0} broadcast(c), dimensions={}",
    ]
    for k in range(BLOCKS):
        if k == DEEP:
            lines += extra or []
        lines += block(k, **(changed or {})) if k == DEEP else block(k)
    lines.append(f"  ROOT r = f32[8,8]{{1,0}} negate(x{BLOCKS})")
    layout = "entry_computation_layout={(f32[8,8]{1,0})->f32[8,8]{1,0}}"
    body = "\n".join(lines)
    return f"HloModule net, {layout}\n{SUM}\nENTRY e {{\n{body}\n}}\n"


# tanh through a reshape round trip: the same values (what a reshape-moving pass writes)
ROUND_TRIP = {"tanh": f"  t{DEEP} = f32[8,8]{{1,0}} reshape(tf)"}
ROUND_TRIP_LINES = [
    f"  xf = f32[64]{{0}} reshape(x{DEEP})",
    "  tf = f32[64]{0} tanh(xf)",
]

MUTANTS = {
    "the update subtracts": ({"update": "subtract"}, None),
    "the scale is the row sums": ({"scale": f"b{DEEP}"}, None),
    "tanh becomes exponential": ({"tanh": f"  t{DEEP} = f32[8,8]{{1,0}} exponential(x{DEEP})"}, None),
    "the round trip transposes": (
        {"tanh": f"  t{DEEP} = f32[8,8]{{1,0}} transpose(tr), dimensions={{1,0}}"},
        [*ROUND_TRIP_LINES, "  tr = f32[8,8]{1,0} reshape(tf)"],
    ),
}


def meaning(x: np.ndarray, mutant: str | None = None) -> np.ndarray:
    """What the network (with ``mutant`` in block DEEP) computes from ``x0 = x``, in NumPy."""
    for k in range(BLOCKS):
        m = mutant if k == DEEP else None
        t = np.exp(x) if m == "tanh becomes exponential" else np.tanh(x)
        if m == "the round trip transposes":
            t = t.T
        b = np.broadcast_to(t.sum(axis=1)[:, None], (8, 8))
        s = b * (b if m == "the scale is the row sums" else np.float32(0.5))
        x = s - x if m == "the update subtracts" else s + x
    return -x


def test_the_network_has_about_two_thousand_instructions() -> None:
    assert 1_900 <= len(parse_module(network()).entry.instructions) <= 2_100


def recorded_region_sizes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The number of non-parameter instructions of each module the changed-region query verifies."""
    sizes: list[int] = []
    original = pass_diff.verify_rewrite

    def recording(before, after, **kwargs):
        sizes.extend(sum(i.opcode != "parameter" for i in m.entry.instructions) for m in (before, after))
        return original(before, after, **kwargs)

    monkeypatch.setattr(pass_diff, "verify_rewrite", recording)
    return sizes


@pytest.mark.parametrize("mode", ["logical", "physical"])
def test_a_rewrite_deep_in_a_big_module_is_proved_on_its_changed_region(monkeypatch, mode: str) -> None:
    sizes = recorded_region_sizes(monkeypatch)
    r = validate_pair(network(), network(ROUND_TRIP, ROUND_TRIP_LINES), mode=mode)
    assert r.status == "proved", r.reason
    # every query was about the rewritten block, not the 2,000 instructions around it
    assert sizes and max(sizes) <= 12, sizes


@pytest.mark.parametrize("mutant", sorted(MUTANTS))
def test_a_mutant_deep_in_a_big_module_is_not_proved(mutant: str) -> None:
    changed, extra = MUTANTS[mutant]
    before, after = network(), network(changed, extra)
    # the oracle: the network's meaning in NumPy (the executor does not run reduce) differs
    x = np.random.default_rng(0).uniform(-1, 1, (8, 8)).astype(np.float32)
    assert not np.allclose(meaning(x), meaning(x, mutant))
    for mode in ("logical", "physical"):
        r = validate_pair(before, after, mode=mode)
        assert r.status != "proved", (mode, r.reason)


def test_the_boundaries_of_a_change_are_the_topmost_common_nodes() -> None:
    a = Side.of(parse_module(network()))
    b = Side.of(parse_module(network(ROUND_TRIP, ROUND_TRIP_LINES)))
    # the tanh's operand is the boundary below the rewrite: x3 (whole cones, no cuts yet)
    assert changed_region(Cuts(a, b), f"t{DEEP}", f"t{DEEP}") == [(f"x{DEEP}", f"x{DEEP}")]
    # equal cones: nothing changed, no boundary
    assert changed_region(Cuts(a, b), f"x{DEEP}", f"x{DEEP}") == []


def test_a_value_held_twice_is_no_boundary() -> None:
    # two equal constants: cutting one would forget that it equals the other
    head = "HloModule m\nENTRY e {\n  p = f32[4]{0} parameter(0)\n"
    twice = "  c1 = f32[4]{0} constant({1, 2, 3, 4})\n  c2 = f32[4]{0} constant({1, 2, 3, 4})\n"
    before = head + twice + "  m = f32[4]{0} multiply(p, c1)\n  ROOT s = f32[4]{0} subtract(m, c2)\n}"
    after = (
        head
        + twice
        + "  q = f32[4]{0} copy(p)\n  m = f32[4]{0} multiply(q, c1)\n  ROOT s = f32[4]{0} subtract(m, c2)\n}"
    )
    a, b = Side.of(parse_module(before)), Side.of(parse_module(after))
    assert changed_region(Cuts(a, b), "s", "s") == [("p", "p")]
    assert validate_pair(before, after, mode="logical").status == "proved"


def test_a_region_the_verifier_cannot_prove_falls_back_to_the_whole_cones(monkeypatch) -> None:
    calls: list[str] = []
    original = pass_diff.decide_equal

    def whole(*args, **kwargs):
        calls.append("whole")
        return original(*args, **kwargs)

    class Refuting:
        status = "refuted"

    monkeypatch.setattr(pass_diff, "verify_rewrite", lambda *args, **kwargs: Refuting())
    monkeypatch.setattr(pass_diff, "decide_equal", whole)
    r = validate_pair(network(), network(ROUND_TRIP, ROUND_TRIP_LINES), mode="logical")
    assert r.status == "proved" and calls, r.reason


SORT_LT = "lt {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT c = pred[] compare(a, b), direction=LT\n}\n"


def sorted_then_bitcast(layout: str) -> str:
    return (
        "HloModule m, entry_computation_layout={(f32[4,8]{1,0})->f32[32]{0}}\n" + SORT_LT + "ENTRY e {\n"
        "  p = f32[4,8]{1,0} parameter(0)\n  n = f32[4,8]{1,0} negate(p)\n"
        f"  s = f32[4,8]{layout} sort(n), dimensions={{1}}, to_apply=lt\n  ROOT r = f32[32]{{0}} bitcast(s)\n}}\n"
    )


def test_a_cut_point_whose_layout_changed_is_not_equal_by_structure() -> None:
    # the pass changes the sort's layout: paired as the same logical array (one cut point), but the
    # bitcast above it reads its bytes, which are in another order
    row_major = np.arange(32).reshape(4, 8)
    assert not np.array_equal(row_major.ravel(order="C"), row_major.ravel(order="F"))
    r = validate_pair(sorted_then_bitcast("{1,0}"), sorted_then_bitcast("{0,1}"), mode="physical")
    assert r.status != "proved", r.reason
    # the same layout on both sides is the same program
    same = validate_pair(sorted_then_bitcast("{0,1}"), sorted_then_bitcast("{0,1}"), mode="physical")
    assert same.status == "proved"
