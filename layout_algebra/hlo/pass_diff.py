"""The changed region of a pair: what a pass rewrote, cut at the boundaries it left unchanged.

A pass rewrites a few instructions of a big module. To ask the verifier whether an earlier
instruction ``a`` and a later instruction ``b`` are equal, both cones are first keyed by
structure (:func:`~layout_algebra.hlo.pass_cuts.cone_key`, down to the cut points). A node of
``b``'s cone whose key is also the key of a node of ``a``'s cone computes the same value as that
node: the same opcode, shape (layout included), attributes, called computations and operands,
all the way down to cut points already proved equal. Walking ``b``'s cone from the top, the first
such nodes met are the *boundaries* of the change: above them the pass rewrote something, below
them it did not. :func:`changed_region` lists them; :func:`decide_on_changed_region` replaces each
boundary pair by one fresh parameter (one more cut point) and asks the verifier about the
region above them only, so that a query costs what the pass changed, not what the module holds.

Sound: a boundary pair is equal (equal structure on equal inputs), so a proof for every value of
its parameter holds for the value it has. Not complete: the region's proof may need a relation
between two boundaries (``n = negate(x)`` and ``x`` both cut) that the cut forgets, so anything
but ``proved`` falls back to the query over the whole cones (:func:`decide_equal`): the answers
are those of the whole query, only faster when the region proves it.

Nothing here grows with the module per query: the keys of a pair are kept between its queries
(:class:`PairKeys`, re-keying only what lies above a new cut point), and a module's key and
flattened side are computed once for the two consecutive pairs it belongs to
(:func:`kept_module_key`, :func:`kept_side`).

>>> from layout_algebra.hlo.parser import parse_module
>>> from layout_algebra.hlo.pass_cuts import Cuts, Side
>>> head = "HloModule m\\nENTRY e {\\n  p = f32[64]{0} parameter(0)\\n  e = f32[64]{0} exponential(p)\\n"
>>> a = Side.of(parse_module(head + "  r = f32[8,8]{1,0} reshape(e)\\n  ROOT n = f32[8,8]{1,0} negate(r)\\n}"))
>>> b = Side.of(parse_module(head + "  n = f32[64]{0} negate(e)\\n  ROOT r = f32[8,8]{1,0} reshape(n)\\n}"))
>>> changed_region(Cuts(a, b), a.root, b.root)
[('e', 'e')]
>>> decide_on_changed_region(Cuts(a, b), a.root, b.root, "logical", 10_000)[0]
'proved'
"""

from __future__ import annotations

import collections
import copy
import dataclasses
import itertools
import weakref
from collections.abc import Callable
from typing import Any, TypeVar

from layout_algebra.hlo.ir import HloModule
from layout_algebra.hlo.pass_cuts import ConeKeys, Cuts, Side, cone_key, decide_equal
from layout_algebra.hlo.pass_keys import module_key
from layout_algebra.hlo.verify import float_rules_used, verify_rewrite

T = TypeVar("T")

__all__ = [
    "KnownKeys",
    "PairKeys",
    "changed_region",
    "decide_on_changed_region",
    "kept",
    "kept_module_key",
    "kept_side",
    "module_facts",
    "pair_keys",
    "users_of",
    "without_unread_parameters",
]


#: the facts of the last modules seen (id -> (the module, its facts)): a module of a dump is in
#: two consecutive pairs, (k-1, k) then (k, k+1), and is flattened and keyed once for both
_RECENT: collections.OrderedDict[int, tuple[HloModule, dict[Any, Any]]] = collections.OrderedDict()
RECENT_MODULES = 2


def module_facts(module: HloModule) -> dict[Any, Any]:
    """The per-module facts kept for the next pair (the module itself held, so its id stays its own)."""
    entry = _RECENT.get(id(module))
    if entry is not None and entry[0] is module:
        _RECENT.move_to_end(id(module))
        return entry[1]
    facts: dict[Any, Any] = {}
    _RECENT[id(module)] = (module, facts)
    while len(_RECENT) > RECENT_MODULES:
        _RECENT.popitem(last=False)
    return facts


def kept(module: HloModule, fact: Callable[[HloModule], T]) -> T:
    """``fact(module)`` (a pure function of the module), computed once per module."""
    facts = module_facts(module)
    if fact not in facts:
        facts[fact] = fact(module)
    answer: T = facts[fact]
    return answer


def kept_module_key(module: HloModule) -> str:
    """:func:`~layout_algebra.hlo.pass_keys.module_key`, computed once per module."""
    return kept(module, module_key)


def kept_side(module: HloModule) -> Side:
    """``Side.of(module)`` (flattened, canonical forms), computed once per module: no pair changes a side."""
    return kept(module, Side.of)


class PairKeys:
    """The cone keys of both sides of a pair, kept from one query to the next.

    A node is keyed when a query first needs it, and keyed again only after a new cut point
    lands in its cone (its entry, and those of the nodes above it, are then dropped): a pair of
    queries that walk the same unchanged chain costs the chain once, not once per query. With
    each key, the nodes holding it on each side are counted (:meth:`boundaries` needs a key held
    by one node of each side)."""

    def __init__(self, cuts: Cuts) -> None:
        self.cuts = cuts
        self.keys = ConeKeys()
        self.sides = (cuts.a, cuts.b)
        self.memo: tuple[dict[str, int], dict[str, int]] = ({}, {})
        self.holders: tuple[dict[int, set[str]], dict[int, set[str]]] = ({}, {})
        self.cut: tuple[dict[str, int], dict[str, int]] = ({}, {})
        self.users: tuple[dict[str, list[str]], dict[str, list[str]]] = (users_of(cuts.a), users_of(cuts.b))
        self.synced = 0

    def sync(self) -> None:
        """Take in the cut points added to ``cuts`` since the last query."""
        if len(self.cuts.pairs) == self.synced:
            return
        for b_name, a_name in itertools.islice(self.cuts.pairs.items(), self.synced, None):
            number = self.cuts.number[a_name]
            for side, name in ((0, a_name), (1, b_name)):
                self.cut[side][name] = number
                self.forget(side, name)
        self.synced = len(self.cuts.pairs)

    def forget(self, side: int, name: str) -> None:
        """Drop the keys of ``name`` and of every keyed node above it (a node is keyed only
        after its operands, so the walk stops at the first node without a key)."""
        memo, holders, users = self.memo[side], self.holders[side], self.users[side]
        stack = [name]
        while stack:
            top = stack.pop()
            key = memo.pop(top, None)
            if key is None:
                continue
            holders[key].discard(top)
            stack.extend(users.get(top, ()))

    def key(self, side: int, name: str) -> int:
        """The key of ``name``'s cone down to the cut points (:func:`cone_key`'s, kept)."""
        memo = self.memo[side]
        if name in memo:
            return memo[name]
        fresh: dict[str, int] = {}
        cone_key(self.sides[side], name, self.cut[side], KnownKeys(memo, fresh), self.keys)
        holders = self.holders[side]
        for node, key in fresh.items():
            holders.setdefault(key, set()).add(node)
        return memo[name]

    def boundaries(self, b_name: str) -> list[tuple[str, str]]:
        """The topmost nodes of ``b_name``'s cone whose key is held by exactly one node of each
        side (that node of the earlier side is its partner), not cut points."""
        memo_b, cut_b = self.memo[1], self.cut[1]
        found: list[tuple[str, str]] = []
        seen: set[str] = set()
        stack = [b_name]
        while stack:  # top-down, stopping at the first common node of each path
            name = stack.pop()
            if name in seen or name in cut_b:
                continue
            seen.add(name)
            key = memo_b[name]
            ours, theirs = self.holders[1].get(key, ()), self.holders[0].get(key, ())
            if len(ours) == 1 and len(theirs) == 1:
                (partner,) = theirs
                if partner not in self.cut[0]:
                    found.append((partner, name))
                    continue
            stack.extend(o.name for o in self.sides[1].by_name[name].operands)
        return found


class KnownKeys(dict[str, int]):
    """A memo for :func:`cone_key` that reads the kept keys and records the new ones apart."""

    def __init__(self, kept: dict[str, int], fresh: dict[str, int]) -> None:
        super().__init__()
        self.kept, self.fresh = kept, fresh

    def __contains__(self, name: object) -> bool:
        return name in self.kept

    def __getitem__(self, name: str) -> int:
        return self.kept[name]

    def __setitem__(self, name: str, key: int) -> None:
        self.kept[name] = key
        self.fresh[name] = key


def users_of(side: Side) -> dict[str, list[str]]:
    """Each node's users (the nodes that read it), over the whole flattened side."""
    users: dict[str, list[str]] = {}
    for instr in side.builder.instructions:
        for operand in instr.operands:
            users.setdefault(operand.name, []).append(instr.name)
    return users


#: each pair's kept keys, for as long as its cut points live
_KEPT: weakref.WeakKeyDictionary[Cuts, PairKeys] = weakref.WeakKeyDictionary()


def pair_keys(cuts: Cuts) -> PairKeys:
    """The kept keys of ``cuts``'s pair, up to date with its cut points."""
    kept = _KEPT.get(cuts)
    if kept is None:
        kept = _KEPT[cuts] = PairKeys(cuts)
    kept.sync()
    return kept


def changed_region(cuts: Cuts, a_name: str, b_name: str) -> list[tuple[str, str]]:
    """The boundary pairs (earlier node, later node) of the change between the cones of ``a_name``
    and ``b_name``: the topmost nodes of ``b_name``'s cone with the structure of a node of the
    earlier side, not already cut points, each key held by one node of each side (empty when the
    cones are equal: nothing changed)."""
    keys = pair_keys(cuts)
    if keys.key(0, a_name) == keys.key(1, b_name):
        return []
    return keys.boundaries(b_name)


def without_unread_parameters(before: HloModule, after: HloModule) -> tuple[HloModule, HloModule]:
    """Both modules without the parameters neither reads (a cut module declares every cut point
    of the pair, so that both have one interface; a region reads a few of them)."""
    read: set[int | None] = set()
    for module in (before, after):
        names = {o.name for i in module.entry.instructions for o in i.operands} | {module.entry.root.name}
        read |= {
            i.parameter_number
            for i in module.entry.instructions
            if i.opcode == "parameter" and i.name in names
        }

    def pruned(module: HloModule) -> HloModule:
        kept_instructions = tuple(
            i for i in module.entry.instructions if i.opcode != "parameter" or i.parameter_number in read
        )
        entry = dataclasses.replace(module.entry, instructions=kept_instructions)
        return dataclasses.replace(module, computations=(entry,), entry=entry)

    return pruned(before), pruned(after)


def decide_on_changed_region(
    cuts: Cuts, a_name: str, b_name: str, mode: str, timeout_ms: int
) -> tuple[str, Any]:
    """:func:`~layout_algebra.hlo.pass_cuts.decide_equal`, first asked of the changed region only.

    Equal cone keys (and, physically, equal layouts) are ``proved`` at once. Otherwise the region's
    query is tried first when there is a boundary; its ``proved`` is the answer (with the float
    rules it used added to ``cuts.used_rules``); anything else is ``decide_equal``'s answer over
    the whole cones."""
    keys = pair_keys(cuts)
    if keys.key(0, a_name) == keys.key(1, b_name):
        if mode == "logical" or str(cuts.a.builder.shapes[a_name]) == str(cuts.b.builder.shapes[b_name]):
            return "proved", None
        return decide_equal(cuts, a_name, b_name, mode, timeout_ms)
    boundaries = keys.boundaries(b_name)
    if boundaries:
        region = copy.copy(cuts)
        region.pairs, region.number = dict(cuts.pairs), dict(cuts.number)
        for a_node, b_node in boundaries:
            region.add(a_node, b_node)
        before, after = without_unread_parameters(
            region.module(cuts.a, a_name, earlier=True), region.module(cuts.b, b_name, earlier=False)
        )
        try:
            result = verify_rewrite(
                before, after, mode=mode, timeout_ms=timeout_ms, float_rules=cuts.float_rules
            )
        except (ValueError, RecursionError):
            result = None
        if result is not None and result.status == "proved":
            cuts.used_rules.update(float_rules_used(result))
            return "proved", result
    return decide_equal(cuts, a_name, b_name, mode, timeout_ms)
