"""Hypothesis strategies for pairs of small HLO modules, and the soundness check on a pair.

A :class:`Case` is a ``before`` and an ``after`` module with a ``mode``, a ``kind`` (which
rewrite or mutation produced it) and, for symbolic sizes, the ``assume`` text and the
concrete sizes that satisfy it. The strategies draw:

* **safe rewrites**: a transpose or reshape into a bitcast (with the layout that makes it
  one, or a random one), a copy eliminated within a memory space, two transposes fused,
  a reshape moved across an elementwise op, intermediates re-laid out (layout assignment);
* **mutations** of those: a wrong permutation, reversed dimensions, a wrong tile, a changed
  ``L(n)``, an off-by-one slice, a copy across memory spaces dropped;
* **symbolic** variants (``f32[N,128]`` and ``assume="N % 8 == 0"``-style conditions).

:func:`check_case` runs the verifier and the executor on a case and returns an
:class:`Outcome`; it raises ``AssertionError`` on the one thing that must never happen:
the verifier proving what execution contradicts, or refuting what execution confirms at
the counterexample's sizes.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections import Counter
from dataclasses import dataclass, field

from hypothesis import assume
from hypothesis import strategies as st

from layout_algebra.hlo.execute_compare import compare
from layout_algebra.hlo.validity import InvalidHlo
from layout_algebra.meaning.layout_map import layout_map
from layout_algebra.model.syntax import parse_shape
from layout_algebra.xla import array_size

#: (element type, E(n)): the packing cases of the fuzz.
ELEMENTS = (("f32", 0), ("bf16", 0), ("s8", 0), ("s4", 4), ("pred", 0), ("s32", 0), ("u8", 0))
#: Unary elementwise ops that keep the type, per kind.
UNARY = {"float": ("negate", "abs", "exponential"), "int": ("negate", "abs", "not"), "pred": ("not",)}
#: Binary elementwise ops, per kind.
BINARY = {
    "float": ("add", "subtract", "multiply", "maximum"),
    "int": ("add", "multiply", "xor", "minimum"),
    "pred": ("and", "or"),
}
#: Tile choices by rank (and sub-tiles for narrow types).
TILES_2D = ("", "T(2,2)", "T(2,4)", "T(4,2)", "T(2,1)", "T(8,128)", "T(2,128)")
SUB_TILES = {
    "bf16": ("T(8,128)(2,1)", "T(2,2)(2,1)", "T(4,128)(2,1)"),
    "s8": ("T(8,128)(4,1)",),
    "pred": ("T(8,128)(4,1)",),
}
TILES_1D = ("", "T(2)", "T(4)", "T(8)", "T(128)")
MAX_SLOTS = 4096


def kind_of(element: str) -> str:
    return "pred" if element == "pred" else "float" if element in ("f32", "bf16") else "int"


# ------------------------------------------------------------------------ layouts
@dataclass(frozen=True)
class Lay:
    """A layout's fields, printed by ``str`` as XLA does."""

    m2m: tuple[int, ...]
    tiles: str = ""
    e: int = 0
    tail: int = 1
    space: int = 0

    def __str__(self) -> str:
        return layout_text(self.m2m, self.tiles, self.e, self.tail, self.space)


def layout_text(m2m, tiles: str = "", e: int = 0, tail: int = 1, space: int = 0) -> str:
    """``{1,0:T(2,2)L(2)E(4)S(1)}`` in XLA's attribute order (T L E S)."""
    extra = (
        tiles
        + (f"L({tail})" if tail > 1 else "")
        + (f"E({e})" if e else "")
        + (f"S({space})" if space else "")
    )
    return "{" + ",".join(map(str, m2m)) + (":" + extra if extra else "") + "}"


def shape_text(element: str, dims, layout: str) -> str:
    return f"{element}[{','.join(map(str, dims))}]{layout}"


def keeps_size(source: str, result: str) -> bool:
    """Whether a bitcast from ``source`` to ``result`` is valid HLO: XLA's verifier wants the
    same shape size (``ShapeUtil::ArraySize``, by ``layout_algebra.xla``'s own implementation)."""
    return array_size(source) == array_size(result)


@st.composite
def mostly_valid(draw, source: str, result: str) -> None:
    """Reject most drawn bitcasts that change the shape size (invalid HLO, refused by both
    sides), keeping about one in four: the fuzz is about bitcasts XLA accepts."""
    assume(keeps_size(source, result) or draw(st.integers(0, 3)) == 0)


def slots(text: str) -> int:
    return layout_map(parse_shape(text)).size_in_elements


@st.composite
def lays(draw, element: str, e: int, dims, *, spaces=(0,), tiled: bool = True) -> Lay:
    """A random layout for ``dims`` whose buffer stays small."""
    rank = len(dims)
    m2m = tuple(draw(st.permutations(range(rank))))
    tiles = ""
    if tiled and rank >= 1:
        choices = TILES_1D if rank == 1 else TILES_2D + SUB_TILES.get(element, ())
        tiles = draw(st.sampled_from(choices))
    tail = draw(st.sampled_from((1, 1, 1, 1, 2, 3, 8)))
    space = draw(st.sampled_from(spaces))
    lay = Lay(m2m, tiles, e, tail, space)
    if slots(shape_text(element, dims, str(lay))) > MAX_SLOTS:
        lay = Lay(m2m, "", e, tail, space)
    return lay


def layouts(element: str, e: int, dims, **kwargs) -> st.SearchStrategy[str]:
    """``lays`` printed."""
    return lays(element, e, dims, **kwargs).map(str)


def default_layout(rank: int, e: int = 0, space: int = 0) -> str:
    return layout_text(tuple(range(rank - 1, -1, -1)), "", e, 1, space)


# ------------------------------------------------------------------------ modules
@dataclass
class Module:
    """Instructions of an entry computation, rendered as HLO text (the last is the root)."""

    lines: list[str] = field(default_factory=list)

    def add(self, name: str, shape: str, op: str) -> str:
        self.lines.append(f"{name} = {shape} {op}")
        return name

    def text(self) -> str:
        body = [("  ROOT " if k == len(self.lines) - 1 else "  ") + line for k, line in enumerate(self.lines)]
        return "HloModule fuzz\nENTRY e {\n" + "\n".join(body) + "\n}"


@dataclass(frozen=True)
class Case:
    before: str
    after: str
    mode: str
    kind: str
    assume: str | None = None
    sizes: tuple[dict[str, int], ...] = ({},)


def permuted(dims, perm) -> tuple[int, ...]:
    """Dimensions of ``transpose(x), dimensions=perm``: result dim k is operand dim perm[k]."""
    return tuple(dims[p] for p in perm)


def transposed_layout(m2m, perm) -> tuple[int, ...]:
    """The minor_to_major that makes ``transpose(perm)`` keep the physical order (a bitcast
    when there are no tiles): operand dim d is result dim perm.index(d)."""
    return tuple(perm.index(d) for d in m2m)


@st.composite
def elements(draw) -> tuple[str, int]:
    return draw(st.sampled_from(ELEMENTS))


dims_strategy = st.lists(st.integers(1, 5), min_size=1, max_size=3).map(tuple)
wide_dims_strategy = st.lists(st.integers(2, 5), min_size=2, max_size=3).map(tuple)


@st.composite
def transpose_to_bitcast(draw) -> Case:
    """``transpose`` -> ``bitcast`` (safe when the layouts make it one), or a mutated transpose."""
    element, e = draw(elements())
    dims = draw(dims_strategy)
    rank = len(dims)
    perm = tuple(draw(st.permutations(range(rank))))
    p_lay = draw(lays(element, e, dims))
    p_layout = str(p_lay)
    out_dims = permuted(dims, perm)
    matching = str(Lay(transposed_layout(p_lay.m2m, perm), p_lay.tiles, e, p_lay.tail))
    r_layout = draw(st.one_of(st.just(matching), layouts(element, e, out_dims)))
    before, after = Module(), Module()
    for m in (before, after):
        m.add("p", shape_text(element, dims, p_layout), "parameter(0)")
    kind = "transpose->bitcast"
    before.add(
        "t",
        shape_text(element, out_dims, r_layout),
        f"transpose(p), dimensions={{{','.join(map(str, perm))}}}",
    )
    mutation = draw(st.sampled_from(("none", "none", "wrong permutation", "reversed dims")))
    if mutation == "wrong permutation":
        others = [
            q for q in itertools.permutations(range(rank)) if q != perm and permuted(dims, q) == out_dims
        ]
        if others:
            q = draw(st.sampled_from(others))
            after.add(
                "t",
                shape_text(element, out_dims, r_layout),
                f"transpose(p), dimensions={{{','.join(map(str, q))}}}",
            )
            kind = "wrong permutation"
    elif mutation == "reversed dims":
        d = draw(st.integers(0, rank - 1))
        after.add("b", shape_text(element, out_dims, r_layout), "bitcast(p)")
        after.add("t", shape_text(element, out_dims, r_layout), f"reverse(b), dimensions={{{d}}}")
        kind = "reversed dims"
    if len(after.lines) == 1:
        after.add("t", shape_text(element, out_dims, r_layout), "bitcast(p)")
    mode = draw(st.sampled_from(("physical", "logical")))
    return Case(before.text(), after.text(), mode, kind)


@st.composite
def reshape_to_bitcast(draw) -> Case:
    """``reshape`` -> ``bitcast``, optionally followed by an elementwise op; or a wrong tile / L(n)."""
    element, e = draw(elements())
    dims = draw(dims_strategy)
    n = math.prod(dims)
    factor = draw(st.sampled_from([d for d in range(1, n + 1) if n % d == 0]))
    out_dims = (factor, n // factor) if factor not in (1, n) else (n,)
    p_layout = draw(layouts(element, e, dims))
    r_lay = draw(
        st.one_of(st.just(Lay(tuple(range(len(out_dims) - 1, -1, -1)), "", e)), lays(element, e, out_dims))
    )
    r_layout = str(r_lay)
    before, after = Module(), Module()
    for m in (before, after):
        m.add("p", shape_text(element, dims, p_layout), "parameter(0)")
    before.add("r", shape_text(element, out_dims, r_layout), "reshape(p)")
    kind = "reshape->bitcast"
    mutation = draw(st.sampled_from(("none", "none", "wrong tile", "changed L(n)")))
    after_lay = r_lay
    if mutation == "wrong tile":
        tiles = [t for t in (TILES_2D if len(out_dims) == 2 else TILES_1D) if t != r_lay.tiles]
        after_lay = dataclasses.replace(r_lay, tiles=draw(st.sampled_from(tiles)))
        kind = "wrong tile"
    elif mutation == "changed L(n)":
        after_lay = dataclasses.replace(
            r_lay, tail=draw(st.sampled_from([t for t in (1, 2, 3, 4, 8) if t != r_lay.tail]))
        )
        kind = "changed L(n)"
    if slots(shape_text(element, out_dims, str(after_lay))) > MAX_SLOTS:
        after_lay, kind = r_lay, "reshape->bitcast"
    after_layout = str(after_lay)
    draw(mostly_valid(shape_text(element, dims, p_layout), shape_text(element, out_dims, after_layout)))
    after.add("r", shape_text(element, out_dims, after_layout), "bitcast(p)")
    if draw(st.booleans()):
        op = draw(st.sampled_from(UNARY[kind_of(element)]))
        for m in (before, after):
            m.add("u", shape_text(element, out_dims, r_layout), f"{op}(r)")
    return Case(before.text(), after.text(), draw(st.sampled_from(("physical", "logical"))), kind)


@st.composite
def copy_elimination(draw) -> Case:
    """``p -> copy -> op`` into ``p -> op`` within a memory space; or the copy across memory
    spaces dropped (the root then lives in the parameter's space)."""
    element, e = draw(elements())
    dims = draw(dims_strategy)
    p_lay = draw(lays(element, e, dims))
    p_layout = str(p_lay)
    c_layout = draw(layouts(element, e, dims))
    r_layout = draw(layouts(element, e, dims, spaces=(0, 1, 5)))
    op = draw(st.sampled_from(UNARY[kind_of(element)]))
    before, after = Module(), Module()
    for m in (before, after):
        m.add("p", shape_text(element, dims, p_layout), "parameter(0)")
    mutation = draw(st.sampled_from(("none", "none", "dropped copy across memory spaces")))
    if mutation == "none":
        before.add("c", shape_text(element, dims, c_layout), "copy(p)")
        before.add("u", shape_text(element, dims, r_layout), f"{op}(c)")
        after.add("u", shape_text(element, dims, r_layout), f"{op}(p)")
        kind = "copy elimination"
    else:
        moved = str(dataclasses.replace(p_lay, space=draw(st.sampled_from((1, 5)))))
        before.add("u", shape_text(element, dims, p_layout), f"{op}(p)")
        before.add("c", shape_text(element, dims, moved), "copy(u)")
        after.add("u", shape_text(element, dims, p_layout), f"{op}(p)")
        kind = "dropped copy across memory spaces"
    return Case(before.text(), after.text(), draw(st.sampled_from(("physical", "logical"))), kind)


@st.composite
def transpose_pair(draw) -> Case:
    """``transpose(transpose(p, a), b)`` -> ``transpose(p, a∘b)``; mutation: composed the wrong way."""
    element, e = draw(elements())
    rank = draw(st.integers(2, 3))
    dims = tuple(draw(st.lists(st.integers(1, 4), min_size=rank, max_size=rank)))
    a = tuple(draw(st.permutations(range(rank))))
    b = tuple(draw(st.permutations(range(rank))))
    mid, out = permuted(dims, a), permuted(permuted(dims, a), b)
    right = tuple(a[k] for k in b)  # result dim j = mid dim b[j] = operand dim a[b[j]]
    wrong = tuple(b[k] for k in a)
    p_layout = draw(layouts(element, e, dims))
    mid_layout = draw(layouts(element, e, mid))
    out_layout = draw(layouts(element, e, out))
    before, after = Module(), Module()
    for m in (before, after):
        m.add("p", shape_text(element, dims, p_layout), "parameter(0)")
    before.add(
        "t1", shape_text(element, mid, mid_layout), f"transpose(p), dimensions={{{','.join(map(str, a))}}}"
    )
    before.add(
        "t2", shape_text(element, out, out_layout), f"transpose(t1), dimensions={{{','.join(map(str, b))}}}"
    )
    use_wrong = draw(st.booleans()) and wrong != right and permuted(dims, wrong) == out
    perm = wrong if use_wrong else right
    after.add(
        "t2", shape_text(element, out, out_layout), f"transpose(p), dimensions={{{','.join(map(str, perm))}}}"
    )
    kind = "wrong permutation (composition)" if use_wrong else "transpose pair fused"
    return Case(before.text(), after.text(), draw(st.sampled_from(("physical", "logical"))), kind)


@st.composite
def slices(draw) -> Case:
    """A slice kept, re-laid out, or shifted by one (off-by-one)."""
    element, e = draw(elements())
    dims = draw(st.lists(st.integers(2, 6), min_size=1, max_size=2).map(tuple))
    starts = [draw(st.integers(0, d - 1)) for d in dims]
    limits = [draw(st.integers(s + 1, d)) for s, d in zip(starts, dims, strict=True)]
    out = tuple(limit - s for s, limit in zip(starts, limits, strict=True))
    p_layout = draw(layouts(element, e, dims))
    r_layout = draw(layouts(element, e, out))
    config = ", ".join(f"[{s}:{lim}]" for s, lim in zip(starts, limits, strict=True))
    shifted = list(zip(starts, limits, strict=True))
    k = draw(st.integers(0, len(dims) - 1))
    s, lim = shifted[k]
    shifted[k] = (s + 1, lim + 1) if lim < dims[k] else (s - 1, lim - 1) if s > 0 else (s, lim)
    moved = ", ".join(f"[{a}:{b}]" for a, b in shifted)
    before, after = Module(), Module()
    for m in (before, after):
        m.add("p", shape_text(element, dims, p_layout), "parameter(0)")
    before.add("s", shape_text(element, out, r_layout), f"slice(p), slice={{{config}}}")
    off = draw(st.booleans()) and moved != config
    after.add("s", shape_text(element, out, r_layout), f"slice(p), slice={{{moved if off else config}}}")
    kind = "off-by-one slice" if off else "slice kept"
    return Case(before.text(), after.text(), draw(st.sampled_from(("physical", "logical"))), kind)


@st.composite
def reshape_across_elementwise(draw) -> Case:
    """``op(reshape(p))`` -> ``reshape(op(p))`` (safe); mutation: the inner reshape a bitcast."""
    element, e = draw(elements())
    as_bitcast = draw(st.booleans())
    # the bitcast mutation is wrong exactly when ``u``'s layout is not row-major: ranks of 2 and
    # 3 without unit dims make that the common case, so every run sees both answers
    dims = draw(wide_dims_strategy if as_bitcast else dims_strategy)
    n = math.prod(dims)
    out = (n,)
    p_layout = draw(layouts(element, e, dims))
    # untiled layouts keep a bitcast's size (tiles mostly pad to another one: invalid HLO)
    tiled = not as_bitcast or draw(st.integers(0, 3)) == 0
    mid_layout = draw(layouts(element, e, dims, tiled=tiled))
    r_layout = draw(layouts(element, e, out, tiled=tiled))
    op = draw(st.sampled_from(UNARY[kind_of(element)]))
    before, after = Module(), Module()
    for m in (before, after):
        m.add("p", shape_text(element, dims, p_layout), "parameter(0)")
    before.add("r", shape_text(element, out, default_layout(1, e)), "reshape(p)")
    before.add("u", shape_text(element, out, r_layout), f"{op}(r)")
    after.add("u", shape_text(element, dims, mid_layout), f"{op}(p)")
    if as_bitcast:
        draw(mostly_valid(shape_text(element, dims, mid_layout), shape_text(element, out, r_layout)))
    after.add("r", shape_text(element, out, r_layout), f"{'bitcast' if as_bitcast else 'reshape'}(u)")
    kind = "reshape across elementwise" + (" as bitcast" if as_bitcast else "")
    return Case(before.text(), after.text(), draw(st.sampled_from(("physical", "logical"))), kind)


@st.composite
def relayout(draw) -> Case:
    """A random chain of 1-6 ops; ``after`` is the same chain with intermediates re-laid out."""
    element, e = draw(elements())
    dims = draw(dims_strategy)
    p_layout = draw(layouts(element, e, dims))
    steps = draw(st.integers(1, 6))
    chain: list[tuple] = []  # (name, dims, op text[, element, fixed layout])
    current, cur_dims = "p", dims
    parameters = 1
    for k in range(steps):
        rank = len(cur_dims)
        choice = draw(
            st.sampled_from(
                (
                    "transpose",
                    "reshape",
                    "slice",
                    "reverse",
                    "broadcast",
                    "pad",
                    "concatenate",
                    "unary",
                    "bitcast",
                    "copy",
                    "binary",
                    "dynamic-slice",
                    "select",
                    "convert",
                    "iota",
                    "dynamic-update-slice",
                )
            )
        )
        name = f"i{k}"
        if choice == "transpose":
            perm = tuple(draw(st.permutations(range(rank))))
            new_dims, op = (
                permuted(cur_dims, perm),
                f"transpose({current}), dimensions={{{','.join(map(str, perm))}}}",
            )
        elif choice == "reshape":
            n = math.prod(cur_dims)
            f = draw(st.sampled_from([d for d in range(1, n + 1) if n % d == 0]))
            new_dims, op = ((f, n // f) if f not in (1, n) else (n,)), f"reshape({current})"
        elif choice == "slice":
            parts = [(draw(st.integers(0, d - 1)), d) for d in cur_dims]
            new_dims = tuple(d - s for s, d in parts)
            op = f"slice({current}), slice={{{', '.join(f'[{s}:{d}]' for s, d in parts)}}}"
        elif choice == "reverse":
            new_dims, op = cur_dims, f"reverse({current}), dimensions={{{draw(st.integers(0, rank - 1))}}}"
        elif choice == "broadcast" and rank < 3:
            at = draw(st.integers(0, rank))
            new_dims = (*cur_dims[:at], 2, *cur_dims[at:])
            mapping = [d if d < at else d + 1 for d in range(rank)]
            op = f"broadcast({current}), dimensions={{{','.join(map(str, mapping))}}}"
        elif choice == "concatenate":
            d = draw(st.integers(0, rank - 1))
            new_dims = tuple(x * 2 if i == d else x for i, x in enumerate(cur_dims))
            op = f"concatenate({current}, {current}), dimensions={{{d}}}"
        elif choice == "pad":
            cfg = [
                (draw(st.integers(-1, 1)), draw(st.integers(0, 1)), draw(st.integers(0, 1))) for _ in cur_dims
            ]
            new_dims = tuple(lo + hi + d + (d - 1) * i for (lo, hi, i), d in zip(cfg, cur_dims, strict=True))
            if any(x <= 0 for x in new_dims):
                continue
            zero = "false" if element == "pred" else "0"
            chain.append((f"z{k}", (), f"constant({zero})"))
            op = f"pad({current}, z{k}), padding={'x'.join(f'{lo}_{hi}_{i}' for lo, hi, i in cfg)}"
        elif choice == "bitcast":
            new_dims, op = (math.prod(cur_dims),), f"bitcast({current})"
        elif choice == "binary":  # with a new parameter of the current dimensions
            other = f"q{parameters}"
            chain.append(
                (other, cur_dims, f"parameter({parameters})", element, draw(layouts(element, e, cur_dims)))
            )
            parameters += 1
            fn = draw(st.sampled_from(BINARY[kind_of(element)]))
            new_dims, op = (
                cur_dims,
                f"{fn}({current}, {other})" if draw(st.booleans()) else f"{fn}({other}, {current})",
            )
        elif choice == "select":  # between the current value and a new parameter, on a pred parameter
            which, other = f"w{parameters}", f"q{parameters + 1}"
            chain.append(
                (which, cur_dims, f"parameter({parameters})", "pred", draw(layouts("pred", 0, cur_dims)))
            )
            chain.append(
                (
                    other,
                    cur_dims,
                    f"parameter({parameters + 1})",
                    element,
                    draw(layouts(element, e, cur_dims)),
                )
            )
            parameters += 2
            new_dims, op = cur_dims, f"select({which}, {current}, {other})"
        elif choice == "convert":  # to another type and back: real, lossy semantics
            wide = draw(st.sampled_from([t for t in ("f32", "s32", "bf16", "s8") if t != element]))
            chain.append((f"v{k}", cur_dims, f"convert({current})", wide, draw(layouts(wide, 0, cur_dims))))
            new_dims, op = cur_dims, f"convert(v{k})"
        elif choice == "iota" and element != "pred":  # combined with the current value
            d = draw(st.integers(0, rank - 1))
            chain.append(
                (
                    f"io{k}",
                    cur_dims,
                    f"iota(), iota_dimension={d}",
                    element,
                    draw(layouts(element, e, cur_dims)),
                )
            )
            new_dims, op = cur_dims, f"{draw(st.sampled_from(BINARY[kind_of(element)]))}({current}, io{k})"
        elif choice == "dynamic-update-slice":  # a new parameter written at constant starts (clamped)
            update_dims = tuple(draw(st.integers(1, d)) for d in cur_dims)
            update = f"q{parameters}"
            chain.append(
                (
                    update,
                    update_dims,
                    f"parameter({parameters})",
                    element,
                    draw(layouts(element, e, update_dims)),
                )
            )
            parameters += 1
            names = []
            for j, d in enumerate(cur_dims):
                names.append(f"u{k}_{j}")
                chain.append((names[-1], (), f"constant({draw(st.integers(-1, d))})", "s32", ""))
            new_dims, op = cur_dims, f"dynamic-update-slice({current}, {update}, {', '.join(names)})"
        elif choice == "dynamic-slice":  # constant starts, some past the end (clamped)
            sizes = [draw(st.integers(1, d)) for d in cur_dims]
            starts = [draw(st.integers(-1, d)) for d in cur_dims]
            names = []
            for j, start in enumerate(starts):
                names.append(f"o{k}_{j}")
                chain.append((names[-1], (), f"constant({start})", "s32", ""))
            new_dims = tuple(sizes)
            op = f"dynamic-slice({current}, {', '.join(names)}), dynamic_slice_sizes={{{','.join(map(str, sizes))}}}"
        elif choice == "copy":
            new_dims, op = cur_dims, f"copy({current})"
        else:
            new_dims, op = cur_dims, f"{draw(st.sampled_from(UNARY[kind_of(element)]))}({current})"
        if math.prod(new_dims) > 512:
            continue
        chain.append((name, new_dims, op))
        current, cur_dims = name, new_dims
    if not chain or len(chain[-1]) > 3 or chain[-1][1] == ():
        chain.append(("last", dims, "copy(p)"))
    lay_before = [c[4] if len(c) > 3 else draw(lays(element, e, c[1])) if c[1] else "" for c in chain]
    lay_after = [
        draw(lays(element, e, c[1], spaces=(0, 0, 1, 5)))
        if c[1] and len(c) == 3 and draw(st.booleans())
        else lb
        for c, lb in zip(chain, lay_before, strict=True)
    ]
    mode = draw(st.sampled_from(("physical", "logical")))
    if mode == "physical":
        lay_after[-1] = lay_before[-1]
    kind, after_chain = "relayout chain", chain
    mutations = [(k, m) for k, c in enumerate(chain) for m in [mutated_op(c[2], c[1])] if m is not None]
    if mutations and draw(st.integers(0, 2)) == 0:
        k, (name, op) = draw(st.sampled_from(mutations))
        after_chain = [(*c[:2], op, *c[3:]) if j == k else c for j, c in enumerate(chain)]
        kind = f"relayout chain, {name}"
    before, after = Module(), Module()
    for m, chosen, steps in ((before, lay_before, chain), (after, lay_after, after_chain)):
        m.add("p", shape_text(element, dims, p_layout), "parameter(0)")
        spaces = {"p": 0}
        for c, lay in zip(steps, bitcasts_stay_in_place(steps, chosen, spaces), strict=True):
            m.add(c[0], shape_text(c[3] if len(c) > 3 else element, c[1], str(lay)), c[2])
    return Case(before.text(), after.text(), mode, kind)


def mutated_op(op: str, dims: tuple[int, ...]) -> tuple[str, str] | None:
    """A small change of one op's text that keeps the module valid, with its name; or None.

    A start index moved by one (clamping may make it the same), another reversed or iota
    dimension, select's branches or a binary op's operands swapped."""
    if op.startswith("constant(") and op[9:-1].lstrip("-").isdigit() and not dims:
        return "start index moved by one", f"constant({int(op[9:-1]) + 1})"
    if op.startswith("reverse(") and len(dims) > 1:
        d = int(op.split("dimensions={")[1][:-1])
        return "other reversed dimension", op.split("dimensions=")[
            0
        ] + f"dimensions={{{(d + 1) % len(dims)}}}"
    if op.startswith("iota(") and len(dims) > 1:
        d = int(op.split("=")[1])
        return "other iota dimension", f"iota(), iota_dimension={(d + 1) % len(dims)}"
    for fn in ("select(", *(f"{f}(" for fs in BINARY.values() for f in fs)):
        if op.startswith(fn):
            args = op[len(fn) : -1].split(", ")
            swapped = [args[0], args[2], args[1]] if fn == "select(" else args[::-1]
            if swapped != args:
                return "operands swapped", fn + ", ".join(swapped) + ")"
    return None


def bitcasts_stay_in_place(chain: list[tuple], chosen: list, spaces: dict[str, int]) -> list:
    """The layouts ``chosen`` for ``chain``, with each bitcast moved into its operand's memory
    space (a bitcast cannot change memory space: that would be invalid HLO)."""
    out = []
    for c, lay in zip(chain, chosen, strict=True):
        if isinstance(lay, Lay) and c[2].startswith("bitcast("):
            lay = dataclasses.replace(lay, space=spaces.get(c[2][len("bitcast(") : -1], 0))
        spaces[c[0]] = lay.space if isinstance(lay, Lay) else 0
        out.append(lay)
    return out


@st.composite
def symbolic(draw) -> Case:
    """Symbolic sizes: ``f32[N,128]`` or ``f32[N,M]`` copies re-tiled and transposes into bitcasts,
    under ``N % k == 0 and M % 128 == 0``-style assumptions, run at the first sizes that satisfy them."""
    element, e = draw(st.sampled_from((("f32", 0), ("bf16", 0), ("s8", 0))))
    two_symbols = draw(st.booleans())
    minor = "M" if two_symbols else draw(st.sampled_from((4, 8, 128)))
    modulus_m = draw(st.sampled_from((1, 2, 128))) if two_symbols else 1
    tile = draw(
        st.sampled_from(
            ("", "T(8,128)", "T(2,4)", "T(4,4)") + (("T(8,128)(2,1)",) if element == "bf16" else ())
        )
    )
    other = draw(st.sampled_from(("", "T(8,128)", "T(2,4)", "T(4,128)")))
    modulus = draw(st.sampled_from((1, 2, 4, 8)))
    p = shape_text(element, ("N", minor), layout_text((1, 0), tile, e))
    before, after = Module(), Module()
    for m in (before, after):
        m.add("p", p, "parameter(0)")
    form = draw(st.sampled_from(("copy", "transpose")))
    if form == "copy":
        before.add("c", shape_text(element, ("N", minor), layout_text((1, 0), other, e)), "copy(p)")
        after.add("c", shape_text(element, ("N", minor), layout_text((1, 0), tile, e)), "copy(p)")
        kind = "symbolic copy re-tiled"
    else:
        result = shape_text(
            element, (minor, "N"), layout_text((0, 1), draw(st.sampled_from((tile, other))), e)
        )
        before.add("t", result, "transpose(p), dimensions={1,0}")
        after.add("t", result, "bitcast(p)")
        kind = "symbolic transpose->bitcast"
    conditions = [f"{name} % {k} == 0" for name, k in (("N", modulus), ("M", modulus_m)) if k > 1]
    assume = " and ".join(conditions) or None
    ns = [n for n in range(1, 18) if n % modulus == 0][:3]
    ms = [m for m in range(1, 300) if m % modulus_m == 0][:2] if two_symbols else [None]
    sizes = tuple({"N": n, **({"M": m} if m is not None else {})} for n, m in itertools.product(ns, ms))[:4]
    kind += " (N, M)" if two_symbols else ""
    return Case(
        before.text(), after.text(), draw(st.sampled_from(("physical", "logical"))), kind, assume, sizes
    )


@st.composite
def fused(draw) -> Case:
    """A chain moved into a fusion (``calls=``): the same computation, inlined by both sides."""
    case = draw(relayout())
    return Case(case.before, into_fusion(case.after), case.mode, case.kind + ", fused")


def into_fusion(text: str) -> str:
    """The entry computation of ``text`` moved into a fused computation called by a ``fusion``."""
    body = [line.strip().removeprefix("ROOT ") for line in text.split("\n")[2:-1]]
    params = sorted(
        (line for line in body if " parameter(" in line), key=lambda t: int(t.split("parameter(")[1][:-1])
    )
    root_shape = body[-1].split(" = ", 1)[1].split(" ", 1)[0]
    fused_lines = [*body[:-1], "ROOT " + body[-1]]
    operands = ", ".join(line.split(" = ")[0] for line in params)
    entry = [*params, f"ROOT fusion = {root_shape} fusion({operands}), kind=kLoop, calls=fused_computation"]
    return (
        "HloModule fuzz\nfused_computation {\n"
        + "\n".join("  " + line for line in fused_lines)
        + "\n}\nENTRY e {\n"
        + "\n".join("  " + line for line in entry)
        + "\n}"
    )


cases = st.one_of(
    transpose_to_bitcast(),
    reshape_to_bitcast(),
    copy_elimination(),
    transpose_pair(),
    slices(),
    reshape_across_elementwise(),
    relayout(),
)


# ------------------------------------------------------------------------ checking
@dataclass(frozen=True)
class Outcome:
    kind: str
    mode: str
    verdict: (
        str  # proved | refuted | unknown | rejected (invalid HLO: ValueError, or an invalid after module)
    )
    same: bool | str | None  # "invalid HLO" when the executor rejected a module
    agree: bool | None  # None when either side has no answer


def verify(case: Case):
    """The rewrite verifier on ``case``: ``layout_algebra.hlo.verify_rewrite``."""
    from layout_algebra.hlo import verify_rewrite

    return verify_rewrite(case.before, case.after, mode=case.mode, assume=case.assume)


def check_case(case: Case, *, trials: int = 4, seed: int = 0) -> Outcome:
    """Run the verifier and the executor on ``case``; assert they never contradict."""
    refused_size = False  # the verifier called a bitcast's shape size change invalid HLO
    try:
        result = verify(case)
    except ValueError as err:
        verdict, result = "rejected", None
        refused_size = "changes the shape size" in str(err)
        del err
    else:
        verdict = result.status
        invalid = (result.counterexample or {}).get("invalid_hlo") if verdict == "refuted" else None
        if invalid is not None:  # an unsafe rewrite: the rewritten module is invalid HLO
            verdict, result = "rejected", None
            refused_size = "changes the shape size" in invalid
    same: bool | None = None
    executed: list[bool | None] = []
    try:
        for sizes in case.sizes:
            c = compare(case.before, case.after, mode=case.mode, sizes=sizes, trials=trials, seed=seed)
            executed.append(c.same)
            if verdict == "proved":
                assert c.same is not False, (
                    f"SOUNDNESS: the verifier proved a rewrite that execution contradicts at sizes {sizes}: "
                    f"{c.detail}\nmode={case.mode} assume={case.assume}\n--- before\n{case.before}\n--- after\n{case.after}"
                )
        if verdict == "refuted" and result is not None:
            cex_sizes = {
                str(k): int(v) for k, v in ((result.counterexample or {}).get("sizes") or {}).items()
            }
            runnable = all(v <= 4096 for v in cex_sizes.values()) and math.prod(cex_sizes.values()) <= 1 << 17
            if cex_sizes and runnable:  # execute at the counterexample's own sizes
                c = compare(
                    case.before, case.after, mode=case.mode, sizes=cex_sizes, trials=trials, seed=seed
                )
                executed = [c.same]
            elif cex_sizes:  # too large to execute here: nothing to compare with
                executed = [None]
            if (cex_sizes and runnable) or not any(case.sizes):
                assert executed[-1] is not True, (
                    f"SOUNDNESS: the verifier refuted a rewrite that execution confirms at sizes {cex_sizes}: "
                    f"{result.counterexample}\nmode={case.mode}\n--- before\n{case.before}\n--- after\n{case.after}"
                )
    except InvalidHlo as err:
        assert "changes the shape size" not in str(err) or verdict == "rejected", (
            f"the executor refuses a bitcast the verifier accepted ({verdict}): {err}\n"
            f"--- before\n{case.before}\n--- after\n{case.after}"
        )
        return Outcome(case.kind, case.mode, verdict, "invalid HLO", None)
    assert not (refused_size and not any(case.sizes)), (
        f"the verifier refuses a bitcast the executor runs at these sizes\n--- before\n{case.before}\n--- after\n{case.after}"
    )
    if any(x is None for x in executed) or not executed:
        same = None
    else:
        same = all(executed)
    if verdict in ("proved", "refuted") and same is not None:
        agree = (verdict == "proved") == same
    else:
        agree = None
    return Outcome(case.kind, case.mode, verdict, same, agree)


@dataclass
class Tally:
    """Counts of outcomes, printed as the fuzz's agreement statistics."""

    counts: Counter = field(default_factory=Counter)

    def add(self, outcome: Outcome) -> None:
        self.counts[(outcome.kind, outcome.verdict, outcome.same)] += 1

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def summary(self) -> str:
        by_pair = Counter()
        for (_, verdict, same), n in self.counts.items():
            by_pair[(verdict, same)] += n
        lines = [f"{self.total} module pairs"]
        for (verdict, same), n in sorted(by_pair.items(), key=lambda kv: -kv[1]):
            lines.append(f"  verifier {verdict:<9} execution same={same}: {n}")
        return "\n".join(lines)
