"""``layout-algebra validate-passes``: did each XLA pass in a dump directory keep the meaning?"""

from __future__ import annotations

import argparse
import json
import sys

from layout_algebra.model.errors import InvalidArgumentError

__all__ = ["register", "run"]


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the command's parser."""
    p = subparsers.add_parser(
        "validate-passes",
        help="prove or refute that every XLA pass in a per-pass dump directory kept the program's meaning",
        description="Read DIR as written by XLA_FLAGS='--xla_dump_to=DIR --xla_dump_hlo_pass_re=.*'\n"
        "and answer, for each consecutive pair of per-pass modules: unchanged, proved,\n"
        "refuted (a root element that differs) or unknown (with the reason). Pairs up to\n"
        "layout assignment are compared logically (layouts free), later ones physically\n"
        "(bit-exact root buffers). Compute ops (dot, convolution, reduce, ...) are\n"
        "uninterpreted: equal ops on provably equal operands. See docs/passes.md.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="exit status: 0 no pair refuted, 1 some pair refuted, 2 bad input.\n\n"
        "examples:\n  layout-algebra validate-passes /tmp/dump\n"
        "  layout-algebra validate-passes /tmp/dump --json --all\n"
        "  layout-algebra validate-passes zoo/ --jobs 2 --html report.html   (zoo/<program>/<dump files>)",
    )
    p.add_argument(
        "directories",
        metavar="DIR",
        nargs="+",
        help="an XLA dump directory, or a directory of them (a model zoo: one program per sub-directory)",
    )
    p.add_argument("--json", action="store_true", help="print the report as one JSON object")
    p.add_argument(
        "--html",
        metavar="REPORT.html",
        help="also write one self-contained page: the pipeline as a timeline, each changed pair's difference",
    )
    p.add_argument(
        "--jobs",
        type=int,
        default=0,
        metavar="N",
        help="pass pairs validated at once, in processes, each reading only its two modules "
        "(default: all cores; 1: in this process); the answers are the same, in pass order",
    )
    p.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="a progress bar on stderr (default: when stderr is a terminal and the output is not --json)",
    )
    p.add_argument(
        "--cluster",
        metavar="ADDRESS",
        help="validate the programs on a Dask cluster: a scheduler's address (tcp://host:8786), or "
        "local:N for a local cluster of N worker processes (needs the [cluster] extra)",
    )
    p.add_argument("--all", action="store_true", help="also list the unchanged pairs")
    p.add_argument("--timeout-ms", type=int, default=10_000, help="per solver query (default 10000)")
    p.add_argument(
        "--no-float-rules",
        action="store_true",
        help="elementwise float ops fully uninterpreted: no proof rests on the float rules "
        "(exact-ops, correctly-rounded, mixed-precision, excess-precision, ...; see docs/passes.md)",
    )
    p.add_argument(
        "--no-excess-precision",
        action="store_true",
        help="float values only at the precision the HLO states: a pass that changes precision "
        "(bfloat16-propagation, float-type-correction) is refuted where running it shows a difference, "
        "never proved with precision erased (XLA's --xla_allow_excess_precision=false)",
    )
    p.add_argument(
        "--max-memory",
        type=float,
        metavar="GIB",
        help="cap the memory of this process (and of each --jobs process) at GIB gibibytes: a pair "
        "that needs more is unknown (ran out of memory) instead of the whole run being killed",
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from layout_algebra.hlo.pass_programs import programs_of, summary_rows, validate_programs
    from layout_algebra.hlo.passes import DEFAULT_FLOAT_RULES

    if args.max_memory is not None:  # inherited by the --jobs processes
        _cap_memory(args.max_memory)
    programs = programs_of(args.directories)
    reports = validate_programs(
        programs,
        timeout_ms=args.timeout_ms,
        float_rules=()
        if args.no_float_rules
        else tuple(
            r for r in DEFAULT_FLOAT_RULES if not (args.no_excess_precision and r == "excess-precision")
        ),
        jobs=args.jobs,
        cluster=args.cluster,
        progress=(not args.json and sys.stderr.isatty()) if args.progress is None else args.progress,
    )
    _print_out_of_memory(reports, args.max_memory)
    if args.html:
        _write_html(args.html, programs, reports)
    if args.json:
        if len(reports) == 1:
            print(json.dumps(reports[0].to_dict()))
        else:
            programs_json = [
                {"program": p.name, **r.to_dict()} for p, r in zip(programs, reports, strict=True)
            ]
            print(json.dumps({"programs": programs_json, "summary": summary_rows(programs, reports)}))
    else:
        for report in reports:
            _print_table(report, show_all=args.all)
        if len(reports) > 1:
            _print_summary(summary_rows(programs, reports))
    return 1 if any(r.counts()["refuted"] for r in reports) else 0


def _print_out_of_memory(reports: list, cap: float | None) -> None:
    """One line on stderr when some pairs hit the memory cap: how many, which, what to do."""
    from layout_algebra.hlo.passes import OUT_OF_MEMORY

    hit = [r for report in reports for r in report.results if r.reason == OUT_OF_MEMORY]
    if hit:
        names = ", ".join(f"{r.later.number:04d} {r.later.after}" for r in hit[:5])
        more = f" and {len(hit) - 5} more" if len(hit) > 5 else ""
        limit = f"the memory cap (--max-memory {cap:g} GiB)" if cap is not None else "the memory limit"
        print(
            f"{len(hit)} pair(s) ran out of memory under {limit} and are unknown: {names}{more}; "
            "raise --max-memory or use fewer --jobs",
            file=sys.stderr,
        )


def _print_summary(rows: list[dict[str, object]]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title="Programs (changed pairs from layout assignment on)")
    for column in ("program", "pairs", "changed", "proved", "refuted", "unknown", "proved %", "s"):
        table.add_column(column, justify="left" if column == "program" else "right")
    for row in rows:
        changed = int(row["changed_from_layout_assignment"])  # type: ignore[call-overload]
        share = f"{100 * int(row['proved']) / changed:.0f}%" if changed else "-"  # type: ignore[call-overload]
        table.add_row(
            str(row["program"]),
            f"{row['pairs']:,}",
            f"{changed:,}",
            f"{row['proved']:,}",
            f"{row['refuted']:,}",
            f"{row['unknown']:,}",
            share,
            f"{row['seconds']:,.1f}",
        )
    Console(width=160).print(table)


def _write_html(path: str, programs: list, reports: list) -> None:
    from pathlib import Path

    from layout_algebra.hlo.pass_report import pass_report_html
    from layout_algebra.hlo.passes import ASSUMPTIONS

    pairs, texts = [], {}
    for program, report in zip(programs, reports, strict=True):
        name, directory = program.name, program.directory
        for pair in report.to_dict()["pairs"]:
            prefix = f"{name}/" if len(programs) > 1 else ""
            pair = {
                **pair,
                "module": f"{prefix}{pair['module']}",
                "from": f"{prefix}{pair['from']}",
                "to": f"{prefix}{pair['to']}",
            }
            pairs.append(pair)
            if pair["verdict"] != "unchanged":
                for key in ("from", "to"):
                    file = Path(directory) / pair[key][len(prefix) :]
                    texts[pair[key]] = file.read_text(encoding="utf-8", errors="replace")
    title = "XLA passes in " + ", ".join(program.name for program in programs)
    page = pass_report_html({"pairs": pairs}, texts=texts, assumption_texts=ASSUMPTIONS, title=title)
    Path(path).write_text(page, encoding="utf-8")


def _print_table(report, show_all: bool) -> None:
    from rich.console import Console
    from rich.table import Table

    colors = {"proved": "green", "refuted": "red", "unknown": "yellow", "unchanged": "dim"}
    several = len({r.module for r in report.results}) > 1
    table = Table(title=f"XLA passes in {report.directory}")
    columns = ["#", "pass", "mode", "status", "ms", "reason / counterexample"]
    for column in (["module"] if several else []) + columns:
        table.add_column(column, overflow="fold", ratio=4 if column.startswith("reason") else None)
    for r in report.results:
        if r.verdict == "unchanged" and not show_all:
            continue
        detail = r.reason or ("" if r.counterexample is None else json.dumps(r.counterexample, default=str))
        if r.assumptions:
            detail = f"assuming {', '.join(r.assumptions)}"
        row = [
            str(r.later.number),
            r.later.after,
            r.mode,
            f"[{colors[r.verdict]}]{r.verdict}[/]",
            f"{r.seconds * 1000:.0f}",
            detail,
        ]
        table.add_row(*([r.module] if several else []), *row)
    console = Console()
    if not console.is_terminal:
        console = Console(width=160)
    console.print(table)
    counts, late = report.counts(), report.counts(after_layout_assignment=True)
    differing = late["proved"] + late["refuted"] + late["unknown"]
    share = f"{100 * late['proved'] / differing:.0f}%" if differing else "-"
    from layout_algebra.hlo.passes import ASSUMPTIONS

    used = sorted({a for r in report.results for a in r.assumptions})
    for name in used:
        console.print(f"[bold]{name}[/]: {ASSUMPTIONS[name]}", highlight=False)
    console.print(
        "all pairs: "
        + ", ".join(f"{k} {v}" for k, v in counts.items())
        + f"; from layout assignment on: {late['proved']}/{differing} differing pairs proved ({share})"
    )


def _cap_memory(gib: float) -> None:
    """Cap the address space, so that running out raises ``MemoryError`` (answered per pair)."""
    import resource

    if gib <= 0:
        raise InvalidArgumentError(f"--max-memory {gib}: give a positive number of gibibytes")
    limit = int(gib * 2**30)
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
