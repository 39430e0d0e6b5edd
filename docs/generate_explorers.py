"""Write the documentation's interactive explorer pages, into ``docs/explorers/``.

Run:  python docs/generate_explorers.py [OUT_DIR]

Every explorer page the site embeds is listed in :data:`PAGES` (file name, the shapes
shown side by side) and written by ``layout_algebra.teach.draw(..., fmt="html")``; like the
figures, the pages are generated, not kept in git. The script also takes a screenshot of
one page in headless Chromium (Debian's ``chromium`` and ``chromium-driver``, through
Selenium), ``explorer.png``; where no browser is available it writes the static figure
of the same layout instead and says so.

This file is also a docs-site hook (``hooks:`` in ``mkdocs.yml``): before a build it
writes the pages (and the screenshot) that are missing, and mkdocs serves them as static
files next to ``explorer.md``.

>>> PAGES["figure1.html"].shapes
('f32[3,5]{1,0:T(2,2)}',)
"""

from __future__ import annotations

import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DOCS = Path(__file__).resolve().parent
EXPLORER_DIR = DOCS / "explorers"
SCREENSHOT = "explorer.png"


@dataclass(frozen=True)
class PageSpec:
    """One page: the shapes shown side by side, and the window's size."""

    shapes: tuple[str, ...]
    max_rows: int = 16
    max_cols: int = 32


# Pages embedded in explorer.md show at most 16 columns (and 16 slots a buffer row): at 28 px a
# cell they then fit the docs' content column unscaled, so their labels keep their size.
PAGES: dict[str, PageSpec] = {
    # the tiled-layout document's figures
    "figure1.html": PageSpec(("f32[3,5]{1,0:T(2,2)}",), 16, 16),
    "figure2.html": PageSpec(("f32[4,8]{1,0:T(2,4)(2,1)}",), 16, 16),
    "cross_tile.html": PageSpec(("f32[8,8]{1,0:T(2,4)(2,1,1,1)}",), 16, 16),
    # minor_to_major: the same array, rows or columns minor
    "row_vs_column.html": PageSpec(("f32[16,256]{1,0:T(8,128)}", "f32[16,256]{0,1:T(8,128)}"), 16, 16),
    # the TPU formats, one page each
    "tpu_f32.html": PageSpec(("f32[20,300]{1,0:T(8,128)}",)),
    "tpu_bf16.html": PageSpec(("bf16[20,300]{1,0:T(8,128)(2,1)}",), 16, 16),
    "tpu_s8.html": PageSpec(("s8[40,300]{1,0:T(32,128)(4,1)}",)),
    "tpu_s4.html": PageSpec(("s4[70,300]{1,0:T(64,128)(8,1)E(4)}",)),
    "tpu_pred.html": PageSpec(("pred[3000]{0:T(1024)(128)(4,1)L(1024)}",)),
    "thin_rows.html": PageSpec(("f32[2,300]{1,0:T(8,128)}", "f32[2,300]{1,0:T(2,128)}"), 8, 16),
    "combined_dims.html": PageSpec(("f32[2,7,8,11,10]{4,3,2,1,0:T(*,*,2,*,3)}",)),
    # a real TPU layout of a large array: a window moves over it
    "bf16_tpu.html": PageSpec(("bf16[8,1,1280,16384]{3,2,0,1:T(8,128)(2,1)}",)),
}

#: The page the screenshot shows.
SCREENSHOT_PAGE = "tpu_bf16.html"


def generate(
    out_dir: Path = EXPLORER_DIR, *, only_missing: bool = False, names: list[str] | None = None
) -> list[Path]:
    """Write the pages of :data:`PAGES` (all, or those in ``names``) into ``out_dir``; returns the files written."""
    from layout_algebra import draw

    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, spec in PAGES.items():
        path = out_dir / name
        if (names is not None and name not in names) or (only_missing and path.is_file()):
            continue
        draw(list(spec.shapes), path, fmt="html", max_rows=spec.max_rows, max_cols=spec.max_cols)
        written.append(path)
    return written


def screenshot(page: Path, png: Path, hover: str = "p0-cell-1-5") -> str:
    """A PNG of ``page`` in headless Chromium with the mouse on ``hover``; returns how it was made.

    Without Chromium, its driver or Selenium, the static figure of the page's first
    layout is drawn instead (the return value says which).
    """
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver_path = shutil.which("chromedriver")
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
        from selenium.webdriver.common.action_chains import ActionChains
        from selenium.webdriver.common.by import By
    except ImportError:
        webdriver = None
    if webdriver is None or not chromium or not driver_path:
        from layout_algebra import draw

        shape = PAGES[page.name].shapes[0] if page.name in PAGES else None
        if shape is None:
            raise ValueError(f"{page}: not one of the pages listed in PAGES")
        draw(shape, png, max_rows=16, max_cols=32)
        return "static figure (no Chromium/Selenium here)"
    options = webdriver.ChromeOptions()
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1000,1400"):
        options.add_argument(argument)
    options.binary_location = chromium
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    try:
        driver.get(page.resolve().as_uri())
        ActionChains(driver, duration=0).move_to_element(driver.find_element(By.ID, hover)).perform()
        # the first panel alone, at its own size: shown at that size on the page, its labels stay legible
        driver.find_element(By.ID, "panel-0").screenshot(str(png))
    finally:
        driver.quit()
    return "headless Chromium"


# ----------------------------------------------------------------------------- mkdocs hook
def on_pre_build(config: Any) -> None:
    """mkdocs hook: write the pages and the screenshot a fresh checkout does not have yet."""
    generate(only_missing=True)
    png = EXPLORER_DIR / SCREENSHOT
    if not png.is_file():
        screenshot(EXPLORER_DIR / SCREENSHOT_PAGE, png)


def main(argv: list[str]) -> int:
    out_dir = Path(argv[0]) if argv else EXPLORER_DIR
    for path in generate(out_dir):
        size = path.stat().st_size
        print(f"{path}: {', '.join(PAGES[path.name].shapes)} ({size / 1000:.0f} kB)")
    how = screenshot(out_dir / SCREENSHOT_PAGE, out_dir / SCREENSHOT)
    print(f"{out_dir / SCREENSHOT}: {how}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
