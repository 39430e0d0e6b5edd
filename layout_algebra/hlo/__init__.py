"""HLO modules: read XLA's HLO text dumps and audit what their layouts cost.

XLA prints a compiled program as an *HLO module*: computations of instructions, each
with a result shape whose layout says how it lies in memory. ``parse_module`` turns
that text into plain values; ``audit_module`` says, for every instruction, how many
bytes its layout takes against the bytes of its elements, adds the buffers up by
memory space ``S(n)``, and says which ``bitcast``/``reshape``/``transpose``/``copy``
ops move data.

>>> from layout_algebra.hlo import parse_module, audit_module
>>> module = parse_module('''
... HloModule example, entry_computation_layout={(s32[3,100]{1,0:T(4,128)})->s32[3,100]{0,1:T(8,128)}}
... ENTRY %main (p: s32[3,100]) -> s32[3,100] {
...   %p = s32[3,100]{1,0:T(4,128)} parameter(0)
...   ROOT %c = s32[3,100]{0,1:T(8,128)} copy(%p)
... }''')
>>> [(i.name, i.opcode, str(i.shape)) for i in module.entry.instructions]
[('p', 'parameter', 's32[3,100]{1,0:T(4,128)}'), ('c', 'copy', 's32[3,100]{0,1:T(8,128)}')]
>>> report = audit_module(module)
>>> [(r.name, r.logical_bytes, r.physical_bytes) for r in report.worst_padding()]
[('c', 1200, 53248), ('p', 1200, 2048)]
>>> report.row("main", "c").movement.verdict
'moves data'

The modules are: ``ir`` (the values), ``parser`` (``parse_module``, ``HloParseError``, and
``HloModuleStream``/``iter_computations``: a module one computation at a time, for dumps too big
to hold whole), ``attributes`` (the attribute values layout analysis reads), ``audit`` (the audit,
``audit_stream`` on a stream, and ``classify_movement``), ``report`` (the audit as tables, for the command line) and
``verify`` (``verify_rewrite``: is a rewrite of a module safe, physically or logically)
and ``execute`` (``run`` a module on real packed bytes, ``compare`` two modules by running
them: the verifier's independent executable oracle) and ``passes`` (``validate_passes``:
did every pass of an XLA per-pass dump directory keep the program's meaning).
"""

from layout_algebra.hlo.attributes import PaddingDimension, SliceDimension
from layout_algebra.hlo.audit import (
    AuditReport,
    AuditRow,
    MovementVerdict,
    audit_module,
    audit_stream,
    classify_movement,
)
from layout_algebra.hlo.execute import Buffer, run
from layout_algebra.hlo.execute_compare import Comparison, compare
from layout_algebra.hlo.execute_ops import ExecutionError
from layout_algebra.hlo.ir import (
    EntryComputationLayout,
    HloComputation,
    HloInstruction,
    HloModule,
    HloOperand,
)
from layout_algebra.hlo.parser import HloModuleStream, iter_computations, parse_module
from layout_algebra.hlo.parser_scanner import HloParseError
from layout_algebra.hlo.passes import PassResult, ValidationReport, validate_pair, validate_passes
from layout_algebra.hlo.validity import InvalidHlo
from layout_algebra.hlo.verify import verify_rewrite
from layout_algebra.hlo.verify_values import UnsupportedHlo

__all__ = [
    "AuditReport",
    "AuditRow",
    "Buffer",
    "Comparison",
    "EntryComputationLayout",
    "ExecutionError",
    "HloComputation",
    "HloInstruction",
    "HloModule",
    "HloModuleStream",
    "HloOperand",
    "HloParseError",
    "InvalidHlo",
    "MovementVerdict",
    "PaddingDimension",
    "PassResult",
    "SliceDimension",
    "UnsupportedHlo",
    "ValidationReport",
    "audit_module",
    "audit_stream",
    "classify_movement",
    "compare",
    "iter_computations",
    "parse_module",
    "run",
    "validate_pair",
    "validate_passes",
    "verify_rewrite",
]
