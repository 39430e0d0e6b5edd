"""CuTe ``shape:stride`` layouts in and out.

A CuTe layout (NVIDIA CUTLASS) gives each logical dimension a *mode*: a size, or a
tuple of sizes read fastest-first, each with a stride. The offset of an index is the sum
of its mixed-radix digits times their strides. :func:`to_cute` is the package's exporter
(:mod:`layout_algebra.codegen.cute`, certified against the layout map); :func:`from_cute`
reads such text back into the XLA layout that stores every element at the same place:

>>> from layout_algebra.interop.cute import from_cute, to_cute
>>> to_cute("bf16[16,256]{1,0:T(8,128)(2,1)}")
'((2,4,2),(128,2)):((1,256,2048),(2,1024))'
>>> str(from_cute("((2,4,2),(128,2)):((1,256,2048),(2,1024))", "bf16"))
'bf16[16,256]{1,0:T(8,128)(2,1)}'

Plain strides are a ``minor_to_major``; a gap in them is a tile that pads (rows of 100
elements 128 apart):

>>> str(from_cute("(4,6):(1,4)", "f32"))
'f32[4,6]{0,1}'
>>> str(from_cute("(5,100):(128,1)", "f32"))
'f32[5,100]{1,0:T(128)}'

CuTe text records where elements are, not how big the buffer is, and leaves out
modes of size 1. So several XLA layouts can give the same text (``T(1,128)`` and
``T(128)`` above; ``L(n)``; where a size-1 dimension sits in ``minor_to_major``):
:func:`from_cute` returns the simplest (fewest tile levels, then fewest entries, size-1
dimensions placed in logical order). Layouts it cannot match raise
:class:`NotExpressible` with the reason:

>>> from_cute("(4,6):(6,2)", "f32")
Traceback (most recent call last):
...
layout_algebra.interop.recover.NotExpressible: (4,6):(6,2): the smallest stride is 2, not 1: the elements are not adjacent, and the layouts recognised here start every tile with consecutive elements
"""

from __future__ import annotations

import math

from layout_algebra.codegen import cute as codegen_cute
from layout_algebra.codegen.cute import cute_layout, cute_modes
from layout_algebra.interop.recover import NotExpressible, recover_layout, strided_positions
from layout_algebra.model.shapes import ArrayShape, Shape

__all__ = ["cute_layout", "cute_modes", "from_cute", "to_cute"]


def to_cute(shape: Shape | str) -> str:
    """``shape``'s layout as CuTe text: :func:`layout_algebra.codegen.to_cute`, certified against the map.

    Raises this module's ``NotExpressible`` (a subclass of the codegen one) with its reason.

    >>> to_cute("f32[12,256]{1,0:T(8,128)}")
    Traceback (most recent call last):
    ...
    layout_algebra.interop.recover.NotExpressible: f32[12,256]{1,0:T(8,128)}: dimension 0 (size 12) is padded to 16 by tile 1: (8,128) and then split as 2 x 8, so the padding falls inside a mode: CuTe layouts cannot express padding there
    """
    try:
        return codegen_cute.to_cute(shape)
    except codegen_cute.NotExpressible as err:
        raise NotExpressible(str(err)) from None


def from_cute(text: str, dtype: str, *, element_size_in_bits: int = 0, rank: int | None = None) -> ArrayShape:
    """The simplest XLA layout (``minor_to_major`` and tiles) placing every element where ``text`` does.

    ``dtype`` is the XLA element type; the dimensions are the modes' sizes. CuTe strides
    count elements, so ``E(n)`` (``element_size_in_bits``) is not in the text. A scalar
    is ``1:0`` in CuTe, as is a size-1 vector: pass ``rank=0`` for the scalar. Raises
    ``NotExpressible`` (a ``ValueError``) with the reason when no layout matches.

    >>> str(from_cute("1:0", "f32")), str(from_cute("1:0", "f32", rank=0))
    ('f32[1]{0}', 'f32[]')
    """
    modes = cute_modes(text)
    if rank == 0 and all(math.prod(sizes) == 1 for sizes, _ in modes):
        return recover_layout(dtype, (), (), element_size_in_bits=element_size_in_bits)
    if rank is not None and rank != len(modes):
        raise NotExpressible(f"{text}: {len(modes)} modes for rank {rank}")
    dims = tuple(math.prod(sizes) for sizes, _ in modes)
    if 0 in dims:
        raise NotExpressible(f"{text}: a mode of size 0 has no elements to place")
    digits = []
    for k, (sizes, strides) in enumerate(modes):
        weight = 1
        live = [(size, stride) for size, stride in zip(sizes, strides, strict=True) if size != 1]
        for j, (size, stride) in enumerate(live):
            digits.append((k, weight, None if j == len(live) - 1 else size, stride))
            weight *= size
    try:
        positions = strided_positions(digits, dims)
        return recover_layout(dtype, dims, positions, exact=False, element_size_in_bits=element_size_in_bits)
    except NotExpressible as err:
        raise NotExpressible(f"{text}: {err}") from None
