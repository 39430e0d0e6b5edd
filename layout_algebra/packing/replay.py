"""Replaying a relayout: a cached plan's data movement as a short program over two buffers.

Packing a shape a second time walks the same chunks, finds the same overlaps, and makes the
same decisions in :func:`~layout_algebra.packing.copy_engine.copy`; only the addresses of the
logical array and of the packed buffer change. For a small array that Python costs far more
than moving the data (tens of microseconds against two for copying 64 KB). A
:class:`Program` keeps the outcome instead: every step names its memory by *role* (the
packed buffer, or the logical array, both seen as 1-D bytes) and byte offset, so that it
runs on any pair of arrays of the shape the plan was made for:

* a *kernel* step is one compiled-kernel call (:func:`~layout_algebra.packing.copy_engine.kernel_call`:
  words built or split, a transposing copy), its flat arrays made from the two buffers at
  run time, the offsets fixed;
* a *copy* step is :func:`~layout_algebra.packing.copy_engine.copy` between two views rebuilt
  from their offsets, shapes and strides (whatever NumPy does for it), or ``np.copyto`` where
  that is what it would do;
* a *fill* step writes the fill value into a view (padding).

A program is made only for what it can replay exactly: the one-thread path of whole-byte
elements and of sub-byte words (:mod:`layout_algebra.packing.words`), with no chunk staged.
The bytes are those of the path it replaces (tests compare both, and an element-by-element
oracle).

>>> import numpy as np
>>> from layout_algebra.meaning.layout_map import layout_map
>>> from layout_algebra.packing.stage_walk import walk
>>> m = layout_map("u8[4,6]{0,1:T(2,2)}")
>>> x = np.arange(24, dtype=np.uint8).reshape(4, 6)
>>> buffer = np.zeros(m.size_in_bytes, np.uint8)
>>> plan = walk(m, x, None)
>>> program = whole_bytes_program(plan, buffer, x, 1, [((), 0, 3, 0)], True, np.uint8)
>>> [step.kind for step in program.steps]
['copy']
>>> program.run(buffer, x, 0)
True
>>> buffer[:8].tolist()          # the first 2x2 tile of the transposed array: x[0:2, 0:2].T
[0, 6, 1, 7, 12, 18, 13, 19]
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from layout_algebra.packing import copy_engine as engine
from layout_algebra.packing.stage_walk import Plan, box_difference, chunk_index, overlap

__all__ = [
    "BUFFER",
    "LOGICAL",
    "Place",
    "Program",
    "Step",
    "bound_kernels",
    "copy_step",
    "entries_of",
    "entries_on_flat",
    "kernel_step",
    "parts_of_run",
    "parts_runner",
    "place",
    "typed",
    "whole_bytes_program",
]

#: Roles of memory: the packed buffer and the logical array (each as 1-D bytes).
BUFFER, LOGICAL = 0, 1


@dataclass(frozen=True)
class Place:
    """A view by role: ``dtype``, byte ``offset`` in the role's bytes, ``shape``, ``strides`` (bytes)."""

    role: int
    dtype: np.dtype
    offset: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]

    def view(self, bases: Sequence[np.ndarray]) -> np.ndarray:
        """The view of ``bases[role]`` (1-D bytes) it names."""
        return np.ndarray(
            self.shape, self.dtype, buffer=bases[self.role], offset=self.offset, strides=self.strides
        )


@dataclass(frozen=True)
class Step:
    """One step: ``kind`` is ``"kernel"`` (``kernel``: the kernel's module and name, called
    with ``args`` and ``flats``: ``(position, role,
    dtype, byte offset)`` the flat arrays to put in, and their element offsets after them;
    ``stage``: the thread's staging buffer's ``(position, elements, dtype)``), ``"copy"``
    (``places[0]`` from ``places[1]``) or ``"fill"`` (``places[0]``, slot by slot)."""

    kind: str
    kernel: tuple[Any, str] | None = None
    args: tuple[Any, ...] = ()
    flats: tuple[tuple[int, int, np.dtype, int], ...] = ()
    stage: tuple[int, int, np.dtype] | None = None
    places: tuple[Place, ...] = ()


@dataclass(frozen=True)
class Program:
    """Steps over the packed buffer and the logical array; ``slot``: the dtype of a fill slot."""

    steps: tuple[Step, ...]
    slot: np.dtype
    #: the box (the tiled shape) and the logical array's dims it was made for
    box: tuple[int, ...] = ()
    dims: tuple[int, ...] = ()

    @cached_property
    def flat_kinds(self) -> tuple[tuple[int, np.dtype], ...]:
        """The flat arrays the kernel steps take: ``(role, dtype)``, each once."""
        return tuple(dict.fromkeys((role, dtype) for step in self.steps for _, role, dtype, _ in step.flats))

    @cached_property
    def bound(self) -> Callable[[np.ndarray, np.ndarray, int], bool] | None:
        """:meth:`run` with its lookups done once (:func:`bound_kernels`), or None."""
        return bound_kernels(self)

    def run(self, buffer: np.ndarray, logical: np.ndarray, fill: int) -> bool:
        """Run on ``buffer`` (1-D ``uint8``) and ``logical`` (C-contiguous, of the plan's dims);
        False, having done nothing, if a flat array the kernels need would be misaligned, or if
        the two arrays share memory (one would be read after the other overwrote it)."""
        bound = self.bound
        if bound is not None:
            return bound(buffer, logical, fill)
        if np.may_share_memory(buffer, logical):
            return False
        bases = (buffer, logical.reshape(-1).view(np.uint8))
        flats: dict[tuple[int, np.dtype], np.ndarray] = {}
        for role, dtype in self.flat_kinds:
            flat = typed(bases[role], dtype)
            if not flat.flags.aligned:
                return False
            flats[(role, dtype)] = flat
        slot = None
        for step in self.steps:
            if step.kind == "kernel":
                args = list(step.args)
                for at, role, dtype, _ in step.flats:
                    args[at] = flats[(role, dtype)]
                if step.stage is not None:
                    at, need, dtype = step.stage
                    args[at] = engine.transpose_stage(need, dtype)
                getattr(*step.kernel)(*args)  # type: ignore[misc]
            elif step.kind == "copy":
                engine.copy(step.places[0].view(bases), step.places[1].view(bases))
            elif step.kind == "copyto":
                np.copyto(step.places[0].view(bases), step.places[1].view(bases))
            else:
                if slot is None:
                    slot = np.full(self.slot.itemsize, fill, np.uint8).view(self.slot)[0]
                step.places[0].view(bases)[...] = slot
        return True


def bound_kernels(program: Program) -> Callable[[np.ndarray, np.ndarray, int], bool] | None:
    """:meth:`Program.run` for a program of kernel steps only, its lookups done once: the
    kernels resolved, the argument lists made; a call then makes each flat array the kernels
    take from the two arrays (a view each) and calls them. None for other programs.

    The flat array of the logical array is ``logical.ravel()`` (a view: ``run`` takes a
    C-contiguous array) seen as the kernels' dtype; the buffer's is the buffer seen so,
    its last few bytes left out if need be. Misaligned, sharing memory with the other array, or
    a buffer that is not one run (a strided ``out``): False, nothing done, as :meth:`Program.run`."""
    steps = program.steps
    if steps and all(step.kind == "copyto" for step in steps):
        # compiled only once the kernels are in use (numba imported: a small copy does not import it)
        return copy_calls(program) if engine.kernels_loaded() else None
    if not steps or any(step.kind != "kernel" or step.kernel is None for step in steps):
        return None
    entries = entry_calls(program)
    if entries is None:
        entries = transpose_calls(program)
    if entries is not None:
        return entries
    kinds = program.flat_kinds
    index = {kind: k for k, kind in enumerate(kinds)}
    calls = tuple(
        (
            getattr(*step.kernel),  # type: ignore[misc]
            list(step.args),
            tuple((at, index[(role, dtype)]) for at, role, dtype, _ in step.flats),
            step.stage,
        )
        for step in steps
    )
    stage_of = engine.transpose_stage

    def run(buffer: np.ndarray, logical: np.ndarray, fill: int) -> bool:
        if not buffer.flags.c_contiguous or np.may_share_memory(buffer, logical):
            return False
        flats = []
        for role, dtype in kinds:
            if role == BUFFER:
                base = buffer
            else:
                base = logical.ravel()
                if base.dtype.itemsize != 1 and base.dtype.itemsize != dtype.itemsize:
                    base = base.view(np.uint8)
            if base.nbytes % dtype.itemsize:
                base = base.view(np.uint8)[: base.nbytes // dtype.itemsize * dtype.itemsize]
            flat = base.view(dtype)
            if not flat.flags.aligned:
                return False
            flats.append(flat)
        for kernel, template, puts, stage in calls:
            args = template.copy()
            for at, k in puts:
                args[at] = flats[k]
            if stage is not None:
                at, need, dtype = stage
                args[at] = stage_of(need, dtype)
            kernel(*args)
        return True

    return run


#: NumPy type numbers of the dtypes numba takes as they are (bool, int8, uint8, int16, uint16):
#: a logical array of another dtype (float16, ``ml_dtypes``') is seen as the parts' integers.
NUMBA_TYPE_NUMS = frozenset(np.dtype(t).num for t in (np.bool_, np.int8, np.uint8, np.int16, np.uint16))


def entry_calls(program: Program) -> Callable[[np.ndarray, np.ndarray, int], bool] | None:
    """:meth:`Program.run` for a program of word-kernel steps that each build the buffer's
    words from the logical array's parts (or split them): one call per step of an entry of
    :mod:`layout_algebra.packing.replay_kernels` (three arguments; the views made in compiled
    code). None for any other program."""
    from layout_algebra.packing.replay_kernels import ENTRIES, entry_params

    calls = []
    parts_dtype: np.dtype | None = None
    for step in program.steps:
        assert step.kernel is not None
        found = ENTRIES.get(step.kernel[1])
        if found is None or step.stage is not None:
            return None
        entry, builds, dtype = found
        words_at, parts_at = (0, 3) if builds else (4, 0)
        roles = {at: (role, kind) for at, role, kind, _ in step.flats}
        if roles != {words_at: (BUFFER, np.dtype("<u4")), parts_at: (LOGICAL, dtype)}:
            return None
        if parts_dtype not in (None, dtype):
            return None
        parts_dtype = dtype
        a = step.args
        if builds:  # (words, wo, ws, parts, po, ps, step, shape, staged[, streamed])
            params = entry_params(a[1], a[2], a[4], a[5], a[6], a[7], a[8], *a[9:])
        else:  # (parts, po, ps, step, words, wo, ws, shape, staged[, streamed])
            params = entry_params(a[5], a[6], a[1], a[2], a[3], a[7], a[8], *a[9:])
        calls.append((entry, (params,)))
    if parts_dtype is None:
        return None
    return entries_on_flat(calls, NUMBA_TYPE_NUMS, parts_dtype)


def entries_on_flat(
    calls: Sequence[tuple[Callable[..., bool], tuple[Any, ...]]], native: frozenset[int], seen_as: np.dtype
) -> Callable[[np.ndarray, np.ndarray, int], bool]:
    """:meth:`Program.run` as calls of compiled entries, each ``entry(buffer, flat, *args)``:
    ``flat`` is the logical array raveled (a view), seen as ``seen_as`` unless numba takes its
    dtype as it is (its type number in ``native``). False, as soon as an entry answers False
    (misaligned, or the two arrays share memory: every entry checks both before it writes, and
    the first answers for all), or for a buffer that is not one run."""

    def run(buffer: np.ndarray, logical: np.ndarray, fill: int) -> bool:
        if not buffer.flags.c_contiguous:
            return False
        flat = logical.ravel()
        if flat.dtype.num not in native:
            flat = flat.view(seen_as)
        for entry, args in calls:
            if not entry(buffer, flat, *args):
                return False
        return True

    run.entries = tuple(entry for entry, _ in calls)  # type: ignore[attr-defined]
    run.in_parts = parts_runner(calls)  # type: ignore[attr-defined]
    return run


def parts_runner(
    calls: Sequence[tuple[Callable[..., bool], tuple[Any, ...]]],
) -> Callable[[np.ndarray, np.ndarray, int], bool] | None:
    """:meth:`Program.run` of entry calls with each call cut into parts run side by side
    (:func:`~layout_algebra.packing.replay_parts.run_parts`), as ``run(buffer, logical, count)``;
    None if a call has no parallel form. A call too short to cut into ``count`` parts runs whole.
    The tables of parts are made on first use of each ``count``."""
    from layout_algebra.packing.replay_parts import kind_of, parts_of, run_parts

    kinds = [kind_of(entry) if len(args) == 1 else -1 for entry, args in calls]
    if not calls or -1 in kinds:
        return None
    tables: dict[int, list[tuple[int, np.ndarray]]] = {}
    byte = np.dtype(np.uint8)

    def run(buffer: np.ndarray, logical: np.ndarray, count: int) -> bool:
        if not buffer.flags.c_contiguous:
            return False
        steps = tables.get(count)
        if steps is None:
            steps = []
            for kind, (_, (params,)) in zip(kinds, calls, strict=True):
                cut = parts_of(kind, params, count)
                steps.append((kind, params[None, :] if cut is None else cut))
            tables[count] = steps
        flat = logical.ravel().view(byte)
        for kind, parts in steps:
            if not run_parts(kind, buffer, flat, parts):
                return False
        return True

    return run


def entries_of(run: Callable[..., bool] | None) -> tuple[Callable[..., bool], ...]:
    """The compiled entries a bound run (:attr:`Program.bound`) calls, in order; () for any other."""
    return tuple(getattr(run, "entries", ()))


def parts_of_run(run: Callable[..., bool] | None) -> Callable[[np.ndarray, np.ndarray, int], bool] | None:
    """The form of a bound run (:attr:`Program.bound`) whose calls run in parts (:func:`parts_runner`), or None."""
    return getattr(run, "in_parts", None)


#: The transposing kernels of :mod:`layout_algebra.packing.transpose_kernels` that have an entry.
TRANSPOSE_KERNELS = frozenset({"gather_rows", "scatter_rows"})


def transpose_calls(program: Program) -> Callable[[np.ndarray, np.ndarray, int], bool] | None:
    """:meth:`Program.run` for a program of transposing steps of 4-byte elements by blocks in
    registers: one call per step of :func:`~layout_algebra.packing.replay_transposes.transpose_to_buffer`
    (or ``transpose_to_logical``), three arguments, the views made in compiled code. None for
    any other program."""
    from layout_algebra.packing.replay_transposes import (
        has_entry,
        transpose_params,
        transpose_to_buffer,
        transpose_to_logical,
    )

    calls = []
    word = np.dtype(np.uint32)
    for step in program.steps:
        assert step.kernel is not None
        if step.kernel[1] not in TRANSPOSE_KERNELS or step.stage is None:
            return None
        roles = {at: (role, dtype.itemsize) for at, role, dtype, _ in step.flats}
        if set(roles) != {0, 3} or roles[0][1] != 4 or roles[3][1] != 4 or roles[0][0] == roles[3][0]:
            return None
        a = step.args
        scatter = step.kernel[1] == "scatter_rows"
        far_strides = a[2] if scatter else a[5]
        if not has_entry(np.empty(1, word), far_strides, a[6]):
            return None
        params = transpose_params(scatter, a[1], a[2], a[4], a[5], a[6], a[8], a[9], a[10])
        calls.append((transpose_to_buffer if roles[0][0] == BUFFER else transpose_to_logical, (params,)))
    return entries_on_flat(calls, COPY_TYPE_NUMS, np.dtype(np.uint8))


#: NumPy type numbers of the dtypes a compiled copy takes as they are (bool, integers, float32,
#: float64, complex64, complex128); another dtype is seen as bytes.
COPY_TYPE_NUMS = frozenset(
    np.dtype(t).num
    for t in (
        np.bool_,
        np.int8,
        np.uint8,
        np.int16,
        np.uint16,
        np.int32,
        np.uint32,
        np.int64,
        np.uint64,
        np.float32,
        np.float64,
        np.complex64,
        np.complex128,
    )
)


def copy_calls(program: Program) -> Callable[[np.ndarray, np.ndarray, int], bool] | None:
    """:meth:`Program.run` for a program of ``np.copyto`` steps between the buffer and the
    logical array, each one call of :func:`~layout_algebra.packing.replay_kernels.copy_to_buffer`
    (or ``copy_to_logical``)
    (the views made in compiled code; building two views in NumPy cost more than copying 64 KB).
    None where a step has no such form (elements of 16 bytes, more than 4 dims once merged,
    strides not whole elements, both sides in one array)."""
    from layout_algebra.packing.replay_kernels import copy_params, copy_to_buffer, copy_to_logical

    calls = []
    for step in program.steps:
        dst, src = step.places
        size = dst.dtype.itemsize
        if dst.role == src.role or size not in (1, 2, 4, 8) or src.dtype.itemsize != size:
            return None
        if dst.offset % size or src.offset % size:
            return None
        if any(st < 0 or st % size for st in (*dst.strides, *src.strides)):
            return None
        merged = engine.merged_dims(
            dst.shape, [st // size for st in dst.strides], [st // size for st in src.strides], ndim=4
        )
        if merged is None:
            return None
        shape, (ds, ss) = merged
        params = copy_params(dst.role, dst.offset // size, ds, src.offset // size, ss, shape)
        calls.append((copy_to_buffer if dst.role == BUFFER else copy_to_logical, (params, size)))
    return entries_on_flat(calls, COPY_TYPE_NUMS, np.dtype(np.uint8))


def typed(base: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """``base`` (1-D bytes) as a 1-D array of ``dtype``, its last few bytes left out if need be."""
    size = dtype.itemsize
    return base[: base.size // size * size].view(dtype)


def _address(a: np.ndarray) -> int:
    return int(a.__array_interface__["data"][0])


def place(view: np.ndarray, bases: Sequence[np.ndarray]) -> Place | None:
    """``view`` as a :class:`Place` in one of ``bases`` (1-D bytes), or None if it is in neither."""
    at = _address(view)
    for role, base in enumerate(bases):
        start = _address(base)
        if start <= at < start + base.nbytes and np.may_share_memory(view, base):
            return Place(role, view.dtype, at - start, view.shape, view.strides)
    return None


def kernel_step(call: engine.KernelCall, bases: Sequence[np.ndarray]) -> Step | None:
    """A kernel call (flat arrays, each followed by its offset 0) as a :class:`Step` by role."""
    kernel, args, stage = call
    flats = []
    template = list(args)
    for at, arg in enumerate(args):
        if stage is not None and at == stage[0]:
            continue
        if not isinstance(arg, np.ndarray):
            continue
        where = place(arg, bases) if arg.ndim == 1 else None
        if where is None:
            if arg.dtype == np.int64:
                continue  # strides and shapes (new arrays) stay as they are
            return None
        if at + 1 >= len(args) or args[at + 1] != 0 or where.offset % arg.itemsize:
            return None
        flats.append((at, where.role, arg.dtype, where.offset))
        template[at] = None
        template[at + 1] = where.offset // arg.itemsize
    return Step("kernel", kernel, tuple(template), tuple(flats), stage)


def copy_step(dst: np.ndarray, src: np.ndarray, bases: Sequence[np.ndarray]) -> Step | None:
    """The step that copies ``src`` into ``dst``: a kernel call where one takes it, else a copy."""
    call = engine.kernel_call(dst, src)
    if call is not None:
        step = kernel_step(call, bases)
        if step is not None:
            return step
    d, s = place(dst, bases), place(src, bases)
    if d is None or s is None:
        return None
    pairs = engine.peeled(dst, src)
    if len(pairs) == 1 and not (dst.nbytes > engine.BLOCK_BYTES and engine.is_transposing(dst, src)):
        return Step("copyto", places=(d, s))  # what copy() would do: one np.copyto
    return Step("copy", places=(d, s))


def whole_bytes_program(
    plan: Plan,
    buffer: np.ndarray,
    logical: np.ndarray,
    size: int,
    chunks: Sequence[tuple[tuple[int, ...], int, int, int]],
    packing: bool,
    slot: Any,
    padded: bool = False,
    direct: Callable[[np.ndarray, np.ndarray], bool] | None = None,
) -> Program | None:
    """The program of the one-thread path of whole-byte elements (``size`` bytes each) over
    ``chunks``, packing or unpacking; None if a step cannot be replayed. Padding slots inside
    the box are filled (``padded``); the tail after the box is the caller's. Unpacking, a copy
    that is not a kernel call must be ``direct(view, part)`` (else the path replaced would
    have staged its chunk first): else None."""
    bases = (buffer, logical.reshape(-1).view(np.uint8))
    n_box = math.prod(plan.box)
    slots = buffer[: n_box * size].view(slot).reshape(plan.box)
    steps: list[Step] = []
    for prefix, lo, hi, _ in chunks:
        chunk = slots[chunk_index(prefix, lo, hi)]
        overlaps = [(b, w) for b in plan.blocks if (w := overlap(b, prefix, lo, hi)) is not None]
        if padded and packing:
            for gap in box_difference(tuple(slice(0, n) for n in chunk.shape), [w[1] for _, w in overlaps]):
                where = place(chunk[gap], bases)
                if where is None:
                    return None
                steps.append(Step("fill", places=(where,)))
        for b, (at_block, at_chunk) in overlaps:
            part, view = chunk[at_chunk], b.view[at_block]
            step = copy_step(part, view, bases) if packing else copy_step(view, part, bases)
            if step is None or (
                not packing and step.kind == "copy" and direct is not None and not direct(view, part)
            ):
                return None
            steps.append(step)
    return Program(tuple(steps), np.dtype(slot), plan.box, logical.shape)
