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

import pytest
from support.pass_dumps import corpus_dumps, corpus_names
from support.pass_mutants import NEW_KINDS, meaning_changed, mutants

from layout_algebra.hlo.passes import pass_mode, validate_pair

#: Too large for a test that runs on every CI build (validated whole in benchmarks/passes_corpus.py).
LARGE = ("transformer_train_adam",)
#: Changed pairs per archive (spread over its passes): fewer for the programs of ~300
#: instructions, whose mutants each take a second to run and validate.
PAIRS = 4
BIG = {"decoder_rope_rmsnorm": 1, "embedding_layernorm_grad": 2, "moe_top2": 2, "fori_power_iteration": 2}
#: Mutants per pair and kind: more of the kinds aimed at loops, sorts, gathers and tilings.
PER_KIND = 2
PER_NEW_KIND = 6
AIMED = ("loop body", "comparator", "gather dims", "provisional tiling")


def pairs(name: str) -> list[int]:
    """Pass numbers k of ``name``'s changed pairs (k-1, k), evenly spread, both modes."""
    dumps = corpus_dumps(name)
    changed = [k for k in range(1, len(dumps)) if dumps[k][1] != dumps[k - 1][1]]
    want = BIG.get(name.split(".")[0], PAIRS)
    if len(changed) <= want:
        return changed
    step = len(changed) / want
    return [changed[int(i * step)] for i in range(want)]


def corpus_mutants():
    """(archive, k, mode, earlier, later, mutant) for every selected pair and mutant."""
    for name in corpus_names():
        if name.split(".")[0] in LARGE:
            continue
        dumps = corpus_dumps(name)
        for k in pairs(name):
            earlier, later = dumps[k - 1][1], dumps[k][1]
            mode = pass_mode([d for d, _ in dumps], k)
            taken: Counter[str] = Counter()
            for mutant in mutants(later, seed=k):
                if taken[mutant.kind] < (PER_NEW_KIND if mutant.kind in AIMED else PER_KIND):
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
    assert proved == [], message
    assert sum(kinds.values()) >= 500, message
    for kind in AIMED:
        assert kinds[kind] >= 20, message
    assert all(kinds[kind] > 0 for kind in NEW_KINDS), message
