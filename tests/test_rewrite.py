"""Rewrite verification of data-movement HLO: proofs, and refutations checked by evaluation."""

from __future__ import annotations

import itertools

import pytest

from layout_algebra import prove
from layout_algebra.layout_map import layout_map


def module(*lines: str) -> str:
    return "HloModule m\nENTRY e {\n" + "\n".join("  " + line for line in lines) + "\n}"


def test_reshape_to_bitcast_proved_where_the_tile_is_row_major_and_refuted_where_not() -> None:
    ok = module("p = f32[8,128]{1,0:T(8,128)} parameter(0)", "ROOT r = f32[1024]{0} reshape(p)")
    assert prove.rewrite(ok, ok.replace("reshape", "bitcast")).status == "proved"
    bad = module("p = f32[16,256]{1,0:T(8,128)} parameter(0)", "ROOT r = f32[4096]{0} reshape(p)")
    r = prove.rewrite(bad, bad.replace("reshape", "bitcast"))
    assert r.status == "refuted"
    # the counterexample element really reads different data: check with the layout maps
    (j,) = r.counterexample["element"]
    src = layout_map("f32[16,256]{1,0:T(8,128)}")
    assert src.forward((j // 256, j % 256)) != j  # reshape reads row-major element j, bitcast reads slot j


def test_transpose_rewrites() -> None:
    two = module(
        "p = f32[2,3,4]{2,1,0} parameter(0)",
        "a = f32[3,4,2]{2,1,0} transpose(p), dimensions={1,2,0}",
        "ROOT b = f32[4,2,3]{2,1,0} transpose(a), dimensions={1,2,0}",
    )
    one = module(
        "p = f32[2,3,4]{2,1,0} parameter(0)", "ROOT b = f32[4,2,3]{2,1,0} transpose(p), dimensions={2,0,1}"
    )
    assert prove.rewrite(two, one).status == "proved"
    wrong = one.replace("f32[4,2,3]{2,1,0} transpose(p), dimensions={2,0,1}", "f32[4,2,3]{2,1,0} bitcast(p)")
    assert prove.rewrite(two, wrong).status == "refuted"


def test_slice_pad_concatenate_broadcast() -> None:
    sliced = module(
        "p = f32[6,5]{1,0} parameter(0)",
        "a = f32[3,5]{1,0} slice(p), slice={[0:3], [0:5]}",
        "b = f32[3,5]{1,0} slice(p), slice={[3:6], [0:5]}",
        "ROOT c = f32[6,5]{1,0} concatenate(a, b), dimensions={0}",
    )
    identity = module("p = f32[6,5]{1,0} parameter(0)", "ROOT c = f32[6,5]{1,0} copy(p)")
    assert prove.rewrite(sliced, identity).status == "proved"
    swapped = sliced.replace("concatenate(a, b)", "concatenate(b, a)")
    r = prove.rewrite(swapped, identity)
    assert r.status == "refuted" and r.counterexample["element"][0] in range(6)
    padded = module(
        "p = f32[3,5]{1,0} parameter(0)",
        "z = f32[] constant(0)",
        "q = f32[4,6]{1,0:T(2,2)} pad(p, z), padding=0_1x0_1",
        "ROOT s = f32[3,5]{1,0} slice(q), slice={[0:3], [0:5]}",
    )
    assert (
        prove.rewrite(
            padded, module("p = f32[3,5]{1,0} parameter(0)", "ROOT s = f32[3,5]{1,0} copy(p)")
        ).status
        == "proved"
    )
    bcast = module("p = f32[5]{0} parameter(0)", "ROOT b = f32[3,5]{1,0} broadcast(p), dimensions={1}")
    assert prove.rewrite(bcast, bcast).status == "proved"
    assert (
        prove.rewrite(
            bcast, bcast.replace("dimensions={1}", "dimensions={1}").replace("f32[3,5]{1,0}", "f32[3,5]{0,1}")
        ).status
        == "refuted"
    )


def test_symbolic_rewrite_for_every_n() -> None:
    before = module(
        "p = f32[N,M]{1,0:T(8,128)} parameter(0)",
        "ROOT t = f32[M,N]{0,1:T(8,128)} transpose(p), dimensions={1,0}",
    )
    assert (
        prove.rewrite(before, before.replace("transpose(p), dimensions={1,0}", "bitcast(p)")).status
        == "proved"
    )


@pytest.mark.parametrize(
    ("multiple", "status"), [(8, "proved"), (16, "proved"), (4, "refuted"), (1, "refuted")]
)
def test_symbolic_bf16_reshape_to_bitcast_needs_whole_tiles(multiple, status) -> None:
    before = module(
        "p = bf16[3,N,300]{2,1,0:T(8,128)(2,1)} parameter(0)",
        "ROOT r = bf16[M,300]{1,0:T(8,128)(2,1)} reshape(p)",
    )
    after = before.replace("reshape(p)", "bitcast(p)")
    r = prove.rewrite(before, after, assume=f"M == 3*N and N % {multiple} == 0")
    assert r.status == status
    if status == "refuted":  # the sizes and element are re-checked on the concrete modules
        sizes = r.counterexample["sizes"]
        assert sizes["N"] % multiple == 0 and sizes["M"] == 3 * sizes["N"] and sizes["N"] % 8
        concrete = module(
            f"p = bf16[3,{sizes['N']},300]{{2,1,0:T(8,128)(2,1)}} parameter(0)",
            f"ROOT r = bf16[{sizes['M']},300]{{1,0:T(8,128)(2,1)}} reshape(p)",
        )
        assert prove.rewrite(concrete, concrete.replace("reshape(p)", "bitcast(p)")).status == "refuted"


def test_exhaustive_agreement_on_small_transposes() -> None:
    """Every transpose of f32[2,3]{1,0} rewritten to a bitcast: proved exactly when the layouts say so."""
    for perm in itertools.permutations(range(2)):
        for m2m in ((1, 0), (0, 1)):
            dims = [[2, 3][p] for p in perm]
            dst = f"f32[{dims[0]},{dims[1]}]{{{m2m[0]},{m2m[1]}}}"
            before = module(
                "p = f32[2,3]{1,0} parameter(0)",
                f"ROOT t = {dst} transpose(p), dimensions={{{perm[0]},{perm[1]}}}",
            )
            after = module("p = f32[2,3]{1,0} parameter(0)", f"ROOT t = {dst} bitcast(p)")
            src, out = layout_map("f32[2,3]{1,0}"), layout_map(dst)
            truth = all(
                out.forward(j) == src.forward(tuple(j[perm.index(k)] for k in range(2)))
                for j in out.elements()
            )
            assert prove.rewrite(before, after).status == ("proved" if truth else "refuted")


@pytest.mark.parametrize(
    ("before", "after", "message"),
    [
        (
            module("p = f32[4]{0} parameter(0)", "ROOT r = f32[4]{0} negate(p)"),
            module("p = f32[4]{0} parameter(0)", "ROOT r = f32[4]{0} copy(p)"),
            "negate",
        ),
        (
            module("p = f32[4]{0} parameter(0)", "ROOT r = f32[4]{0} copy(p)"),
            module("p = f32[5]{0} parameter(0)", "ROOT r = f32[4]{0} slice(p), slice={[0:4]}"),
            "different parameters",
        ),
    ],
)
def test_bad_rewrites_are_clear_errors(before, after, message) -> None:
    with pytest.raises(ValueError, match=message):
        prove.rewrite(before, after)
