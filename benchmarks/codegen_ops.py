"""Operation counts of generated C for the standard TPU layouts; writes benchmarks/codegen.md.

For each layout: the forward map (logical index -> byte offset) and the inverse (byte offset
-> logical index) as ``generate_code(..., "c")`` prints them, next to the straightforward
expression (the stages composed as written: a floor and a remainder per tile level, the
row-major linearization expanded, nothing removed). Operations are counted as
:func:`layout_algebra.codegen.expr.ops` defines them (every ``+``, ``*`` by a coefficient
other than 1, ``/``, ``%``, ``>=``, ``||`` in the C text). Every emitted expression is also
certified; the table says how.

Run:  .venv/bin/python benchmarks/codegen_ops.py            (rewrites benchmarks/codegen.md)
      .venv/bin/python benchmarks/codegen_ops.py --stdout   (prints it instead)
"""

from __future__ import annotations

import argparse
import datetime
import platform
import sys
from pathlib import Path

from layout_algebra.codegen import generate_code

#: (what it is, shape) — TPU's default tiles by element width (xla-facts.md §5.5).
FORMATS = (
    ("f32, (8,128)", "f32[1024,1024]{1,0:T(8,128)}"),
    ("f32, (8,128), padded", "f32[1000,1000]{1,0:T(8,128)}"),
    ("f32, column-major (8,128)", "f32[1000,1000]{0,1:T(8,128)}"),
    ("f32 small tile (2,128)", "f32[2,1000]{1,0:T(2,128)}"),
    ("f32 small tile (4,128)", "f32[3,1000]{1,0:T(4,128)}"),
    ("bf16, (8,128)(2,1)", "bf16[1024,1024]{1,0:T(8,128)(2,1)}"),
    ("bf16, (8,128)(2,1), 4-D", "bf16[8,1,1280,16384]{3,2,0,1:T(8,128)(2,1)}"),
    ("s8, (32,128)(4,1)", "s8[1024,1024]{1,0:T(32,128)(4,1)}"),
    ("s8, (8,128)(4,1)", "s8[1024,1024]{1,0:T(8,128)(4,1)}"),
    ("s4 E(4), (64,128)(8,1)", "s4[1024,1024]{1,0:T(64,128)(8,1)E(4)}"),
    ("f32, (8,128), symbolic", "f32[N,M]{1,0:T(8,128)}"),
    ("bf16, (8,128)(2,1), symbolic", "bf16[N,M]{1,0:T(8,128)(2,1)}"),
)


def _cell(code) -> str:
    counts = code.op_counts
    if len(counts) == 1:
        return f"**{counts[0]}**"
    return f"{'+'.join(map(str, counts))} = **{sum(counts)}**"


def _status(fwd, inv) -> str:
    def one(c) -> str:
        return f"{c.certification.status} ({c.certification.method})"

    return one(fwd) if one(fwd) == one(inv) else f"forward {one(fwd)}; inverse {one(inv)}"


def report() -> str:
    rows = []
    examples = []
    for what, shape in FORMATS:
        fwd = generate_code(shape, "c", "forward", "byte")
        inv = generate_code(shape, "c", "inverse", "byte")
        rows.append(
            f"| {what} | `{shape}` | {_cell(fwd)} | {sum(fwd.unsimplified_op_counts)} "
            f"| {_cell(inv)} | {sum(inv.unsimplified_op_counts)} | {_status(fwd, inv)} |"
        )
        if what in ("bf16, (8,128)(2,1)", "s4 E(4), (64,128)(8,1)", "f32, (8,128), symbolic"):
            raw_fwd = generate_code(shape, "c", "forward", "byte", simplified=False, check=False)
            raw_inv = generate_code(shape, "c", "inverse", "byte", simplified=False, check=False)
            examples.append((shape, fwd, raw_fwd, inv, raw_inv))
    lines = [
        "# Generated index code: operation counts",
        "",
        "Written by `benchmarks/codegen_ops.py` (run it to refresh). For each standard TPU layout:",
        "the C that `generate_code(shape, 'c', direction, unit='byte')` prints, forward (logical index ->",
        "byte offset) and inverse (byte offset -> logical index, one expression per dimension),",
        "against the *straightforward* expression: the stages composed as defined — a floor and a",
        "remainder per tile level, the row-major linearization multiplied out, the unit",
        "conversion applied last — with no simplification.",
        "",
        "An operation is one `+`/`-` between terms, one `*` (a coefficient other than 1 is one),",
        "one `/`, `%`, `>=` or `||` in the C text (`layout_algebra.codegen.expr.ops`; the test",
        "suite checks the count against the printed C). Inverse counts are given per dimension.",
        "",
        "| layout | shape | forward ops | straightforward | inverse ops | straightforward | certification |",
        "|---|---|---:|---:|---:|---:|---|",
        *rows,
        "",
        "Certification reads the printed C back and proves it equal to the layout map:",
        "exhaustively for concrete layouts of at most 2^20 points, with the Z3 prover",
        "(`layout_algebra.prove.expressions_equal`) for larger ones. With symbolic sizes both",
        "directions are proved for all sizes: the prover reads each tiled index as (tile number,",
        "place in the tile) and each offset as the digits of the box the layout linearizes, so",
        "products such as `((M + 127) / 128)*(i0 / 8)` and divisions such as",
        "`p / (4096*((M + 127) / 128))` become exact digit arithmetic (`radix=` in",
        "`expressions_equal`; values past the box get a query of their own).",
        "",
        "## What the simplifier removes",
        "",
        "Side by side, simplified then straightforward:",
        "",
    ]
    for shape, fwd, raw_fwd, inv, raw_inv in examples:
        lines += [f"`{shape}`, forward ({fwd.op_count} vs {raw_fwd.op_count} operations):", "", "```c"]
        lines += [fwd.expression_texts[0], raw_fwd.expression_texts[0], "```", ""]
        lines += [f"inverse ({inv.op_count} vs {raw_inv.op_count} operations):", "", "```c"]
        lines += [*inv.expression_texts, *raw_inv.expression_texts, "```", ""]
    lines += [
        "The gains come from the ranges (`i mod 128` is `i` when `i < 128`; a quotient is 0 when",
        "the offset cannot reach the divisor), from collapsing nested floors the unit conversion",
        "creates (`⌊⌊p/4⌋/128⌋ = ⌊p/512⌋`), from `(x mod 8) mod 2 = x mod 2` after a second tile",
        "level, and from merging a quotient with its remainder. See `layout_algebra.codegen.simplify`.",
        "",
        f"Python {platform.python_version()}, {datetime.date.today().isoformat()}.",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--stdout", action="store_true", help="print instead of writing benchmarks/codegen.md"
    )
    args = parser.parse_args(argv)
    text = report()
    if args.stdout:
        sys.stdout.write(text)
    else:
        path = Path(__file__).resolve().parent / "codegen.md"
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
