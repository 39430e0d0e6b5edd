"""Start-up cost: how long ``import layout_algebra`` and CLI commands take to their first output, cold.

Each case is run as a fresh process (``python -c ...`` or ``python -m layout_algebra ...``),
``--runs`` times, interleaved case by case (so that a change in the machine's load reaches
every case alike); the table gives the median time to the process's first byte of output
and to its end, and the median of the ratio to a bare ``python -c pass`` run right before it
(the interpreter's own start-up, which no package can remove). With ``--before REV``, the
same cases on the package as it was at git revision ``REV`` (exported to a temporary
directory and put first on ``PYTHONPATH``).

Every process runs with the package's modules compiled beforehand (``compileall``, untimed)
and bytecode read as an installed package reads it, whatever ``PYTHONDONTWRITEBYTECODE`` says.

The targets (issue "fast at every size"): a command that needs no solver prints within
0.3 s, one that needs SymPy or Z3 within 0.5 s; the first bitcast decision in a fresh
process (after ``import layout_algebra``) takes under 50 ms when it needs no solver — its
own case prints the decision's time, measured inside the process.

    python benchmarks/startup.py                      # this checkout
    python benchmarks/startup.py --before aed3719     # ... and the package at aed3719

Which modules a case loads is printed too (SymPy, Z3, NumPy, matplotlib: loaded or not).

Baselines, in the same interleaved rounds: ``python -c 'print()'`` (the interpreter), ``python
-c 'import numpy'`` and a process that imports NumPy and makes one plain ``np.copyto`` of the
decided array's 8 KiB (the cheapest NumPy answer a fresh process can give); for the first
decision, the same ``import numpy`` + ``np.copyto`` timed inside a process that imported the
package. The load average is printed before and after (on a shared machine, compare ratios).
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

#: The bitcast decision of the last CLI case, reshaping whole tiles: decided with no solver.
SRC, DST = "f32[16,128]{1,0:T(8,128)}", "f32[2,8,128]{2,1,0:T(8,128)}"

#: The layout of the ``pack`` case's array (written to a temporary ``.npy`` file before the runs).
PACKED = "s8[2048,2048]{1,0:T(32,128)(4,1)}"

#: (label, needs (a solver or library the target allows for: "none", "SymPy", "Z3"), python arguments).
CASES: tuple[tuple[str, str, list[str]], ...] = (
    ("import layout_algebra", "none", ["-c", "import layout_algebra"]),
    (
        "import + physical_size_in_bytes",
        "none",
        ["-c", f"import layout_algebra as la; print(la.physical_size_in_bytes({SHAPE!r}))"],
    ),
    ("layout-algebra --help", "none", ["-m", "layout_algebra", "--help"]),
    ("layout-algebra size SHAPE", "none", ["-m", "layout_algebra", "size", SHAPE]),
    (
        "layout-algebra tpu-layout bf16 1024 1024",
        "none",
        ["-m", "layout_algebra", "tpu-layout", "bf16", "1024", "1024"],
    ),
    ("layout-algebra validate SHAPE", "none", ["-m", "layout_algebra", "validate", SHAPE]),
    ("layout-algebra access SHAPE", "none", ["-m", "layout_algebra", "access", SHAPE]),
    ("layout-algebra explain SHAPE", "SymPy", ["-m", "layout_algebra", "explain", SHAPE]),
    ("layout-algebra codegen SHAPE", "Z3", ["-m", "layout_algebra", "codegen", SHAPE]),
    ("layout-algebra prove injective SHAPE", "Z3", ["-m", "layout_algebra", "prove", "injective", SHAPE]),
    ("layout-algebra bitcast SRC DST", "none", ["-m", "layout_algebra", "bitcast", SRC, DST]),
    (
        "layout-algebra pack ARRAY.npy (4 MB s8)",
        "none",
        ["-m", "layout_algebra", "pack", "{npy}", PACKED, "-o", "{npy}.bin"],
    ),
)

#: A fresh process that imports the package, then times its first bitcast decision (printed, in ms).
FIRST_DECISION = (
    "import time, layout_algebra as la\n"
    "t = time.perf_counter()\n"
    f"r = la.reshape_is_bitcast({SRC!r}, {DST!r})\n"
    "print((time.perf_counter() - t) * 1000, r.status)\n"
)
#: The baseline of the first decision: loading NumPy and one plain copy of the same 8 KiB, in a
#: process that imported the package (printed, in ms).
COPYTO = (
    "import time, layout_algebra\n"
    "t = time.perf_counter()\n"
    "import numpy as np\n"
    "a = np.arange(2048, dtype=np.float32); b = np.empty_like(a); np.copyto(b, a)\n"
    "print((time.perf_counter() - t) * 1000, 'copied')\n"
)
#: Process-level baselines (label, python arguments), timed in the same rounds as the cases.
BASELINES: tuple[tuple[str, list[str]], ...] = (
    ("python -c 'import numpy'", ["-c", "import numpy; print()"]),
    (
        "python: import numpy, one np.copyto (8 KiB)",
        [
            "-c",
            "import numpy as np; a = np.zeros(2048, np.float32); b = np.empty_like(a); np.copyto(b, a); print()",
        ],
    ),
)
#: Targets in seconds to the first output, by what a case needs.
TARGETS = {"none": 0.3, "SymPy": 0.5, "Z3": 0.5}

PROBE = "import sys; import layout_algebra; print(','.join(m for m in {heavy!r} if m in sys.modules))"


def first_output(args: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """(seconds to the first byte on stdout, seconds to the end, the output) of one fresh process."""
    start = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, *args],
        env=env,
        cwd=env["PYTHONPATH"].split(os.pathsep)[0],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert process.stdout is not None
    first = process.stdout.read(1)
    at_first = time.perf_counter() - start
    rest = process.stdout.read()
    process.wait()
    if process.returncode not in (0, 1):
        raise RuntimeError(f"{args} exited with {process.returncode}")
    return at_first, time.perf_counter() - start, (first + rest).decode()


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
    """The environment that imports the package under ``package_root`` (run from there too),
    writing and reading compiled bytecode as an installed package does, even where the
    environment says not to write it (``PYTHONDONTWRITEBYTECODE``): a start-up that compiles
    every module is not a user's."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(package_root), env.get("PYTHONPATH", "")]))
    return env


def compile_package(package_root: Path) -> None:
    """Compile the package's modules once, untimed (``__pycache__`` beside them)."""
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(package_root / "layout_algebra")],
        check=True,
        env=environment(package_root),
    )


def export(rev: str, into: Path) -> Path:
    """The package at git revision ``rev``, unpacked under ``into``."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", rev, "layout_algebra"], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def load_average() -> str:
    """The 1, 5 and 15 minute load averages (``-`` where the system has none)."""
    return "{:.2f} {:.2f} {:.2f}".format(*os.getloadavg()) if hasattr(os, "getloadavg") else "-"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=11)
    parser.add_argument("--before", metavar="REV", help="also time the package at this git revision")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        import numpy as np

        npy = str(Path(tmp) / "array.npy")
        rows, cols = (int(n) for n in PACKED.split("[")[1].split("]")[0].split(","))
        np.save(npy, np.random.default_rng(0).integers(-128, 128, (rows, cols), dtype=np.int8))
        global CASES
        CASES = tuple((label, needs, [a.replace("{npy}", npy) for a in case]) for label, needs, case in CASES)
        trees = [("now", environment(ROOT))]
        compile_package(ROOT)
        if args.before:
            trees.insert(0, (args.before, environment(export(args.before, Path(tmp)))))
            compile_package(Path(tmp))
        load = f", load average {load_average()}"
        print(
            f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
            f"{args.runs} runs, {time.strftime('%Y-%m-%d %H:%M %Z')}{load}"
        )
        for name, env in trees:
            print(f"\n{name}: heavy modules loaded by `import layout_algebra`: {heavy_modules_loaded(env)}")
        for name, env in trees:
            print(f"\n{name}:\n")
            print("| case | needs | first output | end | first output / python -c pass | target |")
            print("|---|---|---:|---:|---:|---|")
            samples: dict[str, list[tuple[float, float, float]]] = {label: [] for label, _, _ in CASES}
            samples |= {label: [] for label, _ in BASELINES}
            baseline: list[float] = []
            decisions: list[tuple[float, float, float]] = []
            for _ in range(args.runs):
                for label, case in [*BASELINES, *((label, case) for label, _, case in CASES)]:
                    python = first_output(["-c", "print()"], env)[0]
                    at_first, at_end, _ = first_output(case, env)
                    samples[label].append((at_first, at_end, at_first / python))
                    baseline.append(python)
                _, at_end, out = first_output(["-c", FIRST_DECISION], env)
                copied = float(first_output(["-c", COPYTO], env)[2].split()[0]) / 1000
                decided = float(out.split()[0]) / 1000
                decisions.append((decided, at_end, decided / copied))
            python = statistics.median(baseline)
            print(f"| python -c 'print()' (baseline) | - | {python * 1000:.0f} ms | | 1.0 | |")
            for label, _ in BASELINES:
                first, end, ratio = (statistics.median(c) for c in zip(*samples[label], strict=True))
                print(
                    f"| {label} (baseline) | - | {first * 1000:.0f} ms | {end * 1000:.0f} ms | {ratio:.1f} | |"
                )
            for label, needs, _ in CASES:
                first, end, ratio = (
                    statistics.median(column) for column in zip(*samples[label], strict=True)
                )
                target = TARGETS[needs]
                verdict = "meets" if first <= target else "MISSES"
                print(
                    f"| {label} | {needs} | {first * 1000:.0f} ms | {end * 1000:.0f} ms | {ratio:.1f} | "
                    f"< {target * 1000:.0f} ms: {verdict} |"
                )
            decision = statistics.median(d for d, _, _ in decisions)
            verdict = "meets" if decision < 0.05 else "MISSES"
            print(
                f"\nfirst bitcast decision in a fresh process (after the import; {SRC} -> {DST}): "
                f"{decision * 1000:.0f} ms median (the whole process "
                f"{statistics.median(e for _, e, _ in decisions) * 1000:.0f} ms); "
                f"{statistics.median(r for _, _, r in decisions):.2f} x the time to import NumPy and make "
                f"one np.copyto of its 8 KiB in the same kind of process; target < 50 ms: {verdict}"
            )
        print(f"\nload average at the end: {load_average()}")


if __name__ == "__main__":
    main()
