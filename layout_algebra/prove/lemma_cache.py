"""A per-installation cache of proved general lemmas, keyed by the exact query text.

The general stage lemmas (``prove.general``) are the same in every process, so a fresh
process need not ask Z3 again: once Z3 has answered *unsat* on a query, the query's full
SMT-LIB text (declarations and assertions, ``solver.sexpr()``, and the side-condition
query's text) together with the Z3 version is stored in the user's cache directory. A
later process builds the same query, and when a stored entry has exactly that text and
that version, the answer is read instead of recomputed.

Why this is sound: unsatisfiability is a property of the formula alone, and the key *is*
the formula, byte for byte (not a name or a hash of it: the hash only names the file, and
the whole text is compared). A changed stage, encoding or side condition changes the
text and so misses the cache; a different Z3 version misses too, so an answer is never
trusted beyond the solver that gave it. Only ``proved`` is ever stored: refutations and
``unknown`` are recomputed every time. A missing, unreadable, truncated or foreign file is
ignored and the lemma is proved again. The cache is trusted as much as the installed
package itself (whoever can write the user's cache directory can also edit the code).

**Without building the query.** Building a general lemma's query (Z3 terms from the
stage's symbolic code) costs more than reading its answer. So each proved general lemma is
also recorded under a second key, :func:`stage_identity`: the general stage's kind,
structure and minima, together with a fingerprint of the code that builds its query (the
bytes of every module of ``layout_algebra.prove``, ``layout_algebra.meaning.stages`` and
``layout_algebra.model``) and the versions of Python, SymPy and Z3. The record holds the
exact query text that Z3 answered unsat. The query is a deterministic function of those
inputs, so the same inputs build the same text, which is unsat; only the package's own
stage classes qualify (a subclass could change ``forward`` elsewhere), and
:func:`verify_records` rebuilds every recorded query and compares its text, and proves
every lemma of a recorded layout again (the tests do).
``LAYOUT_ALGEBRA_LEMMA_CACHE=exact`` skips these records: every lemma's query is then built
and looked up by its text. The fingerprint is itself remembered under the files' status
(sizes, inodes, modification and status-change times: ``code_fingerprint``), so that a
process hashes the source again only after some file was written; ``docs/prover.md`` says
why an equal status means equal bytes.

**The code that runs, not the files on disk.** A fingerprint read off the files keys the
code a process *runs* only if those files are what it loaded. A module is loaded once, at
some moment after the package's first import; the fingerprint is taken later, at the first
record read or written. So the fingerprint counts only when no source file of the query
code was written after the package was first imported (status change times, which no
system call sets back, before :data:`layout_algebra.model._loaded.LOADED_AT`, taken by the
package's ``__init__`` before it imports anything else, with a second's margin:
:func:`_loaded_since`), and a module first loaded after the fingerprint was taken is
checked, when a record is next used, to have the status it had then. Otherwise the
process cannot tell which code it runs, and it neither reads nor writes records (the
exact-text entries, keyed by the query itself, still work). Why not hash the loaded
modules' code objects instead: a module's data (tables such as
``prove.general.SIZE_FIELDS``) is not code, and walking every function, class and constant
of ~25 modules costs more than the cached proof it serves. Why not fingerprint at
import: ``layout_algebra.model`` and ``stages`` are loaded long before the prover is (the
parser needs them), so no single import sees them all. ``importlib.reload`` of a query
module reads its file again: if the file was written since the first import, records are
off already; if not, the reload reads the bytes that were hashed.

**One record per layout.** Once every general stage of a layout has its lemma proved,
:func:`record_layout` writes one small record keyed by the layout's general stages (plain
text patterns, ``prove.general.Pattern``, in order) and the code fingerprint, naming each
distinct general stage and its lemma's claim. :func:`recorded_layout` reads it back only
for exactly that identity, so a later process proving a layout of the same structure reads
one file, with neither SymPy nor Z3; the instance test (``prove.general.instance_of``) is
still run by the caller on every stage. Within a process the answer is kept in memory.

Where: ``$LAYOUT_ALGEBRA_CACHE_DIR`` if set, else the user cache directory (on Linux read
off ``$XDG_CACHE_HOME`` or ``$HOME`` as ``platformdirs`` does, without importing it;
elsewhere ``platformdirs`` when installed, else ``$XDG_CACHE_HOME`` or ``~/.cache``), under
``layout_algebra/lemmas``. ``LAYOUT_ALGEBRA_LEMMA_CACHE=0`` turns the cache off.

>>> import tempfile, z3
>>> folder = tempfile.mkdtemp()
>>> x = z3.Int("x")
>>> solver = z3.Solver()
>>> solver.add(x > 1, x < 1)
>>> key = query_key(solver)
>>> key.splitlines()[2:]
['(declare-fun x () Int)', '(assert (> x 1))', '(assert (< x 1))']
>>> is_known_proved(key, folder)
False
>>> record_proved(key, folder)
>>> is_known_proved(key, folder), is_known_proved(key.replace("> x 1", "> x 0"), folder)
(True, False)
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import z3

from layout_algebra.model import _loaded
from layout_algebra.prove.result import ProofResult

if TYPE_CHECKING:
    from layout_algebra.prove.general import Pattern

__all__ = [
    "cache_directory",
    "is_known_proved",
    "query_key",
    "record_layout",
    "record_proved",
    "recorded_layout",
    "remembered",
    "stage_identity",
    "verify_records",
]

#: Environment variable naming the cache directory (overrides the user cache directory).
DIRECTORY_VARIABLE = "LAYOUT_ALGEBRA_CACHE_DIR"
#: Environment variable turning the cache off when set to 0, no, off or false.
SWITCH_VARIABLE = "LAYOUT_ALGEBRA_LEMMA_CACHE"

_HEADER = "; layout_algebra: Z3 answered unsat on this query\n"


def _switch() -> str:
    return os.environ.get(SWITCH_VARIABLE, "").strip().lower()


def cache_directory() -> Path | None:
    """The folder holding proved lemmas, or ``None`` when the cache is turned off."""
    if _switch() in {"0", "no", "off", "false"}:
        return None
    chosen = os.environ.get(DIRECTORY_VARIABLE)
    if chosen:
        return Path(chosen)
    plain = _plain_user_cache()
    if plain is not None:
        return Path(plain, "layout_algebra", "lemmas")
    try:
        import platformdirs
    except ImportError:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "layout_algebra"
    else:
        base = Path(platformdirs.user_cache_dir("layout_algebra"))
    return base / "lemmas"


def _plain_user_cache() -> str | None:
    """The user cache directory where its rule is plain, without importing ``platformdirs``.

    On Linux: ``$XDG_CACHE_HOME`` when it is an absolute path, or else, when it is unset or
    empty, ``$HOME/.cache`` for an absolute ``$HOME`` (what every ``platformdirs`` version
    answers there; the tests compare). Elsewhere, and in the odd cases (a relative path, no
    ``$HOME``), ``None``: ``platformdirs`` decides. Importing it took about 3 ms, twice
    a whole proof read from the cache.
    """
    if not sys.platform.startswith("linux"):
        return None
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    if os.path.isabs(xdg):
        return xdg
    home = os.environ.get("HOME", "")
    if xdg or not os.path.isabs(home):
        return None
    return os.path.join(home, ".cache")


def query_key(*solvers: z3.Solver | None) -> str:
    """The exact text of the queries (``None`` entries skipped) and the Z3 version."""
    texts = [s.sexpr() for s in solvers if s is not None]
    return _HEADER + f"; z3 {z3.get_full_version()}\n" + "; next query\n".join(texts)


def _entry(key: str, folder: Path) -> Path:
    return folder / (hashlib.sha256(key.encode()).hexdigest() + ".smt2")


def is_known_proved(key: str, folder: str | Path | None = None) -> bool:
    """Whether an entry with exactly the text ``key`` is stored (any read error: no)."""
    folder = cache_directory() if folder is None else Path(folder)
    if folder is None:
        return False
    try:
        known = _entry(key, folder).read_text(encoding="utf-8") == key
    except (OSError, UnicodeDecodeError):
        return False
    if known:
        _note(key)
    return known


def record_proved(key: str, folder: str | Path | None = None) -> None:
    """Store ``key`` as proved (atomically; failures to write are ignored)."""
    _note(key)
    folder = cache_directory() if folder is None else Path(folder)
    if folder is not None:
        _write(_entry(key, folder), key)


def _write(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically; failures to write are ignored."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, suffix=".part")
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                out.write(text)
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
    except OSError:
        return


# ------------------------------------------------- records by general stage (no query built)
_captured = threading.local()


def _note(key: str) -> None:
    for keys in getattr(_captured, "stack", ()):
        keys.append(key)


@contextlib.contextmanager
def _capture() -> Iterator[list[str]]:
    """The exact query keys found proved or recorded in the block (this thread's)."""
    stack = _captured.__dict__.setdefault("stack", [])
    keys: list[str] = []
    stack.append(keys)
    try:
        yield keys
    finally:
        stack.remove(keys)


#: The parts of the package whose code builds a general lemma's query.
_QUERY_CODE = ("prove", "meaning/stages", "model")


@cache
def code_fingerprint() -> str | None:
    """SHA-256 of the code that builds lemma queries and of the library versions it runs on.

    ``None`` when the source cannot be read (a zipped or source-less installation), or when
    a source file was written after the package was first imported (:func:`_loaded_code_is_on_disk`):
    then no record is read or written, since the code running could not be named.

    Reading and hashing the ~22 source files took a third of a cached proof, so the digest
    is itself remembered in the cache folder under the files' *status* (see
    ``_code_status``): as long as no file has been written, replaced, added or removed
    since, the stored digest is the digest of the same bytes.
    """
    folder = cache_directory()
    stats = _code_stats()
    if stats is None or not _loaded_code_is_on_disk(stats):
        return None
    status = _code_status(stats)
    if status is None:
        return None
    memo = None if folder is None else folder / "code-fingerprint.json"
    if memo is not None:
        try:
            known = json.loads(memo.read_text(encoding="utf-8"))
            if (
                isinstance(known, dict)
                and known.get("status") == status
                and isinstance(known.get("sha256"), str)
            ):
                return str(known["sha256"])
        except (OSError, ValueError):
            pass  # missing or unreadable: hash the files
    digest = _code_digest()
    if digest is not None and memo is not None:
        _write(memo, json.dumps({"status": status, "sha256": digest}))
    return digest


#: Status change times within this many seconds of the package's first import count as after it.
START_MARGIN_S = 1.0
#: Query-code modules not loaded when the fingerprint was taken: name -> (file, its status then).
_LATE: dict[str, tuple[str, str]] = {}


def _module_name(part: str, path: str) -> str:
    name = path[path.rfind(os.sep) + 1 : -3]  # the file name without ".py"
    return f"layout_algebra.{part}" if name == "__init__" else f"layout_algebra.{part}.{name}"


def _status_text(st: os.stat_result) -> str:
    return f"{st.st_size} {st.st_ino} {st.st_mtime_ns} {st.st_ctime_ns}"


def _file_status(path: str) -> str:
    return _status_text(os.stat(path))


#: Each query-code file as ``(part, path, its os.stat)``.
_Stats = list[tuple[str, str, os.stat_result]]


def _code_stats() -> _Stats | None:
    """The status of every query-code file (``None`` if one cannot be read)."""
    files = _query_code_files()
    if files is None:
        return None
    try:
        return [(part, path, os.stat(path)) for part, path in files]
    except OSError:
        return None


def _loaded_code_is_on_disk(stats: _Stats) -> bool:
    """Whether every query-code module this process has loaded, or will load, is the file
    of status ``stats``: no file was written since the package was first imported (status
    change time, :func:`_loaded_since`), and the modules not loaded yet are remembered with
    their status, for :func:`_fingerprint` to check once they are."""
    written = int((_loaded_since() - START_MARGIN_S) * 1e9)
    late = {}
    for part, path, st in stats:
        if st.st_ctime_ns >= written:
            return False
        name = _module_name(part, path)
        if name not in sys.modules:
            late[name] = (path, _status_text(st))
    _LATE.clear()
    _LATE.update(late)
    return True


def _fingerprint() -> str | None:
    """:func:`code_fingerprint`, while the modules loaded since it was taken are the files
    it hashed (same status); ``None`` from the first time one is not."""
    fingerprint = code_fingerprint()
    if fingerprint is None or not _LATE:
        return fingerprint
    for name in [name for name in _LATE if name in sys.modules]:
        path, status = _LATE[name]
        try:
            same = _file_status(path) == status
        except OSError:
            same = False
        if not same:
            return None  # and stays so: the entry is kept, so this is found again
        del _LATE[name]  # loaded as hashed: nothing more to check
    return fingerprint


def _loaded_since() -> float:
    """A moment (seconds since the epoch) before which no module of the package was read
    from disk in this process: its first import (:data:`layout_algebra.model._loaded.LOADED_AT`).
    Known on every platform, and later than the process's start, so a file written
    between the two does not turn records off."""
    return _loaded.LOADED_AT


def _query_code_files() -> list[tuple[str, str]] | None:
    """The ``*.py`` files of the query-building sub-packages, as ``(part, path)``.

    Plain ``os.listdir`` and strings: ``Path.glob``, and even building ``Path`` objects,
    took longer than the rest of a cached proof.
    """
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    files: list[tuple[str, str]] = []
    for part in _QUERY_CODE:
        folder = os.path.join(package, part)
        try:
            names = sorted(n for n in os.listdir(folder) if n.endswith(".py"))
        except OSError:
            return None
        if "__init__.py" not in names:
            return None
        files.extend((part, os.path.join(folder, name)) for name in names)
    return files


def _versions() -> str:
    import sympy

    return f"python {sys.version} sympy {sympy.__version__} z3 {z3.get_full_version()}"


def _code_digest() -> str | None:
    """SHA-256 of the versions and of every query-building source file's name and bytes."""
    files = _query_code_files()
    if files is None:
        return None
    digest = hashlib.sha256()
    digest.update(_versions().encode())
    try:
        for part, path in files:
            digest.update(f"\n{part}/{os.path.basename(path)}\n".encode())
            with open(path, "rb") as source:
                digest.update(source.read())
    except OSError:
        return None
    return digest.hexdigest()


def _code_status(stats: _Stats | None = None) -> str | None:
    """The versions and each source file's path, size, inode, and modification and status
    change times (nanoseconds): what changes whenever a file's bytes do.

    Writing a file sets its status change time (``st_ctime_ns``) to the present, and no
    system call sets it back (``os.utime`` sets only the access and modification times);
    replacing a file gives a new inode. So equal status means the same bytes, short of a
    change of the system clock together with an unchanged inode, size and modification
    time. (Python itself reuses compiled bytecode on the modification time and size
    alone.) ``stats``: the files' status if already read (:func:`_code_stats`).
    """
    stats = _code_stats() if stats is None else stats
    if stats is None:
        return None
    parts = [_versions(), os.path.dirname(os.path.dirname(os.path.abspath(__file__)))]
    for part, path, st in stats:
        parts.append(f"{part}/{os.path.basename(path)} {_status_text(st)}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def _size_text(value: Any) -> str:
    """A canonical text of a size: int, SymPy symbol, or a SymPy sum/product of them."""
    if isinstance(value, tuple):
        return "(" + ",".join(_size_text(v) for v in value) + ")"
    if isinstance(value, bool | int | str):
        return repr(value)
    if getattr(value, "is_Symbol", False):
        return f"${value.name}"
    if getattr(value, "is_Integer", False):
        return repr(int(value))
    func = getattr(value, "func", None)
    if func is not None and getattr(value, "args", None):
        return f"{func.__name__}[" + ",".join(_size_text(a) for a in value.args) + "]"
    raise TypeError(f"no canonical text for {value!r}")


def stage_identity(general: Any) -> str | None:
    """The record key of a general stage's lemma, or ``None`` where records do not apply.

    Only the package's own stage kinds (exactly, not subclasses) have one.
    """
    from layout_algebra.prove.general import SIZE_FIELDS

    stage = general.stage
    kind = type(stage)
    if kind not in SIZE_FIELDS or kind.__module__ != "layout_algebra.meaning.stages.stages":
        return None
    try:
        fields = ";".join(
            f"{f.name}={_size_text(getattr(stage, f.name))}" for f in dataclasses.fields(stage) if f.compare
        )
        minimum = ",".join(f"{_size_text(s)}>={low}" for s, low in general.minimum)
    except TypeError:
        return None
    return f"general stage {kind.__name__}: {fields}; minimum {minimum}"


def _record_path(identity: str, folder: Path) -> Path:
    return folder / (hashlib.sha256(identity.encode()).hexdigest() + ".lemma.json")


def _record_identity(identity: str) -> str | None:
    fingerprint = _fingerprint()
    return None if fingerprint is None else f"{identity}\ncode {fingerprint}"


def remembered(identity: str | None, prove: Callable[[], ProofResult]) -> ProofResult:
    """``prove()``, or its ``proved`` answer read from the record of ``identity``.

    On a miss, ``prove()`` runs (building its query, which may itself be found in the cache
    by its text); a ``proved`` result whose query key was seen is recorded under
    ``identity`` with that exact query text.
    """
    folder = cache_directory()
    if identity is None or folder is None or _switch() == "exact" or getattr(_captured, "rebuilding", False):
        return prove()
    start = time.perf_counter()
    full = _record_identity(identity)
    if full is None:
        return prove()
    path = _record_path(full, folder)
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
        if (
            isinstance(record, dict)
            and record.get("identity") == full
            and isinstance(record.get("query"), str)
        ):
            encoding = str(record["encoding"]) + (
                " (unsat answer read from the lemma cache: same general stage, same code and library versions)"
            )
            return ProofResult("proved", str(record["claim"]), time.perf_counter() - start, encoding)
    except (OSError, ValueError, KeyError, TypeError):
        pass  # missing or unreadable: prove it
    with _capture() as keys:
        result = prove()
    if result.proved and keys:
        encoding = result.encoding.split(" (unsat answer read from the lemma cache")[0]
        text = json.dumps({"identity": full, "claim": result.claim, "encoding": encoding, "query": keys[-1]})
        _write(path, text)
    return result


# ------------------------------------------------------ one record per layout structure
#: The end of an encoding read from the lemma cache by a layout's record (it names the
#: same facts as a stage's record: same general stages, same code and library versions).
_LAYOUT_READ = (
    " (unsat answer read from the lemma cache: same general stage, same code and library versions;"
    " one record for all of the layout's general stages)"
)


def _layout_identity(patterns: Sequence[Pattern]) -> str | None:
    fingerprint = _fingerprint()
    if fingerprint is None:
        return None
    stages = "\n".join(f"stage {p.identity}" for p in patterns)
    return f"layout of {len(patterns)} general stages\n{stages}\ncode {fingerprint}"


def _layouts_on() -> Path | None:
    """The cache folder, when layout records may be read and written."""
    if _switch() == "exact" or getattr(_captured, "rebuilding", False):
        return None
    return cache_directory()


#: Layouts proved in this process: their general stages (patterns, in order) -> the lemmas.
_LAYOUTS: dict[tuple[Pattern, ...], tuple[ProofResult, ...]] = {}


def _distinct(patterns: tuple[Pattern, ...]) -> list[str]:
    """The identities of the distinct general stages, in order of first appearance."""
    return [p.identity for p in dict.fromkeys(patterns)]


def _layout_path(full: str, folder: Path) -> Path:
    return folder / (hashlib.sha256(full.encode()).hexdigest() + ".layout.json")


def recorded_layout(patterns: Sequence[Pattern]) -> tuple[ProofResult, ...] | None:
    """The lemmas of general stages ``patterns`` (a layout's, in order), read from their
    layout's record, or ``None`` when there is no record with exactly their identity.

    The record is written by :func:`record_layout` once every lemma it names was proved
    (by Z3, or read from a stage's record) by the same code: so its answer is the
    conjunction of those proved lemmas. The caller has checked, by the current code and
    on plain integers, that each stage is an instance of its pattern. Within a process the
    answer is also kept in memory (as ``core`` keeps each general lemma).
    """
    key = tuple(patterns)
    known = _LAYOUTS.get(key)
    if known is not None or _switch() == "exact" or getattr(_captured, "rebuilding", False):
        return known
    folder = cache_directory()
    full = None if folder is None else _layout_identity(patterns)
    if folder is None or full is None:
        return None
    try:
        with open(_layout_path(full, folder), encoding="utf-8") as handle:
            record = json.load(handle)
        lemmas = record["lemmas"]
        # the whole identity, and each lemma named by its general stage, in order
        if record["identity"] != full or [lemma["stage"] for lemma in lemmas] != _distinct(key):
            return None
        if not all(
            isinstance(lemma["claim"], str) and isinstance(lemma["encoding"], str) for lemma in lemmas
        ):
            return None
    except (OSError, ValueError, KeyError, TypeError):
        return None  # missing or unreadable: the lemmas are found one by one
    known = tuple(
        ProofResult("proved", lemma["claim"], 0.0, lemma["encoding"] + _LAYOUT_READ) for lemma in lemmas
    )
    _LAYOUTS[key] = known
    return known


def record_layout(patterns: Sequence[Pattern], lemmas: Sequence[ProofResult]) -> None:
    """Record that the general stages ``patterns`` (a layout's) have the proved ``lemmas``
    (one per distinct pattern, in order of first appearance).

    Nothing is kept unless every lemma is ``proved``.
    """
    key = tuple(patterns)
    if not lemmas or len(lemmas) != len(_distinct(key)) or not all(lemma.proved for lemma in lemmas):
        return
    if _switch() != "exact" and not getattr(_captured, "rebuilding", False):
        _LAYOUTS[key] = tuple(lemmas)
    folder = _layouts_on()
    full = None if folder is None else _layout_identity(patterns)
    if folder is None or full is None:
        return
    shown = [
        {
            "stage": stage,
            "claim": lemma.claim,
            "encoding": lemma.encoding.split(" (unsat answer read from the lemma cache")[0],
        }
        for stage, lemma in zip(_distinct(key), lemmas, strict=True)
    ]
    _write(_layout_path(full, folder), json.dumps({"identity": full, "lemmas": shown}))


def verify_records(
    lemmas: Iterable[tuple[str | None, Callable[[], ProofResult]]],
    layouts: Iterable[tuple[Sequence[Pattern], Callable[[], Sequence[ProofResult]]]] = (),
) -> list[str]:
    """Rebuild the queries of recorded lemmas and compare their text with the records; prove
    the lemmas of recorded layouts again and compare them with the layouts' records.

    ``lemmas``: ``(identity, prove)`` pairs, ``prove`` building the lemma's query afresh
    (not through its record). ``layouts``: ``(patterns, prove)`` pairs, a layout's general
    stages in order and a function proving the lemma of each distinct one afresh (in order
    of first appearance). Returns the identities of the stage records that hold another
    text or whose query was not proved again, and of the layout records (the layout
    identity without the code line) that are not exactly the record this code would write:
    another identity, other stages, another claim, or a lemma not proved again. An empty
    list means every record checked is what the current code proves.
    """
    folder = cache_directory()
    wrong: list[str] = []
    if folder is None:
        return wrong
    for identity, prove in lemmas:
        full = None if identity is None else _record_identity(identity)
        if identity is None or full is None:
            continue
        try:
            record = json.loads(_record_path(full, folder).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue  # nothing recorded
        with _rebuilding(), _capture() as keys:
            result = prove()
        if not (
            result.proved and keys and record.get("identity") == full and keys[-1] == record.get("query")
        ):
            wrong.append(identity)
    for patterns, prove_all in layouts:
        full = _layout_identity(patterns)
        if full is None:
            continue
        try:
            with open(_layout_path(full, folder), encoding="utf-8") as handle:
                record = json.load(handle)
        except (OSError, ValueError):
            continue  # nothing recorded
        with _rebuilding():
            results = tuple(prove_all())
        if not _layout_record_holds(record, full, _distinct(tuple(patterns)), results):
            wrong.append(full.rsplit("\ncode ", 1)[0])
    return wrong


def _layout_record_holds(record: Any, full: str, stages: list[str], results: Sequence[ProofResult]) -> bool:
    """Whether ``record`` is the layout record of identity ``full`` naming ``stages`` with
    the claims of ``results``, each of them proved."""
    try:
        lemmas = record["lemmas"]
        return (
            record["identity"] == full
            and [lemma["stage"] for lemma in lemmas] == stages
            and len(results) == len(lemmas)
            and all(result.proved for result in results)
            and [lemma["claim"] for lemma in lemmas] == [result.claim for result in results]
        )
    except (KeyError, TypeError):
        return False


@contextlib.contextmanager
def _rebuilding() -> Iterator[None]:
    """Lemmas proved in the block are rebuilt (nested ones too), never read from records."""
    _captured.rebuilding = True
    try:
        yield
    finally:
        _captured.rebuilding = False
