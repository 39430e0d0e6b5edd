"""Write tests/data/xla_compute/cases.json: XLA:CPU's own answers for small compute ops.

Each case is a tiny JAX function of one compute op (``dot_general``, ``conv_general_dilated``,
``reduce``, ``reduce_window``, ``gather``, ``scatter``, ``sort``, ``round``, ``pow``, ...) with
dimension numbers drawn at random (seeded), its HLO text as JAX lowers it (``jax.jit(f).lower(
*args).as_text(dialect="hlo")``: the module before XLA's optimizations, the op as written), its
random inputs, and the outputs XLA:CPU computes for them. ``tests/hlo/test_execute_compute_xla.py``
runs the executor on the same HLO and inputs and compares.

Run (a Python with jax; CPU only, never touches a TPU):

    JAX_PLATFORMS=cpu python scripts/make_xla_compute_fixtures.py [--out tests/data/xla_compute/cases.json]

Every array is stored as its dtype name, shape and the hex of its bytes (little-endian), so
bf16 and the other ml_dtypes types round-trip exactly.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

jax.config.update("jax_enable_x64", False)
ROOT = Path(__file__).resolve().parent.parent


def encode(x: Any) -> dict[str, Any]:
    a = np.array(x, copy=True, order="C")  # (ascontiguousarray would make a 0-d array 1-d)
    return {"dtype": str(a.dtype), "shape": list(a.shape), "hex": a.tobytes().hex()}


def data(rng: np.random.Generator, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    dtype = np.dtype(dtype)
    if dtype.kind == "V" or dtype.kind == "f":  # ml_dtypes floats (bf16) have kind V
        return rng.normal(0, 2, shape).astype(dtype)
    if dtype.kind == "b":
        return rng.integers(0, 2, shape).astype(bool)
    info = np.iinfo(dtype)
    lo, hi = max(info.min, -100), min(info.max, 100)
    return rng.integers(lo, hi + 1, shape).astype(dtype)


CASES: list[dict[str, Any]] = []


def case(name: str, op: str, compare: str, f: Any, *args: np.ndarray) -> None:
    """Lower ``f`` at ``args``, run it on XLA:CPU, keep the HLO, inputs and outputs.
    ``compare``: ``exact`` (bit for bit) or ``sum`` (an accumulation: within its rounding bound)
    or ``ulps`` (a few units in the last place: XLA's own approximation of a function)."""
    jitted = jax.jit(f)
    hlo = jitted.lower(*args).as_text(dialect="hlo")
    if op != "iota" and f" {op}(" not in hlo:  # JAX folded it away (an empty result): not a case
        return
    out = jitted(*args)
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    CASES.append(
        {
            "name": name,
            "op": op,
            "compare": compare,
            "hlo": hlo,
            "inputs": [encode(a) for a in args],
            "outputs": [encode(np.asarray(o)) for o in outs],
        }
    )


def dots(rng: np.random.Generator) -> None:
    for k in range(8):
        nb, nc, nl, nr = rng.integers(0, 3), rng.integers(0, 3), rng.integers(0, 3), rng.integers(0, 3)
        sizes = {
            "b": rng.integers(1, 4, nb),
            "c": rng.integers(1, 5, nc),
            "l": rng.integers(1, 4, nl),
            "r": rng.integers(1, 4, nr),
        }
        lhs_roles = (
            [("b", i) for i in range(nb)] + [("c", i) for i in range(nc)] + [("l", i) for i in range(nl)]
        )
        rhs_roles = (
            [("b", i) for i in range(nb)] + [("c", i) for i in range(nc)] + [("r", i) for i in range(nr)]
        )
        rng.shuffle(lhs_roles)
        rng.shuffle(rhs_roles)
        lhs_shape = tuple(int(sizes[r][i]) for r, i in lhs_roles)
        rhs_shape = tuple(int(sizes[r][i]) for r, i in rhs_roles)
        dn = (
            (
                tuple(lhs_roles.index(("c", i)) for i in range(nc)),
                tuple(rhs_roles.index(("c", i)) for i in range(nc)),
            ),
            (
                tuple(lhs_roles.index(("b", i)) for i in range(nb)),
                tuple(rhs_roles.index(("b", i)) for i in range(nb)),
            ),
        )
        types = [(np.float32, None), (np.int8, np.int32), (np.int32, None), (jnp.bfloat16, np.float32)][k % 4]
        x, y = data(rng, lhs_shape, types[0]), data(rng, rhs_shape, types[0])
        exact = np.dtype(types[1] or types[0]).kind in "iu"  # (bf16 -> f32 included: an accumulation)
        case(
            f"dot_{k}", "dot", "exact" if exact else "sum",
            lambda a, b, dn=dn, t=types[1]: lax.dot_general(a, b, dn, precision=lax.Precision.HIGHEST, preferred_element_type=t),
            x, y,
        )  # fmt: skip


def convolutions(rng: np.random.Generator) -> None:
    for k in range(10):
        spatial = int(rng.integers(1, 3))
        groups = [1, 2][k % 2] if k < 6 else 1
        batch_groups = 2 if k in (6, 7) else 1
        n, i, o = 2 * batch_groups, int(rng.integers(1, 3)) * groups, 2 * groups * batch_groups
        in_sp = [int(rng.integers(3, 7)) for _ in range(spatial)]
        k_sp = [int(rng.integers(1, 4)) for _ in range(spatial)]
        strides = [int(rng.integers(1, 3)) for _ in range(spatial)]
        pads = [(int(rng.integers(-1, 3)), int(rng.integers(0, 3))) for _ in range(spatial)]
        lhs_dil = [int(rng.integers(1, 3)) for _ in range(spatial)]
        rhs_dil = [int(rng.integers(1, 3)) for _ in range(spatial)]
        spec = "".join(str(d) for d in range(spatial))
        lhs_spec = list("NC" + "HW"[:spatial])
        rhs_spec = list("OI" + "HW"[:spatial])
        out_spec = list("NC" + "HW"[:spatial])
        for s in (lhs_spec, rhs_spec, out_spec):
            rng.shuffle(s)
        del spec
        lhs_shape = [0] * (spatial + 2)
        for axis, label in enumerate(lhs_spec):
            lhs_shape[axis] = {"N": n, "C": i, "H": in_sp[0], "W": in_sp[-1]}[label]
        rhs_shape = [0] * (spatial + 2)
        for axis, label in enumerate(rhs_spec):
            rhs_shape[axis] = {"O": o, "I": i // groups, "H": k_sp[0], "W": k_sp[-1]}[label]
        dtype = np.float32 if k % 3 else np.int32
        x, w = data(rng, tuple(lhs_shape), dtype), data(rng, tuple(rhs_shape), dtype)
        dn = ("".join(lhs_spec), "".join(rhs_spec), "".join(out_spec))

        def f(
            a,
            b,
            dn=dn,
            strides=strides,
            pads=pads,
            lhs_dil=lhs_dil,
            rhs_dil=rhs_dil,
            g=groups,
            bg=batch_groups,
        ):
            return lax.conv_general_dilated(
                a, b, strides, pads, lhs_dilation=lhs_dil, rhs_dilation=rhs_dil, dimension_numbers=dn,
                feature_group_count=g, batch_group_count=bg, precision=lax.Precision.HIGHEST,
            )  # fmt: skip

        try:
            jax.eval_shape(f, x, w)
        except (TypeError, ValueError):
            continue
        case(f"convolution_{k}", "convolution", "exact" if dtype == np.int32 else "sum", f, x, w)


def reductions(rng: np.random.Generator) -> None:
    for k, (dtype, op, init) in enumerate(
        [(np.float32, lax.add, 0.0), (np.int32, lax.add, 0), (np.float32, lax.max, -np.inf), (np.int32, lax.min, 2**31 - 1),
         (np.int8, lax.mul, 1), (np.float32, lax.add, 0.0)]
    ):  # fmt: skip
        rank = int(rng.integers(1, 4))
        shape = tuple(int(s) for s in rng.integers(1, 5, rank))
        dims = tuple(sorted(rng.choice(rank, int(rng.integers(1, rank + 1)), replace=False).tolist()))
        x = data(rng, shape, dtype)
        exact = np.dtype(dtype).kind in "iu" or op is lax.max
        case(f"reduce_{k}", "reduce", "exact" if exact else "sum",
             lambda a, dims=dims, op=op, init=init, t=dtype: lax.reduce(a, np.asarray(init, t), op, dims), x)  # fmt: skip
    # a variadic reduce: argmax along a dimension, ties to the lowest index
    x = data(rng, (3, 5), np.int32) % 4
    case("reduce_argmax", "reduce", "exact", lambda a: jnp.argmax(a, axis=1), x)
    for k in range(6):
        rank = int(rng.integers(1, 3))
        shape = tuple(int(s) for s in rng.integers(3, 7, rank))
        dims = tuple(int(d) for d in rng.integers(1, 4, rank))
        strides = tuple(int(d) for d in rng.integers(1, 3, rank))
        pads = tuple((int(rng.integers(0, 2)), int(rng.integers(0, 2))) for _ in range(rank))
        base = tuple(int(d) for d in rng.integers(1, 3, rank))
        dil = tuple(int(d) for d in rng.integers(1, 3, rank))
        dtype, op, init = [
            (np.float32, lax.add, 0.0),
            (np.int32, lax.max, -(2**31)),
            (np.float32, lax.max, -np.inf),
        ][k % 3]
        x = data(rng, shape, dtype)

        def f(a, dims=dims, strides=strides, pads=pads, base=base, dil=dil, op=op, init=init, t=dtype):
            return lax.reduce_window(a, np.asarray(init, t), op, dims, strides, pads, base, dil)

        try:
            jax.eval_shape(f, x)
        except (TypeError, ValueError):
            continue
        case(
            f"reduce_window_{k}",
            "reduce-window",
            "sum" if op is lax.add and dtype == np.float32 else "exact",
            f,
            x,
        )
    x = data(rng, (4, 6), np.float32)
    case("select_and_scatter", "select-and-scatter", "sum",
         lambda a: jax.grad(lambda y: (lax.reduce_window(y, -jnp.inf, lax.max, (2, 3), (2, 1), "VALID") ** 2).sum())(a), x)  # fmt: skip


def indexing(rng: np.random.Generator) -> None:
    x = data(rng, (5, 4, 3), np.float32)
    dn = lax.GatherDimensionNumbers(offset_dims=(1, 2), collapsed_slice_dims=(0,), start_index_map=(0, 2))
    idx = np.array([[0, 0], [4, 1], [7, -3], [2, 2]], np.int32)  # out of range: clamped by XLA
    case("gather_clamped", "gather", "exact",
         lambda a, i: lax.gather(a, i, dn, (1, 2, 2), mode=lax.GatherScatterMode.PROMISE_IN_BOUNDS), x, idx)  # fmt: skip
    b = data(rng, (2, 3, 5), np.int32)
    dnb = lax.GatherDimensionNumbers(
        offset_dims=(2,), collapsed_slice_dims=(), start_index_map=(2,),
        operand_batching_dims=(0, 1), start_indices_batching_dims=(0, 1),
    )  # fmt: skip
    ib = rng.integers(-2, 6, (2, 3, 1)).astype(np.int32)
    case("gather_batching", "gather", "exact",
         lambda a, i: lax.gather(a, i, dnb, (1, 1, 2), mode=lax.GatherScatterMode.PROMISE_IN_BOUNDS), b, ib)  # fmt: skip
    ig = rng.integers(0, 5, (3, 2, 1)).astype(np.int32)
    dng = lax.GatherDimensionNumbers(offset_dims=(0, 3), collapsed_slice_dims=(0,), start_index_map=(0,))
    case("gather_vector_dim_last", "gather", "exact",
         lambda a, i: lax.gather(a, i, dng, (1, 4, 1), mode=lax.GatherScatterMode.PROMISE_IN_BOUNDS), x, ig)  # fmt: skip
    t = data(rng, (6, 3), np.float32)
    sdn = lax.ScatterDimensionNumbers(
        update_window_dims=(1,), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,)
    )
    i = np.array([[1], [5], [1], [9], [-1], [3]], np.int32)  # repeats; out of range: skipped
    u = data(rng, (6, 3), np.float32)
    case("scatter_add", "scatter", "sum",
         lambda a, i, u: lax.scatter_add(a, i, u, sdn, mode=lax.GatherScatterMode.FILL_OR_DROP), t, i, u)  # fmt: skip
    case("scatter_replace_unique", "scatter", "exact",
         lambda a, i, u: lax.scatter(a, i[:2], u[:2], sdn, mode=lax.GatherScatterMode.FILL_OR_DROP), t, i, u)  # fmt: skip
    sdw = lax.ScatterDimensionNumbers(
        update_window_dims=(1, 2), inserted_window_dims=(), scatter_dims_to_operand_dims=(0,)
    )
    iw = np.array([[0], [4], [5], [-1]], np.int32)  # a window [4:6) fits; [5:7) and [-1:1) do not
    uw = data(rng, (4, 2, 3), np.int32)
    tw = data(rng, (6, 3), np.int32)
    case("scatter_window_partly_outside", "scatter", "exact",
         lambda a, i, u: lax.scatter_add(a, i, u, sdw, mode=lax.GatherScatterMode.FILL_OR_DROP), tw, iw, uw)  # fmt: skip
    sb = lax.ScatterDimensionNumbers(
        update_window_dims=(), inserted_window_dims=(2,), scatter_dims_to_operand_dims=(2,),
        operand_batching_dims=(0, 1), scatter_indices_batching_dims=(0, 1),
    )  # fmt: skip
    ob = data(rng, (2, 3, 4), np.int32)
    ib2 = rng.integers(0, 4, (2, 3, 1)).astype(np.int32)
    ub = data(rng, (2, 3), np.int32)
    case("scatter_batching", "scatter", "exact",
         lambda a, i, u: lax.scatter_add(a, i, u, sb, mode=lax.GatherScatterMode.FILL_OR_DROP), ob, ib2, ub)  # fmt: skip


def sorts(rng: np.random.Generator) -> None:
    a = data(rng, (4, 7), np.float32)
    a[0, :3] = [np.nan, -0.0, 0.0]
    b = data(rng, (4, 7), np.int32)
    case(
        "sort_two_operands",
        "sort",
        "exact",
        lambda x, y: lax.sort((x, y), dimension=1, num_keys=1, is_stable=True),
        a,
        b,
    )
    c = data(rng, (3, 5, 2), np.int32) % 3
    d = data(rng, (3, 5, 2), np.int32)
    case(
        "sort_two_keys",
        "sort",
        "exact",
        lambda x, y: lax.sort((x, y), dimension=1, num_keys=2, is_stable=False),
        c,
        d,
    )
    case("sort_descending", "sort", "exact", lambda x: -jnp.sort(-x, axis=0, stable=True), a)
    case("argsort", "sort", "exact", lambda x: jnp.argsort(x, axis=1, stable=True), c[:, :, 0])


def elementwise(rng: np.random.Generator) -> None:
    x = np.concatenate([np.array([0.5, 1.5, 2.5, -0.5, -2.5, 0.49999997, -0.0, np.inf, np.nan], np.float32),
                        data(rng, (7,), np.float32) * 10])  # fmt: skip
    y = data(rng, x.shape, np.float32)
    case(
        "round_nearest_even",
        "round-nearest-even",
        "exact",
        lambda v: lax.round(v, lax.RoundingMethod.TO_NEAREST_EVEN),
        x,
    )
    case(
        "round_nearest_afz",
        "round-nearest-afz",
        "exact",
        lambda v: lax.round(v, lax.RoundingMethod.AWAY_FROM_ZERO),
        x,
    )
    case("power_float", "power", "ulps", lambda v, w: lax.pow(jnp.abs(v), w), x, y)
    case("atan2", "atan2", "ulps", lax.atan2, x, y)
    case("is_finite", "is-finite", "exact", lax.is_finite, x)
    case(
        "reduce_precision_bf16",
        "reduce-precision",
        "exact",
        lambda v: lax.reduce_precision(v, 8, 7),
        x * 1e20,
    )
    case("reduce_precision_e5m2", "reduce-precision", "exact", lambda v: lax.reduce_precision(v, 5, 2), x)
    for name, fn in (("tan", lax.tan), ("cbrt", lax.cbrt), ("logistic", lax.logistic), ("erf", lax.erf)):
        case(name, name if name != "logistic" else "logistic", "ulps", fn, x)
    i = data(rng, (12,), np.int32)
    e = (data(rng, (12,), np.int32) % 7).astype(np.int32)
    e[:3] = [-1, -2, 0]
    case("clz", "count-leading-zeros", "exact", lax.clz, np.concatenate([i, np.array([0, -1, 1], np.int32)]))
    case(
        "popcnt", "popcnt", "exact", lax.population_count, np.concatenate([i, np.array([0, -1, 1], np.int32)])
    )
    case(
        "iota",
        "iota",
        "exact",
        lambda v: v + lax.broadcasted_iota(np.int32, (3, 4), 1),
        data(rng, (3, 4), np.int32),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "tests" / "data" / "xla_compute" / "cases.json")
    args = parser.parse_args()
    rng = np.random.default_rng(20261206)
    for make in (dots, convolutions, reductions, indexing, sorts, elementwise):
        make(rng)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    meta = {"jax": jax.__version__, "backend": jax.default_backend(), "cases": CASES}
    args.out.write_text(json.dumps(meta, indent=1) + "\n")
    print(f"{len(CASES)} cases -> {args.out}")


if __name__ == "__main__":
    main()
