"""Shared test configuration: Hypothesis profiles, the run's private lemma cache, fixtures.

Helpers that tests import live in ``tests/support/`` (the reference data's paths and readers
in ``support.ground_truth``); this file holds only what pytest itself reads.
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import settings
from support.environment import IN_CI
from support.ground_truth import GROUND_TRUTH, ground_truth_file

# No example database: keeps test runs from writing ``.hypothesis/`` into the checkout.
# ``print_blob`` makes a failure reproducible with ``@reproduce_failure``. No deadline: an
# example's time says nothing about correctness (timings live in ``benchmarks/``), and a
# busy machine must not fail a test. Every ``settings(...)`` in the tests inherits these.
settings.register_profile("layout_algebra", database=None, print_blob=True, deadline=None)
# CI draws the same examples on every run (a red CI is then reproducible and never a coin
# toss); local runs keep exploring new random examples.
settings.register_profile("ci", parent=settings.get_profile("layout_algebra"), derandomize=True)
settings.load_profile("ci" if IN_CI else "layout_algebra")


# The run proves into a lemma cache of its own, for every test and doctest of the session
# (this file is loaded first: ``tests`` leads ``testpaths``): it never reads or writes the
# user's cache directory, and a stale entry there can never make a test pass.
_LEMMA_CACHE = tempfile.mkdtemp(prefix="layout-algebra-test-lemmas-")
os.environ["LAYOUT_ALGEBRA_CACHE_DIR"] = _LEMMA_CACHE
atexit.register(shutil.rmtree, _LEMMA_CACHE, ignore_errors=True)


#: Opt-in markers: their tests need what the test extra lacks (jax[tpu], pycute, Triton) and run
#: only when ``-m`` names them (``pytest -m oracle tests/xla_tpu``); any other ``-m``
#: (``pytest -m "not slow"``) leaves them out, as a plain ``pytest`` does.
OPT_IN_MARKERS = ("oracle", "pycute", "triton")
#: Folders whose every test is ``slow`` (see tests/README.md): they build wheels, start
#: browsers, compilers and fresh interpreters.
SLOW_FOLDERS = ("integration",)


@pytest.hookimpl(tryfirst=True)  # before ``-m`` deselects: the markers added here count
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the tests of :data:`SLOW_FOLDERS` ``slow``; leave out opt-in tests not asked for."""
    here = Path(__file__).resolve().parent
    slow = {here / folder for folder in SLOW_FOLDERS}
    for item in items:
        if slow.intersection(Path(item.path).resolve().parents):
            item.add_marker(pytest.mark.slow)
    asked = config.getoption("markexpr") or ""
    opted_out = [m for m in OPT_IN_MARKERS if not re.search(rf"\b{m}\b", asked)]
    left_out = [item for item in items if any(item.get_closest_marker(m) for m in opted_out)]
    if left_out:
        config.hook.pytest_deselected(items=left_out)
        items[:] = [item for item in items if item not in left_out]


@pytest.fixture
def ground_truth() -> Path:
    """The ``GROUND_TRUTH`` directory; the test FAILS (does not skip) if it is missing."""
    ground_truth_file("README.md")
    return GROUND_TRUTH
