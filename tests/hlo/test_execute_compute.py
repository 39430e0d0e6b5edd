"""The executor's compute ops against brute-force loops written here from XLA's operation
semantics (https://openxla.org/xla/operation_semantics), on random inputs and random dimension
numbers at tiny sizes (seeded: the same cases every run). XLA:CPU's own answers are the other
oracle: tests/hlo/test_execute_compute_xla.py.
"""

from __future__ import annotations

import functools
import itertools
import math

import ml_dtypes
import numpy as np
import pytest

from layout_algebra.hlo.execute import COMPUTE_OPS, run
from layout_algebra.hlo.opcodes import EXECUTED_COMPUTE_OPCODES
from layout_algebra.hlo.parser import parse_module
from layout_algebra.hlo.pass_cuts import Cuts, Side, called_closure

SEEDS = range(12)


def shape_text(dtype: str, dims: tuple[int, ...]) -> str:
    if not dims:
        return f"{dtype}[]"
    layout = ",".join(str(d) for d in reversed(range(len(dims))))
    return f"{dtype}[{','.join(map(str, dims))}]{{{layout}}}"


def ints_text(xs: tuple[int, ...] | list[int]) -> str:
    return "{" + ",".join(map(str, xs)) + "}"


REGIONS = """
add_f { a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b) }
add_s { a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT s = s32[] add(a, b) }
max_s { a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT s = s32[] maximum(a, b) }
max_s_slow { a = s32[] parameter(0)
  b = s32[] parameter(1)
  na = s32[] negate(a)
  nb = s32[] negate(b)
  m = s32[] minimum(na, nb)
  ROOT s = s32[] negate(m) }
"""


def module(*lines: str, regions: str = REGIONS) -> str:
    body = "\n".join(f"  {'ROOT ' if k == len(lines) - 1 else ''}{line}" for k, line in enumerate(lines))
    return f"HloModule m\n{regions}\nENTRY e {{\n{body}\n}}"


def ints(
    rng: np.random.Generator, dims: tuple[int, ...], dtype=np.int32, lo: int = -50, hi: int = 50
) -> np.ndarray:
    return rng.integers(lo, hi, dims).astype(dtype)


# ---------------------------------------------------------------------------- dot
def brute_dot(x, y, lb, rb, lc, rc):
    lf = [d for d in range(x.ndim) if d not in lb + lc]
    rf = [d for d in range(y.ndim) if d not in rb + rc]
    out_dims = [x.shape[d] for d in lb] + [x.shape[d] for d in lf] + [y.shape[d] for d in rf]
    out = np.zeros(out_dims, object)
    for index in np.ndindex(*out_dims):
        bi, li, ri = index[: len(lb)], index[len(lb) : len(lb) + len(lf)], index[len(lb) + len(lf) :]
        terms = []
        for ci in np.ndindex(*[x.shape[d] for d in lc]):
            xi, yi = [0] * x.ndim, [0] * y.ndim
            for d, v in zip(lb, bi, strict=True):
                xi[d] = v
            for d, v in zip(rb, bi, strict=True):
                yi[d] = v
            for d, v in zip(lf, li, strict=True):
                xi[d] = v
            for d, v in zip(rf, ri, strict=True):
                yi[d] = v
            for d, v in zip(lc, ci, strict=True):
                xi[d] = v
            for d, v in zip(rc, ci, strict=True):
                yi[d] = v
            terms.append((x[tuple(xi)], y[tuple(yi)]))
        out[index] = terms
    return out


def random_dot_numbers(rng: np.random.Generator):
    counts = [int(c) for c in rng.integers(0, 3, 4)]  # batch, contracting, lhs free, rhs free
    sizes = [[int(s) for s in rng.integers(1, 4, c)] for c in counts]
    lhs = (
        [("b", i) for i in range(counts[0])]
        + [("c", i) for i in range(counts[1])]
        + [("l", i) for i in range(counts[2])]
    )
    rhs = (
        [("b", i) for i in range(counts[0])]
        + [("c", i) for i in range(counts[1])]
        + [("r", i) for i in range(counts[3])]
    )
    rng.shuffle(lhs)
    rng.shuffle(rhs)
    size = {"b": sizes[0], "c": sizes[1], "l": sizes[2], "r": sizes[3]}
    lhs_dims = tuple(size[r][i] for r, i in lhs)
    rhs_dims = tuple(size[r][i] for r, i in rhs)
    lb = [lhs.index(("b", i)) for i in range(counts[0])]
    rb = [rhs.index(("b", i)) for i in range(counts[0])]
    lc = [lhs.index(("c", i)) for i in range(counts[1])]
    rc = [rhs.index(("c", i)) for i in range(counts[1])]
    return lhs_dims, rhs_dims, lb, rb, lc, rc


@pytest.mark.parametrize("seed", SEEDS)
def test_dot_matches_the_sum_of_products(seed: int) -> None:
    rng = np.random.default_rng(seed)
    lhs_dims, rhs_dims, lb, rb, lc, rc = random_dot_numbers(rng)
    terms = brute_dot(np.zeros(lhs_dims), np.zeros(rhs_dims), lb, rb, lc, rc)
    out_dims = terms.shape
    numbers = (
        f"lhs_batch_dims={ints_text(lb)}, rhs_batch_dims={ints_text(rb)}, "
        f"lhs_contracting_dims={ints_text(lc)}, rhs_contracting_dims={ints_text(rc)}"
    )
    # s8 x s8 -> s32 and s32 wrapping: exact integers
    for source, result, lo, hi in (("s8", "s32", -128, 128), ("s32", "s32", -(2**31), 2**31)):
        dtype = {"s8": np.int8, "s32": np.int32}[source]
        x, y = ints(rng, lhs_dims, dtype, lo, hi), ints(rng, rhs_dims, dtype, lo, hi)
        text = module(
            f"x = {shape_text(source, lhs_dims)} parameter(0)",
            f"y = {shape_text(source, rhs_dims)} parameter(1)",
            f"d = {shape_text(result, out_dims)} dot(x, y), {numbers}",
        )
        got = run(text, [x, y]).array
        for index, pairs in np.ndenumerate(brute_dot(x, y, lb, rb, lc, rc)):
            exact = sum(int(a) * int(b) for a, b in pairs)
            wrapped = (exact + 2**31) % 2**32 - 2**31
            assert got[index] == wrapped
    # f32: every product exact, summed exactly (fsum), rounded once to f32
    x = rng.normal(0, 3, lhs_dims).astype(np.float32)
    y = rng.normal(0, 3, rhs_dims).astype(np.float32)
    text = module(
        f"x = {shape_text('f32', lhs_dims)} parameter(0)",
        f"y = {shape_text('f32', rhs_dims)} parameter(1)",
        f"d = {shape_text('f32', out_dims)} dot(x, y), {numbers}",
    )
    got = run(text, [x, y]).array
    for index, pairs in np.ndenumerate(brute_dot(x, y, lb, rb, lc, rc)):
        assert got[index] == np.float32(math.fsum(float(a) * float(b) for a, b in pairs))


def test_bf16_dot_into_f32_rounds_once() -> None:
    x = np.array([[1, 2**-8, 2**-8]], ml_dtypes.bfloat16)  # 1 + 2**-8 + 2**-8: bf16 steps would lose both
    y = np.ones((3, 1), ml_dtypes.bfloat16)
    text = module(
        "x = bf16[1,3]{1,0} parameter(0)",
        "y = bf16[3,1]{1,0} parameter(1)",
        "d = f32[1,1]{1,0} dot(x, y), lhs_contracting_dims={1}, rhs_contracting_dims={0}",
    )
    assert run(text, [x, y]).array[0, 0] == np.float32(1 + 2**-7)
    as_bf16 = text.replace("d = f32[1,1]", "d = bf16[1,1]")
    assert run(as_bf16, [x, y]).array[0, 0] == ml_dtypes.bfloat16(1 + 2**-7)


# --------------------------------------------------------------------- convolution
def brute_convolution(x, w, strides, pads, lhs_dil, rhs_dil, reversal, groups, batch_groups):
    """x [N, C, S...], w [O, I, K...] -> [N / batch_groups, O, P...], by the definition."""
    n = x.shape[0]
    o, i = w.shape[:2]
    spatial, kernel = x.shape[2:], w.shape[2:]
    outs = []
    for s, k, st, (lo, hi), ld, rd in zip(spatial, kernel, strides, pads, lhs_dil, rhs_dil, strict=True):
        dilated = (s - 1) * ld + 1
        span = (k - 1) * rd + 1
        outs.append(max(0, (dilated + lo + hi - span) // st + 1))
    out = np.zeros([n // batch_groups, o, *outs], np.int64)
    for b, f, *p in itertools.product(*(range(v) for v in out.shape)):
        g = f // (o // groups)
        bg = f // (o // batch_groups)
        total = 0
        for kpos in itertools.product(*(range(k) for k in kernel)):
            where = []
            for d, kk in enumerate(kpos):
                u = p[d] * strides[d] - pads[d][0] + kk * rhs_dil[d]
                if u < 0 or u % lhs_dil[d] or u // lhs_dil[d] >= spatial[d]:
                    break
                where.append(u // lhs_dil[d])
            else:
                tap = tuple(kernel[d] - 1 - kk if reversal[d] else kk for d, kk in enumerate(kpos))
                for ci in range(i):
                    total += int(x[(bg * (n // batch_groups) + b, g * i + ci, *where)]) * int(
                        w[(f, ci, *tap)]
                    )
        out[(b, f, *p)] = total
    return out


@pytest.mark.parametrize("seed", SEEDS)
def test_convolution_matches_the_definition(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    rank = int(rng.integers(1, 3))
    groups, batch_groups = [(1, 1), (2, 1), (1, 2), (3, 1)][seed % 4]
    i = int(rng.integers(1, 3))
    n, c, o = 2 * batch_groups, i * groups, groups * batch_groups * int(rng.integers(1, 3))
    spatial = [int(s) for s in rng.integers(2, 6, rank)]
    kernel = [int(k) for k in rng.integers(1, 4, rank)]
    strides = [int(s) for s in rng.integers(1, 3, rank)]
    pads = [(int(rng.integers(-1, 3)), int(rng.integers(-1, 3))) for _ in range(rank)]
    lhs_dil = [int(s) for s in rng.integers(1, 3, rank)]
    rhs_dil = [int(s) for s in rng.integers(1, 3, rank)]
    reversal = [int(s) for s in rng.integers(0, 2, rank)]
    x, w = ints(rng, (n, c, *spatial)), ints(rng, (o, i, *kernel))
    want = brute_convolution(x, w, strides, pads, lhs_dil, rhs_dil, reversal, groups, batch_groups)
    digits = "".join(str(d) for d in range(rank))
    # random dimension orders: permute the canonical arrays and say so in dim_labels
    lhs_perm, rhs_perm, out_perm = (list(rng.permutation(rank + 2)) for _ in range(3))
    lhs_labels = "".join(("bf" + digits)[d] for d in lhs_perm)
    rhs_labels = "".join(("oi" + digits)[d] for d in rhs_perm)
    out_labels = "".join(("bf" + digits)[d] for d in out_perm)
    window = " ".join(
        [
            "size=" + "x".join(map(str, kernel)),
            "stride=" + "x".join(map(str, strides)),
            "pad=" + "x".join(f"{lo}_{hi}" for lo, hi in pads),
            "lhs_dilate=" + "x".join(map(str, lhs_dil)),
            "rhs_dilate=" + "x".join(map(str, rhs_dil)),
            "rhs_reversal=" + "x".join(map(str, reversal)),
        ]
    )
    xp, wp = np.transpose(x, lhs_perm), np.transpose(w, rhs_perm)
    out_dims = tuple(want.shape[d] for d in out_perm)
    text = module(
        f"x = {shape_text('s32', xp.shape)} parameter(0)",
        f"w = {shape_text('s32', wp.shape)} parameter(1)",
        f"c = {shape_text('s32', out_dims)} convolution(x, w), window={{{window}}}, "
        f"dim_labels={lhs_labels}_{rhs_labels}->{out_labels}, feature_group_count={groups}, "
        f"batch_group_count={batch_groups}",
    )
    got = run(text, [np.ascontiguousarray(xp), np.ascontiguousarray(wp)]).array
    assert np.array_equal(got, np.transpose(want, out_perm).astype(np.int32))


# ------------------------------------------------------------------ reductions
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("reducer", ["add_s", "max_s", "max_s_slow"])
def test_reduce_matches_a_fold(seed: int, reducer: str) -> None:
    rng = np.random.default_rng(200 + seed)
    rank = int(rng.integers(1, 4))
    dims = tuple(int(d) for d in rng.integers(1, 5, rank))
    reduced = sorted(int(d) for d in rng.choice(rank, int(rng.integers(0, rank + 1)), replace=False))
    kept = [d for d in range(rank) if d not in reduced]
    x = ints(rng, dims, lo=-(2**31), hi=2**31)
    init = np.int32(rng.integers(-5, 5))
    text = module(
        f"x = {shape_text('s32', dims)} parameter(0)",
        "i = s32[] parameter(1)",
        f"r = {shape_text('s32', tuple(dims[d] for d in kept))} reduce(x, i), dimensions={ints_text(reduced)}, "
        f"to_apply={reducer}",
    )
    got = run(text, [x, init]).array
    combine = (lambda a, b: (a + b + 2**31) % 2**32 - 2**31) if reducer == "add_s" else max
    for out_index in np.ndindex(*[dims[d] for d in kept]):
        acc = int(init)
        for red_index in np.ndindex(*[dims[d] for d in reduced]):
            full = [0] * rank
            for d, v in zip(kept, out_index, strict=True):
                full[d] = v
            for d, v in zip(reduced, red_index, strict=True):
                full[d] = v
            acc = combine(acc, int(x[tuple(full)]))
        assert got[out_index] == acc


ARGMAX = """
argmax { v0 = s32[] parameter(0)
  i0 = s32[] parameter(1)
  v1 = s32[] parameter(2)
  i1 = s32[] parameter(3)
  gt = pred[] compare(v0, v1), direction=GT
  eq = pred[] compare(v0, v1), direction=EQ
  lt = pred[] compare(i0, i1), direction=LT
  tie = pred[] and(eq, lt)
  keep = pred[] or(gt, tie)
  v = s32[] select(keep, v0, v1)
  i = s32[] select(keep, i0, i1)
  ROOT t = (s32[], s32[]) tuple(v, i) }
"""


@pytest.mark.parametrize("seed", SEEDS)
def test_variadic_reduce_finds_the_first_maximum(seed: int) -> None:
    rng = np.random.default_rng(300 + seed)
    rows, cols = (int(d) for d in rng.integers(1, 9, 2))
    x = ints(rng, (rows, cols), lo=0, hi=4)  # many ties
    text = module(
        f"x = {shape_text('s32', (rows, cols))} parameter(0)",
        f"io = {shape_text('s32', (rows, cols))} iota(), iota_dimension=1",
        "lo = s32[] constant(-2147483648)",
        "z = s32[] constant(0)",
        f"r = (s32[{rows}]{{0}}, s32[{rows}]{{0}}) reduce(x, io, lo, z), dimensions={{1}}, to_apply=argmax",
        regions=ARGMAX,
    )
    values, indices = run(text, [x])
    assert values.array.tolist() == x.max(axis=1).tolist()
    assert indices.array.tolist() == [int(np.argmax(row)) for row in x]  # numpy: the first maximum


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("reducer", ["add_s", "max_s_slow"])
def test_reduce_window_matches_the_definition(seed: int, reducer: str) -> None:
    rng = np.random.default_rng(400 + seed)
    rank = int(rng.integers(1, 3))
    dims = tuple(int(d) for d in rng.integers(2, 6, rank))
    size = [int(s) for s in rng.integers(1, 4, rank)]
    stride = [int(s) for s in rng.integers(1, 3, rank)]
    pads = [(int(rng.integers(0, 3)), int(rng.integers(0, 3))) for _ in range(rank)]
    base = [int(s) for s in rng.integers(1, 3, rank)]
    dil = [int(s) for s in rng.integers(1, 3, rank)]
    out = []
    for s, k, st, (lo, hi), b, d in zip(dims, size, stride, pads, base, dil, strict=True):
        out.append(max(0, ((s - 1) * b + 1 + lo + hi - ((k - 1) * d + 1)) // st + 1))
    x = ints(rng, dims)
    init = np.int32(-1000 if reducer != "add_s" else 7)
    window = (
        f"size={'x'.join(map(str, size))} stride={'x'.join(map(str, stride))} "
        f"pad={'x'.join(f'{lo}_{hi}' for lo, hi in pads)} lhs_dilate={'x'.join(map(str, base))} "
        f"rhs_dilate={'x'.join(map(str, dil))}"
    )
    text = module(
        f"x = {shape_text('s32', dims)} parameter(0)",
        "i = s32[] parameter(1)",
        f"r = {shape_text('s32', tuple(out))} reduce-window(x, i), window={{{window}}}, to_apply={reducer}",
    )
    got = run(text, [x, init]).array
    for o in np.ndindex(*out):
        acc = int(init)
        for k in np.ndindex(*size):
            u = [o[d] * stride[d] - pads[d][0] + k[d] * dil[d] for d in range(rank)]
            if all(v >= 0 and v % base[d] == 0 and v // base[d] < dims[d] for d, v in enumerate(u)):
                value = int(x[tuple(v // base[d] for d, v in enumerate(u))])
                acc = acc + value if reducer == "add_s" else max(acc, value)
        assert got[o] == acc


def test_float_add_reduction_is_summed_then_rounded_once() -> None:
    x = np.array([1.0, 2.0**-24, 2.0**-24], np.float32)  # f32 steps: 1 + 2**-24 rounds back to 1 twice
    text = module("x = f32[3]{0} parameter(0)", "z = f32[] constant(0)",
                  "r = f32[] reduce(x, z), dimensions={0}, to_apply=add_f")  # fmt: skip
    assert run(text, [x]).array == np.float32(1 + 2.0**-23)


def test_select_and_scatter_adds_the_source_at_each_window_maximum() -> None:
    regions = """
ge { a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = pred[] compare(a, b), direction=GE }
add { a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b) }
"""
    rng = np.random.default_rng(7)
    x = rng.normal(0, 1, (5, 6)).astype(np.float32)
    x[0, 1] = x[0, 0]  # a tie: GE keeps the first
    source = rng.normal(0, 1, (2, 5)).astype(np.float32)
    text = module(
        "x = f32[5,6]{1,0} parameter(0)",
        "s = f32[2,5]{1,0} parameter(1)",
        "z = f32[] constant(0)",
        "r = f32[5,6]{1,0} select-and-scatter(x, s, z), window={size=2x2 stride=2x1}, select=ge, scatter=add",
        regions=regions,
    )
    want = np.zeros((5, 6), np.float64)
    for i, j in np.ndindex(2, 5):
        block = [(2 * i + a, j + b) for a in range(2) for b in range(2)]
        best = block[0]
        for p in block[1:]:
            if not x[best] >= x[p]:
                best = p
        want[best] += source[i, j]
    assert np.allclose(run(text, [x, source]).array, want, rtol=1e-6, atol=1e-6)


# ------------------------------------------------------------ gather and scatter
def random_gather(rng: np.random.Generator):
    """Random valid gather dimension numbers over a rank-3 operand (batching dims included)."""
    operand = tuple(int(d) for d in rng.integers(2, 5, 3))
    dims = list(rng.permutation(3))
    n_batch = int(rng.integers(0, 2))
    operand_batching = sorted(dims[:n_batch])
    rest = dims[n_batch:]
    n_start = int(rng.integers(1, len(rest) + 1))
    start_map = [int(d) for d in rng.permutation(rest)[:n_start]]
    collapsed = sorted(d for d in start_map if rng.random() < 0.5)
    sizes = [
        1 if d in collapsed or d in operand_batching else int(rng.integers(1, operand[d] + 1))
        for d in range(3)
    ]
    batch = [int(rng.integers(1, 4)) for _ in range(int(rng.integers(max(1, n_batch), 3)))]
    indices_batching = sorted(int(d) for d in rng.permutation(len(batch))[:n_batch])
    for d_op, d_ix in zip(operand_batching, indices_batching, strict=True):  # paired dims have one size
        batch[d_ix] = operand[d_op]
    vector_dim = int(rng.integers(0, len(batch) + 1))
    index_dims = list(batch)
    index_dims.insert(vector_dim, len(start_map))
    indices_batching = [d + (1 if d >= vector_dim else 0) for d in indices_batching]
    window = [d for d in range(3) if d not in collapsed and d not in operand_batching]
    out_rank = len(batch) + len(window)
    offset_dims = sorted(int(d) for d in rng.permutation(out_rank)[: len(window)])
    return (
        operand,
        index_dims,
        vector_dim,
        start_map,
        collapsed,
        operand_batching,
        indices_batching,
        sizes,
        offset_dims,
        batch,
    )


@pytest.mark.parametrize("seed", range(24))
def test_gather_matches_the_definition(seed: int) -> None:
    rng = np.random.default_rng(500 + seed)
    operand, index_dims, vdim, start_map, collapsed, obatch, ibatch, sizes, offset_dims, batch = (
        random_gather(rng)
    )
    x = ints(rng, operand)
    idx = ints(rng, tuple(index_dims), lo=-2, hi=6)  # out of range too: clamped
    window = [d for d in range(3) if d not in collapsed and d not in obatch]
    out_rank = len(batch) + len(window)
    batch_dims = [r for r in range(out_rank) if r not in offset_dims]
    out = [0] * out_rank
    for r, b in zip(batch_dims, batch, strict=True):
        out[r] = b
    for r, d in zip(offset_dims, window, strict=True):
        out[r] = sizes[d]
    text = module(
        f"x = {shape_text('s32', operand)} parameter(0)",
        f"i = {shape_text('s32', tuple(index_dims))} parameter(1)",
        f"g = {shape_text('s32', tuple(out))} gather(x, i), offset_dims={ints_text(offset_dims)}, "
        f"collapsed_slice_dims={ints_text(collapsed)}, start_index_map={ints_text(start_map)}, "
        f"operand_batching_dims={ints_text(obatch)}, start_indices_batching_dims={ints_text(ibatch)}, "
        f"index_vector_dim={vdim}, slice_sizes={ints_text(sizes)}",
    )
    got = run(text, [x, idx]).array
    batch_index_dims = [d for d in range(len(index_dims)) if d != vdim]
    for o in np.ndindex(*out):
        b = [o[r] for r in batch_dims]
        where = [0] * len(index_dims)
        for d, v in zip(batch_index_dims, b, strict=True):
            where[d] = v
        operand_index = [0] * 3
        for k, d in enumerate(start_map):
            where[vdim] = k
            start = int(idx[tuple(where)])
            operand_index[d] = min(max(start, 0), operand[d] - sizes[d])
        for d_op, d_ix in zip(obatch, ibatch, strict=True):
            operand_index[d_op] = b[batch_index_dims.index(d_ix)]
        for r, d in zip(offset_dims, window, strict=True):
            operand_index[d] += o[r]
        assert got[o] == x[tuple(operand_index)]


@pytest.mark.parametrize("seed", range(24))
def test_scatter_matches_the_definition(seed: int) -> None:
    """The gather's dimension numbers read backwards: updates have the gather's result shape."""
    rng = np.random.default_rng(600 + seed)
    operand, index_dims, vdim, start_map, collapsed, obatch, ibatch, sizes, offset_dims, batch = (
        random_gather(rng)
    )
    x = ints(rng, operand)
    idx = ints(rng, tuple(index_dims), lo=-1, hi=5)  # out of range: the window is skipped
    window = [d for d in range(3) if d not in collapsed and d not in obatch]
    out_rank = len(batch) + len(window)
    batch_dims = [r for r in range(out_rank) if r not in offset_dims]
    upd = [0] * out_rank
    for r, b in zip(batch_dims, batch, strict=True):
        upd[r] = b
    for r, d in zip(offset_dims, window, strict=True):
        upd[r] = sizes[d]
    u = ints(rng, tuple(upd))
    text = module(
        f"x = {shape_text('s32', operand)} parameter(0)",
        f"i = {shape_text('s32', tuple(index_dims))} parameter(1)",
        f"u = {shape_text('s32', tuple(upd))} parameter(2)",
        f"s = {shape_text('s32', operand)} scatter(x, i, u), update_window_dims={ints_text(offset_dims)}, "
        f"inserted_window_dims={ints_text(collapsed)}, scatter_dims_to_operand_dims={ints_text(start_map)}, "
        f"input_batching_dims={ints_text(obatch)}, scatter_indices_batching_dims={ints_text(ibatch)}, "
        f"index_vector_dim={vdim}, to_apply=add_s",
    )
    got = run(text, [x, idx, u]).array
    want = x.astype(np.int64)
    batch_index_dims = [d for d in range(len(index_dims)) if d != vdim]
    for b in np.ndindex(*batch):
        where = [0] * len(index_dims)
        for d, v in zip(batch_index_dims, b, strict=True):
            where[d] = v
        start = [0] * 3
        for k, d in enumerate(start_map):
            where[vdim] = k
            start[d] = int(idx[tuple(where)])
        for d_op, d_ix in zip(obatch, ibatch, strict=True):
            start[d_op] = b[batch_index_dims.index(d_ix)]
        extent = [sizes[d] if d in window else 1 for d in range(3)]
        if any(not 0 <= start[d] <= operand[d] - extent[d] for d in range(3)):
            continue  # a window not wholly inside the operand: skipped
        for w in np.ndindex(*[sizes[d] for d in window]):
            full = [0] * out_rank
            for r, v in zip(batch_dims, b, strict=True):
                full[r] = v
            for r, v in zip(offset_dims, w, strict=True):
                full[r] = v
            target = list(start)
            for d, v in zip(window, w, strict=True):
                target[d] += v
            want[tuple(target)] += int(u[tuple(full)])
    assert np.array_equal(got, ((want + 2**31) % 2**32 - 2**31).astype(np.int32))


# ---------------------------------------------------------------------------- sort
LEXICOGRAPHIC = """
lex { a0 = s32[] parameter(0)
  b0 = s32[] parameter(1)
  a1 = s32[] parameter(2)
  b1 = s32[] parameter(3)
  lt = pred[] compare(a0, b0), direction=LT
  eq = pred[] compare(a0, b0), direction=EQ
  gt1 = pred[] compare(a1, b1), direction=GT
  tie = pred[] and(eq, gt1)
  ROOT r = pred[] or(lt, tie) }
by_key { a0 = s32[] parameter(0)
  b0 = s32[] parameter(1)
  a1 = s32[] parameter(2)
  b1 = s32[] parameter(3)
  na = s32[] negate(a0)
  nb = s32[] negate(b0)
  ROOT r = pred[] compare(na, nb), direction=GT }
"""


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("comparator", ["lex", "by_key"])
def test_sort_is_stable_under_the_comparator(seed: int, comparator: str) -> None:
    rng = np.random.default_rng(700 + seed)
    dims = tuple(int(d) for d in rng.integers(1, 6, 2))
    axis = int(rng.integers(0, 2))
    keys, payload = ints(rng, dims, lo=0, hi=3), ints(rng, dims)
    text = module(
        f"k = {shape_text('s32', dims)} parameter(0)",
        f"p = {shape_text('s32', dims)} parameter(1)",
        f"s = ({shape_text('s32', dims)}, {shape_text('s32', dims)}) sort(k, p), dimensions={{{axis}}}, "
        f"is_stable=true, to_apply={comparator}",
        regions=LEXICOGRAPHIC,
    )
    got_k, got_p = (b.array for b in run(text, [keys, payload]))

    def less(a, b):  # a, b: (key, payload)
        if comparator == "lex":
            return a[0] < b[0] or (a[0] == b[0] and a[1] > b[1])
        return -a[0] > -b[0]

    def cmp(a, b):
        return -1 if less(a, b) else 1 if less(b, a) else 0

    for line in np.ndindex(*[n for d, n in enumerate(dims) if d != axis]):
        index = list(line)
        index.insert(axis, slice(None))
        pairs = list(zip(keys[tuple(index)].tolist(), payload[tuple(index)].tolist(), strict=True))
        want = sorted(pairs, key=functools.cmp_to_key(cmp))  # Python's sort is stable
        assert list(zip(got_k[tuple(index)].tolist(), got_p[tuple(index)].tolist(), strict=True)) == want


def test_sort_totalorder_puts_nans_last_and_negative_zero_first() -> None:
    regions = """
lt { a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = pred[] compare(a, b), direction=LT, type=TOTALORDER }
"""
    x = np.array([np.nan, 1.0, 0.0, -0.0, -np.inf, -1.0], np.float32)
    text = module(
        "x = f32[6]{0} parameter(0)", "s = f32[6]{0} sort(x), dimensions={0}, to_apply=lt", regions=regions
    )
    got = run(text, [x]).array
    assert got[:5].tolist() == [-np.inf, -1.0, -0.0, 0.0, 1.0] and np.signbit(got[2]) and np.isnan(got[5])


# ---------------------------------------------------------------- map and elementwise
def test_map_applies_its_computation_to_every_element() -> None:
    regions = """
f { a = s32[] parameter(0)
  b = s32[] parameter(1)
  m = s32[] multiply(a, a)
  ROOT s = s32[] subtract(m, b) }
"""
    rng = np.random.default_rng(8)
    x, y = ints(rng, (3, 4)), ints(rng, (3, 4))
    text = module("x = s32[3,4]{1,0} parameter(0)", "y = s32[3,4]{1,0} parameter(1)",
                  "r = s32[3,4]{1,0} map(x, y), dimensions={0,1}, to_apply=f", regions=regions)  # fmt: skip
    assert run(text, [x, y]).array.tolist() == (x.astype(np.int64) ** 2 - y).tolist()


def unary(op: str, dtype: str, x: np.ndarray, attributes: str = "") -> np.ndarray:
    n = x.size
    text = module(f"x = {dtype}[{n}]{{0}} parameter(0)", f"r = {dtype}[{n}]{{0}} {op}(x){attributes}")
    return run(text, [x]).array


def test_rounding_matches_python() -> None:
    rng = np.random.default_rng(9)
    x = np.concatenate([np.arange(-6, 6) / 2, rng.normal(0, 4, 40), [0.49999997, -0.49999997]]).astype(
        np.float32
    )
    even = unary("round-nearest-even", "f32", x)
    afz = unary("round-nearest-afz", "f32", x)
    for v, e, a in zip(x.tolist(), even.tolist(), afz.tolist(), strict=True):
        assert e == round(v)  # Python rounds half to even
        t = math.trunc(v)
        assert a == (t + math.copysign(1, v) if abs(v - t) >= 0.5 else t)


def test_bit_counts_and_integer_power_match_python() -> None:
    rng = np.random.default_rng(10)
    x = np.concatenate([ints(rng, (30,), lo=-(2**31), hi=2**31), np.array([0, -1, 1, 2**31 - 1], np.int32)])
    clz = unary("count-leading-zeros", "s32", x)
    pop = unary("popcnt", "s32", x)
    for v, c, p in zip(x.tolist(), clz.tolist(), pop.tolist(), strict=True):
        u = v & 0xFFFFFFFF
        assert c == 32 - u.bit_length() and p == bin(u).count("1")
    base, exponent = ints(rng, (40,), lo=-9, hi=9), ints(rng, (40,), lo=-3, hi=12)
    text = module("b = s32[40]{0} parameter(0)", "e = s32[40]{0} parameter(1)", "r = s32[40]{0} power(b, e)")
    got = run(text, [base, exponent]).array
    for b, e, r in zip(base.tolist(), exponent.tolist(), got.tolist(), strict=True):
        want = (b**e + 2**31) % 2**32 - 2**31 if e >= 0 else int(b == 1)
        assert r == want


def test_reduce_precision_to_bf16_is_the_bf16_rounding() -> None:
    rng = np.random.default_rng(11)
    x = (rng.normal(0, 1, 200) * 10.0 ** rng.integers(-30, 30, 200)).astype(np.float32)
    got = unary("reduce-precision", "f32", x, ", exponent_bits=8, mantissa_bits=7")
    assert np.array_equal(got, x.astype(ml_dtypes.bfloat16).astype(np.float32))


# ----------------------------------------------------------- cut modules, tuple parameters
def test_cut_modules_carry_the_computations_their_ops_call() -> None:
    text = module(
        "x = s32[4,3]{1,0} parameter(0)",
        "z = s32[] constant(0)",
        "n = s32[4,3]{1,0} negate(x)",
        "r = s32[4]{0} reduce(n, z), dimensions={1}, to_apply=max_s_slow",
    )
    m = parse_module(text)
    side = Side.of(m)
    cut = Cuts(side, Side.of(m)).module(side, side.root, earlier=True)
    assert [c.name for c in cut.computations] == ["max_s_slow", "e"]
    x = ints(np.random.default_rng(12), (4, 3))
    assert run(cut, [x]).array.tolist() == (-x).max(axis=1).tolist()
    assert [c.name for c in called_closure(m, m.entry.instructions)] == ["max_s_slow"]


def test_a_tuple_parameter_takes_a_tuple_of_arrays() -> None:
    text = module(
        "t = (s32[2]{0}, f32[2]{0}) parameter(0)",
        "a = s32[2]{0} get-tuple-element(t), index=0",
        "c = f32[2]{0} convert(a)",
        "b = f32[2]{0} get-tuple-element(t), index=1",
        "r = f32[2]{0} add(b, c)",
    )
    out = run(text, [(np.array([1, 2], np.int32), np.array([0.5, 0.25], np.float32))])
    assert out.array.tolist() == [1.5, 2.25]


def test_the_opcode_table_names_every_compute_op_the_executor_runs() -> None:
    assert set(COMPUTE_OPS) == EXECUTED_COMPUTE_OPCODES


def test_a_totalorder_comparator_sorts_through_pairwise_comparisons_too() -> None:
    regions = """
lt { a = f32[] parameter(0)
  b = f32[] parameter(1)
  ai = s32[] parameter(2)
  bi = s32[] parameter(3)
  c = pred[] compare(a, b), direction=LT, type=TOTALORDER
  e = pred[] compare(a, b), direction=EQ, type=TOTALORDER
  i = pred[] compare(ai, bi), direction=LT
  t = pred[] and(e, i)
  ROOT r = pred[] or(c, t) }
"""
    x = np.array([np.nan, 1.0, 0.0, -0.0, 1.0, -1.0], np.float32)
    idx = np.arange(6, dtype=np.int32)[::-1].copy()
    text = module(
        "x = f32[6]{0} parameter(0)",
        "i = s32[6]{0} parameter(1)",
        "s = (f32[6]{0}, s32[6]{0}) sort(x, i), dimensions={0}, to_apply=lt",
        regions=regions,
    )
    values, order = run(text, [x, idx])
    assert order.array.tolist() == [0, 2, 3, 1, 4, 5]  # -1, -0, 0, then the two 1s by index, NaN
    assert np.signbit(values.array[1]) and np.isnan(values.array[5])


@pytest.mark.parametrize("largest", ["true", "false"])
def test_topk_takes_the_k_extreme_values_ties_to_the_lower_index(largest: str) -> None:
    rng = np.random.default_rng(13)
    x = rng.integers(0, 4, (5, 7)).astype(np.float32)
    x[0, 0], x[1, 3] = np.nan, -0.0
    text = module(
        "x = f32[5,7]{1,0} parameter(0)",
        f"t = (f32[5,3]{{1,0}}, s32[5,3]{{1,0}}) topk(x), k=3, largest={largest}",
    )
    values, indices = run(text, [x])
    for row in range(5):

        def rank(j: int, row: int = row) -> tuple:  # total order: NaN above all, -0 below +0
            v = float(x[row, j])
            key = (1, 0.0, 0) if math.isnan(v) else (0, v, 0 if math.copysign(1, v) < 0 else 1)
            return key if largest == "false" else tuple(-k for k in key)

        want = sorted(range(7), key=lambda j: (rank(j), j))[:3]  # a stable order: ties by index
        assert indices.array[row].tolist() == want
        assert np.array_equal(values.array[row], x[row, want], equal_nan=True)
