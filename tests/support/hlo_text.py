"""HLO module text for tests: one entry computation ``e`` in a module ``m``, built three ways.

Each builder has one contract, said by its name:

* :func:`hlo_module` — the instruction lines as given (the caller writes ``ROOT``);
* :func:`hlo_module_rooted_at_last` — the last line is the root (``ROOT`` is added);
* :func:`hlo_module_with_parameters` — parameters from ``"type name, ..."`` text, then a body
  of lines written out (indentation and ``ROOT`` included).

>>> print(hlo_module("p = f32[4]{0} parameter(0)", "ROOT c = f32[4]{0} copy(p)"))
HloModule m
ENTRY e {
  p = f32[4]{0} parameter(0)
  ROOT c = f32[4]{0} copy(p)
}
>>> hlo_module_rooted_at_last("p = f32[4]{0} parameter(0)", "c = f32[4]{0} copy(p)") == hlo_module(
...     "p = f32[4]{0} parameter(0)", "ROOT c = f32[4]{0} copy(p)")
True
>>> hlo_module_with_parameters("  ROOT c = f32[4]{0} copy(p)", "f32[4]{0} p") == hlo_module(
...     "p = f32[4]{0} parameter(0)", "ROOT c = f32[4]{0} copy(p)")
True
"""

from __future__ import annotations


def hlo_module(*lines: str) -> str:
    """The module whose entry computation is ``lines``, each indented, as given."""
    return "HloModule m\nENTRY e {\n" + "\n".join("  " + line for line in lines) + "\n}"


def hlo_module_rooted_at_last(*lines: str) -> str:
    """The module whose entry computation is ``lines``, the last one marked ``ROOT``."""
    body = "\n".join(f"  {'ROOT ' if k == len(lines) - 1 else ''}{line}" for k, line in enumerate(lines))
    return f"HloModule m\nENTRY e {{\n{body}\n}}"


def hlo_module_with_parameters(body: str, params: str) -> str:
    """The module with parameters ``params`` (``"f32[4]{0} p, s32[] i"``: numbered in order)
    followed by ``body`` (lines already indented, the root marked)."""
    lines = [
        f"  {name} = {shape} parameter({k})"
        for k, (shape, name) in enumerate(p.rsplit(" ", 1) for p in params.split(", "))
    ]
    return "HloModule m\nENTRY e {\n" + "\n".join(lines) + "\n" + body + "\n}"
