"""Speed of pack/unpack (layout_algebra.packing.numpy_eval) against np.copyto of the same bytes and JAX on the CPU.

For each array, in the same run and interleaved round by round (best of N rounds):

* ``np.copyto`` of as many bytes as the packed buffer, between two preallocated arrays: the
  memory-bandwidth baseline;
* ``pack(x, shape, out=buf)`` and ``unpack(buf, shape, out=y)`` into preallocated arrays
  (what a runtime with a staging buffer does), on every CPU (the default) and with
  ``threads=1``, and ``pack(x, shape)`` allocating its result;
* the same two on every CPU with NumPy alone (``copy_engine.USE_KERNELS = False``: what runs
  without numba, the ``fast`` extra), the baseline of the compiled kernels;
* the same relayout in JAX on the CPU, if ``jax`` is importable: the stage pipeline written
  as ``jnp.pad`` / ``reshape`` / ``transpose`` (and shifts for sub-byte packing), jitted, on
  arrays already on the device; its output is checked equal to ``pack``'s bytes.

GB/s is bytes of the packed buffer per second, from the best round. The ratio in
parentheses is the time of ``np.copyto`` divided by the time of the operation in the same
round (1 = as fast as copying the bytes), the median over the rounds: on a shared machine
whose load changes, neighbouring measurements compare better than best-of-N ones.

With ``--baseline REV``, the same rounds also run ``pack``/``unpack`` with the compiled
kernels of git revision ``REV`` (``layout_algebra/packing/copy_kernels.py`` and
``layout_algebra/packing/transpose_kernels.py`` as committed there, imported as separate modules),
on one thread and on every CPU, and a second table gives
the time of each baseline operation divided by the current one (> 1: now faster), the
median over the rounds: an A/B of a kernel change in one process.

With ``--ceiling``, a last table measures what one core can stream, the ceiling of a
sub-byte pack on one thread: minimal numba loops that read 2 bytes and write 1 (the
traffic of packing two nibbles into a byte), and read 1 and write 2 (unpacking), over a
32 MB packed buffer, against ``np.copyto`` of the 32 MB in the same rounds.

Run:  python benchmarks/pack.py [--rounds N] [--only TEXT] [--shape TEXT ...] [--cpu-time] [--baseline REV] [--ceiling]
      (the transposing layouts alone, compiled by ``layout_algebra.packing.transpose_kernels``:
      ``--only "{0,1:"``; their NumPy-only columns are the baseline)
"""

from __future__ import annotations

import argparse
import atexit
import importlib.util
import inspect
import platform
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import ml_dtypes
import numpy as np

from layout_algebra.meaning.layout_map import layout_map
from layout_algebra.meaning.stages.stages import (
    AlignTail,
    Combine,
    Linearize,
    Pad,
    PrependUnitDims,
    Split,
    ToBits,
    Transpose,
)
from layout_algebra.packing import copy_engine
from layout_algebra.packing.formats import numpy_dtype
from layout_algebra.packing.numpy_eval import pack, unpack

CASES = [
    "f32[8192,8192]{1,0:T(8,128)}",
    "bf16[8192,8192]{1,0:T(8,128)(2,1)}",
    "s8[8192,8192]{1,0:T(32,128)(4,1)}",
    "s4[8192,8192]{1,0:T(8,128)(8,1)E(4)}",
    "s4[8192,8192]{1,0:T(64,128)(8,1)E(4)}",
    "f32[8191,8000]{1,0:T(8,128)}",
    "bf16[8191,8000]{1,0:T(8,128)(2,1)}",
    "f32[8192,8192]{0,1:T(8,128)}",
    "f32[8191,8000]{0,1:T(8,128)}",
]


def random_array(text: str, rng: np.random.Generator) -> np.ndarray:
    m = layout_map(text)
    dtype = numpy_dtype(m.shape.element_type)
    dims = tuple(m.logical_dimensions)
    if m.element_bits < 8:
        return rng.integers(0, 1 << m.element_bits, dims, dtype=np.uint8).view(dtype)
    return rng.integers(0, 256, (*dims, dtype.itemsize), dtype=np.uint8).view(dtype).reshape(dims)


def _bits_dtype(itemsize: int) -> np.dtype:
    return np.dtype(f"<u{itemsize}")


def jax_relayout(text: str):
    """The stage pipeline as JAX array operations: (pack, unpack) functions on uint arrays, jitted."""
    import jax
    import jax.numpy as jnp

    m = layout_map(text)
    bits = m.element_bits
    per_byte = 8 // bits if bits < 8 else 1

    def to_buffer(x):
        for stage in m.stages:
            if isinstance(stage, Transpose):
                x = jnp.transpose(x, stage.permutation)
            elif isinstance(stage, PrependUnitDims | Combine | Split | Linearize):
                x = x.reshape(stage.range)
            elif isinstance(stage, Pad | AlignTail):
                x = jnp.pad(x, [(0, p - d) for d, p in zip(stage.domain, stage.range, strict=True)])
            elif isinstance(stage, ToBits) and bits < 8:
                x = jnp.pad(x, (0, -x.shape[0] % per_byte)).reshape(-1, per_byte) & ((1 << bits) - 1)
                x = sum((x[:, i] << (bits * i)).astype(jnp.uint8) for i in range(per_byte))
        return x

    def from_buffer(x):
        if bits < 8:
            x = jnp.stack([(x >> (bits * i)) & ((1 << bits) - 1) for i in range(per_byte)], axis=1).reshape(
                -1
            )
        for stage in reversed(m.stages):
            if isinstance(stage, Transpose):
                x = jnp.transpose(x, np.argsort(stage.permutation))
            elif isinstance(stage, PrependUnitDims | Combine | Split | Linearize):
                x = x.reshape(stage.domain)
            elif isinstance(stage, Pad | AlignTail):
                x = x[tuple(slice(0, d) for d in stage.domain)]
            elif isinstance(stage, ToBits) and bits < 8:
                x = x[: stage.domain[0]]
        return x

    return jax.jit(to_buffer), jax.jit(from_buffer)


def numpy_only(op: Callable[[], object]) -> Callable[[], object]:
    """``op`` with the compiled kernels switched off."""

    def run() -> object:
        copy_engine.USE_KERNELS = False
        try:
            return op()
        finally:
            copy_engine.USE_KERNELS = True

    return run


def module_at(revision: str, path: str) -> ModuleType:
    """The file ``path`` of the checkout as committed at git ``revision``, imported as a module
    of its own (from a temporary folder, removed at exit)."""
    root = Path(__file__).resolve().parent.parent
    source = subprocess.run(
        ["git", "show", f"{revision}:{path}"],
        cwd=root,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    folder = Path(tempfile.mkdtemp(prefix="baseline_kernels_"))
    atexit.register(shutil.rmtree, folder, True)
    name = f"baseline_{Path(path).stem}_" + re.sub(r"\W", "_", revision)
    file = folder / f"{name}.py"
    file.write_text(source)
    spec = importlib.util.spec_from_file_location(name, file)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def kernels_at(revision: str) -> tuple[ModuleType, ModuleType | None]:
    """``layout_algebra/packing/copy_kernels.py`` and ``layout_algebra/packing/transpose_kernels.py`` as
    committed at git ``revision`` (None for the second before it existed: NumPy then blocks
    the transposing copies): the baseline of an A/B run."""
    try:
        transposes = module_at(revision, "layout_algebra/packing/transpose_kernels.py")
    except subprocess.CalledProcessError:
        transposes = None
    return module_at(revision, "layout_algebra/packing/copy_kernels.py"), transposes


def with_kernels(
    modules: tuple[ModuleType, ModuleType | None], op: Callable[[], object]
) -> Callable[[], object]:
    """``op`` with the copy engine using the compiled kernels of ``modules`` (the word kernels,
    the transposing kernels): without streamed stores if their nibble kernel predates them,
    and with NumPy building the words that they have no kernel for."""
    words, transposes = modules
    streams = "streamed" in inspect.signature(words.nibbles_from_words.py_func).parameters
    table = {
        key: (build if build is None or hasattr(words, build) else None, split)
        for key, (build, split) in copy_engine.WORD_KERNELS.items()
    }

    def run() -> object:
        copy_engine.transpose_kernels()  # the current kernels loaded, so that they are restored below
        saved = (
            copy_engine._kernels,
            copy_engine._transposer,
            copy_engine.STREAM_MIN_BYTES,
            copy_engine.WORD_KERNELS,
        )
        copy_engine._kernels, copy_engine.WORD_KERNELS = words, table
        copy_engine._transposer = transposes if transposes is not None else False
        if not streams:
            copy_engine.STREAM_MIN_BYTES = 1 << 62
        try:
            return op()
        finally:
            (
                copy_engine._kernels,
                copy_engine._transposer,
                copy_engine.STREAM_MIN_BYTES,
                copy_engine.WORD_KERNELS,
            ) = saved

    return run


def measure(
    text: str,
    rounds: int,
    jax,
    rng: np.random.Generator,
    clock=time.perf_counter,
    baseline: tuple[ModuleType, ModuleType | None] | None = None,
    ab_rows: list[str] | None = None,
) -> str:
    """One table row: every operation on one array, interleaved round by round, best time kept.
    With a ``baseline`` kernel module, its A/B row (baseline time / current time) goes to ``ab_rows``."""
    x = random_array(text, rng)
    expected = pack(x, text)
    size = expected.size
    src, dst = expected.copy(), np.ones_like(expected)
    out, back = np.ones_like(expected), np.ones_like(x)
    ops: dict[str, Callable[[], object]] = {
        "copyto": lambda: np.copyto(dst, src),
        "pack": lambda: pack(x, text, out=out),
        "unpack": lambda: unpack(expected, text, out=back),
        "pack_1": lambda: pack(x, text, out=out, threads=1),
        "unpack_1": lambda: unpack(expected, text, out=back, threads=1),
        "pack_alloc": lambda: pack(x, text),
        "pack_np": numpy_only(lambda: pack(x, text, out=out)),
        "unpack_np": numpy_only(lambda: unpack(expected, text, out=back)),
    }
    if baseline is not None:  # the same operations with the baseline's kernels
        for name in ("pack", "unpack", "pack_1", "unpack_1"):
            ops[f"{name}_base"] = with_kernels(baseline, ops[name])
            ops[f"{name}_base"]()  # compiled before the rounds, as the current kernels were
    m = layout_map(text)
    modelled = m.element_bits == 8 * x.dtype.itemsize or (m.element_bits < 8 and 8 % m.element_bits == 0)
    if jax is not None and modelled:  # jax_relayout packs whole bytes of slots (not E(5), E(24) ...)
        to_buffer, from_buffer = jax_relayout(text)
        itemsize = x.dtype.itemsize
        x_bits = x.view(_bits_dtype(itemsize))
        whole = layout_map(text).element_bits >= 8
        x_dev = jax.device_put(x_bits)
        buf_dev = jax.device_put(expected.view(_bits_dtype(itemsize)) if whole else expected)
        packed = np.asarray(to_buffer(x_dev).block_until_ready())
        assert np.array_equal(packed.view(np.uint8), expected), f"JAX relayout of {text} differs from pack"
        unpacked = np.asarray(from_buffer(buf_dev).block_until_ready())
        assert np.array_equal(unpacked.astype(x_bits.dtype), x_bits), f"JAX unpack of {text} differs"
        ops["jax_pack"] = lambda: to_buffer(x_dev).block_until_ready()
        ops["jax_unpack"] = lambda: from_buffer(buf_dev).block_until_ready()
    times = interleaved(ops, rounds, clock)
    assert np.array_equal(out, expected) and np.array_equal(back.view(np.uint8), x.view(np.uint8))
    best = {name: min(t) for name, t in times.items()}
    if baseline is not None and ab_rows is not None:

        def gain(name: str) -> str:
            ratios = [b / t for b, t in zip(times[f"{name}_base"], times[name], strict=True)]
            return f"{float(np.median(ratios)):.2f}"

        ab_rows.append(
            f"| `{text}` | {gain('pack_1')} | {gain('unpack_1')} | {gain('pack')} | {gain('unpack')} |"
        )

    def cell(name: str) -> str:
        if name not in times:
            return "—"
        # the ratio within each round (copyto ran just before), median over the rounds
        ratio = float(np.median([c / t for c, t in zip(times["copyto"], times[name], strict=True)]))
        return f"{size / best[name] / 1e9:.2f} ({ratio:.2f})"

    return (
        f"| `{text}` | {size / 1e6:.0f} | {size / best['copyto'] / 1e9:.2f} | {cell('pack')} | {cell('unpack')} "
        f"| {cell('pack_1')} | {cell('unpack_1')} | {cell('pack_np')} | {cell('unpack_np')} | {cell('pack_alloc')} "
        f"| {cell('jax_pack')} | {cell('jax_unpack')} |"
    )


def interleaved(ops: dict, rounds: int, clock) -> dict[str, list[float]]:
    """Each operation's time in each round, the operations run one after the other in every
    round (so that a busy moment of the machine hits all of them alike)."""
    times: dict[str, list[float]] = {name: [] for name in ops}
    for _ in range(rounds):
        for name, op in ops.items():
            start = clock()
            op()
            times[name].append(clock() - start)
    return times


def stream_ceiling(rounds: int, clock=time.perf_counter, size: int = 1 << 25) -> str:
    """Table rows: one core reading 2 bytes per byte written (pack's traffic) and 1 byte per
    2 written (unpack's), by minimal compiled loops, against ``np.copyto`` of ``size`` bytes."""
    from numba import njit

    @njit(nogil=True)
    def two_to_one(out, a):  # type: ignore[no-untyped-def]
        for i in range(out.size):
            out[i] = (a[2 * i] & 15) | (a[2 * i + 1] << 4)

    @njit(nogil=True)
    def one_to_two(out, a):  # type: ignore[no-untyped-def]
        for i in range(a.size):
            out[2 * i] = a[i] & 15
            out[2 * i + 1] = a[i] >> 4

    rng = np.random.default_rng(1)
    wide, narrow = rng.integers(0, 256, 2 * size, dtype=np.uint8), rng.integers(0, 256, size, dtype=np.uint8)
    dst, wide_out = np.empty_like(narrow), np.empty_like(wide)
    ops = {
        "copyto": lambda: np.copyto(dst, narrow),
        "read 2 MB, write 1 MB per MB packed (pack)": lambda: two_to_one(dst, wide),
        "read 1 MB, write 2 MB per MB packed (unpack)": lambda: one_to_two(wide_out, narrow),
    }
    for op in ops.values():
        op()  # compiled before the rounds
    times = interleaved(ops, rounds, clock)
    rows = []
    for name in list(ops)[1:]:
        ratio = float(np.median([c / t for c, t in zip(times["copyto"], times[name], strict=True)]))
        rows.append(f"| {name} | {size / 1e6:.0f} | {size / min(times[name]) / 1e9:.2f} | {ratio:.2f} |")
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="rounds per array; the best is kept")
    parser.add_argument("--only", default="", help="run only the shapes containing this text")
    parser.add_argument(
        "--shape",
        action="append",
        default=[],
        metavar="TEXT",
        help="measure this layout instead of the standard ones (repeatable), e.g. a wide E(n)",
    )
    parser.add_argument(
        "--cpu-time",
        action="store_true",
        help="time by the process's CPU time (all its threads) instead of the wall clock: "
        "on a machine shared with other jobs, waiting for a core is then not counted",
    )
    parser.add_argument(
        "--baseline",
        metavar="REV",
        help="also run pack/unpack with the compiled kernels of this git revision, in the same "
        "rounds, and print the A/B ratios (baseline time / current time)",
    )
    parser.add_argument(
        "--ceiling",
        action="store_true",
        help="also measure what one core can stream with pack's and unpack's traffic (needs numba)",
    )
    args = parser.parse_args()
    clock = time.process_time if args.cpu_time else time.perf_counter
    baseline = kernels_at(args.baseline) if args.baseline else None
    try:
        import jax

        jax_note = f"JAX {jax.__version__} on the {jax.devices()[0].platform.upper()}"
    except ImportError:
        jax = None
        jax_note = "JAX was not available (pip install jax to compare)"
    print(
        f"# {platform.machine()}, Python {platform.python_version()}, NumPy {np.__version__}, "
        f"ml_dtypes {ml_dtypes.__version__}; {jax_note}"
    )
    print()
    what = "CPU time of the process (all threads)" if args.cpu_time else "wall-clock time"
    print(f"GB/s of packed bytes (best round, {what}); in parentheses the speed relative to np.copyto")
    print("of the same bytes in the same round (median over rounds).")
    print()
    from layout_algebra.packing.threads import default_threads

    kernels = (
        "numba " + __import__("numba").__version__ if copy_engine.start_kernels() else "no numba: NumPy only"
    )
    print(
        f"pack/unpack use {default_threads()} threads by default here; np.copyto uses one. Kernels: {kernels}."
    )
    print()
    print(
        "| shape | MB | np.copyto GB/s | pack, into a buffer | unpack, into an array "
        "| pack, threads=1 | unpack, threads=1 | pack, NumPy only | unpack, NumPy only "
        "| pack, allocating | JAX pack | JAX unpack |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    rng = np.random.default_rng(0)
    ab_rows: list[str] = []
    for text in args.shape or CASES:
        if args.only in text:
            print(measure(text, args.rounds, jax, rng, clock, baseline, ab_rows), flush=True)
    if ab_rows:
        print()
        print(f"A/B against the kernels of {args.baseline}: baseline time / current time, median over rounds")
        print()
        print("| shape | pack, threads=1 | unpack, threads=1 | pack, every CPU | unpack, every CPU |")
        print("|---|---:|---:|---:|---:|")
        print("\n".join(ab_rows))
    if args.ceiling:
        print()
        print("What one core streams: minimal loops against np.copyto of the packed bytes, same rounds")
        print()
        print("| loop | MB packed | GB/s of packed bytes | ratio to np.copyto |")
        print("|---|---:|---:|---:|")
        print(stream_ceiling(args.rounds, clock))


if __name__ == "__main__":
    main()
