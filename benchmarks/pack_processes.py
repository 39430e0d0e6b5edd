"""Pack/unpack speed of one layout across fresh processes: how much it varies from process to process.

``pack.py`` measures in one process, and a process can be unlucky for its whole life (where its
buffers landed). This runs ``pack.py --only TEXT`` in ``--processes`` fresh processes, one after
the other, and prints each one's ratio to ``np.copyto`` (median over its rounds) for pack and
unpack into preallocated buffers on every CPU, then the median, the minimum and how many
processes fell below 0.5.

Found this way (2026-11-24): in about a third of the processes, ``s4 (64,128)`` pack ran at 0.2–0.45
of ``np.copyto`` instead of 0.7: the buffer that gathers a region's runs into whole cache lines
(``copy_kernels._stream_runs_out``) crossed a page boundary, and its stores, misaligned when the
output is (NumPy's large arrays start 16 bytes into a page), were split across two pages.

Run:  python benchmarks/pack_processes.py [--only TEXT] [--processes N] [--rounds N]
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
from pathlib import Path

CELL = re.compile(r"\(([0-9.]+)\)")


def ratios(output: str, text: str) -> tuple[float, float]:
    """The (pack, unpack) ratios to ``np.copyto`` of the row of ``text`` in ``pack.py``'s table."""
    for line in output.splitlines():
        if line.startswith(f"| `{text}`"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            pack, unpack = (CELL.search(cells[k]) for k in (3, 4))
            if pack and unpack:
                return float(pack.group(1)), float(unpack.group(1))
    raise SystemExit(f"no row for {text!r} in pack.py's output:\n{output}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--only", default="s4[8192,8192]{1,0:T(64,128)(8,1)E(4)}", help="the layout (one row)"
    )
    parser.add_argument("--processes", type=int, default=10, help="fresh processes, one after the other")
    parser.add_argument("--rounds", type=int, default=7, help="rounds per process (pack.py --rounds)")
    args = parser.parse_args()
    script = Path(__file__).with_name("pack.py")
    packs, unpacks = [], []
    for k in range(args.processes):
        command = [sys.executable, str(script), "--rounds", str(args.rounds), "--only", args.only]
        done = subprocess.run(command, capture_output=True, text=True, check=True)
        p, u = ratios(done.stdout, args.only)
        packs.append(p)
        unpacks.append(u)
        print(f"process {k + 1}: pack {p:.2f}, unpack {u:.2f}", flush=True)
    for name, values in (("pack", packs), ("unpack", unpacks)):
        below = sum(v < 0.5 for v in values)
        print(
            f"{name}: median {statistics.median(values):.2f}, min {min(values):.2f}, max {max(values):.2f}, "
            f"{below} of {len(values)} processes below 0.5"
        )


if __name__ == "__main__":
    main()
