"""Each cached kernel's stamp: the digest of the project sources it can inline.

numba invalidates a cached kernel only when the file defining it changes, yet the kernels here
inline functions from other modules (a solver kernel calls the engine's lock and the evaluators'
features). So every cached kernel of the project is stamped with the digest of its module's
*dependencies*: the module itself and every project module it imports, transitively, resolved
name by name through a package's re-exports (``from engine import Rules`` depends on
``engine/rules.py``, not on all of ``engine``), plus the modules that register code into a table
its kernels dispatch on (`REGISTRANTS`: the built-in features behind `evaluators.evaluate`, the
online policies behind `solver.online.choose`). A module's digest is taken over its syntax tree
without docstrings, comments or line numbers. So an edit recompiles exactly the kernels that can
see it, and a docstring or comment edit nothing but the functions of the edited file that moved
(numba names a cached function by its first line). `engine._jit.cache` stamps kernels so.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import json
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
KERNEL_PACKAGES = ("engine", "evaluators", "solver")
#: a module whose kernels dispatch on a registry -> the modules (globs under the project) that
#: register into it without being imported by it; they count among its dependencies
REGISTRANTS = {
    "evaluators/registry.py": ("evaluators/features/*.py",),
    "solver/online/_base.py": ("solver/online/*.py",),
}
#: modules no kernel can inline (the cache's own machinery, which the modules that stamp kernels at
#: run time import, and the code library it installs): an edit to them recompiles nothing
NOT_INLINED = ("engine/_jit/stamps.py", "engine/_jit/cache.py", "engine/_jit/locks.py", "engine/_jit/codegen.py")
#: the form of the project's cache entries, part of every stamp: a kernel only other kernels call is
#: saved as its linkable module (`engine._jit.codegen`), which a checkout from before cannot load
CODE_FORMAT = "deferred-emission-1"


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
