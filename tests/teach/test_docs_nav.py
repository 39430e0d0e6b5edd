"""The documentation site has no page a reader cannot reach: mkdocs.yml's nav lists every
Markdown file in docs/, and the home page links every page (its map), each to a file that exists."""

from __future__ import annotations

import re
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parents[2] / "docs"
MKDOCS = DOCS.parent / "mkdocs.yml"


def pages() -> set[str]:
    return {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")}


def nav_pages() -> list[str]:
    """The ``.md`` targets of the ``nav:`` block (mkdocs.yml is read as text: its hooks tags
    need mkdocs' own loader, and the nav is a flat list of ``- Title: file.md`` lines)."""
    text = MKDOCS.read_text(encoding="utf-8")
    nav = re.search(r"^nav:\n((?:[ \t]+.*\n)+)", text, re.M)
    assert nav, "mkdocs.yml has no nav block"
    return re.findall(r":\s*\"?([\w./-]+\.md)\"?\s*$", nav.group(1), re.M)


def test_nav_reaches_every_page_and_only_pages_that_exist() -> None:
    listed = nav_pages()
    assert len(listed) == len(set(listed)), "a page is listed twice"
    assert set(listed) - pages() == set(), "the nav names a file docs/ does not have"
    assert pages() - set(listed) == set(), "a page no reader can reach from the nav"
    assert listed[0] == "index.md"


def test_home_page_maps_every_page() -> None:
    home = (DOCS / "index.md").read_text(encoding="utf-8")
    linked = set(re.findall(r"\]\(([\w./-]+\.md)(?:#[\w-]+)?\)", home))
    assert linked - pages() == set()
    assert pages() - {"index.md"} - linked == set(), "a page missing from the home page's map"


def test_home_page_opens_with_install_line_and_a_picture_the_library_draws() -> None:
    from importlib.util import module_from_spec, spec_from_file_location

    home = (DOCS / "index.md").read_text(encoding="utf-8")
    first_block = re.search(r"```sh\n(.*?)\n```", home, re.S)
    assert first_block and "pip install" in first_block.group(1)
    pictures = re.findall(r"!\[.*?\]\(figures/([\w.-]+)\)", home)
    assert pictures, "the home page shows no picture"
    spec = spec_from_file_location("generate_figures", DOCS / "generate_figures.py")
    module = module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    assert set(pictures) <= set(module.FIGURES), "a picture the library does not draw"
