"""Move the flat test files into folders that mirror the package, and rewrite every reference.

Kept so that anyone can replay it (the move's commit is listed in ``.git-blame-ignore-revs``).
It is idempotent: run it on a flat ``tests/`` or on one already moved, and it moves whatever is
still flat — a test file added since is placed by :data:`TABLE`, else by :data:`PREFIX_RULES`
(printed, to review), else the script FAILS listing it and changes nothing::

    python scripts/restructure_tests.py --dry-run      # print what it would do, change nothing
    python scripts/restructure_tests.py                # git mv + rewrite, in place
    python scripts/restructure_tests.py --put test_new.py=hlo   # place a file the table lacks

Where the files go (``tests/README.md`` says the same for new tests):

* one folder per package folder (``tests/hlo`` tests ``layout_algebra/hlo`` ...);
* ``soundness/``: every verdict against an independent oracle (red teams, fuzzing);
* ``conformance/``: the package against ground truth from XLA and XLA:TPU;
* ``integration/``: wheel, examples, C compiler and node, browser, fresh interpreters;
* ``support/``: helpers the tests import (strategies, oracles, ground-truth readers);
* ``xla_tpu/``: the opt-in differential suite against the XLA:TPU compiler (was ``oracle/``,
  a name too close to ``support/oracles.py``).

Test folders have no ``__init__.py``: pytest's default ``prepend`` import mode imports each test
file under its basename, so basenames must be unique across folders (checked here; pytest
refuses duplicates too). ``support`` is a package, imported as ``support.<module>`` because
``tests/`` (where ``conftest.py`` lives) is on ``sys.path``.

What it rewrites, in every file git tracks (``tests/data`` excepted): paths
(``tests/test_hlo.py`` -> ``tests/hlo/test_hlo.py``, ``tests/oracle`` -> ``tests/xla_tpu``);
imports of the support modules (``from strategies import`` -> ``from support.strategies
import``, ``from conftest import GROUND_TRUTH`` -> ``from support.ground_truth import
GROUND_TRUTH``); in each moved file, paths computed from ``__file__`` (one level deeper now).
Test contents are otherwise unchanged.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"

#: Files that stay in ``tests/`` itself.
KEEP = frozenset({"conftest.py", "test_architecture.py", "README.md"})

#: The helpers tests import: moved into ``tests/support/``.
SUPPORT = (
    "strategies",
    "strategies_algebra",
    "strategies_hlo",
    "strategies_maps",
    "oracles",
    "explorer_cases",
)

#: Names ``conftest`` used to export -> the support module that holds them now.
CONFTEST_NAMES: dict[str, str] = {
    "GROUND_TRUTH": "ground_truth",
    "TEST_DATA": "ground_truth",
    "ground_truth_file": "ground_truth",
    "vector_params": "ground_truth",
    "require_vector": "ground_truth",
    "python_output": "processes",
}

#: Renamed folders (same depth).
FOLDERS: dict[str, str] = {"oracle": "xla_tpu"}
#: Files renamed inside a renamed folder (new folder -> old name -> new name).
FOLDER_FILES: dict[str, dict[str, str]] = {"xla_tpu": {"test_oracle.py": "test_xla_tpu.py"}}

#: folder -> flat test files it receives; a ``(old, new)`` pair renames the file too.
PLACES: dict[str, tuple[str | tuple[str, str], ...]] = {
    "model": ("test_model.py", "test_syntax.py", "test_formulas.py", "test_validation.py", "test_errors.py"),
    "meaning": (
        "test_stages.py",
        "test_layout_map.py",
        "test_sizes.py",
        "test_logical_ops.py",
        "test_digits.py",
        "test_recover_oracle.py",
        "test_recover_refusals.py",
        "test_recover_unit_dims.py",
    ),
    "xla": ("test_xla_bitcast.py",),
    "prove": (
        "test_prove.py",
        "test_prove_general.py",
        "test_prove_function_maps.py",
        "test_assumptions.py",
        "test_formula_dims.py",
        "test_lemma_cache.py",
        "test_answers.py",
    ),
    "packing": ("test_numpy_eval.py", "test_copy_kernels.py", "test_transpose_kernels.py"),
    "target": ("test_access.py", "test_tpu.py"),
    "decide": (
        "test_bitcast.py",
        "test_bitcast_fast_path.py",
        "test_bitcast_symbolic_merges.py",
        "test_normal_form.py",
        "test_views.py",
        "test_conditions.py",
        "test_views_oracles.py",
    ),
    "codegen": ("test_codegen.py",),
    "hlo": (
        "test_hlo.py",
        "test_hlo_execute.py",
        "test_hlo_wrapping.py",
        "test_audit.py",
        "test_passes.py",
        "test_verify.py",
        "test_verify_execute_edges.py",
        "test_verify_sizes.py",
        "test_float_rules.py",
        "test_bitcast_size_rule.py",
        "test_bitcast_memory_spaces.py",
        "test_pass_report.py",
        "test_passes_provisional_tiling.py",
        "test_passes_resources.py",
    ),
    "interop": (
        "test_interop.py",
        "test_algebra.py",
        "test_algebra_pycute.py",
        "test_triton.py",
        "test_triton_oracle.py",
        "test_interop_jax.py",
        "test_interop_round_trips.py",
        "test_untrusted_text.py",
    ),
    "teach": ("test_draw.py", "test_explorer.py", "test_proofs_catalog.py", "test_docs_nav.py"),
    "cli": (
        "test_cli.py",
        "test_cli_formulas.py",
        "test_cli_help.py",
        "test_cli_json.py",
        "test_cli_pack.py",
        "test_robustness.py",
    ),
    "soundness": (
        "test_internal_names.py",
        "test_soundness_suite.py",
        ("test_soundness_redteam.py", "test_layout_prover_verdicts.py"),
        ("test_soundness_redteam_apps.py", "test_application_verdicts.py"),
        ("test_soundness_redteam_session26.py", "test_array_size_and_element_slot_verdicts.py"),
        ("test_soundness_redteam_session27.py", "test_formula_dim_and_residue_verdicts.py"),
        "test_verify_fuzz.py",
    ),
    "conformance": (
        "test_ground_truth.py",
        "test_interop_golden.py",
        "test_xla_compat.py",
        "test_pass_dump_corpus.py",
    ),
    "integration": (
        "test_notebook.py",
        "test_pass_report_browser.py",
        "test_public_surface.py",
        "test_cli_wheel.py",
        "test_examples.py",
        "test_browser.py",
        "test_codegen_js.py",
        "test_tutorial_jax.py",
        "test_public_imports.py",
        ("test_cli_names.py", "test_top_level_names.py"),
    ),
}

#: For a test file the table does not know: the first prefix that matches places it (longest
#: prefixes first where they overlap). The script prints each such placement to review.
PREFIX_RULES: tuple[tuple[str, str], ...] = (
    ("test_soundness", "soundness"),
    ("test_conformance", "conformance"),
    ("test_integration", "integration"),
    ("test_cli_wheel", "integration"),
    ("test_cli", "cli"),
    ("test_hlo", "hlo"),
    ("test_verify", "hlo"),
    ("test_execute", "hlo"),
    ("test_passes", "hlo"),
    ("test_audit", "hlo"),
    ("test_opcodes", "hlo"),
    ("test_literals", "hlo"),
    ("test_validity", "hlo"),
    ("test_prove", "prove"),
    ("test_lemma", "prove"),
    ("test_assumptions", "prove"),
    ("test_bitcast", "decide"),
    ("test_normal_form", "decide"),
    ("test_views", "decide"),
    ("test_conditions", "decide"),
    ("test_decide", "decide"),
    ("test_codegen", "codegen"),
    ("test_cute", "interop"),
    ("test_algebra", "interop"),
    ("test_interop", "interop"),
    ("test_triton", "interop"),
    ("test_mlir", "interop"),
    ("test_jax", "interop"),
    ("test_recover", "meaning"),
    ("test_xla_tpu", "xla_tpu"),
    ("test_xla", "xla"),
    ("test_pack", "packing"),
    ("test_numpy_eval", "packing"),
    ("test_copy", "packing"),
    ("test_transpose_kernels", "packing"),
    ("test_stages", "meaning"),
    ("test_layout_map", "meaning"),
    ("test_sizes", "meaning"),
    ("test_logical_ops", "meaning"),
    ("test_digits", "meaning"),
    ("test_meaning", "meaning"),
    ("test_model", "model"),
    ("test_syntax", "model"),
    ("test_formula", "model"),
    ("test_shapes", "model"),
    ("test_errors", "model"),
    ("test_tpu", "target"),
    ("test_access", "target"),
    ("test_target", "target"),
    ("test_draw", "teach"),
    ("test_explain", "teach"),
    ("test_explorer", "teach"),
    ("test_proofs", "teach"),
    ("test_teach", "teach"),
)

TEXT_SUFFIXES = {".py", ".md", ".toml", ".yml", ".yaml", ".in", ".cfg", ".txt", ".ini", ".sh", ".html", ".js"}
TEXT_NAMES = {"run", ".gitignore", "MANIFEST.in", "setup.py"}


def table() -> dict[str, tuple[str, str]]:
    """Flat file name -> (folder, new file name), from :data:`PLACES` and :data:`SUPPORT`."""
    moves: dict[str, tuple[str, str]] = {f"{name}.py": ("support", f"{name}.py") for name in SUPPORT}
    for folder, names in PLACES.items():
        for entry in names:
            old, new = entry if isinstance(entry, tuple) else (entry, entry)
            moves[old] = (folder, new)
    return moves


def by_rule(name: str) -> str | None:
    """The folder of the first prefix rule that matches a test file's name."""
    if not (name.startswith("test_") and name.endswith(".py")):
        return None
    for prefix, folder in PREFIX_RULES:
        if name.startswith(prefix):
            return folder
    return None


def tracked(*paths: str) -> list[str]:
    done = subprocess.run(
        ["git", "ls-files", "--", *paths], cwd=ROOT, check=True, capture_output=True, text=True
    )
    return [line for line in done.stdout.splitlines() if (ROOT / line).is_file()]


def plan(put: dict[str, str]) -> tuple[dict[str, str], list[str], list[str]]:
    """(old path -> new path, placements by rule, unknown files), all relative to the root."""
    known = table()
    moves: dict[str, str] = {}
    ruled: list[str] = []
    unknown: list[str] = []
    for rel in tracked("tests"):
        path = Path(rel)
        parts = path.parts
        if len(parts) >= 3 and parts[1] in FOLDERS:  # tests/oracle/... -> tests/xla_tpu/...
            folder = FOLDERS[parts[1]]
            name = FOLDER_FILES.get(folder, {}).get(parts[2], parts[2]) if len(parts) == 3 else parts[2]
            moves[rel] = str(Path("tests", folder, name, *parts[3:]))
            continue
        if len(parts) != 2 or path.suffix != ".py" or path.name in KEEP:
            continue
        if path.name in put:
            moves[rel] = f"tests/{put[path.name]}/{path.name}"
        elif path.name in known:
            folder, new = known[path.name]
            moves[rel] = f"tests/{folder}/{new}"
        elif (folder := by_rule(path.name)) is not None:
            moves[rel] = f"tests/{folder}/{path.name}"
            ruled.append(f"{rel} -> {moves[rel]}  (by its name's prefix: check it belongs there)")
        else:
            unknown.append(rel)
    return moves, ruled, unknown


def duplicate_basenames(moves: dict[str, str]) -> list[str]:
    """Test modules that would share a basename (pytest's prepend import mode needs them unique)."""
    final = [moves.get(rel, rel) for rel in tracked("tests") if rel.endswith(".py")]
    seen: dict[str, list[str]] = {}
    for rel in final:
        parts = Path(rel).parts
        if "support" in parts or "data" in parts:
            continue  # support is a package (support.<name>); tests/data holds no modules
        seen.setdefault(Path(rel).name, []).append(rel)
    return [f"{name}: {', '.join(paths)}" for name, paths in sorted(seen.items()) if len(paths) > 1]


# ---------------------------------------------------------------------------- rewriting text
def every_old_path() -> dict[str, str]:
    """Each flat path of the table -> its new path: stale references are rewritten on every run."""
    paths = {f"tests/{old}": f"tests/{folder}/{new}" for old, (folder, new) in table().items()}
    for old, new in FOLDERS.items():
        for old_name, new_name in FOLDER_FILES.get(new, {}).items():
            paths[f"tests/{old}/{old_name}"] = f"tests/{new}/{new_name}"
    return paths


def path_pattern(paths: dict[str, str]) -> re.Pattern[str]:
    alternatives = "|".join(re.escape(p) for p in sorted(paths, key=len, reverse=True))
    return re.compile(rf"(?<![\w/.])({alternatives})(?![\w])")


def rewrite_paths(text: str, paths: dict[str, str]) -> str:
    text = path_pattern(paths).sub(lambda m: paths[m[1]], text)
    for old, new in FOLDERS.items():
        text = re.sub(rf"(?<![\w/.])tests/{old}(?![\w])", f"tests/{new}", text)
        text = re.sub(
            rf'(("tests"|\)|parents?(\[\d+\])?)\s*/\s*)"{old}"', rf'\1"{new}"', text
        )  # Path(...) / "oracle"
    renamed = {old[:-3]: new[:-3] for old, (_, new) in table().items() if old != new}
    for old, new in renamed.items():  # bare module names: ``test_soundness_redteam_session27``
        text = re.sub(rf"(?<![\w]){re.escape(old)}(?![\w])", new, text)
    return text


SUPPORT_NAMES = "|".join(SUPPORT)
FROM_SUPPORT = re.compile(rf"^(?P<indent>[ \t]*)from ({SUPPORT_NAMES}) import ", re.M)
IMPORT_SUPPORT = re.compile(rf"^(?P<indent>[ \t]*)import ({SUPPORT_NAMES})(?P<rest>( as \w+)?)[ \t]*$", re.M)
FROM_TESTS = re.compile(rf"^(?P<indent>[ \t]*)from tests import ({SUPPORT_NAMES})\b", re.M)
FROM_CONFTEST = re.compile(r"^(?P<indent>[ \t]*)from conftest import (?P<names>[\w, ]+?)[ \t]*$", re.M)


class UnknownConftestName(ValueError):
    pass


def rewrite_conftest_import(match: re.Match[str]) -> str:
    """``from conftest import GROUND_TRUTH, python_output`` -> one import per support module."""
    by_module: dict[str, list[str]] = {}
    for name in (part.strip() for part in match["names"].split(",")):
        if not name:
            continue
        if name not in CONFTEST_NAMES:
            raise UnknownConftestName(name)
        by_module.setdefault(CONFTEST_NAMES[name], []).append(name)
    return "\n".join(
        f"{match['indent']}from support.{module} import {', '.join(names)}"
        for module, names in by_module.items()
    )


def rewrite_imports(text: str) -> str:
    text = FROM_SUPPORT.sub(lambda m: f"{m['indent']}from support.{m[2]} import ", text)
    text = IMPORT_SUPPORT.sub(lambda m: f"{m['indent']}from support import {m[2]}{m['rest']}", text)
    text = FROM_TESTS.sub(lambda m: f"{m['indent']}from tests.support import {m[2]}", text)
    return FROM_CONFTEST.sub(rewrite_conftest_import, text)


FILE_PATH = r"Path\(__file__\)(?P<resolve>\.resolve\(\))?"


def one_level_deeper(text: str) -> str:
    """Paths computed from ``__file__`` in a file that moves from ``tests/`` to ``tests/<folder>/``."""
    text = re.sub(
        rf"{FILE_PATH}\.parents\[(\d+)\]", lambda m: f"{m[0].rsplit('[', 1)[0]}[{int(m[2]) + 1}]", text
    )
    text = re.sub(
        rf"{FILE_PATH}\.parent\.parent(?![\w.])",
        lambda m: f"Path(__file__){m['resolve'] or ''}.parents[2]",
        text,
    )
    return re.sub(
        rf"{FILE_PATH}\.parent(?![\w.])", lambda m: f"Path(__file__){m['resolve'] or ''}.parents[1]", text
    )


#: Never rewritten: this script (its tables name the old paths) and the changelog (history).
NOT_REWRITTEN = frozenset({"scripts/restructure_tests.py", "CHANGELOG.md"})


def tracked_text_files() -> list[str]:
    return [
        rel
        for rel in tracked(".")
        if not rel.startswith("tests/data/")
        and rel not in NOT_REWRITTEN
        and (Path(rel).suffix in TEXT_SUFFIXES or Path(rel).name in TEXT_NAMES)
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dry-run", action="store_true", help="print what it would do, change nothing")
    parser.add_argument(
        "--put",
        action="append",
        default=[],
        metavar="FILE=FOLDER",
        help="place a flat test file the table lacks",
    )
    args = parser.parse_args(argv)
    put = dict(item.split("=", 1) for item in args.put)

    moves, ruled, unknown = plan(put)
    if unknown:
        print(
            "Test files this script does not know (add them to PLACES, or --put FILE=FOLDER):",
            file=sys.stderr,
        )
        for rel in unknown:
            print(f"  {rel}", file=sys.stderr)
        return 1
    if duplicates := duplicate_basenames(moves):
        print("Test modules would share a basename (rename one):", file=sys.stderr)
        for line in duplicates:
            print(f"  {line}", file=sys.stderr)
        return 1
    for line in ruled:
        print("placed by rule:", line)

    paths = every_old_path()
    paths.update({old: new for old, new in moves.items() if old.count("/") == 1})
    rewritten: list[str] = []
    for rel in tracked_text_files():
        path = ROOT / rel
        text = path.read_text(encoding="utf-8")
        new = rewrite_paths(text, paths)
        if path.suffix == ".py":
            try:
                new = rewrite_imports(new)
            except UnknownConftestName as name:
                print(
                    f"{rel}: imports {name} from conftest; say in CONFTEST_NAMES where it lives",
                    file=sys.stderr,
                )
                return 1
            if rel in moves and rel.count("/") == 1:
                new = one_level_deeper(new)
        if new != text:
            print("rewrite", rel)
            rewritten.append(moves.get(rel, rel))
            if not args.dry_run:
                path.write_text(new, encoding="utf-8")

    for old, new in moves.items():
        print("git mv", old, new)
        if not args.dry_run:
            (ROOT / new).parent.mkdir(parents=True, exist_ok=True)
            subprocess.run(["git", "mv", old, new], cwd=ROOT, check=True)

    for old in FOLDERS:  # git mv leaves the emptied folder behind
        folder = TESTS / old
        if not args.dry_run and folder.is_dir() and not any(folder.rglob("*.py")):
            shutil.rmtree(folder)

    python_files = [rel for rel in rewritten if rel.endswith(".py")]
    ruff = shutil.which("ruff") or shutil.which("ruff", path=str(Path(sys.executable).parent))
    if python_files and not args.dry_run:
        if ruff:  # the rewritten imports sort elsewhere
            subprocess.run([ruff, "check", "--quiet", "--fix", "--select", "I", *python_files], cwd=ROOT)
            subprocess.run([ruff, "format", "--quiet", *python_files], cwd=ROOT)
        else:
            print("ruff not found: run `ruff check --fix . && ruff format .` to sort the rewritten imports")
    if not args.dry_run:
        subprocess.run(["git", "add", "-A", "tests", *rewritten], cwd=ROOT, check=True)
    print(
        f"{len(moves)} files moved, {len(rewritten)} files rewritten" + (" (dry run)" if args.dry_run else "")
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
