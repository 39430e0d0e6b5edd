"""Replayed programs run in parts side by side (``layout_algebra.packing.replay_parts``).

With every CPU asked for (``threads=None``), a replayed program of compiled entries runs each
call cut into parts on numba's threads. The oracle is ``reference_pack`` (positions from
``LayoutMap.apply`` on index arrays) and the original array's raw bytes; a spy checks that the
parts ran (a silent fallback to one thread would make the comparison say nothing about them).
The cutting itself is checked against brute-force enumeration of what each part touches.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.oracles import random_array, raw_bytes, reference_pack

from layout_algebra.meaning.layout_map import layout_map
from layout_algebra.packing import copy_engine, numpy_eval
from layout_algebra.packing.numpy_eval import pack, unpack

numba = pytest.importorskip("numba", reason="the parts run on numba's threads (the test extra installs it)")

from layout_algebra.packing import replay_parts  # noqa: E402  (needs numba)
from layout_algebra.packing.replay_kernels import cut_params, entry_params, entry_parts  # noqa: E402
from layout_algebra.packing.replay_transposes import transpose_params, transpose_parts  # noqa: E402

#: Layouts whose programs are entries with a parallel form (words of bytes, halves, nibbles;
#: transposes of 4-byte elements), at sizes that do and do not fill their tiles.
TEXTS = [
    "s8[256,256]{1,0:T(32,128)(4,1)}",
    "s8[131,259]{1,0:T(32,128)(4,1)}",
    "bf16[128,256]{1,0:T(8,128)(2,1)}",
    "f32[128,128]{0,1:T(8,128)}",
    "f32[263,301]{0,1:T(8,128)}",
    "f8e5m2[256,256]{0,1:T(8,128)(4,1)}",
    "f8e5m2[300,97]{0,1:T(8,128)(4,1)}",
    "pred[256,256]{1,0:T(8,128)(4,1)}",
    "s4[256,512]{1,0:T(8,128)(8,1)E(4)}",
    "u4[64,256]{1,0:T(64,128)(8,1)E(4)}",
]

#: The layouts above whose tiles the array fills: their programs are entries only, all run in parts.
WHOLE_TILES = [
    t
    for t in TEXTS
    if t.split("[")[1].split("]")[0] in ("256,256", "128,256", "128,128", "256,512", "64,256")
]


def touched(offsets: tuple[int, int], strides: list[list[int]], shape: list[int]) -> list[tuple[int, int]]:
    """Every (index on one side, index on the other) the linear map of a call visits, by brute force."""
    pairs = []
    for index in np.ndindex(*shape):
        pairs.append(
            tuple(
                o + sum(i * s for i, s in zip(index, side, strict=True))
                for o, side in zip(offsets, strides, strict=True)
            )
        )
    return pairs  # type: ignore[return-value]


@settings(max_examples=150, deadline=None)
@given(
    shape=st.lists(st.integers(1, 5), min_size=4, max_size=4),
    strides=st.lists(st.integers(-7, 40), min_size=8, max_size=8),
    offsets=st.tuples(st.integers(0, 50), st.integers(0, 50)),
    count=st.integers(2, 6),
)
def test_word_parts_visit_what_the_whole_call_visits_once(shape, strides, offsets, count) -> None:
    ws, ps = strides[:4], strides[4:]
    p = entry_params(offsets[0], ws, offsets[1], ps, 3, shape, False)
    parts = entry_parts(p, count)
    whole = touched(offsets, [ws, ps], shape)
    if parts is None:
        assert all(n < count for n in shape)
        return
    assert parts.shape[0] == count
    visited = []
    for q in parts:
        assert q[10] == p[10] and q[15] == p[15]  # step, flags untouched
        visited += touched((int(q[0]), int(q[5])), [list(q[1:5]), list(q[6:10])], list(q[11:15]))
    assert sorted(visited) == sorted(whole)  # every visit once: no element lost, none twice


@settings(max_examples=100, deadline=None)
@given(
    shape=st.lists(st.integers(1, 4), min_size=5, max_size=5),
    strides=st.lists(st.integers(0, 30), min_size=10, max_size=10),
    count=st.integers(2, 4),
)
def test_transpose_parts_cut_only_the_outer_loops(shape, strides, count) -> None:
    p = transpose_params(True, 3, strides[:5], 5, strides[5:], shape, 2, 16, False)
    parts = transpose_parts(p, count)
    if parts is None:
        assert shape[0] < count and shape[1] < count
        return
    visited = []
    for q in parts:
        assert list(q[15:18]) == shape[2:] and list(q[18:]) == list(p[18:])
        visited += touched((int(q[1]), int(q[7])), [list(q[2:7]), list(q[8:13])], list(q[13:18]))
    assert sorted(visited) == sorted(touched((3, 5), [strides[:5], strides[5:]], shape))


def test_cut_params_leaves_short_dims_whole() -> None:
    p = np.array([0, 10, 1, 2, 3], np.int64)  # offsets at 0, 1; strides at 2, 3; one dim of 3 at 4
    assert cut_params(p, (0, 1), (2, 3), 4, 1, 4) is None
    assert cut_params(p, (0, 1), (2, 3), 4, 1, 3).tolist() == [
        [0, 10, 1, 2, 1],
        [1, 12, 1, 2, 1],
        [2, 14, 1, 2, 1],
    ]


@pytest.fixture
def in_parts(monkeypatch):  # type: ignore[no-untyped-def]
    """Parts from any size, three asked for, the threading layer tried afresh; the list of
    calls that ran in parts."""
    if not copy_engine.start_kernels():
        pytest.fail("numba is importable but the kernels did not start")
    monkeypatch.setattr(copy_engine, "SIDE_BY_SIDE_MIN_BYTES", 0)
    monkeypatch.setattr(numpy_eval, "default_threads", lambda: 3)
    monkeypatch.setattr(replay_parts, "_spinning", None)
    ran: list[int] = []
    real = replay_parts.finished

    def spy() -> None:
        ran.append(1)
        real()
        replay_parts._spinning = None  # a sleeping layer is tried again: these tests check bytes, not speed

    monkeypatch.setattr(replay_parts, "finished", spy)
    return ran


@pytest.mark.parametrize("text", TEXTS)
def test_packing_in_parts_matches_the_index_map(in_parts, text: str) -> None:
    if numba.get_num_threads() < 2:
        pytest.skip("numba has one thread here: no parts can run side by side")
    m = layout_map(text)
    rng = np.random.default_rng(len(text))
    first = random_array(m, rng)
    for _ in range(2):  # the plan, then the program
        pack(first, text, fill=7 % (1 << min(m.element_bits, 8)))
    fill = 7 % (1 << min(m.element_bits, 8))
    for _ in range(3):
        x = random_array(m, rng)
        expected = reference_pack(x, text, fill=fill)
        np.testing.assert_array_equal(pack(x, text, fill=fill), expected, err_msg=text)
        into = rng.integers(0, 256, m.size_in_bytes, dtype=np.uint8)
        assert pack(x, text, fill=fill, out=into) is into
        np.testing.assert_array_equal(into, expected, err_msg=text)
        unpack(expected, text)
        np.testing.assert_array_equal(raw_bytes(unpack(expected, text)), raw_bytes(x), err_msg=text)
        back = random_array(m, rng)
        assert unpack(expected, text, out=back) is back
        np.testing.assert_array_equal(raw_bytes(back), raw_bytes(x), err_msg=text)
    if text in WHOLE_TILES:  # programs of entries only (the others fill padding from Python: one thread)
        assert len(in_parts) >= 8, f"{text}: the programs did not run in parts ({len(in_parts)} times)"


def test_read_only_sides_and_misaligned_buffers(in_parts) -> None:
    if numba.get_num_threads() < 2:
        pytest.skip("numba has one thread here: no parts can run side by side")
    text = "f8e5m2[256,256]{0,1:T(8,128)(4,1)}"
    m = layout_map(text)
    rng = np.random.default_rng(5)
    x = random_array(m, rng)
    for _ in range(2):
        pack(x, text)
        unpack(pack(x, text), text)
    x.setflags(write=False)
    expected = reference_pack(x, text)
    np.testing.assert_array_equal(pack(x, text), expected)
    frozen = expected.copy()
    frozen.setflags(write=False)
    np.testing.assert_array_equal(raw_bytes(unpack(frozen, text)), raw_bytes(x))
    ran = len(in_parts)
    assert ran >= 2
    odd = np.zeros(expected.size + 1, np.uint8)[1:]  # one byte past where words start: no entry takes it
    assert pack(x, text, out=odd) is odd
    np.testing.assert_array_equal(odd, expected)


def test_part_count_says_one_where_parts_must_not_run(monkeypatch) -> None:
    monkeypatch.setattr(replay_parts, "_spinning", True)
    monkeypatch.setattr(replay_parts, "_started_in", os.getpid())
    assert replay_parts.part_count(1) == 1
    many = replay_parts.part_count(4)
    if many > 1:
        assert replay_parts.part_count(4) == 1  # another call holds the right to run parts
        replay_parts._busy.release()
    monkeypatch.setattr(replay_parts, "_started_in", os.getpid() + 1)  # a forked child
    assert replay_parts.part_count(4) == 1
    monkeypatch.setattr(replay_parts, "_started_in", os.getpid())
    monkeypatch.setattr(replay_parts, "_spinning", False)  # workers that sleep
    assert replay_parts.part_count(4) == 1


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork is POSIX")
def test_a_forked_child_packs_on_its_own_thread(in_parts) -> None:
    """Once the parent ran parts (GNU OpenMP started), a child made by ``fork`` must not start
    a parallel region (numba would end it); it packs on one thread, the same bytes."""
    if numba.get_num_threads() < 2:
        pytest.skip("numba has one thread here: no parts can run side by side")
    text = "s8[256,256]{1,0:T(32,128)(4,1)}"
    m = layout_map(text)
    x = random_array(m, np.random.default_rng(3))
    expected = reference_pack(x, text)
    for _ in range(3):
        pack(x, text)
    assert in_parts, "the parent did not run parts"
    replay_parts._spinning = True  # as after a spinning layer's first call
    pid = os.fork()
    if pid == 0:  # the child: report by exit status only
        try:
            ok = np.array_equal(pack(x, text), expected) and np.array_equal(pack(x, text), expected)
        except BaseException:
            ok = False
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, f"child ended with status {status}"


@pytest.mark.parametrize(
    "text",
    ["s8[256,256]{1,0:T(32,128)(4,1)}", "s4[256,512]{1,0:T(8,128)(8,1)E(4)}", "f32[128,128]{0,1:T(8,128)}"],
)
def test_from_the_pool_size_parts_replace_the_pool_and_it_takes_over_without_them(
    in_parts, monkeypatch, text
) -> None:
    """From ``PARALLEL_MIN_BYTES`` a call on every CPU replays in parts; where parts cannot run
    (here: a layer whose workers sleep), the full path's pool does it, not one thread."""
    if numba.get_num_threads() < 2:
        pytest.skip("numba has one thread here: no parts can run side by side")
    monkeypatch.setattr(copy_engine, "PARALLEL_MIN_BYTES", 1 << 12)
    pooled: list[int] = []
    real_pool = numpy_eval.run_parallel

    def pool(work, items, threads):  # type: ignore[no-untyped-def]
        pooled.append(threads)
        return real_pool(work, items, threads)

    from layout_algebra.packing import words

    for module in (numpy_eval, words):  # the full path's chunks, whole bytes and words
        monkeypatch.setattr(module, "run_parallel", pool)
    m = layout_map(text)
    rng = np.random.default_rng(11)
    x = random_array(m, rng)
    expected = reference_pack(x, text)
    for _ in range(2):  # the plans, then the programs
        unpack(pack(x, text, threads=1), text, out=np.empty_like(x), threads=1)
    in_parts.clear()
    pooled.clear()
    for _ in range(2):
        np.testing.assert_array_equal(pack(x, text), expected, err_msg=text)
        np.testing.assert_array_equal(raw_bytes(unpack(expected, text, out=np.empty_like(x))), raw_bytes(x))
    assert len(in_parts) == 4 and not pooled, (text, in_parts, pooled)
    monkeypatch.setattr(replay_parts, "part_count", lambda threads: 1)  # as with workers that sleep
    np.testing.assert_array_equal(pack(x, text), expected, err_msg=text)
    np.testing.assert_array_equal(raw_bytes(unpack(expected, text, out=np.empty_like(x))), raw_bytes(x))
    assert len(in_parts) == 4 and pooled and all(n > 1 for n in pooled), (text, pooled)


def test_threads_of_the_caller_packing_at_once_get_their_own_bytes(in_parts) -> None:
    """Several Python threads packing and unpacking at once: one at a time runs parts (numba's
    threading layers do not all take parallel calls from several threads), the others run
    whole; every result is its own array's."""
    import threading

    if numba.get_num_threads() < 2:
        pytest.skip("numba has one thread here: no parts can run side by side")
    text = "bf16[128,256]{1,0:T(8,128)(2,1)}"
    m = layout_map(text)
    rng = np.random.default_rng(21)
    arrays = [random_array(m, rng) for _ in range(4)]
    expected = [reference_pack(a, text) for a in arrays]
    for _ in range(2):
        unpack(pack(arrays[0], text), text)
    failures: list[str] = []

    def work(k: int) -> None:
        try:
            for _ in range(30):
                if not np.array_equal(pack(arrays[k], text), expected[k]):
                    failures.append(f"pack {k}")
                if not np.array_equal(raw_bytes(unpack(expected[k], text)), raw_bytes(arrays[k])):
                    failures.append(f"unpack {k}")
        except BaseException as error:  # reported below: a thread's exception would be lost
            failures.append(repr(error))

    workers = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert not failures, failures[:5]
    assert in_parts, "no call ran in parts"


WORKQUEUE_SCRIPT = """
import threading, numpy as np
from layout_algebra.packing import copy_engine, numpy_eval, replay_parts
from layout_algebra.packing.numpy_eval import pack, unpack
import numba
assert copy_engine.start_kernels()
copy_engine.SIDE_BY_SIDE_MIN_BYTES = 0
numpy_eval.default_threads = lambda: 2
text = "s8[256,256]{1,0:T(32,128)(4,1)}"
rng = np.random.default_rng(0)
arrays = [rng.integers(-128, 128, (256, 256), np.int8) for _ in range(3)]
expected = [pack(a, text, threads=1) for a in arrays]
for _ in range(2):
    unpack(pack(arrays[0], text, threads=1), text, threads=1)
pack(arrays[0], text)
assert numba.threading_layer() == "workqueue" and replay_parts._spinning is False, replay_parts._spinning
bad = []
def work(k):
    for _ in range(40):
        replay_parts._spinning = None  # try the parts every time: only the lock keeps calls apart
        if not np.array_equal(pack(arrays[k], text), expected[k]):
            bad.append(k)
        if not np.array_equal(unpack(expected[k], text), arrays[k]):
            bad.append(k)
threads = [threading.Thread(target=work, args=(k,)) for k in range(3)]
for t in threads: t.start()
for t in threads: t.join()
print("ok" if not bad else f"bad {bad}")
"""


def test_a_sleeping_layer_is_given_up_and_never_called_from_two_threads() -> None:
    """Under numba's ``workqueue`` layer (workers that sleep; a parallel call from a second thread
    at once ends the process), the first call in parts finds the layer out and the next calls
    run whole; forced to try the parts from three threads, the calls still never overlap."""
    import subprocess
    import sys

    env = {**os.environ, "NUMBA_THREADING_LAYER": "workqueue", "NUMBA_NUM_THREADS": "2"}
    done = subprocess.run(
        [sys.executable, "-c", WORKQUEUE_SCRIPT], env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), (
        done.returncode,
        done.stdout,
        done.stderr[-2000:],
    )


@pytest.mark.parametrize("threads", [2, 5])
def test_an_explicit_thread_count_runs_in_parts_too_and_bad_counts_are_still_refused(
    in_parts, threads
) -> None:
    """``threads=n`` allows up to ``n``: a shape packed before runs in at most ``n`` parts (the
    pool's full path at these sizes cost 3-10x one thread); a count that is not a positive
    integer is refused with the shape quoted even once a program is kept."""
    from layout_algebra.model.errors import InvalidArgumentError

    if numba.get_num_threads() < 2:
        pytest.skip("numba has one thread here: no parts can run side by side")
    text = "f32[128,128]{0,1:T(8,128)}"
    m = layout_map(text)
    rng = np.random.default_rng(threads)
    x = random_array(m, rng)
    for _ in range(2):
        unpack(pack(x, text, threads=threads), text, threads=threads)
    counts: list[int] = []
    real = replay_parts.part_count

    def counted(n: int) -> int:
        counts.append(n)
        return real(n)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(replay_parts, "part_count", counted)
        expected = reference_pack(x, text)
        np.testing.assert_array_equal(pack(x, text, threads=threads), expected)
        np.testing.assert_array_equal(raw_bytes(unpack(expected, text, threads=threads)), raw_bytes(x))
    assert counts == [threads, threads] and len(in_parts) >= 2, (counts, in_parts)
    for bad in (0, -1, True, 2.0, "2"):
        with pytest.raises(InvalidArgumentError, match=r"f32\[128,128\].*threads="):
            pack(x, text, threads=bad)
        with pytest.raises(InvalidArgumentError, match=r"f32\[128,128\].*threads="):
            unpack(expected, text, threads=bad)


def test_a_shape_only_ever_packed_on_every_cpu_gets_a_program_from_the_pool_size(
    in_parts, monkeypatch
) -> None:
    """A program is made by the second call whatever its thread count: a caller who never says
    ``threads=1`` is replayed (in parts) from the pool's size on too."""
    if numba.get_num_threads() < 2:
        pytest.skip("numba has one thread here: no parts can run side by side")
    monkeypatch.setattr(copy_engine, "PARALLEL_MIN_BYTES", 1 << 12)
    text = "bf16[128,256]{1,0:T(8,128)(2,1)}"
    m = layout_map(text)
    x = random_array(m, np.random.default_rng(8))
    expected = reference_pack(x, text)
    for _ in range(2):
        np.testing.assert_array_equal(pack(x, text), expected)
        np.testing.assert_array_equal(raw_bytes(unpack(expected, text)), raw_bytes(x))
    assert not in_parts  # the plans, then the programs: no parts yet
    np.testing.assert_array_equal(pack(x, text), expected)
    np.testing.assert_array_equal(raw_bytes(unpack(expected, text)), raw_bytes(x))
    assert len(in_parts) == 2
