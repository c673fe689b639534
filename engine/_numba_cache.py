"""Keep numba's on-disk cache in step with the sources.

numba invalidates a cached kernel only when the file defining it changes, yet the kernels here
inline functions from other modules (a solver kernel calls the engine's lock and the evaluators'
features). So every kernel is cached in a directory named by a digest of all kernel sources
(`engine`, `evaluators`, `solver`, subpackages included): editing any of them starts a fresh
cache, and every process of the same sources (joblib or dask workers included) shares one. The
directory is ``.numba_cache/`` in the project when writable, else
``~/.cache/tetris-workbench/numba``; the three most recently used digests are kept. An explicit
``NUMBA_CACHE_DIR`` wins and is left alone.

This must run before any ``@njit(cache=True)`` function is defined: numba picks the cache
directory at decoration time. `engine/__init__.py` runs it first, and every package imports the
engine before defining kernels.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
from pathlib import Path

import numba

ROOT = Path(__file__).resolve().parents[1]
KERNEL_PACKAGES = ("engine", "evaluators", "solver")
KEEP = 3


def source_digest(root: Path = ROOT) -> str:
    """A digest of every Python source under the kernel packages, subpackages included (a kernel
    in ``solver/online/`` inlines kernels from ``solver/``, and the reverse)."""
    h = hashlib.sha1()
    for package in KERNEL_PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            h.update(path.relative_to(root).as_posix().encode())
            h.update(path.read_bytes())
    return h.hexdigest()[:16]


def _writable(base: Path) -> bool:
    try:
        base.mkdir(parents=True, exist_ok=True)
        probe = base / f".probe-{os.getpid()}"
        probe.touch()
        probe.unlink()
        return True
    except OSError:
        return False


def configure() -> str | None:
    """Point numba's cache at the directory for these sources; returns it (None when the user set
    NUMBA_CACHE_DIR or no directory is writable, leaving numba's default)."""
    if os.environ.get("NUMBA_CACHE_DIR"):
        return None
    for base in (ROOT / ".numba_cache", Path.home() / ".cache" / "tetris-workbench" / "numba"):
        if _writable(base):
            break
    else:
        return None
    target = base / source_digest()
    target.mkdir(exist_ok=True)
    os.utime(target)
    numba.config.CACHE_DIR = str(target)
    old = sorted((p for p in base.iterdir() if p.is_dir()), key=lambda p: p.stat().st_mtime, reverse=True)
    for stale in old[KEEP:]:
        shutil.rmtree(stale, ignore_errors=True)
    return str(target)


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


CACHE_DIR = configure()
skip_blas_probe()
