"""The ``layout-algebra`` command line.

Examples::

    layout-algebra explain 'bf16[8,1,1280,16384]{3,2,0,1:T(8,128)(2,1)}'
    layout-algebra explain 'f32[3,5]{1,0:T(2,2)}' --element 2,3
    layout-algebra size 'f32[3,5]{1,0:T(2,2)}' --json
    layout-algebra validate 'f32[2,3]{0,0}'
    layout-algebra draw 'f32[3,5]{1,0:T(2,2)}' -o figure1.png

Bad input prints one clear error (the input quoted, a caret under the fault) and exits
with status 2; no traceback.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

from layout_algebra import __version__
from layout_algebra.explain import explain
from layout_algebra.model.syntax import parse_shape
from layout_algebra.model.validation import validate
from layout_algebra.sizes import size_report

__all__ = ["main"]

_DESCRIPTION = """\
Turn XLA array layouts into mathematics you can compute with.

A shape is written as XLA prints it:  TYPE[DIMS]{MINOR_TO_MAJOR:ATTRIBUTES}
  bf16[8,1,1280,16384]{3,2,0,1:T(8,128)(2,1)}
  |    |               |       |
  |    |               |       tiles: 8x128 tiles of the two minor dims, then 2x1 sub-tiles
  |    |               minor_to_major: dim 3 varies fastest, dim 1 slowest
  |    dimensions (N, <=N bounded dynamic, ? unbounded, or a name for a symbolic size)
  element type (pred, s4, s8, bf16, f32, ...)

Quote shapes in the shell: they contain brackets, braces and parentheses.
"""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="layout-algebra",
        description=_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    p = sub.add_parser(
        "explain",
        help="explain a shape's layout step by step: fields, tiling, sizes, padding",
        description="Explain how a shape's layout places its elements in memory: the physical "
        "order of the dimensions, each tiling step, the tiled shape, and the logical and "
        "physical sizes with their padding.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n  layout-algebra explain 'bf16[8,1,1280,16384]{3,2,0,1:T(8,128)(2,1)}'\n"
        "  layout-algebra explain 'f32[3,5]{1,0:T(2,2)}' --element 2,3   # the document's 17",
    )
    p.add_argument("shapes", nargs="+", metavar="SHAPE", help="XLA shape text (quote it)")
    p.add_argument(
        "--element",
        metavar="I,J,...",
        type=_index,
        help="also show the worked arithmetic that takes this logical element to its offset",
    )

    p = sub.add_parser(
        "size",
        help="logical bytes, exact physical bytes and XLA's allocation of a shape",
        description="Print the sizes of an array shape: logical bytes (elements x element bits), "
        "the exact physical buffer (every tile level's padding, packing, L(n)), and what XLA "
        "allocates (padding to the first tile only; differs only for unusual tilings).",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="example:\n  layout-algebra size 'f32[3,5]{1,0:T(2,2)}' --json",
    )
    p.add_argument("shapes", nargs="+", metavar="SHAPE", help="XLA array shape text (quote it)")
    p.add_argument("--json", action="store_true", help="print one JSON object per shape")

    p = sub.add_parser(
        "validate",
        help="check a shape's layout against XLA's validation rules",
        description="Check shapes against XLA's LayoutUtil::ValidateLayoutForShape rules. "
        "Exit status 0 when every shape is valid, 1 when one is not, 2 when one does not parse.",
    )
    p.add_argument("shapes", nargs="+", metavar="SHAPE", help="XLA shape text (quote it)")

    p = sub.add_parser(
        "audit",
        help="memory and data movement of every instruction of an HLO module",
        description="Parse an HLO module (XLA's text dump) and audit its layouts:\n"
        "  - every instruction: shape, layout, logical and physical bytes, padding ratio;\n"
        "  - buffer totals by memory space S(n) (buffers: the values stored outside fusion\n"
        "    bodies; the exact rule is in the layout_algebra.hlo.audit documentation);\n"
        "  - XLA's layout validation;\n"
        "  - whether each bitcast, reshape, transpose and copy moves data.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n  layout-algebra audit examples/tpu_module.hlo\n"
        "  layout-algebra audit module.hlo --json --top 10",
    )
    p.add_argument("module", metavar="MODULE.hlo", help="a file holding HLO text (HloModule ...)")
    p.add_argument("--json", action="store_true", help="print the audit as one JSON object")
    p.add_argument(
        "--top",
        type=int,
        metavar="N",
        help="list the N worst padding offenders (table default 25, 0 = all; JSON default all)",
    )

    p = sub.add_parser(
        "tpu-layout",
        help="the layout XLA:TPU picks for an array argument, and its bytes",
        description="Print the layout the XLA:TPU compiler chooses for an argument of this element\n"
        "type and dimensions (tiles by element width, small tiles for thin arrays, and the\n"
        "minor_to_major that allocates least), with the bytes it allocates.",
        epilog="examples:\n  layout-algebra tpu-layout bf16 8 1280\n  layout-algebra tpu-layout s8",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("dtype", metavar="DTYPE", help="element type, e.g. f32, bf16, s8, pred, s4")
    p.add_argument("dims", nargs="*", type=int, metavar="DIM", help="dimension sizes (none for a scalar)")
    p.add_argument("--json", action="store_true", help="print a JSON object")

    p = sub.add_parser(
        "prove",
        help="prove a layout injective, in bounds, or equal to another map (Z3)",
        description="Prove a claim about layouts with Z3. Answers 'proved' only when the solver "
        "found no counterexample on a trusted encoding, 'refuted' with a counterexample that was "
        "re-checked by evaluating it, or 'unknown' with the reason. Dimensions may be names "
        "(f32[N,M]); give assumptions with --assume. Exit status: 0 proved, 1 refuted or unknown, "
        "2 bad input.\n\nclaims:\n"
        "  injective SHAPE          no two elements share a position\n"
        "  in-bounds SHAPE          every element lies inside the buffer (--allocation xla: inside\n"
        "                           what XLA allocates, padding to the first tile only)\n"
        "  tiling SHAPE             the document's tiled formula = pad-reshape-transpose = the layout\n"
        "  equivalent SHAPE SHAPE   two layouts place every element at the same position",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n  layout-algebra prove injective 'bf16[N,M]{1,0:T(8,128)(2,1)}'\n"
        "  layout-algebra prove equivalent 'f32[N,M]{1,0:T(1,128)}' 'f32[N,M]{1,0}' --assume 'M % 128 == 0'\n"
        "  layout-algebra prove in-bounds 's16[1000,200]{0,1:T(1,128)(2,1)}' --allocation xla",
    )
    p.add_argument("claim", choices=["injective", "in-bounds", "tiling", "equivalent"], help="what to prove")
    p.add_argument("shapes", nargs="+", metavar="SHAPE", help="shape text (two for 'equivalent')")
    p.add_argument(
        "--assume", action="append", default=[], metavar="TEXT", help="e.g. 'N % 8 == 0' (repeatable)"
    )
    p.add_argument("--allocation", choices=["exact", "xla"], default="exact", help="buffer for in-bounds")
    p.add_argument(
        "--method",
        choices=["auto", "direct"],
        default="auto",
        help="injective/in-bounds: 'auto' composes stage lemmas (general ones, proved once for all "
        "sizes, when sizes are concrete); 'direct' asks the solver one query about the whole map",
    )
    p.add_argument("--timeout-ms", type=int, default=30_000, help="per solver query (default 30000)")

    p = sub.add_parser(
        "bitcast",
        help="does a reshape, transpose or bitcast move data? (exact: tiles, padding, packing)",
        description="Decide exactly whether reshaping (or, with --permutation, transposing) SRC into DST "
        "moves any data: every element must keep its bit offset and the buffers must have the same size. "
        "Tiles, padding, E(n) packing and L(n) all count (XLA's own ShapeUtil::ReshapeIsBitcast ignores "
        "tiles; its answer is shown beside). Prints the verdict with its reason, a re-checked "
        "counterexample, or a suggested layout (--suggest). Exit status 0 bitcast, 1 not, 2 bad input.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n  layout-algebra bitcast 'f32[16,256]{1,0:T(8,128)}' 'f32[4096]{0}'\n"
        "  layout-algebra bitcast 'f32[5,3]{1,0}' 'f32[3,5]{0,1}' --permutation 1,0\n"
        "  layout-algebra bitcast 'bf16[32,8,24,200]{3,2,1,0:T(8,128)(2,1)}' 256,24,200 --suggest",
    )
    p.add_argument("src", metavar="SRC", help="input shape with layout")
    p.add_argument(
        "dst",
        metavar="DST",
        help="output shape with layout (with --suggest: the output dims, e.g. 256,24,200)",
    )
    p.add_argument(
        "--permutation", type=_index, metavar="P0,P1,...", help="a transpose's dimensions attribute"
    )
    p.add_argument(
        "--suggest",
        action="store_true",
        help="suggest a layout for DST dims that makes the reshape a bitcast",
    )
    p.add_argument(
        "--assume", action="append", default=[], metavar="TEXT", help="for symbolic dims, e.g. 'M == 8*N'"
    )

    p = sub.add_parser(
        "proofs",
        help="run the catalog of theorems in proofs/ and report each claim's status",
        description="Run every theorem of the proof catalog (proofs/*.py) and print its status and "
        "time; --write FILE also writes the Markdown report (docs/proofs.md). Exit status 0 when "
        "every claim is proved.",
    )
    p.add_argument("only", nargs="*", help="run only entries whose file name contains one of these")
    p.add_argument("--catalog", metavar="DIR", help="directory of theorem files (default: proofs/)")
    p.add_argument("--write", metavar="FILE", help="write the Markdown report here")
    p = sub.add_parser(
        "pack",
        help="pack a .npy array into a shape's exact physical bytes, or unpack them (--unpack)",
        description="Write the exact bytes an array occupies in a layout (every tile level's padding,\n"
        "E(n) packing, L(n)) as a raw file; with --unpack, read such a file back into a .npy array.\n\n"
        ".npy files keep bf16, f8 and s4 arrays as raw bytes (dtype V2/V1): pack reads them as the\n"
        "shape's element type; read unpacked ones with numpy.load(...).view(ml_dtypes.bfloat16).",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n  layout-algebra pack weights.npy 'bf16[1024,4096]{1,0:T(8,128)(2,1)}' -o weights.bin\n"
        "  layout-algebra pack --unpack dump.bin 'f32[300,500]{0,1:T(8,128)}' -o dump.npy",
    )
    p.add_argument("input", metavar="IN", help="a .npy file (or, with --unpack, a raw buffer)")
    p.add_argument("shape", metavar="SHAPE", help="XLA array shape with its layout (quote it)")
    p.add_argument("-o", "--output", metavar="OUT", required=True, help="file to write")
    p.add_argument("--unpack", action="store_true", help="read a raw buffer and write the logical .npy array")
    p.add_argument(
        "--fill",
        type=int,
        default=0,
        help="padding value: a byte (0-255), or the bits of a slot for sub-byte elements (default 0)",
    )

    p = sub.add_parser(
        "codegen",
        help="closed-form index code (C, Python, NumPy, MLIR, LaTeX), certified equal to the layout",
        description="Print a layout's index arithmetic as code: the offset of a logical index "
        "(default), the logical index at an offset (--inverse) or whether an offset is padding "
        "(--padding). The expression is simplified, read back from the printed text and checked "
        "equal to the layout map; a last comment gives its operation count and that check.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n  layout-algebra codegen 'bf16[16,256]{1,0:T(8,128)(2,1)}' --lang c\n"
        "  layout-algebra codegen 'f32[N,M]{1,0:T(8,128)}' --lang mlir --inverse --unit byte",
    )
    p.add_argument("shape", metavar="SHAPE", help="XLA array shape with its layout (quote it)")
    p.add_argument("--lang", choices=["c", "python", "numpy", "mlir", "latex"], default="c", help="default c")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--inverse", action="store_true", help="offset -> logical index")
    which.add_argument("--padding", action="store_true", help="offset -> is it padding")
    p.add_argument("--unit", choices=["element", "byte", "bit"], default="element", help="offset unit")
    p.add_argument("--name", metavar="FN", help="function name (default from the direction)")

    p = sub.add_parser(
        "draw",
        help="draw a layout: the array as a grid of memory positions, tiles, padding, packing",
        description="Draw a picture of a layout (PNG or SVG, by the output's suffix): the logical "
        "array as a grid, each element labelled with its position in memory, first-level tiles in "
        "colours, padding white, last-level tiles (packing, e.g. the 2x1 pairs of bf16) outlined in "
        "red, and the start of the buffer as a strip below. Higher ranks show the two minor-most "
        "dimensions with the other indices 0; large arrays are cropped to a corner (said in the title).",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n  layout-algebra draw 'f32[3,5]{1,0:T(2,2)}' -o figure1.png\n"
        "  layout-algebra draw 'bf16[8,1,1280,16384]{3,2,0,1:T(8,128)(2,1)}' -o bf16.svg --rows 16 --cols 16",
    )
    p.add_argument("shape", metavar="SHAPE", help="XLA array shape with its layout (quote it)")
    p.add_argument("-o", "--output", metavar="FILE", required=True, help="picture to write (.png or .svg)")
    p.add_argument("--no-memory", action="store_true", help="leave out the memory strip")
    p.add_argument("--rows", type=int, default=16, metavar="N", help="draw at most N rows (default 16)")
    p.add_argument("--cols", type=int, default=32, metavar="N", help="draw at most N columns (default 32)")
    return parser


def _draw(args: argparse.Namespace) -> int:
    from layout_algebra.draw import draw

    draw(args.shape, args.output, memory_strip=not args.no_memory, max_rows=args.rows, max_cols=args.cols)
    print(f"{args.output}: {parse_shape(args.shape)}")
    return 0


def _codegen(args: argparse.Namespace) -> int:
    from layout_algebra.codegen import codegen

    direction = "inverse" if args.inverse else "padding" if args.padding else "forward"
    code = codegen(args.shape, args.lang, direction, args.unit, args.name)
    print(code.text.rstrip("\n"))
    print(code.comment())
    return 1 if code.certification.status == "refuted" else 0


def _prove(args: argparse.Namespace) -> int:
    from layout_algebra import prove

    expected = 2 if args.claim == "equivalent" else 1
    if len(args.shapes) != expected:
        raise ValueError(f"'{args.claim}' takes {expected} shape(s), got {len(args.shapes)}")
    options = {"assume": args.assume or None, "timeout_ms": args.timeout_ms}
    if args.claim == "injective":
        result = prove.injective(args.shapes[0], method=args.method, **options)
    elif args.claim == "in-bounds":
        result = prove.in_bounds(args.shapes[0], allocation=args.allocation, method=args.method, **options)
    elif args.claim == "tiling":
        result = prove.tiling_is_pad_reshape_transpose(args.shapes[0], **options)
    else:
        result = prove.equivalent(args.shapes[0], args.shapes[1], **options)
    print(result)
    return 0 if result.proved else 1


def _bitcast(args: argparse.Namespace) -> int:
    from layout_algebra.bitcast import reshape_is_bitcast, suggest_bitcast_layout, transpose_is_bitcast

    if args.suggest:
        suggestion = suggest_bitcast_layout(args.src, _index(args.dst))
        print(f"{suggestion.shape}: {suggestion.reason}" if suggestion else suggestion.reason)
        return 0 if suggestion else 1
    assume = args.assume or None
    if args.permutation is not None:
        verdict = transpose_is_bitcast(args.src, args.dst, args.permutation, assume=assume)
    else:
        verdict = reshape_is_bitcast(args.src, args.dst, assume=assume)
    print(verdict)
    try:
        from layout_algebra import xla

        if args.permutation is not None:
            theirs = xla.transpose_is_bitcast(args.src, args.dst, args.permutation)
        else:
            theirs = xla.reshape_is_bitcast(args.src, args.dst)
        print(f"  XLA's tile-unaware ShapeUtil check says: {'bitcast' if theirs else 'not a bitcast'}")
    except (AttributeError, ValueError):
        pass
    return 0 if verdict else 1


def _proofs(args: argparse.Namespace) -> int:
    from layout_algebra.proofs import main as run_proofs

    argv = list(args.only)
    if args.catalog:
        argv += ["--catalog", args.catalog]
    if args.write:
        argv += ["--write", args.write]
    return run_proofs(argv)


def _index(text: str) -> tuple[int, ...]:
    """``"2,3"`` -> ``(2, 3)``; ``""`` is the scalar's index ``()``."""
    try:
        return tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an index like 2,3") from None


def _size(args: argparse.Namespace) -> int:
    for text in args.shapes:
        r = size_report(text)
        if args.json:
            record = {
                "shape": str(r.shape),
                "element_bits": r.element_bits,
                "logical_elements": r.logical_elements,
                "logical_bytes": r.logical_bytes,
                "tiled_dimensions": list(r.tiled_dimensions),
                "physical_elements": r.physical_elements,
                "physical_bytes": r.physical_bytes,
                "xla_allocated_bytes": r.first_tile_bytes,
                "padding_bytes": r.padding_bytes,
                "notes": list(r.notes),
            }
            print(json.dumps(record, default=str))  # symbolic sizes print as SymPy text
        else:
            line = f"{r.shape}: logical {r.logical_bytes} bytes, physical {r.physical_bytes} bytes"
            if r.first_tile_bytes != r.physical_bytes:
                line += f", XLA allocates {r.first_tile_bytes} bytes"
            print(line)
    return 0


def _validate(args: argparse.Namespace) -> int:
    status = 0
    for text in args.shapes:
        shape = parse_shape(text)
        try:
            validate(shape)
            print(f"{shape}: valid")
        except ValueError as err:
            print(str(err))
            status = 1
    return status


def _read_text(path: str) -> str:
    try:
        data = Path(path).read_bytes()
    except OSError as err:
        raise ValueError(f"cannot read {path}: {err.strerror or err}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ValueError(
            f"{path} is not UTF-8 text (byte {err.start} is {data[err.start : err.start + 1]!r})"
        ) from None


def _audit(args: argparse.Namespace) -> int:
    from layout_algebra.hlo import HloParseError, audit_module, parse_module
    from layout_algebra.hlo.report import render_audit

    try:
        module = parse_module(_read_text(args.module))
    except HloParseError as err:
        raise ValueError(f"{args.module}: {err}") from None
    if sys.stderr.isatty() and module.instruction_count >= 5000:
        from rich.progress import Progress

        with Progress(transient=True) as bar:
            task = bar.add_task("auditing", total=module.instruction_count)
            report = audit_module(module, progress=lambda done, _: bar.update(task, completed=done))
    else:
        report = audit_module(module)
    if args.json:
        print(json.dumps(report.to_json(top=args.top or None)))
    else:
        top = 25 if args.top is None else args.top
        width = shutil.get_terminal_size((160, 24)).columns
        print(render_audit(report, top=top, width=width, color=sys.stdout.isatty()), end="")
    return 0


def _tpu_layout(args: argparse.Namespace) -> int:
    from layout_algebra.tpu import default_layout

    shape = default_layout(args.dtype, args.dims)
    r = size_report(shape)
    if args.json:
        record = {
            "shape": str(shape),
            "xla_allocated_bytes": r.first_tile_bytes,
            "logical_bytes": r.logical_bytes,
        }
        print(json.dumps(record))
    else:
        print(f"{shape}: XLA:TPU allocates {r.first_tile_bytes:,} bytes (logical {r.logical_bytes:,} bytes)")
    return 0


def _pack(args: argparse.Namespace) -> int:
    import numpy as np

    from layout_algebra.layout_map import layout_map
    from layout_algebra.numpy_eval import numpy_dtype, pack, unpack

    try:
        with open(args.input, "rb") as f:
            if args.unpack:
                data = np.fromfile(f, dtype=np.uint8)
            elif f.read(6) != b"\x93NUMPY":
                raise ValueError(f"{args.input} is not a .npy file (numpy.save writes them)")
            else:
                f.seek(0)
                array = np.load(f, allow_pickle=False)
    except OSError as err:
        raise ValueError(f"cannot read {args.input}: {err.strerror or err}") from None
    except EOFError as err:  # a truncated .npy file
        raise ValueError(f"cannot read {args.input} as a .npy array: {err}") from None
    if args.unpack:
        array = unpack(data, args.shape)
        done = f"{args.input} -> {args.output}: {array.dtype}{list(array.shape)}"
    else:
        wanted = numpy_dtype(layout_map(args.shape).shape.element_type)
        if array.dtype.kind == "V" and array.dtype.itemsize == wanted.itemsize:
            array = array.view(wanted)  # .npy files keep ml_dtypes arrays as raw bytes
        data = pack(array, args.shape, fill=args.fill)
        done = f"{args.input} -> {args.output}: {data.size} bytes"
    try:
        with open(args.output, "wb") as f:
            if args.unpack:
                np.save(f, array, allow_pickle=False)
            else:
                data.tofile(f)
    except OSError as err:
        raise ValueError(f"cannot write {args.output}: {err.strerror or err}") from None
    print(done)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        if args.command == "explain":
            for i, text in enumerate(args.shapes):
                if i:
                    print()
                print(explain(text, element=args.element))
            return 0
        if args.command == "size":
            return _size(args)
        if args.command == "audit":
            return _audit(args)
        if args.command == "tpu-layout":
            return _tpu_layout(args)
        if args.command == "prove":
            return _prove(args)
        if args.command == "proofs":
            return _proofs(args)
        if args.command == "bitcast":
            return _bitcast(args)
        if args.command == "pack":
            return _pack(args)
        if args.command == "codegen":
            return _codegen(args)
        if args.command == "draw":
            return _draw(args)
        return _validate(args)
    except ValueError as err:
        print(f"layout-algebra {args.command}: error: {err}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # e.g. piped into `head`
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
