"""Speed of the generated C against a hand-written formula, compiled together with ``cc -O2``.

For each layout, one C program holds the function ``generate_code(shape, "c", "forward", "byte")``
prints, the same function with the old ``int64_t`` signature (the expression text is the
same), and a formula written by hand as a C programmer would (``uint64_t``, tile number
times tile size plus the place in the tile). Each computes the byte offset of every element
of the array, row by row, and sums them (the sum is printed and the three must agree, so
nothing is optimized away; the loop bounds are ``volatile`` so the compiler cannot sum in
closed form). Two ways of calling: *in a loop* (the function inlined into the loop, as when
the generated code is pasted into a kernel) and *one call per offset* (``noinline``: the
function compiled on its own, as in a library). Best of 15 rounds, interleaved in one
process, in CPU time of the process (``CLOCK_PROCESS_CPUTIME_ID``: on a shared machine,
time spent waiting for a core is not counted); the ratio is the generated code's time over
the hand formula's.

Run:  .venv/bin/python benchmarks/codegen_c.py
"""

from __future__ import annotations

import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from layout_algebra.codegen import generate_code

#: (shape, hand-written byte offset of element (i, j)) — uint64_t i, j.
CASES = (
    (
        "f32[4096,4096]{1,0:T(8,128)}",
        "4 * (((i / 8) * (4096 / 128) + j / 128) * 1024 + (i % 8) * 128 + j % 128)",
    ),
    (
        "bf16[4096,4096]{1,0:T(8,128)(2,1)}",
        "2 * (((i / 8) * (4096 / 128) + j / 128) * 1024 + ((i % 8) / 2) * 256 + (j % 128) * 2 + i % 2)",
    ),
    (
        "s8[4096,4096]{1,0:T(32,128)(4,1)}",
        "((i / 32) * (4096 / 128) + j / 128) * 4096 + ((i % 32) / 4) * 512 + (j % 128) * 4 + i % 4",
    ),
)

PROGRAM = r"""
#define _POSIX_C_SOURCE 199309L
#include <stdint.h>
#include <stdio.h>
#include <time.h>

GENERATED

OLD

static inline uint64_t hand(uint64_t i, uint64_t j) { return HAND; }
__attribute__((noinline)) uint64_t hand_call(uint64_t i, uint64_t j) { return HAND; }
__attribute__((noinline)) uint64_t gen_call(uint64_t i, uint64_t j) { return gen(i, j); }
__attribute__((noinline)) uint64_t old_call(int64_t i, int64_t j) { return (uint64_t)old(i, j); }

static volatile uint64_t rows = ROWS, cols = COLS;

#define LOOP(name, body) \
    __attribute__((noinline)) static uint64_t name(void) { \
        uint64_t s = 0, n = rows, m = cols; \
        for (uint64_t i = 0; i < n; ++i) for (uint64_t j = 0; j < m; ++j) s += body; \
        return s; }
LOOP(loop_gen, gen(i, j))
LOOP(loop_old, (uint64_t)old((int64_t)i, (int64_t)j))
LOOP(loop_hand, hand(i, j))
LOOP(call_gen, gen_call(i, j))
LOOP(call_old, old_call((int64_t)i, (int64_t)j))
LOOP(call_hand, hand_call(i, j))

static double now(void) { struct timespec t; clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }

int main(void) {
    uint64_t (*runs[6])(void) = {loop_gen, loop_old, loop_hand, call_gen, call_old, call_hand};
    double best[6] = {1e9, 1e9, 1e9, 1e9, 1e9, 1e9};
    uint64_t sums[6] = {0};
    for (int round = 0; round < 15; ++round)
        for (int k = 0; k < 6; ++k) {
            double t = now();
            sums[k] = runs[k]();
            t = now() - t;
            if (t < best[k]) best[k] = t;
        }
    for (int k = 0; k < 6; ++k) printf("%.3f %llu\n", best[k] * 1e3, (unsigned long long)sums[k]);
    return 0;
}
"""


def program(shape: str, hand: str) -> str:
    generated = generate_code(shape, "c", "forward", "byte", "gen").text
    old = generated.replace("uint64_t", "int64_t").replace("int64_t gen(", "int64_t old(")
    rows, cols = (int(d) for d in shape[shape.index("[") + 1 : shape.index("]")].split(","))
    return (
        PROGRAM.replace("GENERATED", generated)
        .replace("OLD", old.replace("#include <stdint.h>", ""))
        .replace("HAND", hand)
        .replace("ROWS", str(rows))
        .replace("COLS", str(cols))
    )


def measure(compiler: str, shape: str, hand: str, folder: Path) -> list[float]:
    source, exe = folder / "bench.c", folder / "bench"
    source.write_text(program(shape, hand))
    subprocess.run([compiler, "-O2", "-std=c11", "-o", str(exe), str(source)], check=True)
    lines = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.split("\n")
    times, sums = zip(*(line.split() for line in lines if line), strict=True)
    assert len(set(sums)) == 1, f"{shape}: the generated, old and hand-written offsets differ: {sums}"
    return [float(t) for t in times]


def main() -> int:
    compiler = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if compiler is None:
        print("no C compiler found")
        return 1
    version = subprocess.run([compiler, "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    print(f"# {platform.machine()}, {version}, -O2; {time.strftime('%Y-%m-%d')}; best of 15 rounds, CPU ms")
    print()
    print(
        "| shape | in a loop: generated | old `int64_t` | hand-written | ratio gen/hand "
        "| one call per offset: generated | old `int64_t` | hand-written | ratio gen/hand |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        for shape, hand in CASES:
            g, o, h, cg, co, ch = measure(compiler, shape, hand, Path(tmp))
            print(
                f"| `{shape}` | {g:.2f} | {o:.2f} | {h:.2f} | **{g / h:.2f}** "
                f"| {cg:.2f} | {co:.2f} | {ch:.2f} | **{cg / ch:.2f}** |",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
