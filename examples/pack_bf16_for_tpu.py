"""Stage a bf16 weight matrix in the TPU's tiled format, the way a runtime would.

A (1000, 3000) bf16 matrix goes to a TPU as bf16[1000,3000]{1,0:T(8,128)(2,1)}: 8x128 tiles
(3000 columns pad to 3072), rows 2k and 2k+1 of a column sharing a 32-bit word. This packs it,
shows where a few elements landed and what the padding costs, checks the bytes against the
layout map, and reads them back.

Run:  python examples/pack_bf16_for_tpu.py [OUT.bin]   (OUT.bin: also write the packed bytes)
"""

import sys
import time

import ml_dtypes
import numpy as np

import layout_algebra as la

SHAPE = "bf16[1000,3000]{1,0:T(8,128)(2,1)}"

weights = np.random.default_rng(0).standard_normal((1000, 3000)).astype(ml_dtypes.bfloat16)
m = la.layout_map(SHAPE)

start = time.perf_counter()
packed = la.pack(weights, SHAPE)
seconds = time.perf_counter() - start

print(SHAPE)
print(f"  logical   {weights.nbytes:>12,} bytes")
print(
    f"  packed    {packed.size:>12,} bytes  (tiled shape {list(m.physical_dimensions)}, packed in {seconds * 1e3:.1f} ms)"
)
print(f"  padding   {packed.size - weights.nbytes:>12,} bytes  ({packed.size / weights.nbytes - 1:.1%} more)")

print("\nwhere elements landed (byte offset, and the 32-bit word holding them):")
words = packed.view(np.uint32)
for index in [(0, 0), (1, 0), (0, 1), (2, 0), (0, 128), (8, 0), (999, 2999)]:
    offset = m.forward(index, unit="byte")
    word = int(words[offset // 4])
    half = "low" if offset % 4 == 0 else "high"
    stored = np.array([word >> (16 * (offset % 4 // 2)) & 0xFFFF], np.uint16).view(ml_dtypes.bfloat16)[0]
    assert stored == weights[index] or (np.isnan(stored) and np.isnan(weights[index]))
    print(f"  {index!s:<12} byte {offset:>9,}   {half} half of word 0x{word:08x}  = {weights[index]}")

# every element, at once: the layout map evaluated on index arrays says where each one lives
rows, cols = np.indices(weights.shape).reshape(2, -1)
positions = m.apply((rows, cols), through=len(m.stages) - 1)[0]
assert np.array_equal(packed.view(np.uint16)[positions], weights.view(np.uint16).reshape(-1))
print(f"\nall {weights.size:,} elements are where the layout map puts them")

back = la.unpack(packed, SHAPE)
assert np.array_equal(back.view(np.uint16), weights.view(np.uint16))
print("unpack(pack(weights)) == weights, bit for bit")

if len(sys.argv) > 1:
    packed.tofile(sys.argv[1])
    print(f"wrote {sys.argv[1]} ({packed.size:,} bytes)")
