"""Generated index code: compiled and executed against the layout map, read back, certified.

The C tests batch many random layouts into one program per test (one compiler run), call
every generated function on random indices and offsets, and compare with
``LayoutMap.forward / inverse / is_padding``. Python and NumPy code is exec'd. MLIR goldens
were written by hand from the layout semantics (derivations in the comments).
"""

from __future__ import annotations

import random
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import sympy
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.strategies_maps import small_layout_shapes

from layout_algebra.cli import main
from layout_algebra.codegen import LANGUAGES, generate_code
from layout_algebra.codegen import printers as printers_module
from layout_algebra.codegen import simplify as simplify_module
from layout_algebra.codegen.certification import certify, evaluate
from layout_algebra.codegen.expr import (
    CeilDiv,
    Const,
    Expr,
    FloorDiv,
    Mod,
    Product,
    Sum,
    Var,
    add,
    floordiv,
    mod,
    ops,
    scale,
    to_sympy,
)
from layout_algebra.codegen.generate import _bounds, build_expressions
from layout_algebra.codegen.readback import read_back
from layout_algebra.codegen.simplify import RULES, Bounds, factor_strides, simplify
from layout_algebra.interop.cute.export import NotExpressible, cute_expr, cute_layout, to_cute
from layout_algebra.meaning.layout_map import OFFSET_SYMBOL, layout_map
from layout_algebra.meaning.stages import Pad
from layout_algebra.model.symbols import dim_symbol

CC = shutil.which("cc") or shutil.which("gcc")
C_FLAGS = ["-std=c11", "-Wall", "-Wextra", "-Werror", "-O0"]
BATCH = settings(
    max_examples=3,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)


def test_a_c_compiler_is_available() -> None:
    assert CC, "these tests compile generated C: install cc (gcc or clang)"


# ----------------------------------------------------------------------------- C
def _compile_and_run(source: str, tmp: Path) -> list[str]:
    assert CC, "no C compiler"
    c_file, exe = tmp / "generated.c", tmp / "generated"
    c_file.write_text(source, encoding="utf-8")
    build = subprocess.run([CC, *C_FLAGS, str(c_file), "-o", str(exe)], capture_output=True, text=True)
    assert build.returncode == 0, f"{build.stderr}\n--- source ---\n{source[:4000]}"
    assert build.stderr == "", build.stderr  # warning-free
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    return run.stdout.splitlines()


def _sample(values: list, rng: random.Random, k: int) -> list:
    return values if len(values) <= k else rng.sample(values, k)


def _same_lines(got: list[str], expected: list[str], calls: list[str]) -> None:
    """Compare program output with the layout map's answers, naming the first call that differs."""
    for line, want, call in zip(got, expected, calls, strict=False):
        assert line == want, f"{call} printed {line!r}, the layout map says {want!r}"
    assert len(got) == len(expected), f"{len(got)} lines printed, {len(expected)} expected"


def _c_batch(shapes, rng: random.Random, units=("element", "byte", "bit")):
    """One C program testing every shape: (source, expected output lines, the call behind each line)."""
    functions, calls, expected, labels = [], [], [], []

    def call(code: str, want: str, shape) -> None:
        calls.append(f"    {code}")
        expected.append(want)
        labels.append(f"{code}  /* {shape} */")

    for n, shape in enumerate(shapes):
        m = layout_map(shape)
        for unit in units:
            tag = f"l{n}_{unit}"
            fwd = generate_code(shape, "c", "forward", unit, f"{tag}_fwd")
            inv = generate_code(shape, "c", "inverse", unit, f"{tag}_inv")
            pad = generate_code(shape, "c", "padding", unit, f"{tag}_pad")
            for g in (fwd, inv, pad):
                assert g.certification.status == "proved", (str(shape), g.direction, unit, g.certification)
                functions.append(g.text)
            for index in _sample(list(m.elements()), rng, 8):
                args = ", ".join(map(str, index))
                call(f'printf("%lld\\n", (long long){tag}_fwd({args}));', str(m.forward(index, unit)), shape)
            size = {"element": m.size_in_elements, "byte": m.size_in_bytes, "bit": m.size_in_bits}[unit]
            for p in _sample(list(range(size)), rng, 8):
                element = m.inverse(p, unit)
                call(f'printf("%d\\n", (int){tag}_pad({p}));', str(int(element is None)), shape)
                if element is not None:
                    out = "".join(f", (long long)ix[{k}]" for k in range(m.rank))
                    fmt = " ".join(["%lld"] * m.rank)
                    code = (
                        f'{{ uint64_t ix[{max(m.rank, 1)}]; {tag}_inv({p}, ix); printf("{fmt}\\n"{out}); }}'
                    )
                    call(code, " ".join(map(str, element)), shape)
    source = "\n".join(
        ["#include <stdio.h>", *functions, "int main(void) {", *calls, "    return 0;", "}", ""]
    )
    return source, expected, labels


@pytest.mark.slow
@BATCH
@given(st.lists(small_layout_shapes(), min_size=12, max_size=12), st.randoms(use_true_random=False))
def test_generated_c_compiles_warning_free_and_agrees_with_the_layout_map(
    tmp_path_factory, shapes, rng
) -> None:
    source, expected, calls = _c_batch(shapes, rng)
    _same_lines(_compile_and_run(source, tmp_path_factory.mktemp("c")), expected, calls)


@pytest.mark.slow
@BATCH
@given(
    st.lists(
        st.one_of(
            small_layout_shapes(element=("bf16", 0)),
            small_layout_shapes(element=("s8", 0)),
            small_layout_shapes(element=("s4", 4)),
            small_layout_shapes(element=("pred", 1)),
        ),
        min_size=12,
        max_size=12,
    ),
    st.randoms(use_true_random=False),
)
def test_generated_c_for_packed_types_agrees_in_bytes_and_bits(tmp_path_factory, shapes, rng) -> None:
    source, expected, calls = _c_batch(shapes, rng, units=("byte", "bit"))
    _same_lines(_compile_and_run(source, tmp_path_factory.mktemp("c")), expected, calls)


TPU_FORMATS = [
    "f32[20,300]{1,0:T(8,128)}",
    "f32[300,20]{0,1:T(8,128)}",
    "bf16[24,260]{1,0:T(8,128)(2,1)}",
    "s8[40,130]{1,0:T(32,128)(4,1)}",
    "s4[70,130]{1,0:T(64,128)(8,1)E(4)}",
    "f32[2,300]{1,0:T(2,128)}",
    "bf16[2,3,5,7]{3,2,0,1:T(8,128)(2,1)}",
    "f32[2,7,8,11,10]{4,3,2,1,0:T(*,*,2,*,3)}",
    "pred[300]{0:T(1024)(128)(4,1)L(1024)}",
    "bf16[2048]{0:T(1024)(128)(2,1)}",
    "f32[8,8]{1,0:T(2,4)(2,1,1,1)}",
]


@pytest.mark.slow
def test_c_for_standard_tpu_formats_agrees_on_every_element(tmp_path) -> None:
    functions, calls, expected = [], [], []
    for n, shape in enumerate(TPU_FORMATS):
        m = layout_map(shape)
        g = generate_code(shape, "c", "forward", "byte", f"t{n}")
        functions.append(g.text)
        loops = " ".join(
            f"for (int64_t i{k} = 0; i{k} < {d}; ++i{k})" for k, d in enumerate(m.shape.dimensions)
        )
        args = ", ".join(f"i{k}" for k in range(m.rank))
        calls.append(
            f'    {{ long long sum = 0; {loops} sum = sum * 31 + t{n}({args}); printf("%lld\\n", sum); }}'
        )
        total = 0
        for index in m.elements():
            total = total * 31 + m.forward(index, "byte")
        expected.append(str(np.int64(np.uint64(total % 2**64).astype(np.int64))))
    source = "\n".join(
        ["#include <stdio.h>", *functions, "int main(void) {", *calls, "    return 0;", "}", ""]
    )
    source = source.replace("long long sum", "unsigned long long sum").replace(
        '"%lld\\n", sum', '"%lld\\n", (long long)sum'
    )
    assert _compile_and_run(source, tmp_path) == expected


SYMBOLIC = [
    "f32[N,M]{1,0:T(8,128)}",
    "bf16[N,M]{0,1:T(8,128)(2,1)}",
    "s4[N]{0:T(1024)(128)(8,1)E(4)}",
    "f32[2,N,8,M]{3,2,1,0:T(*,*,2,*,128)}",
    "s8[B,N,M]{2,1,0:T(32,128)(4,1)}",
]


@pytest.mark.slow
def test_c_with_symbolic_sizes_takes_them_as_parameters(tmp_path) -> None:
    rng = random.Random(7)
    functions, calls, expected = [], [], []
    for n, shape in enumerate(SYMBOLIC):
        generic = layout_map(shape)
        names = sorted(
            {str(s) for d in generic.shape.dimensions if not isinstance(d, int) for s in d.free_symbols}
        )
        for unit in ("element", "byte"):
            for direction in ("forward", "inverse", "padding"):
                g = generate_code(shape, "c", direction, unit, f"s{n}_{direction}_{unit}", check=False)
                assert g.parameters[-len(names) :] == tuple(n for n in g.parameters if n in names)
                functions.append(g.text)
        for sizes in ({k: v for k, v in zip(names, (3, 130, 5), strict=False)}, dict.fromkeys(names, 9)):
            m = generic.specialize(sizes)
            order = [str(x) for x in generate_code(shape, "c", check=False).parameters if x in names]
            size_args = ", ".join(str(sizes[x]) for x in order)
            for unit in ("element", "byte"):
                tag = f"s{n}_{{}}_{unit}"
                for index in _sample(list(m.elements()), rng, 6):
                    args = ", ".join([*map(str, index), size_args])
                    calls.append(f'    printf("%lld\\n", (long long){tag.format("forward")}({args}));')
                    expected.append(str(m.forward(index, unit)))
                size = m.size_in_elements if unit == "element" else m.size_in_bytes
                for p in _sample(list(range(size)), rng, 6):
                    element = m.inverse(p, unit)
                    calls.append(f'    printf("%d\\n", (int){tag.format("padding")}({p}, {size_args}));')
                    expected.append(str(int(element is None)))
                    if element is not None:
                        out = ", ".join(f"(long long)ix[{k}]" for k in range(m.rank))
                        fmt = " ".join(["%lld"] * m.rank)
                        calls.append(
                            f'    {{ uint64_t ix[{m.rank}]; {tag.format("inverse")}({p}, {size_args}, ix); printf("{fmt}\\n", {out}); }}'
                        )
                        expected.append(" ".join(map(str, element)))
    source = "\n".join(
        ["#include <stdio.h>", *functions, "int main(void) {", *calls, "    return 0;", "}", ""]
    )
    assert _compile_and_run(source, tmp_path) == expected


_C_OPERATOR = re.compile(r"\|\||>=|[-+*/%]")


@pytest.mark.slow
@settings(max_examples=60)
@given(
    small_layout_shapes(),
    st.sampled_from(["forward", "inverse", "padding"]),
    st.sampled_from(["element", "byte"]),
)
def test_op_count_is_the_number_of_operators_in_the_c_text(shape, direction, unit) -> None:
    g = generate_code(shape, "c", direction, unit, check=False)
    assert g.op_counts == tuple(len(_C_OPERATOR.findall(t)) for t in g.expression_texts)
    raw = generate_code(shape, "c", direction, unit, simplified=False, check=False)
    assert raw.op_counts == tuple(len(_C_OPERATOR.findall(t)) for t in raw.expression_texts)
    assert g.op_count <= raw.op_count


@pytest.mark.parametrize("shape", SYMBOLIC)
def test_op_count_counts_ceiling_divisions_of_sizes_as_c_does(shape) -> None:
    for direction in ("forward", "inverse"):
        g = generate_code(shape, "c", direction, check=False)
        assert g.op_counts == tuple(len(_C_OPERATOR.findall(t)) for t in g.expression_texts)


# ----------------------------------------------------------------------------- Python and NumPy
def _load(code: str, name: str):
    namespace: dict = {}
    exec(compile(code, "<generated>", "exec"), namespace)
    return namespace[name]


@pytest.mark.slow
@settings(max_examples=40)
@given(small_layout_shapes(), st.sampled_from(["element", "byte", "bit"]))
def test_python_and_numpy_code_agree_with_the_layout_map_everywhere(shape, unit) -> None:
    m = layout_map(shape)
    size = {"element": m.size_in_elements, "byte": m.size_in_bytes, "bit": m.size_in_bits}[unit]
    elements = list(m.elements())
    offsets = np.arange(size, dtype=np.int64)
    expected_padding = np.array([m.is_padding(int(p), unit) for p in offsets], dtype=bool)
    for lang in ("python", "numpy"):
        fwd = _load(generate_code(shape, lang, "forward", unit).text, f"{unit}_offset")
        inv = _load(generate_code(shape, lang, "inverse", unit).text, "logical_index")
        pad = _load(generate_code(shape, lang, "padding", unit).text, "is_padding")
        if lang == "python":
            assert [fwd(*e) for e in elements] == [m.forward(e, unit) for e in elements]
            assert [bool(pad(int(p))) for p in offsets] == list(expected_padding)
            for p in offsets[~expected_padding]:
                assert inv(int(p)) == m.inverse(int(p), unit)
            continue
        if elements and m.rank:
            grid = np.array(elements, dtype=np.int64).T
            got = fwd(*grid)
            assert got.dtype == np.int64 and got.shape == (len(elements),)
            assert got.tolist() == [m.forward(e, unit) for e in elements]
        assert np.array_equal(pad(offsets), expected_padding)
        holds = offsets[~expected_padding]
        got_index = inv(holds)
        assert len(got_index) == m.rank
        for k, p in enumerate(holds):
            assert tuple(int(v[k]) for v in got_index) == m.inverse(int(p), unit)


def test_numpy_code_broadcasts_index_arrays() -> None:
    f = _load(generate_code("bf16[16,256]{1,0:T(8,128)(2,1)}", "numpy").text, "element_offset")
    m = layout_map("bf16[16,256]{1,0:T(8,128)(2,1)}")
    rows, cols = np.arange(16)[:, None], np.arange(256)[None, :]
    out = f(rows, cols)
    assert out.shape == (16, 256)
    assert out[5, 200] == m.forward((5, 200))
    assert sorted(out.ravel().tolist()) == list(range(16 * 256))


# ----------------------------------------------------------------------------- MLIR
# Goldens written by hand. f32[16,256]{1,0:T(8,128)}: the tiled index is
# (i0 floordiv 8, i1 floordiv 128, i0 mod 8, i1 mod 128) in a (2, 2, 8, 128) box, so the
# row-major strides are 2048, 1024, 128, 1. Back from p < 4096: i0 = 8*(p floordiv 2048) +
# (p floordiv 128) mod 8, i1 = 128*((p floordiv 1024) mod 2) + p mod 128.
MLIR_GOLDENS = [
    (
        "f32[16,256]{1,0:T(8,128)}",
        "forward",
        "element",
        "affine_map<(d0, d1) -> ((d0 floordiv 8) * 2048 + (d1 floordiv 128) * 1024 + (d0 mod 8) * 128 + d1 mod 128)>",
    ),
    (
        "f32[16,256]{1,0:T(8,128)}",
        "inverse",
        "element",
        "affine_map<(d0) -> ((d0 floordiv 2048) * 8 + (d0 floordiv 128) mod 8, ((d0 floordiv 1024) mod 2) * 128 + d0 mod 128)>",
    ),
    # bytes are 4 per element: every stride times 4
    (
        "f32[16,256]{1,0:T(8,128)}",
        "forward",
        "byte",
        "affine_map<(d0, d1) -> ((d0 floordiv 8) * 8192 + (d1 floordiv 128) * 4096 + (d0 mod 8) * 512 + (d1 mod 128) * 4)>",
    ),
    # bf16 (8,128)(2,1): the (2,1) tile splits the in-tile row r = i0 mod 8 into (r floordiv 2, r mod 2)
    # = ((i0 floordiv 2) mod 4, i0 mod 2) and moves r mod 2 minor-most: box (2,2,4,128,2,1),
    # strides 2048, 1024, 256, 2, 1.
    (
        "bf16[16,256]{1,0:T(8,128)(2,1)}",
        "forward",
        "element",
        "affine_map<(d0, d1) -> ((d0 floordiv 8) * 2048 + (d1 floordiv 128) * 1024 + ((d0 floordiv 2) mod 4) * 256 + (d1 mod 128) * 2 + d0 mod 2)>",
    ),
    (
        "bf16[16,256]{1,0:T(8,128)(2,1)}",
        "inverse",
        "element",
        "affine_map<(d0) -> ((d0 floordiv 2048) * 8 + ((d0 floordiv 256) mod 4) * 2 + d0 mod 2, ((d0 floordiv 1024) mod 2) * 128 + (d0 floordiv 2) mod 128)>",
    ),
    # s8 (32,128)(4,1): in-tile row r = i0 mod 32 becomes ((i0 floordiv 4) mod 8, i0 mod 4);
    # box (2,2,8,128,4,1), strides 8192, 4096, 512, 4, 1.
    (
        "s8[64,256]{1,0:T(32,128)(4,1)}",
        "forward",
        "element",
        "affine_map<(d0, d1) -> ((d0 floordiv 32) * 8192 + (d1 floordiv 128) * 4096 + ((d0 floordiv 4) mod 8) * 512 + (d1 mod 128) * 4 + d0 mod 4)>",
    ),
    # small tile (2,128) on f32[2,384]: i0 < 2 is its own in-tile row (no floordiv, no mod);
    # box (1,3,2,128), strides 256, 128, 1.
    (
        "f32[2,384]{1,0:T(2,128)}",
        "forward",
        "element",
        "affine_map<(d0, d1) -> ((d1 floordiv 128) * 256 + d0 * 128 + d1 mod 128)>",
    ),
    # f32[5,130] pads to (8,256): box (1,2,8,128); p < 2048. The element set is i0 <= 4 and
    # i1 <= 129 with i0 = (p floordiv 128) mod 8 and i1 = 128*(p floordiv 1024) + p mod 128.
    (
        "f32[5,130]{1,0:T(8,128)}",
        "padding",
        "element",
        "affine_set<(d0) : (4 - (d0 floordiv 128) mod 8 >= 0, 129 - (d0 floordiv 1024) * 128 - d0 mod 128 >= 0)>",
    ),
    # symbolic: the tile-row stride 1024*ceil(M/128) uses the symbol s1 = M
    (
        "f32[N,M]{1,0:T(8,128)}",
        "forward",
        "element",
        "affine_map<(d0, d1)[s0, s1] -> (((d0 floordiv 8) * (s1 ceildiv 128) + d1 floordiv 128) * 1024 + (d0 mod 8) * 128 + d1 mod 128)>",
    ),
]


@pytest.mark.parametrize(("shape", "direction", "unit", "golden"), MLIR_GOLDENS)
def test_mlir_goldens_written_by_hand(shape, direction, unit, golden) -> None:
    g = generate_code(shape, "mlir", direction, unit, check=not layout_map(shape).is_symbolic)
    assert g.text.splitlines()[-1] == f"#{g.name} = {golden}"
    assert g.certification.status == ("proved" if not layout_map(shape).is_symbolic else "unknown")


class _AffineGrammar:
    """MLIR's affine-map syntax, written from its grammar (LangRef, Affine dialect):

    affine-map  ::= `affine_map<` dim-list symbol-list? `->` `(` (expr (`,` expr)*)? `)` `>`
    integer-set ::= `affine_set<` dim-list symbol-list? `:` `(` expr `>=` `0` (`,` ...)* `)` `>`
    expr ::= expr (`+`|`-`) term | term ;  term ::= term (`*`|`floordiv`|`ceildiv`|`mod`) unary
    unary ::= `-` unary | `(` expr `)` | bare-id | integer
    A product needs a symbolic operand (no dims); the right of floordiv/ceildiv/mod must be
    symbolic (a constant in a pure affine map).
    """

    def __init__(self, text: str) -> None:
        m = re.fullmatch(
            r"(?:#[A-Za-z_][\w$.-]*\s*=\s*)?(affine_map|affine_set)<\(([^)]*)\)(?:\[([^\]]*)\])?\s*(->|:)\s*\((.*)\)>",
            text.strip(),
        )
        assert m, f"not an affine map or set: {text}"
        self.kind = m[1]
        self.dims = [d.strip() for d in m[2].split(",") if d.strip()]
        self.symbols = [s.strip() for s in (m[3] or "").split(",") if s.strip()]
        assert self.dims == [f"d{k}" for k in range(len(self.dims))]
        assert self.symbols == [f"s{k}" for k in range(len(self.symbols))]
        assert m[4] == ("->" if self.kind == "affine_map" else ":")
        self.body = m[5]

    def check(self) -> None:
        self.tokens = re.findall(r"floordiv|ceildiv|mod|>=|[a-z]\d+|\d+|[-+*(),]", self.body)
        assert "".join(self.tokens) == re.sub(r"\s+", "", self.body), f"stray characters in {self.body}"
        self.pos = 0
        if not self.tokens and self.kind == "affine_map":
            return  # a map with no results, e.g. the inverse of a scalar: (d0) -> ()
        while True:
            self.expr()
            if self.kind == "affine_set":
                assert self.take() == ">=" and self.take() == "0"
            if self.peek() is None:
                return
            assert self.take() == ","

    def peek(self):
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self):
        assert self.pos < len(self.tokens), "unexpected end of expression"
        self.pos += 1
        return self.tokens[self.pos - 1]

    def expr(self) -> bool:  # returns: is the expression symbolic (no dims)?
        symbolic = self.term()
        while self.peek() in ("+", "-"):
            self.take()
            symbolic = self.term() and symbolic
        return symbolic

    def term(self) -> bool:
        symbolic = self.unary()
        while self.peek() in ("*", "floordiv", "ceildiv", "mod"):
            op = self.take()
            right = self.unary()
            if op == "*":
                assert symbolic or right, "a product needs a symbolic or constant operand"
            else:
                assert right, f"the right of {op} must be symbolic or constant"
            symbolic = symbolic and right
        return symbolic

    def unary(self) -> bool:
        token = self.take()
        if token == "-":
            return self.unary()
        if token == "(":
            symbolic = self.expr()
            assert self.take() == ")"
            return symbolic
        if token.isdigit():
            return True
        assert token in self.dims or token in self.symbols, f"unknown identifier {token}"
        return token in self.symbols


def test_the_affine_grammar_check_rejects_what_mlir_rejects() -> None:
    for bad in (
        "affine_map<(d0, d1) -> (d0 * d1)>",
        "affine_map<(d0, d1) -> (d0 floordiv d1)>",
        "affine_map<(d0) -> (d0 floordiv 2 *)>",
        "affine_map<(d0) -> (d0 // 2)>",
        "affine_map<(d0) -> (d1)>",
    ):
        with pytest.raises(AssertionError):
            _AffineGrammar(bad).check()
    _AffineGrammar("affine_map<(d0)[s0] -> (d0 * s0 + (d0 mod 4) * 2, d0 ceildiv (s0 * 4))>").check()


@settings(max_examples=60)
@given(
    small_layout_shapes(),
    st.sampled_from(["forward", "inverse", "padding"]),
    st.sampled_from(["element", "byte"]),
)
def test_mlir_output_follows_the_affine_grammar(shape, direction, unit) -> None:
    g = generate_code(shape, "mlir", direction, unit, check=False)
    grammar = _AffineGrammar(g.text.splitlines()[-1])
    grammar.check()
    assert grammar.kind == ("affine_set" if direction == "padding" else "affine_map")
    assert not grammar.symbols  # concrete shapes give pure affine maps


@pytest.mark.parametrize("shape", SYMBOLIC)
@pytest.mark.parametrize("direction", ["forward", "inverse", "padding"])
def test_mlir_with_symbolic_sizes_is_semi_affine(shape, direction) -> None:
    g = generate_code(shape, "mlir", direction, check=False)
    grammar = _AffineGrammar(g.text.splitlines()[-1])
    grammar.check()
    assert grammar.symbols


# ----------------------------------------------------------------------------- LaTeX
def _balanced(text: str) -> bool:
    depth = 0
    for ch in text.replace("\\{", "").replace("\\}", ""):
        depth += {"{": 1, "}": -1}.get(ch, 0)
        if depth < 0:
            return False
    return depth == 0 and text.count("\\left") == text.count("\\right")


@settings(max_examples=40)
@given(small_layout_shapes(), st.sampled_from(["forward", "inverse", "padding"]))
def test_latex_is_well_formed_and_reads_back(shape, direction) -> None:
    g = generate_code(shape, "latex", direction)
    assert _balanced(g.text), g.text
    assert "\n" not in g.text.strip()
    assert g.certification.status == "proved"  # the LaTeX itself was read back and checked


def test_latex_of_symbolic_sizes_names_them() -> None:
    g = generate_code("f32[rows,M]{1,0:T(8,128)}", "latex", check=False)
    assert "\\mathit{rows}" not in g.text  # rows does not occur in the forward map...
    assert "\\left\\lceil \\frac{M}{128} \\right\\rceil" in g.text
    g = generate_code("f32[rows,M]{1,0:T(8,128)}", "latex", "padding", check=False)
    assert "\\mathit{rows}" in g.text and _balanced(g.text)


# ----------------------------------------------------------------------------- simplifier soundness
VAR_BOUNDS = {"x": 40, "y": 9}
SIZE = Var("N", "dim")


def _trees() -> st.SearchStrategy[Expr]:
    leaves = st.one_of(st.sampled_from([Var("x"), Var("y"), SIZE]), st.integers(0, 12).map(Const))
    divisors = st.one_of(st.integers(1, 16).map(Const), st.just(SIZE), st.just(add(SIZE, Const(3))))

    def extend(children):
        return st.one_of(
            st.tuples(children, children).map(lambda t: add(*t)),
            st.tuples(children, st.integers(1, 12)).map(lambda t: scale(t[0], t[1])),
            st.tuples(children, divisors).map(lambda t: floordiv(*t)),
            st.tuples(children, divisors).map(lambda t: mod(*t)),
            st.tuples(children, st.integers(1, 16)).map(lambda t: CeilDiv(t[0], Const(t[1]))),
            st.tuples(children, st.just(SIZE)).map(lambda t: t[0] * t[1]),
        )

    return st.recursive(leaves, extend, max_leaves=10)


def _evaluate(e: Expr, env: dict[str, np.ndarray]) -> np.ndarray:
    """Direct evaluation of a tree (independent of SymPy and of the printers)."""
    if isinstance(e, Const):
        return np.int64(e.value)
    if isinstance(e, Var):
        return env[e.name]
    if isinstance(e, Sum):
        out = np.int64(e.const)
        for a, c in e.terms:
            out = out + c * _evaluate(a, env)
        return out
    if isinstance(e, Product):
        out = np.int64(1)
        for f in e.factors:
            out = out * _evaluate(f, env)
        return out
    a, b = _evaluate(e.num, env), _evaluate(e.den, env)
    if isinstance(e, FloorDiv):
        return a // b
    if isinstance(e, Mod):
        return a % b
    if isinstance(e, CeilDiv):
        return -((-a) // b)
    raise TypeError(e)


def _grid() -> dict[str, np.ndarray]:
    x, y, n = np.meshgrid(
        np.arange(VAR_BOUNDS["x"]), np.arange(VAR_BOUNDS["y"]), np.arange(1, 6), indexing="ij"
    )
    return {"x": x.ravel(), "y": y.ravel(), "N": n.ravel()}


GRID = _grid()
BOX = Bounds({name: (0, bound - 1) for name, bound in VAR_BOUNDS.items()})  # N: a size, >= 1, unbounded


@pytest.mark.slow
@settings(max_examples=400)
@given(_trees())
def test_simplification_preserves_the_value_at_every_point(e) -> None:
    log: list[str] = []
    simplified = simplify(e, BOX, log)
    assert np.array_equal(
        np.broadcast_to(_evaluate(simplified, GRID), GRID["x"].shape),
        np.broadcast_to(_evaluate(e, GRID), GRID["x"].shape),
    ), (e, simplified, log)
    factored = factor_strides(simplified)
    assert np.array_equal(_evaluate(factored, GRID), _evaluate(simplified, GRID))
    assert ops(factored) <= ops(simplified)


@pytest.mark.slow
@pytest.mark.parametrize("rule", RULES, ids=[r.__name__ for r in RULES])
@settings(max_examples=150)
@given(e=_trees())
def test_each_rule_alone_is_sound(rule, e) -> None:
    simplified = simplify(e, BOX, rules=(rule,))
    assert np.array_equal(
        np.broadcast_to(_evaluate(simplified, GRID), GRID["x"].shape),
        np.broadcast_to(_evaluate(e, GRID), GRID["x"].shape),
    ), (rule.__name__, e, simplified)


def test_each_rule_fires_on_its_own_example() -> None:
    x, y = Var("x"), Var("y")
    examples = {
        "division_by_one": (floordiv(x, 1), x),
        "remainder_below_divisor": (mod(y, 128), y),
        "quotient_fixed_by_range": (floordiv(y, 16), Const(0)),
        "nested_floordiv": (floordiv(floordiv(x, 2), 4), floordiv(x, 8)),
        "mod_of_mod": (mod(mod(x, 8), 2), mod(x, 2)),
        "floordiv_of_mod": (floordiv(mod(x, 8), 2), mod(floordiv(x, 2), 4)),
        "multiples_out_of_floordiv": (floordiv(add(scale(x, 8), y), 8), add(x, floordiv(y, 8))),
        "multiples_out_of_mod": (mod(add(scale(x, 8), y), 8), mod(y, 8)),
        "merge_quotient_remainder": (add(scale(floordiv(x, 8), 8), mod(x, 8)), x),
        "comparison_fixed_by_range": (simplify_module.ge(y, 9), simplify_module.FALSE),
    }
    assert set(examples) == {r.__name__ for r in RULES}
    for rule in RULES:
        before, after = examples[rule.__name__]
        assert rule(before, BOX) == after, rule.__name__


@pytest.mark.slow
@settings(max_examples=80)
@given(
    small_layout_shapes(),
    st.sampled_from(["forward", "inverse", "padding"]),
    st.sampled_from(["element", "byte", "bit"]),
)
def test_simplified_equals_unsimplified_on_every_point_of_small_layouts(shape, direction, unit) -> None:
    m = layout_map(shape)
    raw = build_expressions(m, direction, unit)
    simplified = tuple(factor_strides(simplify(e, _bounds(m, direction, unit))) for e in raw)
    if direction == "forward":
        elements = list(m.elements())
        env = {f"i{k}": np.array([e[k] for e in elements], dtype=np.int64) for k in range(m.rank)}
        n = len(elements)
    else:
        n = {"element": m.size_in_elements, "byte": m.size_in_bytes, "bit": m.size_in_bits}[unit]
        env = {"p": np.arange(n, dtype=np.int64)}
    if direction == "padding":  # conditions: compare through SymPy, exactly
        before = evaluate(to_sympy(raw[0]), {OFFSET_SYMBOL: env["p"]})
        after = evaluate(to_sympy(simplified[0]), {OFFSET_SYMBOL: env["p"]})
        assert np.array_equal(np.broadcast_to(before, n), np.broadcast_to(after, n))
        return
    for a, b in zip(raw, simplified, strict=True):
        assert np.array_equal(np.broadcast_to(_evaluate(a, env), n), np.broadcast_to(_evaluate(b, env), n))


# ----------------------------------------------------------------------------- certification
def test_a_wrong_forward_expression_is_refuted_with_a_counterexample() -> None:
    m = layout_map("bf16[16,256]{1,0:T(8,128)(2,1)}")
    right = generate_code(m.shape, "python").read_back
    wrong = right.subs(sympy.Integer(256), sympy.Integer(255))
    assert certify(m, "forward", "element", right).status == "proved"
    r = certify(m, "forward", "element", wrong)
    assert r.status == "refuted"
    index = (r.counterexample["i0"], r.counterexample["i1"])
    assert m.forward(index) == r.counterexample["expected"] != r.counterexample["emitted"]


def test_a_wrong_inverse_or_padding_predicate_is_refuted() -> None:
    m = layout_map("f32[3,5]{1,0:T(2,2)}")
    inverse = generate_code(m.shape, "python", "inverse").read_back
    swapped = (inverse[1], inverse[0])
    r = certify(m, "inverse", "element", swapped)
    assert r.status == "refuted" and m.inverse(r.counterexample["p"]) == r.counterexample["expected"]
    p = OFFSET_SYMBOL
    assert certify(m, "padding", "element", sympy.Ge(p, 15)).status == "refuted"


def test_a_wrong_expression_for_a_large_shape_is_refuted_by_the_prover() -> None:
    m = layout_map("f32[1280,16384]{1,0:T(8,128)}")
    right = generate_code(m.shape, "python").read_back
    r = certify(m, "forward", "element", right + sympy.floor(m.index_symbols[1] / 16000))
    assert r.method == "prover" and r.status == "refuted"
    assert r.counterexample["i1"] >= 16000
    assert generate_code(m.shape, "python").certification.status == "proved"


def test_a_printer_bug_is_caught_by_reading_the_text_back(monkeypatch) -> None:
    monkeypatch.setattr(printers_module.CPrinter, "mod", " / ")
    g = generate_code("f32[16,256]{1,0:T(8,128)}", "c")
    assert g.certification.status == "refuted"
    assert g.certification.counterexample is not None


def test_an_unsound_rewrite_rule_is_caught(monkeypatch) -> None:
    def drop_every_mod(e, bounds):  # wrong on purpose: x mod d = x
        return e.num if isinstance(e, Mod) else None

    monkeypatch.setattr(simplify_module, "RULES", (*RULES, drop_every_mod))
    g = generate_code("f32[16,256]{1,0:T(8,128)}", "python")
    assert "%" not in g.expression_texts[0]
    assert g.certification.status == "refuted"


def test_symbolic_sizes_without_a_proof_are_checked_at_sample_sizes() -> None:
    m = layout_map("f32[N,M]{1,0:T(8,128)}")
    g = generate_code("f32[N,M]{1,0:T(8,128)}", "c", "inverse")
    r = certify(m, "inverse", "element", g.read_back, use_prover=False)
    assert (r.status, r.method) == ("unknown", "samples") and "N=130, M=130" in r.detail
    wrong = tuple(e + sympy.floor(OFFSET_SYMBOL / 4000) for e in g.read_back)
    r = certify(m, "inverse", "element", wrong, use_prover=False)
    assert (r.status, r.method) == ("refuted", "samples")


SYMBOLIC_OFFSET_SHAPES = (
    "f32[N,M]{1,0:T(8,128)}",
    "f32[N,M]{0,1:T(8,128)}",
    "bf16[N,M]{1,0:T(8,128)(2,1)}",
    "s8[N,M,K]{2,1,0:T(32,128)(4,1)}",
    "s4[N,M]{1,0:T(64,128)(8,1)E(4)}",
    "pred[N,M]{1,0:T(32,128)(32,1)E(1)}",
    "f32[N,M]{1,0:T(8,128)(2,1,1,1)}",
    "f32[N,M,K]{2,1,0:T(2,*,128)}",
    "f32[N,M]{1,0:T(8,128)L(1024)}",
    "bf16[8,N,1280,M]{3,2,0,1:T(8,128)(2,1)}",
)


@pytest.mark.slow
@pytest.mark.parametrize("shape", SYMBOLIC_OFFSET_SHAPES)
@pytest.mark.parametrize("unit", ["element", "byte", "bit"])
def test_symbolic_code_is_proved_in_every_direction(shape, unit) -> None:
    for direction in ("forward", "inverse", "padding"):
        g = generate_code(shape, "python", direction, unit)
        assert (g.certification.status, g.certification.method) == ("proved", "prover"), g.certification


def test_wrong_symbolic_forward_maps_are_refuted_with_real_counterexamples() -> None:
    shape = "bf16[N,M]{1,0:T(8,128)(2,1)}"
    m = layout_map(shape)
    good = generate_code(shape, "python").read_back
    i0, i1 = m.index_symbols
    for wrong in (good + sympy.floor(i0 / 1000), good.subs(2, 4), good.subs(sympy.Rational(127, 128), 0)):
        r = certify(m, "forward", "element", wrong)
        assert r.status == "refuted", wrong
        sizes = {dim_symbol(k): r.counterexample[k] for k in ("N", "M")}
        index = (r.counterexample["i0"], r.counterexample["i1"])
        at = {**sizes, i0: index[0], i1: index[1]}
        assert int(sympy.sympify(wrong).subs(at)) != m.specialize(sizes).forward(index, "element")


@pytest.mark.parametrize(
    "change",
    [
        lambda e: e + sympy.floor(OFFSET_SYMBOL / 4000),  # wrong far from the start
        lambda e: e.subs(sympy.Rational(127, 128), 0),  # the tile count ⌈M/128⌉ rounded down
        lambda e: e.subs(128, 127),  # a wrong tile width
    ],
    ids=["extra-term", "round-down", "wrong-width"],
)
def test_wrong_symbolic_inverses_are_refuted_with_real_counterexamples(change) -> None:
    m = layout_map("f32[N,M]{1,0:T(8,128)}")
    good = generate_code("f32[N,M]{1,0:T(8,128)}", "python", "inverse").read_back
    wrong = tuple(change(sympy.sympify(e)) for e in good)
    assert wrong != tuple(good)
    r = certify(m, "inverse", "element", wrong)
    assert r.status == "refuted"
    sizes = {dim_symbol(k): r.counterexample[k] for k in ("N", "M")}
    concrete = m.specialize(sizes)
    p = r.counterexample["p"]
    at = {**sizes, OFFSET_SYMBOL: p}
    assert not concrete.is_padding(p)
    assert tuple(int(sympy.sympify(e).subs(at)) for e in wrong) != concrete.inverse(p)


def test_symbolic_forward_maps_are_proved() -> None:
    g = generate_code("f32[N,M]{1,0:T(8,128)}", "c", timeout_ms=10_000)
    assert (g.certification.status, g.certification.method) == ("proved", "prover")


# ----------------------------------------------------------------------------- readback
@pytest.mark.parametrize("lang", LANGUAGES)
def test_every_language_reads_back_to_the_same_value(lang) -> None:
    shape = "bf16[24,260]{1,0:T(8,128)(2,1)}"
    reference = generate_code(shape, "python", "inverse").read_back
    g = generate_code(shape, lang, "inverse")
    env = {OFFSET_SYMBOL: np.arange(0, 6000, 7)}
    for a, b in zip(g.read_back, reference, strict=True):
        assert np.array_equal(evaluate(a, env), evaluate(b, env))


def test_c_reads_back_with_c_precedence() -> None:
    i0 = sympy.Symbol("i0", integer=True, nonnegative=True)
    assert read_back("c", "2*i0 / 8", rank=1) == sympy.floor(2 * i0 / 8)
    assert read_back("c", "2*(i0 / 8)", rank=1) == 2 * sympy.floor(i0 / 8)
    assert read_back("c", "i0 % 8 / 2", rank=1) == sympy.floor(sympy.Mod(i0, 8) / 2)


# ----------------------------------------------------------------------------- errors
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("f32[2]", "fortran"), "language 'fortran' is not one of c, python, numpy, mlir, latex"),
        (("f32[2]", "c", "sideways"), "direction 'sideways' is not one of forward, inverse, padding"),
        (("f32[2]", "c", "forward", "word"), "unit 'word' is not one of element, bit, byte"),
        (("(f32[2], f32[3])", "c"), "tuple shape"),
        (("f32[2]", "c", "forward", "element", "2fast"), "function name '2fast'"),
        (("f32[2]", "c", "forward", "element", "return"), "function name 'return'"),
        (("f32[i1,4]", "c"), "dimension names ['i1'] are reserved"),
        (("f32[p]", "c"), "dimension names ['p'] are reserved"),
        (("f32[int]", "c"), "the dimension name 'int' clashes"),
        (("f32[2]{0:T(*)}", "c"), "*"),
    ],
)
def test_errors_are_clear(args, message) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        generate_code(*args)


def test_certify_rejects_an_unknown_direction() -> None:
    with pytest.raises(ValueError, match="direction 'up'"):
        certify("f32[2]", "up", "element", sympy.Integer(0))


# ----------------------------------------------------------------------------- CuTe
def test_cute_examples() -> None:
    assert to_cute("f32[16,384]{1,0:T(8,128)}") == "((8,2),(128,3)):((128,3072),(1,1024))"
    assert to_cute("f32[4,6]{0,1}") == "(4,6):(1,4)"
    assert to_cute("f32[4,6]{1,0}") == "(4,6):(6,1)"
    assert to_cute("f32[]") == "1:0"
    assert to_cute("f32[1,6]{1,0}") == "(1,6):(0,1)"
    # combined dims: rows R = 56*i0 + 8*i1 + i2 < 112, columns C = 10*i3 + i4 < 110, tiled by (2,5)
    # into the box (56, 22, 2, 5) with strides (220, 10, 5, 1). R // 2 = 28*i0 + 4*i1 + i2 // 2 and
    # R % 2 = i2 % 2; C // 5 = 2*i3 + i4 // 5 and C % 5 = i4 % 5. So i0 -> 28*220, i1 -> 4*220,
    # i2 -> (2, 4) digits at (5, 220); i3 -> 2*10, i4 -> (5, 2) digits at (1, 10).
    assert to_cute("f32[2,7,8,11,10]{4,3,2,1,0:T(*,*,2,*,5)}") == (
        "(2,7,(2,4),11,(5,2)):(6160,880,(5,220),20,(1,10))"
    )
    assert cute_layout("f32[N,M]{1,0}").text == "(N,M):(M,1)"


@pytest.mark.parametrize(
    ("shape", "reason"),
    [
        (
            "f32[3,5]{1,0:T(2,2)}",
            "dimension 0 (size 3) is padded to 4 by tile 1: (2,2) and then split as 2 x 2",
        ),
        ("f32[2,6]{1,0:T(*,4)}", "cuts dimension 1 at 4, which does not divide its run of 6"),
        ("f32[N,128]{1,0:T(8,128)}", "symbolic size"),
        ("f32[0,128]{1,0:T(8,128)}", "dimension 0 has size 0"),
    ],
)
def test_cute_says_why_a_layout_is_not_expressible(shape, reason) -> None:
    with pytest.raises(NotExpressible, match=re.escape(reason)):
        to_cute(shape)


def _cute_offsets(text: str, dims: tuple[int, ...]) -> list[int]:
    """Evaluate CuTe text by its definition, written again here: colexicographic modes."""
    shape_text, stride_text = text.split(":")

    def parse(t):
        return eval(t.replace("(", "[").replace(")", "]"))  # nested lists of ints

    def leaves(x):
        return [y for item in x for y in leaves(item)] if isinstance(x, list) else [x]

    shape, stride = parse(shape_text), parse(stride_text)
    if not dims:
        return [0]
    out = []
    for index in np.ndindex(*dims):
        offset = 0
        for i, s, t in zip(index, shape, stride, strict=True):
            sizes, steps = leaves(s), leaves(t)
            for size, step in zip(sizes, steps, strict=True):
                offset += (i % size) * step
                i //= size
        out.append(offset)
    return out


@settings(max_examples=150)
@given(small_layout_shapes(max_slots=512))
def test_cute_export_is_right_whenever_it_answers(shape) -> None:
    m = layout_map(shape)
    no_padding = not any(isinstance(s, Pad) for s in m.stages)
    no_combine = not any(type(s).__name__ == "Combine" for s in m.stages)
    empty = 0 in m.shape.dimensions
    try:
        c = cute_layout(shape)
    except NotExpressible as err:
        assert str(m.shape) in str(err)
        assert empty or not (no_padding and no_combine), f"{m.shape} should be a CuTe layout: {err}"
        return
    assert c.certification.status == "proved"
    assert _cute_offsets(c.text, m.shape.dimensions) == [m.forward(e) for e in m.elements()]


def test_cute_expr_reads_cute_text() -> None:
    i0, i1 = sympy.symbols("i0 i1", integer=True, nonnegative=True)
    assert cute_expr("(4,6):(1,4)", 2) == sympy.Mod(i0, 4) + 4 * sympy.Mod(i1, 6)


# ----------------------------------------------------------------------------- CLI
def test_cli_prints_code_and_a_comment_with_ops_and_certification(capsys) -> None:
    code = main(
        [
            "codegen",
            "bf16[16,256]{1,0:T(8,128)(2,1)}",
            "--lang",
            "c",
            "--inverse",
            "--unit",
            "byte",
            "--name",
            "idx",
        ]
    )
    out, err = capsys.readouterr()
    assert code == 0 and err == ""
    assert "void idx(uint64_t p, uint64_t index[2])" in out
    last = out.strip().splitlines()[-1]
    assert last.startswith("// ") and "operations" in last and "proved (exhaustive)" in last


@pytest.mark.parametrize("lang", ["python", "mlir", "latex", "numpy"])
def test_cli_comments_in_the_language(capsys, lang) -> None:
    assert main(["codegen", "f32[3,5]{1,0:T(2,2)}", "--lang", lang, "--padding"]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith({"python": "# ", "numpy": "# ", "mlir": "// ", "latex": "% "}[lang])


@pytest.mark.parametrize(
    "argv",
    [
        ["codegen", "f32[2,3]{1,0"],
        ["codegen", "(f32[2], f32[3])"],
        ["codegen", "f32[2]", "--name", "for"],
        ["codegen", "f32[i0]"],
    ],
)
def test_cli_errors_are_one_line_with_status_2(capsys, argv) -> None:
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("layout-algebra codegen: error: ")
    assert "Traceback" not in err


def test_cli_rejects_inverse_with_padding(capsys) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["codegen", "f32[2]", "--inverse", "--padding"])
    assert exit_info.value.code == 2


def test_the_latex_rendered_in_the_docs_is_what_codegen_prints() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "codegen.md").read_text(encoding="utf-8")
    rendered = re.findall(r"^\$\$(.*)\$\$$", doc, flags=re.MULTILINE)
    assert rendered == [
        generate_code("f32[3,5]{1,0:T(2,2)}", "latex").text,
        generate_code("bf16[16,256]{1,0:T(8,128)(2,1)}", "latex", "inverse").text,
    ]


# ----------------------------------------------------------------------------- SymPy's Mod
def test_sympy_mod_of_a_product_with_a_mod_is_not_trusted() -> None:
    # SymPy 1.14 evaluates Mod(2*Mod(p, 5), 3) to Mod(2*Mod(p, 5)**2, 3): 2 instead of 1 at p = 2
    p = OFFSET_SYMBOL
    assert read_back("python", "(2*(p % 5)) % 3").subs(p, 2) == 1
    assert read_back("c", "(2*(p % 5)) % 3").subs(p, 2) == 1
    assert to_sympy(mod(scale(mod(Var("p", "offset"), 5), 2), 3)).subs(p, 2) == 1
    assert read_back("python", "(2*(p % 3)) % 3").subs(p, 2) == 1  # SymPy alone says 2*Mod(p, 3): 4


def test_a_layout_whose_closed_form_meets_that_sympy_bug_is_certified() -> None:
    shape = "u4[4,6,6]{0,2,1:T(*,3,4,4)(1,3,3)(1,*,2)E(4)}"  # found by the C test
    for lang in LANGUAGES:
        g = generate_code(shape, lang, "inverse", "byte")
        assert g.certification.status == "proved", (lang, g.certification)


@settings(max_examples=300)
@given(_trees())
def test_to_sympy_keeps_the_value_of_every_tree(e) -> None:
    env = {sympy.Symbol(k, integer=True, nonnegative=True): v for k, v in GRID.items() if k != "N"}
    env[dim_symbol("N")] = GRID["N"]
    n = GRID["x"].shape
    assert np.array_equal(
        np.broadcast_to(evaluate(to_sympy(e), env), n), np.broadcast_to(_evaluate(e, GRID), n)
    ), e


# ------------------------------------------------------------------ unsigned C (issue 18)
UNSIGNED_CASES = [
    "f32[4096,4096]{1,0:T(8,128)}",
    "bf16[N,M]{1,0:T(8,128)(2,1)}",
    "s4[100,300]{0,1:T(64,128)(8,1)L(1024)E(4)}",
    "pred[5]{0:T(1024)E(8)}",
    "f32[]",
]


@pytest.mark.parametrize("shape", UNSIGNED_CASES)
@pytest.mark.parametrize("direction", ["forward", "inverse", "padding"])
def test_c_uses_unsigned_arithmetic_only(shape: str, direction: str) -> None:
    # signed 64-bit division by a power of two needs sign fix-ups that the compiler cannot
    # drop unless it knows the sign: the hand formula's speed needs uint64_t throughout
    text = generate_code(shape, "c", direction, "byte").text
    signature = next(line for line in text.splitlines() if "(" in line and line.endswith("{"))
    assert "uint64_t" in signature or signature.startswith("bool")
    assert "int64_t" not in text.replace("uint64_t", "")


def test_unsigned_c_is_warning_free_under_sign_conversion_warnings_and_exact_at_large_offsets(
    tmp_path,
) -> None:
    # offsets past 2**31 (a 16 GiB buffer) computed in C equal the layout map's
    assert CC, "no C compiler"
    shape = "f32[65536,65536]{0,1:T(8,128)}"
    m = layout_map(shape)
    fwd = generate_code(shape, "c", "forward", "byte", "fwd")
    inv = generate_code(shape, "c", "inverse", "byte", "inv")
    rng = random.Random(7)
    calls, expected = [], []
    for _ in range(20):
        index = (rng.randrange(65536), rng.randrange(65536))
        calls.append(f'    printf("%llu\\n", (unsigned long long)fwd({index[0]}u, {index[1]}u));')
        offset = m.forward(index, "byte")
        expected.append(str(offset))
        calls.append(
            f'    {{ uint64_t ix[2]; inv({offset}u, ix); printf("%llu %llu\\n", (unsigned long long)ix[0], (unsigned long long)ix[1]); }}'
        )
        expected.append(f"{index[0]} {index[1]}")
    assert max(int(e) for e in expected[::2]) > 2**31
    source = "\n".join(
        ["#include <stdio.h>", fwd.text, inv.text, "int main(void) {", *calls, "    return 0;", "}", ""]
    )
    c_file, exe = tmp_path / "big.c", tmp_path / "big"
    c_file.write_text(source, encoding="utf-8")
    flags = [*C_FLAGS, "-O2", "-Wconversion", "-Wsign-conversion"]
    build = subprocess.run([CC, *flags, str(c_file), "-o", str(exe)], capture_output=True, text=True)
    assert build.returncode == 0 and build.stderr == "", build.stderr
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert run.stdout.splitlines() == expected
