"""``layout-algebra pack``."""

from __future__ import annotations

import argparse

__all__ = ["register", "run"]


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the command's parser."""
    p = subparsers.add_parser(
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
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    import numpy as np

    from layout_algebra.meaning.layout_map import layout_map
    from layout_algebra.packing.numpy_eval import numpy_dtype, pack, unpack

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
        done = f"{args.input} -> {args.output}: {data.size:,} bytes"
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
