"""Refutations behind cut points: when the verifier's difference reaches the root only through
a cut compute op, pass validation runs both whole modules with the executor's real ops."""

from __future__ import annotations

import re

from layout_algebra.hlo.passes import validate_pair

U8_SCALED_DOT = """HloModule m
ENTRY e {
  x = u8[4,16]{1,0} parameter(0)
  f = f32[4,16]{1,0} convert(x)
  c = f32[] constant(255)
  b = f32[4,16]{1,0} broadcast(c), dimensions={}
  d = f32[4,16]{1,0} divide(f, b)
  w = f32[16,8]{1,0} parameter(1)
  ROOT r = f32[4,8]{1,0} dot(d, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}"""
#: what the algebraic simplifier writes: x * (1/255), which rounds differently for 126 of 256 bytes
U8_RECIPROCAL_DOT = U8_SCALED_DOT.replace("constant(255)", "constant(0.00392156886)").replace(
    "divide(f, b)", "multiply(f, b)"
)


def test_a_difference_before_a_dot_is_refuted_by_running_the_whole_modules() -> None:
    r = validate_pair(U8_SCALED_DOT, U8_RECIPROCAL_DOT, mode="logical")
    assert r.status == "refuted"
    cex = r.counterexample
    assert cex is not None and "whole modules run by the executor" in cex["execution"]
    # both values (each module's under float64 and under f32 accumulation), and none meet
    before = {float(v) for v in cex["before"].split(" or ")}
    after = {float(v) for v in cex["after"].split(" or ")}
    assert before and after and not before & after
    assert re.search(r"root element \(\d+, \d+\): before ", cex["execution"])
    assert cex["element"] == tuple(cex["element"]) and cex["trial"] >= 1


def test_the_same_program_is_not_refuted() -> None:
    r = validate_pair(U8_SCALED_DOT, U8_SCALED_DOT.replace("ENTRY e", "ENTRY e2"), mode="logical")
    assert r.status != "refuted"


ZEROED_ROW = """HloModule m
ENTRY e {
  x = s32[4]{0} parameter(0)
  w = s32[4,2]{1,0} constant({ {1, 2}, {3, 4}, {5, 6}, {0, 0} })
  ROOT r = s32[2]{0} dot(x, w), lhs_contracting_dims={0}, rhs_contracting_dims={0}
}"""
#: the dot's operand differs (element 3 is zeroed), but the row it meets in w is zero
ZEROED_ROW_AFTER = ZEROED_ROW.replace(
    "  w = s32[4,2]{1,0} constant",
    "  s = s32[3]{0} slice(x), slice={[0:3]}\n  z = s32[1]{0} constant({0})\n"
    "  y = s32[4]{0} concatenate(s, z), dimensions={0}\n  w = s32[4,2]{1,0} constant",
).replace("dot(x, w)", "dot(y, w)")


def test_an_operand_difference_that_never_reaches_the_root_stays_unknown() -> None:
    r = validate_pair(ZEROED_ROW, ZEROED_ROW_AFTER, mode="logical")
    assert r.status == "unknown"
    assert "running both whole modules with the real ops" in r.reason and "shows no difference" in r.reason
