"""The pass-validation report in a real browser (headless Chromium through Selenium), at two
window sizes: nothing runs out of the window (a module's long lines scroll inside their own
box), every pair of the pipeline has a visible cell on the timeline, and a cell leads to its
pair's section.

Chromium and its driver come from Debian (``apt-get install chromium chromium-driver``);
without them the module skips with the reason, except under ``CI=true``, where it fails.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support.browser import MISSING, headless_chromium, skip_unless_available
from support.pass_dumps import MOVEMENT, RIGHT, WRONG, write_dump

from layout_algebra.hlo.pass_report import pass_report_html
from layout_algebra.hlo.passes import ASSUMPTIONS, validate_passes

skip_unless_available()

#: Elements whose right edge is past the window's (boxes that scroll are allowed to hold wide text),
#: and the page's own width (text spilling out of a box that does not scroll widens it).
_OVERFLOW = """
const width = document.documentElement.clientWidth;
const out = [];
for (const e of document.body.querySelectorAll('*')) {
  if (e.closest('pre.diff, pre')) continue;
  const r = e.getBoundingClientRect();
  if (r.width > 0 && r.right > width + 1) out.push(e.tagName + '.' + e.className + ' ' + Math.round(r.right));
}
const diffs = Array.from(document.querySelectorAll('pre.diff'), (p) => p.getBoundingClientRect().right);
return [out, diffs.filter((right) => right > width + 1).length, width, document.documentElement.scrollWidth];
"""

_CELLS = """
return Array.from(document.querySelectorAll('.timeline a'),
  (a) => [a.getBoundingClientRect().width, a.getAttribute('href'), a.getAttribute('title')]);
"""


@pytest.fixture(scope="module")
def report_page(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("passes")
    dump = write_dump(folder / "dump", [MOVEMENT, MOVEMENT, RIGHT, WRONG])
    report = validate_passes(dump)
    texts = {p.name: p.read_text() for p in dump.iterdir()}
    long_line = "  note = f32[8] constant({" + ", ".join(["1.5"] * 400) + "})\n"  # scrolls, never spills
    for name in list(texts):
        texts[name] = texts[name] + long_line
    path = folder / "report.html"
    path.write_text(pass_report_html(report.to_dict(), texts=texts, assumption_texts=ASSUMPTIONS))
    return path


@pytest.fixture(scope="module")
def browser():
    yield from headless_chromium()


def test_chromium_and_selenium_are_available() -> None:
    assert MISSING is None, MISSING


@pytest.mark.parametrize("size", [(800, 900), (1600, 1000)])
def test_nothing_runs_out_of_the_window_and_every_pair_has_a_visible_cell(browser, report_page, size) -> None:
    browser.set_window_size(*size)
    browser.get(report_page.resolve().as_uri())
    outside, spilled_diffs, width, page_width = browser.execute_script(_OVERFLOW)
    assert outside == [] and spilled_diffs == 0, (width, outside)
    assert page_width <= width, (page_width, width)  # no text runs out of its box and widens the page
    cells = browser.execute_script(_CELLS)
    assert len(cells) == 3  # three consecutive pairs of four dumps
    assert all(cell_width >= 2 for cell_width, _, _ in cells), cells
    sections = browser.execute_script(
        "return Array.from(document.querySelectorAll('section.pair'), (s) => s.id)"
    )
    linked = [href[1:] for _, href, _ in cells if href != "#"]
    assert linked == sections  # each changed pair's cell leads to its section
    browser.save_screenshot(str(report_page.with_name(f"report-{size[0]}.png")))
