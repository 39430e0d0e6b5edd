"""Every public module path imports with ``import a.b.c as x``, and ``x`` is that module;
no package binds a function or class under the name of one of its sub-modules.

``import a.b.c as x`` binds ``x`` by looking ``b`` up on ``a`` and ``c`` on that, and the
import system rebinds ``a.b`` to the module ``b`` the first time it is imported. A package that
exported a *function* under a sub-module's name (``la.codegen``, ``la.draw``, ``la.pack`` once)
gave the function or the module depending on what was imported first. So no name is both:
functions are named after what they do (``la.generate_code``), folders after what they hold
(``layout_algebra.packing``).
"""

from __future__ import annotations

import json
import pkgutil

import pytest
from support.processes import python_output

import layout_algebra


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
    if x is not module:
        failures[path] = f"bound to {x!r}"
print(json.dumps(failures))
"""


def run_imports(paths: list[str]) -> dict[str, str]:
    """The paths whose ``import ... as x`` failed or bound the wrong object, in a fresh Python."""
    program = f"import sys\nsys.argv[1:] = {[json.dumps(paths)]!r}\n{PROGRAM}"
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


def test_no_package_binds_another_object_under_a_sub_module_name() -> None:
    """After importing every module, each package's attribute named like a sub-module is that module."""
    output = python_output(
        *[
            "import importlib, pkgutil, types, layout_algebra",
            "found = [m for m in pkgutil.walk_packages(layout_algebra.__path__, prefix='layout_algebra.')",
            "         if not m.name.endswith('__main__')]",
            "for m in found: importlib.import_module(m.name)",
            "bad = []",
            "for package in [layout_algebra] + [importlib.import_module(m.name) for m in found if m.ispkg]:",
            "    for sub in pkgutil.iter_modules(package.__path__):",
            "        value = package.__dict__.get(sub.name)",
            "        if value is not None and not isinstance(value, types.ModuleType):",
            "            bad.append(f'{package.__name__}.{sub.name}')",
            "print(bad)",
        ]
    )
    assert output == "[]"


def test_the_checker_sees_a_function_named_like_a_sub_module(tmp_path) -> None:
    package = tmp_path / "clash"
    package.mkdir()
    (package / "__init__.py").write_text("def helper():\n    return 1\n")
    (package / "helper.py").write_text("VALUE = 2\n")
    output = python_output(
        *[
            "import sys, types, pkgutil",
            f"sys.path.insert(0, {str(tmp_path)!r})",
            "import clash",
            "bad = [s.name for s in pkgutil.iter_modules(clash.__path__)",
            "       if not isinstance(clash.__dict__.get(s.name), (types.ModuleType, type(None)))]",
            "print(bad)",
        ]
    )
    assert output == "['helper']"


def test_the_root_functions_stay_functions_after_every_module_is_imported() -> None:
    output = python_output(
        *[
            "import importlib, pkgutil, types, layout_algebra as la",
            "for m in pkgutil.walk_packages(la.__path__, prefix='layout_algebra.'):",
            "    if not m.name.endswith('__main__'): importlib.import_module(m.name)",
            "names = ('draw', 'explain', 'layout_map', 'generate_code', 'normal_form', 'pack', 'unpack')",
            "assert all(isinstance(getattr(la, n), types.FunctionType) for n in names), names",
            "assert str(la.layout_map('f32[3,5]{1,0:T(2,2)}').forward((2, 3))) == '17'",
            "assert 'uint64_t element_offset(' in la.generate_code('f32[3,5]{1,0:T(2,2)}', 'c').text",
            "print('ok')",
        ]
    )
    assert output == "ok"
