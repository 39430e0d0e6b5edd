"""Red team of the application-level provers: every "proved" checked by an independent oracle.

Each test below attacks one prover path of an application (``hlo.verify``, ``hlo.passes``,
``normal_form``, ``views``, the interop recovery, ``codegen``) with inputs chosen to break it,
and checks the verdict against an executable oracle that shares no code with the prover:
the NumPy HLO executor (``hlo.execute``), packing real bytes (``numpy_eval``), or plain
enumeration of ``linear_index``. The tests named ``test_regression_*`` each pin a defect this
red team found (the docstring says what the old code answered); the others record attacks
that found nothing, so that they keep being made.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.hlo_text import hlo_module_with_parameters

from layout_algebra.hlo.execute_compare import compare
from layout_algebra.hlo.validity import InvalidHlo
from layout_algebra.hlo.verify import verify_rewrite


def module(body: str, params: str = "f32[4]{0} p") -> str:
    """An HLO module text: ``params`` ("type name, ...") then the ``body`` lines."""
    return hlo_module_with_parameters(body, params)


def executed_same(before: str, after: str, mode: str = "physical") -> bool | None:
    """The NumPy executor's answer: do the two modules give the same root?"""
    return compare(before, after, mode=mode, trials=4).same


# ------------------------------------------------------------------ hlo.verify: literals
def test_regression_a_negative_nan_literal_is_not_the_positive_nan() -> None:
    """Old code read ``-nan`` as ``nan`` and proved the two roots the same buffer; the sign
    bit differs (physical mode: bit for bit), and the executor shows it."""
    before = module("  c = f32[2]{0} constant({nan, 0})\n  ROOT r = f32[2]{0} copy(c)")
    after = before.replace("{nan, 0}", "{-nan, 0}")
    assert executed_same(before, after) is False
    result = verify_rewrite(before, after)
    assert result.status == "refuted"
    assert result.counterexample["element"] == (0,)
    assert "-nan" in result.counterexample["after"] and "-nan" not in result.counterexample["before"]
    assert verify_rewrite(after, after).status == "proved"  # the same literal is the same bits


# ------------------------------------------------------- hlo.verify: invalid element types
@pytest.mark.parametrize(
    ("op", "other"),
    [
        ("copy(p)", "reshape(p)"),
        ("reshape(p)", "copy(p)"),
        ("transpose(p), dimensions={0}", "copy(p)"),
        ("reverse(p), dimensions={0}", "reverse(p), dimensions={0}"),
        ("slice(p), slice={[0:4]}", "copy(p)"),
    ],
)
def test_regression_a_data_movement_op_that_changes_the_element_type_is_invalid(op: str, other: str) -> None:
    """Old code proved ``s32[4] copy(f32 p)`` equal to ``s32[4] reshape(f32 p)``: both are
    invalid HLO (the executor rejects them), and a data-movement op keeps the type."""
    before = module(f"  ROOT r = s32[4]{{0}} {op}")
    after = module(f"  ROOT r = s32[4]{{0}} {other}")
    with pytest.raises(InvalidHlo, match=r"operand 0 is f32\[4\]\{0\}.*another element type"):
        verify_rewrite(before, after)


def test_regression_a_pad_value_or_update_of_another_type_is_invalid() -> None:
    """The second data operand of pad and dynamic-update-slice is checked as well."""
    pad = module("  c = s32[] constant(0)\n  ROOT r = f32[6]{0} pad(p, c), padding=1_1")
    with pytest.raises(InvalidHlo, match="operand 1 is s32"):
        verify_rewrite(pad, pad)
    dus = module(
        "  i = s32[] constant(0)\n  ROOT r = f32[4]{0} dynamic-update-slice(p, u, i)",
        "f32[4]{0} p, s32[2]{0} u",
    )
    with pytest.raises(InvalidHlo, match="operand 1 is s32"):
        verify_rewrite(dus, dus)
    concat = module("  ROOT r = f32[8]{0} concatenate(p, q), dimensions={0}", "f32[4]{0} p, s32[4]{0} q")
    with pytest.raises(InvalidHlo, match="operand 1 is s32"):
        verify_rewrite(concat, concat)


def test_type_changing_ops_stay_valid() -> None:
    """The check is on data movement only: bitcast and convert do change the type."""
    before = module("  ROOT r = s32[4]{0} bitcast(p)")
    after = module("  ROOT r = s32[4]{0} bitcast-convert(p)")
    assert verify_rewrite(before, after).status == "proved"
    assert executed_same(before, after) is True


# ---------------------------------------------------------------------- hlo.passes
REDUCE = """HloModule m, entry_computation_layout={(f32[4,8]{1,0})->f32[4]{0}}
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
ENTRY e {
  p = f32[4,8]{1,0} parameter(0)
  z = f32[] constant(0)
  n = f32[4,8]{1,0} negate(p)
  ROOT r = f32[4]{0} reduce(n, z), dimensions={1}, to_apply=add
}"""


@pytest.mark.parametrize("dims", ["{2}", "{1,1}", "{5,0}"])
def test_regression_a_tampered_reduce_dimension_is_an_answer_not_a_crash(dims: str) -> None:
    """Old code crashed with an IndexError (``dimensions={2}`` on a rank-2 operand, found
    by tampering with a real pass dump) or built a transpose with a repeated dimension;
    a pair is now ``unknown`` with a reason that quotes the reduce."""
    from layout_algebra.hlo.passes import validate_pair

    later = REDUCE.replace("dimensions={1}", f"dimensions={dims}")
    result = validate_pair(REDUCE, later, mode="logical")
    assert result.status == "unknown"
    assert f"reduce r: dimensions={dims}" in result.reason


def test_a_reduce_over_another_dimension_is_not_proved() -> None:
    """The honest neighbour of the tampering above: a valid but different reduce."""
    from layout_algebra.hlo.passes import validate_pair

    later = REDUCE.replace("dimensions={1}", "dimensions={0}").replace("f32[4]{0} reduce", "f32[8]{0} reduce")
    later = later.replace("->f32[4]{0}", "->f32[8]{0}")
    result = validate_pair(REDUCE, later, mode="logical")
    assert result.status not in ("proved", "unchanged")


DOT = """HloModule m
ENTRY e {
  a = f32[4,8]{1,0} parameter(0)
  b = f32[8,6]{1,0} parameter(1)
  n = f32[4,8]{1,0} negate(a)
  ROOT d = f32[4,6]{1,0} dot(n, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}"""


@pytest.mark.parametrize(
    ("dims", "quoted"),
    [
        ("lhs_contracting_dims={5}", "lhs batch and contracting dimensions [5]"),
        ("lhs_contracting_dims={1,1}", "lhs batch and contracting dimensions [1, 1]"),
        ("lhs_batch_dims={1}, lhs_contracting_dims={1}", "lhs batch and contracting dimensions [1, 1]"),
        ("lhs_contracting_dims={0,1}", "2 lhs and 1 rhs contracting dimensions"),
    ],
)
def test_regression_a_tampered_dot_dimension_is_an_answer_not_a_crash(dims: str, quoted: str) -> None:
    """Old code crashed with an IndexError on ``lhs_contracting_dims={5}`` (a rank-2 lhs)."""
    from layout_algebra.hlo.passes import validate_pair

    result = validate_pair(DOT, DOT.replace("lhs_contracting_dims={1}", dims), mode="logical")
    assert result.status == "unknown"
    assert quoted in result.reason


# ------------------------------------------------------- hlo.verify: layouts nobody reads
@pytest.mark.parametrize(
    ("layout", "problem"),
    [
        ("{2,0}", "minor_to_major {2,0} has 2 outside [0, 2)"),
        ("{0,0}", "lists dimension 0 twice"),
        ("{1,0:E(4)}", "E(4) cannot hold a s8 element"),
        ("{1,0:T(0,2)}", "has a dimension of size 0"),
    ],
)
def test_regression_an_invalid_layout_is_refused_in_logical_mode_too(layout: str, problem: str) -> None:
    """Old code proved, in logical mode (layouts free), ``reshape`` into ``s8[3,5]{2,0}``
    equal to the same reshape into ``{1,0}``: no proof reads the root's layout there, and
    the module is invalid HLO (the executor rejects it)."""
    before = module("  ROOT r = s8[3,5]{1,0} reshape(p)", "s8[3,5]{0,1} p")
    after = before.replace("s8[3,5]{1,0} reshape", f"s8[3,5]{layout} reshape")
    with pytest.raises(ValueError):
        executed_same(before, after, mode="logical")
    for mode in ("logical", "physical"):
        r = verify_rewrite(before, after, mode=mode)  # the rewritten module is invalid: unsafe
        assert r.status == "refuted" and problem in r.counterexample["invalid_hlo"], str(r)
        with pytest.raises(InvalidHlo, match=re.escape(problem)):  # as the input: bad input
            verify_rewrite(after, before, mode=mode)


# ------------------------------------------- hlo.verify: counterexamples re-checked by running
_OPS = (
    "transpose(p), dimensions={1,0}",
    "reverse(p), dimensions={0}",
    "reverse(p), dimensions={1}",
    "reverse(p), dimensions={0,1}",
    "copy(p)",
)


@st.composite
def refutable_pairs(draw):
    """A 4x4 movement op and a mutation of it (another op, or the result re-laid out)."""
    element = draw(st.sampled_from(("f32", "bf16", "s8")))
    params = f"{element}[4,4]{draw(st.sampled_from(('{1,0}', '{0,1}', '{1,0:T(2,2)}')))} p"
    layouts = ("{1,0}", "{0,1}", "{1,0:T(2,2)}", "{0,1:T(4,2)}")
    op_a, op_b = draw(st.sampled_from(_OPS)), draw(st.sampled_from(_OPS))
    la, lb = draw(st.sampled_from(layouts)), draw(st.sampled_from(layouts))
    before = module(f"  ROOT r = {element}[4,4]{la} {op_a}", params)
    after = module(f"  ROOT r = {element}[4,4]{lb} {op_b}", params)
    return before, after, draw(st.sampled_from(("physical", "logical")))


def _differs_at(before: str, after: str, cex: dict, mode: str) -> bool:
    """Does running both modules (the NumPy executor) on random parameters show the
    counterexample's difference: the root element (logical), or the bits of the slot the
    counterexample names (physical; unspecified bits count as different)? A root element
    the two root layouts place apart is a difference however the bytes compare: the executor
    finds it, and packing element ids into both root layouts shows where it is."""
    from layout_algebra.hlo.execute import run
    from layout_algebra.hlo.execute_compare import random_array
    from layout_algebra.hlo.parser import parse_module

    if mode == "physical" and "placement" in cex:  # slots by packing ids (these layouts pack no pairs)
        a_root, b_root = (
            re.sub(r"^\w+\[", "s32[", str(parse_module(m).entry.root.shape)) for m in (before, after)
        )
        element = tuple(cex["element"])
        return executed_same(before, after) is False and slots(a_root)[element] != slots(b_root)[element]

    shape = parse_module(before).entry.instruction("p").shape
    for seed in range(4):
        data = random_array(shape, np.random.default_rng(seed))
        a, b = run(before, [data], junk=seed), run(after, [data], junk=seed + 1)
        if mode == "logical":
            if a.array[cex["element"]].tobytes() != b.array[cex["element"]].tobytes():
                return True
            continue
        bit = int(cex["before"].split(":")[0].removeprefix("bit "))
        width = a.array.dtype.itemsize * 8
        bits_a = np.unpackbits(a.data, bitorder="little")[bit : bit + width]
        bits_b = np.unpackbits(b.data, bitorder="little")[bit : bit + width]
        defined_b = np.unpackbits(b.defined_bits, bitorder="little")[bit : bit + width]
        if not defined_b.all() or not np.array_equal(bits_a, bits_b):
            return True
    return False


@pytest.mark.slow
@settings(max_examples=60, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(refutable_pairs())
def test_every_counterexample_of_verify_is_a_real_difference_when_run(pair) -> None:
    """A refutation names a root element (and, physically, a bit offset); running both
    modules with the executor must show the two differ exactly there. A proof must be
    confirmed by running too."""
    before, after, mode = pair
    result = verify_rewrite(before, after, mode=mode)
    assert result.status != "unknown", result.reason  # pure data movement at concrete sizes
    if result.status == "proved":
        assert executed_same(before, after, mode) is True
        return
    cex = result.counterexample
    if cex["element"] is None:  # a buffer property: the sizes themselves differ
        assert cex["property"] in ("size in bytes", "allocation in bytes"), cex
        return
    assert _differs_at(before, after, cex, mode), (mode, cex, before, after)


def test_the_rerun_check_tells_a_real_difference_from_a_made_up_one() -> None:
    """The checker above is not vacuous: a transpose and a copy agree on the diagonal."""
    before = module("  ROOT r = f32[4,4]{1,0} copy(p)", "f32[4,4]{1,0} p")
    after = module("  ROOT r = f32[4,4]{1,0} transpose(p), dimensions={1,0}", "f32[4,4]{1,0} p")
    assert _differs_at(before, after, {"element": (0, 1)}, "logical")
    assert not _differs_at(before, after, {"element": (2, 2)}, "logical")
    assert _differs_at(before, after, {"before": "bit 32: ..."}, "physical")  # slot 1: (0,1) vs (1,0)
    assert not _differs_at(before, after, {"before": "bit 160: ..."}, "physical")  # slot 5: (1,1)


def test_regression_an_element_whose_slot_agrees_does_not_stop_the_search() -> None:
    """Old code answered unknown ("the values stored there agree") when the first root
    element Z3 found sat elsewhere in the other root with the same value at its slot, even
    though other slots differ (the executor shows it); it now looks for another element."""
    before = module("  ROOT r = s8[4,4]{1,0} transpose(p), dimensions={1,0}", "s8[4,4]{1,0:T(2,2)} p")
    after = module("  ROOT r = s8[4,4]{0,1:T(4,2)} reverse(p), dimensions={1}", "s8[4,4]{1,0:T(2,2)} p")
    assert executed_same(before, after) is False
    result = verify_rewrite(before, after)
    assert result.status == "refuted"
    assert _differs_at(before, after, result.counterexample, "physical")
    # bit for bit the same buffer, every element placed apart: different, as the executor says
    # (the root's layout is part of the result; test_verify_sizes.py has more of these)
    same_bits = module("  ROOT r = f32[4,4]{0,1} copy(p)", "f32[4,4]{1,0} p")
    transposed = module("  ROOT r = f32[4,4]{1,0} transpose(p), dimensions={1,0}", "f32[4,4]{1,0} p")
    assert executed_same(transposed, same_bits) is False
    assert verify_rewrite(transposed, same_bits).status == "refuted"


# ======================================================================================
# Attacks that found nothing (kept running): each "proved"/returned layout is checked by
# packing real bytes. ``slots`` is the oracle: where NumPy's packer puts each element.
# ======================================================================================
_SLOT_TYPES = {"s32": (np.int32, np.uint32), "u16": (np.uint16, np.uint16), "f32": (np.float32, np.uint32)}


def slots(shape_text) -> np.ndarray:
    """The element slot of every logical element of a 32- or 16-bit shape: pack distinct ids
    with ``numpy_eval.pack`` and find each in the bytes (no stage pipeline read here)."""
    from layout_algebra.model.syntax import as_shape
    from layout_algebra.packing.numpy_eval import pack

    shape = as_shape(shape_text)
    logical, word = _SLOT_TYPES[shape.element_type.text]
    dims = tuple(int(d) for d in shape.dimensions)
    ids = (np.arange(int(np.prod(dims, dtype=np.int64))) + 1).astype(word)
    words = pack(ids.view(logical).reshape(dims), shape, fill=0).view(word)
    where = np.full(ids.size, -1, dtype=np.int64)
    filled = np.nonzero(words)[0]
    where[words[filled].astype(np.int64) - 1] = filled
    assert (where >= 0).all()
    return where.reshape(dims)


@st.composite
def small_layouts(draw, element: str = "s32", most: int = 512) -> str:
    rank = draw(st.integers(1, 3))
    dims = [draw(st.sampled_from((1, 2, 3, 4, 6, 8, 16))) for _ in range(rank)]
    while int(np.prod(dims)) > most:
        dims = [max(1, d // 2) for d in dims]
    order = draw(st.permutations(range(rank)))
    tiles = draw(
        st.sampled_from(("", "T(2,4)", "T(4)", "T(8)", "T(2,2)(2,1)", "T(4,8)", "T(1,8)", "T(8)(2)"))
    )
    tail = draw(st.sampled_from(("", "", "L(8)")))
    extra = tiles + tail
    return (
        f"{element}[{','.join(map(str, dims))}]{{{','.join(map(str, order))}{':' + extra if extra else ''}}}"
    )


@settings(max_examples=40, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(small_layouts())
def test_normal_form_places_every_element_where_the_layout_does(text: str) -> None:
    from layout_algebra.decide.normal_form import normal_form_with_proof
    from layout_algebra.meaning.sizes import size_report

    nf = normal_form_with_proof(text)
    assert np.array_equal(slots(nf.original), slots(nf.shape)), (text, str(nf.shape))
    a, b = size_report(nf.original), size_report(nf.shape)
    assert (a.physical_bytes, a.first_tile_bytes) == (b.physical_bytes, b.first_tile_bytes), (text, nf.shape)


@settings(max_examples=40, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(small_layouts(), st.data())
def test_a_view_proved_to_be_a_layout_is_that_layout_on_every_element(text: str, data) -> None:
    from layout_algebra.decide.views import Reverse, Slice, Transpose, view
    from layout_algebra.model.syntax import as_shape

    base = as_shape(text)
    dims = [int(d) for d in base.dimensions]
    where = slots(text)
    kind = data.draw(st.sampled_from(("slice", "transpose", "reverse")))
    if kind == "slice":
        starts = [data.draw(st.integers(0, d - 1)) for d in dims]
        limits = [data.draw(st.integers(s + 1, d)) for s, d in zip(starts, dims, strict=True)]
        op, seen = Slice(tuple(starts), tuple(limits)), where[tuple(map(slice, starts, limits))]
    elif kind == "transpose":
        perm = data.draw(st.permutations(range(len(dims))))
        op, seen = Transpose(tuple(perm)), where.transpose(perm)
    else:
        op, seen = Reverse((0,)), np.flip(where, axis=0)
    answer = view(text, op).as_layout()
    if answer.status != "proved":
        return
    found = slots(answer.shape)
    assert np.array_equal(found * 32 + answer.offset_bits, seen * 32), (text, str(op), str(answer.shape))


@settings(max_examples=40, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(small_layouts(element="f32"), st.integers(0, 2**16))
def test_from_cute_of_a_mutated_export_places_elements_as_the_cute_text_says(text: str, seed: int) -> None:
    """Export to CuTe, change one number, read back: any layout returned must be the map
    the (mutated) CuTe text says, evaluated by ``Layout`` mode by mode."""
    import random

    from layout_algebra.interop.cute.algebra import layout as cute_layout
    from layout_algebra.interop.cute.export import from_cute, to_cute
    from layout_algebra.meaning.recover import NotExpressible

    try:
        exported = to_cute(text)
    except ValueError:
        return
    rng = random.Random(seed)
    numbers = list(re.finditer(r"\d+", exported))
    m = rng.choice(numbers)
    mutated = exported[: m.start()] + str(rng.choice((int(m[0]) + 1, int(m[0]) * 2, 1))) + exported[m.end() :]
    for cute in (exported, mutated):
        try:
            got = from_cute(cute, "f32")
        except NotExpressible:
            continue
        layout = cute_layout(cute)
        modes = list(layout) if isinstance(layout.shape, tuple) else [layout]
        where = slots(got)
        for index in np.ndindex(*where.shape):
            assert where[index] == sum(mode(int(i)) for mode, i in zip(modes, index, strict=True)), (
                cute,
                got,
            )


@settings(max_examples=25, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(small_layouts(element="u16", most=128))
def test_certified_python_code_is_the_layout_on_every_index_and_offset(text: str) -> None:
    from layout_algebra.codegen import generate_code

    where = slots(text)
    occupied = set(where.ravel().tolist())
    run = {}
    for direction in ("forward", "inverse", "padding"):
        generated = generate_code(text, "python", direction)
        assert generated.certification.status == "proved", generated.certification
        namespace: dict = {}
        exec(compile(generated.text, "<generated>", "exec"), namespace)  # our own generated code
        run[direction] = next(v for k, v in namespace.items() if callable(v) and not k.startswith("_"))
    for index in np.ndindex(*where.shape):
        assert run["forward"](*index) == where[index]
        inverse = run["inverse"](int(where[index]))
        assert tuple(inverse if isinstance(inverse, tuple) else (inverse,)) == index
    for offset in range(int(where.max()) + 1):
        assert bool(run["padding"](offset)) == (offset not in occupied), (text, offset)


@pytest.mark.slow
@settings(max_examples=40, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(small_layouts(), st.data())
def test_a_suggested_bitcast_layout_keeps_every_element_and_the_allocation(text: str, data) -> None:
    from layout_algebra.decide.suggest import suggest_bitcast_layout
    from layout_algebra.meaning.sizes import size_report
    from layout_algebra.model.syntax import as_shape

    n = int(np.prod([int(d) for d in as_shape(text).dimensions]))
    a = data.draw(st.sampled_from([f for f in range(1, n + 1) if n % f == 0]))
    suggestion = suggest_bitcast_layout(text, (a, n // a))
    for candidate in (suggestion.shape, *suggestion.others) if suggestion else ():
        assert np.array_equal(slots(text).ravel(), slots(candidate).ravel()), (text, str(candidate))
        assert size_report(as_shape(text)).first_tile_bytes == size_report(candidate).first_tile_bytes


@pytest.mark.slow
@settings(max_examples=40, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from((1, 2, 4, 8)), min_size=1, max_size=3), st.randoms(use_true_random=False))
def test_from_linear_layout_of_a_bit_permutation_is_that_permutation(dims, rng) -> None:
    from layout_algebra.interop.triton import LinearLayout, from_linear_layout
    from layout_algebra.meaning.recover import NotExpressible

    widths = [d.bit_length() - 1 for d in dims]
    bits = list(range(sum(widths)))
    rng.shuffle(bits)
    it = iter(bits)
    bases = [[1 << next(it) for _ in range(w)] for w in widths]
    ll = LinearLayout.from_bases(
        {f"dim{k}": [[b] for b in row] for k, row in enumerate(bases)}, {"offset": 1 << sum(widths)}
    )
    try:
        got = from_linear_layout(ll, "s32")
    except NotExpressible:
        return
    where = slots(got)
    for index in np.ndindex(*where.shape):
        xor = 0
        for x, row in zip(index, bases, strict=True):
            for k, b in enumerate(row):
                xor ^= b if x >> k & 1 else 0
        assert where[index] == xor, (bases, str(got))


# --------------------------------------------------- hlo.verify: compare, select and clamp types
def test_regression_a_compare_of_two_integer_types_is_invalid() -> None:
    """Old code read ``compare(s32 iota, s8 constant)`` as an exact integer comparison and
    proved the select on it equal to a concatenate; XLA (and the executor) reject it."""
    params = "f32[4]{0} p, f32[4]{0} q"
    select = (
        "  i = s32[4]{0} iota(), iota_dimension=0\n  k = s8[] constant(2)\n"
        "  kb = s8[4]{0} broadcast(k), dimensions={}\n  m = pred[4]{0} compare(i, kb), direction=LT\n"
        "  ROOT r = f32[4]{0} select(m, p, q)"
    )
    halves = (
        "  a = f32[2]{0} slice(p), slice={[0:2]}\n  b = f32[2]{0} slice(q), slice={[2:4]}\n"
        "  ROOT r = f32[4]{0} concatenate(a, b), dimensions={0}"
    )
    with pytest.raises(ValueError):
        executed_same(module(select, params), module(halves, params))
    with pytest.raises(InvalidHlo, match=r"element types \['s32', 's8'\]"):
        verify_rewrite(module(select, params), module(halves, params))
    same_type = select.replace("s8", "s32")  # the valid module is still proved
    assert verify_rewrite(module(same_type, params), module(halves, params)).status == "proved"
    assert executed_same(module(same_type, params), module(halves, params)) is True


def test_regression_select_of_another_type_than_its_result_is_invalid() -> None:
    params = "s32[4]{0} p, f32[4]{0} q"
    select = module("  c = pred[] constant(true)\n  ROOT r = f32[4]{0} select(c, p, q)", params)
    with pytest.raises(InvalidHlo, match="chosen operands must have one type"):
        verify_rewrite(select, select)


def test_regression_clamp_with_scalar_bounds_is_valid_hlo() -> None:
    """Old code called ``clamp(f32[] lo, f32[4] x, f32[] hi)`` invalid HLO; XLA broadcasts
    scalar bounds (the executor runs it)."""
    scalar = module(
        "  lo = f32[] constant(0)\n  hi = f32[] constant(1)\n  ROOT r = f32[4]{0} clamp(lo, p, hi)"
    )
    broadcast = module(
        "  lo = f32[] constant(0)\n  hi = f32[] constant(1)\n  l = f32[4]{0} broadcast(lo), dimensions={}\n"
        "  h = f32[4]{0} broadcast(hi), dimensions={}\n  ROOT r = f32[4]{0} clamp(l, p, h)"
    )
    assert executed_same(scalar, broadcast) is True
    assert verify_rewrite(scalar, broadcast).status == "proved"
    swapped = broadcast.replace("clamp(l, p, h)", "clamp(h, p, l)")
    assert verify_rewrite(scalar, swapped).status != "proved"
