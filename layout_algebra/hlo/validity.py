"""XLA's validity rules for HLO, shared by the audit, the rewrite verifier, the executor and pass
validation: what XLA's verifier rejects, and the one error that says so.
"""

from __future__ import annotations

__all__ = ["InvalidHlo"]


class InvalidHlo(ValueError):
    """HLO that XLA would reject: the message names the instruction and the problem."""
