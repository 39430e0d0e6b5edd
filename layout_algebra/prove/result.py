"""Proof results as values: proved, refuted (with a re-checked counterexample), or unknown.

>>> r = ProofResult("proved", "f32[3,5]{1,0:T(2,2)} is injective", 0.004, "bit-vector (12 bits)")
>>> bool(r), r.status
(True, 'proved')
>>> print(r)
proved: f32[3,5]{1,0:T(2,2)} is injective [bit-vector (12 bits), 4.0 ms]

In a notebook or a REPL a result is one short line (``print`` gives every detail); as
data (``to_dict()``, the ``--json`` of ``layout-algebra prove``) it nests its lemmas:

>>> r
<ProofResult proved: f32[3,5]{1,0:T(2,2)} is injective>
>>> r.to_dict()["status"], r.to_dict()["milliseconds"]
('proved', 4.0)
>>> print(r._repr_markdown_())
**proved**: f32[3,5]{1,0:T(2,2)} is injective *(bit-vector (12 bits), 4.0 ms)*

**One vocabulary.** Every answer of the package speaks it: ``ProofResult``, the code
certificate (``codegen.certify.Certification``), the bitcast decision
(``bitcast.BitcastVerdict``), the audit's data-movement verdict
(``hlo.audit.MovementVerdict``), a pass validation's ``hlo.passes.PassResult`` and the
executor's ``hlo.execute_compare.Comparison`` each have a ``status`` in :data:`STATUSES` (with a
domain word beside it where one helps: ``"bitcast"``, ``"moves data"``), a short
``repr``, a ``str`` that starts with the answer, and ``to_dict()`` whose values
:func:`json_value` made JSON-ready. :class:`Answer` names that shape:

>>> isinstance(r, Answer)
True
>>> json_value({"i": (1, 2), "n": __import__("sympy").Symbol("N")})
{'i': [1, 2], 'n': 'N'}
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from layout_algebra.model.errors import InvalidArgumentError
from layout_algebra.model.questions import AnswersQuestion, Question

#: Longest claim a ``repr`` shows before cutting it with an ellipsis.
REPR_CLAIM_LENGTH = 100

__all__ = ["DEFAULT_TIMEOUT_MS", "STATUSES", "Answer", "ProofResult", "json_value"]

#: Per-query solver timeout; a timeout gives ``unknown``, never a guess. (Here, with the
#: results, so that a decision needing no solver can name its default without loading Z3.)
DEFAULT_TIMEOUT_MS = 30_000

Status = Literal["proved", "refuted", "unknown"]
#: The three answers a proof can give.
STATUSES: tuple[str, ...] = ("proved", "refuted", "unknown")


@runtime_checkable
class Answer(Protocol):
    """An answer to a claim: ``status`` in :data:`STATUSES`, truthy exactly when proved, and
    JSON-ready data by ``to_dict()`` (which has the ``status``)."""

    @property
    def status(self) -> str: ...

    def __bool__(self) -> bool: ...

    def to_dict(self) -> dict[str, Any]: ...


@dataclass(frozen=True, repr=False)
class ProofResult(AnswersQuestion):
    """The answer to one claim.

    ``status`` is ``"proved"`` only when Z3 answered unsat on the encoding named in
    ``encoding`` (or every lemma of a composed proof did); ``"refuted"`` only with a
    ``counterexample`` that was re-evaluated concretely and confirmed; ``"unknown"``
    otherwise, with the ``reason``. Truthy exactly when proved.
    """

    status: Status
    claim: str
    seconds: float
    encoding: str
    counterexample: dict[str, Any] | None = None
    reason: str = ""
    lemmas: tuple[ProofResult, ...] = field(default=())
    #: the claim answered, where a size condition can be found for it (``layout_algebra.condition_of``)
    question: Question | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise InvalidArgumentError(f"status {self.status!r} is not one of {STATUSES}")
        if self.status == "refuted" and not self.counterexample:
            raise InvalidArgumentError("a refutation needs a counterexample")

    def __bool__(self) -> bool:
        return self.status == "proved"

    @property
    def proved(self) -> bool:
        return self.status == "proved"

    def __str__(self) -> str:
        text = f"{self.status}: {self.claim} [{self.encoding}, {self.seconds * 1000:.1f} ms]"
        if self.counterexample:
            text += "\n  counterexample: " + ", ".join(f"{k}={v}" for k, v in self.counterexample.items())
        if self.reason:
            text += f"\n  reason: {self.reason}"
        return text

    def __repr__(self) -> str:
        claim = self.claim
        if len(claim) > REPR_CLAIM_LENGTH:
            claim = claim[: REPR_CLAIM_LENGTH - 3] + "..."
        more = f" ({len(self.lemmas)} lemmas)" if self.lemmas else ""
        return f"<ProofResult {self.status}: {claim}{more}>"

    def to_dict(self) -> dict[str, Any]:
        """The result as JSON-ready data (the schema of ``layout-algebra prove --json``).

        ``status``, ``claim``, ``encoding``, ``milliseconds`` (rounded to 0.1 ms),
        ``counterexample`` (``null`` or its values: integers, lists for indices, text for
        anything symbolic), ``reason`` (``""`` when none) and ``lemmas`` (the same records).
        """
        return {
            "status": self.status,
            "claim": self.claim,
            "encoding": self.encoding,
            "milliseconds": round(self.seconds * 1000, 1),
            "counterexample": None
            if self.counterexample is None
            else {str(k): json_value(v) for k, v in self.counterexample.items()},
            "reason": self.reason,
            "lemmas": [lemma.to_dict() for lemma in self.lemmas],
        }

    def _repr_markdown_(self) -> str:
        lines = [f"**{self.status}**: {self.claim} *({self.encoding}, {self.seconds * 1000:.1f} ms)*"]
        if self.counterexample:
            values = ", ".join(f"`{k}={v}`" for k, v in self.counterexample.items())
            lines.append(f"- counterexample: {values}")
        if self.reason:
            lines.append(f"- reason: {self.reason}")
        if self.lemmas:
            lines.append(
                f"- {len(self.lemmas)} lemmas: " + ", ".join(sorted({lemma.status for lemma in self.lemmas}))
            )
        return "\n".join(lines)


def json_value(value: Any) -> Any:
    """A value (a counterexample's, say) as JSON: ints, floats, bools and text as they are,
    sequences as lists, dicts with text keys, anything else (SymPy numbers, NumPy integers)
    as an int when it is one, else its text."""
    if isinstance(value, bool | int | float | str) or value is None:
        return value
    if isinstance(value, tuple | list):
        return [json_value(v) for v in value]
    if isinstance(value, dict):
        return {str(k): json_value(v) for k, v in value.items()}
    try:
        as_int = int(value)
    except (TypeError, ValueError):
        return str(value)
    return as_int if as_int == value else str(value)


def combined_lemmas(claim: str, lemmas: Sequence[ProofResult], start: float) -> ProofResult:
    """One result for ``claim`` from its lemmas (started at ``start``, a ``perf_counter``
    reading): refuted by the first refuted lemma (its counterexample), unknown if any
    lemma is, proved only when every lemma is."""
    elapsed = time.perf_counter() - start
    encoding = "lemmas: " + "; ".join(sorted({lemma.encoding for lemma in lemmas}))
    refuted = [lemma for lemma in lemmas if lemma.status == "refuted"]
    if refuted:
        return ProofResult(
            "refuted", claim, elapsed, encoding, refuted[0].counterexample, lemmas=tuple(lemmas)
        )
    unknown = [lemma for lemma in lemmas if lemma.status == "unknown"]
    if unknown:
        reason = f"{len(unknown)} of {len(lemmas)} lemmas unknown: {unknown[0].claim}: {unknown[0].reason}"
        return ProofResult("unknown", claim, elapsed, encoding, reason=reason, lemmas=tuple(lemmas))
    return ProofResult("proved", claim, elapsed, encoding, lemmas=tuple(lemmas))
