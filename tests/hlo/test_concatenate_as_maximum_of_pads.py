"""A ``concatenate`` written as the ``maximum`` of ``-inf`` pads (XLA:TPU's concat-decomposer).

``maximum(x, -inf) == x`` for every float, NaN and -0 included (the ``exact-ops`` rule), and the
pads hold data in disjoint ranges, so each element of the maximum is one piece's element. The
verifier splits the cases of the pads' conditions and drops the impossible combinations; with
five or six pieces the combinations run into the thousands while the possible ones stay few.

Oracle: the NumPy executor runs both modules on random data; every verdict must agree with it,
on random piece widths and on mutants (a shifted pad, ``+inf`` padding, ``minimum``).
"""

from __future__ import annotations

import random

import pytest

from layout_algebra.hlo.execute_compare import compare
from layout_algebra.hlo.passes import validate_pair


def concatenated(widths: list[int]) -> str:
    total = sum(widths)
    params = "\n".join(f"  p{k} = f32[4,{w}]{{1,0}} parameter({k})" for k, w in enumerate(widths))
    names = ", ".join(f"p{k}" for k in range(len(widths)))
    return f"""HloModule m
ENTRY e {{
{params}
  ROOT c = f32[4,{total}]{{1,0}} concatenate({names}), dimensions={{1}}
}}"""


def decomposed(widths: list[int], shift: int | None = None, fill: str = "-inf", op: str = "maximum") -> str:
    """The concatenation as ``op`` of pads; ``shift``: the piece whose pad is moved by one."""
    total = sum(widths)
    lines = [f"  p{k} = f32[4,{w}]{{1,0}} parameter({k})" for k, w in enumerate(widths)]
    lines.append(f"  fill = f32[] constant({fill})")
    start = 0
    for k, w in enumerate(widths):
        low = start + (1 if k == shift and start + w < total else -1 if k == shift else 0)
        lines.append(f"  q{k} = f32[4,{total}]{{1,0}} pad(p{k}, fill), padding=0_0x{low}_{total - w - low}")
        start += w
    acc = "q0"
    for k in range(1, len(widths)):
        lines.append(f"  m{k} = f32[4,{total}]{{1,0}} {op}({acc}, q{k})")
        acc = f"m{k}"
    lines[-1] = lines[-1].replace(f"  m{len(widths) - 1} =", "  ROOT r =")
    return "HloModule m\nENTRY e {\n" + "\n".join(lines) + "\n}"


def test_six_pieces_are_proved_under_the_exact_ops_rule() -> None:
    widths = [3, 1, 4, 1, 5, 2]
    r = validate_pair(concatenated(widths), decomposed(widths), mode="logical")
    assert r.status == "proved", r.reason
    assert "exact-ops" in r.assumptions


@pytest.mark.parametrize("seed", range(40))
def test_decomposed_concatenations_agree_with_the_executor(seed: int) -> None:
    rng = random.Random(seed)
    widths = [rng.randint(1, 5) for _ in range(rng.randint(2, 6))]
    kind = rng.choice(["same", "shift", "fill", "op"])
    later = {
        "same": lambda: decomposed(widths),
        "shift": lambda: decomposed(widths, shift=rng.randrange(len(widths))),
        "fill": lambda: decomposed(widths, fill="inf"),
        "op": lambda: decomposed(widths, op="minimum"),
    }[kind]()
    earlier = concatenated(widths)
    verdict = validate_pair(earlier, later, mode="logical").status
    same = compare(earlier, later, mode="logical", trials=3).same
    assert verdict != "unknown" or kind == "op", (kind, widths)
    if verdict == "proved":
        assert same is True, (kind, widths)
    if same is False:
        assert verdict != "proved"
    if kind == "same":
        assert verdict == "proved"


# An integer concatenate is the sum of zero pads (x + 0 == x exactly, wrap-around or not), or
# any other op with its identity as the padding value.
INTEGER_IDENTITIES = {
    ("add", "s32"): "0",
    ("or", "u8"): "0",
    ("xor", "s8"): "0",
    ("maximum", "s8"): "-128",
    ("minimum", "u8"): "255",
    ("and", "s32"): "-1",
    ("multiply", "s32"): "1",
}


@pytest.mark.parametrize("seed", range(40))
def test_integer_decompositions_agree_with_the_executor(seed: int) -> None:
    rng = random.Random(1000 + seed)
    widths = [rng.randint(1, 4) for _ in range(rng.randint(2, 5))]
    (op, etype), fill = rng.choice(sorted(INTEGER_IDENTITIES.items()))
    kind = rng.choice(["same", "same", "shift", "fill"])
    if kind == "fill":  # a padding value that is not the op's identity
        fill = {"0": "1", "-128": "-127", "255": "254", "-1": "-2", "1": "2"}[fill]
    shift = rng.randrange(len(widths)) if kind == "shift" else None
    earlier = concatenated(widths).replace("f32", etype)
    later = decomposed(widths, shift=shift, fill=fill, op=op).replace("f32", etype)
    verdict = validate_pair(earlier, later, mode="logical").status
    same = compare(earlier, later, mode="logical", trials=3).same
    case = (op, etype, kind, widths, verdict, same)
    if verdict == "proved":
        assert same is True, case
    if same is False:  # a real difference is found and confirmed
        assert verdict == "refuted", case
    if kind == "same":
        assert verdict == "proved", case
    # (``x ^ 1 ^ 1 == x``: a non-identity padding may still cancel out, which the verifier,
    # reading xor as an uninterpreted function, leaves unknown)
