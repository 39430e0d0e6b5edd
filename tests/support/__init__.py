"""Shared test helpers: the ground-truth data, strategies, oracles and small builders.

Tests import these by module (``from support.strategies import array_shapes``): ``tests/`` is
on ``sys.path`` because ``tests/conftest.py`` lives there (pytest's default ``prepend`` import
mode). Nothing here is a test; pytest collects only the doctests of these modules.
"""
