"""One vocabulary for answers: ProofResult, Certification, BitcastVerdict, MovementVerdict.

Each has ``status`` in {proved, refuted, unknown}, is truthy exactly when proved, has a
one-line ``repr``, a ``str`` that starts with its answer, and ``to_dict()`` (JSON-ready,
with the status). ``MovementVerdict.status`` agrees with the exact bitcast decision it
rests on, and with its own verdict.
"""

from __future__ import annotations

import json

import pytest

from layout_algebra.codegen.certification import Certification, certify
from layout_algebra.decide.bitcast import reshape_is_bitcast, transpose_is_bitcast
from layout_algebra.hlo.audit import MOVES_DATA, NO_DATA_MOVEMENT, UNKNOWN, MovementVerdict, classify_movement
from layout_algebra.hlo.ir import HloInstruction
from layout_algebra.interop.cute.export import cute_expr, cute_layout
from layout_algebra.meaning.layout_map import layout_map
from layout_algebra.model.syntax import parse_shape
from layout_algebra.prove import injective
from layout_algebra.prove.result import STATUSES, Answer


def answers() -> list[object]:
    m = layout_map("f32[4,6]{0,1}")
    return [
        injective("f32[3,5]{1,0:T(2,2)}"),
        cute_layout("f32[4,6]{0,1}").certification,  # proved
        certify(m, "forward", "element", cute_expr("(4,6):(6,1)", 2)),  # refuted: row-major is not {0,1}
        Certification("unknown", "none", "not checked"),
        reshape_is_bitcast("f32[2,3]{1,0}", "f32[6]{0}"),  # proved
        reshape_is_bitcast("f32[2,3]{0,1}", "f32[6]{0}"),  # refuted
        classify_movement(
            HloInstruction("r", parse_shape("f32[6]{0}"), "reshape"), parse_shape("f32[2,3]{1,0}")
        ),
        classify_movement(
            HloInstruction("c", parse_shape("f32[6]{0:S(1)}"), "copy"), parse_shape("f32[6]{0}")
        ),
        classify_movement(HloInstruction("c", parse_shape("f32[6]{0}"), "copy"), None),
    ]


@pytest.mark.parametrize("answer", answers(), ids=lambda a: type(a).__name__)
def test_every_answer_speaks_the_vocabulary(answer: object) -> None:
    assert isinstance(answer, Answer)
    status = answer.status
    assert status in STATUSES
    assert bool(answer) == (status == "proved")
    data = answer.to_dict()
    assert data["status"] == status
    assert json.loads(json.dumps(data)) == data  # JSON-ready as it is
    text = repr(answer)
    assert "\n" not in text and len(text) < 160 and status in text
    assert (
        status in str(answer).split(":")[0]
    )  # the answer comes first: "proved: ...", "bitcast (proved): ..."


def test_the_expected_statuses() -> None:
    got = [a.status for a in answers()]
    assert got == [
        "proved",
        "proved",
        "refuted",
        "unknown",
        "proved",
        "refuted",
        "proved",
        "refuted",
        "unknown",
    ]


def test_movement_status_is_the_bitcast_decision() -> None:
    src = parse_shape("bf16[16,256]{1,0:T(8,128)(2,1)}")
    cases = {
        "bf16[4096]{0:T(1024)(128)(2,1)}": ("refuted", MOVES_DATA),  # the tiles order elements differently
        "bf16[2,8,256]{2,1,0:T(8,128)(2,1)}": ("proved", NO_DATA_MOVEMENT),  # whole tiles
    }
    for text, (status, verdict) in cases.items():
        m = classify_movement(HloInstruction("r", parse_shape(text), "reshape"), src)
        assert (m.status, m.verdict) == (status, verdict)
        assert m.bitcast is not None and m.status == m.bitcast.status
        assert m.to_dict()["bitcast"] == m.bitcast.to_dict()


def test_an_invalid_bitcast_instruction_moves_nothing_but_is_refuted() -> None:
    src = parse_shape("f32[16,256]{1,0:T(8,128)}")
    m = classify_movement(HloInstruction("b", parse_shape("f32[4096]{0}"), "bitcast"), src)
    assert (m.verdict, m.status) == (NO_DATA_MOVEMENT, "refuted")
    assert m.bitcast is not None and m.bitcast.status == "refuted"


def test_movement_without_a_decision() -> None:
    assert MovementVerdict(MOVES_DATA, "S(0) → S(1)").status == "refuted"
    assert MovementVerdict(UNKNOWN, "dynamic").status == "unknown"
    assert MovementVerdict(UNKNOWN, "x").to_dict() == {
        "verdict": "unknown",
        "status": "unknown",
        "reason": "x",
        "bitcast": None,
    }
    assert repr(MovementVerdict(MOVES_DATA, "S(0) → S(1)")) == "MovementVerdict(refuted: 'moves data')"


def test_transpose_verdict_round_trips_through_json() -> None:
    v = transpose_is_bitcast("f32[2,3]{1,0}", "f32[3,2]{0,1}", (1, 0))
    assert v.status == "proved" and v.to_dict()["status"] == "proved"
