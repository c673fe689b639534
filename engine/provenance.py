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


def provenance() -> dict:
    """The record of where and with what this process works (plain data, JSON-ready): the commit,
    whether tracked files differed from it (``dirty``), the versions, the CPU count, the command
    line and the time."""
    return {**_static(), "command": sys.argv, "time": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
