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
