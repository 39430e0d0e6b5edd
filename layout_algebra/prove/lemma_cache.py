"""A per-installation cache of proved lemmas, keyed by the exact query text and the solver.

The general stage lemmas (``prove.general``) are the same in every process, so a fresh
process need not wait for Z3 to prove them again: once Z3 has answered *unsat* on a query,
the query's full SMT-LIB text (declarations and assertions, ``solver.sexpr()``, and the
side-condition query's text) together with the Z3 version is stored in the user's cache
directory. A later process builds the same query, and only when a stored entry has
exactly that text and that version is the answer read instead of recomputed.

Why this is sound: unsatisfiability is a property of the formula alone, and the key *is*
the formula, byte for byte (not a name or a hash of it: the hash only names the file, and
the whole text is compared). A changed stage, encoding, internal name or side condition
changes the text and so misses the cache; a different Z3 version misses too, so an answer
is never trusted beyond the solver that gave it. Only ``proved`` is ever stored:
refutations and ``unknown`` are recomputed every time. A missing, unreadable, truncated or
foreign file is ignored and the lemma is proved again. Nothing else is read from disk: no
record keyed by a fingerprint of the source, a stage's name or a file's time stands in for
a query (``docs/soundness.md``), so every lemma's query is built in every process, and
only the solver's work is saved (the cold-start cost is in ``benchmarks/README.md``).

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

import hashlib
import os
import sys
import tempfile
from pathlib import Path

import z3

__all__ = [
    "cache_directory",
    "is_known_proved",
    "query_key",
    "record_proved",
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
    return known


def record_proved(key: str, folder: str | Path | None = None) -> None:
    """Store ``key`` as proved (atomically; failures to write are ignored)."""
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
