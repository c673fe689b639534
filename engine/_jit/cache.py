"""numba's on-disk cache, kept in step with what each kernel depends on (`engine._jit.stamps`).

One cache serves every process and every checkout of the machine (joblib and dask workers, a
fresh clone, a worktree of an older commit): the folder ``NUMBA_CACHE_DIR`` when set, else
``$XDG_CACHE_HOME/tetris-workbench/numba`` (``~/.cache/...``) when writable, else
``.numba_cache/`` in the project. Kernels sit in it by module path and stamp (``solver/layered.py``'s
in ``solver/<stamp>/``), so the versions of a module that two checkouts hold are cached side by
side, and a kernel whose dependencies changed is compiled afresh into a folder of its own; the
folder is pruned to `MAX_BYTES`, least recently written first, once an hour. Processes that miss
the same kernel at once compile it once between them (`engine._jit.locks.CompileLocks`).

This must run before any ``@njit(cache=True)`` function is defined: numba picks a function's cache
when it is decorated. `engine/__init__.py` imports `engine._jit` (which imports this) first, and
every package imports the engine before defining kernels.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path

from numba.core import caching

from . import codegen
from .locks import CompileLocks
from .stamps import ROOT, Sources

#: the cache folder's size limit, in bytes; beyond it the least recently written files go
MAX_BYTES = 1 << 30
#: seconds between two size checks of the cache folder
PRUNE_EVERY = 3600.0
#: hex digits of a module's stamp in its cache folder's name (not 16: the older layout's folders)
STAMP_DIGITS = 12
#: the memo of each source's digest and imports, in the cache folder (keyed by the source's absolute
#: path, valid for its size and mtime)
MEMO_FILE = "sources.json"


def _cache_base() -> Path | None:
    """The cache folder (module docstring), created; None when none is writable."""
    user = os.environ.get("NUMBA_CACHE_DIR")
    home = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    bases = [Path(user)] if user else [home / "tetris-workbench" / "numba", ROOT / ".numba_cache"]
    for base in bases:
        try:
            base.mkdir(parents=True, exist_ok=True)
            probe = base / f".probe-{os.getpid()}"
            probe.touch()
            probe.unlink()
            return base
        except OSError:
            continue
    return None


_Base = getattr(caching, "UserProvidedCacheLocator", None) or caching._UserProvidedCacheLocator
_Impl = getattr(caching, "CacheImpl", None) or caching._CacheImpl


class ProjectLocator(_Base):
    """numba's cache locator for functions defined in the project's sources: stamped with the
    digest of their module's dependencies, cached in `CACHE_DIR` under the module's path and that
    stamp (one folder per version of what the module's kernels inline)."""

    def __init__(self, py_func, py_file):
        self._py_file = py_file
        self._lineno = py_func.__code__.co_firstlineno
        self._source = Path(py_file).resolve()
        rel = self._source.relative_to(ROOT)
        self._cache_path = os.path.join(CACHE_DIR, *rel.parent.parts, self.get_source_stamp()[:STAMP_DIGITS])

    def get_cache_path(self):
        return self._cache_path

    def get_source_stamp(self):
        return SOURCES.stamp(self._source)

    @classmethod
    def from_function(cls, py_func, py_file):
        if CACHE_DIR is None or not py_file or not os.path.isfile(py_file):
            return None
        try:
            Path(py_file).resolve().relative_to(ROOT)
        except ValueError:
            return None  # not the project's: numba's own locators
        self = cls(py_func, py_file)
        try:
            self.ensure_cache_path()
        except OSError:
            return None
        return self


def prune(base: Path, limit: int = MAX_BYTES, every: float = PRUNE_EVERY) -> None:
    """Remove the folders of the older layout (one per digest of all sources) from ``base``, and
    keep it under ``limit`` bytes, least recently written files first, dropping the compiles' lock
    files untouched for ``every`` seconds (checked at most once per ``every`` seconds: a marker
    file's time)."""
    for old in base.iterdir():  # the layout before this one: a folder per digest of all sources
        if old.is_dir() and len(old.name) == 16 and all(c in "0123456789abcdef" for c in old.name):
            shutil.rmtree(old, ignore_errors=True)
    marker = base / ".pruned"
    try:
        if marker.exists() and time.time() - marker.stat().st_mtime < every:
            return
        marker.touch()
    except OSError:
        return
    files, folders = [], []
    for p in base.rglob("*"):  # one walk: the files to weigh, the folders that may be left empty
        try:
            if p.is_file():
                st = p.stat()
                files.append((st.st_mtime, st.st_size, p))
            elif p.is_dir():
                folders.append(p)
        except OSError:
            continue
    locks = base / "locks"  # a compile's lock file (`CompileLocks`), untouched a while: none in use
    now = time.time()
    kept = []
    for entry in files:
        if entry[2].parent == locks and now - entry[0] > every:
            entry[2].unlink(missing_ok=True)
        else:
            kept.append(entry)
    files = kept
    total = sum(size for _, size, _ in files)
    for _, size, p in sorted(files):
        if total <= limit:
            break
        p.unlink(missing_ok=True)
        total -= size
    # the stamp folders left empty a while (a version no kernel was compiled for, or all pruned)
    for folder in sorted(folders, key=lambda p: len(p.parts), reverse=True):  # the deepest first
        try:
            if now - folder.stat().st_mtime > every:
                folder.rmdir()
        except OSError:
            continue


def configure() -> str | None:
    """Install the project's locator in front of numba's and return the cache folder (None when
    no folder is writable: numba then keeps to its own locators)."""
    global CACHE_DIR, SOURCES
    base = _cache_base()
    CACHE_DIR = str(base) if base is not None else None
    SOURCES = Sources(ROOT, base / MEMO_FILE if base is not None else None)
    if ProjectLocator not in _Impl._locator_classes:
        _Impl._locator_classes.insert(0, ProjectLocator)
    if base is not None:
        prune(base)
    return CACHE_DIR


def skip_blas_probe() -> None:
    """Let numba find no BLAS without importing SciPy.

    The first time numba loads its array functions it probes for BLAS by importing
    ``scipy.linalg`` (a quarter of a second, in every process, cached kernels or not). No kernel of
    the workbench uses BLAS (no ``np.dot``, no ``np.linalg``: a kernel that did would fail to
    compile, saying so), so the probe is answered "no BLAS" at once; SciPy itself is left
    importable for the libraries that use it (pyswarms)."""
    if "scipy.linalg" in sys.modules or "numba.np.arraymath" in sys.modules:
        return
    sys.modules["scipy.linalg"] = None  # an import of it now raises ImportError
    try:
        import numba.np.arraymath  # noqa: F401  (runs the probe)
    finally:
        del sys.modules["scipy.linalg"]


CACHE_DIR: str | None = None
SOURCES: Sources
configure()
skip_blas_probe()
if CACHE_DIR is not None:
    CompileLocks(Path(CACHE_DIR) / "locks").install()
codegen.install(lambda cache: isinstance(cache._impl.locator, ProjectLocator))
