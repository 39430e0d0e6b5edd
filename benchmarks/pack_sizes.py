"""Speed of pack/unpack at every size, against a plain copy of the same bytes in the same rounds.

A sweep over array sizes (64 KB ... 256 MB of logical data), the five TPU layouts of the
8192x8192 benchmark (``benchmarks/pack.py``) plus an f8 and a ``pred`` layout as XLA:TPU
writes them, and for each:

* both directions: ``pack`` (array -> buffer) and ``unpack`` (buffer -> array);
* both modes: into a preallocated result (``out=``), against ``np.copyto`` between two
  preallocated arrays of as many bytes as the packed buffer; and allocating its result,
  against ``np.copy`` of as many bytes;
* on one thread (``threads=1``) and on every CPU (``threads=None``, the default: the packer
  decides by size).

Each cell is the median, over the rounds, of (time of the copy / time of the operation),
both measured in the same round one right after the other (each timing a loop of calls
long enough to measure): 1 means as fast as copying the bytes, 0.5 twice as slow. Rounds
interleave every cell of a size, so a change in the machine's load hits the copy and the
operation alike. A last table gives the first call on a shape (planning included: the
recipe is derived then) against the second one.

The acceptance targets (issue "fast at every size") are printed under the table: every cell
from 1 MB up at least 0.5, from 32 MB up at least 0.7, and at 64 KB a cost under 3x the copy
(a ratio above 1/3).

Run:  python benchmarks/pack_sizes.py [--quick] [--sizes 64K 1M 32M ...] [--rounds N] [--only TEXT] [--cpu-time]
      (``--quick``: 64 KB, 1 MB, 16 MB and 3 rounds)
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from layout_algebra.meaning import layout_map as layout_map_module
from layout_algebra.meaning.layout_map import layout_map
from layout_algebra.packing import copy_engine, formats, numpy_eval
from layout_algebra.packing.formats import numpy_dtype
from layout_algebra.packing.numpy_eval import pack, unpack
from layout_algebra.packing.threads import default_threads

#: Layouts, with ``{rows}`` and ``{cols}`` for the dimensions.
LAYOUTS = [
    "s8[{rows},{cols}]{{1,0:T(32,128)(4,1)}}",
    "s4[{rows},{cols}]{{1,0:T(8,128)(8,1)E(4)}}",
    "bf16[{rows},{cols}]{{1,0:T(8,128)(2,1)}}",
    "f32[{rows},{cols}]{{0,1:T(8,128)}}",
    "f32[{rows},{cols}]{{1,0:T(8,128)}}",
    "f8e5m2[{rows},{cols}]{{0,1:T(8,128)(4,1)}}",
    "pred[{rows},{cols}]{{1,0:T(8,128)(4,1)}}",
]
SIZES = ["64K", "256K", "1M", "4M", "16M", "32M", "64M", "256M"]
QUICK_SIZES = ["64K", "1M", "16M"]
#: Cells: (direction, mode, threads) -> label.
CELLS = [
    ("pack", "into", 1),
    ("pack", "into", None),
    ("pack", "alloc", 1),
    ("pack", "alloc", None),
    ("unpack", "into", 1),
    ("unpack", "into", None),
    ("unpack", "alloc", 1),
    ("unpack", "alloc", None),
]
#: The JAX columns (``--jax``): the jitted relayout on JAX's CPU device, against ``np.copy``.
JAX_CELLS = [("pack", "jax", None), ("unpack", "jax", None)]
#: Each timing runs its call in a loop of at least this long (seconds), so that small sizes measure.
MIN_TIMING = 2e-3


def parse_size(text: str) -> int:
    """``64K`` -> 65536, ``1M`` -> 1048576, ``256M``, or a number of bytes."""
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    text = text.strip().upper().removesuffix("B")
    if text and text[-1] in units:
        return int(float(text[:-1]) * units[text[-1]])
    return int(text)


def size_label(n: int) -> str:
    return f"{n >> 20} MB" if n >= 1 << 20 else f"{n >> 10} KB"


def shape_for(template: str, size: int) -> str:
    """The layout at ``size`` bytes of logical data: rows and columns powers of two, rows <= columns."""
    element = template.split("[", 1)[0]
    bits = {"s4": 4}.get(element, 8 * numpy_dtype(element).itemsize)
    count = size * 8 // bits
    rows = 1 << (int(math.log2(count)) // 2)
    return template.format(rows=rows, cols=count // rows)


def random_array(text: str, rng: np.random.Generator) -> np.ndarray:
    m = layout_map(text)
    dtype = numpy_dtype(m.shape.element_type)
    dims = tuple(m.logical_dimensions)
    if m.element_bits < 8 or dtype == np.bool_:
        return rng.integers(0, 1 << min(m.element_bits, 1 if dtype == np.bool_ else 8), dims, np.uint8).view(
            dtype
        )
    raw = rng.integers(0, 256, (*dims, dtype.itemsize), dtype=np.uint8)
    return raw.view(dtype).reshape(dims)


#: The clock: wall time, or with ``--cpu-time`` the calling thread's CPU time (a shared machine's
#: other processes then slow neither side; only one-thread cells are measured so).
CLOCK: Callable[[], float] = time.perf_counter


def timed(call: Callable[[], object], repeat: int) -> float:
    start = CLOCK()
    for _ in range(repeat):
        call()
    return (CLOCK() - start) / repeat


def repeats_for(call: Callable[[], object]) -> int:
    """How many calls make one timing at least ``MIN_TIMING`` long: from the quickest of a few
    calls after a first one (which may be slow: a cold cache, the plan made), so that a small
    array's timing is not cut short (then one interruption weighs on it)."""
    call()
    once = max(min(timed(call, 1) for _ in range(3)), 1e-7)
    return max(1, math.ceil(MIN_TIMING / once))


def sweep_size(
    size: int, layouts: list[str], rounds: int, rng: np.random.Generator
) -> dict[str, dict[tuple, float]]:
    """For each layout at ``size``: the median ratio (copy time / operation time) of every cell."""
    cases = []
    for template in layouts:
        text = shape_for(template, size)
        m = layout_map(text)
        x = random_array(text, rng)
        buf = pack(x, text)
        y = np.empty_like(x)
        src, dst = np.empty(buf.size, np.uint8), np.empty(buf.size, np.uint8)
        src[:] = buf
        ops: dict[tuple, tuple[Callable[[], object], Callable[[], object]]] = {}
        for direction, mode, threads in CELLS:
            if direction == "pack":
                op = (
                    (lambda x=x, t=text, b=buf, n=threads: pack(x, t, out=b, threads=n))
                    if mode == "into"
                    else (lambda x=x, t=text, n=threads: pack(x, t, threads=n))
                )
            else:
                op = (
                    (lambda y=y, t=text, b=buf, n=threads: unpack(b, t, out=y, threads=n))
                    if mode == "into"
                    else (lambda t=text, b=buf, n=threads: unpack(b, t, threads=n))
                )
            base = (lambda s=src, d=dst: np.copyto(d, s)) if mode == "into" else (lambda s=src: np.copy(s))
            ops[(direction, mode, threads)] = (base, op)
        if JAX_CELLS[0] in CELLS:
            jax_pack, jax_unpack = jax_ops(text, x, buf)
            ops[JAX_CELLS[0]] = ((lambda s=src: np.copy(s)), jax_pack)
            ops[JAX_CELLS[1]] = ((lambda s=src: np.copy(s)), jax_unpack)
        cases.append((text, m, ops))
    ratios: dict[str, dict[tuple, list[float]]] = {text: {cell: [] for cell in ops} for text, _, ops in cases}
    repeats = {
        (text, cell): (repeats_for(ops[cell][0]), repeats_for(ops[cell][1]))
        for text, _, ops in cases
        for cell in ops
    }
    for _ in range(rounds):
        for text, _, ops in cases:
            for cell in ops:
                base, op = ops[cell]
                n_base, n_op = repeats[(text, cell)]
                t_base = timed(base, n_base)
                t_op = timed(op, n_op)
                ratios[text][cell].append(t_base / t_op)
    return {text: {cell: statistics.median(r) for cell, r in cells.items()} for text, cells in ratios.items()}


def jax_ops(text: str, x: np.ndarray, buf: np.ndarray) -> tuple[Callable[[], object], Callable[[], object]]:
    """(pack, unpack) of ``text`` as jitted JAX operations on JAX's CPU device, each checked
    byte for byte against ``pack``; a layout whose slots JAX's stage form does not write
    (slots that do not divide a byte) stops the run with a message."""
    import jax
    from pack import jax_relayout  # benchmarks/pack.py: the stage pipeline as JAX operations

    m = layout_map(text)
    if not (m.element_bits == 8 * x.dtype.itemsize or (m.element_bits < 8 and 8 % m.element_bits == 0)):
        raise SystemExit(f"--jax: {text} has slots JAX's stage form does not write")
    to_buffer, from_buffer = jax_relayout(text)
    lanes = np.dtype(f"<u{x.dtype.itemsize}")
    x_dev = jax.device_put(x.view(lanes))
    buf_dev = jax.device_put(buf.view(lanes) if m.element_bits >= 8 else buf)
    packed = np.asarray(to_buffer(x_dev).block_until_ready())
    assert np.array_equal(packed.view(np.uint8), buf), f"JAX's relayout of {text} differs from pack"
    back = np.asarray(from_buffer(buf_dev).block_until_ready())
    assert np.array_equal(back.astype(lanes), x.view(lanes)), f"JAX's unpack of {text} differs from the array"
    return (lambda: to_buffer(x_dev).block_until_ready()), (lambda: from_buffer(buf_dev).block_until_ready())


def first_calls(
    layouts: list[str], size: int, rng: np.random.Generator
) -> list[tuple[str, float, float, float]]:
    """(shape, first pack's time, second pack's time, copy time) with no recipe or layout map kept."""
    rows = []
    for template in layouts:
        text = shape_for(template, size)
        x = random_array(text, rng)
        buf = np.empty(layout_map(text).size_in_bytes, np.uint8)
        src = np.empty_like(buf)
        numpy_eval.forget_recipes()
        formats._MAPS.clear()
        layout_map_module._layout_map.cache_clear()
        first = timed(lambda x=x, t=text, b=buf: pack(x, t, out=b), 1)
        second = statistics.median(timed(lambda x=x, t=text, b=buf: pack(x, t, out=b), 1) for _ in range(9))
        copy = statistics.median(timed(lambda s=src, b=buf: np.copyto(b, s), 1) for _ in range(9))
        rows.append((text, first, second, copy))
    return rows


def threading_layer() -> str:
    """The threading layer numba started (the parts of a replayed call run on it), or why none."""
    try:
        import numba
    except ImportError:
        return "none: numba is not installed"
    try:
        return str(numba.threading_layer())
    except ValueError:  # no parallel call yet
        return "not started"


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    load = ""
    if hasattr(os, "getloadavg"):
        load = ", load average {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())
    return f"{cpu}, {os.cpu_count()} CPUs, Python {platform.python_version()}, NumPy {np.__version__}{load}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="64 KB, 1 MB and 16 MB, 3 rounds")
    parser.add_argument("--sizes", nargs="*", help="sizes of logical data, e.g. 64K 1M 256M")
    parser.add_argument("--rounds", type=int, help="rounds per size (default 5; 3 with --quick)")
    parser.add_argument("--only", help="only layouts whose text contains this")
    parser.add_argument(
        "--cpu-time",
        action="store_true",
        help="time by the calling thread's CPU time (for a busy shared machine; one-thread cells only)",
    )
    parser.add_argument(
        "--jax", action="store_true", help="also the relayout as jitted JAX operations on its CPU device"
    )
    args = parser.parse_args(argv)
    global CLOCK, CELLS
    if args.cpu_time:
        CLOCK = time.thread_time
        CELLS = [c for c in CELLS if c[2] == 1]
    if args.jax:
        if args.cpu_time:
            raise SystemExit("--jax needs wall time: JAX runs its work on threads of its own")
        try:
            import jax
        except ImportError:
            raise SystemExit("--jax: JAX is not installed (pip install 'layout_algebra[jax]')") from None
        jax.config.update("jax_platforms", "cpu")
        CELLS = CELLS + JAX_CELLS
    sizes = [parse_size(s) for s in (args.sizes or (QUICK_SIZES if args.quick else SIZES))]
    rounds = args.rounds or (3 if args.quick else 5)
    layouts = [t for t in LAYOUTS if not args.only or args.only in t]
    kernels = (
        copy_engine.start_kernels()
    )  # numba started before timing, as in a process that has packed before
    print(f"Machine: {machine()}")
    print(
        f"Date: {time.strftime('%Y-%m-%d %H:%M %Z')}; compiled kernels: {'yes' if kernels else 'no (NumPy)'}"
    )
    print(f"Clock: {'CPU time of the calling thread' if args.cpu_time else 'wall time'}")
    print(f"Rounds: {rounds}, interleaved; threads=None is every CPU ({default_threads()}): from ")
    print(
        f"{copy_engine.SIDE_BY_SIDE_MIN_BYTES >> 20} MB of packed buffer a replayed shape in parts on numba's threads"
    )
    print(f"(replay_parts), from {copy_engine.PARALLEL_MIN_BYTES >> 20} MB otherwise the pool; else one.\n")
    print(
        "Ratio = time of np.copyto (into) / np.copy (alloc) of the packed buffer's bytes / time of the operation.\n"
    )
    header = (
        "| layout | size | "
        + " | ".join(
            f"{d} JAX" if m == "jax" else f"{d} {m} {'1t' if n == 1 else 'all'}" for d, m, n in CELLS
        )
        + " |"
    )
    print(header)
    print("|" + "---|" * (len(CELLS) + 2))
    rng = np.random.default_rng(0)
    results: list[tuple[str, int, tuple, float]] = []
    for size in sizes:
        table = sweep_size(size, layouts, rounds, rng)
        for text, cells in table.items():
            row = " | ".join(f"{cells[c]:.2f}" for c in CELLS)
            print(f"| `{text}` | {size_label(size)} | {row} |", flush=True)
            results += [(text, size, c, r) for c, r in cells.items() if c[1] != "jax"]
    print(f"\nnumba's threading layer (the parts of a replayed call run on it): {threading_layer()}")
    print()
    for label, low, target in (("from 1 MB", 1 << 20, 0.5), ("from 32 MB", 32 << 20, 0.7)):
        chosen = [r for r in results if r[1] >= low]
        if chosen:
            text, size, cell, ratio = min(chosen, key=lambda r: r[3])
            verdict = "meets" if ratio >= target else "MISSES"
            print(
                f"worst cell {label}: {ratio:.2f} ({text}, {size_label(size)}, {' '.join(map(str, cell))}); "
                f"target >= {target}: {verdict}"
            )
    small = [r for r in results if r[1] <= 64 << 10]
    if small:
        text, size, cell, ratio = min(small, key=lambda r: r[3])
        verdict = "meets" if ratio > 1 / 3 else "MISSES"
        print(
            f"worst cell at 64 KB: {1 / ratio:.1f}x the copy ({text}, {' '.join(map(str, cell))}); "
            f"target < 3x: {verdict}"
        )
    print(
        "\nFirst call on a shape (no recipe, no layout map kept) against the second, 1 MB, into a buffer:\n"
    )
    print("| layout | first call | second call | np.copyto | planning (first - second) |")
    print("|---|---|---|---|---|")
    for text, first, second, copy in first_calls(layouts, 1 << 20, rng):
        print(
            f"| `{text}` | {first * 1e3:.2f} ms | {second * 1e3:.3f} ms | {copy * 1e3:.3f} ms | "
            f"{(first - second) * 1e3:.2f} ms |"
        )


if __name__ == "__main__":
    main()
