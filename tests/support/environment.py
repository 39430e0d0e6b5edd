"""Where the tests run: CI or not, detected once here.

CI (``.ci/run`` exports ``CI=true``, as CI services do) draws the same Hypothesis examples on
every run, and makes a missing tool (``node``, ``chromium``) a failure instead of a skip.

>>> isinstance(IN_CI, bool)
True
"""

from __future__ import annotations

import os
from collections.abc import Mapping


def in_ci(environ: Mapping[str, str] = os.environ) -> bool:
    """``CI`` set to anything but empty, ``0``, ``false`` or ``no`` (any case).

    >>> in_ci({"CI": "true"}), in_ci({"CI": "1"}), in_ci({"CI": "false"}), in_ci({})
    (True, True, False, False)
    """
    return environ.get("CI", "").strip().lower() not in {"", "0", "false", "no"}


#: True when the tests run in CI.
IN_CI = in_ci()
