"""Write ``docs/bitcasts_xla_vs_exact.md``: where XLA's bitcast answers and the exact ones differ.

XLA decides whether a reshape or transpose is a bitcast from the dimensions and
``minor_to_major`` alone (``layout_algebra.xla``: ``ShapeUtil::ReshapeIsBitcast`` and
friends, tiles ignored). ``layout_algebra.decide.bitcast`` answers exactly: every element keeps
its bit offset under the full layout (tiles, padding, packing) and the buffers have the
same size. This script asks both on

* every row of ``tests/data/ground_truth/tpu/reshape_bitcast.jsonl`` and ``transpose_bitcast.jsonl``
  (with the XLA:TPU compiler's own answer beside them),
* the bitcast cases of ``tests/data/ground_truth/xla_vectors.json``,
* the tiled cases in ``CONSTRUCTED`` below,

and writes a table of every disagreement with the exact checker's counterexample, plus
counts. Run it from the checkout::

    .venv/bin/python docs/generate_bitcast_report.py            # rewrite the report
    .venv/bin/python docs/generate_bitcast_report.py --check    # exit 1 if it is stale

``tests/xla/test_xla_bitcast.py`` checks that the checked-in report is what this script writes.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from layout_algebra.model.shapes import ArrayShape

DOCS = Path(__file__).resolve().parent
REPORT = DOCS / "bitcasts_xla_vs_exact.md"
GROUND_TRUTH = DOCS.parent / "tests" / "data" / "ground_truth"

# The three questions, by name: what XLA answers, what the exact checker answers.
RESHAPE, TRANSPOSE, EITHER = "reshape", "transpose", "reshape or transpose"


@dataclass(frozen=True)
class Case:
    """One question: is ``op`` from ``src`` to ``dst`` a bitcast?"""

    source: str  # where the case comes from, e.g. "TPU reshape row 3"
    op: str  # RESHAPE, TRANSPOSE or EITHER (XLA's IsReshapeOrTransposeBitcast)
    src: str
    dst: str
    permutation: tuple[int, ...] | None = None  # the transpose's dimensions
    tpu: bool | None = None  # XLA:TPU's answer, where the case was compiled
    ignore_element_type: bool = False


@dataclass(frozen=True)
class Comparison:
    """XLA's answer and the exact one for a ``Case``."""

    case: Case
    xla: bool
    exact: str  # "bitcast", "not a bitcast", "unknown" or "refused"
    detail: str  # the counterexample, the reason, or why the question was refused

    @property
    def disagrees(self) -> bool:
        """A decided exact answer that contradicts XLA's."""
        return (self.exact == "bitcast") != self.xla and self.exact in ("bitcast", "not a bitcast")

    @property
    def kind(self) -> str:
        """What sort of disagreement this is (empty if none)."""
        if not self.disagrees:
            return ""
        if not self.xla:
            return "XLA says no, but the op moves no data"
        if self.detail.startswith("element "):
            return "XLA says bitcast, but an element moves"
        return "XLA says bitcast, but the buffer sizes differ"


# Tiled cases XLA's tile-unaware checks get wrong, and a few they get right (to show the
# boundary). Each comment gives the reason by hand.
CONSTRUCTED: tuple[Case, ...] = (
    # Flattening a tiled matrix: the tiles store (0,128) right after row 0's first 128.
    Case("constructed", RESHAPE, "f32[16,256]{1,0:T(8,128)}", "f32[4096]{0}"),
    # Splitting the major dimension at a tile boundary keeps every tile in place.
    Case("constructed", RESHAPE, "f32[16,256]{1,0:T(8,128)}", "f32[2,8,256]{2,1,0:T(8,128)}"),
    # Splitting the minor dimension: the new second-minor dim of 2 is padded to 8 rows.
    Case("constructed", RESHAPE, "f32[16,256]{1,0:T(8,128)}", "f32[16,2,128]{2,1,0:T(8,128)}"),
    # Exactly one (8,128) tile is row-major, so flattening it into 1024-element tiles is free.
    Case("constructed", RESHAPE, "f32[8,128]{1,0:T(8,128)}", "f32[1024]{0:T(1024)}"),
    # 10 rows pad to 16 in the tiled source; the flat destination has no padding.
    Case("constructed", RESHAPE, "f32[10,128]{1,0:T(8,128)}", "f32[1280]{0}"),
    # 1000 elements pad to 1024 under T(256); the 8 x 125 destination is dense.
    Case("constructed", RESHAPE, "f32[1000]{0:T(256)}", "f32[8,125]{1,0}"),
    # Same dims, other tiling: XLA compares only minor_to_major.
    Case("constructed", RESHAPE, "f32[8,256]{1,0:T(8,128)}", "f32[8,256]{1,0:T(8,256)}"),
    Case("constructed", RESHAPE, "f32[2,128]{1,0:T(2,128)}", "f32[2,128]{1,0:T(8,128)}"),
    # bf16 (8,128)(2,1): rows are interleaved in pairs, so merging the minor dims moves data.
    Case("constructed", RESHAPE, "bf16[8,2,128]{2,1,0:T(8,128)(2,1)}", "bf16[8,256]{1,0:T(8,128)(2,1)}"),
    Case("constructed", RESHAPE, "bf16[8,128]{1,0:T(8,128)(2,1)}", "bf16[1024]{0}"),
    # ... while merging major dims over whole tiles is free.
    Case("constructed", RESHAPE, "bf16[4,8,128]{2,1,0:T(8,128)(2,1)}", "bf16[32,128]{1,0:T(8,128)(2,1)}"),
    # s8 packs four rows per word, s4 eight; flattening moves data in both.
    Case("constructed", RESHAPE, "s8[32,128]{1,0:T(8,128)(4,1)}", "s8[4096]{0}"),
    Case("constructed", RESHAPE, "s4[64,128]{1,0:T(64,128)(8,1)E(4)}", "s4[8192]{0:E(4)}"),
    # Transposes. permute_dimensions keeps the tiles, which is a bitcast...
    Case("constructed", TRANSPOSE, "f32[16,256]{1,0:T(8,128)}", "f32[256,16]{0,1:T(8,128)}", (1, 0)),
    Case(
        "constructed",
        TRANSPOSE,
        "bf16[16,256]{1,0:T(8,128)(2,1)}",
        "bf16[256,16]{0,1:T(8,128)(2,1)}",
        (1, 0),
    ),
    Case("constructed", TRANSPOSE, "f32[4,8,128]{2,1,0:T(8,128)}", "f32[8,4,128]{2,0,1:T(8,128)}", (1, 0, 2)),
    # ... but dropping or changing the tiles of the result is not.
    Case("constructed", TRANSPOSE, "f32[16,256]{1,0:T(8,128)}", "f32[256,16]{0,1}", (1, 0)),
    Case("constructed", TRANSPOSE, "bf16[16,256]{1,0:T(8,128)(2,1)}", "bf16[256,16]{0,1:T(8,128)}", (1, 0)),
    Case("constructed", TRANSPOSE, "f32[16,256]{1,0:T(8,128)}", "f32[256,16]{0,1:T(8,256)}", (1, 0)),
    # A single tile is row-major, so dropping its tiling is harmless (XLA agrees).
    Case("constructed", TRANSPOSE, "f32[8,128]{1,0:T(8,128)}", "f32[128,8]{0,1}", (1, 0)),
    # TransposeIsBitcast compares the positions of size-1 dimensions too.
    Case("constructed", TRANSPOSE, "f32[1,128]{1,0}", "f32[128,1]{1,0}", (1, 0)),
    # IsReshapeOrTransposeBitcast swaps its shapes: a 3-cycle of a tiled array is missed.
    Case("constructed", EITHER, "f32[8,16,128]{2,1,0:T(8,128)}", "f32[16,128,8]{1,0,2:T(8,128)}"),
    Case("constructed", EITHER, "f32[16,256]{1,0:T(8,128)}", "f32[4096]{0}"),
)


# ----------------------------------------------------------------------------- cases
def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def tpu_cases(ground_truth: Path = GROUND_TRUTH) -> list[Case]:
    """One case per row of the two TPU bitcast files, with the compiler's answer."""
    cases = [
        Case(f"TPU reshape row {n}", RESHAPE, row["src"], row["dst"], tpu=row.get("bitcast"))
        for n, row in enumerate(_jsonl(ground_truth / "tpu" / "reshape_bitcast.jsonl"), start=1)
    ]
    cases += [
        Case(
            f"TPU transpose row {n}",
            TRANSPOSE,
            row["src"],
            row["dst"],
            tuple(row["permutation"]),
            tpu=row.get("bitcast"),
        )
        for n, row in enumerate(_jsonl(ground_truth / "tpu" / "transpose_bitcast.jsonl"), start=1)
    ]
    return cases


def vector_cases(ground_truth: Path = GROUND_TRUTH) -> list[Case]:
    """The reshape, transpose and reshape-or-transpose cases of ``xla_vectors.json``."""
    vectors = json.loads((ground_truth / "xla_vectors.json").read_text(encoding="utf-8"))
    cases: list[Case] = []
    for vector in vectors:
        kind, given = vector["kind"], vector["input"]
        source = f"XLA vector: {vector['source'].split(':')[-1]}"
        ignore = bool(given.get("ignore_element_type", False))
        if kind == "reshape_is_bitcast":
            cases.append(Case(source, RESHAPE, given["input"], given["output"], ignore_element_type=ignore))
        elif kind == "transpose_is_bitcast":
            perm = tuple(given["dimension_mapping"])
            cases.append(
                Case(source, TRANSPOSE, given["input"], given["output"], perm, ignore_element_type=ignore)
            )
        elif kind == "is_reshape_or_transpose_bitcast":
            cases.append(Case(source, EITHER, given["a"], given["b"], ignore_element_type=ignore))
    return cases


# --------------------------------------------------------------------------- answers
def xla_answer(case: Case) -> bool:
    """XLA's tile-unaware answer (``layout_algebra.xla``)."""
    from layout_algebra import xla

    if case.op == RESHAPE:
        return xla.bitcast_util.reshape_is_bitcast(case.src, case.dst, case.ignore_element_type)
    if case.op == TRANSPOSE:
        assert case.permutation is not None
        return xla.bitcast_util.transpose_is_bitcast(
            case.src, case.dst, case.permutation, case.ignore_element_type
        )
    return xla.bitcast_util.is_reshape_or_transpose_bitcast(case.src, case.dst, case.ignore_element_type)


def _exact_function(op: str) -> Callable[[Case], object]:
    from layout_algebra.decide import bitcast

    if op == RESHAPE:
        return lambda c: bitcast.reshape_is_bitcast(c.src, c.dst)
    if op == TRANSPOSE:
        return lambda c: bitcast.transpose_is_bitcast(c.src, c.dst, c.permutation)
    return lambda c: bitcast.bitcast_is_valid(c.src, c.dst)


# ------------------------------------------------------------------ counterexamples
# The exact checker's counterexample is whichever element its solver found first, which
# varies from run to run. The report shows a canonical one instead: the first element of
# the destination, in row-major order, whose bit offset differs, found by evaluating both
# layouts directly (XLA's nested tiling, xla-facts §5.1). The checker's own counterexample
# is re-checked the same way.

#: Elements scanned for the first moved one before falling back to the checker's.
SCAN_LIMIT = 1 << 20


def element_bits(shape: ArrayShape) -> int:
    """Bits per element in memory: ``E(n)`` if set, else whole bytes (``pred``, ``s4``: 8)."""
    assert shape.layout is not None
    return shape.layout.element_size_in_bits or shape.element_type.byte_width * 8


def nested_linear_index(shape: ArrayShape, index: Sequence[int]) -> int:
    """The element slot of ``index`` under the layout's nested tiling (xla-facts §5.1).

    Physical dimensions major to minor; each tile splits the last ``len(tile)`` of the
    current dimensions into (count of tiles, position in tile) and appends the tile's
    dimensions at the end; the result is the row-major position in the final shape.
    """
    assert shape.layout is not None
    m2m = shape.layout.minor_to_major
    sizes = [int(shape.dimensions[d]) for d in reversed(m2m)]
    position = [int(index[d]) for d in reversed(m2m)]
    for tile in shape.layout.tiles:
        t = tile.dimensions
        keep = len(sizes) - len(t)
        if keep < 0:
            raise ValueError(f"the tile {tile} of {shape} has more dimensions than the shape")
        sizes = sizes[:keep] + [-(-s // k) for s, k in zip(sizes[keep:], t, strict=True)] + list(t)
        position = (
            position[:keep]
            + [p // k for p, k in zip(position[keep:], t, strict=True)]
            + [p % k for p, k in zip(position[keep:], t, strict=True)]
        )
    slot = 0
    for p, s in zip(position, sizes, strict=True):
        slot = slot * s + p
    return slot


def _row_major(dims: Sequence[int], position: int) -> tuple[int, ...]:
    index = [0] * len(dims)
    for d in reversed(range(len(dims))):
        position, index[d] = divmod(position, dims[d])
    return tuple(index)


def _source_index(case: Case, src: ArrayShape, dst: ArrayShape, element: Sequence[int]) -> tuple[int, ...]:
    """The source element that destination ``element`` comes from."""
    if case.op == TRANSPOSE:
        assert case.permutation is not None
        index = [0] * len(element)
        for k, p in enumerate(case.permutation):
            index[p] = element[k]
        return tuple(index)
    position = 0  # reshape (and reshape-or-transpose, read as a reshape): same row-major position
    for i, size in zip(element, dst.dimensions, strict=True):
        position = position * int(size) + i
    return _row_major([int(d) for d in src.dimensions], position)


def _bits(case: Case, src: ArrayShape, dst: ArrayShape, element: Sequence[int]) -> tuple[int, int]:
    """(bit offset in dst, bit offset in src) of destination ``element``."""
    dst_bit = nested_linear_index(dst, element) * element_bits(dst)
    src_bit = nested_linear_index(src, _source_index(case, src, dst, element)) * element_bits(src)
    return dst_bit, src_bit


def _element_text(element: Sequence[int], dst_bit: int, src_bit: int) -> str:
    return "element (" + ",".join(map(str, element)) + f"): bit {dst_bit} in dst, bit {src_bit} in src"


def canonical_counterexample(case: Case, checker_counterexample: dict) -> str:
    """The first moved element (see above), after re-checking the checker's counterexample."""
    from layout_algebra.model.syntax import as_shape

    src, dst = as_shape(case.src), as_shape(case.dst)
    assert isinstance(src, ArrayShape) and isinstance(dst, ArrayShape)
    element = tuple(checker_counterexample["element"])
    claimed = (checker_counterexample["dst_bit"], checker_counterexample["src_bit"])
    if _bits(case, src, dst, element) != claimed or claimed[0] == claimed[1]:
        return _element_text(element, *claimed) + " (the checker's counterexample; it does NOT re-check)"
    dims = [int(d) for d in dst.dimensions]
    total = 1
    for d in dims:
        total *= d
    for position in range(min(total, SCAN_LIMIT)):
        candidate = _row_major(dims, position)
        dst_bit, src_bit = _bits(case, src, dst, candidate)
        if dst_bit != src_bit:
            return _element_text(candidate, dst_bit, src_bit)
    return _element_text(element, *claimed)


def compare(case: Case) -> Comparison:
    """XLA's answer and the exact checker's, for one case."""
    xla = xla_answer(case)
    try:
        verdict = _exact_function(case.op)(case)
    except ValueError as e:  # not a reshape/transpose at all (types, sizes, permutation)
        return Comparison(case, xla, "refused", " ".join(str(e).split()))
    status = str(getattr(verdict, "verdict", verdict))
    reason = " ".join(str(verdict.reason).split())  # type: ignore[attr-defined]
    counterexample = getattr(verdict, "counterexample", None) or {}
    if status == "not a bitcast" and counterexample.get("element") is not None:
        return Comparison(case, xla, status, canonical_counterexample(case, counterexample))
    return Comparison(case, xla, status, reason)


# ---------------------------------------------------------------------------- render
def _yes_no(answer: bool | None) -> str:
    return "—" if answer is None else ("bitcast" if answer else "no")


def _op_text(case: Case) -> str:
    if case.op == TRANSPOSE:
        return "transpose " + "{" + ",".join(map(str, case.permutation or ())) + "}"
    return case.op


def table_rows(comparisons: Iterable[Comparison]) -> list[str]:
    """One Markdown table row per disagreement."""
    rows = []
    for c in comparisons:
        if not c.disagrees:
            continue
        rows.append(
            f"| {c.case.source} | {_op_text(c.case)} | `{c.case.src}` | `{c.case.dst}` "
            f"| {_yes_no(c.case.tpu)} | {_yes_no(c.xla)} | {c.exact} | {c.detail} |"
        )
    return rows


def _other_rows(comparisons: Iterable[Comparison], status: str) -> list[str]:
    return [
        f"| {c.case.source} | {_op_text(c.case)} | `{c.case.src}` | `{c.case.dst}` "
        f"| {_yes_no(c.xla)} | {c.detail} |"
        for c in comparisons
        if c.exact == status
    ]


TABLE_HEAD = (
    "| case | op | src | dst | XLA:TPU | XLA (tile-unaware) | exact | counterexample or reason |",
    "|---|---|---|---|---|---|---|---|",
)
OTHER_HEAD = (
    "| case | op | src | dst | XLA (tile-unaware) | why |",
    "|---|---|---|---|---|---|",
)


def _counts(groups: Sequence[tuple[str, list[Comparison]]]) -> list[str]:
    lines = [
        "| cases | compared | agree | disagree | exact unknown | exact refused |",
        "|---|---|---|---|---|---|",
    ]
    for name, comparisons in groups:
        decided = [c for c in comparisons if c.exact in ("bitcast", "not a bitcast")]
        disagree = sum(c.disagrees for c in decided)
        unknown = sum(c.exact == "unknown" for c in comparisons)
        refused = sum(c.exact == "refused" for c in comparisons)
        lines.append(
            f"| {name} | {len(decided)} | {len(decided) - disagree} | {disagree} | {unknown} | {refused} |"
        )
    return lines


def _tpu_agreement(comparisons: Sequence[Comparison]) -> list[str]:
    """How often each answer matches what the XLA:TPU compiler did (rows it compiled)."""
    compiled = [c for c in comparisons if c.case.tpu is not None]
    if not compiled:
        return []
    exact = sum((c.exact == "bitcast") == c.case.tpu for c in compiled)
    xla = sum(c.xla == c.case.tpu for c in compiled)
    return [
        f"On the {len(compiled)} TPU rows the compiler lowered to a program, its choice (bitcast or",
        f"copy) matches the exact answer on {exact} and XLA's tile-unaware answer on {xla}. The",
        "compiler may copy where a bitcast would be legal, so a `no` there is not a disagreement with",
        "the exact answer by itself.",
        "",
    ]


def render(groups: Sequence[tuple[str, list[Comparison]]]) -> str:
    """The whole report, from the comparisons of each group of cases."""
    everything = [c for _, comparisons in groups for c in comparisons]
    kinds = Counter(c.kind for c in everything if c.disagrees)
    out = [
        "# XLA's bitcast checks vs the exact answer",
        "",
        "<!-- Generated by docs/generate_bitcast_report.py; do not edit by hand. -->",
        "",
        "XLA's `ShapeUtil::ReshapeIsBitcast`, `TransposeIsBitcast` and `IsReshapeOrTransposeBitcast`",
        "look only at dimensions and `minor_to_major` (`layout_algebra.xla`); tiles, padding and",
        "packing never enter. The exact checker (`layout_algebra.decide.bitcast`) asks whether every element",
        "keeps its bit offset under the whole layout and the buffers have the same size. This page",
        "lists every case below where the two disagree, with the exact checker's counterexample:",
        "an output element with its bit offset in the destination and in the source, or why the",
        "buffers differ. The XLA:TPU column is what the real compiler did with the op (`—`: not compiled).",
        "",
        "Cases: every row of `tpu/reshape_bitcast.jsonl` and `tpu/transpose_bitcast.jsonl`, the",
        "reshape/transpose bitcast vectors of `xla_vectors.json` (XLA's own tests), and tiled cases",
        "constructed in the script (`reshape or transpose` compares XLA's `IsReshapeOrTransposeBitcast`",
        "with the exact `bitcast_is_valid`).",
        "",
        "## Counts",
        "",
        *_counts(groups),
        "",
        *_tpu_agreement(everything),
        "Kinds of disagreement:",
        "",
        *(f"- {kind}: {count}" for kind, count in sorted(kinds.items())),
        *([] if kinds else ["- none"]),
        "",
        "## Disagreements",
        "",
        *TABLE_HEAD,
        *table_rows(everything),
        "",
    ]
    refused = _other_rows(everything, "refused")
    if refused:
        out += [
            "## Questions the exact checker refuses",
            "",
            "Not a reshape or transpose at all (element types or sizes differ), so there is no exact",
            "answer to compare; XLA's functions answer anyway.",
            "",
            *OTHER_HEAD,
            *refused,
            "",
        ]
    unknown = _other_rows(everything, "unknown")
    if unknown:
        out += ["## Undecided by the exact checker", "", *OTHER_HEAD, *unknown, ""]
    return "\n".join(out)


#: The groups of TPU rows in the counts table: (name, op).
TPU_GROUPS = (("TPU reshape rows", RESHAPE), ("TPU transpose rows", TRANSPOSE))


def groups(ground_truth: Path = GROUND_TRUTH) -> list[tuple[str, list[Comparison]]]:
    """The comparisons of the three sources of cases, in report order."""
    tpu = tpu_cases(ground_truth)
    return [
        *((name, [compare(c) for c in tpu if c.op == op]) for name, op in TPU_GROUPS),
        ("XLA vectors", [compare(c) for c in vector_cases(ground_truth)]),
        ("constructed tiled cases", [compare(c) for c in CONSTRUCTED]),
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the report is out of date")
    args = parser.parse_args(argv)
    text = render(groups())
    if args.check:
        current = REPORT.read_text(encoding="utf-8") if REPORT.is_file() else ""
        if current != text:
            print(f"{REPORT} is out of date; run {Path(__file__).name}", file=sys.stderr)
            return 1
        return 0
    REPORT.write_text(text, encoding="utf-8")
    print(f"wrote {REPORT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
