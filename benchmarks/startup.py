"""Start-up cost: how long ``import layout_algebra`` and short CLI commands take, cold.

Each case is run as a fresh process (``python -c ...`` or ``python -m layout_algebra ...``),
``--runs`` times; the table gives the best and the median wall time. The baseline is a bare
``python -c pass`` in the same run (the interpreter's own start-up, which no package can
remove), and, with ``--before REV``, the same cases on the package as it was at git revision
``REV`` (exported to a temporary directory and put first on ``PYTHONPATH``).

    python benchmarks/startup.py                      # this checkout
    python benchmarks/startup.py --before aed3719     # ... and the package at aed3719

Which modules a case loads is printed too (SymPy, Z3, NumPy, matplotlib: loaded or not).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHAPE = "bf16[8,1,1280,16384]{3,2,0,1:T(8,128)(2,1)}"
HEAVY = ("sympy", "z3", "numpy", "matplotlib")

#: (label, python arguments). The import cases also report which heavy modules got loaded.
CASES: tuple[tuple[str, list[str]], ...] = (
    ("python -c pass (baseline)", ["-c", "pass"]),
    ("import layout_algebra", ["-c", "import layout_algebra"]),
    (
        "import + physical_size_in_bytes",
        ["-c", f"import layout_algebra as la; la.physical_size_in_bytes({SHAPE!r})"],
    ),
    ("layout-algebra --help", ["-m", "layout_algebra", "--help"]),
    ("layout-algebra size SHAPE", ["-m", "layout_algebra", "size", SHAPE]),
    ("layout-algebra explain SHAPE", ["-m", "layout_algebra", "explain", SHAPE]),
)

PROBE = "import sys; import layout_algebra; print(','.join(m for m in {heavy!r} if m in sys.modules))"


def wall_times(args: list[str], runs: int, env: dict[str, str]) -> list[float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, *args],
            env=env,
            cwd=env["PYTHONPATH"].split(os.pathsep)[0],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        times.append(time.perf_counter() - start)
    return times


def heavy_modules_loaded(env: dict[str, str]) -> str:
    out = subprocess.run(
        [sys.executable, "-c", PROBE.format(heavy=HEAVY)],
        env=env,
        cwd=env["PYTHONPATH"].split(os.pathsep)[0],  # the working directory comes first on sys.path
        check=True,
        capture_output=True,
        text=True,
    )
    return out.stdout.strip() or "none"


def environment(package_root: Path) -> dict[str, str]:
    """The environment that imports the package under ``package_root`` (run from there too)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(package_root), env.get("PYTHONPATH", "")]))
    return env


def export(rev: str, into: Path) -> Path:
    """The package at git revision ``rev``, unpacked under ``into``."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", rev, "layout_algebra"], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--before", metavar="REV", help="also time the package at this git revision")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        trees = [("now", environment(ROOT))]
        if args.before:
            trees.insert(0, (args.before, environment(export(args.before, Path(tmp)))))
        print(
            f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, {args.runs} runs"
        )
        for name, env in trees:
            print(f"\n{name}: heavy modules loaded by `import layout_algebra`: {heavy_modules_loaded(env)}")
        print("\n| case | " + " | ".join(f"{n} best | {n} median" for n, _ in trees) + " |")
        print("|---|" + "---:|---:|" * len(trees))
        for label, case in CASES:
            cells = []
            for _, env in trees:
                times = wall_times(case, args.runs, env)
                cells += [f"{min(times) * 1000:.0f} ms", f"{statistics.median(times) * 1000:.0f} ms"]
            print(f"| {label} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
