"""``and``/``or``/``xor``/``not`` of index conditions: the verifier reads them as the connective,
so a pad rewritten as a ``select`` on an ``iota`` mask (XLA:TPU's pad-slice mover) is decided.

Oracle: the NumPy executor runs both modules on random data; the verifier's verdict must agree
with it on random masks (directions, bounds, connectives), equivalent ones included.
"""

from __future__ import annotations

import random

import pytest

from layout_algebra.hlo.execute_compare import compare
from layout_algebra.hlo.passes import validate_pair

PAD = """HloModule m
ENTRY e {
  p = f32[4,16]{1,0} parameter(0)
  c = f32[] constant(-inf)
  ROOT q = f32[4,32]{1,0} pad(p, c), padding=0_0x8_8
}"""


def masked(low: int, high: int, first: str, second: str, connective: str, negate: bool) -> str:
    """The pad as ``select(mask, pad, -inf)``, the mask ``connective(iota first low, iota second high)``."""
    mask = f"  n = pred[4,32]{{1,0}} {connective}(g, l)"
    if negate:
        mask = f"  n0 = pred[4,32]{{1,0}} {connective}(g, l)\n  n = pred[4,32]{{1,0}} not(n0)"
    return f"""HloModule m
ENTRY e {{
  p = f32[4,16]{{1,0}} parameter(0)
  c = f32[] constant(-inf)
  i = s32[4,32]{{1,0}} iota(), iota_dimension=1
  k0 = s32[] constant({low})
  b0 = s32[4,32]{{1,0}} broadcast(k0), dimensions={{}}
  k1 = s32[] constant({high})
  b1 = s32[4,32]{{1,0}} broadcast(k1), dimensions={{}}
  g = pred[4,32]{{1,0}} compare(i, b0), direction={first}
  l = pred[4,32]{{1,0}} compare(i, b1), direction={second}
{mask}
  q0 = f32[4,32]{{1,0}} pad(p, c), padding=0_0x8_8
  f = f32[4,32]{{1,0}} broadcast(c), dimensions={{}}
  ROOT q = f32[4,32]{{1,0}} select(n, q0, f)
}}"""


def test_the_pad_slice_movers_mask_is_proved() -> None:
    r = validate_pair(PAD, masked(8, 24, "GE", "LT", "and", False), mode="logical")
    assert r.status == "proved", r.reason


@pytest.mark.parametrize("seed", range(60))
def test_masked_pads_agree_with_the_executor(seed: int) -> None:
    rng = random.Random(seed)
    directions = ["GE", "GT", "LE", "LT", "EQ", "NE"]
    case = masked(
        rng.randint(0, 32),
        rng.randint(0, 32),
        rng.choice(directions),
        rng.choice(directions),
        rng.choice(["and", "or", "xor"]),
        rng.random() < 0.3,
    )
    verdict = validate_pair(PAD, case, mode="logical").status
    same = compare(PAD, case, mode="logical", trials=3).same
    assert verdict != "unknown"
    assert (verdict == "proved") == (same is True), (verdict, same, case)
