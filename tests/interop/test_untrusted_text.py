"""Text from users is read by grammars, never evaluated: CuTe ``shape:stride`` text with size names."""

from __future__ import annotations

import pytest

from layout_algebra.interop.cute.export import cute_modes


def test_symbolic_cute_text_reads_size_names() -> None:
    (n_sizes, n_strides), (m_sizes, m_strides) = cute_modes("(N,8):(8,1)", ("N",))
    assert [str(x) for x in n_sizes] == ["N"] and n_strides == [8]
    assert m_sizes == [8] and m_strides == [1]


@pytest.mark.parametrize(
    "text",
    [
        '(__import__("os").system("touch {sentinel}"),8):(8,1)',
        "(N.__class__,8):(8,1)",
        "(lambda: 1,8):(8,1)",
        "(N**99999999,8):(8,1)",  # would hang SymPy's evaluator
        "(M,8):(8,1)",  # a name that is not a size of the layout
    ],
)
def test_hostile_or_foreign_cute_text_is_a_clear_error(text: str, tmp_path) -> None:
    sentinel = tmp_path / "ran"
    with pytest.raises(ValueError):
        cute_modes(text.format(sentinel=sentinel), ("N",))
    assert not sentinel.exists()
