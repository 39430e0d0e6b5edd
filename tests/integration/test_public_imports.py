"""Every public module path imports with ``import a.b.c as x``, and ``x`` is that module.

``import a.b.c as x`` binds ``x`` by looking ``b`` up on ``a`` and ``c`` on that, so a
top-level *function* exported under a sub-package's name (``la.codegen``) used to break
``import layout_algebra.codegen.simplify as s`` (``cannot import name 'simplify' from
'codegen'``). The names the package deliberately exports as functions (``explain``,
``layout_map``, ``codegen``, ``draw``, ``normal_form``: see ``test_top_level_names.py``) give that
function for their own path, and their sub-modules stay reachable.
"""

from __future__ import annotations

import json
import pkgutil

import pytest
from support.processes import python_output

import layout_algebra

#: Paths where ``import ... as x`` gives the function the package exports under that name.
FUNCTIONS = {
    f"layout_algebra.{name}": name for name in ("explain", "layout_map", "codegen", "draw", "normal_form")
}


def public_module_paths() -> list[str]:
    """Every module of the package whose dotted path has no part starting with ``_``."""
    found = pkgutil.walk_packages(layout_algebra.__path__, prefix="layout_algebra.")
    return sorted(m.name for m in found if not any(p.startswith("_") for p in m.name.split(".")))


PROGRAM = """
import importlib, json, sys, types
failures = {}
for path in json.loads(sys.argv[1]):
    namespace = {}
    try:
        exec(compile(f"import {path} as x", "<import>", "exec"), namespace)
    except Exception as err:  # every failure reported, not only the first
        failures[path] = f"{type(err).__name__}: {err}"
        continue
    x, module = namespace["x"], sys.modules[path]
    expected_function = json.loads(sys.argv[2]).get(path)
    if expected_function:
        ok = isinstance(x, types.FunctionType) and x is getattr(module, expected_function)
    else:
        ok = x is module
    if not ok:
        failures[path] = f"bound to {x!r}"
print(json.dumps(failures))
"""


def run_imports(paths: list[str]) -> dict[str, str]:
    """The paths whose ``import ... as x`` failed or bound the wrong object, in a fresh Python."""
    program = f"import sys\nsys.argv[1:] = {[json.dumps(paths), json.dumps(FUNCTIONS)]!r}\n{PROGRAM}"
    result: dict[str, str] = json.loads(python_output(program, timeout=300).splitlines()[-1])
    return result


def test_the_walk_finds_the_modules_that_broke() -> None:
    paths = public_module_paths()
    assert "layout_algebra.codegen.simplify" in paths
    assert "layout_algebra.interop.cute.export" in paths  # imported on demand only
    assert "layout_algebra.hlo.verify" in paths
    assert len(paths) > 40


@pytest.mark.parametrize("order", ["as listed", "reversed"])
def test_every_public_module_path_imports_as_itself(order: str) -> None:
    paths = public_module_paths()
    failures = run_imports(paths if order == "as listed" else paths[::-1])
    assert failures == {}


def test_codegen_sub_modules_import_as_modules_and_codegen_stays_the_function() -> None:
    output = python_output(
        *[
            "import layout_algebra as la, sys, types",
            "import layout_algebra.codegen.simplify as s",
            "import layout_algebra.codegen.certify as c",  # the package binds certify() too
            "assert s is sys.modules['layout_algebra.codegen.simplify']",
            "assert c is sys.modules['layout_algebra.codegen.certify']",
            "assert isinstance(la.codegen, types.FunctionType)",
            "assert 'uint64_t element_offset(' in la.generate_code('f32[3,5]{1,0:T(2,2)}', 'c').text",
            "from layout_algebra.codegen import certify",
            "assert isinstance(certify, types.FunctionType)",
            "print('ok')",
        ]
    )
    assert output == "ok"
