"""Speed of ``parse_module`` on ~20 MB of real HLO text, against baselines in the same run.

The text is the largest module shipped in ``tests/data/ground_truth/hlo/`` repeated to about 20 MB, in
two ways:

* **one 20 MB module**: the copies' computations are renamed (``%name`` -> ``%name.copyK``)
  and only the first keeps ``ENTRY`` and the ``HloModule`` header, so the text is one
  valid module of ~290 times as many computations;
* **per copy**: each copy parsed as a module of its own (the shape cache warms after the
  first copy, as it does over a directory of dumps);
* **re-wrapped**: the 20 MB module with every instruction wrapped over lines (a line break
  after its ``=`` and before each attribute): the forms the one-match reader leaves to the
  piece-by-piece reader, which then reads every instruction;
* **every shipped module**: all the modules of ``tests/data/ground_truth/hlo/`` (different
  compilers, attribute styles, sizes), each parsed as a module, repeated to about 5 MB.

Cold runs clear the caches first (``parse_shape``'s, and the parser's of shapes and attribute readings).
Each parse row is timed in rounds alternating with its tokenizer baseline (so a change in
the machine's load hits both alike). Baselines over the same bytes:
``str.splitlines`` (reading lines, the least any parser does) and a regular-expression
tokenizer (``re.findall`` of names, strings and single characters: the least a
token-based parser does). If ``pyparsing`` or ``lark`` is importable, a token scan with
each is timed on one copy, for the record of why the parser is hand-written.

Run:  .venv/bin/python benchmarks/hlo_parse.py
A/B against an older commit's parser (interleaved, same process):
      .venv/bin/python benchmarks/hlo_parse.py --against <git revision>
"""

from __future__ import annotations

import os
import platform
import re
import time
from pathlib import Path

from layout_algebra.hlo import parse_module
from layout_algebra.hlo.parser import _clear_caches
from layout_algebra.model.syntax import _parse_shape_cached

DATA = Path(__file__).resolve().parents[1] / "tests" / "data" / "ground_truth" / "hlo"
TARGET_BYTES = 20_000_000
CORPUS_BYTES = 5_000_000
ROUNDS = 3
_TOKEN = re.compile(r'%?[\w.\-]+|"(?:[^"\\]|\\.)*"|\S')


def largest_module() -> Path:
    paths = sorted(DATA.glob("*.hlo"), key=lambda p: p.stat().st_size)
    if not paths:
        raise SystemExit(f"no modules in {DATA}: the shared data must sit beside the checkout")
    return paths[-1]


def one_big_module(text: str, copies: int) -> str:
    """``copies`` copies of a module as ONE valid module: computations renamed per copy."""
    names = sorted((c.name for c in parse_module(text).computations), key=len, reverse=True)
    header, _, body = text.partition("\n")
    while not header.lstrip().startswith("HloModule"):  # leading comment lines
        line, _, body = body.partition("\n")
        header = line
    pattern = re.compile(r"%(" + "|".join(re.escape(n) for n in names) + r")(?![\w.\-])")
    parts = [header, body]
    for k in range(1, copies):
        renamed = pattern.sub(lambda m, k=k: f"%{m.group(1)}.copy{k}", body)
        parts.append(re.sub(r"^ENTRY ", "", renamed, flags=re.M))
    return "\n".join(parts)


def rewrapped(text: str) -> str:
    """``text`` with every instruction wrapped as a hand-edited dump might be: a line break
    after the instruction's '=' and before each attribute, which the one-match reader does
    not take (the piece-by-piece reader reads every instruction)."""
    text = text.replace(" = ", " =\n      ")
    return re.sub(r", (?=[A-Za-z_][\w.\-]*=)", ",\n        ", text)


def clear_caches() -> None:
    """Forget every shape and attribute value read before (a cold start)."""
    _parse_shape_cached.cache_clear()
    _clear_caches()


def alternating(
    fns: dict, rounds: int = ROUNDS, before: dict | None = None
) -> dict[str, tuple[float, float]]:
    """Best wall-clock and best CPU seconds of each function, run in turns round after round."""
    best = {label: (float("inf"), float("inf")) for label in fns}
    for _ in range(rounds):
        for label, fn in fns.items():
            if before and label in before:
                before[label]()
            start, start_cpu = time.perf_counter(), time.process_time()
            fn()
            wall, cpu = time.perf_counter() - start, time.process_time() - start_cpu
            best[label] = (min(best[label][0], wall), min(best[label][1], cpu))
    return best


def best_seconds(fn, rounds: int = ROUNDS, before=None) -> tuple[float, float]:
    """Best wall-clock and best CPU seconds of ``rounds`` runs (CPU time is steadier on a
    shared machine)."""
    wall = cpu = float("inf")
    for _ in range(rounds):
        if before is not None:
            before()
        start, start_cpu = time.perf_counter(), time.process_time()
        fn()
        wall = min(wall, time.perf_counter() - start)
        cpu = min(cpu, time.process_time() - start_cpu)
    return wall, cpu


def main() -> None:
    path = largest_module()
    text = path.read_text(encoding="utf-8")
    copies = TARGET_BYTES // len(text) + 1
    big = one_big_module(text, copies)
    module = parse_module(big)
    single = parse_module(text)
    assert len(module.computations) == copies * len(single.computations), "the renamed copies must all parse"
    mb = len(big.encode()) / 1e6
    per_copy_mb = copies * len(text.encode()) / 1e6

    rows: list[tuple[str, float, float, float]] = []

    def record(label: str, seconds: tuple[float, float], size_mb: float) -> None:
        wall, cpu = seconds
        rows.append((label, wall, size_mb / wall, size_mb / cpu))

    big_rows = alternating(
        {
            "cold": lambda: parse_module(big),
            "warm": lambda: parse_module(big),
            "tokenizer": lambda: _TOKEN.findall(big),
        },
        before={"cold": clear_caches},
    )
    record(f"parse_module, one {mb:.0f} MB module, cold cache", big_rows["cold"], mb)
    record(f"parse_module, one {mb:.0f} MB module, warm cache", big_rows["warm"], mb)
    wrapped = rewrapped(big)
    assert parse_module(wrapped).instruction_count == module.instruction_count
    wrapped_mb = len(wrapped.encode()) / 1e6
    wrapped_rows = alternating(
        {"parse": lambda: parse_module(wrapped), "tokenizer": lambda: _TOKEN.findall(wrapped)},
        before={"parse": clear_caches},
    )
    record(
        f"parse_module, the {mb:.0f} MB module re-wrapped (every instruction over lines), cold cache",
        wrapped_rows["parse"],
        wrapped_mb,
    )
    record("baseline: re.findall tokenizer, re-wrapped", wrapped_rows["tokenizer"], wrapped_mb)
    record(
        f"parse_module, one copy ({len(text) // 1000} KB), cold cache",
        best_seconds(lambda: parse_module(text), rounds=5, before=clear_caches),
        len(text.encode()) / 1e6,
    )

    def per_copy() -> None:
        for _ in range(copies):
            parse_module(text)

    record(
        "parse_module, per copy, cold then warm",
        best_seconds(per_copy, before=clear_caches),
        per_copy_mb,
    )
    record("baseline: str.splitlines", best_seconds(big.splitlines), mb)
    record("baseline: re.findall tokenizer", big_rows["tokenizer"], mb)
    corpus = [p.read_text(encoding="utf-8") for p in sorted(DATA.glob("*.hlo"))]
    repeat = CORPUS_BYTES // sum(len(t) for t in corpus) + 1
    corpus_mb = repeat * sum(len(t.encode()) for t in corpus) / 1e6

    def every_module() -> None:
        for _ in range(repeat):
            for t in corpus:
                parse_module(t)

    joined = "\n".join(corpus * repeat)
    corpus_rows = alternating(
        {"parse": every_module, "tokenizer": lambda: _TOKEN.findall(joined)}, before={"parse": clear_caches}
    )
    record(
        f"parse_module, every shipped module ({len(corpus)}) x {repeat}, cold then warm",
        corpus_rows["parse"],
        corpus_mb,
    )
    record("baseline: re.findall tokenizer, every shipped module", corpus_rows["tokenizer"], corpus_mb)
    rows.extend(library_rows(text))

    baseline = next(r for r in rows if r[0] == "baseline: re.findall tokenizer")[3]
    corpus_baseline = next(r for r in rows if r[0].startswith("baseline: re.findall tokenizer, every"))[3]
    print(f"module: {path.name} ({len(text):,} bytes) x {copies} = {len(big):,} bytes")
    print(f"machine: {platform.machine()} {platform.processor() or ''} python {platform.python_version()}")
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(
        f"date: {time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC, load average {load}  (best of {ROUNDS} rounds)"
    )
    print()
    print("| operation | seconds (wall) | MB/s (wall) | MB/s (CPU time) | vs re.findall tokenizer (CPU) |")
    print("|---|---:|---:|---:|---:|")
    for label, seconds, rate, cpu_rate in rows:
        base = corpus_baseline if "every shipped module" in label else baseline
        if "re-wrapped" in label:
            base = next(r for r in rows if r[0] == "baseline: re.findall tokenizer, re-wrapped")[3]
        print(f"| {label} | {seconds:.3f} | {rate:.1f} | {cpu_rate:.1f} | {cpu_rate / base:.2f}x |")


def library_rows(text: str) -> list[tuple[str, float, float, float]]:
    """Token scans with parsing libraries, on one copy (they are far slower)."""
    rows = []
    mb = len(text.encode()) / 1e6

    def row(label: str, seconds: tuple[float, float]) -> tuple[str, float, float, float]:
        return (label, seconds[0], mb / seconds[0], mb / seconds[1])

    try:
        import pyparsing as pp
    except ImportError:
        pp = None
    if pp is not None:
        token = (
            pp.Regex(r"%?[A-Za-z_][\w.\-]*")
            | pp.Regex(r"-?[0-9]+(\.[0-9]+)?")
            | pp.QuotedString('"', esc_char="\\")
            | pp.Literal("->")
            | pp.Regex(r"[(){}\[\],=:*<>#/+?]")
        )
        scanner = pp.ZeroOrMore(token)
        scanner.ignore(pp.cpp_style_comment)
        seconds = best_seconds(lambda: scanner.parse_string(text, parse_all=True), rounds=1)
        rows.append(row(f"pyparsing {pp.__version__} token scan (one copy)", seconds))
    try:
        import lark
    except ImportError:
        lark = None
    if lark is not None:
        grammar = r"""
            start: (NAME | INT | STRING | ARROW | PUNCT)*
            NAME: /%?[A-Za-z_][\w.\-]*/
            INT: /-?[0-9]+(\.[0-9]+)?/
            STRING: /"(?:[^"\\]|\\.)*"/
            ARROW: "->"
            PUNCT: /[(){}\[\],=:*<>#\/+?]/
            COMMENT: /\/\/[^\n]*/ | /\/\*(.|\n)*?\*\//
            %ignore COMMENT
            %ignore /\s+/
        """
        lexer = lark.Lark(grammar, parser="lalr", lexer="basic")
        seconds = best_seconds(lambda: sum(1 for _ in lexer.lex(text)))
        rows.append(row(f"lark {lark.__version__} basic lexer only (one copy)", seconds))
    return rows


def against(revision: str, rounds: int = 9) -> None:
    """An A/B of ``parse_module`` against the parser of an older commit, in this process:
    old and new run in turns on the same texts, CPU time, median of ``rounds``. The old
    ``parser.py`` is read with ``git show`` and loaded as a module of its own (it uses
    today's ``hlo.ir`` and ``parse_shape``)."""
    import importlib.util
    import statistics
    import subprocess
    import tempfile

    root = Path(__file__).resolve().parents[1]
    source = subprocess.run(
        ["git", "show", f"{revision}:layout_algebra/hlo/parser.py"],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    with tempfile.TemporaryDirectory() as folder:
        old_path = Path(folder) / "old_parser.py"
        old_path.write_text(source, encoding="utf-8")
        spec = importlib.util.spec_from_file_location("old_parser", old_path)
        assert spec is not None and spec.loader is not None
        old = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(old)
    paths = sorted(DATA.glob("*.hlo"))
    texts = {p.name: p.read_text(encoding="utf-8") for p in paths}
    sets = {
        "every shipped module": list(texts.values()),
        "module 03 (largest)": [t for n, t in texts.items() if n.startswith("03")],
        "the JAX dumps": [t for n, t in texts.items() if n.startswith("jax")],
    }
    print(f"A/B against {revision}: CPU time, median of {rounds} alternating rounds")
    print("| texts | old / new time | new vs tokenizer | old vs tokenizer |")
    print("|---|---:|---:|---:|")
    for label, chosen in sets.items():
        for text in chosen:
            assert old.parse_module(text) == parse_module(text), "the two parsers must agree"
        repeat = max(1, 400_000 // sum(map(len, chosen)))

        def timed(fn, repeat=repeat, chosen=chosen):
            return lambda: [fn(t) for _ in range(repeat) for t in chosen]

        fns = {"old": timed(old.parse_module), "new": timed(parse_module), "tok": timed(_TOKEN.findall)}
        seconds: dict[str, list[float]] = {k: [] for k in fns}
        for _ in range(rounds):
            for key, fn in fns.items():
                start = time.process_time()
                fn()
                seconds[key].append(time.process_time() - start)
        old_s, new_s, tok_s = (statistics.median(seconds[k]) for k in ("old", "new", "tok"))
        print(f"| {label} | {old_s / new_s:.2f}x | {tok_s / new_s:.2f}x | {tok_s / old_s:.2f}x |")


if __name__ == "__main__":
    import sys

    if len(sys.argv) == 3 and sys.argv[1] == "--against":
        against(sys.argv[2])
    else:
        main()
