"""Top-level names: ``la.explain``, ``la.layout_map``, ``la.codegen``, ``la.draw`` are the
functions whatever was imported before (a module of the same name never takes their place),
and the modules stay importable with ``from ... import``."""

from __future__ import annotations

import pytest
from support.processes import python_output

FUNCTIONS_NAMED_LIKE_MODULES = ("explain", "layout_map", "codegen", "draw")


@pytest.mark.parametrize("first", ["modules first", "functions first"])
def test_functions_win_whatever_the_import_order(first) -> None:
    imports = "; ".join(f"import layout_algebra.{name}" for name in FUNCTIONS_NAMED_LIKE_MODULES)
    output = python_output(
        *[
            imports if first == "modules first" else "import layout_algebra",
            "import layout_algebra as la, types",
            f"names = {FUNCTIONS_NAMED_LIKE_MODULES!r}",
            "assert all(isinstance(getattr(la, n), types.FunctionType) for n in names), names",
            "assert str(la.layout_map('f32[3,5]{1,0:T(2,2)}').forward((2, 3))) == '17'",
            "from layout_algebra.codegen import simplify",  # the sub-module, by from-import
            "from layout_algebra.codegen.simplify import Bounds",
            "assert simplify.Bounds is Bounds",
            "print('ok')",
        ]
    )
    assert output == "ok"
