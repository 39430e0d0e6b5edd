"""Move the package's modules into folders that are its layers, and rewrite every reference.

A one-off move, kept so that anyone can replay it on a checkout of the commit before it (the
move's commit is listed in ``.git-blame-ignore-revs``, so ``git blame`` looks through it)::

    python scripts/restructure_package_tree.py          # git mv + rewrite, in place
    python scripts/restructure_package_tree.py --dry-run  # print what it would do

It does three things and nothing else:

1. ``git mv`` each module of :data:`MOVES` to its new home (new folders get an ``__init__.py``
   that says what the layer holds);
2. rewrites every reference to a moved module in the files git tracks — dotted names
   (``layout_algebra.decide.bitcast`` -> ``layout_algebra.decide.bitcast``, in imports, monkeypatch
   strings, doctest tracebacks, ``pyproject.toml``), paths (``layout_algebra/decide/bitcast.py``),
   and ``from layout_algebra import bitcast`` (-> ``from layout_algebra.decide import
   bitcast``);
3. deletes the compatibility shims that only existed for old module paths (:data:`DELETED`).

Module contents are not changed by this script: behaviour is the same before and after.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "layout_algebra"

#: old module -> new module (dotted, below the package). A package moves with its contents.
MOVES: dict[str, str] = {
    "_loaded": "model._loaded",
    "stages": "meaning.stages",
    "layout_map": "meaning.layout_map",
    "sizes": "meaning.sizes",
    "logical_ops": "meaning.logical_ops",
    "references": "meaning.references",
    "interop.digits": "meaning.digits",
    "interop.recover": "meaning.recover",
    "numpy_eval": "packing.numpy_eval",
    "copy_engine": "packing.copy_engine",
    "copy_kernels": "packing.copy_kernels",
    "transpose_kernels": "packing.transpose_kernels",
    "tpu": "target.tpu",
    "access": "target.access",
    "bitcast": "decide.bitcast",
    "normal_form": "decide.normal_form",
    "views": "decide.views",
    "conditions": "decide.conditions",
    "explain": "teach.explain",
    "draw": "teach.draw",
    "explorer": "teach.explorer",
    "proofs": "teach.proofs",
    "algebra": "interop.cute.algebra",
    "interop.cute": "interop.cute.export",
}

#: Shims kept only for old module paths: removed, their callers rewritten by :data:`MOVES`.
DELETED: dict[str, str] = {"codegen.cute": "interop.cute.export"}

#: Names the package root exports as *functions* although a module of the same name existed:
#: ``from layout_algebra import draw`` meant the function, and stays as it is.
ROOT_FUNCTIONS = frozenset({"draw", "explain", "layout_map", "normal_form", "codegen", "pack", "unpack"})

#: What each new folder is, written into its ``__init__.py``.
NEW_PACKAGES: dict[str, str] = {
    "meaning": "Layer 1: what a layout means — the stage pipeline and its first readers.\n\n"
    "``stages`` defines a layout as a pipeline of small index maps; ``layout_map`` evaluates it\n"
    "(concrete values and SymPy closed forms), ``sizes`` measures it, ``logical_ops`` gives the\n"
    "index meaning of reshape and transpose, ``references`` computes the same positions\n"
    "independently, ``digits`` and ``recover`` read a layout back from its offsets.\n",
    "packing": "Layer 2: packing real arrays into a layout's exact bytes, and back (NumPy, numba).\n",
    "target": "Layer 2: what a target makes of layouts — XLA:TPU's defaults and sizes, and the\n"
    "queries a kernel writer asks (contiguous runs, vector loads).\n",
    "decide": "Layer 3: decisions about layouts — bitcasts, the normal form, views, size conditions.\n\n"
    "One way inside: ``views`` -> ``normal_form`` -> ``bitcast`` <- ``conditions``.\n",
    "teach": "Layer 4: explanations, figures, the interactive explorer and the proof catalog.\n",
    "interop.cute": "CuTe's layouts: the algebra (``algebra``) and the export of XLA layouts (``export``).\n",
}

TEXT_SUFFIXES = {".py", ".md", ".toml", ".yml", ".yaml", ".in", ".cfg", ".txt", ".ini", ".sh", ".html", ".js"}
TEXT_NAMES = {"run", ".gitignore", "MANIFEST.in", "setup.py"}


def module_path(module: str, *, package: bool) -> Path:
    """``decide.bitcast`` -> ``layout_algebra/decide/bitcast.py`` (or the folder for a package)."""
    base = Path(PACKAGE, *module.split("."))
    return base if package else base.with_suffix(".py")


def is_package(module: str) -> bool:
    return (ROOT / module_path(module, package=True)).is_dir()


def dotted_pattern(table: dict[str, str]) -> re.Pattern[str]:
    """``layout_algebra.OLD`` as a whole dotted name (longest first, never inside another name)."""
    names = sorted(table, key=len, reverse=True)
    alternatives = "|".join(re.escape(name) for name in names)
    return re.compile(rf"(?<![\w.]){PACKAGE}\.({alternatives})(?![\w])")


def slash_pattern(table: dict[str, str]) -> re.Pattern[str]:
    """``layout_algebra/OLD.py`` or ``layout_algebra/OLD/`` as a path."""
    names = sorted(table, key=len, reverse=True)
    alternatives = "|".join(re.escape(name.replace(".", "/")) for name in names)
    return re.compile(rf"(?<![\w/]){PACKAGE}/({alternatives})(?=\.py\b|/)")


FROM_IMPORT = re.compile(
    rf"^(?P<indent>[ \t]*(?:>>> |\.\.\. )?)from (?P<parent>{PACKAGE}(?:\.\w+)*) import (?P<names>[\w, ]+?)(?P<tail>[ \t]*(?:#.*)?)$",
    re.M,
)


def rewrite_from_imports(text: str, table: dict[str, str]) -> str:
    """``from layout_algebra import bitcast, parse_shape`` -> one import per moved module."""

    def replace(match: re.Match[str]) -> str:
        parent = match["parent"]
        kept: list[str] = []
        moved: list[str] = []
        for item in (part.strip() for part in match["names"].split(",")):
            if not item:
                continue
            name, _, alias = item.partition(" as ")
            name, alias = name.strip(), alias.strip()
            old = f"{parent}.{name}"[len(PACKAGE) + 1 :]
            if (parent == PACKAGE and name in ROOT_FUNCTIONS) or old not in table:
                kept.append(item)
                continue
            new = table[old]
            new_parent, _, new_name = f"{PACKAGE}.{new}".rpartition(".")
            local = alias or name
            as_part = "" if local == new_name else f" as {local}"
            moved.append(f"from {new_parent} import {new_name}{as_part}")
        if not moved:
            return match[0]
        lines = ([f"from {parent} import {', '.join(kept)}"] if kept else []) + moved
        lines[0] += match["tail"]
        return "\n".join(match["indent"] + line for line in lines)

    return FROM_IMPORT.sub(replace, text)


def rewrite(text: str, table: dict[str, str]) -> str:
    """Dotted names first, then from-imports: a rewritten import (``from layout_algebra.interop.cute.export
    import algebra``) must not be read again as an old dotted name."""
    text = dotted_pattern(table).sub(lambda m: f"{PACKAGE}.{table[m[1]]}", text)
    text = rewrite_from_imports(text, table)
    return slash_pattern(table).sub(
        lambda m: f"{PACKAGE}/{table[m[1].replace('/', '.')].replace('.', '/')}", text
    )


def tracked_text_files() -> list[Path]:
    names = subprocess.run(["git", "ls-files"], cwd=ROOT, check=True, capture_output=True, text=True)
    files = []
    for name in names.stdout.splitlines():
        path = ROOT / name
        if "tests/data/" in name or not path.is_file():
            continue
        if path.suffix in TEXT_SUFFIXES or path.name in TEXT_NAMES:
            files.append(path)
    return files


def git(*args: str, dry_run: bool) -> None:
    print("git", *args)
    if not dry_run:
        subprocess.run(["git", *args], cwd=ROOT, check=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dry-run", action="store_true", help="print the moves, change nothing")
    parser.add_argument(
        "--rename",
        metavar="OLD=NEW",
        help="instead of the move: rename one module or folder below the package (dotted names) in "
        "today's tree, and rewrite every reference to it (also run after merging a branch that "
        "still names OLD)",
    )
    args = parser.parse_args(argv)
    if args.rename:
        old, _, new = args.rename.partition("=")
        return rename(old, new, dry_run=args.dry_run)

    table = {**MOVES, **DELETED}
    packages = {old for old in MOVES if is_package(old)}  # before any folder is made
    files = tracked_text_files()
    for path in files:  # rewrite before moving: the paths are the old ones
        text = path.read_text(encoding="utf-8")
        new = rewrite(text, table)
        if new != text:
            print("rewrite", path.relative_to(ROOT))
            if not args.dry_run:
                path.write_text(new, encoding="utf-8")

    for folder, doc in NEW_PACKAGES.items():
        init = ROOT / PACKAGE / Path(*folder.split(".")) / "__init__.py"
        print("create", init.relative_to(ROOT))
        if not args.dry_run:
            init.parent.mkdir(parents=True, exist_ok=True)
            init.write_text(f'"""{doc}"""\n', encoding="utf-8")

    for old, new in MOVES.items():
        package = old in packages
        source = module_path(old, package=package)
        target = module_path(new, package=package)
        if not args.dry_run:
            (ROOT / target).parent.mkdir(parents=True, exist_ok=True)
        git("mv", str(source), str(target), dry_run=args.dry_run)
    for old in DELETED:
        git("rm", "-q", "-f", str(module_path(old, package=False)), dry_run=args.dry_run)
    if not args.dry_run:
        git("add", f"{PACKAGE}", dry_run=False)
    return 0


def rename(old: str, new: str, *, dry_run: bool) -> int:
    """Rename ``old`` to ``new`` (dotted, below the package) and rewrite every reference."""
    table = {old: new}
    for path in tracked_text_files():
        text = path.read_text(encoding="utf-8")
        changed = rewrite(text, table)
        if changed != text:
            print("rewrite", path.relative_to(ROOT))
            if not dry_run:
                path.write_text(changed, encoding="utf-8")
    package = is_package(old)
    source, target = module_path(old, package=package), module_path(new, package=package)
    if not (ROOT / source).exists():
        return 0
    if package and (ROOT / target).exists():  # both exist (after a merge): move file by file
        for path in sorted((ROOT / source).rglob("*.py")):
            relative = path.relative_to(ROOT / source)
            git("mv", str(source / relative), str(target / relative), dry_run=dry_run)
    else:
        git("mv", str(source), str(target), dry_run=dry_run)
    return 0


if __name__ == "__main__":
    sys.exit(main())
