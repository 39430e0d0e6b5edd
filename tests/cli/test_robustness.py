"""No input makes explain, the size functions or the CLI fail with anything but a clear error."""

from __future__ import annotations

import contextlib
import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.strategies import array_shapes, shapes

import layout_algebra as la
from layout_algebra.cli import main


@pytest.mark.slow
@settings(max_examples=150)
@given(shapes(symbolic=True, layout=None, max_tile_levels=3))  # layout=None: sometimes unset
def test_explain_works_on_every_shape(shape: la.Shape) -> None:
    text = str(la.explain(shape))
    assert text.splitlines()[0] == str(shape)


@pytest.mark.slow
@settings(max_examples=200)
@given(array_shapes(symbolic=False, max_tile_levels=3))
def test_sizes_either_answer_or_say_why_not(shape: la.ArrayShape) -> None:
    try:
        report = la.size_report(shape)
    except la.LayoutSemanticsError as err:
        assert str(shape) in str(err)
        return
    assert report.physical_bytes == la.physical_size_in_bytes(shape)
    assert 0 <= report.logical_bytes <= report.physical_bytes
    assert report.first_tile_bytes <= report.physical_bytes
    assert report.physical_elements % shape.layout.tail_padding_alignment_in_elements == 0


@pytest.mark.slow
@settings(max_examples=150)
@given(st.text(alphabet="fbs0123456789[]{}(),:*?<=TLESCPMD#/ NM", max_size=60))
def test_cli_never_shows_a_traceback(text: str) -> None:
    for command in ("explain", "size", "validate"):
        out_buffer, err_buffer = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out_buffer), contextlib.redirect_stderr(err_buffer):
            code = main([command, text])
        out, err = out_buffer.getvalue(), err_buffer.getvalue()
        assert code in (0, 1, 2)
        assert "Traceback" not in out + err
        if code == 2:
            assert err.startswith(f"layout-algebra {command}: error: ")
