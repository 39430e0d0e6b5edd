"""The tiled index formula equals pad → reshape → transpose.

XLA's tiled-layout document gives ``linear_index_with_tile(e, d, t) =
linear_index((⌊e/t⌋, e mod t), (⌈d/t⌉, t))`` and says the same layout is obtained by
padding each dim to a multiple of the tile, reshaping ``d_i`` into ``(⌈d_i/t_i⌉, t_i)``
and transposing the ``t_i`` to the minor end. Both constructions (written separately in
``layout_algebra.meaning.references``) and the package's stage pipeline agree on every element,
for every N and M.
"""

from layout_algebra import prove

CLAIM = "the tiled index formula equals pad -> reshape -> transpose (symbolic N, M)"


def prove_claim():
    return [
        prove.tiling_is_pad_reshape_transpose("f32[N,M]{1,0:T(8,128)}"),
        prove.tiling_is_pad_reshape_transpose("f32[N,M]{0,1:T(2,2)}"),
        prove.tiling_is_pad_reshape_transpose("f32[N]{0:T(1024)(128)}"),
    ]
