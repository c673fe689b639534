"""Files written whole or not at all: `write_bytes` and the writers built on it.

The data go to a temporary file in the target's folder, which is flushed and fsynced, then renamed
over the target (`os.replace`), so a reader (or a run killed at any moment) finds the old file or
the new one, never a part. The temporary file is removed on any failure. It is created with mode
``0o666`` less the user's umask, the mode an ordinary ``open(path, "w")`` gives (not
`tempfile.mkstemp`'s private ``0o600``). Missing folders are made. The fsyncs make a write durable
as well as atomic; `DURABLE` turns them off (read here at every write: set it on this module).
YAML is written by `engine.files.yaml_files.write_yaml`.
"""

from __future__ import annotations

import json
import os
import re
import secrets
from pathlib import Path
from typing import Any


#: Whether writes are fsynced: a file's data before its rename, a set's folder after its renames.
#: Atomicity does not depend on it: with it off, a killed process still leaves the old file or the
#: new one, and only a power cut could lose a write that seemed done. tests/conftest.py turns it off
#: for the test suite's scratch files (each fsync costs a few milliseconds on a disk).
DURABLE = True

#: names tried for a temporary file before giving up (each is random: a clash is already unlikely)
TEMPORARY_NAME_ATTEMPTS = 100
#: mode of a new file before the umask is taken off, as `open` creates files
NEW_FILE_MODE = 0o666


def _new_temporary(path: Path) -> tuple[int, Path]:
    """(descriptor open for writing, path) of a new file beside ``path``, mode `NEW_FILE_MODE` less
    the umask (the kernel applies the umask to ``os.open``'s mode), named
    ``.<name>.<pid>.<12 hex digits>.tmp`` (`remove_stale_temporaries` knows its writer by the pid)."""
    for _ in range(TEMPORARY_NAME_ATTEMPTS):
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(6)}.tmp")
        try:
            # (O_EXCL: never a file or a link already there; O_NOFOLLOW says so again where O_EXCL is weak)
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC | getattr(os, "O_BINARY", 0)
            return os.open(tmp, flags, NEW_FILE_MODE), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"{path.parent}: no free temporary name for {path.name}")


def write_bytes(path: str | Path, data: bytes) -> None:
    """Replace (or create) ``path`` with ``data``, atomically and durably (see the module docstring)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = _new_temporary(path)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            if DURABLE:
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_text(path: str | Path, text: str) -> None:
    """`write_bytes` of ``text`` in UTF-8 (newlines as given)."""
    write_bytes(path, text.encode("utf-8"))


def write_json(path: str | Path, data: Any) -> None:
    """``data`` as indented JSON and a final newline."""
    write_text(path, json.dumps(data, indent=1) + "\n")


#: a temporary file `_new_temporary` makes: target name, writer's pid
TEMPORARY_NAME = re.compile(r"^\.(?P<name>.+)\.(?P<pid>[0-9]+)\.[0-9a-f]{12}\.tmp$")


def remove_stale_temporaries(folder: str | Path, name: str | None = None) -> list[Path]:
    """Remove the temporary files that writers killed before their rename (``kill -9``, a power cut)
    left in ``folder`` (only those of the target ``name``, when given): the ones whose process is
    gone. Returns the files removed."""
    removed = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for entry in entries:
        m = TEMPORARY_NAME.match(entry.name)
        if m is None or (name is not None and m["name"] != name) or _alive(int(m["pid"])):
            continue
        try:
            os.unlink(entry.path)
            removed.append(Path(entry.path))
        except OSError:
            continue
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _fsync_dir(path: Path) -> None:
    if not DURABLE:
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
