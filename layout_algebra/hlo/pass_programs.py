"""Many programs' pipelines at once: a model zoo of dump directories, in processes or on a cluster.

A *program* is one XLA dump directory (``--xla_dump_to=DIR --xla_dump_hlo_pass_re=.*``). A
*zoo* is a directory whose sub-directories are programs. :func:`programs_of` finds them;
:func:`validate_programs` validates each with :func:`layout_algebra.hlo.passes.validate_passes`
— in this process, in a pool of processes (``jobs``: one pass pair per task, the pairs of all
programs in one pool), or on a Dask cluster (``cluster``: the
address of a running scheduler, or ``"local:N"`` for a local cluster of N worker processes).
The answers do not depend on where a program ran: each is the same pure function of its files.

Why Dask (``pip install 'layout_algebra[cluster]'``): a corpus that outgrows one machine needs
an existing engine, not a scheduler of our own; Dask's ``Client.map`` over picklable jobs is all
this needs, it is pure Python from PyPI, and a worker needs nothing but this package.
``benchmarks/passes_cluster.py`` measures it beside Ray and the process pool on the same corpus.

>>> import tempfile, pathlib
>>> zoo = pathlib.Path(tempfile.mkdtemp())
>>> (zoo / "empty").mkdir()
>>> programs_of([str(zoo)])
Traceback (most recent call last):
    ...
layout_algebra.hlo.passes.DumpDirectoryError: '...' holds no per-pass module files and no sub-directory that does (module_NNNN.<name>.NNNN.<pipeline>.after_<pass>...txt)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from layout_algebra.hlo.pass_jobs import Progress
from layout_algebra.hlo.passes import (
    DEFAULT_FLOAT_RULES,
    DumpDirectoryError,
    PairJob,
    ValidationReport,
    pair_jobs,
    read_dump_directory,
    run_pair_jobs,
    validate_passes,
)

__all__ = ["Program", "ProgramJob", "programs_of", "summary_rows", "validate_program", "validate_programs"]


@dataclass(frozen=True)
class Program:
    """One program of a zoo: its name (the folder's) and its dump directory."""

    name: str
    directory: str


@dataclass(frozen=True)
class ProgramJob:
    """What a worker needs to validate one program (picklable: plain values only)."""

    directory: str
    timeout_ms: int
    float_rules: tuple[str, ...]


def programs_of(directories: Sequence[str]) -> list[Program]:
    """The programs named by ``directories``: a dump directory is one program; a directory whose
    sub-directories hold dumps (and that holds none itself) is a zoo of them."""
    found: list[Program] = []
    for directory in directories:
        path = Path(directory)
        if not path.is_dir():
            raise DumpDirectoryError(f"{directory!r} is not a directory")
        if read_dump_directory(path)[0]:
            found.append(Program(path.resolve().name, str(path)))
            continue
        inner = [sub for sub in sorted(path.iterdir()) if sub.is_dir() and read_dump_directory(sub)[0]]
        if not inner:
            raise DumpDirectoryError(
                f"{directory!r} holds no per-pass module files and no sub-directory that does "
                "(module_NNNN.<name>.NNNN.<pipeline>.after_<pass>...txt)"
            )
        found.extend(Program(sub.name, str(sub)) for sub in inner)
    return found


def validate_program(job: ProgramJob) -> ValidationReport:
    """One program's report: the unit of work of a pool or a cluster."""
    return validate_passes(job.directory, timeout_ms=job.timeout_ms, float_rules=job.float_rules)


def validate_programs(
    programs: Sequence[Program],
    *,
    timeout_ms: int = 10_000,
    float_rules: Sequence[str] = tuple(DEFAULT_FLOAT_RULES),
    jobs: int = 0,
    cluster: str | None = None,
    progress: bool | None = False,
) -> list[ValidationReport]:
    """Each program's report, in the order given.

    ``jobs``: pass pairs (of all programs) validated at once, in processes (0: all cores; 1: in
    this process). ``cluster``: a Dask scheduler's address (``tcp://host:8786``), or
    ``"local:N"`` for a local cluster of ``N`` worker processes started and stopped here, one
    program per task; it needs the ``cluster`` extra. ``progress``: a progress bar over the
    pairs on stderr (``None``: when stderr is a terminal).
    """
    if cluster:
        work = [ProgramJob(p.directory, timeout_ms, tuple(float_rules)) for p in programs]
        return _on_dask(work, cluster)
    pairs: list[PairJob] = []
    spans: list[tuple[int, int, tuple[str, ...]]] = []
    for program in programs:
        found, skipped = read_dump_directory(program.directory)
        mine = pair_jobs(found, timeout_ms=timeout_ms, float_rules=float_rules)
        spans.append((len(pairs), len(pairs) + len(mine), tuple(skipped)))
        pairs.extend(mine)
    title = f"validating {programs[0].name}" if len(programs) == 1 else f"validating {len(programs)} programs"
    with Progress(len(pairs), title, Progress.wanted(progress)) as bar:
        results = run_pair_jobs(pairs, jobs=jobs, progress=bar)
    return [
        ValidationReport(Path(program.directory), tuple(results[begin:end]), skipped)
        for program, (begin, end, skipped) in zip(programs, spans, strict=True)
    ]


def _on_dask(work: list[ProgramJob], cluster: str) -> list[ValidationReport]:
    try:
        from distributed import Client, LocalCluster
    except ImportError as err:
        raise DumpDirectoryError(
            f"--cluster {cluster!r} needs Dask's distributed scheduler: pip install 'layout_algebra[cluster]'"
        ) from err
    if cluster.startswith("local:"):
        count = cluster.removeprefix("local:")
        if not count.isdigit() or int(count) < 1:
            raise DumpDirectoryError(f"--cluster {cluster!r}: write local:N with N a number of workers >= 1")
        with (
            LocalCluster(
                n_workers=int(count), threads_per_worker=1, processes=True, dashboard_address=None
            ) as local,
            Client(local) as client,
        ):
            return list(client.gather(client.map(validate_program, work, pure=False)))
    with Client(cluster) as client:
        return list(client.gather(client.map(validate_program, work, pure=False)))


def summary_rows(programs: Sequence[Program], reports: Sequence[ValidationReport]) -> list[dict[str, object]]:
    """One row per program: its pairs, and the changed pairs from layout assignment on by verdict."""
    rows: list[dict[str, object]] = []
    for program, report in zip(programs, reports, strict=True):
        late = report.counts(after_layout_assignment=True)
        rows.append(
            {
                "program": program.name,
                "pairs": len(report.results),
                "changed_from_layout_assignment": late["proved"] + late["refuted"] + late["unknown"],
                **{status: late[status] for status in ("proved", "refuted", "unknown")},
                "seconds": round(sum(r.seconds for r in report.results), 3),
            }
        )
    return rows
