"""Where a result came from: the project's commit (and whether the working tree had changes), the
versions of the libraries that decide results, and the machine. Every solve's summary.json and every
tuning run's provenance.json carries it.
"""

from __future__ import annotations

import functools
import os
import platform
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: the libraries whose versions are recorded (those that can change a result)
LIBRARIES = ("numpy", "numba", "llvmlite", "deap", "pyswarms", "joblib", "dask")
#: seconds git may take to answer (a network filesystem, a huge tree)
GIT_SECONDS = 10


def _git(*args: str) -> str | None:
    try:
        out = subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, timeout=GIT_SECONDS)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout if out.returncode == 0 else None


def _version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


@functools.lru_cache(maxsize=1)
def _static() -> dict:
    commit = _git("rev-parse", "HEAD")
    status = _git("status", "--porcelain", "--untracked-files=no") if commit else None
    return {
        "commit": commit.strip() if commit else None,  # None: not a git checkout (an installed copy)
        "dirty": None if status is None else bool(status.strip()),
        "workbench": _version("tetris-workbench"),
        "python": platform.python_version(),
        "libraries": {name: _version(name) for name in LIBRARIES},
        "cpus": os.cpu_count(),
        "machine": platform.machine(),
        "system": platform.platform(),
    }


def project_path(path: str | Path) -> str:
    """A file of the project by its path from the checkout (``configs/ga.yaml``), whichever
    folder names it; a file elsewhere as given. What a result records of a config it read."""
    try:
        return Path(path).resolve().relative_to(ROOT).as_posix()
    except (ValueError, OSError):
        return str(path)


def _as_typed(arg: str, cwd: Path) -> str:
    """``arg`` with an absolute path under the project made relative to ``cwd`` (also after
    ``key=`` or ``--option=``); anything else as it was typed."""
    head, sep, value = arg.rpartition("=") if "=" in arg else ("", "", arg)
    if not os.path.isabs(value):
        return arg
    path = Path(value)
    try:
        path.resolve().relative_to(ROOT)
    except (ValueError, OSError):
        return arg
    return head + sep + os.path.relpath(path, cwd)


def command(argv: list[str] | None = None, main_spec: str | None = None) -> list[str]:
    """The command line as a user types it, one word an item: ``python -m experiments.solve
    configs/solve/segment.yaml --out solves/s`` (under ``python -m`` the interpreter puts the module's
    absolute file path in ``sys.argv[0]``; the module's name is what was typed), a script as
    ``python <its path>``, and every absolute path under the project relative to the current
    directory, so that a result names no folder of the machine that made it. ``argv`` and
    ``main_spec`` (the ``__main__`` module's import name) default to this process's."""
    if argv is None:
        argv = sys.argv
        main = sys.modules.get("__main__")
        spec = getattr(main, "__spec__", None)
        main_spec = getattr(spec, "name", None)
    cwd = Path.cwd()
    if main_spec:
        module = main_spec.removesuffix(".__main__")
        head = ["python", "-m", module]
    elif argv and argv[0] not in ("", "-c"):
        head = ["python", _as_typed(argv[0], cwd)]
    else:
        head = ["python", *argv[:1]]
    return head + [_as_typed(str(a), cwd) for a in argv[1:]]


def provenance() -> dict:
    """The record of where and with what this process works (plain data, JSON-ready): the commit,
    whether tracked files differed from it (``dirty``), the versions, the CPU count, the command
    line as typed (`command`) and the time."""
    return {**_static(), "command": command(), "time": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
