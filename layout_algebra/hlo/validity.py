"""XLA's validity rules for HLO, stated once: what XLA's verifier rejects, and the one error that
says so (:class:`InvalidHlo`). Read by the audit, the rewrite verifier
(:mod:`layout_algebra.hlo.verify`), the NumPy executor (:mod:`layout_algebra.hlo.execute`) and pass
validation, so that all of them refuse the same modules.

**Layouts** (``LayoutUtil::ValidateLayoutForShape``): every array's layout is one XLA accepts, and
an ``E(n)`` holds the element:

>>> from layout_algebra.model.syntax import parse_shape
>>> layout_problem(parse_shape("f32[2,3]{1,0}")) is None
True
>>> layout_problem(parse_shape("s8[4]{0:E(4)}"))
'E(4) cannot hold a s8 element (8 bits)'

**Bitcasts** (``ShapeVerifier::HandleBitcast``). A bitcast reinterprets its operand's buffer,
so XLA's layout-sensitive verifier requires

* **the same shape size**: the backend's size function gives both shapes the same number
  of bytes. On TPU that size pads to the first tile and rounds the element count up to
  ``L(n)``: ``ShapeUtil::ArraySize``, XLA:TPU's allocation, read here off the stage pipeline
  (:func:`layout_algebra.meaning.sizes.xla_shape_size`). As in ``ArraySize``, a
  layout without tiles ignores ``L(n)``: its size is its elements' bytes
  (``ByteSizeOfElements``; the HLO audit counts that ``L(n)``, and the ``bitcast`` command
  requires both sizes, the buffer with it and ``ArraySize`` without it, to agree);
* **the same side of host memory**: a bitcast in or out of ``S(5)`` is refused, unless its
  operand is a ``constant`` (the caller says whether it is).

A copy of ``f32[3,128]{1,0:T(8,128)}`` holds three rows padded to a whole tile of eight:
a bitcast of it to the untiled ``f32[3,128]{1,0}`` would read 4096 bytes as 1536.

>>> bitcast_size_problem("f32[3,128]{1,0:T(8,128)}", "f32[3,128]{1,0}")
'changes the shape size: the operand f32[3,128]{1,0:T(8,128)} takes 4096 bytes, the result f32[3,128]{1,0} 1536 bytes (XLA requires a bitcast to keep its shape size)'
>>> bitcast_size_problem("f32[8,128]{1,0:T(8,128)}", "f32[1024]{0}") is None
True

Packed types count their packed bytes (``E(4)``: two ``s4`` per byte), and with symbolic
sizes the two sizes are formulas that must be equal for every size allowed (the verifier
asks Z3; here they are only shown):

>>> bitcast_size_problem("s4[3,128]{1,0:E(4)}", "s4[384]{0:E(4)}") is None
True
>>> bitcast_shape_sizes("f32[N,128]{1,0:T(8,128)}", "f32[N,128]{1,0}")
(4096*ceiling(N/8), 512*N)

The memory-space part:

>>> host_memory_problem(0, 5, operand_is_constant=False)
"from memory space S(0) to S(5): XLA's verifier refuses a bitcast in or out of host memory S(5)"
>>> host_memory_problem(0, 5, operand_is_constant=True) is None   # a constant's bitcast is allowed
True
>>> host_memory_problem(0, 1, operand_is_constant=False) is None  # valid, though it moves no data
True
"""

from __future__ import annotations

from layout_algebra.meaning.sizes import meaningful_array, xla_shape_size
from layout_algebra.model.errors import LayoutAlgebraError
from layout_algebra.model.shapes import ArrayShape, Dim
from layout_algebra.model.validation import layout_problems

__all__ = [
    "HOST_MEMORY_SPACE",
    "InvalidHlo",
    "bitcast_shape_sizes",
    "bitcast_size_problem",
    "host_memory_problem",
    "layout_problem",
    "size_text",
]


class InvalidHlo(LayoutAlgebraError, ValueError):
    """HLO that XLA would reject: the message names the instruction and the problem."""


def layout_problem(shape: ArrayShape) -> str | None:
    """What XLA's verifier finds wrong with the layout of ``shape``, else ``None``."""
    problems = layout_problems(shape)
    e = shape.layout.element_size_in_bits if shape.layout is not None else 0
    if e and e < shape.element_type.bit_width:
        problems.append(
            f"E({e}) cannot hold a {shape.element_type.text} element ({shape.element_type.bit_width} bits)"
        )
    return problems[0] if problems else None


#: ``Layout::kHostMemorySpace``: XLA refuses a bitcast in or out of it (but for a constant).
HOST_MEMORY_SPACE = 5


def bitcast_shape_sizes(operand: ArrayShape | str, result: ArrayShape | str) -> tuple[Dim, Dim]:
    """The shape sizes in bytes XLA's verifier compares for a bitcast: (operand, result).

    Integers for concrete shapes, SymPy expressions for symbolic ones.
    """
    return xla_shape_size(operand), xla_shape_size(result)


def size_text(size: Dim) -> str:
    """``4096 bytes``, or the formula for a symbolic size."""
    return f"{size} bytes"


def bitcast_size_problem(operand: ArrayShape | str, result: ArrayShape | str) -> str | None:
    """What is wrong with a bitcast from ``operand`` to ``result`` of concrete sizes whose
    shape sizes differ, else ``None`` (also for symbolic sizes: the caller proves them equal)."""
    a, b = bitcast_shape_sizes(operand, result)
    if not (isinstance(a, int) and isinstance(b, int)) or a == b:
        return None
    return size_change(meaningful_array(operand), meaningful_array(result), a, b)


def size_change(operand: ArrayShape, result: ArrayShape, a: Dim, b: Dim) -> str:
    """The words for a bitcast from ``operand`` (``a`` bytes) to ``result`` (``b`` bytes)."""
    return (
        f"changes the shape size: the operand {operand} takes {size_text(a)}, the result {result} "
        f"{size_text(b)} (XLA requires a bitcast to keep its shape size)"
    )


def host_memory_problem(space_in: int, space_out: int, operand_is_constant: bool) -> str | None:
    """What is wrong with a bitcast from memory space ``space_in`` to ``space_out``, else ``None``."""
    if (space_in == HOST_MEMORY_SPACE) == (space_out == HOST_MEMORY_SPACE) or operand_is_constant:
        return None
    return (
        f"from memory space S({space_in}) to S({space_out}): XLA's verifier refuses a bitcast in or out of host "
        f"memory S({HOST_MEMORY_SPACE})"
    )
