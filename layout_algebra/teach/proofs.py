"""Run the catalog of theorems in ``proofs/`` and write ``docs/proofs.md``.

Each file of the catalog states one claim (``CLAIM`` and its docstring) and proves it
with the package (``prove_claim()`` returns the :class:`~layout_algebra.prove.ProofResult`
of every query). An entry is ``proved`` when every one of its results is, or, where the
claim is that something does *not* hold (a rewrite that is unsafe), when the results
listed in its optional ``EXPECTED`` as ``"refuted"`` are refuted (each with a
counterexample re-checked by evaluation) and the others proved.

Run it as ``python -m layout_algebra.teach.proofs [--catalog DIR] [--write docs/proofs.md]`` or
``layout-algebra proofs``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from layout_algebra.model.errors import InvalidArgumentError
from layout_algebra.prove.result import ProofResult

__all__ = [
    "CatalogEntry",
    "catalog_json",
    "default_catalog",
    "entry_lines",
    "main",
    "prove_file",
    "prove_files",
    "render_markdown",
    "run_catalog",
    "summary_line",
    "theorem_files",
]


@dataclass(frozen=True)
class CatalogEntry:
    """One theorem of the catalog and what proving it gave."""

    path: Path
    claim: str
    explanation: str
    results: tuple[ProofResult, ...]
    seconds: float
    expected: tuple[str, ...] = ()  # per result: "proved" (the default) or "refuted"

    def expects(self, k: int) -> str:
        return self.expected[k] if k < len(self.expected) else "proved"

    @property
    def status(self) -> str:
        """``proved`` when every result is what the claim says it is; else the first wrong answer."""
        if not self.results or len(self.expected) > len(self.results):
            return "unknown"
        answers = [(r.status, self.expects(k)) for k, r in enumerate(self.results)]
        if all(got == wanted for got, wanted in answers):
            return "proved"
        if any(got == "refuted" and wanted == "proved" for got, wanted in answers):
            return "refuted"
        if any(got == "proved" and wanted == "refuted" for got, wanted in answers):
            return "refuted"  # the claim that it fails is itself false
        return "unknown"


#: Where a wheel puts the catalog: ``setup.py`` copies ``proofs/*.py`` into the package.
SHIPPED_CATALOG = Path(__file__).resolve().parent / "proofs_catalog"


def default_catalog() -> Path:
    """``proofs/`` of the checkout (beside the package); else the copy installed with the
    package (``layout_algebra/teach/proofs_catalog/``, from a wheel); else ``proofs/`` of the
    current directory."""
    beside = Path(__file__).resolve().parents[2] / "proofs"
    if beside.is_dir():
        return beside
    return SHIPPED_CATALOG if SHIPPED_CATALOG.is_dir() else Path.cwd() / "proofs"


def _load(path: Path) -> Any:
    sys.path.insert(0, str(path.parent))  # the catalog's own helpers (_common.py)
    try:
        spec = importlib.util.spec_from_file_location(f"layout_algebra_proof_{path.stem}", path)
        if spec is None or spec.loader is None:
            raise InvalidArgumentError(f"cannot load {path}")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(path.parent))


def theorem_files(directory: Path | None = None, only: Sequence[str] = ()) -> list[Path]:
    """The theorem files of the catalog ``directory`` (default: :func:`default_catalog`), those
    whose name contains one of ``only`` if given; ``ValueError`` when there are none, or when a
    name of ``only`` matches no file (quoting it, with the names there are)."""
    given = directory is not None
    directory = Path(directory) if directory else default_catalog()
    if not directory.is_dir():
        hint = (
            ""
            if given
            else (
                " (the catalog is proofs/ of a source checkout, installed with the package from a wheel;"
                " give a directory of theorem files with --catalog DIR)"
            )
        )
        raise InvalidArgumentError(f"proof catalog {directory} does not exist{hint}")
    paths = sorted(directory.glob("[!_]*.py"))
    if not paths:
        raise InvalidArgumentError(
            f"proof catalog {directory} holds no theorem file (*.py not starting with _)"
        )
    unmatched = [name for name in only if not any(name in path.stem for path in paths)]
    if unmatched:
        names = ", ".join(path.stem for path in paths)
        raise InvalidArgumentError(
            f"no theorem in {directory} has {' or '.join(map(repr, unmatched))} in its name; the theorems: {names}"
        )
    return [path for path in paths if not only or any(name in path.stem for name in only)]


def prove_file(path: Path) -> CatalogEntry:
    """Load one theorem file and prove its claim."""
    module = _load(path)
    expected = tuple(getattr(module, "EXPECTED", ()))
    if any(e not in ("proved", "refuted") for e in expected):
        raise InvalidArgumentError(f"{path}: EXPECTED lists 'proved' or 'refuted' per result, not {expected}")
    start = time.perf_counter()
    results = module.prove_claim()
    seconds = time.perf_counter() - start
    explanation = (module.__doc__ or "").strip()
    return CatalogEntry(path, module.CLAIM, explanation, tuple(results), seconds, expected)


def run_catalog(
    directory: Path | None = None,
    *,
    only: Sequence[str] = (),
    jobs: int = 1,
    on_entry: Callable[[CatalogEntry], None] | None = None,
    on_start: Callable[[], None] | None = None,
) -> list[CatalogEntry]:
    """Prove every theorem in ``directory`` (default: :func:`default_catalog`), in file-name
    order; ``on_entry`` is called with each entry as it is proved.

    With ``jobs`` > 1, that many processes prove the theorems, the slowest first (by the
    times of the last run, kept beside the lemma cache). Theorems sharing general lemmas
    share them through the lemma cache (``prove/lemma_cache.py``): a lemma proved by one
    theorem is not proved again by the next, in this run or later ones; with the cache empty
    or off, every claim is proved from scratch."""
    return prove_files(theorem_files(directory, only), jobs=jobs, on_entry=on_entry, on_start=on_start)


def prove_files(
    paths: Sequence[Path],
    *,
    jobs: int = 1,
    on_entry: Callable[[CatalogEntry], None] | None = None,
    on_start: Callable[[], None] | None = None,
) -> list[CatalogEntry]:
    """:func:`run_catalog` on these theorem files; ``on_start`` is called once the processes
    have started (a progress display started before would have its threads forked)."""
    if jobs <= 1 or len(paths) == 1:
        if on_start is not None:
            on_start()
        entries = []
        for path in paths:
            entries.append(prove_file(path))
            if on_entry is not None:
                on_entry(entries[-1])
        _remember_times(entries)
        return entries
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    last = _last_times()
    order = sorted(paths, key=lambda path: -last.get(path.stem, float("inf")))  # unknown ones first
    done: dict[Path, CatalogEntry] = {}
    context = multiprocessing.get_context(
        "fork" if "fork" in multiprocessing.get_all_start_methods() else None
    )
    importlib.import_module("layout_algebra.prove")  # Z3 and SymPy loaded once, before the processes fork
    if context.get_start_method() == "fork":
        _preload(order)
    with ProcessPoolExecutor(max_workers=min(jobs, len(paths)), mp_context=context) as pool:
        futures = {pool.submit(prove_file, path): path for path in order}
        if on_start is not None:
            on_start()
        for future in as_completed(futures):
            entry = future.result()
            done[futures[future]] = entry
            if on_entry is not None:
                on_entry(entry)
    entries = [done[path] for path in paths]
    _remember_times(entries)
    return entries


def _preload(paths: Sequence[Path]) -> None:
    """Load every theorem file once, before the worker processes fork, so that the modules
    they import (the verifier, the CuTe algebra, ...) are imported once rather than once per
    worker (about 0.3 s of CPU each). A file that fails to load is left to its worker, which
    loads it again and reports the error as it would have."""
    for path in paths:
        try:
            _load(path)
        except Exception:  # reported by the worker that loads it again
            continue


#: The file, beside the lemma cache, with each theorem's time in the last run (to start the slowest first).
TIMES_FILE = "proof_catalog_seconds.json"


def _times_path() -> Path | None:
    from layout_algebra.prove.lemma_cache import cache_directory

    folder = cache_directory()
    return None if folder is None else folder / TIMES_FILE


def _last_times() -> dict[str, float]:
    path = _times_path()
    try:
        data = json.loads(path.read_text(encoding="utf-8")) if path is not None else {}
    except (OSError, ValueError):
        return {}
    return (
        {str(k): float(v) for k, v in data.items() if isinstance(v, int | float)}
        if isinstance(data, dict)
        else {}
    )


def _remember_times(entries: Sequence[CatalogEntry]) -> None:
    path = _times_path()
    if path is None:
        return
    times = _last_times() | {e.path.stem: round(e.seconds, 3) for e in entries}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(times, indent=0, sort_keys=True), encoding="utf-8")
    except OSError:
        pass  # a read-only cache: the next run starts in file order


def render_markdown(entries: Sequence[CatalogEntry]) -> str:
    """The catalog as a Markdown page: a summary table, then each claim with its proofs."""
    lines = [
        "# Proof catalog",
        "",
        "Generated by `layout-algebra proofs` from the theorems in `proofs/`: each file states one",
        "claim and proves it with the package (Z3). `proved` means every query of the claim was",
        "answered unsat on the encoding shown; a claim that a rewrite is *unsafe* is proved by a",
        "refutation whose counterexample was re-checked. CI runs the catalog; every entry must be proved.",
        "",
        "How a claim about a layout is proved (`layout_algebra.prove`):",
        "",
        "- **Concrete sizes** (`injective`, `in_bounds`): the layout is a pipeline of stages;",
        "  each stage is an instance of a *general stage* (same kind and structure, every size a",
        "  symbol) proved injective and in bounds once, for all sizes (the entry *every stage",
        "  kind is injective and in bounds* below shows such lemmas). A layout is proved when each",
        "  stage is checked to be an instance and the boxes chain: no solver call, once the",
        "  general stages it uses are proved.",
        '  `method="direct"` (and any other map) asks one query instead: linear integer arithmetic',
        "  on the digits of the tiled index, falling back to bit-vectors sized by interval bounds.",
        "- **Symbolic sizes**: each stage of the layout is proved under the assumptions, and the",
        "  composition inherits injectivity and bounds; equivalences are one integer query whose",
        "  mixed-radix rewriting has its side conditions proved in a second query.",
        "- **Refutations** carry a counterexample re-checked by evaluating both sides.",
        "",
        "| claim | status | queries | time |",
        "|---|---|---|---|",
    ]
    for e in entries:
        lines.append(
            f"| [{e.claim}](#{e.path.stem}) | {e.status} | {len(e.results)} | {e.seconds * 1000:.0f} ms |"
        )
    for e in entries:
        lines += ["", f'<a id="{e.path.stem}"></a>', f"## {e.claim}", "", f"`proofs/{e.path.name}`", ""]
        lines += [e.explanation, ""]
        for k, r in enumerate(e.results):
            as_claimed = " (as claimed: the rewrite is unsafe)" if e.expects(k) == "refuted" else ""
            lines.append(f"- **{r.status}**{as_claimed}: {r.claim} ({r.encoding}, {r.seconds * 1000:.1f} ms)")
    return "\n".join(lines) + "\n"


def entry_lines(e: CatalogEntry) -> list[str]:
    """The text of one entry: its status, time and claim; under it every result that is not a
    plain proof: a refutation the claim expects reads as what it proves (the claim that
    something fails, proved by a counterexample), any other answer as what went wrong.

    >>> r = ProofResult("refuted", "N % 8 == 0 for all N", 0.004, "integer", {"N": 1})
    >>> e = CatalogEntry(Path("p.py"), "N % 8 == 0 fails for some N", "", (r,), 0.01, ("refuted",))
    >>> print("\\n".join(entry_lines(e)))
    proved         10 ms  N % 8 == 0 fails for some N
             proved by a counterexample to its opposite (as claimed): N % 8 == 0 for all N [integer, 4.0 ms]
               counterexample: N=1
    """
    lines = [f"{e.status:8} {e.seconds * 1000:8,.0f} ms  {e.claim}"]
    for k, r in enumerate(e.results):
        wanted = e.expects(k)
        if r.status == "proved" and wanted == "proved":
            continue
        if r.status == "refuted" and wanted == "refuted":
            head = "proved by a counterexample to its opposite (as claimed): "
            text = str(r).removeprefix("refuted: ")
        elif wanted == "refuted":
            head, text = f"{r.status}, but the claim needs it refuted: ", str(r).split(": ", 1)[-1]
        else:
            head, text = "", str(r)
        lines.append("         " + (head + text).replace("\n", "\n         "))
    return lines


def summary_line(entries: Sequence[CatalogEntry], seconds: float, jobs: int) -> str:
    """The total: how many claims, by status, and the time of the run.

    >>> summary_line([], 1.25, 2)
    '0 claims: 0 proved, 0 refuted, 0 unknown in 1.2 s (2 processes)'
    """
    count = {s: sum(e.status == s for e in entries) for s in ("proved", "refuted", "unknown")}
    queries = sum(len(e.results) for e in entries)
    where = f"{jobs} processes" if jobs > 1 else "1 process"
    more = f", {queries:,} {'query' if queries == 1 else 'queries'}" if queries else ""
    claims = f"{len(entries):,} {'claim' if len(entries) == 1 else 'claims'}"
    return (
        f"{claims}: {count['proved']:,} proved, {count['refuted']:,} refuted, "
        f"{count['unknown']:,} unknown{more} in {seconds:.1f} s ({where})"
    )


def catalog_json(entries: Sequence[CatalogEntry], seconds: float, jobs: int) -> dict[str, Any]:
    """The run as JSON-ready data: ``entries`` (file, claim, status, milliseconds, results with
    what each was expected to be) and ``total`` (counts by status, seconds, processes)."""
    return {
        "entries": [
            {
                "file": e.path.name,
                "claim": e.claim,
                "status": e.status,
                "milliseconds": round(e.seconds * 1000, 1),
                "results": [r.to_dict() | {"expected": e.expects(k)} for k, r in enumerate(e.results)],
            }
            for e in entries
        ],
        "total": {
            "claims": len(entries),
            **{s: sum(e.status == s for e in entries) for s in ("proved", "refuted", "unknown")},
            "seconds": round(seconds, 3),
            "processes": jobs,
        },
    }


def default_jobs() -> int:
    """Processes used when ``--jobs`` is not given: the CPUs this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the catalog; exit status 0 when every entry is proved, 1 otherwise, 2 for bad input
    (no theorem of that name, an empty or missing catalog)."""
    parser = argparse.ArgumentParser(prog="layout-algebra proofs", description=__doc__.splitlines()[0])
    parser.add_argument("--catalog", type=Path, help="directory of theorem files (default: proofs/)")
    parser.add_argument("--write", type=Path, metavar="FILE", help="also write the Markdown report here")
    parser.add_argument("--jobs", "-j", type=int, metavar="N", help="processes (default: every CPU)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("only", nargs="*", help="run only entries whose file name contains one of these")
    args = parser.parse_args(argv)
    jobs = default_jobs() if args.jobs is None else args.jobs
    if jobs < 1:
        print(f"layout-algebra proofs: error: --jobs {jobs} must be at least 1", file=sys.stderr)
        return 2
    try:
        paths = theorem_files(args.catalog, args.only)
    except ValueError as err:
        print(f"layout-algebra proofs: error: {err}", file=sys.stderr)
        return 2
    jobs = min(jobs, len(paths))
    start = time.perf_counter()
    try:
        entries = _run_with_progress(args, paths, jobs)
    except ValueError as err:
        print(f"layout-algebra proofs: error: {err}", file=sys.stderr)
        return 2
    seconds = time.perf_counter() - start
    if args.json:
        print(json.dumps(catalog_json(entries, seconds, jobs), indent=2))
    else:
        print(summary_line(entries, seconds, jobs))
    if args.write:
        args.write.write_text(render_markdown(entries), encoding="utf-8")
    return 0 if entries and all(e.status == "proved" for e in entries) else 1


def _run_with_progress(args: argparse.Namespace, paths: Sequence[Path], jobs: int) -> list[CatalogEntry]:
    """Run the catalog, printing each entry in file order as soon as it and those before it are
    proved (unless ``--json``), under a progress bar on a terminal."""
    order = {path: k for k, path in enumerate(paths)}
    finished: dict[int, CatalogEntry] = {}
    printed = 0
    progress = None
    if sys.stderr.isatty():
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        progress = Progress(
            TextColumn("proving"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.description}"),
            console=Console(stderr=True),
            transient=True,
        )
    task = None

    def on_entry(entry: CatalogEntry) -> None:
        nonlocal printed
        finished[order[entry.path]] = entry
        if progress is not None and task is not None:
            progress.update(task, advance=1, description=entry.path.stem)
        while printed in finished:
            if not args.json:
                for line in entry_lines(finished[printed]):
                    print(line, flush=True)
            printed += 1

    if progress is None:
        return prove_files(paths, jobs=jobs, on_entry=on_entry)

    def start() -> None:
        nonlocal task
        progress.start()
        task = progress.add_task("", total=len(paths))

    try:
        return prove_files(paths, jobs=jobs, on_entry=on_entry, on_start=start)
    finally:
        progress.stop()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
