"""Replayed programs (``layout_algebra.packing.replay``) against the index map, with numba and without.

The first ``pack`` (or ``unpack``) of a shape plans it; the second keeps a program of its
data movement; the next calls replay that program on new arrays. Every test here packs a
first array twice (which makes the program), then packs and unpacks *other* arrays through the replay
(a spy checks that the replay ran: a silent fallback would make the comparison vacuous),
and compares the bytes with ``reference_pack`` (positions from ``LayoutMap.apply`` on index
arrays, which knows nothing of either path), padding included, and the array unpacked with
the original. Both with the compiled kernels and with NumPy alone (``USE_KERNELS``); sub-byte words
(``s4`` under ``(8,1)E(4)``) are replayed only with the kernels.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.oracles import random_array, raw_bytes, reference_pack
from support.strategies_maps import small_layout_shapes

from layout_algebra.meaning.layout_map import layout_map
from layout_algebra.packing import copy_engine, numpy_eval, replay
from layout_algebra.packing.numpy_eval import forget_recipes, pack, unpack

HAS_NUMBA = copy_engine.kernels() is not None

#: Whole-byte layouts: the TPU formats at sizes that are and are not multiples of the tile,
#: dims of one element, transposing tiles, f8 words over a transposed array, pred, 3-D, scalars.
TEXTS = [
    "s8[256,256]{1,0:T(32,128)(4,1)}",
    "s8[131,259]{1,0:T(32,128)(4,1)}",
    "bf16[128,256]{1,0:T(8,128)(2,1)}",
    "bf16[9,300]{1,0:T(8,128)(2,1)}",
    "f32[128,128]{0,1:T(8,128)}",
    "f32[263,301]{0,1:T(8,128)}",
    "f32[128,128]{1,0:T(8,128)}",
    "f32[1,1]{1,0:T(8,128)}",
    "f8e5m2[256,256]{0,1:T(8,128)(4,1)}",
    "f8e5m2[300,97]{0,1:T(8,128)(4,1)}",
    "f8e4m3fn[1024,512]{0,1:T(8,128)(4,1)}",
    "pred[256,256]{1,0:T(8,128)(4,1)}",
    "pred[7,1,130]{2,1,0:T(8,128)(4,1)}",
    "u16[3,130,17]{0,2,1:T(8,128)}",
    "s4[256,512]{1,0:T(8,128)(8,1)E(4)}",
    "u4[64,256]{1,0:T(64,128)(8,1)E(4)}",
    "s4[257,1030]{1,0:T(8,128)(8,1)E(4)}",
    "s4[300,128]{0,1:T(8,128)(8,1)E(4)}",
    "s4[16,200]{1,0:T(8,128)(8,1)E(4)}",
    "f64[5,6]{0,1:T(2,2)}",
    "c128[5,6]{0,1:T(2,2)}",
    "c64[9,130]{1,0:T(8,128)}",
    "u8[4,6]{0,1:L(7)}",
    "s32[]",
    "f32[0,5]{1,0:T(8,128)}",
]

#: Layouts whose tiles the array fills exactly: with the kernels, no chunk is staged.
WHOLE_TILES = [
    t for t in TEXTS if t.split("]")[0].split("[")[1] in ("256,256", "128,128", "128,256", "1024,512")
]
WHOLE_TILES += ["s4[256,512]{1,0:T(8,128)(8,1)E(4)}", "u4[64,256]{1,0:T(64,128)(8,1)E(4)}"]
WHOLE_TILES += ["s4[16,200]{1,0:T(8,128)(8,1)E(4)}"]  # padded columns, whole words: replayed too


@contextmanager
def replays() -> Iterator[list[bool]]:
    """Count the replays of a program while the block runs: each call of a kept recipe's
    replay, True when it made the result (False: it left the call to the full path). Both
    ways a call finds one are watched: the table of replays ``pack``/``unpack`` look in first,
    and the recipe the full path reads (``_kept``)."""
    count: list[bool] = []
    real = numpy_eval._kept

    def counted(inner):  # type: ignore[no-untyped-def]
        def call(*args):  # type: ignore[no-untyped-def]
            done = inner(*args)
            count.append(done is not None)
            return done

        return call

    def spy(key):  # type: ignore[no-untyped-def]
        recipe = real(key)
        if recipe is None or recipe.replay is None:
            return recipe
        return dataclasses.replace(recipe, replay=counted(recipe.replay))

    class Watched(dict):  # type: ignore[type-arg]
        def get(self, key, default=None):  # type: ignore[no-untyped-def]
            inner = super().get(key, default)
            return inner if inner is None else counted(inner)

    kept = numpy_eval._REPLAYS
    table = Watched(kept)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(numpy_eval, "_kept", spy)
        patch.setattr(numpy_eval, "_REPLAYS", table)
        yield count
    kept.clear()  # the table as the block left it
    kept.update(table)


def check_replays(text: str, seed: int, fill: int) -> int:
    """Pack and unpack one array (making the programs), then two others by replay, each into
    a buffer full of other bytes and allocating; every result against the oracle. Returns how
    many calls replayed."""
    m = layout_map(text)
    fill %= 1 << min(m.element_bits, 8)  # a slot's bits
    rng = np.random.default_rng(seed)
    first = random_array(m, rng)
    for _ in range(2):  # the first call plans, the second makes the programs
        buf = pack(first, text, fill=fill, threads=1)
        np.testing.assert_array_equal(raw_bytes(unpack(buf, text, threads=1)), raw_bytes(first))
    with replays() as count:
        for _ in range(2):
            x = random_array(m, rng)
            expected = reference_pack(x, text, fill=fill)
            np.testing.assert_array_equal(pack(x, text, fill=fill, threads=1), expected, err_msg=text)
            into = rng.integers(0, 256, m.size_in_bytes, dtype=np.uint8)
            assert pack(x, text, fill=fill, out=into, threads=1) is into
            np.testing.assert_array_equal(into, expected, err_msg=text)
            np.testing.assert_array_equal(raw_bytes(unpack(expected, text, threads=1)), raw_bytes(x))
            back = random_array(m, rng)
            assert unpack(expected, text, out=back, threads=1) is back
            np.testing.assert_array_equal(raw_bytes(back), raw_bytes(x), err_msg=text)
    return sum(count)


@pytest.mark.parametrize("kernels", [True, False] if HAS_NUMBA else [False])
@pytest.mark.parametrize("text", TEXTS)
def test_replayed_pack_and_unpack_match_the_index_map(monkeypatch, text, kernels) -> None:
    monkeypatch.setattr(copy_engine, "USE_KERNELS", kernels)
    replayed = check_replays(text, seed=len(text), fill=0xA5)
    if 0 not in layout_map(text).logical_dimensions:  # packing always replays; unpacking where
        # no chunk would be staged first (with the kernels: every TPU format here)
        least = 8 if kernels and text in WHOLE_TILES else 0 if "E(4)" in text else 4
        assert replayed >= least, f"{text}: the programs were not replayed ({replayed} of 8)"


@pytest.mark.skipif(not HAS_NUMBA, reason="the kernels need numba")
def test_programs_call_the_kernels_and_match_numpy_alone(monkeypatch) -> None:
    """With numba the f8 words over a transposed array are one transposing kernel call, the
    s8 words one word kernel call; the bytes equal those of NumPy alone."""
    rng = np.random.default_rng(1)
    for text, kernel in (
        ("f8e5m2[256,256]{0,1:T(8,128)(4,1)}", {"gather_rows", "scatter_rows"}),
        ("s8[256,256]{1,0:T(32,128)(4,1)}", {"words_from_bytes"}),
    ):
        m = layout_map(text)
        x, y = random_array(m, rng), random_array(m, rng)
        pack(x, text, threads=1)
        pack(x, text, threads=1)
        with replays() as count:
            fast = pack(y, text, threads=1)
        assert count == [True]
        steps = numpy_program(text, y)
        called = [s.kernel[1] for s in steps if s.kernel is not None]
        assert len(called) == 1 and called[0] in kernel, called
        monkeypatch.setattr(copy_engine, "USE_KERNELS", False)
        forget_recipes()
        np.testing.assert_array_equal(pack(y, text, threads=1), fast)
        monkeypatch.setattr(copy_engine, "USE_KERNELS", True)


def numpy_program(text: str, x: np.ndarray) -> tuple[replay.Step, ...]:
    """The steps of the program kept for packing ``x`` in ``text`` (made by a first call)."""
    from layout_algebra.packing import stage_walk
    from layout_algebra.packing.formats import layout_format

    m, fmt = layout_format(text)
    buffer = np.empty(m.size_in_bytes, np.uint8)
    plan = stage_walk.walk(m, x.view(fmt.bits_dtype), None)
    chunks = stage_walk.chunk_list(plan.box, fmt.bits, stage_walk.CHUNK_BYTES)
    program = replay.whole_bytes_program(
        plan, buffer, x, fmt.dtype.itemsize, chunks, True, fmt.bits_dtype, padded=m.has_padding
    )
    assert program is not None
    return program.steps


def test_a_misaligned_buffer_or_a_strided_array_takes_the_full_path() -> None:
    text = "s8[256,256]{1,0:T(32,128)(4,1)}"
    m = layout_map(text)
    rng = np.random.default_rng(2)
    x = random_array(m, rng)
    pack(x, text, threads=1)
    pack(x, text, threads=1)
    expected = reference_pack(x, text)
    raw = np.zeros(m.size_in_bytes + 8, np.uint8)
    for shift in range(4):  # the words of the kernels misaligned for shifts 1-3: no replay there
        out = raw[shift : shift + m.size_in_bytes]
        np.testing.assert_array_equal(pack(x, text, out=out, threads=1), expected)
        np.testing.assert_array_equal(raw_bytes(unpack(out, text, threads=1)), raw_bytes(x))
    wide = np.zeros((256, 512), x.dtype)
    wide[:, ::2] = x
    np.testing.assert_array_equal(pack(wide[:, ::2], text, threads=1), expected)
    back = np.zeros((256, 512), x.dtype)
    unpack(expected, text, out=back[:, ::2], threads=1)
    np.testing.assert_array_equal(raw_bytes(back[:, ::2]), raw_bytes(x))


def test_bad_arguments_after_a_replay_still_raise_clear_errors() -> None:
    text = "f32[128,128]{1,0:T(8,128)}"
    x = random_array(layout_map(text), np.random.default_rng(3))
    pack(x, text, threads=1)
    pack(x, text, threads=1)
    with pytest.raises(ValueError, match=r"fill 256 must be in 0\.\.255"):
        pack(x, text, fill=256)
    with pytest.raises(ValueError, match="out has 3 bytes"):
        pack(x, text, out=np.zeros(3, np.uint8))
    with pytest.raises(ValueError, match="threads=0"):
        pack(x, text, threads=0)


ELEMENTS = (
    ("u8", 8),
    ("s8", 8),
    ("bf16", 16),
    ("f32", 32),
    ("f64", 64),
    ("pred", 8),
    ("f8e5m2", 8),
    ("s4", 4),
)


@pytest.mark.slow
@settings(max_examples=120, deadline=None)
@given(
    shape=st.sampled_from(ELEMENTS).flatmap(lambda e: small_layout_shapes(element=e, max_slots=4096)),
    seed=st.integers(0, 2**16),
    fill=st.integers(0, 255),
    kernels=st.booleans() if HAS_NUMBA else st.just(False),
)
def test_random_layouts_replayed_match_the_index_map(shape, seed, fill, kernels) -> None:
    forget_recipes()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(copy_engine, "USE_KERNELS", kernels)
        patch.setattr(copy_engine, "SHORT", 16)
        check_replays(str(shape), seed, fill)


#: The settings a program's decisions read, by module: one of each is changed at random.
SETTINGS = {
    "copy_engine": ["BLOCK_BYTES", "KERNEL_MIN_BYTES", "STREAM_MIN_BYTES", "BLOCKS_STREAM_BYTES", "SHORT"],
    "stage_walk": ["CHUNK_BYTES", "TRANSPOSING_CHUNK_BYTES", "KERNEL_CHUNK_BYTES"],
    "numpy_eval": ["LONG_RUN_BYTES"],
}


@pytest.mark.parametrize("seed", range(6))
def test_a_changed_setting_makes_the_program_again(monkeypatch, seed: int) -> None:
    """A program holds decisions made under the settings in force; after any of them changes
    the next call takes the full path (it is not replayed) and keeps a program made under the
    new ones, which the call after replays. Every result against the oracle."""
    from layout_algebra.packing import stage_walk

    rng = np.random.default_rng(seed)
    text = str(rng.choice(WHOLE_TILES))
    m = layout_map(text)
    x = random_array(m, rng)
    expected = reference_pack(x, text, 0)
    pack(x, text, threads=1)
    pack(x, text, threads=1)  # the program made
    with replays() as before:
        np.testing.assert_array_equal(pack(x, text, threads=1), expected, err_msg=text)
    modules = {"copy_engine": copy_engine, "stage_walk": stage_walk, "numpy_eval": numpy_eval}
    module = str(rng.choice(sorted(SETTINGS)))
    name = str(rng.choice(SETTINGS[module]))
    value = getattr(modules[module], name)
    monkeypatch.setattr(modules[module], name, value * 2 if value < 1 << 20 else value // 2)
    with replays() as after:
        for _ in range(3):
            np.testing.assert_array_equal(pack(x, text, threads=1), expected, err_msg=f"{text} {name}")
    assert before == [True], (text, before)
    assert after[0] is False, f"{text}: replayed after {module}.{name} changed"
    assert after[-1] is True, f"{text}: no program made again after {module}.{name} changed: {after}"


@pytest.mark.parametrize("packing", [True, False])
def test_forgotten_recipes_are_not_replayed(packing: bool) -> None:
    """``forget_recipes`` forgets the replaying calls with the recipes: the next call plans
    the shape again (it replays nothing), the one after that makes a program again, and the
    third replays it; every result against the oracle. The same when the table of recipes
    fills up and starts again (``RECIPES_KEPT``)."""
    rng = np.random.default_rng(7)
    text = "s4[256,512]{1,0:T(8,128)(8,1)E(4)}" if packing else "bf16[128,256]{1,0:T(8,128)(2,1)}"
    m = layout_map(text)
    x = random_array(m, rng)
    buf = reference_pack(x, text, 0)

    def call() -> None:
        if packing:
            np.testing.assert_array_equal(pack(x, text, threads=1), buf)
        else:
            np.testing.assert_array_equal(raw_bytes(unpack(buf, text, threads=1)), raw_bytes(x))

    for forget in (numpy_eval.forget_recipes, fill_the_table):
        call()
        call()  # the program made
        with replays() as kept:
            call()
        forget()
        with replays() as forgotten:
            call()
            call()
            call()
        assert kept == [True], (text, kept)
        assert forgotten == [True], (text, forget.__name__, forgotten)  # only the third replays


def fill_the_table() -> None:
    """Keep recipes of other shapes until the table starts again (it holds ``RECIPES_KEPT``)."""
    for n in range(numpy_eval.RECIPES_KEPT + 1):
        pack(np.zeros((1, n + 1), np.uint8), f"u8[1,{n + 1}]{{1,0}}", threads=1)


def test_the_modules_holding_settings_count_their_assignments() -> None:
    from layout_algebra.packing import stage_walk, tunables

    for module in (copy_engine, stage_walk, numpy_eval):
        before = tunables.version()
        name = next(n for n in vars(module) if n.isupper() and isinstance(getattr(module, n), int))
        setattr(module, name, getattr(module, name))
        assert tunables.version() == before + 1, module.__name__


#: Shapes of at least 256 KB (the compiled kernels take their words) whose programs are compiled
#: calls alone (words, nibbles, halves, transposes), and one of plain tile copies.
LARGE = [
    "s8[512,512]{1,0:T(32,128)(4,1)}",
    "pred[512,1024]{1,0:T(8,128)(4,1)}",
    "bf16[256,512]{1,0:T(8,128)(2,1)}",
    "s4[512,1024]{1,0:T(8,128)(8,1)E(4)}",
    "f32[256,256]{0,1:T(8,128)}",
    "f8e5m2[512,512]{0,1:T(8,128)(4,1)}",
    "f32[256,256]{1,0:T(8,128)}",
]


@pytest.mark.skipif(not HAS_NUMBA, reason="programs of compiled calls need numba")
@pytest.mark.parametrize("text", LARGE)
def test_large_shapes_replay_only_programs_of_compiled_calls(monkeypatch, text: str) -> None:
    """From ``STREAM_COPY_MIN_BYTES`` (lowered here so that small shapes count as large) a shape
    keeps a program only where it is compiled calls alone (a plain copy there is the full path's,
    stored past the caches), and replays it into a given result: on one thread always, on more
    where its calls run in parts side by side; allocating, the full path runs. Every result
    against the oracle."""
    monkeypatch.setattr(numpy_eval, "STREAM_COPY_MIN_BYTES", 1 << 18)
    m = layout_map(text)
    assert m.size_in_bytes >= 1 << 18
    rng = np.random.default_rng(len(text))
    first = random_array(m, rng)
    buf = np.empty(m.size_in_bytes, np.uint8)
    back = np.empty_like(first)
    for _ in range(2):  # the first call plans, the second makes the programs
        pack(first, text, out=buf, threads=1)
        unpack(buf, text, out=back, threads=1)
    kept = [numpy_eval._kept((text, True, first.dtype, first.shape)), numpy_eval._kept((text, False))]
    compiled = [r is not None and r.program is not None and numpy_eval.compiled_only(r.program) for r in kept]
    replayable = [r is not None and r.replay is not None for r in kept]
    assert replayable == compiled, (text, replayable, compiled)
    assert all(compiled) == ("{1,0:T(8,128)}" not in text), (text, compiled)
    x = random_array(m, rng)
    expected = reference_pack(x, text, 0)
    for threads in (1, None, 2):
        with replays() as packed:
            into = rng.integers(0, 256, m.size_in_bytes, dtype=np.uint8)
            np.testing.assert_array_equal(pack(x, text, out=into, threads=threads), expected, err_msg=text)
            np.testing.assert_array_equal(pack(x, text, threads=threads), expected, err_msg=text)
        with replays() as unpacked:
            out = random_array(m, rng)
            np.testing.assert_array_equal(
                raw_bytes(unpack(expected, text, out=out, threads=threads)), raw_bytes(x)
            )
            np.testing.assert_array_equal(raw_bytes(unpack(expected, text, threads=threads)), raw_bytes(x))
        # at most one call each way replayed: the one into a result (on one thread always; on
        # more where the parts can run: not with numba's sleeping layer, say); allocating, none
        for done, made in ((packed, compiled[0]), (unpacked, compiled[1])):
            assert done.count(True) <= int(made), (text, threads, done)
            assert not made or threads != 1 or done[0] is True, (text, threads, done)
            assert True not in done[1:], (text, threads, done)
