"""The audit as tables for people (``layout-algebra audit``), drawn with ``rich``.

>>> from layout_algebra.hlo import parse_module, audit_module
>>> from layout_algebra.hlo.report import render_audit, memory_space_name
>>> report = audit_module(parse_module("HloModule m\\nENTRY e {\\n  ROOT p = f32[3,5]{1,0:T(8,128)} parameter(0)\\n}"))
>>> text = render_audit(report, width=100)
>>> "worst padding" in text and "f32[3,5]{1,0:T(8,128)}" in text
True
>>> memory_space_name(1)
'fast memory (VMEM on TPU)'
"""

from __future__ import annotations

import io

from layout_algebra.hlo.audit import MOVES_DATA, NO_DATA_MOVEMENT, AuditReport, AuditRow
from layout_algebra.model.meaning import memory_space_name  # the one table of names

__all__ = ["memory_space_name", "render_audit"]


def _bytes(n: int | None) -> str:
    return "?" if n is None else f"{n:,}"


def _ratio(r: AuditRow) -> str:
    return "-" if r.padding_ratio is None else f"{r.padding_ratio:.2f}"


def _buffer_column(r: AuditRow) -> str:
    if r.is_buffer:
        return "yes"
    return "alias" if r.role in ("entry", "control flow") else r.role


def render_audit(
    report: AuditReport,
    top: int = 25,
    width: int | None = None,
    color: bool = False,
    all_movements: bool = False,
) -> str:
    """The audit as text tables: totals by memory space, the ``top`` worst padding
    offenders, data-movement verdicts (``top`` of them, all with ``all_movements``) and
    layout problems. Shapes and layouts wrap, never get cut; every table that lists
    fewer rows than it has says "N of M"."""
    from rich.console import Console
    from rich.table import Table

    out = io.StringIO()
    console = Console(
        file=out, width=width or 160, force_terminal=color, color_system="auto" if color else None
    )
    console.print(
        f"[bold]module {report.module}[/bold]: {len(report.rows):,} instructions, "
        f"{len(report.buffers):,} buffers holding {report.buffer_arrays:,} arrays "
        "(values stored outside fusion bodies; see layout_algebra.hlo.audit)",
        overflow="fold",
    )
    if report.errors:
        console.print(f"[bold]malformed module[/bold] ({len(report.errors):,} errors):", overflow="fold")
        for e in report.errors:
            console.print(f"  {e}", overflow="fold", markup=False)

    totals = Table(title="buffers by memory space", title_justify="left")
    for name in (
        "memory space",
        "arrays",
        "logical bytes",
        "physical bytes",
        "XLA allocates",
        "physical/logical",
    ):
        totals.add_column(name, justify="left" if name == "memory space" else "right", overflow="fold")
    for t in sorted(report.totals_by_memory_space.values(), key=lambda t: t.memory_space):
        ratio = f"{t.physical_bytes / t.logical_bytes:.2f}" if t.logical_bytes else "-"
        buffers = f"{t.arrays:,}" + (f" ({t.unsized:,} unsized)" if t.unsized else "")
        totals.add_row(
            f"S({t.memory_space}) {memory_space_name(t.memory_space)}",
            buffers,
            _bytes(t.logical_bytes),
            _bytes(t.physical_bytes),
            _bytes(t.allocated_bytes),
            ratio,
        )
    ratio = f"{report.physical_bytes / report.logical_bytes:.2f}" if report.logical_bytes else "-"
    totals.add_row(
        "[bold]total[/bold]",
        f"{report.buffer_arrays:,}",
        _bytes(report.logical_bytes),
        _bytes(report.physical_bytes),
        _bytes(report.allocated_bytes),
        ratio,
    )
    console.print(totals)

    shown = report.worst_padding(None if top <= 0 else top)
    sized = sum(1 for r in report.rows if r.physical_bytes is not None and r.logical_bytes is not None)
    table = Table(
        title=f"worst padding first ({len(shown):,} of {sized:,} sized instructions)",
        title_justify="left",
    )
    for name in ("instruction", "opcode", "shape and layout", "logical", "physical", "ratio", "buffer"):
        right = name in ("logical", "physical", "ratio")
        table.add_column(
            name,
            justify="right" if right else "left",
            overflow="fold",
            no_wrap=right,
            ratio=3 if name == "shape and layout" else None,
        )
    for r in shown:
        table.add_row(
            f"{r.computation}/{r.name}",
            r.opcode,
            str(r.shape),
            _bytes(r.logical_bytes),
            _bytes(r.physical_bytes),
            _ratio(r),
            _buffer_column(r),
        )
    console.print(table)

    moves = report.movements()
    if moves:
        rank = {MOVES_DATA: 0, NO_DATA_MOVEMENT: 1}
        moves.sort(key=lambda r: rank.get(r.movement.verdict, 2))  # type: ignore[union-attr]
        counts: dict[str, int] = {}
        for r in moves:
            counts[r.movement.verdict] = counts.get(r.movement.verdict, 0) + 1  # type: ignore[union-attr]
        listed = moves if (top <= 0 or all_movements) else moves[:top]
        summary = ", ".join(f"{n:,} {v}" for v, n in counts.items())
        more = "" if len(listed) == len(moves) else "; --all lists every one"
        table = Table(
            title=f"data movement of bitcast/reshape/transpose/copy ({len(listed):,} of {len(moves):,} "
            f"shown{more}): {summary}",
            title_justify="left",
        )
        for name in ("instruction", "opcode", "result", "verdict", "reason"):
            table.add_column(name, overflow="fold", ratio=3 if name in ("result", "reason") else None)
        for r in listed:
            table.add_row(
                f"{r.computation}/{r.name}",
                r.opcode,
                str(r.shape),
                r.movement.verdict,  # type: ignore[union-attr]
                r.movement.reason,  # type: ignore[union-attr]
            )
        console.print(table)

    problems = report.problem_rows()
    if problems:
        table = Table(title=f"layout problems ({len(problems):,} instructions)", title_justify="left")
        table.add_column("instruction", overflow="fold")
        table.add_column("problem", overflow="fold", ratio=3)
        for r in problems:
            table.add_row(f"{r.computation}/{r.name}", "\n".join(r.problems))
        console.print(table)
    else:
        console.print("layout problems: none (every layout passes XLA's validation rules)")
    return out.getvalue()
