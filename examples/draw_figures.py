"""Draw the tiled-layout document's Figures 1 and 2 with the library, and print their numbers.

Figure 1 is f32[3,5] in 2x2 tiles (element (2,3) at 17, padding white); Figure 2 is
f32[4,8] tiled (2,4) then (2,1), so rows 2k and 2k+1 of a column sit side by side in memory.

Run:  python examples/draw_figures.py [OUT_DIR]      (default: layout_algebra_figures in the temp directory)
"""

import sys
import tempfile
from pathlib import Path

import layout_algebra as la

out_dir = Path(sys.argv[1] if len(sys.argv) > 1 else Path(tempfile.gettempdir()) / "layout_algebra_figures")
out_dir.mkdir(parents=True, exist_ok=True)

for name, shape in [("figure1", "f32[3,5]{1,0:T(2,2)}"), ("figure2", "f32[4,8]{1,0:T(2,4)(2,1)}")]:
    path = out_dir / f"{name}.png"
    la.draw(shape, path)
    m = la.layout_map(shape)
    rows, cols = m.shape.dimensions
    print(f"{name}: {shape} -> {path} ({path.stat().st_size:,} bytes)")
    for r in range(rows):  # the numbers in the picture: each element's position in memory
        print("   " + " ".join(f"{m.forward((r, c)):2d}" for c in range(cols)))
    padding = [p for p in range(m.size_in_elements) if m.is_padding(p)]
    print(f"   padding slots: {padding or 'none'}")
