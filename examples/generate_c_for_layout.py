"""Generate C for a layout's index arithmetic, compile it, and check it against the layout.

Prints the C functions (logical index -> byte offset, byte offset -> logical index, is this
byte padding?), each with its operation count and certification; then, if a C compiler is
on the PATH, compiles them with -Wall -Wextra -Werror and compares what the compiled code
computes for every element with what the library says.

Run:  python examples/generate_c_for_layout.py ['SHAPE']
"""

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import layout_algebra as la

text = sys.argv[1] if len(sys.argv) > 1 else "bf16[24,260]{1,0:T(8,128)(2,1)}"
m = la.layout_map(text)
if m.is_symbolic:
    sys.exit(f"{text}: give concrete sizes to compile and check (codegen itself accepts symbolic ones)")

forward = la.generate_code(text, "c", "forward", unit="byte")
inverse = la.generate_code(text, "c", "inverse", unit="byte")
padding = la.generate_code(text, "c", "padding", unit="byte")
for code in (forward, inverse, padding):
    print(code.text + code.comment() + "\n")

compiler = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
if compiler is None:
    print("no C compiler found: not compiling")
    sys.exit(0)

# A main() that prints the byte offset of every element (row-major over the logical index),
# then the logical index (or "pad") at every byte offset.
loops = " ".join(f"for (uint64_t i{k} = 0; i{k} < {d}; ++i{k})" for k, d in enumerate(m.shape.dimensions))
args = ", ".join(f"i{k}" for k in range(m.rank))
fmt = " ".join(["%lld"] * m.rank)
printed = ", ".join(f"(long long)ix[{k}]" for k in range(m.rank))
main = f"""
#include <stdio.h>
int main(void) {{
    {loops} printf("%lld\\n", (long long)byte_offset({args}));
    for (uint64_t p = 0; p < {m.size_in_bytes}; ++p) {{
        if (is_padding(p)) {{ printf("pad\\n"); continue; }}
        uint64_t ix[{max(m.rank, 1)}];
        logical_index(p, ix);
        printf("{fmt}\\n"{", " if printed else ""}{printed});
    }}
    return 0;
}}
"""
with tempfile.TemporaryDirectory() as tmp:
    source, exe = Path(tmp) / "layout.c", Path(tmp) / "layout"
    source.write_text(forward.text + inverse.text + padding.text + main)
    subprocess.run(
        [compiler, "-std=c11", "-Wall", "-Wextra", "-Werror", str(source), "-o", str(exe)], check=True
    )
    lines = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.splitlines()

expected = [str(m.forward(index, "byte")) for index in m.elements()]
for p in range(m.size_in_bytes):
    element = m.inverse(p, "byte")
    expected.append("pad" if element is None else " ".join(map(str, element)))
agree = lines == expected
print(f"compiled with {Path(compiler).name}: {len(expected)} results, all agree with the layout map: {agree}")
sys.exit(0 if agree else 1)
