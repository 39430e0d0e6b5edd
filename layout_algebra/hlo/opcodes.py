"""HLO's vocabulary: one table of the opcodes this package reads, each with its kind, and the
named subsets the audit, the rewrite verifier, the executor and pass validation use.

Every subset is taken from the one table (or is a named part of another subset), so no two
modules can disagree about what an opcode is:

>>> OPCODE_KINDS["transpose"], OPCODE_KINDS["add"], OPCODE_KINDS["dot"], OPCODE_KINDS["rng"]
('data movement', 'elementwise', 'opaque', 'nondeterministic')
>>> AUDITED_MOVEMENT_OPCODES                       # what the audit classifies
('bitcast', 'reshape', 'transpose', 'copy')
>>> set(AUDITED_MOVEMENT_OPCODES) <= set(MOVEMENT_OPCODES)
True
>>> EXECUTED_ELEMENTWISE_OPCODES <= ELEMENTWISE_OPCODES  # what the executor computes
True
>>> "select" in ELEMENTWISE_OPCODES and "select" in EXECUTED_OPCODES
True
"""

from __future__ import annotations

__all__ = [
    "ALIASING_OPCODES",
    "AUDITED_MOVEMENT_OPCODES",
    "ELEMENTWISE_OPCODES",
    "EXECUTED_COMPUTE_OPCODES",
    "EXECUTED_ELEMENTWISE_OPCODES",
    "EXECUTED_OPCODES",
    "INERT_ATTRIBUTES",
    "INLINED_OPCODES",
    "LAYOUT_SENSITIVE_OPCODES",
    "MOVEMENT_OPCODES",
    "NONDETERMINISTIC_OPCODES",
    "OPAQUE_OPCODES",
    "OPCODE_KINDS",
    "RANDOM_OPCODES",
    "SUPPORTED_OPCODES",
    "TYPE_KEEPING_OPS",
]

DATA_MOVEMENT = "data movement"
ELEMENTWISE = "elementwise"
OPAQUE = "opaque"
NONDETERMINISTIC = "nondeterministic"

#: Every opcode with a meaning here, by kind. *Data movement*: each result element is an operand
#: element, a constant or undefined, at an index the op's attributes fix (the verifier states the
#: index maps exactly; the executor runs them). *Elementwise*: result element j is a function of
#: the operands' elements j. *Opaque*: deterministic compute ops, equal when their text is.
#: *Nondeterministic*: never "the same" twice.
OPCODE_KINDS: dict[str, str] = {
    **dict.fromkeys(
        "parameter constant copy bitcast bitcast-convert reshape transpose broadcast slice concatenate "
        "pad reverse iota dynamic-slice dynamic-update-slice tuple get-tuple-element fusion call".split(),
        DATA_MOVEMENT,
    ),
    **dict.fromkeys(
        """abs add and atan2 cbrt ceil clamp compare complex convert cosine count-leading-zeros
        divide erf exponential exponential-minus-one floor imag is-finite log log-plus-one logistic
        maximum minimum multiply negate not or popcnt power real reduce-precision remainder
        round-nearest-afz round-nearest-even rsqrt select shift-left shift-right-arithmetic
        shift-right-logical sign sine sqrt subtract tan tanh xor""".split(),
        ELEMENTWISE,
    ),
    **dict.fromkeys(
        "dot convolution reduce reduce-window select-and-scatter scatter gather sort map "
        "cholesky triangular-solve fft".split(),
        OPAQUE,
    ),
    **dict.fromkeys(
        "rng rng-bit-generator rng-get-and-update-state infeed recv recv-done custom-call "
        "send send-done outfeed after-all".split(),
        NONDETERMINISTIC,
    ),
}


def _of_kind(kind: str) -> tuple[str, ...]:
    return tuple(op for op, k in OPCODE_KINDS.items() if k == kind)


#: Ops whose index semantics the verifier states exactly and the executor runs.
MOVEMENT_OPCODES = _of_kind(DATA_MOVEMENT)

#: Ops read by the verifier as uninterpreted functions applied element by element.
ELEMENTWISE_OPCODES = frozenset(_of_kind(ELEMENTWISE))

#: Deterministic ops read as opaque arrays: element j of ``op(operands)`` equals element j of
#: another such op exactly when the op, its attributes and called computations, and its
#: operand subgraphs are the same text (names aside). Enough to carry a ``dot`` or ``reduce``
#: untouched through a rewrite of the data movement around it.
OPAQUE_OPCODES = frozenset(_of_kind(OPAQUE))

#: Ops whose result may differ between two runs of the same text: never "the same".
NONDETERMINISTIC_OPCODES = frozenset(_of_kind(NONDETERMINISTIC))

#: Every opcode the verifier understands.
SUPPORTED_OPCODES = tuple(sorted({*MOVEMENT_OPCODES, *ELEMENTWISE_OPCODES, *OPAQUE_OPCODES}))

#: The data-movement ops that may or may not move data, depending on the layouts: what the audit
#: classifies (a ``bitcast`` never moves data in valid HLO; the others do unless they are bitcasts).
AUDITED_MOVEMENT_OPCODES = ("bitcast", "reshape", "transpose", "copy")

#: The elementwise ops whose real semantics the executor computes (the others: unsupported there).
EXECUTED_ELEMENTWISE_OPCODES = frozenset(
    "add subtract multiply divide remainder maximum minimum and or xor negate abs sign not exponential "
    "exponential-minus-one log log-plus-one tanh sine cosine sqrt rsqrt floor ceil convert compare "
    "clamp select shift-left shift-right-arithmetic shift-right-logical".split()
)

#: The compute ops and further elementwise ops the executor runs by XLA's semantics
#: (``execute_compute``, ``execute_gather``, ``execute_math``).
EXECUTED_COMPUTE_OPCODES = frozenset(
    "dot convolution reduce reduce-window select-and-scatter sort topk map gather scatter round-nearest-even "
    "round-nearest-afz power atan2 count-leading-zeros popcnt is-finite reduce-precision cbrt tan logistic "
    "erf".split()
)

#: Every opcode the executor runs.
EXECUTED_OPCODES = frozenset({*MOVEMENT_OPCODES, *EXECUTED_ELEMENTWISE_OPCODES, *EXECUTED_COMPUTE_OPCODES})

#: Ops whose result is storage defined by another instruction (never counted as buffers).
ALIASING_OPCODES = frozenset(
    {"bitcast", "get-tuple-element", "tuple", "while", "call", "conditional", "optimization-barrier"}
)

#: Ops that run one called computation on their operands, read by inlining it.
INLINED_OPCODES = ("fusion", "call")

#: Compute ops whose meaning depends on their operands' layouts or runs other computations on
#: whole buffers: pass validation pairs them only when operand and result layouts match exactly.
LAYOUT_SENSITIVE_OPCODES = frozenset(
    {"custom-call", "while", "conditional", "async-start", "async-done", "send", "recv", "infeed", "outfeed"}
)

#: Data-movement ops whose result has the element type of their first n operands (None: all).
TYPE_KEEPING_OPS: dict[str, int | None] = {
    "copy": 1,
    "reshape": 1,
    "transpose": 1,
    "broadcast": 1,
    "slice": 1,
    "reverse": 1,
    "concatenate": None,
    "pad": 2,
    "dynamic-slice": 1,
    "dynamic-update-slice": 2,
}

#: Ops that draw random numbers: never equal to another, even of the same text (pass validation
#: pairs the other nondeterministic ops, such as ``custom-call``, by their text).
RANDOM_OPCODES = frozenset({"rng", "rng-get-and-update-state"})

#: Attributes that do not change what an op computes (``control-predecessors`` only orders
#: the schedule: an op computes the same value whatever runs before it).
INERT_ATTRIBUTES = frozenset(
    {
        "metadata",
        "backend_config",
        "frontend_attributes",
        "sharding",
        "statistics",
        "origin",
        "control-predecessors",
    }
)
