"""Control flow for the NumPy executor: ``while``, ``conditional`` and ``call`` run on real values.

:func:`layout_algebra.hlo.execute.run` hands every op of :data:`CONTROL_OPCODES` to
:func:`run_control` with itself as the *runner* (anything with ``module`` and
``computation(comp, args)``, which evaluates a computation on argument values). The values
are the executor's own: an ``ArrayValue`` (logical array, defined mask) or a tuple of them,
so a loop state keeps its layouts and what is defined from one iteration to the next.

* ``while(init), condition=c, body=b``: ``state = init``; while ``c(state)`` is true,
  ``state = b(state)``; the result is the last state. At most :data:`MAX_ITERATIONS`
  iterations (or the cap of an enclosing ``with iteration_cap(n):``): a loop that runs longer
  raises :class:`LoopLimitError` (a clear error, not a hang). A condition that reads undefined data (padding) stops the run with
  :class:`UndefinedControlError`: which way the loop goes is unspecified.
* ``conditional(p, x_true, x_false), true_computation=t, false_computation=f`` runs ``t(x_true)``
  when ``p`` is true, else ``f(x_false)``; ``conditional(i, x_0, ..., x_{n-1}),
  branch_computations={b_0, ..., b_{n-1}}`` runs ``b_i(x_i)``, an index outside ``[0, n)``
  running the last branch (XLA's rule).
* ``call(x...), to_apply=c`` is ``c(x...)``.

A counter loop that doubles a vector three times:

>>> import numpy as np
>>> from layout_algebra.hlo.execute import run
>>> text = '''HloModule m
... cond {
...   s = (s32[], f32[2]{0}) parameter(0)
...   i = s32[] get-tuple-element(s), index=0
...   n = s32[] constant(3)
...   ROOT lt = pred[] compare(i, n), direction=LT
... }
... body {
...   s = (s32[], f32[2]{0}) parameter(0)
...   i = s32[] get-tuple-element(s), index=0
...   one = s32[] constant(1)
...   j = s32[] add(i, one)
...   v = f32[2]{0} get-tuple-element(s), index=1
...   w = f32[2]{0} add(v, v)
...   ROOT t = (s32[], f32[2]{0}) tuple(j, w)
... }
... ENTRY e {
...   x = f32[2]{0} parameter(0)
...   zero = s32[] constant(0)
...   init = (s32[], f32[2]{0}) tuple(zero, x)
...   ROOT w = (s32[], f32[2]{0}) while(init), condition=cond, body=body
... }'''
>>> counter, vector = run(text, [np.array([1.0, -0.5], np.float32)])
>>> int(counter.array), vector.array.tolist()
(3, [8.0, -4.0])

A loop whose condition never becomes false stops at the cap with the loop's name:

>>> forever = text.replace("direction=LT", "direction=NE").replace("constant(3)", "constant(-1)")
>>> try:
...     with iteration_cap(50):
...         run(forever, [np.zeros(2, np.float32)])
... except LoopLimitError as err:
...     print(str(err)[:54])
while w ran 50 iterations and its condition cond still

A conditional picks its branch by a predicate:

>>> pick = '''HloModule m
... neg {
...   a = f32[2]{0} parameter(0)
...   ROOT n = f32[2]{0} negate(a)
... }
... same {
...   a = f32[2]{0} parameter(0)
...   ROOT c = f32[2]{0} copy(a)
... }
... ENTRY e {
...   p = pred[] parameter(0)
...   x = f32[2]{0} parameter(1)
...   ROOT c = f32[2]{0} conditional(p, x, x), true_computation=neg, false_computation=same
... }'''
>>> run(pick, [np.bool_(True), np.array([1.0, 2.0], np.float32)]).array.tolist()
[-1.0, -2.0]
>>> run(pick, [np.bool_(False), np.array([1.0, 2.0], np.float32)]).array.tolist()
[1.0, 2.0]
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator, Sequence
from typing import Any, Protocol

import numpy as np

from layout_algebra.hlo.attributes import computation_names
from layout_algebra.hlo.execute_ops import ArrayValue, UnsupportedOpError, Value
from layout_algebra.hlo.ir import HloComputation, HloInstruction, HloModule
from layout_algebra.hlo.validity import InvalidHlo

__all__ = [
    "CONTROL_OPCODES",
    "MAX_ITERATIONS",
    "LoopLimitError",
    "UndefinedControlError",
    "iteration_cap",
    "run_control",
]

#: The ops :func:`run_control` executes.
CONTROL_OPCODES = frozenset({"while", "conditional", "call"})

#: The most iterations one ``while`` may run before :class:`LoopLimitError` (by default).
MAX_ITERATIONS = 10_000

_CAP: contextvars.ContextVar[int] = contextvars.ContextVar("iteration_cap", default=MAX_ITERATIONS)


@contextlib.contextmanager
def iteration_cap(n: int) -> Iterator[None]:
    """Within the block, a ``while`` may run at most ``n`` iterations."""
    if not isinstance(n, int) or n < 0:
        raise ValueError(f"iteration_cap({n!r}): expected a whole number of iterations >= 0")
    token = _CAP.set(n)
    try:
        yield
    finally:
        _CAP.reset(token)


class LoopLimitError(UnsupportedOpError):
    """A ``while`` that ran :data:`MAX_ITERATIONS` iterations without stopping."""


class UndefinedControlError(UnsupportedOpError):
    """A loop condition or branch selector that reads undefined data (padding)."""


class Runner(Protocol):
    """What :func:`run_control` needs of the executor: the module and a way to run a computation."""

    module: HloModule

    def computation(self, comp: HloComputation, args: Sequence[Value]) -> Value: ...


def called(runner: Runner, ins: HloInstruction, names: Sequence[str]) -> list[HloComputation]:
    """The computations ``names`` of the runner's module (a clear error for a missing one)."""
    found = []
    for name in names:
        try:
            found.append(runner.module.computation(name))
        except KeyError:
            raise InvalidHlo(
                f"instruction {ins.name!r}: {ins.opcode} calls {name!r}, which the module does not have"
            ) from None
    return found


def attribute_computation(runner: Runner, ins: HloInstruction, key: str) -> HloComputation:
    names = computation_names(ins.attributes.get(key, ""))
    if len(names) != 1:
        raise InvalidHlo(f"instruction {ins.name!r}: {ins.opcode} needs one {key}=, got {names or 'none'}")
    return called(runner, ins, names)[0]


def scalar_of(ins: HloInstruction, value: Value, what: str) -> Any:
    """The one element of a rank-0 ``value`` (a predicate or an index), which must be defined."""
    if not isinstance(value, ArrayValue) or value.data.size != 1:
        raise InvalidHlo(f"instruction {ins.name!r}: the {what} is not a scalar")
    if not bool(np.all(value.defined)):
        raise UndefinedControlError(
            ins.opcode,
            f"instruction {ins.name!r}: the {what} reads undefined data (padding): its value is unspecified",
        )
    return value.data.reshape(()).item()


def run_while(runner: Runner, ins: HloInstruction, operands: list[Value]) -> Value:
    """The state once the condition is false (at most :data:`MAX_ITERATIONS` iterations)."""
    if len(operands) != 1:
        raise InvalidHlo(f"instruction {ins.name!r}: while takes one operand, got {len(operands)}")
    condition = attribute_computation(runner, ins, "condition")
    body = attribute_computation(runner, ins, "body")
    state = operands[0]
    cap = _CAP.get()
    for _ in range(cap):
        if not scalar_of(ins, runner.computation(condition, [state]), f"condition {condition.name}'s result"):
            return state
        state = runner.computation(body, [state])
    raise LoopLimitError(
        "while",
        f"while {ins.name} ran {cap} iterations and its condition {condition.name} still holds "
        "(the executor's cap; the loop may not terminate)",
    )


def branch_index(ins: HloInstruction, selector: Value, branches: int, by_predicate: bool) -> int:
    """Which branch runs: a true predicate picks 0 (true_computation), an index outside
    ``[0, branches)`` the last branch."""
    value = scalar_of(ins, selector, "branch selector")
    if by_predicate:
        return 0 if value else 1
    index = int(value)
    return index if 0 <= index < branches else branches - 1


def run_conditional(runner: Runner, ins: HloInstruction, operands: list[Value]) -> Value:
    if "branch_computations" in ins.attributes:
        branches = called(runner, ins, computation_names(ins.attributes["branch_computations"]))
        by_predicate = False
    else:
        branches = [
            attribute_computation(runner, ins, "true_computation"),
            attribute_computation(runner, ins, "false_computation"),
        ]
        by_predicate = True
    if not branches or len(operands) != len(branches) + 1:
        raise InvalidHlo(
            f"instruction {ins.name!r}: conditional with {len(branches)} branches takes "
            f"{len(branches) + 1} operands, got {len(operands)}"
        )
    k = branch_index(ins, operands[0], len(branches), by_predicate)
    return runner.computation(branches[k], [operands[k + 1]])


def run_call(runner: Runner, ins: HloInstruction, operands: list[Value]) -> Value:
    names = ins.calls or ((ins.to_apply,) if ins.to_apply else ())
    if len(names) != 1:
        raise InvalidHlo(f"instruction {ins.name!r}: call must call one computation")
    return runner.computation(called(runner, ins, names)[0], operands)


def run_control(runner: Runner, ins: HloInstruction, operands: list[Value]) -> Value:
    """The value of control op ``ins`` (one of :data:`CONTROL_OPCODES`) on ``operands``."""
    if ins.opcode == "while":
        return run_while(runner, ins, operands)
    if ins.opcode == "conditional":
        return run_conditional(runner, ins, operands)
    if ins.opcode == "call":
        return run_call(runner, ins, operands)
    raise UnsupportedOpError(ins.opcode, f"instruction {ins.name!r}: {ins.opcode} is not a control op")
