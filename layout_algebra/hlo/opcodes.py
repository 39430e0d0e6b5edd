"""HLO's vocabulary of opcodes, as the rewrite verifier reads them."""

from __future__ import annotations

#: Ops read as uninterpreted functions applied element by element.
ELEMENTWISE_OPCODES = frozenset(
    """abs add and atan2 cbrt ceil clamp compare complex convert cosine count-leading-zeros
    divide erf exponential exponential-minus-one floor imag is-finite log log-plus-one logistic
    maximum minimum multiply negate not or popcnt power real reduce-precision remainder
    round-nearest-afz round-nearest-even rsqrt select shift-left shift-right-arithmetic
    shift-right-logical sign sine sqrt subtract tan tanh xor""".split()
)

#: Ops whose index semantics the verifier states exactly.
MOVEMENT_OPCODES = (
    "parameter",
    "constant",
    "copy",
    "bitcast",
    "bitcast-convert",
    "reshape",
    "transpose",
    "broadcast",
    "slice",
    "concatenate",
    "pad",
    "reverse",
    "iota",
    "dynamic-slice",
    "dynamic-update-slice",
    "tuple",
    "get-tuple-element",
    "fusion",
    "call",
)

# Data-movement ops whose result has the element type of their first n operands (None: all).
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

#: Deterministic ops read as opaque arrays: element j of ``op(operands)`` equals element j of
#: another such op exactly when the op, its attributes and called computations, and its
#: operand subgraphs are the same text (names aside). Enough to carry a ``dot`` or ``reduce``
#: untouched through a rewrite of the data movement around it.
OPAQUE_OPCODES = frozenset(
    "dot convolution reduce reduce-window select-and-scatter scatter gather sort map "
    "cholesky triangular-solve fft".split()
)

#: Ops whose result may differ between two runs of the same text: never "the same".
NONDETERMINISTIC_OPCODES = frozenset(
    "rng rng-bit-generator rng-get-and-update-state infeed recv recv-done custom-call "
    "send send-done outfeed after-all".split()
)

#: Every opcode the verifier understands.
SUPPORTED_OPCODES = tuple(sorted({*MOVEMENT_OPCODES, *ELEMENTWISE_OPCODES, *OPAQUE_OPCODES}))
