"""Validating a zoo of XLA pipelines: serially, in a process pool, on Dask and on Ray.

Each engine validates the same programs (the dumps shipped in ``tests/data/pass_dumps``, or the
directories given) with two workers; the answers must be the same as the serial run's (this
script checks it), and the wall time of each is printed beside the serial one, as a ratio.
Ray is measured only when it is installed (``pip install ray``); Dask needs the ``cluster``
extra. The choice written in ``layout_algebra/hlo/pass_programs.py`` (Dask) rests on this run
and on what each asks of a user (see ``benchmarks/README.md``).

    python benchmarks/passes_cluster.py [--workers 2] [DIR ...]
"""

from __future__ import annotations

import argparse
import platform
import time
from pathlib import Path

from layout_algebra.hlo.pass_programs import ProgramJob, programs_of, validate_program, validate_programs
from layout_algebra.hlo.passes import DEFAULT_FLOAT_RULES

ROOT = Path(__file__).resolve().parent.parent


def answers(reports) -> list[tuple[str, str, str]]:
    return [(r.module, r.later.after, r.status) for report in reports for r in report.results]


def on_ray(jobs: list[ProgramJob], workers: int):
    import ray

    ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False)
    try:
        remote = ray.remote(validate_program)
        return ray.get([remote.remote(job) for job in jobs])
    finally:
        ray.shutdown()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directories", nargs="*", default=[str(ROOT / "tests" / "data" / "pass_dumps")])
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    programs = programs_of(args.directories)
    jobs = [ProgramJob(p.directory, 10_000, tuple(DEFAULT_FLOAT_RULES)) for p in programs]
    print(f"{platform.processor() or platform.machine()}, {len(programs)} programs, {args.workers} workers")

    start = time.perf_counter()
    serial = validate_programs(programs, jobs=1)
    base = time.perf_counter() - start
    print(f"serial          {base:7.1f} s   1.00x")
    engines = {
        "process pool": lambda: validate_programs(programs, jobs=args.workers),
        "dask (local)": lambda: validate_programs(programs, cluster=f"local:{args.workers}"),
        "ray (local)": lambda: on_ray(jobs, args.workers),
    }
    for name, run in engines.items():
        start = time.perf_counter()
        try:
            reports = run()
        except ImportError as err:
            print(f"{name:15} not installed ({err})")
            continue
        seconds = time.perf_counter() - start
        same = answers(reports) == answers(serial)
        print(f"{name:15} {seconds:7.1f} s   {base / seconds:.2f}x   same answers: {same}")
        assert same, name


if __name__ == "__main__":
    main()
