"""The canonical forms of pass validation (layout_algebra.hlo.pass_forms) against oracles
written here from XLA's operation semantics, and pairs of modules a pass rewrote in
another form: proved, while mutants (a swapped comparator, a wrong key constant, a wrong
k, a non-identity initial value, a wider window) never are."""

from __future__ import annotations

import itertools
import random
import struct

import numpy as np
import pytest

from layout_algebra.hlo.parser import parse_module
from layout_algebra.hlo.pass_canonical import Builder
from layout_algebra.hlo.pass_cuts import Side
from layout_algebra.hlo.pass_forms import (
    TOPK_DECOMPOSITION,
    total_order_key,
    unit_convolution_as_dot,
    unit_reduce_as_reshape,
)
from layout_algebra.hlo.pass_indexing import gather_simple_form, scatter_simple_form
from layout_algebra.hlo.passes import ASSUMPTIONS, validate_pair


# ------------------------------------------------------------------------ total order
def _ieee_total_order_less(x: int, y: int) -> bool:
    """IEEE 754 totalOrder(x, y) and x != y for binary32 bit patterns, from its definition:
    a negative sign orders first; among positives a larger magnitude (exponent, then
    significand, then NaNs above infinity) is larger, among negatives smaller."""
    sx, sy = x >> 31, y >> 31
    mx, my = x & 0x7FFFFFFF, y & 0x7FFFFFFF
    if sx != sy:
        return sx > sy
    return mx > my if sx else mx < my


def _adversarial_bits(rng: random.Random, n: int) -> list[int]:
    special = [
        0x00000000,  # +0
        0x80000000,  # -0
        0x7F800000,  # +inf
        0xFF800000,  # -inf
        0x7FC00000,  # quiet NaN
        0xFFC00000,  # negative quiet NaN
        0x7F800001,  # signaling NaN
        0xFFFFFFFF,  # negative NaN, full payload
        0x00000001,  # smallest denormal
        0x80000001,
        0x7F7FFFFF,  # largest finite
        0xFF7FFFFF,
    ]
    return special + [rng.getrandbits(32) for _ in range(n)]


def test_the_total_order_key_orders_floats_as_ieee_total_order() -> None:
    rng = random.Random(3)
    bits = _adversarial_bits(rng, 120)
    for x, y in itertools.product(bits, repeat=2):
        assert (total_order_key(x, 32) < total_order_key(y, 32)) == _ieee_total_order_less(x, y), (
            hex(x),
            hex(y),
        )


def test_the_total_order_key_agrees_with_numeric_order_on_numbers() -> None:
    values = np.random.default_rng(5).standard_normal(200).astype(np.float32) * 1e3
    values = np.concatenate([values, np.float32([0.0, -0.0, np.inf, -np.inf, 1e-45, -1e-45])])
    keys = [total_order_key(struct.unpack("<I", struct.pack("<f", float(v)))[0], 32) for v in values]
    for (a, ka), (b, kb) in itertools.product(zip(values, keys, strict=True), repeat=2):
        if a != b:
            assert (ka < kb) == (a < b)
        else:  # -0 < +0 in the total order
            assert (ka < kb) == (np.signbit(a) and not np.signbit(b))


_SORT = """HloModule m
ENTRY e {{
  x = f32[4,16]{{1,0}} parameter(0)
  i = s32[4,16]{{1,0}} iota(), iota_dimension=1
  s = (f32[4,16]{{1,0}}, s32[4,16]{{1,0}}) sort(x, i), dimensions={{1}}, is_stable=true, to_apply=cmp
  ROOT g = s32[4,16]{{1,0}} get-tuple-element(s), index=1
}}
cmp {{
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  c = s32[] parameter(2)
  d = s32[] parameter(3)
{body}
}}"""
_TOTAL = "  ROOT r = pred[] compare(a, b), direction=GT, type=TOTALORDER"
_EXPANDED = """  zero = s32[] constant(0)
  max = s32[] constant({max})
  ba = s32[] {cast}(a)
  na = pred[] compare(ba, zero), direction=LT
  xa = s32[] xor(max, ba)
  ka = s32[] select(na, xa, ba)
  bb = s32[] {cast}(b)
  nb = pred[] compare(bb, zero), direction=LT
  xb = s32[] xor(max, bb)
  kb = s32[] select(nb, xb, bb)
  ROOT r = pred[] compare(ka, kb), direction={direction}"""


def _expanded(direction: str = "GT", max_value: int = 2147483647, cast: str = "bitcast-convert") -> str:
    return _SORT.format(body=_EXPANDED.format(max=max_value, direction=direction, cast=cast))


@pytest.mark.parametrize("cast", ["bitcast-convert", "bitcast"])
def test_comparison_expanders_integer_keys_pair_with_the_total_order_comparison(cast: str) -> None:
    before = _SORT.format(body=_TOTAL)
    r = validate_pair(before, _expanded(cast=cast), mode="logical")
    assert r.status == "proved", r.reason


@pytest.mark.parametrize(
    "mutant",
    [_expanded(direction="LT"), _expanded(max_value=2147483646), _expanded(direction="GE")],
    ids=["swapped-direction", "wrong-constant", "non-strict"],
)
def test_a_wrong_integer_key_comparator_is_not_proved(mutant: str) -> None:
    r = validate_pair(_SORT.format(body=_TOTAL), mutant, mode="logical")
    assert r.status != "proved"


def test_a_subtract_key_of_an_older_comparison_expander_is_read_as_the_xor_key() -> None:
    subtract = _EXPANDED.replace(
        "  xa = s32[] xor(max, ba)",
        "  ua = u32[] bitcast-convert(a)\n  sa = u32[] subtract(mu, ua)\n  xa = s32[] bitcast-convert(sa)",
    ).replace("  max = s32[] constant({max})", "  max = s32[] constant({max})\n  mu = u32[] convert(max)")
    text = _SORT.format(body=subtract.format(max=2147483647, direction="GT", cast="bitcast-convert"))
    assert validate_pair(_SORT.format(body=_TOTAL), text, mode="logical").status == "proved"
    # -x as unsigned for x < 0 is max - x + 1, not the key: the same shape with the wrong sign fails
    wrong = text.replace("subtract(mu, ua)", "subtract(ua, mu)")
    assert validate_pair(_SORT.format(body=_TOTAL), wrong, mode="logical").status != "proved"


# ------------------------------------------------------------------------ reduce over size-1 dims
_REDUCE = """HloModule m
ENTRY e {{
  p = {t}[4,1,3]{{2,1,0}} parameter(0)
  z = {t}[] constant({init})
  ROOT r = {t}[4,3]{{1,0}} reduce(p, z), dimensions={{1}}, to_apply=f
}}
f {{
  a = {t}[] parameter(0)
  b = {t}[] parameter(1)
  ROOT s = {t}[] {op}(a, b)
}}"""
_RESHAPE = """HloModule m
ENTRY e {{
  p = {t}[4,1,3]{{2,1,0}} parameter(0)
  ROOT r = {t}[4,3]{{1,0}} reshape(p)
}}"""

_FLOATS = np.float32([0.0, -0.0, 1.5, -2.25, np.inf, -np.inf, np.nan, 1e-45, -3e38])
_NUMPY = {"add": np.add, "maximum": np.maximum, "minimum": np.minimum, "multiply": np.multiply}


@pytest.mark.parametrize("op", ["add", "maximum", "minimum", "multiply"])
@pytest.mark.parametrize("init", ["-0", "0", "inf", "-inf", "1", "-1"])
def test_a_float_reduce_over_a_unit_dimension_is_a_reshape_only_from_the_identity(op: str, init: str) -> None:
    module = parse_module(_REDUCE.format(t="f32", init=init, op=op))
    by_name = {i.name: i for i in module.entry.instructions}
    read = unit_reduce_as_reshape(module, by_name, by_name["r"]).opcode == "reshape"
    start = np.float32(float(init))
    identity = all(  # f(init, x) is x, bit for bit (NaN: a NaN)
        (np.isnan(x) and np.isnan(_NUMPY[op](start, x)))
        or np.float32(_NUMPY[op](start, x)).tobytes() == np.float32(x).tobytes()
        for x in _FLOATS
    )
    assert not read or identity  # never read so without being the identity
    if read:
        r = validate_pair(_RESHAPE.format(t="f32"), _REDUCE.format(t="f32", init=init, op=op), mode="logical")
        assert r.status == "proved", r.reason
    else:
        r = validate_pair(_RESHAPE.format(t="f32"), _REDUCE.format(t="f32", init=init, op=op), mode="logical")
        assert r.status != "proved"
    if (op, init) in (("add", "-0"), ("maximum", "-inf"), ("minimum", "inf")):
        assert read


@pytest.mark.parametrize("op", ["add", "maximum", "minimum"])
@pytest.mark.parametrize("init", ["0", "1", "-2147483648", "2147483647"])
def test_an_integer_reduce_over_a_unit_dimension_is_a_reshape_only_from_the_identity(
    op: str, init: str
) -> None:
    module = parse_module(_REDUCE.format(t="s32", init=init, op=op))
    by_name = {i.name: i for i in module.entry.instructions}
    read = unit_reduce_as_reshape(module, by_name, by_name["r"]).opcode == "reshape"
    xs = np.int32([0, 1, -1, 2147483647, -2147483648, 77])
    identity = all(int(_NUMPY[op](np.int64(init), np.int64(x))) == int(x) for x in xs)
    assert read == identity


def test_a_reduce_over_a_dimension_longer_than_one_is_not_a_reshape() -> None:
    text = _REDUCE.format(t="f32", init="-0", op="add").replace("[4,1,3]", "[4,2,3]")
    module = parse_module(text)
    by_name = {i.name: i for i in module.entry.instructions}
    assert unit_reduce_as_reshape(module, by_name, by_name["r"]).opcode == "reduce"


# ------------------------------------------------------------------------ unit convolution
def _reference_convolution(lhs, rhs, labels: tuple[str, str, str], stride: list[int], pad: list[int]):
    """XLA's convolution (no dilation, no groups) from its definition, any dimension labels:
    out[o.., b, f] = sum over kernel positions k.. and input features i of
    lhs[b, i, o*stride - pad + k] x rhs[k.., i, f], positions outside the input contributing nothing."""
    lhs_l, rhs_l, out_l = labels
    spatial = sorted(c for c in lhs_l if c.isdigit())
    lhs = np.moveaxis(lhs, [lhs_l.index(c) for c in ["b", "f", *spatial]], list(range(lhs.ndim)))
    rhs = np.moveaxis(rhs, [rhs_l.index(c) for c in ["i", "o", *spatial]], list(range(rhs.ndim)))
    in_sizes, k_sizes = lhs.shape[2:], rhs.shape[2:]
    out_sizes = [(n + 2 * p - k) // s + 1 for n, p, k, s in zip(in_sizes, pad, k_sizes, stride, strict=True)]
    out = np.zeros((lhs.shape[0], rhs.shape[1], *out_sizes), dtype=np.int64)
    for o in itertools.product(*map(range, out_sizes)):
        for k in itertools.product(*map(range, k_sizes)):
            pos = [oi * s - p + ki for oi, s, p, ki in zip(o, stride, pad, k, strict=True)]
            if all(0 <= q < n for q, n in zip(pos, in_sizes, strict=True)):
                out[(slice(None), slice(None), *o)] += (
                    lhs[(slice(None), slice(None), *pos)] @ rhs[(slice(None), slice(None), *k)]
                )
    # out is (b, f, spatial..): to the output labels
    order = ["b", "f", *spatial]
    return np.moveaxis(out, list(range(out.ndim)), [out_l.index(c) for c in order])


def _s32(dims) -> str:
    if len(dims) == 0:
        return "s32[]"
    return f"s32[{','.join(map(str, dims))}]{{{','.join(str(d) for d in reversed(range(len(dims))))}}}"


def _run_emitted(emitted, values: dict):
    """The reshape / dot / transpose instructions the form emits, run from XLA's semantics."""
    for instr in emitted:
        ops = [values[o.name] for o in instr.operands]
        if instr.opcode == "reshape":
            values[instr.name] = ops[0].reshape(instr.shape.dimensions)
        elif instr.opcode == "transpose":
            values[instr.name] = np.transpose(ops[0], instr.dimensions)
        elif instr.opcode == "dot":
            lc = int(instr.attributes["lhs_contracting_dims"].strip("{}"))
            rc = int(instr.attributes["rhs_contracting_dims"].strip("{}"))
            assert "lhs_batch_dims" not in instr.attributes
            values[instr.name] = np.tensordot(ops[0], ops[1], axes=([lc], [rc]))
        else:
            raise AssertionError(instr.opcode)
    return values[emitted[-1].name]


def test_a_unit_window_convolution_is_read_as_a_dot_exactly_when_the_oracle_agrees() -> None:
    """400 random convolutions (0 to 2 spatial dimensions, random dimension labels, windows of
    size 1 or 2, strides 1 or 2, padding 0 or 1): read as a dot only when the dot (run from the
    emitted instructions) equals the reference convolution, and always read so when every
    window is one element."""
    rng = random.Random(11)
    data = np.random.default_rng(11)
    read_count = 0
    for _ in range(400):
        n = rng.randint(0, 2)
        spatial = [str(d) for d in range(n)]
        lhs_l = "".join(rng.sample(["b", "f", *spatial], n + 2))
        rhs_l = "".join(rng.sample(["i", "o", *spatial], n + 2))
        out_l = "".join(rng.sample(["b", "f", *spatial], n + 2))
        unit = rng.random() < 0.5
        size = [1 if unit else rng.randint(1, 2) for _ in spatial]
        stride = [1 if unit else rng.randint(1, 2) for _ in spatial]
        pad = [0 if unit else rng.randint(0, 1) for _ in spatial]
        sizes = {"b": rng.randint(1, 3), "f": rng.randint(1, 3), "o": rng.randint(1, 3)}
        in_sizes = {c: rng.randint(2, 4) for c in spatial}
        lhs_dims = [sizes["b"] if c == "b" else sizes["f"] if c == "f" else in_sizes[c] for c in lhs_l]
        rhs_dims = [sizes["f"] if c == "i" else sizes["o"] if c == "o" else size[int(c)] for c in rhs_l]
        lhs = data.integers(-5, 6, lhs_dims)
        rhs = data.integers(-5, 6, rhs_dims)
        expected = _reference_convolution(lhs, rhs, (lhs_l, rhs_l, out_l), stride, pad)
        window = ""
        if spatial:
            fields = ["size=" + "x".join(map(str, size))]
            if any(s != 1 for s in stride):
                fields.append("stride=" + "x".join(map(str, stride)))
            if any(pad):
                fields.append("pad=" + "x".join(f"{p}_{p}" for p in pad))
            window = f"window={{{' '.join(fields)}}}, "
        text = f"""HloModule m
ENTRY e {{
  l = {_s32(lhs_dims)} parameter(0)
  r = {_s32(rhs_dims)} parameter(1)
  ROOT c = {_s32(expected.shape)} convolution(l, r), {window}dim_labels={lhs_l}_{rhs_l}->{out_l}
}}"""
        module = parse_module(text)
        builder = Builder()
        for instr in module.entry.instructions[:2]:
            builder.emit(instr)
        emitted = unit_convolution_as_dot(builder, module.entry.instructions[2])
        if unit:
            assert emitted is not None, text
        if emitted is None:
            continue
        read_count += 1
        got = _run_emitted([*builder.instructions[2:], *emitted], {"l": lhs, "r": rhs})
        assert got.shape == expected.shape and np.array_equal(got, expected), text
    assert read_count >= 150


def test_a_unit_convolution_pairs_with_the_dot_it_replaced_and_a_strided_one_does_not() -> None:
    dot = """HloModule m
ENTRY e {
  a = f32[4,6,8]{2,1,0} parameter(0)
  w = f32[8,5]{1,0} parameter(1)
  ROOT d = f32[4,6,5]{2,1,0} dot(a, w), lhs_contracting_dims={2}, rhs_contracting_dims={0}
}"""
    conv = """HloModule m
ENTRY e {
  a = f32[4,6,8]{2,1,0} parameter(0)
  w = f32[8,5]{1,0} parameter(1)
  k = f32[8,5,1]{2,1,0} reshape(w)
  ROOT d = f32[4,6,5]{2,1,0} convolution(a, k), window={size=1}, dim_labels=0bf_io0->0bf
}"""
    r = validate_pair(dot, conv, mode="logical")
    assert r.status == "proved" and r.assumptions == ("convolution-as-dot",), r.reason
    strided = conv.replace("window={size=1}", "window={size=1 stride=2}").replace(
        "ROOT d = f32[4,6,5]", "ROOT d = f32[2,6,5]"
    )
    assert (
        validate_pair(
            dot.replace("f32[4,6,5]{2,1,0} dot", "f32[2,6,5]{2,1,0} dot"), strided, mode="logical"
        ).status
        != "proved"
    )


# ------------------------------------------------------------------------ top-k
_TOPK_OP = """HloModule m
ENTRY e {{
  x = f32[3,{n}]{{1,0}} parameter(0)
  t = (f32[3,{k}]{{1,0}}, s32[3,{k}]{{1,0}}) topk(x), k={k}, largest={largest}
  ROOT g = s32[3,{k}]{{1,0}} get-tuple-element(t), index=1
}}"""
_DECOMPOSED = """HloModule m
ENTRY e {{
  x = f32[3,{n}]{{1,0}} parameter(0)
  i = s32[3,{n}]{{1,0}} iota(), iota_dimension=1
  s = (f32[3,{n}]{{1,0}}, s32[3,{n}]{{1,0}}) sort(x, i), dimensions={{1}}, is_stable={stable}, to_apply=cmp
  v = s32[3,{n}]{{1,0}} get-tuple-element(s), index=1
  ROOT g = s32[3,{k}]{{1,0}} slice(v), slice={{[0:3], [0:{k}]}}
}}
cmp {{
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  c = s32[] parameter(2)
  d = s32[] parameter(3)
  ROOT r = pred[] compare(a, b), direction={direction}, type=TOTALORDER
}}"""
_CUSTOM_CALL = """HloModule m
ENTRY e {{
  x = f32[3,{n}]{{1,0}} parameter(0)
  t = (f32[3,{k}]{{1,0}}, s32[3,{k}]{{1,0}}) custom-call(x), custom_call_target="TopK", called_computations={{cmp}}
  ROOT g = s32[3,{k}]{{1,0}} get-tuple-element(t), index=1
}}
cmp {{
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  c = s32[] parameter(2)
  d = s32[] parameter(3)
  ROOT r = pred[] compare(a, b), direction={direction}, type=TOTALORDER
}}"""


def test_the_topk_decomposition_is_a_named_assumption() -> None:
    assert TOPK_DECOMPOSITION in ASSUMPTIONS and "stable sort" in ASSUMPTIONS[TOPK_DECOMPOSITION]


@pytest.mark.parametrize("largest,direction", [("true", "GT"), ("false", "LT")])
def test_the_topk_op_pairs_with_its_decomposition(largest: str, direction: str) -> None:
    before = _TOPK_OP.format(n=8, k=3, largest=largest)
    after = _DECOMPOSED.format(n=8, k=3, stable="true", direction=direction)
    r = validate_pair(before, after, mode="logical")
    assert r.status == "proved" and TOPK_DECOMPOSITION in r.assumptions, r.reason


@pytest.mark.parametrize(
    "mutant",
    [
        _DECOMPOSED.format(n=8, k=3, stable="true", direction="LT"),  # swapped comparator
        _DECOMPOSED.format(n=8, k=3, stable="false", direction="GT"),  # unstable: ties reorder
        _DECOMPOSED.format(n=8, k=3, stable="true", direction="GT").replace("[0:3], [0:3]", "[0:3], [1:4]"),
    ],
    ids=["swapped-comparator", "unstable", "shifted-slice"],
)
def test_a_wrong_topk_decomposition_is_not_proved(mutant: str) -> None:
    r = validate_pair(_TOPK_OP.format(n=8, k=3, largest="true"), mutant, mode="logical")
    assert r.status != "proved"


def test_a_topk_op_with_another_k_does_not_pair() -> None:
    before = _TOPK_OP.format(n=8, k=4, largest="true")
    after = _DECOMPOSED.format(n=8, k=4, stable="true", direction="GT")
    assert validate_pair(before, after, mode="logical").status == "proved"
    wrong = before.replace("k=4, largest", "k=3, largest")  # the attribute disagrees with the shape
    assert validate_pair(wrong, after, mode="logical").status != "proved"


def test_the_topk_custom_call_pairs_with_the_sort_it_replaced() -> None:
    before = _DECOMPOSED.format(n=8, k=3, stable="true", direction="GT")
    after = _CUSTOM_CALL.format(n=8, k=3, direction="GT")
    r = validate_pair(before, after, mode="logical")
    assert r.status == "proved" and TOPK_DECOMPOSITION in r.assumptions, r.reason
    wrong = _CUSTOM_CALL.format(n=8, k=3, direction="LT")
    assert validate_pair(before, wrong, mode="logical").status != "proved"


def _run_topk_form(side: Side, x: np.ndarray) -> np.ndarray:
    """The form's iota / sort / get-tuple-element / slice / tuple ops, run from XLA's semantics
    (a stable sort by the comparator compare(p0, p1) GT TOTALORDER)."""
    values: dict = {"x": x}
    for instr in side.builder.instructions:
        ops = [values.get(o.name) for o in instr.operands]
        if instr.opcode == "parameter":
            continue
        if instr.opcode == "iota":
            d = int(instr.attributes["iota_dimension"])
            shape = instr.shape.dimensions
            values[instr.name] = np.indices(shape)[d]
        elif instr.opcode == "sort":
            comparator = side.module.computation(instr.to_apply)
            assert comparator.root.attributes["direction"] == "GT"
            rows = []
            for row, idx in zip(ops[0], ops[1], strict=True):
                order = sorted(range(len(row)), key=lambda j, row=row: -row[j])  # stable, descending
                rows.append((row[order], idx[order]))
            values[instr.name] = (np.array([r[0] for r in rows]), np.array([r[1] for r in rows]))
        elif instr.opcode == "get-tuple-element":
            values[instr.name] = ops[0][instr.index]
        elif instr.opcode == "slice":
            values[instr.name] = ops[0][tuple(slice(d.start, d.limit, d.stride) for d in instr.slice)]
        elif instr.opcode == "tuple":
            values[instr.name] = tuple(ops)
    return values[side.root]


def test_the_topk_form_computes_the_top_k_with_ties_broken_by_index() -> None:
    """The form of the topk op, run, against top-k by brute force (the k largest per row,
    equal values in index order, as jax.lax.top_k documents) on rows with many ties."""
    data = np.random.default_rng(2)
    for k in (1, 3, 8):
        side = Side.of(parse_module(_TOPK_OP.format(n=8, k=k, largest="true")))
        for _ in range(20):
            x = data.integers(0, 4, (3, 8)).astype(np.float32)
            got = _run_topk_form(side, x)
            for row, idx in zip(x, got, strict=True):
                expected = sorted(range(8), key=lambda j, row=row: (-row[j], j))[:k]
                assert list(idx) == expected


# ------------------------------------------------------------------------ gather
def _reference_gather(operand, indices, dims: dict):
    """XLA's gather from its operation semantics, element by element (the oracle): for an
    output index, the batch dimensions pick a start index vector (and the operand batching
    dimensions' positions), each start clamped to [0, operand size - slice size]; the offset
    dimensions walk the slice's non-collapsed, non-batching dimensions in order."""
    offset, collapsed, sim = dims["offset_dims"], dims["collapsed_slice_dims"], dims["start_index_map"]
    ob, sb, ivd, sizes = (
        dims["operand_batching_dims"],
        dims["start_indices_batching_dims"],
        dims["ivd"],
        dims["sizes"],
    )
    rank = operand.ndim
    if ivd == indices.ndim:
        indices = indices[..., None]
    batch_dims = [d for d in range(indices.ndim) if d != ivd]
    window = [d for d in range(rank) if d not in collapsed and d not in ob]
    out_rank = len(batch_dims) + len(offset)
    batch_out = [d for d in range(out_rank) if d not in offset]
    out_shape = [0] * out_rank
    for d, b in zip(batch_out, batch_dims, strict=True):
        out_shape[d] = indices.shape[b]
    for d, w in zip(offset, window, strict=True):
        out_shape[d] = sizes[w]
    out = np.zeros(out_shape, dtype=operand.dtype)
    for o in itertools.product(*map(range, out_shape)):
        g = [o[d] for d in batch_out]
        vector_at = list(g)
        vector_at.insert(ivd, 0)
        start = [0] * rank
        for k, d in enumerate(sim):
            vector_at[ivd] = k
            start[d] = int(indices[tuple(vector_at)])
        for j, d in enumerate(ob):
            start[d] = g[batch_dims.index(sb[j])]
        start = [min(max(s, 0), operand.shape[d] - sizes[d]) for d, s in enumerate(start)]
        full = list(start)
        for d, w in zip(offset, window, strict=True):
            full[w] += o[d]
        out[o] = operand[tuple(full)]
    return out


def _gather_text(a_shape, i_shape, out_shape, dims: dict) -> str:
    fields = [
        f"offset_dims={{{','.join(map(str, dims['offset_dims']))}}}",
        f"collapsed_slice_dims={{{','.join(map(str, dims['collapsed_slice_dims']))}}}",
        f"start_index_map={{{','.join(map(str, dims['start_index_map']))}}}",
    ]
    if dims["operand_batching_dims"]:
        fields.append(f"operand_batching_dims={{{','.join(map(str, dims['operand_batching_dims']))}}}")
        fields.append(
            f"start_indices_batching_dims={{{','.join(map(str, dims['start_indices_batching_dims']))}}}"
        )
    fields.append(f"index_vector_dim={dims['ivd']}")
    fields.append(f"slice_sizes={{{','.join(map(str, dims['sizes']))}}}")
    return f"""HloModule m
ENTRY e {{
  a = {_s32(a_shape)} parameter(0)
  i = {_s32(i_shape)} parameter(1)
  ROOT g = {_s32(out_shape)} gather(a, i), {", ".join(fields)}
}}"""


def _random_gather(rng: random.Random):
    rank = rng.randint(1, 3)
    a_shape = [rng.randint(1, 4) for _ in range(rank)]
    dims_left = list(range(rank))
    rng.shuffle(dims_left)
    n_ob = rng.randint(0, min(1, rank - 1))
    ob = sorted(dims_left[:n_ob])
    rest = dims_left[n_ob:]
    sim = rng.sample(rest, rng.randint(0, len(rest)))
    sizes = [1 if d in ob else rng.randint(1, a_shape[d]) for d in range(rank)]
    collapsible = [d for d in range(rank) if sizes[d] == 1 and d not in ob]
    collapsed = sorted(rng.sample(collapsible, rng.randint(0, len(collapsible))))
    n_batch = rng.randint(n_ob, 2) if n_ob else rng.randint(0, 2)
    batch_sizes = [rng.randint(1, 3) for _ in range(n_batch)]
    for j, d in enumerate(ob):
        batch_sizes[j] = a_shape[d]  # the batching dimension runs over the operand's
    ivd = rng.randint(0, n_batch) if sim or rng.random() < 0.5 else n_batch
    i_shape = list(batch_sizes)
    if len(sim) != 1 or ivd < n_batch or rng.random() < 0.5:
        i_shape.insert(ivd, len(sim))
    else:  # one start index: the index vector dimension may be implicit (ivd = rank)
        ivd = n_batch
    batch_positions = [d for d in range(len(i_shape)) if d != ivd]
    sb_pool = list(range(n_ob))
    rng.shuffle(sb_pool)
    sb = [batch_positions[j] for j in sb_pool[:n_ob]]
    # the batching pairs: operand dim ob[j] runs with indices dim sb[j]
    for j, d in enumerate(ob):
        batch_sizes_at = i_shape[sb[j]]
        a_shape[d] = batch_sizes_at
        sizes[d] = 1
    window = [d for d in range(rank) if d not in collapsed and d not in ob]
    out_rank = len(batch_positions) + len(window)
    offset = sorted(rng.sample(range(out_rank), len(window)))
    return (
        a_shape,
        i_shape,
        {
            "offset_dims": offset,
            "collapsed_slice_dims": collapsed,
            "start_index_map": sim,
            "operand_batching_dims": ob,
            "start_indices_batching_dims": sb,
            "ivd": ivd,
            "sizes": sizes,
        },
    )


def _run_movement(emitted, values: dict, builder_shapes: dict):
    """The movement ops and inner gathers a form emits, run from XLA's semantics."""
    for instr in emitted:
        ops = [values[o.name] for o in instr.operands]
        if instr.opcode == "reshape":
            values[instr.name] = ops[0].reshape(instr.shape.dimensions)
        elif instr.opcode == "transpose":
            values[instr.name] = np.transpose(ops[0], instr.dimensions)
        elif instr.opcode == "iota":
            values[instr.name] = np.indices(instr.shape.dimensions)[int(instr.attributes["iota_dimension"])]
        elif instr.opcode == "concatenate":
            values[instr.name] = np.concatenate(ops, axis=instr.dimensions[0])
        elif instr.opcode == "gather":
            a = instr.attributes

            def ints(k: str, a=a) -> list[int]:
                return [int(v) for v in a.get(k, "{}").strip("{}").split(",") if v]

            values[instr.name] = _reference_gather(
                ops[0],
                ops[1],
                {
                    "offset_dims": ints("offset_dims"),
                    "collapsed_slice_dims": ints("collapsed_slice_dims"),
                    "start_index_map": ints("start_index_map"),
                    "operand_batching_dims": ints("operand_batching_dims"),
                    "start_indices_batching_dims": ints("start_indices_batching_dims"),
                    "ivd": int(a["index_vector_dim"]),
                    "sizes": ints("slice_sizes"),
                },
            )
        else:
            raise AssertionError(instr.opcode)
    return values[emitted[-1].name]


def test_the_gather_simple_form_computes_the_gather() -> None:
    """300 random gathers (operand rank 1 to 3, random start_index_map order, collapsed and
    operand batching dimensions, slice sizes, implicit and explicit index vector dimensions,
    out-of-range start indices that XLA clamps): the simple form, run, equals the reference."""
    rng = random.Random(17)
    data = np.random.default_rng(17)
    done = 0
    for _ in range(300):
        a_shape, i_shape, dims = _random_gather(rng)
        operand = data.integers(-50, 50, a_shape)
        indices = data.integers(-2, 6, i_shape)
        expected = _reference_gather(operand, indices, dims)
        module = parse_module(_gather_text(a_shape, i_shape, expected.shape, dims))
        builder = Builder()
        for instr in module.entry.instructions[:2]:
            builder.emit(instr)
        emitted = gather_simple_form(builder, module.entry.instructions[2])
        assert emitted is not None, _gather_text(a_shape, i_shape, expected.shape, dims)
        (inner,) = [i for i in emitted if i.opcode == "gather"]
        assert (
            inner.attributes["collapsed_slice_dims"] == "{}" and inner.attributes["index_vector_dim"] == "1"
        )
        got = _run_movement(emitted, {"a": operand, "i": indices}, builder.shapes)
        assert got.shape == expected.shape and np.array_equal(got, expected), dims
        done += 1
    assert done == 300


_EMBED = """HloModule m
ENTRY e {{
  t = f32[10,8]{{1,0}} parameter(0)
  i = s32[4,6]{{1,0}} parameter(1)
  ROOT g = f32[4,6,8]{{2,1,0}} gather(t, i), offset_dims={{2}}, collapsed_slice_dims={{0}}, start_index_map={{0}}, index_vector_dim=2, slice_sizes={{1,8}}
}}"""
_EMBED_SIMPLIFIED = """HloModule m
ENTRY e {{
  t = f32[10,8]{{1,0}} parameter(0)
  i = s32[4,6]{{1,0}} parameter(1)
  r = s32[24,1]{{1,0}} reshape(i)
  g2 = f32[24,1,8]{{2,1,0}} gather(t, r), offset_dims={{1,2}}, collapsed_slice_dims={{}}, start_index_map={{0}}, index_vector_dim=1, slice_sizes={{1,{size}}}
  r2 = f32[24,{size}]{{1,0}} reshape(g2)
  ROOT g = f32[4,6,{size}]{{2,1,0}} reshape(r2)
}}"""


def test_gather_simplifiers_form_pairs_with_the_gather_and_a_wrong_one_does_not() -> None:
    r = validate_pair(_EMBED.format(), _EMBED_SIMPLIFIED.format(size=8), mode="logical")
    assert r.status == "proved", r.reason
    transposed = _EMBED_SIMPLIFIED.format(size=8).replace(
        "r = s32[24,1]{1,0} reshape(i)",
        "ti = s32[6,4]{1,0} transpose(i), dimensions={1,0}\n  r = s32[24,1]{1,0} reshape(ti)",
    )
    assert validate_pair(_EMBED.format(), transposed, mode="logical").status != "proved"
    other_map = (
        _EMBED.format()
        .replace("f32[10,8]", "f32[8,8]")
        .replace("start_index_map={0}", "start_index_map={1}")
        .replace("collapsed_slice_dims={0}", "collapsed_slice_dims={1}")
        .replace("slice_sizes={1,8}", "slice_sizes={8,1}")
    )
    simplified = _EMBED_SIMPLIFIED.format(size=8).replace("f32[10,8]", "f32[8,8]")
    assert validate_pair(other_map, simplified, mode="logical").status != "proved"


# ------------------------------------------------------------------------ scatter
def _reference_scatter(operand, indices, updates, dims: dict):
    """XLA's scatter from its operation semantics, update element by update element in
    row-major order (the oracle): the scatter dimensions of the update index pick a start
    index vector, the window dimensions walk the operand dimensions that are not inserted;
    an update whose whole window is not inside the operand is skipped; combined by add."""
    uwd, iwd, sdod, ivd = dims["update_window_dims"], dims["inserted_window_dims"], dims["sdod"], dims["ivd"]
    ib, sib = dims.get("input_batching_dims", []), dims.get("scatter_indices_batching_dims", [])
    out = operand.copy()
    rank = operand.ndim
    if ivd == indices.ndim:
        indices = indices[..., None]
    scatter_dims = [d for d in range(updates.ndim) if d not in uwd]
    batch_dims = [d for d in range(indices.ndim) if d != ivd]
    window_dims = [d for d in range(rank) if d not in iwd and d not in ib]
    window = [1] * rank
    for d, u in zip(window_dims, uwd, strict=True):
        window[d] = updates.shape[u]
    for u in itertools.product(*map(range, updates.shape)):
        g = [u[d] for d in scatter_dims]
        at = list(g)
        at.insert(ivd, 0)
        start = [0] * rank
        for k, d in enumerate(sdod):
            at[ivd] = k
            start[d] = int(indices[tuple(at)])
        for j, d in enumerate(ib):  # the operand batching dimension runs with the indices'
            start[d] = g[batch_dims.index(sib[j])]
        if any(s < 0 or s + w > n for s, w, n in zip(start, window, operand.shape, strict=True)):
            continue
        pos = list(start)
        for d, w in zip(window_dims, uwd, strict=True):
            pos[d] += u[w]
        out[tuple(pos)] += updates[u]
    return out


def _random_scatter(rng: random.Random):
    rank = rng.randint(1, 3)
    a_shape = [rng.randint(1, 4) for _ in range(rank)]
    ib = [rng.randrange(rank)] if rank > 1 and rng.random() < 0.3 else []
    sdod = rng.sample([d for d in range(rank) if d not in ib], rng.randint(0, rank - len(ib)))
    window = [1 if d in ib else rng.randint(1, a_shape[d]) for d in range(rank)]
    ones = [d for d in range(rank) if window[d] == 1 and d not in ib]
    iwd = sorted(rng.sample(ones, rng.randint(0, len(ones))))
    window_dims = [d for d in range(rank) if d not in iwd and d not in ib]
    n_batch = rng.randint(len(ib), 2)
    batch = [rng.randint(1, 3) for _ in range(n_batch)]
    if ib:
        batch[0] = a_shape[ib[0]]  # the batching pair: indices dimension 0 with operand dimension ib
    u_rank = n_batch + len(window_dims)
    uwd = sorted(rng.sample(range(u_rank), len(window_dims)))
    u_shape, b_iter, w_iter = [], iter(batch), iter(window_dims)
    for d in range(u_rank):
        u_shape.append(window[next(w_iter)] if d in uwd else next(b_iter))
    ivd = rng.randint(1 if ib else 0, n_batch)
    i_shape = list(batch)
    if len(sdod) != 1 or rng.random() < 0.5:
        i_shape.insert(ivd, len(sdod))
    else:
        ivd = n_batch
    dims = {"update_window_dims": uwd, "inserted_window_dims": iwd, "sdod": sdod, "ivd": ivd}
    if ib:
        dims.update(input_batching_dims=ib, scatter_indices_batching_dims=[0])
    return a_shape, i_shape, u_shape, dims


def _scatter_text(a_shape, i_shape, u_shape, dims: dict) -> str:
    batching = ""
    if dims.get("input_batching_dims"):
        batching = (
            f"input_batching_dims={{{','.join(map(str, dims['input_batching_dims']))}}}, "
            f"scatter_indices_batching_dims={{{','.join(map(str, dims['scatter_indices_batching_dims']))}}}, "
        )
    return f"""HloModule m
ENTRY e {{
  a = {_s32(a_shape)} parameter(0)
  i = {_s32(i_shape)} parameter(1)
  u = {_s32(u_shape)} parameter(2)
  ROOT s = {_s32(a_shape)} scatter(a, i, u), update_window_dims={{{",".join(map(str, dims["update_window_dims"]))}}}, inserted_window_dims={{{",".join(map(str, dims["inserted_window_dims"]))}}}, scatter_dims_to_operand_dims={{{",".join(map(str, dims["sdod"]))}}}, {batching}index_vector_dim={dims["ivd"]}, to_apply=add
}}
add {{
  x = s32[] parameter(0)
  y = s32[] parameter(1)
  ROOT z = s32[] add(x, y)
}}"""


def test_the_scatter_simple_form_computes_the_scatter() -> None:
    """300 random scatter-adds (operand rank 1 to 3, random scatter_dims_to_operand_dims
    order, inserted window dimensions, window sizes, update dimension orders, implicit index
    vector dimensions, start indices partly out of range): the simple form, run with the same
    oracle for its inner scatter, equals the reference."""
    rng = random.Random(23)
    data = np.random.default_rng(23)
    for _ in range(300):
        a_shape, i_shape, u_shape, dims = _random_scatter(rng)
        operand = data.integers(-50, 50, a_shape)
        indices = data.integers(-1, 4, i_shape)
        updates = data.integers(-50, 50, u_shape)
        expected = _reference_scatter(operand, indices, updates, dims)
        text = _scatter_text(a_shape, i_shape, u_shape, dims)
        module = parse_module(text)
        builder = Builder()
        for instr in module.entry.instructions[:3]:
            builder.emit(instr)
        emitted = scatter_simple_form(builder, module.entry.instructions[3])
        assert emitted is not None, text
        values = {"a": operand, "i": indices, "u": updates}
        for instr in emitted:
            if instr.opcode == "scatter":
                ops = [values[o.name] for o in instr.operands]
                assert instr.attributes["inserted_window_dims"] == "{}"
                values[instr.name] = _reference_scatter(
                    *ops,
                    {
                        "update_window_dims": list(range(1, len(a_shape) + 1)),
                        "inserted_window_dims": [],
                        "sdod": list(range(len(dims["sdod"]) + len(dims.get("input_batching_dims", [])))),
                        "ivd": 1,
                    },
                )
            else:
                _run_movement([instr], values, builder.shapes)
        got = values[emitted[-1].name]
        assert got.shape == expected.shape and np.array_equal(got, expected), text


_SCATTER_ADD = """HloModule m
ENTRY e {
  t = f32[10,8]{1,0} parameter(0)
  i = s32[4,6]{1,0} parameter(1)
  u = f32[4,6,8]{2,1,0} parameter(2)
  ROOT s = f32[10,8]{1,0} scatter(t, i, u), update_window_dims={2}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=2, to_apply=add
}
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT z = f32[] add(x, y)
}"""
_SCATTER_SIMPLIFIED = """HloModule m
ENTRY e {
  t = f32[10,8]{1,0} parameter(0)
  i = s32[4,6]{1,0} parameter(1)
  u = f32[4,6,8]{2,1,0} parameter(2)
  r = s32[24,1]{1,0} reshape(i)
  v = f32[24,8]{1,0} reshape(u)
  w = f32[24,1,8]{2,1,0} reshape(v)
  ROOT s = f32[10,8]{1,0} scatter(t, r, w), update_window_dims={1,2}, inserted_window_dims={}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add
}
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT z = f32[] add(x, y)
}"""


def test_scatter_simplifiers_form_pairs_with_the_scatter_and_a_wrong_one_does_not() -> None:
    r = validate_pair(_SCATTER_ADD, _SCATTER_SIMPLIFIED, mode="logical")
    assert r.status == "proved", r.reason
    swapped = _SCATTER_SIMPLIFIED.replace(
        "v = f32[24,8]{1,0} reshape(u)",
        "tu = f32[6,4,8]{2,1,0} transpose(u), dimensions={1,0,2}\n  v = f32[24,8]{1,0} reshape(tu)",
    )
    assert validate_pair(_SCATTER_ADD, swapped, mode="logical").status != "proved"
    multiply = _SCATTER_SIMPLIFIED.replace("ROOT z = f32[] add(x, y)", "ROOT z = f32[] multiply(x, y)")
    assert validate_pair(_SCATTER_ADD, multiply, mode="logical").status != "proved"


# ------------------------------------------------------------------------ map
_MAP = """HloModule m
ENTRY e {{
  x = f32[3,4]{{1,0}} parameter(0)
  y = f32[3,4]{{1,0}} parameter(1)
  ROOT m = f32[3,4]{{1,0}} map(x, y), dimensions={{0,1}}, to_apply=f
}}
f {{
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  two = f32[] constant(2)
  t = f32[] multiply(b, two)
  ROOT s = f32[] {op}(a, t)
}}"""
_INLINED = """HloModule m
ENTRY e {{
  x = f32[3,4]{{1,0}} parameter(0)
  y = f32[3,4]{{1,0}} parameter(1)
  two = f32[] constant(2)
  b2 = f32[3,4]{{1,0}} broadcast(two), dimensions={{}}
  t = f32[3,4]{{1,0}} multiply(y, b2)
  ROOT s = f32[3,4]{{1,0}} {op}({first}, {second})
}}"""


def test_an_elementwise_map_is_its_computation_over_whole_arrays() -> None:
    module = parse_module(_MAP.format(op="subtract"))
    builder = Builder()
    for instr in module.entry.instructions[:2]:
        builder.emit(instr)
    from layout_algebra.hlo.pass_forms import map_inlined

    emitted = map_inlined(builder, module, module.entry.instructions[2])
    assert emitted is not None and emitted[-1].name == "m"
    data = np.random.default_rng(4)
    x, y = data.standard_normal((3, 4)), data.standard_normal((3, 4))
    values: dict = {"x": x, "y": y}
    run = {"multiply": np.multiply, "subtract": np.subtract}
    for instr in emitted:
        ops = [values[o.name] for o in instr.operands]
        if instr.opcode == "constant":
            values[instr.name] = np.float64(instr.literal)
        elif instr.opcode == "broadcast":
            values[instr.name] = np.broadcast_to(ops[0], instr.shape.dimensions)
        else:
            values[instr.name] = run[instr.opcode](*ops)
    expected = np.array(
        [[x[i, j] - y[i, j] * 2 for j in range(4)] for i in range(3)]
    )  # map, element by element
    assert np.array_equal(values["m"], expected)


def test_a_map_pairs_with_its_inlined_computation_and_a_swapped_one_does_not() -> None:
    r = validate_pair(
        _MAP.format(op="subtract"), _INLINED.format(op="subtract", first="x", second="t"), mode="logical"
    )
    assert r.status == "proved", r.reason
    swapped = _INLINED.format(op="subtract", first="t", second="x")
    assert validate_pair(_MAP.format(op="subtract"), swapped, mode="logical").status != "proved"


# ------------------------------------------------------------------------ whole-window reduce-window
def _reference_reduce_window_max(x, size: int, stride: int, pad: tuple[int, int], init: float):
    """XLA's one-dimensional reduce-window by max along the last dimension (the oracle): the
    row padded with ``init``, a window of ``size`` every ``stride``."""
    padded = np.concatenate(
        [np.full((*x.shape[:-1], pad[0]), init), x, np.full((*x.shape[:-1], pad[1]), init)], -1
    )
    count = (padded.shape[-1] - size) // stride + 1
    return np.stack([padded[..., j * stride : j * stride + size].max(-1) for j in range(count)], -1)


def test_a_reduce_window_is_a_broadcast_reduce_exactly_when_its_windows_cover_the_row() -> None:
    """Random one-dimensional max windows over rows of 5: read as reduce + broadcast exactly when
    the reference reduce-window of every one-hot row (the maximum at each position in turn)
    is the row maximum everywhere, and XLA:TPU's form (size 2n-1, padding n-1 both sides) is
    always read so."""
    from layout_algebra.hlo.pass_forms import whole_window_reduce

    rng = random.Random(29)
    read = 0
    for trial in range(200):
        n = 5
        if trial % 4 == 0:
            size, stride, pad = 2 * n - 1, 1, (n - 1, n - 1)
        else:
            size, stride, pad = rng.randint(1, 10), rng.randint(1, 3), (rng.randint(0, 5), rng.randint(0, 5))
        if n + sum(pad) < size:
            continue
        x = np.eye(n, dtype=np.float32)  # row p: its maximum at position p alone
        expected = _reference_reduce_window_max(x, size, stride, pad, -np.inf)
        m = expected.shape[-1]
        text = f"""HloModule m
ENTRY e {{
  x = f32[{n},{n}]{{1,0}} parameter(0)
  c = f32[] constant(-inf)
  ROOT r = f32[{n},{m}]{{1,0}} reduce-window(x, c), window={{size=1x{size} stride=1x{stride} pad=0_0x{pad[0]}_{pad[1]}}}, to_apply=mx
}}
mx {{
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] maximum(a, b)
}}"""
        module = parse_module(text)
        builder = Builder()
        for instr in module.entry.instructions[:2]:
            builder.emit(instr)
        by_name = {i.name: i for i in module.entry.instructions}
        emitted = whole_window_reduce(builder, module, by_name, module.entry.instructions[2])
        covers = bool(np.array_equal(expected, np.broadcast_to(x.max(-1, keepdims=True), expected.shape)))
        assert (emitted is not None) == covers, text
        if trial % 4 == 0:
            assert emitted is not None
        read += emitted is not None
    assert read >= 50


def test_a_float_sum_window_is_never_read_as_a_reduce() -> None:
    from layout_algebra.hlo.pass_forms import whole_window_reduce

    text = """HloModule m
ENTRY e {
  x = f32[3,5]{1,0} parameter(0)
  c = f32[] constant(-0)
  ROOT r = f32[3,5]{1,0} reduce-window(x, c), window={size=1x9 pad=0_0x4_4}, to_apply=add
}
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}"""
    module = parse_module(text)
    builder = Builder()
    for instr in module.entry.instructions[:2]:
        builder.emit(instr)
    by_name = {i.name: i for i in module.entry.instructions}
    assert whole_window_reduce(builder, module, by_name, module.entry.instructions[2]) is None


def test_tpu_fusions_row_max_window_pairs_with_the_reduce_and_a_short_window_does_not() -> None:
    before = """HloModule m
ENTRY e {
  x = f32[4,8]{1,0} parameter(0)
  c = f32[] constant(-inf)
  r = f32[4]{0} reduce(x, c), dimensions={1}, to_apply=mx
  b = f32[4,8]{1,0} broadcast(r), dimensions={0}
  ROOT s = f32[4,8]{1,0} subtract(x, b)
}
mx {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] maximum(a, b)
}"""
    after = """HloModule m
ENTRY e {
  x = f32[4,8]{1,0} parameter(0)
  c = f32[] constant(-inf)
  w = f32[4,8]{1,0} reduce-window(x, c), window={size=1x15 pad=0_0x7_7}, to_apply=mx
  ROOT s = f32[4,8]{1,0} subtract(x, w)
}
mx {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] maximum(a, b)
}"""
    r = validate_pair(before, after, mode="logical")
    assert r.status == "proved" and "whole-window-reduce" in r.assumptions, r.reason
    short = after.replace("size=1x15 pad=0_0x7_7", "size=1x14 pad=0_0x7_6")
    assert validate_pair(before, short, mode="logical").status != "proved"
