"""Proof results as values: proved, refuted (with a re-checked counterexample), or unknown.

>>> r = ProofResult("proved", "f32[3,5]{1,0:T(2,2)} is injective", 0.004, "bit-vector (12 bits)")
>>> bool(r), r.status
(True, 'proved')
>>> print(r)
proved: f32[3,5]{1,0:T(2,2)} is injective [bit-vector (12 bits), 4.0 ms]
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["STATUSES", "ProofResult"]

Status = Literal["proved", "refuted", "unknown"]
#: The three answers a proof can give.
STATUSES: tuple[str, ...] = ("proved", "refuted", "unknown")


@dataclass(frozen=True)
class ProofResult:
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

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"status {self.status!r} is not one of {STATUSES}")
        if self.status == "refuted" and not self.counterexample:
            raise ValueError("a refutation needs a counterexample")

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
