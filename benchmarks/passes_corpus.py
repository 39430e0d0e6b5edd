"""Validating the pass pipelines of a corpus: ``validate_passes`` on every program and backend.

For each archive ``<program>.<backend>.tar.xz`` in ``tests/data/pass_dumps/corpus/`` (written
by ``scripts/generate_pass_dumps.py --corpus``: XLA:TPU compile-only and XLA:CPU per-pass
dumps of the same JAX programs) it unpacks the dump directory and runs ``validate_passes``
on it in a child process, one at a time, with

- a memory cap (``resource.setrlimit(RLIMIT_AS)`` in the child, default 4 GiB): a blow-up
  becomes an error row (``MemoryError`` or the solver's out-of-memory exit), never the
  kernel's kill of the machine's other work;
- a time cap (default 300 s): the child is killed and the row says so;
- the child's wall time and peak resident memory (``ru_maxrss`` from ``os.wait4`` of that
  child alone).

It prints one Markdown table — per program and backend: pairs, changed pairs from layout
assignment on and how many are proved / refuted / unknown, the same over all changed pairs,
seconds, peak MiB — then the unknown pairs' first reasons counted by category (the
categories are the regular expressions of :data:`CATEGORIES`, first match wins, then the
opcode of a new or changed op; through "no op ... has provably equal operands" to why the
operands were not proved equal), each with one example pair (program, backend, pass, the
reason).

Run:  PYTHONPATH=. python benchmarks/passes_corpus.py [--cap-gib 4] [--timeout 300]
          [--json OUT.json] [--only NAME ...] [--from-json OUT.json]
          [--large PY | --large-dir DIR] [--large-timeout 600] [--no-corpus] [--jobs N]

``--large PY`` also dumps the 12-layer train step (~14k instructions on TPU, ~35k on CPU;
too big to ship) with ``scripts/generate_pass_dumps.py`` run by ``PY`` (a Python with
``jax[tpu]``), and validates it under the same memory cap and ``--large-timeout``;
``--large-dir DIR`` validates the dumps such a run left in ``DIR`` instead. ``--jobs N``
validates each program's pass pairs ``N`` at once (the cap is per process).

``--json`` keeps every pair's answer (the reports' JSON) for later reading; ``--from-json``
prints the tables again from such a file without validating anything.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "data" / "pass_dumps" / "corpus"
#: programs too big to ship: ``--large PY`` dumps them (scripts/generate_pass_dumps.py's LARGE)
LARGE = ("transformer_train_adam_12",)

# The child: validate one dump directory and print the report's JSON.
CHILD = """
import json, sys
from layout_algebra.hlo.passes import validate_passes
print(json.dumps(validate_passes(sys.argv[1], jobs=int(sys.argv[2])).to_dict()))
"""

#: (category, pattern), tried in order on an unknown pair's first reason (see :func:`root_cause`)
CATEGORIES: tuple[tuple[str, str], ...] = (
    ("cannot read the module", r"^cannot read"),
    ("precision change (the pass changes element types on purpose)", r"precision change"),
    ("an elided constant `{...}` with a new name", r"is printed \{\.\.\.\}"),
    ("a cut module misses a called computation", r"does not define"),
    ("the executor cannot run a cut module", r"executor does not run"),
    (
        "arithmetic rewrite left uninterpreted (execution finds no difference)",
        r"uninterpreted functions.*no difference",
    ),
    ("uninterpreted functions differ", r"uninterpreted functions"),
    ("the solver's element shows no difference (an encoding gap)", r"encoding gap"),
    ("a data-movement op that changes the element type, refused", r"has another element type"),
    ("root / entry computation layout differ", r"entry computation layout|interface"),
    ("refuted inside a reason", r"refuted"),
    ("the solver gave up", r"timeout|timed out|gave up"),
)
# "<opcode> <name> (<shape>): the earlier module has no <opcode>" / "no <opcode> of the earlier module ..."
NEW_OP = re.compile(
    r"^([a-z][a-z0-9-]*) \S+ \(.*?\): (?:the earlier module has no |no \S+ of the earlier module)"
)
OPERANDS = "has provably equal operands"


def first_clause(reason: str) -> str:
    """The first reason of a reason text (reasons are joined by ``; ``).

    >>> first_clause("while loop: not paired; and more")
    'while loop: not paired'
    """
    return reason.split("; ")[0].strip()


def root_cause(reason: str) -> str:
    """The first reason, looking through "no op ... has provably equal operands" to why the
    operands were not proved equal (the text in ``unknown (...)`` of the next clause).

    >>> root_cause("dot d (f32[2]): no op of the earlier module with the same opcode and attributes "
    ...            "has provably equal operands; d: operand a vs a: unknown (the executor does not run these)")
    'the executor does not run these)'
    """
    clauses = reason.split("; ")
    k = 0
    while k + 1 < len(clauses) and OPERANDS in clauses[k]:
        k += 1
    rest = "; ".join(clauses[k:]).strip()
    m = re.search(r": unknown \((.*)", rest)
    return m[1] if m and k else clauses[k].strip()


def category(reason: str) -> str:
    """The category of an unknown pair's root cause (``other`` if no pattern matches).

    >>> category("while while.6 (s32[]): no while of the earlier module has the same attributes")
    'a new or changed `while` (no counterpart)'
    >>> category("something new")
    'other'
    """
    cause = root_cause(reason)
    for name, pattern in CATEGORIES:
        if re.search(pattern, cause, re.IGNORECASE):
            return name
    m = NEW_OP.match(cause)
    if m:
        return f"a new or changed `{m[1]}` (no counterpart)"
    return "other"


def cap_memory(limit_bytes: int) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))


def run_capped(directory: Path, cap_bytes: int, timeout_s: float, jobs: int = 1) -> dict[str, Any]:
    """Validate ``directory`` in a child capped at ``cap_bytes`` of address space (each of its
    ``jobs`` processes) and ``timeout_s`` seconds; its report (or error), wall time and peak
    resident memory (of the child and the processes it ran, the largest one)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, str(directory), str(jobs)],
            stdout=out,
            stderr=err,
            env=env,
            preexec_fn=lambda: cap_memory(cap_bytes),
        )
        timed_out = False
        while True:
            pid, status, usage = os.wait4(child.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() - start > timeout_s:
                os.kill(child.pid, signal.SIGKILL)
                timed_out = True
                pid, status, usage = os.wait4(child.pid, 0)
                break
            time.sleep(0.05)
        child.returncode = os.waitstatus_to_exitcode(status)  # reaped: keep Popen quiet
        seconds = time.perf_counter() - start
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    row: dict[str, Any] = {
        "seconds": seconds,
        "cpu_seconds": usage.ru_utime + usage.ru_stime,  # the child's and its processes': load-proof
        "peak_mib": usage.ru_maxrss / 1024,
    }
    if timed_out:
        row["error"] = f"killed at the time cap ({timeout_s:.0f} s)"
    elif child.returncode != 0:
        lines = [line for line in stderr.strip().splitlines() if line.strip()]
        memory = any("MemoryError" in line or "out of memory" in line.lower() for line in lines)
        row["error"] = (
            f"memory cap ({cap_bytes / 2**30:.0f} GiB) reached: " if memory else ""
        ) + f"exit {child.returncode}: {(lines[-1] if lines else '')[:300]}"
    else:
        row["report"] = json.loads(stdout.strip().splitlines()[-1])
    return row


def instruction_counts() -> dict[str, str]:
    """archive name -> instructions of its last per-pass module, from the corpus README."""
    counts = {}
    readme = CORPUS / "README.md"
    for line in readme.read_text().splitlines() if readme.exists() else []:
        m = re.match(r"^\| `(\S+)\.tar\.xz` \| \d+ \| (\d+) \|", line)
        if m:
            counts[m[1]] = m[2]
    return counts


def summarize(name: str, row: dict[str, Any], sizes: dict[str, str]) -> dict[str, Any]:
    """The table's numbers for one program and backend."""
    program, backend = name.rsplit(".", 1)
    s: dict[str, Any] = {
        "program": program,
        "backend": backend,
        "instructions": row.get("instructions") or sizes.get(name, "?"),
        "seconds": row["seconds"],
        "peak_mib": row["peak_mib"],
        "error": row.get("error", ""),
    }
    if "report" not in row:
        return s
    report = row["report"]
    late, every = report["counts_from_layout_assignment"], report["counts"]
    s["pairs"] = len(report["pairs"])
    s["late"] = {k: late[k] for k in ("proved", "refuted", "unknown")}
    s["all"] = {k: every[k] for k in ("proved", "refuted", "unknown")}
    s["unknown_categories"] = Counter(
        category(p["reason"]) for p in report["pairs"] if p["status"] == "unknown"
    )
    return s


def percent(part: int, whole: int) -> str:
    return f"{100 * part / whole:.0f}%" if whole else "-"


def table(rows: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| program | backend | instr. | pairs | changed from LA on | proved | refuted | unknown | changed, all | proved, all | s | peak MiB |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    totals: dict[str, Counter] = {}
    for s in rows:
        if s["error"]:
            lines.append(
                f"| {s['program']} | {s['backend']} | {s['instructions']} | **error**: {s['error']} | – | – | – | – | – | – | "
                f"{s['seconds']:.0f} | {s['peak_mib']:.0f} |"
            )
            continue
        late, every = s["late"], s["all"]
        changed, changed_all = sum(late.values()), sum(every.values())
        t = totals.setdefault(s["backend"], Counter())
        t.update(
            {
                "pairs": s["pairs"],
                "changed": changed,
                "changed_all": changed_all,
                "proved_all": every["proved"],
            }
        )
        t.update({k: late[k] for k in late})
        lines.append(
            f"| {s['program']} | {s['backend']} | {s['instructions']} | {s['pairs']} | {changed} | {late['proved']} "
            f"({percent(late['proved'], changed)}) | {late['refuted']} | {late['unknown']} | {changed_all} | "
            f"{every['proved']} ({percent(every['proved'], changed_all)}) | {s['seconds']:.1f} | {s['peak_mib']:.0f} |"
        )
    for backend, t in totals.items():
        lines.append(
            f"| **all** | {backend} | | {t['pairs']} | {t['changed']} | {t['proved']} "
            f"({percent(t['proved'], t['changed'])}) | {t['refuted']} | {t['unknown']} | {t['changed_all']} | "
            f"{t['proved_all']} ({percent(t['proved_all'], t['changed_all'])}) | | |"
        )
    return lines


def reasons(raw: dict[str, dict[str, Any]]) -> list[str]:
    """Unknown pairs (all of them, every mode) by the category of their first reason, with one example each."""
    counts: Counter = Counter()
    by_backend: dict[str, Counter] = {}
    example: dict[str, str] = {}
    for name, row in raw.items():
        program, backend = name.rsplit(".", 1)
        for p in row.get("report", {}).get("pairs", []):
            if p["status"] != "unknown":
                continue
            c = category(p["reason"])
            counts[c] += 1
            by_backend.setdefault(c, Counter())[backend] += 1
            if p["mode"] == "physical" or p["pass"] == "layout-assignment":
                by_backend[c]["late"] += 1
            if c not in example:
                clause = root_cause(p["reason"])
                example[c] = (
                    f"{program} ({backend}), pass {p['number']} `{p['pass']}` ({p['mode']}): "
                    f"{clause[:240]}{'…' if len(clause) > 240 else ''}"
                )
    lines = [
        "| first reason (category) | unknown pairs | TPU | CPU | from LA on | example |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for c, n in counts.most_common():
        b = by_backend[c]
        text = example[c].replace("|", "\\|")
        lines.append(f"| {c} | {n} | {b['tpu']} | {b['cpu']} | {b['late']} | {text} |")
    return lines


def report_progress(name: str, row: dict[str, Any]) -> None:
    note = row.get("error") or row["report"]["counts_from_layout_assignment"]
    cpu = f" ({row['cpu_seconds']:.1f} s CPU)" if "cpu_seconds" in row else ""
    print(
        f"{name}: {row['seconds']:.1f} s{cpu}, {row['peak_mib']:.0f} MiB, {note}", file=sys.stderr, flush=True
    )


def last_module_size(directory: Path) -> int:
    """Instructions (lines ``name = ...``) of the last per-pass file of a dump directory."""
    numbered = [
        p for p in directory.glob("module_*.txt") if re.search(r"\.\d{4}\.", p.name)
    ]  # not before_optimizations
    last = max(numbered, key=lambda p: int(re.findall(r"\.(\d{4})\.", p.name)[-1]))
    return len(re.findall(r"^\s*(?:ROOT )?%?[\w.\-]+ = ", last.read_text(), re.MULTILINE))


def generate_large(python: str, into: Path) -> dict[str, Path]:
    """Dump the programs too big to ship (XLA:TPU and XLA:CPU) into ``into`` with
    ``scripts/generate_pass_dumps.py`` run by ``python`` (a Python with jax[tpu])."""
    script = str(ROOT / "scripts" / "generate_pass_dumps.py")
    command = [sys.executable, script, "--python", python, "--out", str(into), "--backend", "both", *LARGE]
    subprocess.run(command, check=True)
    return {f"{p}.{b}": into / b / p for p in LARGE for b in ("tpu", "cpu")}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--cap-gib", type=float, default=4.0, help="address-space cap of each child (GiB)")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per program and backend")
    parser.add_argument("--json", type=Path, help="write every report here")
    parser.add_argument("--from-json", type=Path, help="print the tables of an earlier --json file")
    parser.add_argument("--only", nargs="*", help="programs (NAME) or archives (NAME.tpu, NAME.cpu) to run")
    parser.add_argument(
        "--large",
        metavar="PY",
        help=f"also generate and validate {', '.join(LARGE)} (not shipped) with this Python "
        "(one with jax[tpu]), capped by --large-timeout",
    )
    parser.add_argument("--large-timeout", type=float, default=600.0, help="seconds for each large dump")
    parser.add_argument("--no-corpus", action="store_true", help="skip the shipped archives (with --large)")
    parser.add_argument(
        "--large-dir",
        type=Path,
        help="validate the large programs already dumped here (DIR/<backend>/<program>, as --large "
        "writes them) instead of dumping them",
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=1,
        help="pass pairs at once in each child (validate_passes(jobs=N); default 1)",
    )
    args = parser.parse_args()
    cap = int(args.cap_gib * 2**30)
    if args.from_json:
        raw = json.loads(args.from_json.read_text())
    else:
        raw = {}
        archives = [] if args.no_corpus else sorted(CORPUS.glob("*.tar.xz"))
        for archive in archives:
            name = archive.name.removesuffix(".tar.xz")
            if args.only and name not in args.only and name.split(".")[0] not in args.only:
                continue
            with tempfile.TemporaryDirectory() as tmp:
                with tarfile.open(archive, "r:xz") as tar:
                    tar.extractall(tmp, filter="data")
                raw[name] = run_capped(Path(tmp, name), cap, args.timeout, args.jobs)
            report_progress(name, raw[name])
            if args.json:
                args.json.write_text(json.dumps(raw))
        if args.large or args.large_dir:
            with tempfile.TemporaryDirectory() as tmp:
                if args.large_dir:
                    dumped = {f"{p}.{b}": args.large_dir / b / p for p in LARGE for b in ("tpu", "cpu")}
                    dumped = {name: d for name, d in dumped.items() if d.is_dir()}
                else:
                    dumped = generate_large(args.large, Path(tmp))
                for name, directory in dumped.items():
                    if args.only and name not in args.only:
                        continue
                    raw[name] = run_capped(directory, cap, args.large_timeout, args.jobs)
                    raw[name]["instructions"] = str(last_module_size(directory))
                    raw[name]["load_average"] = os.getloadavg()
                    report_progress(name, raw[name])
                    if args.json:
                        args.json.write_text(json.dumps(raw))
    order = {n: k for k, n in enumerate(sorted(raw, key=lambda n: (n.rsplit(".", 1)[1] != "tpu", n)))}
    sizes = instruction_counts()
    rows = [summarize(name, raw[name], sizes) for name in sorted(raw, key=order.__getitem__)]
    print("\n".join(table(rows)))
    print()
    print("\n".join(reasons(raw)))


if __name__ == "__main__":
    main()
