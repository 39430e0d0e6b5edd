"""Mutants of the pass-dump corpus are never ``proved``.

Each mutant is a real consecutive pair (earlier, later) of per-pass modules of the corpus
(``tests/data/pass_dumps/corpus``: real JAX programs, XLA:TPU and XLA:CPU) whose later module
carries ONE injected bug (:mod:`support.pass_mutants`: loop-body edits, comparator swaps, wrong
gather dimension numbers, a provisional tiling finalized differently, wrong reduce, dot and
convolution dimensions, a convert through another type, pad edges, a fused op, a constant,
swapped operands, and the movement bugs of layouts, transposes, slices and copies). A mutant
counts only when running it shows it computes something else than the later module (the
package's executor, or the reference interpreter of :mod:`support.hlo_reference`); each is then
validated against the earlier module in the pair's mode (logical up to layout assignment,
physical after: ``pass_mode``), and none may come out ``proved``.

Derandomized: the pairs and the seeds are fixed. The pairs are the cheap ones: every program
but ``transformer_train_adam`` (thousands of instructions a module), a few changed pairs each.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from support.hlo_reference import run_reference
from support.pass_dumps import corpus_dumps, corpus_names
from support.pass_mutants import NEW_KINDS, meaning_changed, mutants

from layout_algebra.hlo import parse_module
from layout_algebra.hlo.passes import pass_mode, validate_pair

#: Too large for a test that runs on every CI build (validated whole in benchmarks/passes_corpus.py).
LARGE = ("transformer_train_adam",)
#: Changed pairs per archive (spread over its passes): fewer for the programs of ~300
#: instructions and for conv_block (a second a mutant), more where gathers and sorts are.
PAIRS = 4
OTHER_PAIRS = {
    "decoder_rope_rmsnorm": 1,
    "conv_block": 2,
    "fori_power_iteration": 1,
    "scan_rnn": 1,
    "while_kv_cache": 2,
    "sort_topk_argsort": 3,
    "embedding_layernorm_grad": 7,
}
#: XLA:TPU programs with 8-bit and narrower parameters: more pairs after layout assignment
#: (a provisional tiling means something only there).
NARROW = {"int8_matmul", "int4_matmul", "fp8_matmul", "u8_image_preprocess", "attention_int8"}
#: Programs whose loops the reference interpreter runs trip by trip: mostly loop-body mutants.
LOOPS = {"fori_power_iteration", "scan_rnn", "while_kv_cache"}
#: Mutants per pair and kind: more of the kinds aimed at loops, sorts, gathers and tilings.
PER_KIND = 2
PER_NEW_KIND = 6
AIMED = ("loop body", "comparator", "gather dims", "provisional tiling")


def pairs(name: str) -> list[int]:
    """Pass numbers k of ``name``'s changed pairs (k-1, k), evenly spread, both modes."""
    program, backend = name.rsplit(".", 1)
    dumps = corpus_dumps(name)
    changed = [k for k in range(1, len(dumps)) if dumps[k][1] != dumps[k - 1][1]]
    want = OTHER_PAIRS.get(program, PAIRS)
    if program in NARROW and backend == "tpu":
        changed = [k for k in changed if pass_mode([d for d, _ in dumps], k) == "physical"]
        want = 6
    if len(changed) <= want:
        return changed
    step = len(changed) / want
    return [changed[int(i * step)] for i in range(want)]


def corpus_mutants():
    """(archive, k, mode, earlier, later, mutant) for every selected pair and mutant."""
    for name in corpus_names():
        program = name.rsplit(".", 1)[0]
        if program in LARGE:
            continue
        dumps = corpus_dumps(name)
        for k in pairs(name):
            earlier, later = dumps[k - 1][1], dumps[k][1]
            mode = pass_mode([d for d, _ in dumps], k)
            taken: Counter[str] = Counter()
            for mutant in mutants(later, seed=k):
                cap = PER_NEW_KIND if mutant.kind in AIMED else 1 if program in LOOPS else PER_KIND
                if taken[mutant.kind] < cap:
                    taken[mutant.kind] += 1
                    yield name, k, mode, earlier, later, mutant


@pytest.mark.slow
def test_corpus_mutants_that_change_the_meaning_are_never_proved() -> None:
    verdicts: Counter[tuple[str, str]] = Counter()
    oracle: Counter[str] = Counter()
    proved, seen = [], set()
    for name, k, mode, earlier, later, mutant in corpus_mutants():
        key = (hash(earlier), hash(mutant.text))
        if key in seen:
            continue
        seen.add(key)
        changed, evidence = meaning_changed(later, mutant.text, mode, seed=k)
        oracle[changed] += 1
        if changed != "changed":
            continue  # an equivalent mutant, or one nothing here can run: not counted
        result = validate_pair(earlier, mutant.text, mode=mode)
        verdicts[(mutant.kind, result.status)] += 1
        if result.status == "proved":
            proved.append((name, k, mode, mutant.description, evidence))
    kinds = Counter(kind for kind, _ in verdicts.elements())
    table = "\n".join(
        f"  {kind}: {kinds[kind]} ({', '.join(f'{v} {s}' for (q, s), v in sorted(verdicts.items()) if q == kind)})"
        for kind in sorted(kinds)
    )
    message = f"mutants by kind and verdict:\n{table}\noracle: {dict(oracle)}\nproved: {proved}"
    print(message)  # the counts, for `pytest -s` (docs/passes.md quotes them)
    assert proved == [], message
    assert sum(kinds.values()) >= 500, message
    for kind in AIMED:
        assert kinds[kind] >= 20, message
    assert all(kinds[kind] > 0 for kind in NEW_KINDS), message


# ------------------------------------------------------------------ the reference interpreter
def _run(text: str, *params: np.ndarray) -> list[np.ndarray]:
    return [leaf.data for leaf in run_reference(parse_module(text), list(params))]


@pytest.mark.parametrize(("direction", "n"), [("LT", 13), ("GT", 16), ("LT", 1), ("GT", 100)])
def test_the_reference_sort_is_numpys_stable_argsort(direction: str, n: int) -> None:
    text = f"""HloModule m
cmp {{
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  c = s32[] parameter(2)
  d = s32[] parameter(3)
  ROOT r = pred[] compare(a, b), direction={direction}
}}
ENTRY e {{
  p = f32[3,{n}]{{1,0}} parameter(0)
  i = s32[3,{n}]{{1,0}} iota(), iota_dimension=1
  ROOT s = (f32[3,{n}]{{1,0}}, s32[3,{n}]{{1,0}}) sort(p, i), dimensions={{1}}, is_stable=true, to_apply=cmp
}}"""
    x = np.random.default_rng(n).integers(0, 5, (3, n)).astype(np.float32)  # many ties
    values, index = _run(text, x)
    want = np.argsort(x if direction == "LT" else -x, axis=1, kind="stable")
    assert np.array_equal(index, want)
    assert np.array_equal(values, np.take_along_axis(x, want, 1))


def test_the_reference_gather_and_scatter_are_numpy_indexing() -> None:
    """An embedding lookup (rows picked by index, clamped) and its gradient (rows added at index)."""
    text = """HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  table = f32[10,4]{1,0} parameter(0)
  ids = s32[6,1]{1,0} parameter(1)
  rows = f32[6,4]{1,0} parameter(2)
  g = f32[6,4]{1,0} gather(table, ids), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,4}
  s = f32[10,4]{1,0} scatter(table, ids, rows), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add
  ROOT t = (f32[6,4]{1,0}, f32[10,4]{1,0}) tuple(g, s)
}"""
    rng = np.random.default_rng(0)
    table = rng.normal(size=(10, 4)).astype(np.float32)
    ids = np.array(
        [[3], [0], [9], [3], [12], [-2]], np.int32
    )  # out of range: clamped (gather), skipped (scatter)
    rows = rng.normal(size=(6, 4)).astype(np.float32)
    gathered, scattered = _run(text, table, ids, rows)
    assert np.array_equal(gathered, table[np.clip(ids[:, 0], 0, 9)])
    want = table.copy()
    inside = (ids[:, 0] >= 0) & (ids[:, 0] < 10)
    np.add.at(want, ids[inside, 0], rows[inside])
    assert np.allclose(scattered, want)


def test_the_reference_dot_convolution_reduce_and_while_are_numpys() -> None:
    text = """HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
cond {
  st = (s32[], f32[4,4]{1,0}) parameter(0)
  i = s32[] get-tuple-element(st), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  st = (s32[], f32[4,4]{1,0}) parameter(0)
  i = s32[] get-tuple-element(st), index=0
  x = f32[4,4]{1,0} get-tuple-element(st), index=1
  one = s32[] constant(1)
  j = s32[] add(i, one)
  y = f32[4,4]{1,0} add(x, x)
  ROOT out = (s32[], f32[4,4]{1,0}) tuple(j, y)
}
ENTRY e {
  a = f32[4,8]{1,0} parameter(0)
  b = f32[8,4]{1,0} parameter(1)
  d = f32[4,4]{1,0} dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  c = f32[4,4]{1,0} convolution(a, b), dim_labels=bf_io->bf
  z = f32[] constant(0)
  r = f32[4]{0} reduce(a, z), dimensions={1}, to_apply=add
  zero = s32[] constant(0)
  init = (s32[], f32[4,4]{1,0}) tuple(zero, d)
  w = (s32[], f32[4,4]{1,0}) while(init), condition=cond, body=body
  looped = f32[4,4]{1,0} get-tuple-element(w), index=1
  ROOT t = (f32[4,4]{1,0}, f32[4,4]{1,0}, f32[4]{0}, f32[4,4]{1,0}) tuple(d, c, r, looped)
}"""
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=(4, 8)).astype(np.float32), rng.normal(size=(8, 4)).astype(np.float32)
    d, c, r, looped = _run(text, a, b)
    assert np.allclose(d, a @ b, rtol=1e-5) and np.allclose(c, a @ b, rtol=1e-5)
    assert np.allclose(r, a.sum(axis=1), rtol=1e-5)
    assert np.allclose(looped, 8 * (a @ b), rtol=1e-5)  # three trips, each doubling


def test_a_mutant_the_executor_shows_equivalent_is_not_counted() -> None:
    """The operands of a multiply swapped: no bug, ``same``; a slice window moved: ``changed``."""
    later = """HloModule m, entry_computation_layout={(f32[8]{0}, f32[8]{0})->f32[2]{0}}
ENTRY %e {
  %p = f32[8]{0} parameter(0)
  %q = f32[8]{0} parameter(1)
  %z = f32[8]{0} multiply(%p, %q)
  ROOT %s = f32[2]{0} slice(%z), slice={[0:2]}
}"""
    same = later.replace("multiply(%p, %q)", "multiply(%q, %p)")
    wrong = later.replace("slice={[0:2]}", "slice={[1:3]}")
    assert meaning_changed(later, same, "physical")[0] == "same"
    assert meaning_changed(later, wrong, "physical")[0] == "changed"


def test_the_reference_total_order_compare_is_ieee_total_order() -> None:
    text = """HloModule m
ENTRY e {
  a = f32[6]{0} parameter(0)
  b = f32[6]{0} parameter(1)
  ROOT c = pred[6]{0} compare(a, b), direction=LT, type=TOTALORDER
}"""
    a = np.array([-0.0, -np.inf, 1.0, np.nan, -2.0, 3.0], np.float32)
    b = np.array([0.0, -5.0, 1.0, 7.0, -1.0, np.inf], np.float32)
    (less,) = _run(text, a, b)
    assert less.tolist() == [True, True, False, False, True, True]


def test_the_reference_topk_is_numpys_stable_argsort_descending() -> None:
    text = """HloModule m
ENTRY e {
  x = f32[3,9]{1,0} parameter(0)
  ROOT t = (f32[3,2]{1,0}, s32[3,2]{1,0}) topk(x), k=2, largest=true
}"""
    x = np.random.default_rng(2).integers(0, 4, (3, 9)).astype(np.float32)  # ties: the lower index first
    values, index = _run(text, x)
    want = np.argsort(-x, axis=1, kind="stable")[:, :2]
    assert np.array_equal(index, want) and np.array_equal(values, np.take_along_axis(x, want, 1))
