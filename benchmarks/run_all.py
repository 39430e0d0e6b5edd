"""Run every benchmark script in ``benchmarks/`` and keep what each prints.

Each ``benchmarks/*.py`` (but this one) runs in its own process with this Python, one after
the other (they measure speed: running them side by side would disturb each other), from
the repository root. What a script prints goes to ``benchmarks/results/<script>.md``
under a header with the command, the machine, the date and how long it ran; the scripts'
own tables (the ratio to the baseline measured in the same run) are what
``benchmarks/README.md`` quotes. A script that fails is reported, and the others still run;
the exit status is 1 if any failed.

Run:  .venv/bin/python benchmarks/run_all.py [--only NAME ...] [--list] [--timeout SECONDS]
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "results"


def scripts() -> list[Path]:
    """Every benchmark script present, in name order (this runner excluded)."""
    return sorted(
        p for p in HERE.glob("*.py") if p.name != Path(__file__).name and not p.name.startswith("_")
    )


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        load = ", load average {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())
    except OSError:
        load = ""
    return f"{cpu}, {os.cpu_count()} CPUs, {platform.system()} {platform.release()}, Python {platform.python_version()}{load}"


def run(script: Path, timeout: float) -> tuple[bool, str, float]:
    start = time.perf_counter()
    try:
        done = subprocess.run(
            [sys.executable, str(script)], cwd=ROOT, capture_output=True, text=True, timeout=timeout
        )
        ok, output = (
            done.returncode == 0,
            done.stdout + (f"\n[stderr]\n{done.stderr}" if done.returncode else ""),
        )
    except subprocess.TimeoutExpired as err:
        ok, output = False, f"{err.stdout or ''}\n[timed out after {timeout:.0f} s]"
    return ok, output if isinstance(output, str) else output.decode(), time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--only", nargs="*", default=[], help="run only scripts whose name contains one of these"
    )
    parser.add_argument("--list", action="store_true", help="list the scripts and stop")
    parser.add_argument("--timeout", type=float, default=3600, help="seconds per script (default 3600)")
    args = parser.parse_args(argv)
    chosen = [p for p in scripts() if not args.only or any(word in p.stem for word in args.only)]
    if args.list:
        print("\n".join(p.name for p in chosen))
        return 0
    RESULTS.mkdir(exist_ok=True)
    failed = []
    for script in chosen:
        print(f"running {script.name} ...", flush=True)
        ok, output, seconds = run(script, args.timeout)
        header = (
            f"# {script.name}\n\n"
            f"Command: `python benchmarks/{script.name}` (from `benchmarks/run_all.py`)\n"
            f"Machine: {machine()}\n"
            f"Date: {time.strftime('%Y-%m-%d %H:%M %Z')}; ran {seconds:.0f} s; "
            f"{'ok' if ok else 'FAILED'}\n\n"
        )
        (RESULTS / f"{script.stem}.md").write_text(header + output, encoding="utf-8")
        print(
            f"  {'ok' if ok else 'FAILED'} in {seconds:.0f} s -> benchmarks/results/{script.stem}.md",
            flush=True,
        )
        if not ok:
            failed.append(script.name)
    if failed:
        print(f"failed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
