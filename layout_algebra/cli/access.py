"""``layout-algebra access``: what a kernel asks of a layout."""

from __future__ import annotations

import argparse
import json
from typing import Any

from layout_algebra.cli._common import parse_index
from layout_algebra.model.errors import LayoutAlgebraError

__all__ = ["register", "run"]


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the command's parser."""
    p = subparsers.add_parser(
        "access",
        help="strides, runs and vector widths per dimension; an element's word and TPU vreg slot",
        description="For each dimension (or the ones given with --dim): the offset step between\n"
        "neighbours (stride), the aligned run of indices stored at that stride, and the widest\n"
        "aligned vector along it. With --element: the 32-bit word holding the element, the\n"
        "elements sharing it, and for (8,128)-family TPU layouts its vector register, sublane,\n"
        "lane and slot. With --linear-layout: Triton's linear layout (bases over GF(2)).",
        epilog="examples:\n"
        "  layout-algebra access 'bf16[16,256]{1,0:T(8,128)(2,1)}'\n"
        "  layout-algebra access 'f32[16,256]{1,0:T(8,128)}' --dim 1 --element 3,200\n"
        "  layout-algebra access 's4[16,128]{1,0:T(8,128)(8,1)E(4)}' --linear-layout --json",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("shape", metavar="SHAPE", help="an array shape with concrete sizes")
    p.add_argument("--dim", type=int, action="append", metavar="K", help="only dimension K (repeatable)")
    p.add_argument("--element", type=parse_index, metavar="I,J,...", help="an element to place")
    p.add_argument(
        "--linear-layout",
        action="store_true",
        help="also print the layout as a Triton linear layout, or why it is not one",
    )
    p.add_argument("--json", action="store_true", help="print a JSON object")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from layout_algebra.target.access import (
        dimension_access,
        separable_map,
        vector_width,
        vreg_position,
        word_elements,
        word_of,
    )

    m = separable_map(args.shape)
    dims = args.dim if args.dim is not None else list(range(m.rank))
    record: dict[str, Any] = {"shape": str(m.shape), "dimensions": []}
    lines = [str(m.shape)]
    for k in dims:
        access = dimension_access(m.shape, k)
        vector = vector_width(m.shape, k)
        record["dimensions"].append({**access.to_dict(), "vector": vector.to_dict()})
        lines.append(f"  dim {k}: {access.describe()}")
        lines.append(f"    widest aligned vector: {vector.describe()}")
    if args.element is not None:
        word = word_of(m.shape, args.element)
        mates = word_elements(m.shape, word.word)
        element: dict[str, Any] = {
            "index": list(args.element),
            "word": word.to_dict(),
            "word_elements": mates,
        }
        lines.append(
            f"  element {args.element}: word {word.word}, slot {word.slot} of {word.slots}; "
            f"the word holds {', '.join('padding' if e is None else str(e) for e in mates)}"
        )
        try:
            v = vreg_position(m.shape, args.element)
        except LayoutAlgebraError as err:
            element["vreg"] = None
            element["vreg_refused"] = str(err)
            lines.append(f"  no TPU vreg position: {err}")
        else:
            element["vreg"] = v.to_dict()
            lines.append(
                f"  TPU vreg {v.vreg}, sublane {v.sublane}, lane {v.lane}, slot {v.slot} (first-level tile {v.tile})"
            )
        record["element"] = element
    if args.linear_layout:
        from layout_algebra.interop.triton import to_linear_layout  # here: interop loads SymPy and Z3
        from layout_algebra.meaning.recover import NotExpressible

        try:
            ll = to_linear_layout(m.shape, unit="bit" if m.element_bits < 8 else "element")
        except NotExpressible as err:
            record["linear_layout"] = None
            record["linear_layout_refused"] = str(err)
            lines.append(f"  not a linear layout: {err}")
        else:
            record["linear_layout"] = ll.to_dict()
            unit = "bits" if m.element_bits < 8 else "elements"
            lines.append(f"  linear layout (offset in {unit}): {ll.bases_text()}")
    print(json.dumps(record) if args.json else "\n".join(lines))
    return 0
