"""Moved: the CuTe export lives in :mod:`layout_algebra.interop.cute`, beside the CuTe import.

This module only keeps the old import path working for existing callers; new code imports
from ``layout_algebra.interop``.
"""

from layout_algebra.interop.cute import (
    CuteLayout,
    NotExpressible,
    cute_expr,
    cute_layout,
    cute_modes,
    to_cute,
)

__all__ = ["CuteLayout", "NotExpressible", "cute_expr", "cute_layout", "cute_modes", "to_cute"]
