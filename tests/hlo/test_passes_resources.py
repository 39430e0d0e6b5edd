"""Pass validation in bounded resources: nothing grows with the number of paths through a DAG.

A backward pass shares sub-expressions everywhere: in a chain of diamonds (each instruction
used twice by the next) the number of paths from the root to the parameter doubles with every
link. Every structure pass validation and the rewrite verifier build must grow with the number
of instructions instead: the cone keys (hash-consed), the element values (each computed once) and
their comparison (each pair of nodes compared once). The checks count structure sizes and calls,
never seconds.
"""

from __future__ import annotations

import pytest

import layout_algebra.hlo.pass_cuts as pass_cuts
import layout_algebra.hlo.passes as passes
from layout_algebra.hlo import parse_module
from layout_algebra.hlo.evaluate_elementwise import ElementwiseOps
from layout_algebra.hlo.pass_cuts import ConeKeys
from layout_algebra.hlo.passes import validate_pair
from layout_algebra.hlo.verify import verify_rewrite

OPS = ("add", "multiply", "maximum", "subtract")


def diamonds(links: int, root: str = "negate", extra: str = "") -> str:
    """``a_k = op(a_{k-1}, a_{k-1})``: 2**links paths from the root down to the parameter."""
    lines = ["  p = f32[8]{0} parameter(0)", "  a0 = f32[8]{0} add(p, p)"]
    lines += [f"  a{k} = f32[8]{{0}} {OPS[k % 4]}(a{k - 1}, a{k - 1})" for k in range(1, links)]
    last = f"a{links - 1}"
    if extra:
        lines.append(f"  c = f32[8]{{0}} {extra}({last})")
        last = "c"
    return "HloModule m\nENTRY e {\n" + "\n".join(lines) + f"\n  ROOT r = f32[8]{{0}} {root}({last})\n}}\n"


class TooMuchWork(Exception):
    pass


def counted(monkeypatch: pytest.MonkeyPatch, owner: object, name: str, limit: int) -> list[int]:
    """Patch ``owner.name`` to count its calls and fail fast past ``limit`` (exponential work)."""
    calls = [0]
    original = getattr(owner, name)

    def wrapper(*args, **kwargs):
        calls[0] += 1
        if calls[0] > limit:
            raise TooMuchWork(f"{name} called more than {limit} times")
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, wrapper)
    return calls


def test_cone_keys_of_a_chain_of_diamonds_hold_one_small_entry_per_instruction() -> None:
    links = 200
    side = pass_cuts.Side.of(parse_module(diamonds(links)))
    keys = ConeKeys()
    root = pass_cuts.cone_key(side, side.root, {}, {}, keys)
    assert len(keys.ids) == links + 2  # p, a0..a{links-1}, r: one entry each
    assert max(len(repr(node)) for node in keys.ids) < 200  # none holds its cone's expansion
    # equal structure, equal id; shared with the other side of a pair
    other = pass_cuts.Side.of(parse_module(diamonds(links).replace("a1", "b1")))
    assert pass_cuts.cone_key(other, other.root, {}, {}, keys) == root
    assert len(keys.ids) == links + 2


def test_the_verifier_evaluates_each_instruction_of_a_diamond_chain_once(monkeypatch) -> None:
    links = 60
    calls = counted(monkeypatch, ElementwiseOps, "op_elementwise", limit=4 * links)
    before, after = diamonds(links), diamonds(links, extra="copy")
    assert verify_rewrite(before, after, mode="logical").status == "proved"
    assert calls[0] <= 2 * (links + 1)  # each side's adds and negate, once per element read


def test_comparing_diamond_values_compares_each_pair_of_nodes_once(monkeypatch) -> None:
    import layout_algebra.hlo.verify_values as values

    links = 60
    calls = counted(monkeypatch, values, "_differ_once", limit=50 * links)
    # physical mode: the same root buffer, reached through an inserted copy
    assert verify_rewrite(diamonds(links), diamonds(links, extra="copy")).status == "proved"
    assert calls[0] <= 4 * (links + 2)


@pytest.mark.parametrize("mode", ["logical", "physical"])
def test_a_pass_over_a_long_chain_of_diamonds_is_validated(mode: str) -> None:
    # 2**120 paths: any structure that grows with paths would never finish
    r = validate_pair(diamonds(120), diamonds(120, extra="copy"), mode=mode)
    assert r.status == "proved", r.reason


def test_a_pair_that_runs_out_of_memory_is_unknown_with_the_reason(monkeypatch) -> None:
    def exhausted(*args, **kwargs):
        raise MemoryError

    monkeypatch.setattr(passes, "_validate_modules", exhausted)
    r = validate_pair(diamonds(3), diamonds(3, extra="copy"), mode="logical")
    assert r.status == "unknown" and "ran out of memory" in r.reason
