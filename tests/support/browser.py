"""Headless Chromium for the browser tests: Debian's ``chromium`` and ``chromium-driver``, driven
by Selenium (which never downloads a driver of its own here).

``MISSING`` says why the browser cannot run (``None`` when it can); a browser test module skips
with that reason, except under ``CI=true``, where it fails instead (:func:`skip_unless_available`).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from typing import Any

import pytest

from support.environment import IN_CI

CHROMEDRIVER = shutil.which("chromedriver")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

try:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
except ImportError:  # pragma: no cover - the test extra installs it
    webdriver = None

MISSING = (
    "selenium is not installed (pip install -e '.[test]')"
    if webdriver is None
    else "Debian's chromium and chromium-driver are not installed (apt-get install chromium chromium-driver)"
    if not (CHROMEDRIVER and CHROMIUM)
    else None
)


def skip_unless_available() -> None:
    """Skip the calling test module when the browser is missing, except under ``CI=true``."""
    if MISSING and not IN_CI:
        pytest.skip(MISSING, allow_module_level=True)


def headless_chromium(*arguments: str) -> Iterator[Any]:
    """A headless Chromium driver (extra command-line ``arguments``), quit when the caller is done."""
    assert MISSING is None, MISSING
    options = webdriver.ChromeOptions()
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", *arguments):
        options.add_argument(argument)
    options.binary_location = CHROMIUM
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()
