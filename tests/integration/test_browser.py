"""The explorer page in a real browser: headless Chromium, driven by Selenium, real hover events.

The page is written to a file and opened from a ``file://`` URL (no server). The test
moves the mouse onto element cells, padding cells and buffer slots of five layouts
(f32 ``T(8,128)``, bf16 ``(8,128)(2,1)``, s4 ``E(4)``, a cross-tile ``(2,1,1,1)``, a
combined-dims ``*``), reads the text the page then *shows* and compares it with the
package's own answers (``linear_index``, ``delinearize``, the layout map in bits and
bytes). The page's test hook (``window.layoutExplorer``) is checked against the same
answers. A screenshot is taken (into the test's temporary directory).

Chromium and its driver come from Debian (``apt-get install chromium chromium-driver``);
Selenium is pointed at that ``chromedriver`` (it never downloads one). Without them the
module skips, with the reason, except under ``CI=true``, where it fails.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest
from support.browser import MISSING, headless_chromium, skip_unless_available
from support.explorer_cases import FIVE

from layout_algebra import delinearize, linear_index
from layout_algebra.meaning.layout_map import layout_map
from layout_algebra.teach.draw import draw, explorer_panel

try:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
except ImportError:  # pragma: no cover - the test extra installs it
    pass

skip_unless_available()

ELEMENT = re.compile(r"^element \(([\d, ]*)\) of (\S+)$", re.M)
OFFSETS = re.compile(r"^offset: (\d+) elements = bit (\d+) = byte (\d+)$", re.M)
WORD = re.compile(r"^32-bit word (\d+), bits (\d+)-(\d+) of it", re.M)
ARITHMETIC = re.compile(r"^  at (.*): (.*) = (\d+)$", re.M)
SLOT = re.compile(r"^slot (\d+) = bits (\d+)-(\d+) = byte (\d+): (padding|element \(([\d, ]*)\))", re.M)
PADDING_CELL = re.compile(r"^padding cell \(([\d, ]*)\): .* it is slot (\d+), which holds no element")


def test_chromium_and_selenium_are_available() -> None:
    assert MISSING is None, MISSING


@pytest.fixture(scope="module")
def browser():
    yield from headless_chromium("--window-size=2600,2400")


@pytest.fixture(scope="module")
def five_page(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("explorer") / "five.html"
    draw(FIVE, path)
    return path


@pytest.fixture
def page(browser, five_page):
    """The five layouts' page, freshly loaded from its file:// URL (each test starts from the same state)."""
    browser.get(five_page.resolve().as_uri())
    assert browser.execute_script("return window.layoutExplorer.panels") == [
        str(layout_map(s).shape) for s in FIVE
    ]
    yield browser
    assert _errors(browser) == []


def _errors(driver) -> list[str]:
    """The page's JavaScript errors (the browser's console, level SEVERE) since the last call."""
    return [entry["message"] for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]


_STATE = """
const info = document.getElementById(arguments[0]);
return [info.innerText, Array.from(document.querySelectorAll("rect.hl"), (e) => e.id)];
"""


def _hover_all(driver, ids: list[str]) -> list[tuple[str, list[str]]]:
    """Move the mouse onto each element in turn; what its panel's info box then shows, and what is outlined."""
    targets = driver.execute_script("return arguments[0].map((id) => document.getElementById(id));", ids)
    seen = []
    for element_id, target in zip(ids, targets, strict=True):
        assert target is not None, f"no element {element_id} on the page"
        try:
            ActionChains(driver, duration=0).move_to_element(target).perform()
        except Exception:  # outside the viewport: scroll it in, then move
            driver.execute_script("arguments[0].scrollIntoView({block: 'center', inline: 'center'});", target)
            ActionChains(driver, duration=0).move_to_element(target).perform()
        text, outlined = driver.execute_script(_STATE, element_id.split("-", 1)[0] + "-info")
        seen.append((text, outlined))
    return seen


def _hover(driver, element_id: str) -> str:
    return _hover_all(driver, [element_id])[0][0]


def _index(text: str) -> tuple[int, ...]:
    return tuple(int(v) for v in text.split(",") if v.strip())


def _cells(driver, n: int, prefix: str) -> list[str]:
    """Ids of the cells drawn now (one round trip, not one per cell)."""
    return driver.execute_script(
        f"return Array.from(document.querySelectorAll(\"#panel-{n} rect[id^='p{n}-{prefix}-']\"), (e) => e.id)"
    )


def _type(driver, element_id: str, value: int) -> None:
    """Type a number into an input of the page and press Enter (its change event redraws)."""
    box = driver.find_element(By.ID, element_id)
    box.clear()
    box.send_keys(f"{value}\n")


def _show_slots_from(driver, n: int, start: int) -> None:
    _type(driver, f"p{n}-slot0", start)


def _check_element(shape: str, text: str, index: tuple[int, ...]) -> None:
    m = layout_map(shape)
    shown = ELEMENT.search(text)
    assert shown and _index(shown[1]) == index and shown[2] == str(m.shape), text
    element, bit, byte = map(int, OFFSETS.search(text).groups())
    assert element == linear_index(shape, index), text
    assert delinearize(shape, element) == index
    assert (bit, byte) == (m.forward(index, "bit"), m.forward(index, "byte")), text
    word = WORD.search(text)
    if m.element_bits < 32:
        assert word, text
        assert int(word[1]) == bit // 32 and int(word[2]) == bit % 32
        assert int(word[3]) == bit % 32 + m.element_bits - 1
    else:
        assert word is None, text
    assert int(ARITHMETIC.search(text)[3]) == element


def test_hovering_elements_shows_their_offsets(page) -> None:
    rng = random.Random(2211)
    hovered = 0
    for n, shape in enumerate(FIVE):
        ids = _cells(page, n, "cell")
        slots = set(_cells(page, n, "slot"))
        assert len(ids) >= 12, (shape, len(ids))
        chosen = rng.sample(ids, 12)
        for element_id, (text, outlined) in zip(chosen, _hover_all(page, chosen), strict=True):
            index = tuple(int(v) for v in element_id.split("-")[2:])
            _check_element(shape, text, index)
            slot = f"p{n}-slot-{linear_index(shape, index)}"
            assert element_id in outlined
            assert (slot in outlined) == (slot in slots), (shape, index, slot)
            hovered += 1
    assert hovered >= 50


def test_hovering_buffer_slots_shows_their_element_or_padding(page) -> None:
    rng = random.Random(2212)
    hovered = paddings = 0
    for n, shape in enumerate(FIVE):
        m = layout_map(shape)
        hole = next((p for p in range(int(m.size_in_elements)) if m.is_padding(p)), None)
        for move in (False, True) if hole is not None else (False,):
            if move:  # the window moves to the first padding slot
                _show_slots_from(page, n, hole - 1)
                chosen = [f"p{n}-slot-{hole}", f"p{n}-slot-{hole - 1}"]
            else:
                chosen = rng.sample(_cells(page, n, "slot"), 10)
            shown_slots, cells = set(_cells(page, n, "slot")), set(_cells(page, n, "cell"))
            for slot_id, (text, outlined) in zip(chosen, _hover_all(page, chosen), strict=True):
                p = int(slot_id.rsplit("-", 1)[1])
                shown = SLOT.search(text)
                assert shown and int(shown[1]) == p, text
                assert slot_id in shown_slots and slot_id in outlined
                bits = m.element_bits
                assert (int(shown[2]), int(shown[3]), int(shown[4])) == (
                    p * bits,
                    p * bits + bits - 1,
                    p * bits // 8,
                )
                if m.is_padding(p):
                    assert shown[5] == "padding"
                    paddings += 1
                else:
                    index = _index(shown[6])
                    assert index == delinearize(shape, p) and linear_index(shape, index) == p
                    cell = f"p{n}-cell-" + "-".join(map(str, index))
                    assert (cell in outlined) == (cell in cells), (shape, p)
                hovered += 1
    assert hovered >= 50 and paddings >= 4


def test_hovering_padding_cells_of_the_grid_names_their_slot(page) -> None:
    checked = 0
    for n, shape in enumerate(FIVE):
        m = layout_map(shape)
        panel = explorer_panel(shape)
        if panel.rows_dim is not None:  # the window moves to the bottom right corner, where the padding is
            _type(page, f"p{n}-row0", max(0, panel.row_extent - panel.grid_rows))
        _type(page, f"p{n}-col0", max(0, panel.col_extent - panel.grid_cols))
        for cell_id in _cells(page, n, "pad")[:3]:
            shown = PADDING_CELL.search(_hover(page, cell_id))
            assert shown, cell_id
            assert m.is_padding(int(shown[2]))
            checked += 1
    assert checked >= 6


def test_the_hook_agrees_with_the_package(page) -> None:
    rng = random.Random(2213)
    for n, shape in enumerate(FIVE):
        m = layout_map(shape)
        for index in rng.sample(list(m.elements()), 10):
            d = page.execute_script(f"return window.layoutExplorer.describeElement({n}, {list(index)})")
            assert (d["element"], d["bit"], d["byte"]) == tuple(
                m.forward(index, u) for u in ("element", "bit", "byte")
            )
            _check_element(shape, d["text"], index)
        for p in rng.sample(range(int(m.size_in_elements)), 10):
            d = page.execute_script(f"return window.layoutExplorer.describeSlot({n}, {p})")
            assert d["padding"] == m.is_padding(p)
            if not d["padding"]:
                assert tuple(d["index"]) == delinearize(shape, p)


def test_moving_the_window_shows_other_elements(page) -> None:
    n, shape = 1, FIVE[1]
    page.find_element(By.ID, f"p{n}-down").click()
    page.find_element(By.ID, f"p{n}-right").click()
    index = (17, 40)
    _check_element(shape, _hover(page, f"p{n}-cell-17-40"), index)
    page.find_element(By.ID, f"p{n}-next").click()
    page.find_element(By.ID, f"p{n}-next").click()
    p = 300
    shown = SLOT.search(_hover(page, f"p{n}-slot-{p}"))
    assert _index(shown[6]) == delinearize(shape, p)
    n, shape = 4, FIVE[4]  # the combined-dims layout: another index of a dim not drawn
    _type(page, f"p{n}-dim-2", 5)
    _check_element(shape, _hover(page, f"p{n}-cell-0-0-5-3-4"), (0, 0, 5, 3, 4))


_LABEL_BOXES = """
return Array.from(document.querySelectorAll("svg text"), (t) => {
  const box = t.getBBox(), cell = t.previousElementSibling.getBBox();
  return [t.closest("svg").id, t.textContent, box.x, box.y, box.width, box.height,
          cell.x, cell.y, cell.width, cell.height];
});
"""


def test_every_label_stays_inside_its_cell(page) -> None:
    """The ``*`` panel's strip labels are whole 5-d indices ("1,6,7,10,9"): they used to run
    30 px wide over 24 px cells, into their neighbours; now they fit, on two lines if needed."""
    boxes = page.execute_script(_LABEL_BOXES)
    strip = [b for b in boxes if b[0] == "p4-strip"]
    assert len(strip) > 100 and max(len(b[1].split(",")) for b in strip) == 5
    outside = [
        b[:2]
        for b in boxes
        if b[2] < b[6] - 0.5
        or b[3] < b[7] - 0.5
        or b[2] + b[4] > b[6] + b[8] + 0.5
        or b[3] + b[5] > b[7] + b[9] + 0.5
    ]
    assert outside == [], outside[:5]
    assert all(_index(b[1]) for b in strip)  # the text is still the index, read back as before


def test_a_screenshot_shows_the_page(page, tmp_path) -> None:
    out = tmp_path / "explorer.png"
    assert page.save_screenshot(str(out))
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 10_000


def test_a_single_panel_page_with_the_default_window(browser, tmp_path) -> None:
    shape = "bf16[8,1,1280,16384]{3,2,0,1:T(8,128)(2,1)}"
    path = tmp_path / "big.html"
    draw(shape, path)
    browser.get(path.resolve().as_uri())
    panel = explorer_panel(shape)
    cells = browser.find_elements(By.CSS_SELECTOR, "#panel-0 rect.cell")
    assert len(cells) == panel.grid_rows * panel.grid_cols + panel.strip_width * panel.strip_rows
    _check_element(shape, _hover(browser, "p0-cell-0-0-15-31"), (0, 0, 15, 31))


EDGES = ["f32[]", "f32[0,5]{1,0:T(2,2)}", "pred[5]{0:E(1)}", "s4[3]{0:T(4)L(8)E(4)}", "u8[2,3,4]{0,2,1}"]


def test_edge_shapes_draw_without_errors(browser, tmp_path) -> None:
    path = tmp_path / "edges.html"
    draw(EDGES, path)
    browser.get(path.resolve().as_uri())
    assert _errors(browser) == []
    scalar = SLOT.search(_hover(browser, "p0-slot-0"))
    assert scalar and scalar[6] == ""
    _check_element("f32[]", _hover(browser, "p0-cell-"), ())
    assert _cells(browser, 1, "cell") == [] and "no elements" in browser.find_element(By.ID, "panel-1").text
    _check_element(EDGES[2], _hover(browser, "p2-cell-4"), (4,))
    texts = _hover_all(browser, [f"p3-slot-{p}" for p in range(8)])
    for p, (text, _) in enumerate(texts):
        shown = SLOT.search(text)
        assert (shown[5] == "padding") == layout_map(EDGES[3]).is_padding(p), text
    _check_element(EDGES[4], _hover(browser, "p4-cell-1-0-3"), (1, 0, 3))
    assert _errors(browser) == []


# ------------------------------------------------------------------ readable at the size shown
#: Two window sizes: a desktop browser, and the docs' content column (the pages sit in iframes).
WINDOWS = [(1280, 900), (700, 900)]
#: Room a label keeps from its cell's edges, in SVG units: the red last-level outline is drawn
#: 2.4 units inside the cell and is 1.3 wide, so a label closer than 3 would touch it.
CLEARANCE = 3.0

_OVERFLOW = """
// inside its panel's frame, or the panel scrolls sideways to show it (then nothing shows outside it)
const out = [];
const within = (inner, outer) => inner.left >= outer.left - 0.5 && inner.right <= outer.right + 0.5 &&
                                 inner.top >= outer.top - 0.5 && inner.bottom <= outer.bottom + 0.5;
document.querySelectorAll(".panel").forEach((panel) => {
  const frame = panel.getBoundingClientRect();
  const scrolls = getComputedStyle(panel).overflowX === "auto" && panel.scrollWidth > panel.clientWidth;
  panel.querySelectorAll("svg, .controls, .caption, .legend, .info, h2").forEach((e) => {
    if (!within(e.getBoundingClientRect(), frame) && !scrolls) out.push(panel.id + " > " + (e.id || e.className.baseVal || e.className || e.tagName));
  });
});
const page = document.documentElement;
if (page.scrollWidth > page.clientWidth + 1) out.push("the page scrolls sideways: " + page.scrollWidth + " > " + page.clientWidth);
return out;
"""


@pytest.mark.parametrize("window", WINDOWS, ids=lambda w: f"{w[0]}x{w[1]}")
@pytest.mark.parametrize(
    "shapes, rows, cols",
    [
        (["f32[4,8]{1,0:T(2,4)(2,1)}"], 16, 16),  # Figure 2, as explorer.md embeds it
        (["bf16[20,300]{1,0:T(8,128)(2,1)}"], 16, 32),  # 4-digit slots, draw --html's default window
        (FIVE, 16, 32),
    ],
    ids=["figure2", "tpu_bf16", "five"],
)
def test_nothing_leaves_its_frame_and_no_label_touches_an_outline(
    browser, tmp_path, window, shapes, rows, cols
):
    path = tmp_path / "page.html"
    draw(shapes, path, fmt="html", max_rows=rows, max_cols=cols)
    browser.set_window_size(*window)
    try:
        browser.get(path.resolve().as_uri())
        assert _errors(browser) == []
        assert browser.execute_script(_OVERFLOW) == []
        boxes = browser.execute_script(_LABEL_BOXES)
        assert len(boxes) > 20
        crowded = [
            b[:2]
            for b in boxes
            if b[2] < b[6] + CLEARANCE
            or b[3] < b[7] + CLEARANCE
            or b[2] + b[4] > b[6] + b[8] - CLEARANCE
            or b[3] + b[5] > b[7] + b[9] - CLEARANCE
        ]
        assert crowded == [], crowded[:5]
        # the labels are legible where they are shown: at least 6 CSS px high on screen
        smallest = browser.execute_script(
            "return Math.min(...Array.from(document.querySelectorAll('svg text'), (t) =>"
            " t.getBoundingClientRect().height))"
        )
        assert smallest >= 6, smallest
    finally:
        browser.set_window_size(2600, 2400)


def test_the_info_box_shows_the_formula_in_the_documents_notation(page) -> None:
    text = _hover(page, _cells(page, 1, "cell")[5])
    arithmetic = re.search(r"^arithmetic: (.*)$", text, re.M)[1]
    assert "Math." not in text and "//" in arithmetic
    from layout_algebra import generate_code

    assert arithmetic == generate_code(FIVE[1], "python", "forward", "element").expression_texts[0]
