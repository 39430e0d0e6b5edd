"""The package's layers, enforced: folders are layers, imports point down, and form no cycle.

``docs/architecture.md`` draws the picture. Every ``import`` statement of every module
counts, function-level and ``TYPE_CHECKING`` ones included (they are dependencies all
the same; a function-level import only hides a cycle until the function runs). There are
no exemptions: no allowed upward import, no known cycle.

The layers, lowest first (a module may import its own layer and the ones below)::

    0 model                  plain data and text: shapes, layouts, syntax, validation
    1 meaning, xla           the stage pipeline and its first readers; XLA's C++ helpers
    2 prove, packing, target Z3 front end; NumPy packing; TPU defaults and kernel queries
    3 decide, codegen        bitcasts, normal form, views, conditions; certified index code
    4 hlo, interop, teach    HLO modules; other libraries' layouts; explanations and figures
    5 cli, __main__          the command line
    6 the package root       ``layout_algebra/__init__.py``: the public names, loaded lazily
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import layout_algebra

PACKAGE = "layout_algebra"
PACKAGE_DIR = Path(layout_algebra.__file__).parent

#: Layer of each top-level folder (the first component after the package).
LAYERS: dict[str, int] = {
    "model": 0,
    "meaning": 1,
    "xla": 1,
    "prove": 2,
    "packing": 2,
    "target": 2,
    "decide": 3,
    "codegen": 3,
    "hlo": 4,
    "interop": 4,
    "teach": 4,
    "cli": 5,
    "__main__": 5,
    "": 6,  # the package's own __init__: re-exports the public names of every layer
}
LAYER_NAMES = {
    0: "model",
    1: "meaning/xla",
    2: "prove/packing/target",
    3: "decide/codegen",
    4: "hlo/interop/teach",
    5: "CLI",
    6: "package root",
}


@dataclass(frozen=True)
class Import:
    """One imported module (and the names taken from it) at one line of one module."""

    importer: str
    imported: str
    names: tuple[str, ...]
    line: int


def module_name(path: Path) -> str:
    """``layout_algebra/prove/core.py`` -> ``layout_algebra.prove.core``; packages by their ``__init__``."""
    parts = list(path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def package_modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE_DIR.rglob("*.py"))}


MODULES = package_modules()


def absolute(importer: str, path: Path, node: ast.ImportFrom) -> str:
    """The absolute module name of a ``from ... import`` (relative ones resolved)."""
    if not node.level:
        return node.module or ""
    base = importer.split(".")
    if path.name != "__init__.py":
        base.pop()
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports_of(importer: str, path: Path) -> Iterator[Import]:
    """Every import of a package module by ``importer``, wherever it appears in the file."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == PACKAGE:
                    yield Import(importer, alias.name, (), node.lineno)
        elif isinstance(node, ast.ImportFrom):
            module = absolute(importer, path, node)
            if module.split(".")[0] != PACKAGE:
                continue
            names = tuple(a.name for a in node.names)
            submodules = {name for name in names if f"{module}.{name}" in MODULES}
            for name in sorted(submodules):  # ``from package import submodule``
                yield Import(importer, f"{module}.{name}", (), node.lineno)
            if set(names) - submodules and module != importer:  # names defined by ``module`` itself
                yield Import(importer, module, tuple(n for n in names if n not in submodules), node.lineno)


ALL_IMPORTS = [imp for name, path in MODULES.items() for imp in imports_of(name, path)]


def layer(module: str) -> int:
    """The layer of a package module, from its first component below the package."""
    parts = module.split(".")
    top = parts[1] if len(parts) > 1 else ""
    if top not in LAYERS:
        raise KeyError(f"{module} is in no layer: add {top!r} to LAYERS and to docs/architecture.md")
    return LAYERS[top]


def graph() -> dict[str, set[str]]:
    """Module -> modules it imports (every import, no exemption)."""
    edges: dict[str, set[str]] = {m: set() for m in MODULES}
    for imp in ALL_IMPORTS:
        if imp.imported in MODULES:
            edges[imp.importer].add(imp.imported)
    return edges


def folder(module: str) -> str:
    """``layout_algebra.decide.views`` -> ``decide`` (the root package is ``""``)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def folder_graph() -> dict[str, set[str]]:
    """Top-level folder -> the folders its modules import (a folder's own imports left out)."""
    edges: dict[str, set[str]] = {folder(m): set() for m in MODULES}
    for importer, imported in graph().items():
        for module in imported:
            if folder(module) != folder(importer):
                edges[folder(importer)].add(folder(module))
    return edges


def strongly_connected_components(edges: dict[str, set[str]]) -> list[set[str]]:
    """Tarjan's algorithm (iterative): the components with more than one module, or a self-import."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []
    counter = 0
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1 or node in edges[node]:
                    found.append(component)
    return found


# ------------------------------------------------------------------ the checker itself
def test_scc_finds_a_cycle_and_only_cycles():
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}, "f": set()}
    assert sorted(map(sorted, strongly_connected_components(edges))) == [["a", "b", "c"], ["e"]]
    assert strongly_connected_components({"a": {"b"}, "b": set()}) == []


def test_imports_are_found_wherever_they_are_written(tmp_path):
    source = (
        "from __future__ import annotations\n"
        "import layout_algebra.meaning.sizes\n"
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from layout_algebra.hlo import ir\n"
        "def f():\n"
        "    from ...model.shapes import Tile, _private\n"
        "    return Tile\n"
    )
    path = (
        PACKAGE_DIR / "meaning" / "stages" / "example.py"
    )  # only its name is used; the text is read from tmp
    fake = tmp_path / "example.py"
    fake.write_text(source)
    found = {(i.imported, i.names) for i in imports_of(module_name(path), fake)}
    assert ("layout_algebra.meaning.sizes", ()) in found
    assert ("layout_algebra.hlo.ir", ()) in found  # a submodule, not the package's __init__
    assert not any(module == "layout_algebra.hlo" for module, _ in found)
    assert ("layout_algebra.model.shapes", ("Tile", "_private")) in found


def test_every_module_has_a_layer():
    for module in MODULES:
        layer(module)  # raises with the module's name


# ------------------------------------------------------------------- the package's rules
def test_imports_point_down_the_layers():
    where = [
        f"{i.importer} (line {i.line}, layer {LAYER_NAMES[layer(i.importer)]}) imports {i.imported} "
        f"(layer {LAYER_NAMES[layer(i.imported)]})"
        for i in ALL_IMPORTS
        if layer(i.imported) > layer(i.importer)
    ]
    assert not where, "imports going up a layer:\n" + "\n".join(where)


def test_no_import_cycles_between_modules():
    found = [sorted(c) for c in strongly_connected_components(graph())]
    assert not found, f"import cycles (function-level imports included): {found}"


def test_no_import_cycles_between_folders():
    found = [sorted(c) for c in strongly_connected_components(folder_graph())]
    assert not found, f"folders that import each other (every import counted): {found}"


def test_the_root_holds_only_the_layers():
    entries = sorted(p.name for p in PACKAGE_DIR.iterdir() if p.name != "__pycache__")
    folders = {p.name for p in PACKAGE_DIR.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert folders == set(LAYERS) - {"", "__main__"}, entries
    assert len(entries) <= 16, entries


def test_no_module_is_over_a_thousand_lines():
    long = {m: n for m, p in MODULES.items() if (n := len(p.read_text(encoding="utf-8").splitlines())) > 1000}
    assert not long, f"split these along their seams: {long}"


def test_no_private_names_imported_from_other_modules():
    found = sorted(
        (i.importer, i.imported, name)
        for i in ALL_IMPORTS
        for name in i.names
        if name.startswith("_") and not name.startswith("__")
    )
    assert not found, f"private names imported from another module (make them public or move them): {found}"


# ------------------------------------------------------------------------ start-up cost
def modules_loaded_by(code: str) -> set[str]:
    """Which of SymPy, Z3, NumPy and matplotlib a fresh interpreter has loaded after ``code``."""
    probe = f"{code}\nimport sys\nprint(' '.join(m for m in {HEAVY!r} if m in sys.modules))"
    out = subprocess.run(
        [sys.executable, "-c", probe], check=True, capture_output=True, text=True, timeout=120
    )
    return set(out.stdout.split())


HEAVY = ("sympy", "z3", "numpy", "matplotlib")


def test_importing_the_package_loads_no_heavy_library():
    assert modules_loaded_by("import layout_algebra") == set()


def test_concrete_sizes_and_offsets_need_no_sympy():
    code = (
        "import layout_algebra as la\n"
        "assert la.physical_size_in_bytes('bf16[16,256]{1,0:T(8,128)(2,1)}') == 8192\n"
        "assert la.layout_map('f32[3,5]{1,0:T(2,2)}').forward((2, 3)) == 17\n"
        "import layout_algebra.cli\n"
    )
    assert modules_loaded_by(code) == set()


def test_symbolic_sizes_load_sympy_when_asked():
    assert "sympy" in modules_loaded_by("import layout_algebra as la; la.physical_size_in_bytes('f32[N]')")


def test_every_public_name_resolves_and_functions_are_not_shadowed_by_their_modules():
    code = (
        "import layout_algebra.teach.draw, layout_algebra.teach.explain, layout_algebra.meaning.layout_map\n"
        "import layout_algebra.codegen.generate\n"
        "import layout_algebra as la\n"
        "assert all(getattr(la, name) is not None for name in la.__all__)\n"
        "assert set(la.__all__) <= set(dir(la))\n"
        "for name in ('draw', 'explain', 'layout_map', 'generate_code', 'normal_form'):\n"
        "    assert callable(getattr(la, name)), name\n"
        "from layout_algebra import hlo, xla\n"
        "assert hlo.__name__ == 'layout_algebra.hlo' and la.xla is xla\n"
    )
    modules_loaded_by(code)  # raises CalledProcessError (with the assertion) if one fails
