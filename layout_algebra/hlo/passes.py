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
``elided-constants`` for literals the dump prints as ``{...}``, ``convolution-as-dot``,
``topk-decomposition``); the canonical forms other rewritten ops are
read in before pairing are in :mod:`layout_algebra.hlo.pass_forms`;
``PassResult.assumptions`` lists those it used.

A refutation is reported only when its element is confirmed by evaluation and does not
depend on the value of a cut point. When it does (the verifier's difference reaches the root
only through a cut ``dot``, ``reduce``...), or when the operands of a cut candidate were
refuted, both *whole* modules are run by the NumPy executor with the real ops
(:mod:`~layout_algebra.hlo.pass_execution`): a root element that differs there is a
refutation (its counterexample records the execution); otherwise the answer is ``unknown``.

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
from layout_algebra.hlo.float_precision import EXCESS_PRECISION
from layout_algebra.hlo.ir import (
    HloModule,
)
from layout_algebra.hlo.opcodes import (
    RANDOM_OPCODES,
)
from layout_algebra.hlo.parser import parse_module
from layout_algebra.hlo.pass_canonical import (
    Unsupported,
)
from layout_algebra.hlo.pass_cuts import (
    Cuts,
    Side,
    cone_names,
    is_elided_constant,
    no_counterpart,
    signature,
)
from layout_algebra.hlo.pass_diff import decide_on_changed_region, kept, kept_module_key, kept_side
from layout_algebra.hlo.pass_execution import whole_module_difference, whole_module_text
from layout_algebra.hlo.pass_forms import TOPK_DECOMPOSITION, WHOLE_WINDOW_REDUCE, assumptions_of_pair
from layout_algebra.hlo.pass_interface import (
    interface_change,
    invalid_bitcast,
    precision_changes,
    provisional_interface,
)
from layout_algebra.hlo.pass_jobs import Progress, default_jobs, run_in_order
from layout_algebra.hlo.pass_loops import LOOP_OPCODES, inductive_counterpart
from layout_algebra.hlo.pass_precision import operand_failure, precision_verdict
from layout_algebra.model.errors import LayoutAlgebraError
from layout_algebra.prove.result import json_value

__all__ = [
    "ASSUMPTIONS",
    "DEFAULT_FLOAT_RULES",
    "OUT_OF_MEMORY",
    "PASS_FILE",
    "PROVISIONAL_TILING",
    "PairJob",
    "PassDump",
    "PassResult",
    "ValidationReport",
    "crashed_pair",
    "describe_result",
    "pair_jobs",
    "read_dump_directory",
    "run_pair_job",
    "run_pair_jobs",
    "validate_pair",
    "validate_passes",
]

#: A numbered per-pass module file of an XLA dump directory.
PASS_FILE = re.compile(
    r"^module_(?P<module>\d+)\.(?P<name>.+?)\.(?P<number>\d{4})\.(?P<pipeline>[^/]*?)"
    r"\.after_(?P<after>.+?)(?:\.before_(?P<before>.+))?\.txt$"
)

#: The reason of a pair that hit the memory cap (``--max-memory``, ``ulimit -v``).
OUT_OF_MEMORY = "ran out of memory validating this pair (the process's memory cap); no answer"

#: The name of the assumption that identifies elided constants (``{...}``) by their names.
ELIDED_CONSTANTS = "elided-constants"

#: The name of the assumption that a convolution computing a dot's products is that dot.
CONVOLUTION_AS_DOT = "convolution-as-dot"

#: The name of the assumption that XLA:TPU's sub-byte parameter tilings are provisional until
#: ``post-fusion-tiling-assignment`` (the entry computation layout holds the final tiling).
PROVISIONAL_TILING = "xla-tpu-provisional-subbyte-tiling"

#: The pass whose output is the last one compared logically (its input has no layouts).
LAYOUT_ASSIGNMENT = "layout-assignment"

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
    "element type, dimensions, dimension order, E(n) and memory space), and a root leaf whose tiling alone "
    "differs from the entry computation layout's result, hold the buffers the entry computation layout "
    "describes. With no bitcast reading or writing such a provisional tiling (a bitcast to its operand's very "
    "shape aside), the roots are then the same buffers exactly when they are the same logical arrays, which "
    "is what is proved",
    CONVOLUTION_AS_DOT: "a convolution whose window meets exactly the products of a dot (no spatial "
    "dimensions, windows of one element over size-1 kernel spatial dimensions, or a base-dilated window "
    "pairing output s with input s and kernel s) computes that dot: the same products, summed alike "
    "(XLA's reference evaluator skips dilation holes and padding)",
    WHOLE_WINDOW_REDUCE: "a reduce-window by maximum or minimum (any type) or integer add, from the "
    "reducer's identity, whose every window along some dimensions covers each of their elements once (the "
    "rest one-element windows) computes the reduce of those dimensions, broadcast: the same values combined "
    "by an associative, commutative op, the padding adding the identity; for floats up to which zero a "
    "maximum/minimum of +0 and -0 returns (XLA leaves that choice unspecified) and NaN payloads",
    TOPK_DECOMPOSITION: "XLA's top-k (the topk op, largest=true/false, and the TopK custom-call with its "
    "comparator) computes what topk-decomposer writes for it: a stable sort of (x, iota along the last "
    "dimension) along the last dimension (by the custom-call's comparator, or compare(p0, p1) GT/LT "
    "TOTALORDER for the op), both outputs sliced to the first k; XLA defines the custom-call by that "
    "rewrite, its runtime kernel is not public semantics",
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
    #: for a proof under ``excess-precision``: an input where the values at the stated
    #: precision differ, what the assumption permits (``None`` if none was run)
    evidence: Mapping[str, Any] | None = None

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
            "evidence": json_value(None if self.evidence is None else dict(self.evidence)),
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
    plain = [r for r in float_rules if r != EXCESS_PRECISION]  # precision erased only when needed

    def validated(rules: Collection[str]) -> PassResult:
        return _validate_modules(a_mod, b_mod, dummy, dummy_b, mode, timeout_ms, rules, start)

    try:
        result: PassResult = precision_verdict(validated(plain), a_mod, b_mod, float_rules, validated)
        return result
    except MemoryError:  # a memory cap (ulimit -v, --max-memory): this pair's answer, not a crash
        reason = OUT_OF_MEMORY
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

    if kept_module_key(a_mod) == kept_module_key(b_mod):
        return answer("unchanged")
    introduced = kept(b_mod, invalid_bitcast) if kept(a_mod, invalid_bitcast) is None else None
    if introduced is not None:  # the pass wrote HLO that XLA's verifier refuses
        return answer(
            "refuted", f"the later module is invalid HLO: {introduced}", {"invalid_hlo": introduced}
        )
    if mode == "physical":
        interface = interface_change(a_mod, b_mod)
        if interface:
            return answer("unknown", interface)
        retiled = provisional_interface(a_mod, b_mod)
        if isinstance(retiled, str):
            return answer("unknown", retiled)
        if retiled:
            logical = _validate_modules(
                a_mod, b_mod, dummy, dummy_b, "logical", timeout_ms, float_rules, start
            )
            said = f"provisional sub-byte tiling of {', '.join(retiled)} ({PROVISIONAL_TILING})"
            if logical.status == "proved":
                used.update((*logical.assumptions, PROVISIONAL_TILING))
                return answer("proved", cuts=logical.cut_points)
            if logical.status == "refuted":
                return dataclasses.replace(logical, mode=mode, seconds=time.perf_counter() - start)
            return answer("unknown", f"{said}: compared logically: {logical.reason}", cuts=logical.cut_points)
    try:
        a, b = kept_side(a_mod), kept_side(b_mod)
    except (Unsupported, KeyError, ValueError) as err:
        return answer("unknown", f"cannot inline the modules: {err}")
    cuts = Cuts(a, b, frozenset(float_rules))
    erase = EXCESS_PRECISION in float_rules
    used = cuts.used_rules
    matched_ops: set[str] = set()
    by_signature: dict[str, list[str]] = {}
    for name in a.opaque:
        by_signature.setdefault(signature(a, a.by_name[name], erase), []).append(name)
    reasons: list[str] = []
    operand_refuted = False  # an operand comparison of a cut candidate was refuted
    b_cone = cone_names(b, b.root)

    def prove(earlier: HloModule, later: HloModule) -> PassResult:  # a loop's body, condition, branch
        return validate_pair(earlier, later, mode="logical", timeout_ms=timeout_ms, float_rules=float_rules)

    context = f"{timeout_ms} {sorted(float_rules)}"
    for b_name in b.opaque:
        b_instr = b.by_name[b_name]
        if b_name not in b_cone:
            continue
        if b_instr.opcode in RANDOM_OPCODES:
            reasons.append(f"{b_instr.opcode} {b_name} is nondeterministic: no two are known equal")
            break
        candidates = [n for n in by_signature.get(signature(b, b_instr, erase), []) if n not in matched_ops]
        candidates.sort(key=lambda n: (n != b_name, 0))
        matched = None
        failures: list[str] = []
        for a_name in candidates[:4]:
            a_instr = a.by_name[a_name]
            ok = True
            for ao, bo in zip(a_instr.operands, b_instr.operands, strict=True):
                status, result = decide_on_changed_region(cuts, ao.name, bo.name, "logical", timeout_ms)
                if status != "proved":
                    ok = False
                    operand_refuted = operand_refuted or status == "refuted"
                    failures.append(operand_failure(a_name, ao.name, bo.name, status, result))
                    break
            if ok:
                matched = a_name
                break
        if matched is None and b_instr.opcode in LOOP_OPCODES:  # by induction (hlo.pass_loops)
            matched, why = inductive_counterpart(cuts, b_name, matched_ops, prove, context, timeout_ms)
            if matched is None:
                reasons.append(why)
                break
        if matched is None:
            reasons.append(no_counterpart(a, b, b_instr, candidates, failures))
            break
        matched_ops.add(matched)
        cuts.add(matched, b_name)
        if is_elided_constant(b_instr):
            used.add(ELIDED_CONSTANTS)
        if (matched in a.as_dot) != (b_name in b.as_dot):  # a convolution paired with a dot
            used.add(CONVOLUTION_AS_DOT)
        used.update(assumptions_of_pair(a.assumed, matched, b.assumed, b_name))
    if reasons:
        if operand_refuted:  # a difference before a cut op: does it reach the root? Run both.
            whole = whole_module_difference(a_mod, b_mod, mode)
            if isinstance(whole, dict):
                return answer("refuted", "", whole, len(cuts.pairs))
            reasons[0] += f" ({whole_module_text(whole)})"
        return answer("unknown", precision_changes(a, b) + reasons[0], cuts=len(cuts.pairs))
    status, result = decide_on_changed_region(cuts, a.root, b.root, mode, timeout_ms)
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
            whole = whole_module_difference(a_mod, b_mod, mode, cex.get("sizes") or None)
            if isinstance(whole, dict):  # the real ops carry the difference to the root
                return answer("refuted", "", {**whole, "verifier": cex}, len(cuts.pairs))
            return answer(
                "unknown",
                f"the roots differ at element {cex.get('element')} unless outputs of {ops} coincide "
                f"(before: {cex.get('before')}; after: {cex.get('after')}); {whole_module_text(whole)}",
                cex,
                len(cuts.pairs),
            )
        return _rechecked_refutation(cuts, a, b, mode, cex, answer)
    precision = precision_changes(a, b)
    return answer(
        "unknown", precision + (result.reason or "the verifier gave no answer"), cuts=len(cuts.pairs)
    )


def _rechecked_refutation(
    cuts: Cuts, a: Side, b: Side, mode: str, cex: dict[str, Any], answer: Callable[..., PassResult]
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


# ------------------------------------------------------------------------ the directory
def pass_mode(dumps: Sequence[PassDump], k: int) -> str:
    """``logical`` for the pair ending at dump ``k`` up to layout assignment, then ``physical``."""
    last = max((i for i, d in enumerate(dumps) if d.after == LAYOUT_ASSIGNMENT), default=None)
    if last is None:
        return "logical"
    return "logical" if k <= last else "physical"


@dataclass(frozen=True)
class PairJob:
    """One consecutive pair of a dump directory, as a worker process needs it (plain values)."""

    module: str
    earlier: PassDump
    later: PassDump
    mode: str
    timeout_ms: int
    float_rules: tuple[str, ...]


def run_pair_job(job: PairJob) -> PassResult:
    """One pair's answer, reading (only) its two files: the unit of work of ``validate_passes(jobs=N)``."""
    start = time.perf_counter()
    try:
        earlier = parse_module(job.earlier.path.read_text())
        later = parse_module(job.later.path.read_text())
        result = validate_pair(
            earlier, later, mode=job.mode, timeout_ms=job.timeout_ms, float_rules=job.float_rules
        )
    except ValueError as err:  # HloParseError, a file that is not UTF-8 text
        result = PassResult(
            job.module, job.earlier, job.later, job.mode, "unknown", 0.0, f"cannot read: {err}"
        )
    except MemoryError:
        result = PassResult(job.module, job.earlier, job.later, job.mode, "unknown", 0.0, OUT_OF_MEMORY)
    return dataclasses.replace(
        result, module=job.module, earlier=job.earlier, later=job.later, seconds=time.perf_counter() - start
    )


def crashed_pair(job: PairJob, why: str) -> PassResult:
    """The answer for a pair whose process died (a native crash, the kernel's out-of-memory kill)."""
    return PassResult(job.module, job.earlier, job.later, job.mode, "unknown", 0.0, f"no answer: {why}")


def pair_jobs(
    found: Mapping[str, Sequence[PassDump]],
    *,
    timeout_ms: int = 10_000,
    modules: Sequence[str] | None = None,
    float_rules: Collection[str] = DEFAULT_FLOAT_RULES,
) -> list[PairJob]:
    """Every consecutive pair of every module (``read_dump_directory``'s), in pass order."""
    return [
        PairJob(name, dumps[k - 1], dumps[k], pass_mode(dumps, k), timeout_ms, tuple(float_rules))
        for name, dumps in found.items()
        if modules is None or name in modules
        for k in range(1, len(dumps))
    ]


def describe_result(result: PassResult) -> str:
    """A pair in a few words (the progress bar's): its pass and answer."""
    return f"{result.later.number:04d} {result.later.after}: {result.verdict}"


def validate_passes(
    directory: str | os.PathLike[str],
    *,
    timeout_ms: int = 10_000,
    modules: Sequence[str] | None = None,
    float_rules: Collection[str] = DEFAULT_FLOAT_RULES,
    jobs: int = 1,
    progress: bool | None = False,
) -> ValidationReport:
    """Validate every consecutive pair of per-pass dumps of every module in ``directory``
    (``float_rules`` as for :func:`validate_pair`).

    ``jobs``: pairs validated at once, in processes (1: in this process, each parsed module
    serving both pairs it belongs to; 0: all cores); the answers are the same, in pass order.
    ``progress``: a progress bar on stderr (``None``: only when stderr is a terminal)."""
    found, skipped = read_dump_directory(directory)
    if not found:
        raise DumpDirectoryError(
            f"{str(directory)!r} holds no per-pass module files (module_NNNN.<name>.NNNN.<pipeline>.after_<pass>...txt)"
        )
    work = pair_jobs(found, timeout_ms=timeout_ms, modules=modules, float_rules=float_rules)
    with Progress(len(work), f"validating {Path(directory).name}", Progress.wanted(progress)) as bar:
        results = run_pair_jobs(work, jobs=jobs, progress=bar)
    return ValidationReport(Path(directory), tuple(results), tuple(skipped))


def run_pair_jobs(
    work: Sequence[PairJob], *, jobs: int = 1, progress: Progress | None = None
) -> list[PassResult]:
    """Each pair's answer, in order: ``jobs`` processes at once (0: all cores), or in this process."""
    bar = progress if progress is not None else Progress(len(work), "", enabled=False)
    if default_jobs(jobs, len(work)) > 1:
        return run_in_order(
            run_pair_job, work, jobs=jobs, progress=bar, describe=describe_result, on_crash=crashed_pair
        )
    return _serial(work, bar)


def _serial(work: Sequence[PairJob], bar: Progress) -> list[PassResult]:
    """The pairs in this process, each module parsed once for the two pairs it belongs to."""
    parsed: dict[Path, HloModule] = {}

    def load(dump: PassDump) -> HloModule:
        if dump.path not in parsed:
            if len(parsed) >= 2:
                parsed.pop(next(iter(parsed)))
            parsed[dump.path] = parse_module(dump.path.read_text())
        return parsed[dump.path]

    results: list[PassResult] = []
    for job in work:
        start = time.perf_counter()
        try:
            result = validate_pair(
                load(job.earlier),
                load(job.later),
                mode=job.mode,
                timeout_ms=job.timeout_ms,
                float_rules=job.float_rules,
            )
        except ValueError as err:  # HloParseError, a file that is not UTF-8 text
            result = PassResult(
                job.module, job.earlier, job.later, job.mode, "unknown", 0.0, f"cannot read: {err}"
            )
        except MemoryError:
            parsed.clear()
            result = PassResult(job.module, job.earlier, job.later, job.mode, "unknown", 0.0, OUT_OF_MEMORY)
        results.append(
            dataclasses.replace(
                result,
                module=job.module,
                earlier=job.earlier,
                later=job.later,
                seconds=time.perf_counter() - start,
            )
        )
        bar.advance(describe_result(results[-1]))
    return results
