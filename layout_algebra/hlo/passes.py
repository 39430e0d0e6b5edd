"""Translation validation of XLA's pass pipeline: did each pass keep the program's meaning?

XLA prints the module after every pass (``XLA_FLAGS="--xla_dump_to=DIR
--xla_dump_hlo_pass_re=.*"``) as ``module_NNNN.<name>.<id>.NNNN.<pipeline>.after_<pass>
[.before_<pass>].txt``. ``validate_passes(DIR)`` orders each module's files by their pass
number, skips every other file of the directory (``before_optimizations``,
``hlo_module_config.txt``, ...), and for each consecutive pair answers:

* ``unchanged``: the two modules are the same program (names, ``metadata`` and other inert
  attributes aside);
* ``proved``: Z3 proved that the later module computes the same root as the earlier one,
  **logically** (the same array, layouts free) up to and including layout assignment,
  **physically** (the same root buffer, bit for bit) after it;
* ``refuted``: a root element that differs, with what each module reads there, re-checked
  by evaluation; or a later module that XLA's verifier refuses where the earlier one passes
  (a ``bitcast`` that changes its shape size, :mod:`layout_algebra.hlo.validity`);
* ``unknown``: with the reason (an op whose counterpart the later module lacks, a
  precision change, a solver limit...).

How a pair is decided (the rewrite verifier, :func:`layout_algebra.hlo.verify_rewrite`,
does the element-level proofs):

1. fusions and calls are inlined, so that both modules are one flat list of instructions;
2. every *compute* op the verifier does not interpret (``dot``, ``convolution``,
   ``reduce``, ``custom-call``, ``while``...) is a **cut point**: an op of the later module
   is paired with an op of the earlier one of the same opcode, attributes (called
   computations compared by structure) and logical result type, once the verifier proved
   their operands logically equal; both are then replaced by one fresh parameter — equal
   ops on equal operands give equal results, and nothing else is assumed about them;
3. a ``dot`` is first put in a canonical form (operands transposed to
   batch-free-contracting order), so that a transpose folded into its dimension numbers is
   still proved; a ``reduce`` likewise (kept dimensions first); a convolution that computes
   exactly a dot's products (no spatial dimensions, or the base-dilated window XLA writes
   for a batched dot) is read as that dot;
4. the roots of the two cut modules are compared by the verifier (structurally equal cones
   are equal without a query).

A proof may rest on named assumptions (:data:`ASSUMPTIONS`: the verifier's float rules,
``elided-constants`` for literals the dump prints as ``{...}``, ``convolution-as-dot``);
``PassResult.assumptions`` lists those it used.

A refutation is reported only when its element is confirmed by evaluation and does not
depend on the value of a cut point; otherwise the answer is ``unknown`` with the element.

A pass that moves a transpose into a ``dot``'s dimension numbers:

>>> before = '''HloModule m, entry_computation_layout={(f32[8,16]{1,0}, f32[32,16]{1,0})->f32[8,32]{1,0}}
... ENTRY e {
...   a = f32[8,16]{1,0} parameter(0)
...   b = f32[32,16]{1,0} parameter(1)
...   t = f32[16,32]{1,0} transpose(b), dimensions={1,0}
...   ROOT d = f32[8,32]{1,0} dot(a, t), lhs_contracting_dims={1}, rhs_contracting_dims={0}
... }'''
>>> after = '''HloModule m, entry_computation_layout={(f32[8,16]{1,0}, f32[32,16]{1,0})->f32[8,32]{1,0}}
... ENTRY e {
...   a = f32[8,16]{1,0} parameter(0)
...   b = f32[32,16]{1,0} parameter(1)
...   ROOT d = f32[8,32]{1,0} dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={1}
... }'''
>>> validate_pair(before, after, mode="physical").status
'proved'
>>> wrong = after.replace("rhs_contracting_dims={1}", "rhs_contracting_dims={0}")
>>> wrong = wrong.replace("b = f32[32,16]{1,0} parameter(1)", "b = f32[16,32]{1,0} parameter(1)")
>>> wrong = wrong.replace("f32[32,16]{1,0})->", "f32[16,32]{1,0})->")
>>> r = validate_pair(before, wrong, mode="logical")
>>> r.status, "dot" in r.reason
('unknown', True)
"""

from __future__ import annotations

import dataclasses
import os
import re
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from layout_algebra.hlo.evaluate_elementwise import FLOAT_RULES
from layout_algebra.hlo.ir import (
    HloComputation,
    HloInstruction,
    HloModule,
    HloOperand,
)
from layout_algebra.hlo.opcodes import (
    ELEMENTWISE_OPCODES,
    LAYOUT_SENSITIVE_OPCODES,
    MOVEMENT_OPCODES,
    RANDOM_OPCODES,
)
from layout_algebra.hlo.parser import parse_module
from layout_algebra.hlo.pass_canonical import (
    Builder,
    Unsupported,
    base_dilated_convolution_as_dot,
    canonical_dot,
    canonical_reduce,
    convolution_as_dot,
    flatten_module,
)
from layout_algebra.hlo.pass_keys import attributes_key, module_key, plain_text
from layout_algebra.hlo.validity import bitcast_size_problem
from layout_algebra.hlo.verify import float_rules_used, verify_rewrite
from layout_algebra.model.errors import LayoutAlgebraError
from layout_algebra.model.shapes import ArrayShape, Shape
from layout_algebra.prove.result import json_value

__all__ = [
    "ASSUMPTIONS",
    "DEFAULT_FLOAT_RULES",
    "PASS_FILE",
    "PROVISIONAL_TILING",
    "PassDump",
    "PassResult",
    "ValidationReport",
    "read_dump_directory",
    "validate_pair",
    "validate_passes",
]

#: A numbered per-pass module file of an XLA dump directory.
PASS_FILE = re.compile(
    r"^module_(?P<module>\d+)\.(?P<name>.+?)\.(?P<number>\d{4})\.(?P<pipeline>[^/]*?)"
    r"\.after_(?P<after>.+?)(?:\.before_(?P<before>.+))?\.txt$"
)

#: The name of the assumption that identifies elided constants (``{...}``) by their names.
ELIDED_CONSTANTS = "elided-constants"

#: The name of the assumption that a convolution computing a dot's products is that dot.
CONVOLUTION_AS_DOT = "convolution-as-dot"

#: The name of the assumption that XLA:TPU's sub-byte parameter tilings are provisional until
#: ``post-fusion-tiling-assignment`` (the entry computation layout holds the final tiling).
PROVISIONAL_TILING = "xla-tpu-provisional-subbyte-tiling"

#: The pass whose output is the last one compared logically (its input has no layouts).
LAYOUT_ASSIGNMENT = "layout-assignment"

# Ops the rewrite verifier interprets element by element; every other op is a cut point.
_INTERPRETED = frozenset({*MOVEMENT_OPCODES, *ELEMENTWISE_OPCODES})
#: The float rules pass validation relies on unless told otherwise: all of them, each named
#: in the report of every proof that used it.
DEFAULT_FLOAT_RULES: tuple[str, ...] = tuple(FLOAT_RULES)

#: Every assumption a proof of pass validation may rest on, by the name the report gives.
ASSUMPTIONS: dict[str, str] = {
    **FLOAT_RULES,
    ELIDED_CONSTANTS: "a constant printed as {...} (its literal elided by the dump) is an unknown "
    "array; the later module's equals the earlier's when both have the same name, are defined in "
    "computations of the same name and have the same type and dimensions (XLA does not rename a "
    "constant, and its name uniquer never gives an old name to a new instruction)",
    PROVISIONAL_TILING: "XLA:TPU keeps the tiling of 8-bit and narrower arrays provisional from layout "
    "assignment until post-fusion-tiling-assignment, while the entry computation layout already holds the "
    "final tiling: an entry parameter whose tiling a pass changes to the entry computation layout's (same "
    "element type, dimensions, dimension order, E(n) and memory space) holds the same buffer before and "
    "after, laid out as the entry computation layout says. With no bitcast reading such a parameter, the "
    "roots (both with the entry computation layout's result shape) are then the same buffers exactly when "
    "they are the same logical arrays, which is what is proved",
    CONVOLUTION_AS_DOT: "a convolution whose window meets exactly the products of a dot (no spatial "
    "dimensions, or a base-dilated window pairing output s with input s and kernel s) computes that "
    "dot: the same products, summed alike (XLA's reference evaluator skips dilation holes and padding)",
}


class DumpDirectoryError(LayoutAlgebraError, ValueError):
    """A directory that is not an XLA dump directory (the message quotes it)."""


@dataclass(frozen=True)
class PassDump:
    """One per-pass file: the module after pass ``after`` (pass number ``number``)."""

    path: Path
    module: str
    number: int
    pipeline: str
    after: str
    before: str | None

    @property
    def label(self) -> str:
        return f"{self.number:04d} {self.pipeline}: after {self.after}"


@dataclass(frozen=True)
class PassResult:
    """The answer for one consecutive pair of dumps (``earlier`` -> ``later``)."""

    module: str
    earlier: PassDump
    later: PassDump
    mode: str
    #: ``unchanged``, ``proved``, ``refuted`` or ``unknown`` (see the module docstring)
    verdict: str
    seconds: float
    reason: str = ""
    counterexample: Mapping[str, Any] | None = None
    cut_points: int = 0
    #: the named assumptions (:data:`ASSUMPTIONS`) a proof relied on
    assumptions: tuple[str, ...] = ()

    @property
    def status(self) -> str:
        """The package's answer to "does the later module compute the same?": an unchanged
        program is ``proved`` (the same program, names aside); otherwise the verdict."""
        return "proved" if self.verdict == "unchanged" else self.verdict

    def __bool__(self) -> bool:
        return self.status == "proved"

    def to_dict(self) -> dict[str, Any]:
        return {
            "module": self.module,
            "from": self.earlier.path.name,
            "to": self.later.path.name,
            "pass": self.later.after,
            "pipeline": self.later.pipeline,
            "number": self.later.number,
            "mode": self.mode,
            "status": self.status,
            "verdict": self.verdict,
            "seconds": round(self.seconds, 4),
            "reason": self.reason,
            "counterexample": json_value(None if self.counterexample is None else dict(self.counterexample)),
            "cut_points": self.cut_points,
            "assumptions": list(self.assumptions),
        }


@dataclass(frozen=True)
class ValidationReport:
    """Every pair of every module of a dump directory, in pass order."""

    directory: Path
    results: tuple[PassResult, ...]
    skipped: tuple[str, ...] = field(default=())

    def counts(self, after_layout_assignment: bool = False) -> dict[str, int]:
        counts = {s: 0 for s in ("proved", "refuted", "unknown", "unchanged")}
        for r in self.results:
            if not after_layout_assignment or r.mode == "physical" or r.later.after == LAYOUT_ASSIGNMENT:
                counts[r.verdict] += 1
        return counts

    def to_dict(self) -> dict[str, Any]:
        return {
            "directory": str(self.directory),
            "counts": self.counts(),
            "counts_from_layout_assignment": self.counts(after_layout_assignment=True),
            "skipped_files": list(self.skipped),
            "pairs": [r.to_dict() for r in self.results],
        }


# ------------------------------------------------------------------------ the directory
def parse_pass_file_name(name: str) -> PassDump | None:
    """The pass file a name denotes, or ``None`` for any other file of a dump directory.

    >>> d = parse_pass_file_name("module_0000.jit_f.cl_9.0021.Layout_assignment.after_layout-assignment.before_pipeline-end.txt")
    >>> d.module, d.number, d.pipeline, d.after, d.before
    ('0000.jit_f.cl_9', 21, 'Layout_assignment', 'layout-assignment', 'pipeline-end')
    >>> parse_pass_file_name("module_0000.jit_f.cl_9.0018.tpu-tiling-rewriter.after_tiling_propagation.txt").after
    'tiling_propagation'
    >>> parse_pass_file_name("module_0000.jit_f.cl_9.before_optimizations.txt") is None
    True
    """
    m = PASS_FILE.match(name)
    if m is None:
        return None
    return PassDump(
        Path(name),
        f"{m['module']}.{m['name']}",
        int(m["number"]),
        m["pipeline"],
        m["after"],
        m["before"],
    )


def read_dump_directory(directory: str | os.PathLike[str]) -> tuple[dict[str, list[PassDump]], list[str]]:
    """Each module's per-pass files in pass order, and the names of the files skipped."""
    root = Path(directory)
    if not root.is_dir():
        raise DumpDirectoryError(f"{str(directory)!r} is not a directory")
    modules: dict[str, list[PassDump]] = {}
    skipped: list[str] = []
    for name in sorted(os.listdir(root)):
        dump = parse_pass_file_name(name)
        if dump is None or not (root / name).is_file():
            skipped.append(name)
            continue
        modules.setdefault(dump.module, []).append(dataclasses.replace(dump, path=root / name))
    for dumps in modules.values():
        dumps.sort(key=lambda d: d.number)
    return modules, skipped


# ------------------------------------------------------------------------ one pair
@dataclass
class _Side:
    module: HloModule
    builder: Builder
    root: str
    by_name: dict[str, HloInstruction]
    opaque: list[str]
    #: convolutions read as dots (CONVOLUTION_AS_DOT)
    as_dot: frozenset[str] = frozenset()
    #: the keys of called computations, by (name, with layouts), computed once per module
    attribute_keys: dict[tuple[str, bool], str] = field(default_factory=dict)

    @classmethod
    def of(cls, module: HloModule) -> _Side:
        builder, root = flatten_module(module)
        instructions = list(builder.instructions)
        builder.instructions = []
        as_dot = set()
        for instr in instructions:
            if instr.opcode == "convolution":
                instr = convolution_as_dot(instr)
                if instr.opcode == "convolution":
                    instr = base_dilated_convolution_as_dot(builder, instr)
                if instr.opcode == "dot":
                    as_dot.add(instr.name)
            if instr.opcode == "dot":
                instr = canonical_dot(builder, instr)
            elif instr.opcode == "reduce" and instr.dimensions is not None:
                instr = canonical_reduce(builder, instr)
            builder.emit(instr)
        by_name = {i.name: i for i in builder.instructions}
        opaque = [
            i.name for i in builder.instructions if i.opcode not in _INTERPRETED or _is_elided_constant(i)
        ]
        return cls(module, builder, root, by_name, opaque, frozenset(as_dot))

    def parameters(self) -> list[HloInstruction]:
        return [i for i in self.builder.instructions if i.opcode == "parameter"]


def _is_elided_constant(instr: HloInstruction) -> bool:
    """A constant whose literal the dump did not print (``constant({...})``)."""
    return instr.opcode == "constant" and "..." in (instr.literal or "")


def _signature(side: _Side, instr: HloInstruction) -> str:
    shapes = side.builder.shapes
    if _is_elided_constant(instr):  # known only by its name (ASSUMPTIONS["elided-constants"])
        computation, name = side.builder.origin.get(instr.name, ("?", instr.name))
        return f"elided constant {computation}/{name} {plain_text(instr.shape)}"
    memo: dict[tuple[str, bool], str] = {}
    if instr.opcode in LAYOUT_SENSITIVE_OPCODES:
        operand_text = ",".join(str(shapes[o.name]) for o in instr.operands)
        result = str(instr.shape)
    else:
        operand_text = ",".join(plain_text(shapes[o.name]) for o in instr.operands)
        result = plain_text(instr.shape)
    return f"{instr.opcode} {result} ({operand_text}) {attributes_key(side.module, instr, memo)}"


class _Cuts:
    """Cut points: pairs (earlier op, later op) replaced by one parameter each."""

    def __init__(self, a: _Side, b: _Side, float_rules: frozenset[str] = frozenset()) -> None:
        self.a, self.b = a, b
        self.float_rules = float_rules
        self.used_rules: set[str] = set()  # what the proofs so far relied on
        self.first = 1 + max(
            [i.parameter_number or 0 for i in (*a.parameters(), *b.parameters())], default=-1
        )
        self.pairs: dict[str, str] = {}  # later name -> earlier name
        self.number: dict[str, int] = {}  # earlier name -> parameter number

    def add(self, a_name: str, b_name: str) -> None:
        self.pairs[b_name] = a_name
        self.number[a_name] = self.first + len(self.number)

    def module(self, side: _Side, root: str, earlier: bool) -> HloModule:
        """``side`` cut at the pairs, with root ``root`` (only its cone is kept).

        A cut op becomes parameter ``number``; on the later side that parameter has the
        earlier op's shape, and a ``copy`` (the same logical array) gives it the later op's
        layout, so that both modules have one interface."""
        keep: list[HloInstruction] = []
        seen: set[str] = set()
        order: list[str] = []
        stack = [(root, False)]
        while stack:
            name, done = stack.pop()
            if done:
                order.append(name)
                continue
            if name in seen:
                continue
            seen.add(name)
            stack.append((name, True))
            instr = side.by_name[name]
            is_cut = (name in self.number) if earlier else (name in self.pairs)
            if not is_cut:
                stack.extend((o.name, False) for o in reversed(instr.operands))
        for name in order:
            instr = side.by_name[name]
            if earlier and name in self.number:
                keep.append(
                    HloInstruction(name, instr.shape, "parameter", parameter_number=self.number[name])
                )
            elif not earlier and name in self.pairs:
                a_instr = self.a.by_name[self.pairs[name]]
                p = f"{name}.cut"
                keep.append(
                    HloInstruction(
                        p, a_instr.shape, "parameter", parameter_number=self.number[self.pairs[name]]
                    )
                )
                if str(a_instr.shape) != str(instr.shape):
                    keep.append(HloInstruction(name, instr.shape, "copy", (HloOperand(p),)))
                else:
                    keep[-1] = dataclasses.replace(keep[-1], name=name)
            else:
                keep.append(instr)
        # every parameter of both modules, so that the interfaces match
        present = {i.name for i in keep}
        extra = [p for p in side.parameters() if p.name not in present]
        for a_name, n in self.number.items():
            if earlier and a_name not in present:
                extra.append(
                    HloInstruction(a_name, self.a.by_name[a_name].shape, "parameter", parameter_number=n)
                )
            if not earlier:
                b_name = next(b for b, a in self.pairs.items() if a == a_name)
                if b_name not in present and f"{b_name}.cut" not in present:
                    extra.append(
                        HloInstruction(
                            f"{b_name}.cut", self.a.by_name[a_name].shape, "parameter", parameter_number=n
                        )
                    )
        instructions = [*extra, *keep]
        instructions[-1] = dataclasses.replace(instructions[-1], is_root=True)
        entry = HloComputation(side.module.entry.name, tuple(instructions), is_entry=True)
        return HloModule(side.module.name, (entry,), entry)


class ConeKeys:
    """Hash-consed cone structures, shared by both sides of a pair: each distinct node — its
    opcode, shape, literal or parameter number, attributes, and the *ids* of its operands — gets
    one small integer, so two cones have equal ids exactly when they have the same structure
    (no hash, no collision), and every entry has the size of one instruction: nothing grows with
    the number of paths through the DAG (a backward pass shares sub-expressions everywhere)."""

    def __init__(self) -> None:
        self.ids: dict[tuple[Any, ...], int] = {}

    def id(self, node: tuple[Any, ...]) -> int:
        return self.ids.setdefault(node, len(self.ids))


def _cone_key(side: _Side, name: str, cut: Mapping[str, int], memo: dict[str, int], keys: ConeKeys) -> int:
    """The structure of the cone of ``name`` down to cut points and parameters, as its id in ``keys``."""
    stack = [name]
    while stack:
        top = stack[-1]
        if top in memo:
            stack.pop()
            continue
        instr = side.by_name[top]
        if top in cut:
            memo[top] = keys.id(("cut", cut[top]))
            stack.pop()
            continue
        pending = [o.name for o in instr.operands if o.name not in memo]
        if pending:
            stack.extend(pending)
            continue
        stack.pop()
        ops = tuple(memo[o.name] for o in instr.operands)
        extra = instr.parameter_number if instr.opcode == "parameter" else (instr.literal or "")
        attributes = attributes_key(side.module, instr, side.attribute_keys)
        memo[top] = keys.id((instr.opcode, str(instr.shape), extra, ops, attributes))
    return memo[name]


def _decide_equal(cuts: _Cuts, a_name: str, b_name: str, mode: str, timeout_ms: int) -> tuple[str, Any]:
    """Are earlier ``a_name`` and later ``b_name`` equal (given the cuts)? (status, result)."""
    a_cut = {n: k for n, k in cuts.number.items()}
    b_cut = {b: cuts.number[a] for b, a in cuts.pairs.items()}
    keys = ConeKeys()
    ka = _cone_key(cuts.a, a_name, a_cut, {}, keys)
    kb = _cone_key(cuts.b, b_name, b_cut, {}, keys)
    if ka == kb and (
        mode == "logical" or str(cuts.a.builder.shapes[a_name]) == str(cuts.b.builder.shapes[b_name])
    ):
        return "proved", None
    before = cuts.module(cuts.a, a_name, earlier=True)
    after = cuts.module(cuts.b, b_name, earlier=False)
    try:
        result = verify_rewrite(before, after, mode=mode, timeout_ms=timeout_ms, float_rules=cuts.float_rules)
    except ValueError as err:
        return "unknown", str(err)
    except RecursionError:
        return (
            "unknown",
            "the chains of instructions are too deep for the encoding (Python's recursion limit)",
        )
    if result.status == "proved":
        cuts.used_rules.update(float_rules_used(result))
    return result.status, result


def _invalid_bitcast(module: HloModule) -> str | None:
    """The first ``bitcast`` of ``module`` (concrete sizes) that changes its shape size, said."""
    for computation, instruction in module.instructions():
        if instruction.opcode != "bitcast" or len(instruction.operands) != 1:
            continue
        name = instruction.operands[0].name
        operand = computation.instruction(name).shape if name in computation else None
        if isinstance(operand, ArrayShape) and isinstance(instruction.shape, ArrayShape):
            problem = bitcast_size_problem(operand, instruction.shape)
            if problem is not None:
                return f"bitcast {instruction.name} {problem}"
    return None


def validate_pair(
    earlier: str | HloModule,
    later: str | HloModule,
    *,
    mode: str,
    timeout_ms: int = 10_000,
    float_rules: Collection[str] = DEFAULT_FLOAT_RULES,
) -> PassResult:
    """Does ``later`` compute what ``earlier`` computes (``mode``: ``logical``/``physical``)?

    ``float_rules``: the :data:`~layout_algebra.hlo.verify.FLOAT_RULES` a proof may rely
    on (all by default). A proof names every assumption it used (these rules, and
    ``elided-constants``: :data:`ASSUMPTIONS`) in ``PassResult.assumptions``."""
    start = time.perf_counter()
    a_mod = parse_module(earlier) if isinstance(earlier, str) else earlier
    b_mod = parse_module(later) if isinstance(later, str) else later
    dummy = PassDump(Path("earlier"), a_mod.name, 0, "", "earlier", None)
    dummy_b = PassDump(Path("later"), b_mod.name, 1, "", "later", None)
    try:
        return _validate_modules(a_mod, b_mod, dummy, dummy_b, mode, timeout_ms, float_rules, start)
    except MemoryError:  # a memory cap (ulimit -v, --max-memory): this pair's answer, not a crash
        reason = "ran out of memory validating this pair (the process's memory cap); no answer"
    except RecursionError:
        reason = "the chains of instructions are too deep to follow (Python's recursion limit); no answer"
    return PassResult(a_mod.name, dummy, dummy_b, mode, "unknown", time.perf_counter() - start, reason)


def _validate_modules(
    a_mod: HloModule,
    b_mod: HloModule,
    dummy: PassDump,
    dummy_b: PassDump,
    mode: str,
    timeout_ms: int,
    float_rules: Collection[str],
    start: float,
) -> PassResult:

    used: set[str] = set()

    def answer(status: str, reason: str = "", counterexample: Any = None, cuts: int = 0) -> PassResult:
        return PassResult(
            a_mod.name,
            dummy,
            dummy_b,
            mode,
            status,
            time.perf_counter() - start,
            reason,
            counterexample,
            cuts,
            tuple(sorted(used)) if status == "proved" else (),
        )

    if module_key(a_mod) == module_key(b_mod):
        return answer("unchanged")
    introduced = _invalid_bitcast(b_mod) if _invalid_bitcast(a_mod) is None else None
    if introduced is not None:  # the pass wrote HLO that XLA's verifier refuses
        return answer(
            "refuted", f"the later module is invalid HLO: {introduced}", {"invalid_hlo": introduced}
        )
    if mode == "physical":
        interface = _interface_change(a_mod, b_mod)
        if interface:
            return answer("unknown", interface)
        retiled = _provisional_retiling(a_mod, b_mod)
        if isinstance(retiled, str):
            return answer("unknown", retiled)
        if retiled:
            logical = _validate_modules(
                a_mod, b_mod, dummy, dummy_b, "logical", timeout_ms, float_rules, start
            )
            said = f"parameters {', '.join(map(str, retiled))} re-tiled ({PROVISIONAL_TILING})"
            if logical.status == "proved":
                used.update((*logical.assumptions, PROVISIONAL_TILING))
                return answer("proved", cuts=logical.cut_points)
            if logical.status == "refuted":
                return dataclasses.replace(logical, mode=mode, seconds=time.perf_counter() - start)
            return answer("unknown", f"{said}: compared logically: {logical.reason}", cuts=logical.cut_points)
    try:
        a, b = _Side.of(a_mod), _Side.of(b_mod)
    except (Unsupported, KeyError, ValueError) as err:
        return answer("unknown", f"cannot inline the modules: {err}")
    cuts = _Cuts(a, b, frozenset(float_rules))
    used = cuts.used_rules
    matched_ops: set[str] = set()
    by_signature: dict[str, list[str]] = {}
    for name in a.opaque:
        by_signature.setdefault(_signature(a, a.by_name[name]), []).append(name)
    reasons: list[str] = []
    b_cone = _cone_names(b, b.root)
    for b_name in b.opaque:
        b_instr = b.by_name[b_name]
        if b_name not in b_cone:
            continue
        if b_instr.opcode in RANDOM_OPCODES:
            reasons.append(f"{b_instr.opcode} {b_name} is nondeterministic: no two are known equal")
            break
        candidates = [n for n in by_signature.get(_signature(b, b_instr), []) if n not in matched_ops]
        candidates.sort(key=lambda n: (n != b_name, 0))
        matched = None
        failures: list[str] = []
        for a_name in candidates[:4]:
            a_instr = a.by_name[a_name]
            ok = True
            for ao, bo in zip(a_instr.operands, b_instr.operands, strict=True):
                status, result = _decide_equal(cuts, ao.name, bo.name, "logical", timeout_ms)
                if status != "proved":
                    ok = False
                    why = result if isinstance(result, str) else (result.reason or result.status)
                    failures.append(f"{a_name}: operand {ao.name} vs {bo.name}: {status} ({str(why)[:200]})")
                    break
            if ok:
                matched = a_name
                break
        if matched is None:
            reasons.append(_no_counterpart(a, b, b_instr, candidates, failures))
            break
        matched_ops.add(matched)
        cuts.add(matched, b_name)
        if _is_elided_constant(b_instr):
            used.add(ELIDED_CONSTANTS)
        if (matched in a.as_dot) != (b_name in b.as_dot):  # a convolution paired with a dot
            used.add(CONVOLUTION_AS_DOT)
    if reasons:
        return answer("unknown", _precision_changes(a, b) + reasons[0], cuts=len(cuts.pairs))
    status, result = _decide_equal(cuts, a.root, b.root, mode, timeout_ms)
    if status == "proved":
        return answer("proved", cuts=len(cuts.pairs))
    if isinstance(result, str):
        return answer("unknown", result, cuts=len(cuts.pairs))
    if status == "refuted":
        cex = dict(result.counterexample or {})
        text = f"{cex.get('before', '')} {cex.get('after', '')}"
        cut_numbers = set(cuts.number.values())
        touched = sorted({int(n) for n in re.findall(r"parameter (\d+)", text) if int(n) in cut_numbers})
        if touched:
            names = {v: k for k, v in cuts.number.items()}
            ops = ", ".join(f"{a.by_name[names[n]].opcode} {names[n]}" for n in touched)
            return answer(
                "unknown",
                f"the roots differ at element {cex.get('element')} unless outputs of {ops} coincide "
                f"(before: {cex.get('before')}; after: {cex.get('after')}); not re-checked with the real ops",
                cex,
                len(cuts.pairs),
            )
        return _rechecked_refutation(cuts, a, b, mode, cex, answer)
    precision = _precision_changes(a, b)
    return answer(
        "unknown", precision + (result.reason or "the verifier gave no answer"), cuts=len(cuts.pairs)
    )


def _rechecked_refutation(
    cuts: _Cuts, a: _Side, b: _Side, mode: str, cex: dict[str, Any], answer: Callable[..., PassResult]
) -> PassResult:
    """A refutation of the cut modules, run once more by the NumPy executor (an oracle
    independent of the verifier): kept only if running them shows a difference too."""
    from layout_algebra.hlo.execute_compare import compare

    before = cuts.module(a, a.root, earlier=True)
    after = cuts.module(b, b.root, earlier=False)
    try:
        comparison = compare(
            before,
            after,
            mode="physical" if mode == "physical" else "logical",
            sizes=cex.get("sizes") or None,
        )
    except ValueError as err:
        return answer(
            "unknown",
            f"the verifier refuted at {cex.get('element')}, but the executor cannot run the modules: {err}",
            cex,
            len(cuts.pairs),
        )
    if comparison.same is False:
        return answer("refuted", "", {**cex, "execution": comparison.detail}, len(cuts.pairs))
    if comparison.same is None:
        return answer(
            "unknown",
            f"the verifier refuted at element {cex.get('element')} (before: {cex.get('before')}; after: "
            f"{cex.get('after')}), but the executor cannot run the modules to confirm it: {comparison.detail}",
            cex,
            len(cuts.pairs),
        )
    return answer(
        "unknown",
        f"the verifier refuted at element {cex.get('element')}, but running the modules shows no difference",
        cex,
        len(cuts.pairs),
    )


def _interface_change(a: HloModule, b: HloModule) -> str:
    """Why the later module's buffers cannot be compared bit for bit with the earlier's, or ``""``.

    After layout assignment the entry computation layout is fixed: a pass may not change
    it, and the root must have exactly its result layout."""
    la, lb = a.entry_computation_layout, b.entry_computation_layout
    if str(la) != str(lb):
        return f"the entry computation layout changed: {la} before, {lb} after"
    for module, when in ((a, "earlier"), (b, "later")):
        layout = module.entry_computation_layout
        if layout is not None and str(module.entry.root.shape) != str(layout.result_shape):
            return (
                f"the {when} module's root {module.entry.root.name} is {module.entry.root.shape}, "
                f"not the entry computation layout's result {layout.result_shape}"
            )
    return ""


def _parameter_shapes(module: HloModule) -> dict[int, Shape]:
    return {
        i.parameter_number: i.shape
        for i in module.entry.instructions
        if i.opcode == "parameter" and i.parameter_number is not None
    }


def _only_tiles_differ(x: Shape, y: Shape) -> bool:
    """Two arrays of one 8-bit or narrower type whose layouts differ in their tiles alone."""
    if not (isinstance(x, ArrayShape) and isinstance(y, ArrayShape)) or x.layout is None or y.layout is None:
        return False
    return (
        x.element_type == y.element_type
        and x.element_type.bit_width <= 8
        and x.dimensions == y.dimensions
        and dataclasses.replace(x.layout, tiles=()) == dataclasses.replace(y.layout, tiles=())
        and x.layout.tiles != y.layout.tiles
    )


def _provisional_retiling(a: HloModule, b: HloModule) -> list[int] | str:
    """The entry parameters whose provisional sub-byte tiling the pass finalized to the entry
    computation layout's (:data:`PROVISIONAL_TILING`), or why the parameters differ otherwise.

    Physical mode compares buffers given the same parameter buffers: a parameter whose layout
    changed is a changed interface unless XLA:TPU's provisional tiling explains it, and then
    only where no bitcast reads the parameter through its tiling."""
    pa, pb = _parameter_shapes(a), _parameter_shapes(b)
    if sorted(pa) != sorted(pb):
        return f"the entry parameters changed: {sorted(pa)} before, {sorted(pb)} after"
    layout = b.entry_computation_layout
    declared = layout.parameter_shapes if layout is not None else ()
    retiled = []
    for n in sorted(pa):
        x, y = pa[n], pb[n]
        if str(x) == str(y):
            continue
        final = declared[n] if n < len(declared) else None
        if final is None or str(y) != str(final) or not _only_tiles_differ(x, y):
            return (
                f"the rewrite changes the interface: parameter {n} is {x} before and {y} after "
                "(not a provisional sub-byte tiling finalized to the entry computation layout's)"
            )
        retiled.append(n)
    for module in (a, b) if retiled else ():
        for computation, instruction in module.instructions():
            if instruction.opcode != "bitcast" or instruction.operands[0].name not in computation:
                continue
            operand = computation.instruction(instruction.operands[0].name)
            shape = operand.shape
            # a bitcast of an entry parameter, or (conservatively) of any fused or called
            # parameter of 8 bits or fewer, reads a tiling that may be provisional
            if operand.opcode == "parameter" and (
                (computation is module.entry and operand.parameter_number in retiled)
                or (
                    computation is not module.entry
                    and isinstance(shape, ArrayShape)
                    and shape.element_type.bit_width <= 8
                )
            ):
                return (
                    f"bitcast {instruction.name} reads parameter {operand.name} through its tiling, "
                    f"which is provisional (re-tiled parameters {', '.join(map(str, retiled))}): the tiling matters, "
                    "and it is not final"
                )
    return retiled


def _precision_changes(a: _Side, b: _Side) -> str:
    """The converts the later module has more of than the earlier, by types: what a
    precision-changing pass (``bfloat16-propagation``, ``float-type-correction``) adds."""

    def converts(side: _Side) -> dict[str, list[str]]:
        found: dict[str, list[str]] = {}
        for i in side.builder.instructions:
            if i.opcode == "convert" and i.operands and isinstance(i.shape, ArrayShape):
                source = side.builder.shapes[i.operands[0].name]
                if isinstance(source, ArrayShape) and source.element_type != i.shape.element_type:
                    key = f"{source.element_type.text}->{i.shape.element_type.text}"
                    found.setdefault(key, []).append(i.name.rsplit("/", 1)[-1])
        return found

    ca, cb = converts(a), converts(b)
    extra = [
        f"{', '.join(names[:3])} ({key})"
        for key, names in sorted(cb.items())
        if len(names) > len(ca.get(key, []))
    ]
    if not extra:
        return ""
    retyped = _retyped_instructions(a, b)
    computed = f" and computes {', '.join(retyped[:4])} in another type" if retyped else ""
    return "precision change: the pass converts element types: " + "; ".join(extra) + computed + ". "


def _retyped_instructions(a: _Side, b: _Side) -> list[str]:
    """``name (old type -> new type)`` for each instruction both modules define (same name,
    same computation) with another element type in the later one."""
    earlier = {
        a.builder.origin[i.name]: i.shape.element_type.text
        for i in a.builder.instructions
        if i.name in a.builder.origin and isinstance(i.shape, ArrayShape)
    }
    found = []
    for i in b.builder.instructions:
        key = b.builder.origin.get(i.name)
        if key in earlier and isinstance(i.shape, ArrayShape) and i.opcode != "parameter":
            if earlier[key] != i.shape.element_type.text:
                found.append(f"{i.opcode} {key[1]} ({earlier[key]} -> {i.shape.element_type.text})")
    return found


def _cone_names(side: _Side, root: str) -> set[str]:
    seen: set[str] = set()
    stack = [root]
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        seen.add(name)
        stack.extend(o.name for o in side.by_name[name].operands)
    return seen


def _operand_types(side: _Side, instr: HloInstruction) -> list[str]:
    shapes = side.builder.shapes
    return [
        s.element_type.text if isinstance(s, ArrayShape) else str(s)
        for s in (shapes[o.name] for o in instr.operands)
    ]


def _no_counterpart(
    a: _Side, b: _Side, b_instr: HloInstruction, candidates: list[str], failures: list[str]
) -> str:
    what = f"{b_instr.opcode} {b_instr.name} ({plain_text(b_instr.shape)})"
    if _is_elided_constant(b_instr):
        computation, name = b.builder.origin.get(b_instr.name, ("?", b_instr.name))
        return (
            f"constant {b_instr.name} ({plain_text(b_instr.shape)}) is printed {{...}} (its value elided by the dump) "
            f"and the earlier module has no elided constant {name} of that type in a computation {computation}: "
            "its value is unknown"
        )
    if failures:
        return (
            f"{what}: no op of the earlier module with the same opcode and attributes has provably equal operands; "
            + "; ".join(failures[:2])
        )
    same_op = [n for n in a.opaque if a.by_name[n].opcode == b_instr.opcode]
    b_types = _operand_types(b, b_instr)
    for n in same_op:
        x = a.by_name[n]
        if isinstance(x.shape, ArrayShape) and isinstance(b_instr.shape, ArrayShape):
            if x.shape.dimensions != b_instr.shape.dimensions:
                continue
            a_types = _operand_types(a, x)
            if x.shape.element_type != b_instr.shape.element_type or a_types != b_types:
                return (
                    f"precision change: {what} computes ({', '.join(b_types)}) -> {b_instr.shape.element_type.text} "
                    f"where the earlier {x.opcode} {n} computes ({', '.join(a_types)}) -> {x.shape.element_type.text} "
                    "(the pass changes element precision on purpose)"
                )
    if b_instr.opcode == "convolution" and "lhs_dilate" in b_instr.attributes.get("window", ""):
        return (
            f"{what}: a base-dilated convolution ({b_instr.attributes['window']}, dim_labels="
            f"{b_instr.attributes.get('dim_labels')}) that is not a batched dot (its window does not pair "
            "output s with input s and kernel s alone), and the earlier module has no convolution like it"
        )
    if same_op:
        return f"{what}: no {b_instr.opcode} of the earlier module has the same attributes, operand types and result type"
    return f"{what}: the earlier module has no {b_instr.opcode} (the pass changed a compute op whose index semantics are not stated)"


# ------------------------------------------------------------------------ the directory
def pass_mode(dumps: Sequence[PassDump], k: int) -> str:
    """``logical`` for the pair ending at dump ``k`` up to layout assignment, then ``physical``."""
    last = max((i for i, d in enumerate(dumps) if d.after == LAYOUT_ASSIGNMENT), default=None)
    if last is None:
        return "logical"
    return "logical" if k <= last else "physical"


def validate_passes(
    directory: str | os.PathLike[str],
    *,
    timeout_ms: int = 10_000,
    modules: Sequence[str] | None = None,
    float_rules: Collection[str] = DEFAULT_FLOAT_RULES,
) -> ValidationReport:
    """Validate every consecutive pair of per-pass dumps of every module in ``directory``
    (``float_rules`` as for :func:`validate_pair`)."""
    found, skipped = read_dump_directory(directory)
    if not found:
        raise DumpDirectoryError(
            f"{str(directory)!r} holds no per-pass module files (module_NNNN.<name>.NNNN.<pipeline>.after_<pass>...txt)"
        )
    results: list[PassResult] = []
    for name, dumps in found.items():
        if modules is not None and name not in modules:
            continue
        parsed: dict[int, HloModule] = {}

        def load(k: int, dumps: list[PassDump] = dumps, parsed: dict[int, HloModule] = parsed) -> HloModule:
            if k not in parsed:
                parsed[k] = parse_module(dumps[k].path.read_text())
                parsed.pop(k - 2, None)
            return parsed[k]

        for k in range(1, len(dumps)):
            mode = pass_mode(dumps, k)
            start = time.perf_counter()
            try:
                result = validate_pair(
                    load(k - 1), load(k), mode=mode, timeout_ms=timeout_ms, float_rules=float_rules
                )
            except ValueError as err:  # HloParseError, a file that is not UTF-8 text
                result = PassResult(name, dumps[k - 1], dumps[k], mode, "unknown", 0.0, f"cannot read: {err}")
            results.append(
                dataclasses.replace(
                    result,
                    module=name,
                    earlier=dumps[k - 1],
                    later=dumps[k],
                    seconds=time.perf_counter() - start,
                )
            )
    return ValidationReport(Path(directory), tuple(results), tuple(skipped))
