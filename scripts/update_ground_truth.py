"""Refresh ``tests/data/ground_truth`` from a master copy, and write its manifest.

The ground truth (XLA's test vectors, the shape strings run through XLA's parser, the rows the
XLA:TPU compiler answered, real HLO modules, and the XLA reference notes) is produced outside
this project (see ``tests/data/ground_truth/README.md`` for where each file comes from). This
script copies the files the tests use from a directory laid out the same way and records their
SHA-256 in ``MANIFEST.sha256``, which ``tests/conformance/test_ground_truth.py`` checks:

    python scripts/update_ground_truth.py --from PATH/TO/data --facts PATH/TO/xla-facts.md
    python scripts/update_ground_truth.py --manifest-only      # after editing by hand

Only the kinds of file listed in ``PATTERNS`` are copied; nothing else is touched.
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GROUND_TRUTH = ROOT / "tests" / "data" / "ground_truth"
MANIFEST = GROUND_TRUTH / "MANIFEST.sha256"
#: The files the tests read, relative to the master directory.
PATTERNS = ("README.md", "xla_vectors.json", "xla_shape_strings.tsv", "tpu/*.jsonl", "hlo/*.hlo")


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def manifest_lines(directory: Path) -> list[str]:
    """``<sha256>  <relative path>`` for every file below ``directory`` but the manifest, sorted."""
    files = sorted(p for p in directory.rglob("*") if p.is_file() and p != MANIFEST)
    return [f"{sha256(p)}  {p.relative_to(directory).as_posix()}" for p in files]


def copy_from(master: Path) -> list[Path]:
    copied = []
    for pattern in PATTERNS:
        matches = sorted(master.glob(pattern))
        if not matches:
            raise SystemExit(f"{master} has no {pattern}: is it the ground-truth data directory?")
        for source in matches:
            target = GROUND_TRUTH / source.relative_to(master)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
            copied.append(target)
    return copied


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--from", dest="master", type=Path, metavar="DIR", help="the master data directory")
    group.add_argument("--manifest-only", action="store_true", help="only rewrite MANIFEST.sha256")
    parser.add_argument("--facts", type=Path, metavar="FILE", help="the XLA reference notes (xla-facts.md)")
    args = parser.parse_args(argv)
    if args.master is not None:
        copied = copy_from(args.master)
        print(f"copied {len(copied)} files from {args.master}")
    if args.facts is not None:
        shutil.copyfile(args.facts, GROUND_TRUTH / "xla-facts.md")
    lines = manifest_lines(GROUND_TRUTH)
    MANIFEST.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"{MANIFEST.relative_to(ROOT)}: {len(lines)} files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
