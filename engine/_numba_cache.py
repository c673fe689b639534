"""numba's on-disk cache, kept in step with what each kernel depends on.

numba invalidates a cached kernel only when the file defining it changes, yet the kernels here
inline functions from other modules (a solver kernel calls the engine's lock and the evaluators'
features). So every cached kernel of the project is stamped here with the digest of its module's
*dependencies*: the module itself and every project module it imports, transitively, resolved
name by name through a package's re-exports (``from engine import Rules`` depends on
``engine/rules.py``, not on all of ``engine``), plus the modules that register code into a table
its kernels dispatch on (`REGISTRANTS`: the built-in features behind `evaluators.evaluate`, the
online policies behind `solver.online.choose`). A module's digest is taken over its syntax tree
without docstrings, comments or line numbers. So an edit recompiles exactly the kernels that can
see it: an edit to the segment search leaves the beam, the replayer and the 1-ply game cached,
and a docstring or comment edit recompiles nothing but the functions of the edited file that
moved (numba names a cached function by its first line).

One cache serves every process and every checkout of the machine (joblib and dask workers, a
fresh clone, a worktree of an older commit): the folder ``NUMBA_CACHE_DIR`` when set, else
``$XDG_CACHE_HOME/tetris-workbench/numba`` (``~/.cache/...``) when writable, else
``.numba_cache/`` in the project. Kernels sit in it by module path and stamp (``solver/layered.py``'s
in ``solver/<stamp>/``), so the versions of a module that two checkouts hold are cached side by
side, and a kernel whose dependencies changed is compiled afresh into a folder of its own; the
folder is pruned to `MAX_BYTES`, least recently written first, once an hour. Processes that miss
the same kernel at once compile it once between them (`CompileLocks`).

This must run before any ``@njit(cache=True)`` function is defined: numba picks a function's cache
when it is decorated. `engine/__init__.py` imports it first, and every package imports the engine
before defining kernels.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import hashlib
import json
import os
import shutil
import sys
import time
from pathlib import Path

from numba.core import caching

from . import _codegen

ROOT = Path(__file__).resolve().parents[1]
KERNEL_PACKAGES = ("engine", "evaluators", "solver")
#: a module whose kernels dispatch on a registry -> the modules (globs under the project) that
#: register into it without being imported by it; they count among its dependencies
REGISTRANTS = {
    "evaluators/registry.py": ("evaluators/features.py",),
    "solver/online/_base.py": ("solver/online/*.py",),
}
#: modules no kernel can inline (this one: the cache's own machinery, which the modules that stamp
#: kernels at run time import): an edit to them recompiles nothing
NOT_INLINED = ("engine/_numba_cache.py",)
#: the cache folder's size limit, in bytes; beyond it the least recently written files go
MAX_BYTES = 1 << 30
#: seconds between two size checks of the cache folder
PRUNE_EVERY = 3600.0
#: the form of the project's cache entries, part of every stamp: a kernel only other kernels call is
#: saved as its linkable module (`engine._codegen`), which a checkout from before cannot load
CODE_FORMAT = "deferred-emission-1"
#: hex digits of a module's stamp in its cache folder's name (not 16: the older layout's folders)
STAMP_DIGITS = 12
#: the memo of each source's digest and imports, in the cache folder (keyed by the source's absolute
#: path, valid for its size and mtime)
MEMO_FILE = "sources.json"


def source_digest(root: Path = ROOT) -> str:
    """A digest of every Python source under the kernel packages, subpackages included: the
    identity of this version of the project's kernels (a dask worker must report the same)."""
    h = hashlib.sha1()
    for package in KERNEL_PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            h.update(path.relative_to(root).as_posix().encode())
            h.update(path.read_bytes())
    return h.hexdigest()[:16]


# ------------------------------------------------------------------------------------------------
# One source: its digest and its imports


def _strip_docstrings(tree: ast.AST) -> ast.AST:
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                node.body = body[1:] or [ast.Pass()]
    return tree


def _scan(path: Path, root: Path) -> dict:
    """``digest``: of the syntax tree without docstrings and positions; ``imports``: each import
    as [absolute module, [[name, bound name], ...] or null for ``import module``]."""
    text = path.read_bytes()
    tree = ast.parse(text, filename=str(path))
    package = list(path.relative_to(root).parts[:-1])  # what a relative import starts from
    imports = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imports += [[alias.name, None] for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            imports.append([module, [[a.name, a.asname or a.name] for a in node.names]])
    dump = ast.dump(_strip_docstrings(tree), include_attributes=False)
    return {"digest": hashlib.sha1(dump.encode()).hexdigest(), "imports": imports}


class Sources:
    """The project's sources as the cache sees them: each one's digest and imports (memoised in
    ``memo`` by size and mtime, so a process parses only what changed), and each module's
    dependencies and stamp."""

    def __init__(self, root: Path = ROOT, memo: Path | None = None, registrants: dict = REGISTRANTS,
                 not_inlined: tuple = NOT_INLINED):
        self.root = root.resolve()
        self.registrant_globs = registrants
        self.not_inlined = {(self.root / name).resolve() for name in not_inlined}
        self.memo_path = memo
        self.memo: dict = {}
        self.dirty = False
        # per process: where a module name leads, each source's resolved imports (keyed by its
        # mark), and each module's registrants; a process sees one version of the project (the
        # stamps are memoised per process too)
        self._modules: dict[tuple, Path | None] = {}
        self._imports: dict[Path, tuple[list, set[Path]]] = {}
        self._registrants: dict[Path, set[Path]] = {}
        if memo is not None:
            try:
                self.memo = json.loads(memo.read_text())
            except (OSError, ValueError):
                self.memo = {}

    def info(self, path: Path) -> dict:
        key = path.as_posix()  # absolute: the checkouts sharing the machine's cache keep one entry each
        st = path.stat()
        mark = [st.st_size, st.st_mtime_ns]
        entry = self.memo.get(key)
        if not (isinstance(entry, dict) and entry.get("mark") == mark):
            entry = {"mark": mark, **_scan(path, self.root)}
            self.memo[key] = entry
            self.dirty = True
        return entry

    def save(self) -> None:
        """Write the memo back (atomically; another process's copy may win, which is harmless),
        without the entries of files that are gone (a deleted clone's)."""
        if self.memo_path is None or not self.dirty:
            return
        self.memo = {k: v for k, v in self.memo.items() if os.path.isabs(k) and os.path.isfile(k)}
        tmp = self.memo_path.with_name(f".{self.memo_path.name}.{os.getpid()}.tmp")
        try:
            tmp.write_text(json.dumps(self.memo, sort_keys=True))
            os.replace(tmp, self.memo_path)
            self.dirty = False
        except OSError:
            tmp.unlink(missing_ok=True)

    def module(self, name: str, near: Path | None = None) -> Path | None:
        """The source of the project module ``name`` (a package: its ``__init__.py``), looked up
        from the project's root, then beside ``near`` (a test importing a sibling); None for a
        module outside the project."""
        key = (name, near.parent if near is not None else None)
        if key not in self._modules:
            self._modules[key] = self._find_module(name, key[1])
        return self._modules[key]

    def _find_module(self, name: str, beside: Path | None) -> Path | None:
        parts = name.split(".") if name else []
        for base in (self.root, beside):
            if base is None or not parts:
                continue
            stem = base.joinpath(*parts)
            for candidate in (stem / "__init__.py", stem.with_suffix(".py")):
                if candidate.is_file():
                    return candidate
        return None

    def origin(self, path: Path, name: str, seen: frozenset = frozenset()) -> Path:
        """The source that defines ``name`` as seen from the module ``path``: followed through the
        module's own ``from ... import`` of that name (a package's re-export), else ``path``."""
        if (path, name) in seen:
            return path
        for module, names in self.info(path)["imports"]:
            if names is None:
                continue
            for original, bound in names:
                if bound == name and original != "*":
                    sub = self.module(f"{module}.{original}", path)
                    if sub is not None:
                        return sub
                    source = self.module(module, path)
                    if source is None:
                        return path
                    return self.origin(source, original, seen | {(path, name)})
        return path

    def imports(self, path: Path) -> set[Path]:
        """The project sources ``path`` imports, each name resolved to the module defining it."""
        mark = self.info(path)["mark"]
        known = self._imports.get(path)
        if known is None or known[0] != mark:
            known = self._imports[path] = (mark, {q.resolve() for q in self._resolve_imports(path)})
        return known[1]

    def _resolve_imports(self, path: Path) -> set[Path]:
        found = set()
        for module, names in self.info(path)["imports"]:
            if names is None:
                source = self.module(module, path)
                if source is not None:
                    found.add(source)
                continue
            for original, _ in names:
                sub = self.module(f"{module}.{original}", path) if original != "*" else None
                if sub is not None:
                    found.add(sub)
                    continue
                source = self.module(module, path)
                if source is not None:
                    found.add(source if original == "*" else self.origin(source, original))
        return found

    def registrants(self, path: Path) -> set[Path]:
        if path not in self._registrants:
            rel = path.relative_to(self.root).as_posix()
            self._registrants[path] = {p.resolve() for pattern in self.registrant_globs.get(rel, ())
                                       for p in self.root.glob(pattern)}
        return self._registrants[path]

    def dependencies(self, path: Path) -> set[Path]:
        """``path`` and every project source its kernels can inline (see the module docstring)."""
        done: set[Path] = set()
        todo = [path.resolve()]
        while todo:
            p = todo.pop()
            if p in done:
                continue
            done.add(p)
            todo += [q for q in self.imports(p) | self.registrants(p) if q not in done and q not in self.not_inlined]
        return done

    @functools.lru_cache(maxsize=None)
    def stamp(self, path: Path) -> str:
        """The digest of ``path``'s dependencies (what a cached kernel of ``path`` is valid for)."""
        h = hashlib.sha1(CODE_FORMAT.encode())
        for p in sorted(self.dependencies(path)):
            h.update(p.relative_to(self.root).as_posix().encode())
            h.update(self.info(p)["digest"].encode())
        self.save()
        return h.hexdigest()


# ------------------------------------------------------------------------------------------------
# numba's side


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


# ------------------------------------------------------------------------------------------------
# One compile per machine: a lock per kernel and signature across processes


class CompileLocks:
    """Processes that need the same kernel at the same signature compile it once between them.

    numba looks a signature up in the on-disk cache, compiles it on a miss and saves it. Two
    processes that miss at once (pytest's workers, a tuning run's, a segment search's) both
    compile, and on a cold start that doubled much of the compile work. Here a miss takes a lock
    file of its own for that function and signature (``fcntl.flock``, in ``locks/`` of the cache
    folder) and looks again once it holds it: a process that waited finds what the holder saved
    and loads it; the holder compiles, and releases the lock when the compile ends, saved or not
    (a compile that raises included). The lock of a process that dies goes with it (the kernel
    drops an ``flock`` with its last descriptor). Locks are taken only in the order compiles nest
    (a kernel before the callees its compile meets), which the call graph, having no cycles,
    keeps free of deadlock; one a process already holds is not taken again.

    ``wait`` bounds how long a process waits for another's compile before compiling itself.
    """

    #: seconds a process waits for another's compile of the same signature before compiling itself
    wait = 900.0
    #: seconds between two tries of a held lock
    poll = 0.02

    def __init__(self, folder: Path):
        self.folder = folder
        self.held: dict[str, int] = {}  # lock name -> descriptor, in this process

    def name(self, cache, sig) -> str:
        text = f"{cache._cache_path}\0{cache._cache_file._index_name}\0{sig}"
        return hashlib.sha1(text.encode()).hexdigest()[:24]

    def acquire(self, name: str) -> bool:
        """Take the lock ``name`` (waiting up to `wait`); False when it could not be had."""
        import fcntl

        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            # (a link planted as the lock is not followed: O_NOFOLLOW fails, and the compile goes on unlocked)
            fd = os.open(self.folder / f"{name}.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        except OSError:
            return False
        deadline = time.monotonic() + self.wait
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    os.close(fd)
                    return False
                time.sleep(self.poll)
            except OSError:
                os.close(fd)
                return False
        with contextlib.suppress(OSError):
            os.utime(fd)  # in use: pruning leaves a recent lock file alone
        self.held[name] = fd
        return True

    def release(self, name: str) -> None:
        fd = self.held.pop(name, None)
        if fd is not None:
            os.close(fd)  # drops the flock

    def install(self) -> None:
        """Wrap numba's cache lookup, its save and the dispatcher's compile (once per process)."""
        from numba.core import dispatcher

        if getattr(caching.Cache.load_overload, "_compile_locks", False):
            return
        load, save, compile_ = caching.Cache.load_overload, caching.Cache.save_overload, dispatcher.Dispatcher.compile
        locks = self

        def load_overload(cache, sig, target_context):
            found = load(cache, sig, target_context)
            if found is not None or not cache._enabled:
                return found
            name = locks.name(cache, sig)
            if name in locks.held or not locks.acquire(name):
                return found
            found = load(cache, sig, target_context)  # saved by the process the lock waited for?
            if found is not None:
                locks.release(name)
            return found

        def save_overload(cache, sig, data):
            try:
                save(cache, sig, data)
            finally:
                locks.release(locks.name(cache, sig))

        def compile(disp, sig):
            try:
                return compile_(disp, sig)
            finally:  # a compile that raised, or a result numba would not save: the lock goes too
                cache = disp._cache
                if locks.held and isinstance(cache, caching.Cache):
                    locks.release(locks.name(cache, sig))

        load_overload._compile_locks = True
        caching.Cache.load_overload, caching.Cache.save_overload = load_overload, save_overload
        dispatcher.Dispatcher.compile = compile


CACHE_DIR: str | None = None
SOURCES: Sources
configure()
skip_blas_probe()
if CACHE_DIR is not None:
    CompileLocks(Path(CACHE_DIR) / "locks").install()
_codegen.install(lambda cache: isinstance(cache._impl.locator, ProjectLocator))
