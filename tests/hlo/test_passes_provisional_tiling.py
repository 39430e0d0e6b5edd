"""XLA:TPU's provisional sub-byte tiling in pass validation: a re-tiled entry parameter is never a
silent physical proof.

From layout assignment until ``post-fusion-tiling-assignment`` XLA:TPU keeps the tiling of 8-bit
and narrower arrays provisional (``s4 T(8,128)(8,1)E(4)``), while the entry computation layout
already holds the final one (``T(64,128)(8,1)E(4)``); that pass then re-tiles the parameters. Such
a pair is proved only under the named assumption, listed on the result, and only where no bitcast
reads the provisional tiling; any other parameter change is a changed interface (unknown).
"""

from __future__ import annotations

from layout_algebra.hlo.passes import ASSUMPTIONS, PROVISIONAL_TILING, validate_pair

ENTRY_LAYOUT = (
    "entry_computation_layout={(s4[64,128]{1,0:T(64,128)(8,1)E(4)}, bf16[128,128]{1,0:T(8,128)(2,1)})"
    "->bf16[64,128]{1,0:T(8,128)(2,1)}}"
)


def int4_matmul(weight_tiling: str, body: str = "") -> str:
    """An int4 weight-only matmul, its weight parameter tiled ``weight_tiling``."""
    return f"""HloModule int4_matmul, {ENTRY_LAYOUT}
ENTRY main {{
  w = s4[64,128]{{1,0:{weight_tiling}E(4)}} parameter(0)
  x = bf16[128,128]{{1,0:T(8,128)(2,1)}} parameter(1){body}
  c = bf16[64,128]{{1,0:T(8,128)(2,1)}} convert(w)
  ROOT d = bf16[64,128]{{1,0:T(8,128)(2,1)}} dot(c, x), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
}}
"""


PROVISIONAL = int4_matmul("T(8,128)(8,1)")  # what layout assignment leaves
FINAL = int4_matmul("T(64,128)(8,1)")  # what post-fusion-tiling-assignment writes


def test_finalizing_a_provisional_tiling_is_proved_only_under_the_named_assumption() -> None:
    r = validate_pair(PROVISIONAL, FINAL, mode="physical")
    assert r.status == "proved", r.reason
    assert PROVISIONAL_TILING in r.assumptions
    assert "provisional" in ASSUMPTIONS[PROVISIONAL_TILING]


def test_a_tiling_other_than_the_entry_computation_layouts_is_a_changed_interface() -> None:
    other = int4_matmul("T(16,128)(8,1)")
    r = validate_pair(PROVISIONAL, other, mode="physical")
    assert r.status == "unknown" and "parameter 0" in r.reason and "interface" in r.reason
    # and undoing the final tiling is no finalization either
    assert validate_pair(FINAL, PROVISIONAL, mode="physical").status == "unknown"


def test_a_re_tiled_wide_parameter_is_a_changed_interface() -> None:
    wide = PROVISIONAL.replace(
        "bf16[128,128]{1,0:T(8,128)(2,1)} parameter(1)", "bf16[128,128]{1,0:T(8,128)} parameter(1)"
    )
    r = validate_pair(PROVISIONAL, wide, mode="physical")
    assert r.status == "unknown" and "parameter 1" in r.reason


def test_a_bitcast_reading_the_provisional_tiling_blocks_the_proof() -> None:
    read = "\n  b = s4[8192]{0:E(4)} bitcast(w)"
    r = validate_pair(
        int4_matmul("T(8,128)(8,1)", read), int4_matmul("T(64,128)(8,1)", read), mode="physical"
    )
    assert r.status != "proved" and PROVISIONAL_TILING not in r.assumptions


def test_a_real_change_under_the_re_tiling_is_not_proved() -> None:
    changed = FINAL.replace("convert(w)", "negate(convert(w))").replace(
        "  c = bf16[64,128]{1,0:T(8,128)(2,1)} negate(convert(w))",
        "  v = bf16[64,128]{1,0:T(8,128)(2,1)} convert(w)\n  c = bf16[64,128]{1,0:T(8,128)(2,1)} negate(v)",
    )
    assert validate_pair(PROVISIONAL, changed, mode="physical").status != "proved"


def test_logical_mode_needs_no_assumption() -> None:
    r = validate_pair(PROVISIONAL, FINAL, mode="logical")
    assert r.status == "proved" and PROVISIONAL_TILING not in r.assumptions


# ------------------------------------------------------------------ provisional roots and bitcasts
def fp8_program(root_tiling: str, body: str = "  n = f8e5m2[64,128]{1,0:T(8,128)(4,1)} negate(p)\n") -> str:
    """A program whose f8 root is still provisionally tiled ``root_tiling`` (the entry computation
    layout declares ``T(32,128)(4,1)``), as XLA:TPU leaves it until post-fusion-tiling-assignment."""
    layout = (
        "entry_computation_layout={(f8e5m2[64,128]{1,0:T(8,128)(4,1)})->f8e5m2[64,128]{1,0:T(32,128)(4,1)}}"
    )
    return f"""HloModule fp8, {layout}
ENTRY main {{
  p = f8e5m2[64,128]{{1,0:T(8,128)(4,1)}} parameter(0)
{body}  ROOT r = f8e5m2[64,128]{{1,0:{root_tiling}(4,1)}} copy(n)
}}
"""


def test_a_provisionally_tiled_root_is_compared_under_the_named_assumption() -> None:
    earlier = fp8_program("T(8,128)")
    later = fp8_program(
        "T(8,128)",
        "  c = f8e5m2[64,128]{1,0:T(8,128)(4,1)} copy(p)\n  n = f8e5m2[64,128]{1,0:T(8,128)(4,1)} negate(c)\n",
    )
    r = validate_pair(earlier, later, mode="physical")
    assert r.status == "proved", r.reason
    assert PROVISIONAL_TILING in r.assumptions
    # and the pass that finalizes the root's tiling is the same program too
    final = validate_pair(earlier, fp8_program("T(32,128)"), mode="physical")
    assert final.status == "proved" and PROVISIONAL_TILING in final.assumptions


def test_a_real_change_under_a_provisional_root_is_not_proved() -> None:
    changed = fp8_program("T(8,128)", "  n = f8e5m2[64,128]{1,0:T(8,128)(4,1)} abs(p)\n")
    assert validate_pair(fp8_program("T(8,128)"), changed, mode="physical").status != "proved"


def test_a_root_that_differs_in_more_than_its_tiling_is_a_changed_interface() -> None:
    other = fp8_program("T(8,128)").replace("ROOT r = f8e5m2[64,128]{1,0:", "ROOT r = f8e5m2[64,128]{0,1:")
    r = validate_pair(fp8_program("T(8,128)"), other, mode="physical")
    assert r.status == "unknown" and "not the entry computation layout's result" in r.reason


def test_a_bitcast_writing_a_narrow_result_blocks_a_provisional_root() -> None:
    body = (
        "  b = f8e5m2[8,1024]{1,0:T(8,128)(4,1)} bitcast(p)\n"
        "  n = f8e5m2[64,128]{1,0:T(8,128)(4,1)} bitcast(b)\n"
    )
    r = validate_pair(fp8_program("T(8,128)"), fp8_program("T(8,128)", body), mode="physical")
    assert r.status != "proved" and PROVISIONAL_TILING not in r.assumptions


def test_an_identity_bitcast_of_a_provisional_parameter_reads_no_tiling() -> None:
    read = "\n  b = s4[64,128]{1,0:T(8,128)(8,1)E(4)} bitcast(w)"
    r = validate_pair(int4_matmul("T(8,128)(8,1)", read), FINAL, mode="physical")
    assert r.status == "proved", r.reason
    assert PROVISIONAL_TILING in r.assumptions


def retiled_read(dims: str) -> tuple[str, str]:
    """A u8 parameter finalized from ``T(8,128)(4,1)`` to ``T(32,128)(4,1)``, the later module
    reading it back through a bitcast to the provisional tiling (as XLA:TPU writes it)."""
    layout = f"entry_computation_layout={{(u8[{dims}]{{1,0:T(32,128)(4,1)}})->f32[{dims}]{{1,0}}}}"
    earlier = f"""HloModule u8, {layout}
ENTRY main {{
  p = u8[{dims}]{{1,0:T(8,128)(4,1)}} parameter(0)
  ROOT f = f32[{dims}]{{1,0}} convert(p)
}}
"""
    later = f"""HloModule u8, {layout}
ENTRY main {{
  p = u8[{dims}]{{1,0:T(32,128)(4,1)}} parameter(0)
  b = u8[{dims}]{{1,0:T(8,128)(4,1)}} bitcast(p)
  ROOT f = f32[{dims}]{{1,0}} convert(b)
}}
"""
    return earlier, later


def test_a_bitcast_of_a_finalized_parameter_is_proved_exactly_when_the_bytes_agree() -> None:
    """With one column of tiles the 4-row groups of T(8,128)(4,1) and T(32,128)(4,1) lie in the
    same order, so the bitcast reads every element where it is; with two columns they do not.
    The executor (real bytes) is the oracle for the second."""
    from layout_algebra.hlo.execute_compare import compare

    earlier, later = retiled_read("64,128")
    r = validate_pair(earlier, later, mode="physical")
    assert r.status == "proved", r.reason
    assert PROVISIONAL_TILING in r.assumptions
    earlier, later = retiled_read("64,256")
    r = validate_pair(earlier, later, mode="physical")
    assert r.status != "proved"
    final = earlier.replace("T(8,128)(4,1)} parameter", "T(32,128)(4,1)} parameter")
    assert compare(final, later, mode="logical").same is False
