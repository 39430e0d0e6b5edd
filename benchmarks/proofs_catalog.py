"""The proof catalog from scratch: ``layout-algebra proofs`` with an empty lemma cache.

Each round runs, one after the other, fresh processes: ``python -c 'print()'`` (the
interpreter's start-up, the baseline), then the whole catalog with an empty cache directory
(``LAYOUT_ALGEBRA_CACHE_DIR`` pointed at a new folder: every claim and every lemma proved
from scratch) on every CPU (the default ``--jobs``) and on one (``--jobs 1``). It reports the
median wall-clock time, the median CPU time of the process and its workers (what the catalog
costs, whatever the machine's load), their ratio to the baseline, and, from the ``--json``
output of the last one-process run, the claims that cost most and their slowest queries.

The target (issue "fast at every size"): the catalog in under 5 s on this machine, every
claim proved from scratch.

    python benchmarks/proofs_catalog.py [--rounds 3] [--top 12] [--before REV]

``--before REV``: also the package and catalog as they were at git revision ``REV``
(exported to a temporary directory), in the same rounds, one run on every CPU per round.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET_SECONDS = 5.0


def load_average() -> str:
    return "{:.2f} {:.2f} {:.2f}".format(*os.getloadavg()) if hasattr(os, "getloadavg") else "-"


def timed(args: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """(wall seconds, CPU seconds of the process and its children, stdout) of one fresh process,
    run in the first folder of its ``PYTHONPATH`` (the package, and ``proofs/`` beside it)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    cwd = env["PYTHONPATH"].split(os.pathsep)[0]
    run = subprocess.run([sys.executable, *args], env=env, cwd=cwd, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if run.returncode not in (0, 1):  # 1: some claim not proved (reported by the caller)
        raise SystemExit(f"{args} exited with {run.returncode}: {run.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, run.stdout


#: Runs that did not prove every claim (a timeout under load), as (which run, the claims missed).
MISSED: list[tuple[str, list[str]]] = []


def catalog(jobs: int | None, env: dict[str, str]) -> tuple[float, float, dict]:
    """One run of the catalog with a new, empty cache directory."""
    with tempfile.TemporaryDirectory() as cache:
        args = ["-m", "layout_algebra", "proofs", "--json", *([] if jobs is None else ["--jobs", str(jobs)])]
        wall, cpu, out = timed(args, {**env, "LAYOUT_ALGEBRA_CACHE_DIR": cache})
    report = json.loads(out)
    total = report["total"]
    if total["proved"] != total["claims"]:
        missed = [e["file"] for e in report["entries"] if e["status"] != "proved"]
        MISSED.append((f"{env['PYTHONPATH'].split(os.pathsep)[0]}, {jobs or 'all'} jobs", missed))
    return wall, cpu, report


def export(rev: str, into: Path) -> dict[str, str]:
    """The environment running the package and catalog of git revision ``rev``, unpacked under ``into``."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", rev, "layout_algebra", "proofs"], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return environment(into)


def environment(root: Path) -> dict[str, str]:
    """The environment running the package under ``root``, its modules compiled once (untimed)
    and their bytecode read as an installed package reads it, whatever
    ``PYTHONDONTWRITEBYTECODE`` says."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("LAYOUT_ALGEBRA_LEMMA_CACHE", "PYTHONDONTWRITEBYTECODE")
    }
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(root), env.get("PYTHONPATH", "")]))
    folders = [str(root / "layout_algebra"), str(root / "proofs")]
    subprocess.run([sys.executable, "-m", "compileall", "-q", *folders], check=True, env=env)
    return env


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--top", type=int, default=12, help="claims to list, costliest first")
    parser.add_argument("--before", metavar="REV", help="also time the package and catalog at this revision")
    args = parser.parse_args()
    folder = tempfile.TemporaryDirectory()
    before = export(args.before, Path(folder.name)) if args.before else None
    env = environment(ROOT)
    print(
        f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"{args.rounds} rounds, {time.strftime('%Y-%m-%d %H:%M %Z')}, load average {load_average()}"
    )
    rows: dict[str, list[tuple[float, float]]] = {"python": [], "all CPUs": [], "1 process": []}
    if before is not None:
        rows[f"all CPUs, at {args.before}"] = []
    report: dict = {}
    for _ in range(args.rounds):
        wall, cpu, _ = timed(["-c", "print()"], env)
        rows["python"].append((wall, cpu))
        if before is not None:
            wall, cpu, _ = catalog(None, before)
            rows[f"all CPUs, at {args.before}"].append((wall, cpu))
        wall, cpu, _ = catalog(None, env)
        rows["all CPUs"].append((wall, cpu))
        wall, cpu, report = catalog(1, env)
        rows["1 process"].append((wall, cpu))
    python = statistics.median(w for w, _ in rows["python"])
    total = report["total"]
    if MISSED:
        print(f"\n{total['claims']} claims; runs that did not prove them all: {MISSED}\n")
    else:
        print(f"\n{total['claims']} claims, all proved from an empty cache in every run\n")
    print("| run | wall (median) | CPU (median) | wall / python -c pass | target |")
    print("|---|---:|---:|---:|---|")
    for name, samples in rows.items():
        wall = statistics.median(w for w, _ in samples)
        cpu = statistics.median(c for _, c in samples)
        target = "" if name == "python" else ("< 5 s: meets" if wall < TARGET_SECONDS else "< 5 s: MISSES")
        label = "python -c 'print()' (baseline)" if name == "python" else f"layout-algebra proofs, {name}"
        print(f"| {label} | {wall:.2f} s | {cpu:.2f} s | {wall / python:.0f} | {target} |")
    entries = sorted(report["entries"], key=lambda e: -e["milliseconds"])
    spent = sum(e["milliseconds"] for e in entries)
    print(f"\nthe costliest claims of the last one-process run ({spent / 1000:.1f} s in claims):\n")
    print("| claim | ms | share | queries | slowest query (ms, encoding) |")
    print("|---|---:|---:|---:|---|")
    for e in entries[: args.top]:
        slowest = max(e["results"], key=lambda r: r["milliseconds"], default=None)
        query = "" if slowest is None else f"{slowest['milliseconds']:.0f}, {slowest['encoding']}"
        print(
            f"| `{e['file']}` | {e['milliseconds']:.0f} | {e['milliseconds'] / spent:.0%} | "
            f"{len(e['results'])} | {query} |"
        )
    print(f"\nload average at the end: {load_average()}")
    folder.cleanup()


if __name__ == "__main__":
    main()
