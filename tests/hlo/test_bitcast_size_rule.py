"""XLA's bitcast rule: a bitcast keeps its shape size, or the module is invalid HLO.

XLA's layout-sensitive verifier (``ShapeVerifier::HandleBitcast``) requires a bitcast's
operand and result to have the same size under the backend's size function; on TPU that is
``ShapeUtil::ArraySize`` (first-tile padding, ``L(n)``). The rewrite verifier and the NumPy
executor both refuse a size-changing bitcast (``hlo.validity``); before, they read the
bytes past the operand as undefined elements, and the verifier proved a ``copy`` of
``f32[N,128]{1,0:T(8,128)}`` into ``f32[N,128]{1,0}`` rewritable into a ``bitcast`` for
every N. The oracle here is independent of the rule's code: ``layout_algebra.xla.array_size``
(XLA's ``ArraySize``, its own implementation) and the byte count of ``numpy_eval.pack``.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st
from support.ground_truth import GROUND_TRUTH
from support.hlo_text import hlo_module
from support.strategies_maps import small_layout_shapes

from layout_algebra import condition_of, layout_map, parse_shape
from layout_algebra.hlo import InvalidHlo, parse_module, verify_rewrite
from layout_algebra.hlo.execute import run
from layout_algebra.hlo.execute_compare import compare
from layout_algebra.hlo.rewrite_conditions import when_rewrite_is_safe
from layout_algebra.packing.numpy_eval import pack
from layout_algebra.xla import array_size

PASS_DUMPS = GROUND_TRUTH.parent / "pass_dumps"


def bitcast_module(source: str, result: str) -> str:
    return hlo_module(f"p = {source} parameter(0)", f"ROOT b = {result} bitcast(p)")


def logical_input(shape: str, seed: int = 0) -> np.ndarray:
    """Random logical values for ``shape`` (small integers fit every type used here)."""
    from layout_algebra.packing.formats import numpy_dtype

    s = parse_shape(shape)
    values = np.random.default_rng(seed).integers(0, 2, tuple(s.dimensions))
    return values.astype(numpy_dtype(s.element_type))


def sizes_in(message: str) -> dict[str, int]:
    found = re.search(r" at ((?:\w+=\d+(?:, )?)+) \(sizes the assumptions allow\)", message)
    assert found is not None, message
    return {k: int(v) for k, v in (pair.split("=") for pair in found.group(1).split(", "))}


def specialized(text: str, sizes: dict[str, int]) -> str:
    for name, value in sizes.items():
        text = re.sub(rf"\b{name}\b", str(value), text)
    return text


def assert_both_refuse(text: str, operand_bytes: int, result_bytes: int) -> None:
    """The verifier and the executor both call the module invalid HLO, with both sizes."""
    sizes = f"takes {operand_bytes} bytes, the result .* {result_bytes} bytes"
    with pytest.raises(InvalidHlo, match=f"bitcast b changes the shape size: .*{sizes}"):
        verify_rewrite(text, text)
    with pytest.raises(InvalidHlo, match=f"'b': bitcast changes the shape size: .*{sizes}"):
        compare(text, text, trials=1)


# ------------------------------------------------------------ the defect: symbolic sizes
UNTILE = hlo_module("p = f32[N,128]{1,0:T(8,128)} parameter(0)", "ROOT c = f32[N,128]{1,0} copy(p)")
AS_BITCAST = UNTILE.replace("copy(p)", "bitcast(p)")


@pytest.mark.parametrize("mode", ["physical", "logical"])
def test_copy_to_bitcast_of_partial_tiles_is_not_proved_for_every_n(mode: str) -> None:
    # the old verifier answered "proved" here: for N % 8 != 0 XLA's verifier refuses the bitcast,
    # so the rewrite is unsafe there: refuted, with the sizes and XLA's rule
    r = verify_rewrite(UNTILE, AS_BITCAST, mode=mode)
    assert r.status == "refuted", str(r)
    message = r.counterexample["invalid_hlo"]
    assert "changes the shape size" in message
    n = sizes_in(message)["N"]
    assert r.counterexample["sizes"] == {"N": n}
    assert n % 8 != 0
    assert f"takes {array_size(f'f32[{n},128]{{1,0:T(8,128)}}')} bytes" in message
    assert f"f32[{n},128]{{1,0}} {512 * n} bytes" in message
    # the executor, at the sizes named, refuses the module too
    with pytest.raises(InvalidHlo, match="changes the shape size"):
        compare(UNTILE, AS_BITCAST, sizes={"N": n}, trials=1)


def test_copy_to_bitcast_is_proved_where_whole_tiles_fill_the_rows() -> None:
    assert verify_rewrite(UNTILE, AS_BITCAST, assume="N % 8 == 0").status == "proved"
    for n in (8, 24):
        assert compare(UNTILE, AS_BITCAST, sizes={"N": n}).same is True
    for n in (1, 7, 9):  # the executor refuses the others: 4096*ceil(N/8) against 512*N bytes
        with pytest.raises(InvalidHlo, match=f"{4096 * -(-n // 8)} bytes, the result .* {512 * n} bytes"):
            run(AS_BITCAST, [np.zeros((n, 128), np.float32)], sizes={"N": n})


def test_compare_refuses_before_it_compares_the_roots() -> None:
    # found by the fuzz: compare answered "different root sizes" without running the modules
    before = hlo_module("p = f32[2]{0:T(8)} parameter(0)", "ROOT r = f32[2]{0:L(8)} reshape(p)")
    after = before.replace("reshape(p)", "bitcast(p)")
    with pytest.raises(InvalidHlo, match=r"takes 32 bytes, the result f32\[2\]\{0:L\(8\)\} 8 bytes"):
        compare(before, after)
    r = verify_rewrite(before, after)  # the rewritten module is invalid: an unsafe rewrite
    assert r.status == "refuted" and "takes 32 bytes" in r.counterexample["invalid_hlo"]
    with pytest.raises(InvalidHlo, match="takes 32 bytes"):  # the same module as the input: bad input
        verify_rewrite(after, after)


def test_a_bitcast_off_the_root_path_is_checked_too() -> None:
    # XLA verifies every instruction; the size check does not depend on what the root reads
    dead = hlo_module(
        "p = f32[N,128]{1,0:T(8,128)} parameter(0)",
        "b = f32[N,128]{1,0} bitcast(p)",
        "ROOT c = f32[N,128]{1,0} copy(p)",
    )
    with pytest.raises(InvalidHlo, match=r"bitcast b at N=.* changes the shape size"):
        verify_rewrite(dead, dead)
    with pytest.raises(InvalidHlo, match="'b': bitcast changes the shape size"):
        compare(dead, dead, sizes={"N": 3}, trials=1)
    assert compare(dead, dead, sizes={"N": 16}).same is True


def test_an_undecided_size_question_is_unknown_not_proved(monkeypatch) -> None:
    # a solver that cannot tell whether the sizes may differ (a timeout): no proof either way
    import layout_algebra.hlo.verify as verify_module

    monkeypatch.setattr(
        verify_module, "_property_differs", lambda ctx, a, b, at_most=False: ("unknown: timeout", None)
    )
    r = verify_rewrite(UNTILE, AS_BITCAST)
    assert r.status == "unknown" and "keeps its shape size" in r.reason and "timeout" in r.reason


def test_symbolic_sizes_equal_for_every_n_are_no_condition() -> None:
    # f32[N,128]{1,0} and f32[128*N]{0}: 512*N bytes either way, nothing to assume
    flat = hlo_module("p = f32[N,128]{1,0} parameter(0)", "ROOT r = f32[128*N]{0} reshape(p)")
    assert verify_rewrite(flat, flat.replace("reshape(p)", "bitcast(p)")).status == "proved"


def test_the_size_condition_is_found_by_the_condition_search() -> None:
    # sizes where the module is invalid HLO count as sizes where the rewrite is not safe
    # under the question's assumption N % 8 == 0 the rewrite is safe at every size it allows
    condition = condition_of(verify_rewrite(UNTILE, AS_BITCAST, assume="N % 8 == 0"))
    assert condition.expr == sympy.true and condition.status == "exact", condition
    # asked without it (the rewrite's claim alone), the search finds the assumption itself
    condition = when_rewrite_is_safe(UNTILE, AS_BITCAST)
    assert str(condition.expr) == "Eq(Mod(N, 8), 0)", condition


# ------------------------------------------------------------------- concrete sizes
@pytest.mark.parametrize(
    ("source", "result", "source_bytes", "result_bytes"),
    [
        ("f32[3,128]{1,0:T(8,128)}", "f32[3,128]{1,0}", 4096, 1536),  # 3 rows padded to a tile of 8
        ("f32[3,128]{1,0}", "f32[3,128]{1,0:T(8,128)}", 1536, 4096),  # reads past the operand
        ("f32[3,5]{1,0:T(2,2)}", "f32[16]{0}", 96, 64),
        ("s8[5,3]{0,1:T(4,1)}", "s8[24]{0}", 20, 24),  # was read as 4 undefined bytes past the buffer
        ("bf16[3,128]{1,0:T(8,128)(2,1)}", "bf16[3,128]{1,0}", 2048, 768),  # packed pairs of rows
        ("bf16[8,128]{1,0:T(8,128)(2,1)}", "bf16[2048]{0}", 2048, 4096),
        ("s4[3,128]{1,0:T(8,128)E(4)}", "s4[384]{0:E(4)}", 512, 192),  # two s4 per byte
        ("s4[5]{0:E(4)}", "s4[7]{0:E(4)}", 3, 4),
        ("s4[5]{0:E(4)}", "s4[5]{0}", 3, 5),  # E(4) packed against one s4 per byte
        ("f32[5]{0:T(1)L(4)}", "f32[5]{0}", 32, 20),  # L(n) counts under tiles
        ("f32[5]{0:L(4)}", "f32[8]{0}", 20, 32),  # and not without: XLA's ArraySize ignores it
        ("f32[3,128]{1,0:T(8,128)S(1)}", "f32[3,128]{1,0:S(1)}", 4096, 1536),  # in another memory
        (
            "f32[3,128]{1,0:T(8,128)}",
            "f32[3,128]{1,0:S(1)}",
            4096,
            1536,
        ),  # a valid S(0) -> S(1) but for its size
        ("f32[3,128]{1,0:T(8,128)}", "f32[3,128]{1,0:S(5)}", 4096, 1536),  # S(5) and its size
    ],
)
def test_size_changing_bitcasts_are_invalid_hlo(source, result, source_bytes, result_bytes) -> None:
    assert (array_size(source), array_size(result)) == (source_bytes, result_bytes)  # the oracle
    assert_both_refuse(bitcast_module(source, result), source_bytes, result_bytes)


@pytest.mark.parametrize(
    ("source", "result", "defined"),
    [
        ("f32[8,128]{1,0:T(8,128)}", "f32[1024]{0}", 1024),  # one whole tile is row-major
        ("bf16[8,128]{1,0:T(8,128)(2,1)}", "bf16[1024]{0}", 1024),
        ("s4[3,128]{1,0:E(4)}", "s4[384]{0:E(4)}", 384),
        ("s4[5]{0:E(4)}", "s4[6]{0:E(4)}", 5),  # 3 bytes either way; the 6th nibble is padding
        ("f32[3]{0:T(2)}", "f32[4]{0}", 3),  # 16 bytes; the 4th slot is padding
        ("f32[5]{0:L(4)}", "f32[5]{0}", 5),  # 20 bytes as XLA counts them
        ("f32[3,128]{1,0:T(8,128)S(1)}", "f32[1024]{0:S(1)}", 384),
    ],
)
def test_size_keeping_bitcasts_stay_valid(source, result, defined) -> None:
    assert array_size(source) == array_size(result)  # the oracle
    text = bitcast_module(source, result)
    assert verify_rewrite(text, text).status in ("proved", "refuted")  # answered, not refused
    out = run(text, [logical_input(source)], junk=1)
    assert int(out.defined.sum()) == defined


def test_a_valid_bitcast_between_device_memories_still_moves_no_data() -> None:
    text = bitcast_module("f32[8,128]{1,0:T(8,128)}", "f32[8,128]{1,0:T(8,128)S(1)}")
    out = run(text, [logical_input("f32[8,128]{1,0:T(8,128)}")])
    assert not out.defined.any()


def test_host_memory_is_refused_for_a_size_keeping_bitcast() -> None:
    text = bitcast_module("f32[8,128]{1,0:T(8,128)}", "f32[1024]{0:S(5)}")
    with pytest.raises(InvalidHlo, match="from memory space S\\(0\\) to S\\(5\\)"):
        verify_rewrite(text, text)
    with pytest.raises(InvalidHlo, match="from memory space S\\(0\\) to S\\(5\\)"):
        compare(text, text, trials=1)


def test_the_audit_flags_the_same_bitcasts() -> None:
    """``audit`` judges a program's bitcasts by XLA's allocation too: none it calls fine is refused."""
    from layout_algebra.hlo import audit_module

    for source, result in [
        ("f32[3,128]{1,0:T(8,128)}", "f32[3,128]{1,0}"),
        ("bf16[3,128]{1,0:T(8,128)(2,1)}", "bf16[3,128]{1,0}"),
        ("s4[3,128]{1,0:T(8,128)E(4)}", "s4[384]{0:E(4)}"),
    ]:
        report = audit_module(parse_module(bitcast_module(source, result)))
        assert any(p.startswith("invalid bitcast") for p in report.row("e", "b").problems), (source, result)
        assert report.has_problems


def test_a_pass_that_writes_a_size_changing_bitcast_is_refuted() -> None:
    """Pass validation: XLA's verifier would refuse the later module, not the earlier one."""
    from layout_algebra.hlo.passes import validate_pair

    earlier = hlo_module("p = f32[3,128]{1,0:T(8,128)} parameter(0)", "ROOT c = f32[3,128]{1,0} copy(p)")
    later = earlier.replace("copy(p)", "bitcast(p)")
    for mode in ("logical", "physical"):
        r = validate_pair(earlier, later, mode=mode)
        assert r.status == "refuted" and "invalid HLO" in r.reason, r
        assert (
            "4096 bytes" in r.counterexample["invalid_hlo"]
            and "1536 bytes" in r.counterexample["invalid_hlo"]
        )
    # a later module that removes the invalid bitcast is no such refutation
    assert validate_pair(later, earlier, mode="logical").status != "refuted"
    # at 8 rows the bitcast keeps its size: proved
    whole = earlier.replace("[3,", "[8,")
    assert validate_pair(whole, whole.replace("copy(p)", "bitcast(p)"), mode="physical").status == "proved"


def test_the_command_line_refutes_an_invalid_rewritten_module_and_refuses_an_invalid_input(
    tmp_path, capsys
) -> None:
    from layout_algebra.cli import main

    (tmp_path / "before.hlo").write_text(UNTILE)
    (tmp_path / "after.hlo").write_text(AS_BITCAST)
    files = [str(tmp_path / "before.hlo"), str(tmp_path / "after.hlo")]
    assert main(["verify", *files]) == 1  # refuted: the rewritten module is invalid at some N
    assert "bitcast c at N=" in capsys.readouterr().out
    assert main(["verify", *files, "--assume", "N % 8 == 0"]) == 0
    # the invalid module as the input: bad input, exit 2
    assert main(["verify", files[1], files[1]]) == 2
    assert "bitcast c at N=" in capsys.readouterr().err


# --------------------------------------------------- random layouts against the oracle
ELEMENTS = [("f32", 0), ("bf16", 0), ("s8", 0), ("s4", 4), ("s4", 0), ("pred", 0)]


@st.composite
def bitcast_pairs(draw: st.DrawFn) -> tuple[str, str, int, int]:
    """An operand layout and a result of the same element type: another random layout, or a
    flat array near the operand's size in XLA's count (so that both answers occur)."""
    element = draw(st.sampled_from(ELEMENTS))
    source = draw(small_layout_shapes(max_rank=3, max_dim=5, max_slots=256, combine=False, element=element))
    if draw(st.booleans()):
        result = draw(
            small_layout_shapes(max_rank=2, max_dim=6, max_slots=256, combine=False, element=element)
        )
    else:
        bits = layout_map(source).element_bits
        count = max(0, array_size(source) * 8 // bits + draw(st.integers(-1, 1)))
        e = f":E({element[1]})" if element[1] else ""
        result = parse_shape(f"{element[0]}[{count}]{{0{e}}}")
    return str(source), str(result), array_size(source), array_size(result)


def packed_bytes(shape: str) -> int:
    """The bytes ``numpy_eval.pack`` writes for ``shape``: the exact buffer of every tile level."""
    return int(pack(logical_input(shape), parse_shape(shape)).size)


@pytest.mark.slow
@settings(max_examples=80, derandomize=True)
@given(bitcast_pairs())
def test_verifier_and_executor_accept_exactly_the_size_keeping_bitcasts(pair) -> None:
    source, result, source_bytes, result_bytes = pair
    for shape, size in ((source, source_bytes), (result, result_bytes)):
        layout = parse_shape(shape).effective_layout
        if len(layout.tiles) == 1 or (not layout.tiles and layout.tail_padding_alignment_in_elements == 1):
            # one tile level (or none, without L(n)): XLA's size is every byte pack writes
            assert packed_bytes(shape) == size, shape
        elif layout.tiles:  # later tiles may pad further than XLA counts; an untiled L(n) too
            assert packed_bytes(shape) >= size, shape
    text = bitcast_module(source, result)
    if source_bytes == result_bytes:
        verify_rewrite(text, text)  # answers (no InvalidHlo)
        run(text, [logical_input(source)])
    else:
        assert_both_refuse(text, source_bytes, result_bytes)


# ------------------------------------------------------------ the shipped XLA:TPU dumps
def test_every_bitcast_in_the_shipped_dumps_keeps_its_size() -> None:
    """XLA:TPU's own HLO (the pass dumps and the ground-truth modules) is valid HLO: the rule
    refuses none of its bitcasts, and the oracle agrees that each keeps its size."""
    from layout_algebra.hlo.validity import bitcast_size_problem

    paths = sorted(PASS_DUMPS.rglob("*.txt")) + sorted((GROUND_TRUTH / "hlo").glob("*.hlo"))
    checked = 0
    for path in paths:
        parsed = parse_module(path.read_text())
        for computation, instr in parsed.instructions():
            if instr.opcode != "bitcast":
                continue
            operand = computation.instruction(instr.operand_names[0]).shape
            assert bitcast_size_problem(operand, instr.shape) is None, (path.name, instr.name)
            assert array_size(operand) == array_size(instr.shape), (path.name, instr.name)  # the oracle
            checked += 1
    assert checked >= 601  # 575 in the pass dumps, 26 in the ground-truth modules
