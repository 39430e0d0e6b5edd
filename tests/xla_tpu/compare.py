"""The package's answer to each oracle question, compared with the compiler's, with explanations.

Shared by the live oracle suite (``test_oracle.py``) and the default suite's replay of the
recorded answers (``tests/conformance/test_interop_golden.py`` reading ``tests/data/tpu_oracle_golden.jsonl``),
so both apply the same rules. Each ``compare_*`` returns :class:`Outcome`s; an outcome
with ``agree=False`` and an empty ``explanation`` is an unexplained disagreement.
"""

from __future__ import annotations

from dataclasses import dataclass

import layout_algebra as la
from layout_algebra import interop
from layout_algebra.model import ArrayShape, Layout, parse_shape
from layout_algebra.target import tpu

COMPILER_ABORT = (
    "libtpu aborted the process (a CHECK failure inside the compiler) on this pinned layout: the compiler "
    "crashed rather than answering, so there is nothing to compare; this is why each query runs in a child process"
)
RETILED = (
    "proved byte-compatible (every element keeps its bit offset, and the allocations are equal), but XLA:TPU "
    "chose to copy: a documented compiler choice, it re-tiles pinned layouts it would not pick itself "
    "(tests/data/ground_truth/README.md)"
)
RELAID = "the compiler did not keep the pinned layouts (it compiled others), so it answered another question"


@dataclass(frozen=True)
class Outcome:
    category: str
    case: str
    agree: bool
    note: str = ""  # for agreements: which kind; for disagreements: unused
    package: str = ""
    compiler: str = ""
    explanation: str = ""


def without_tail(shape: ArrayShape) -> ArrayShape:
    """Only what a JAX ``Layout`` pins: ``minor_to_major``, tiles and ``E(n)``."""
    layout = shape.effective_layout
    return shape.with_layout(
        Layout(layout.minor_to_major, layout.tiles, element_size_in_bits=layout.element_size_in_bits)
    )


def entry_shapes(answer: dict) -> tuple[tuple, object] | None:
    if not answer.get("entry"):
        return None
    return interop.entry_shapes_of_compiled("entry_computation_layout={" + answer["entry"] + "}\n")


def unanswered(category: str, case: str, answer: dict) -> Outcome | None:
    """An outcome for a crash or a rejection, or None if the compiler answered."""
    if "crash" in answer:
        crash = answer["crash"]
        aborted = "Check failed" in crash or "exit code -6" in crash
        return Outcome(
            category,
            case,
            False,
            package="-",
            compiler=f"the compiler process died: {crash}",
            explanation=COMPILER_ABORT if aborted else "",
        )
    if "error" in answer:
        return Outcome(category, case, True, note="rejected by the compiler")
    return None


def compare_bytes(shape: ArrayShape, answer: dict) -> list[Outcome]:
    case = str(shape)
    early = unanswered("bytes", case, answer)
    if early:
        return [early]
    out = []
    params, _ = entry_shapes(answer)
    compiled = params[0]
    other = without_tail(compiled) != shape  # the compiler chose another layout: size that one
    subject = compiled if other else shape
    expected = la.size_report(subject).first_tile_bytes
    if expected == answer["bytes"]:
        out.append(
            Outcome("bytes", case, True, note="agree (compiler chose another layout)" if other else "agree")
        )
    else:
        detail = f"for the compiled layout {compiled}" if other else "(first_tile_bytes)"
        out.append(
            Outcome(
                "bytes",
                case,
                False,
                package=f"{expected} bytes {detail}",
                compiler=f"{answer['bytes']} bytes",
            )
        )
    fmt = answer.get("format")
    if fmt is not None:
        fields = interop.JaxLayoutFields(
            tuple(fmt["major_to_minor"]),
            None if fmt["tiling"] is None else tuple(tuple(t) for t in fmt["tiling"]),
            fmt["sub_byte"],
        )
        read = interop.from_jax_layout(fields, shape.element_type.text, shape.dimensions, as_compiled=True)
        category = "interop: compiled Format"
        if read == without_tail(compiled):
            out.append(Outcome(category, case, True, note="agree"))
        else:
            out.append(Outcome(category, case, False, package=str(read), compiler=str(compiled)))
    return out


def compare_default(dtype: str, dims: tuple[int, ...], answer: dict) -> list[Outcome]:
    case = f"{dtype}{list(dims)}"
    early = unanswered("default layout", case, answer)
    if early:
        return [early]
    params, _ = entry_shapes(answer)
    predicted = tpu.default_layout(dtype, dims)
    predicted_bytes = tpu.default_layout_bytes(dtype, dims)
    if params[0] == predicted and predicted_bytes == answer["bytes"]:
        return [Outcome("default layout", case, True, note="agree")]
    return [
        Outcome(
            "default layout",
            case,
            False,
            package=f"{predicted} ({predicted_bytes} bytes)",
            compiler=f"{params[0]} ({answer['bytes']} bytes)",
        )
    ]


def compare_bitcast(
    src: ArrayShape, dst: ArrayShape, permutation: tuple[int, ...] | None, answer: dict
) -> list[Outcome]:
    category = "reshape bitcast" if permutation is None else "transpose bitcast"
    case = f"{src} -> {dst}" + ("" if permutation is None else f" by {list(permutation)}")
    early = unanswered(category, case, answer)
    if early:
        return [early]
    if permutation is None:
        verdict = la.reshape_is_bitcast(src, dst)
    else:
        verdict = la.transpose_is_bitcast(src, dst, permutation)
    compiler = set(answer["ops"]) <= {"parameter", "bitcast"}
    params, result = entry_shapes(answer)
    relaid = without_tail(params[0]) != src or without_tail(result) != dst
    package = verdict.verdict
    said = f"ops {answer['ops']}" + (f" on the compiled layouts {answer['entry']}" if relaid else "")
    if (package == "bitcast") == compiler and package != "unknown":
        return [Outcome(category, case, True, note="agree")]
    if relaid:
        return [Outcome(category, case, False, package=package, compiler=said, explanation=RELAID)]
    if package == "bitcast" and not compiler:
        return [
            Outcome(
                category,
                case,
                False,
                package=f"bitcast ({verdict.reason})",
                compiler=said,
                explanation=RETILED,
            )
        ]
    return [Outcome(category, case, False, package=f"{package}: {verdict.reason}", compiler=said)]


def compare_parse(text: str, answer: dict) -> list[Outcome]:
    if "crash" in answer:
        return [Outcome("parse", text, False, package="-", compiler=f"the process died: {answer['crash']}")]
    try:
        ours = str(parse_shape(text))
    except ValueError as err:
        ours = f"error: {err}"
    theirs = answer.get("printed", f"error: {answer.get('error')}")
    if ours == theirs or (ours.startswith("error") and theirs.startswith("error")):
        return [Outcome("parse", text, True, note="agree")]
    if theirs.startswith("error") and not ours.startswith("error") and la.layout_problems(parse_shape(text)):
        return [
            Outcome(
                "parse",
                text,
                False,
                package=ours,
                compiler=theirs,
                explanation=(
                    "xla_client.Shape parses and then validates the layout (LayoutUtil::ValidateLayoutForShape); "
                    "parse_shape only parses, and layout_algebra.validate() rejects this shape too"
                ),
            )
        ]
    return [Outcome("parse", text, False, package=ours, compiler=theirs)]
