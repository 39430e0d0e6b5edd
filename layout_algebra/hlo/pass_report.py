"""A self-contained HTML page for a pass-validation report: the pipeline as a timeline, each
changed pair as the difference of its two modules.

:func:`pass_report_html` reads what :func:`layout_algebra.hlo.passes.validate_passes` returns
(through its JSON form, so a report saved with ``--json`` renders the same) and writes one page
with no outside resources (no scripts, fonts or style sheets fetched from anywhere):

* a **timeline** per module: one cell per consecutive pair of per-pass dumps, coloured by the
  verdict (unchanged, proved, unknown, refuted) and as wide as the time the pair took;
* for every changed pair, a **section**: the pass, the verdict and its reason, the named
  assumptions a proof used (with their text), a refutation's input and both values, and the
  unified difference of the two modules with the instructions the verdict names highlighted.

>>> report = {
...     "directory": "dump",
...     "counts": {"proved": 1, "refuted": 0, "unknown": 0, "unchanged": 1},
...     "pairs": [
...         {"module": "m", "pass": "cse", "number": 1, "mode": "logical", "status": "unchanged",
...          "seconds": 0.01, "reason": "", "counterexample": None, "assumptions": [],
...          "from": "a.txt", "to": "b.txt"},
...         {"module": "m", "pass": "algsimp", "number": 2, "mode": "logical", "status": "proved",
...          "seconds": 0.2, "reason": "", "counterexample": None, "assumptions": ["exact-ops"],
...          "from": "b.txt", "to": "c.txt"},
...     ],
... }
>>> page = pass_report_html(report, texts={"b.txt": "ROOT x = f32[2] add(p, p)\\n",
...                                        "c.txt": "ROOT x = f32[2] multiply(p, two)\\n"},
...                         assumption_texts={"exact-ops": "x+x and 2*x are the same float"})
>>> page.startswith("<!DOCTYPE html>") and "algsimp" in page and "exact-ops" in page
True
>>> "<script" in page, "http" in page.split("<body>")[1]
(False, False)

Instruction names in a verdict's reason or counterexample (``%name`` or ``name = ...`` as the
text writes them) are the ones highlighted:

>>> sorted(named_instructions("the root %fusion.3 differs from add.1 at element (0,)", {"add.1", "fusion.3", "p"}))
['add.1', 'fusion.3']
"""

from __future__ import annotations

import difflib
import html
import json
import re
from collections.abc import Collection, Iterable, Mapping
from typing import Any

__all__ = ["STATUS_COLOURS", "defined_names", "named_instructions", "pass_report_html"]

#: The colour of each verdict, on the timeline and in the headings.
STATUS_COLOURS: Mapping[str, str] = {
    "unchanged": "#d9d9d9",
    "proved": "#4caf50",
    "unknown": "#f2b233",
    "refuted": "#d64541",
}

_DEFINITION = re.compile(r"^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=", re.M)
_WORD = re.compile(r"%?([A-Za-z_][\w.\-]*)")

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 1.5rem; max-width: 80rem; color: #222; }
h1 { font-size: 1.4rem; } h2 { font-size: 1.15rem; margin-top: 2rem; } h3 { font-size: 1rem; }
.timeline { display: flex; height: 2.2rem; border: 1px solid #999; margin: .4rem 0 1rem; }
.timeline a { display: block; min-width: 3px; border-right: 1px solid #fff; }
.legend span { display: inline-block; padding: .1rem .5rem; margin-right: .4rem; border-radius: 3px; }
table.counts td, table.counts th { padding: .15rem .6rem; text-align: right; }
.pair { border-left: 6px solid #999; padding: .2rem .8rem; margin: 1rem 0; }
.reason { white-space: pre-wrap; }
pre.diff { background: #f7f7f7; padding: .5rem; overflow-x: auto; font-size: .8rem; line-height: 1.3; }
pre.diff span { display: block; } pre.diff .add { background: #e6ffed; } pre.diff .del { background: #ffeef0; }
pre.diff .hunk { color: #6a737d; }
pre.diff mark { background: #ffe066; font-weight: bold; }
dl.assumptions dt { font-weight: bold; } dl.assumptions dd { margin: 0 0 .4rem 1rem; }
"""


def defined_names(text: str) -> set[str]:
    """The instruction names a module's text defines (``name = ...`` and ``ROOT name = ...``)."""
    return set(_DEFINITION.findall(text))


def named_instructions(text: str, names: Collection[str]) -> set[str]:
    """The words of ``text`` that are instruction names of the modules (``names``)."""
    return {word for word in _WORD.findall(text) if word in names}


def _escape(value: object) -> str:
    return html.escape(str(value), quote=True)


def _highlight(line: str, names: Collection[str]) -> str:
    """``line`` escaped, with each instruction name of ``names`` marked."""
    if not names:
        return _escape(line)
    pattern = re.compile(
        r"(?<![\w.\-])%?("
        + "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
        + r")(?![\w.\-])"
    )
    out, last = [], 0
    for match in pattern.finditer(line):
        out.append(_escape(line[last : match.start()]))
        out.append(f"<mark>{_escape(match.group(0))}</mark>")
        last = match.end()
    out.append(_escape(line[last:]))
    return "".join(out)


def _diff_html(before: str, after: str, names: Collection[str], context: int = 3) -> str:
    lines = []
    for line in difflib.unified_diff(
        before.splitlines(), after.splitlines(), "earlier", "later", lineterm="", n=context
    ):
        kind = (
            "add"
            if line.startswith("+")
            else "del"
            if line.startswith("-")
            else "hunk"
            if line.startswith("@@")
            else ""
        )
        body = _highlight(line, names)
        lines.append(f'<span class="{kind}">{body}</span>' if kind else body)
    return "\n".join(lines) if lines else "(the two texts are the same)"


def _pair_id(pair: Mapping[str, Any]) -> str:
    return "pair-" + re.sub(r"[^\w-]", "_", f"{pair['module']}-{pair['number']}")


def _timeline(pairs: list[Mapping[str, Any]]) -> str:
    total = sum(max(float(p.get("seconds") or 0.0), 0.0) for p in pairs) or 1.0
    cells = []
    for p in pairs:
        share = max(float(p.get("seconds") or 0.0), 0.0) / total
        weight = max(share * 100, 100 / (4 * len(pairs)))  # every pair stays visible
        colour = STATUS_COLOURS.get(p["status"], "#999")
        title = (
            f"{p['number']:04d} {p['pass']}: {p['status']} ({float(p.get('seconds') or 0) * 1000:,.0f} ms)"
        )
        target = f"#{_pair_id(p)}" if p["status"] != "unchanged" else "#"
        cells.append(
            f'<a href="{target}" title="{_escape(title)}" style="flex: {weight:.3f} 1 0; background: {colour}"></a>'
        )
    return '<div class="timeline">' + "".join(cells) + "</div>"


def _counts_table(pairs: Iterable[Mapping[str, Any]]) -> str:
    counts = dict.fromkeys(STATUS_COLOURS, 0)
    for p in pairs:
        counts[p["status"]] = counts.get(p["status"], 0) + 1
    head = "".join(f"<th>{_escape(s)}</th>" for s in counts)
    row = "".join(f"<td>{n:,}</td>" for n in counts.values())
    return f'<table class="counts"><tr>{head}</tr><tr>{row}</tr></table>'


def _pair_section(
    pair: Mapping[str, Any], texts: Mapping[str, str], assumption_texts: Mapping[str, str]
) -> str:
    before, after = texts.get(pair["from"]), texts.get(pair["to"])
    names = defined_names(before or "") | defined_names(after or "")
    counterexample = pair.get("counterexample")
    cited = named_instructions(f"{pair.get('reason', '')} {json.dumps(counterexample, default=str)}", names)
    colour = STATUS_COLOURS.get(pair["status"], "#999")
    parts = [
        f'<section class="pair" id="{_pair_id(pair)}" style="border-left-color: {colour}">',
        f"<h3>{pair['number']:04d} <code>{_escape(pair['pass'])}</code> — "
        f'<span style="color: {colour}">{_escape(pair["status"])}</span> '
        f"({_escape(pair['mode'])}, {float(pair.get('seconds') or 0) * 1000:,.0f} ms)</h3>",
    ]
    if pair.get("reason"):
        parts.append(f'<p class="reason">{_escape(pair["reason"])}</p>')
    if pair.get("assumptions"):
        items = "".join(
            f"<dt>{_escape(a)}</dt><dd>{_escape(assumption_texts.get(a, ''))}</dd>"
            for a in pair["assumptions"]
        )
        parts.append(f'<p>Proved under these named assumptions:</p><dl class="assumptions">{items}</dl>')
    if counterexample:
        parts.append(
            "<p>Input and values (re-checked by evaluation):</p>"
            f"<pre>{_escape(json.dumps(counterexample, indent=1, default=str))}</pre>"
        )
    if before is not None and after is not None:
        parts.append(
            f"<details open><summary>Difference of the two modules ({len(cited):,} instructions named by the verdict highlighted)</summary>"
        )
        parts.append(f'<pre class="diff">{_diff_html(before, after, cited)}</pre></details>')
    else:
        parts.append("<p>(The module texts were not available to show the difference.)</p>")
    parts.append("</section>")
    return "\n".join(parts)


def pass_report_html(
    report: Mapping[str, Any],
    texts: Mapping[str, str] | None = None,
    assumption_texts: Mapping[str, str] | None = None,
    title: str | None = None,
) -> str:
    """One self-contained HTML page for ``report`` (the JSON form of a validation report).

    ``texts`` maps a dump file's name (the ``from`` / ``to`` fields of each pair) to its text,
    for the differences; ``assumption_texts`` maps an assumption's name to what it assumes.
    """
    texts = texts or {}
    assumption_texts = assumption_texts or {}
    pairs: list[Mapping[str, Any]] = list(report.get("pairs", ()))
    modules: dict[str, list[Mapping[str, Any]]] = {}
    for p in pairs:
        modules.setdefault(p["module"], []).append(p)
    heading = title or f"XLA passes in {report.get('directory', '')}"
    legend = "".join(f'<span style="background: {c}">{_escape(s)}</span>' for s, c in STATUS_COLOURS.items())
    body = [f"<h1>{_escape(heading)}</h1>", f'<p class="legend">{legend}</p>', _counts_table(pairs)]
    for module, module_pairs in modules.items():
        changed = [p for p in module_pairs if p["status"] != "unchanged"]
        body.append(f"<h2>{_escape(module)}: {len(module_pairs):,} pairs, {len(changed):,} changed</h2>")
        body.append(_timeline(module_pairs))
        body.extend(_pair_section(p, texts, assumption_texts) for p in changed)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{_escape(heading)}</title><style>{_STYLE}</style></head>\n<body>\n"
        + "\n".join(body)
        + "\n</body></html>\n"
    )
