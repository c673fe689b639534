"""A folder written as one set (`OutputSet`): its files staged beside it and swapped in whole, so
a reader finds the old set or the new one; `recover_output` finishes or undoes a swap a killed
process left; `make_room`, `not_a_folder` and `cannot_write` say, in one line, why an output
folder cannot be written.
"""

from __future__ import annotations

import glob
import os
import shutil
from pathlib import Path
from typing import Any

from .writing import _alive, _fsync_dir, write_json, write_text


#: free space a new output set needs at least (a 10,000-piece record, its two console lines and a
#: summary take under 16 MB)
OUTPUT_MIN_FREE = 32 * 2**20


class OutputError(OSError):
    """An output folder that cannot be written; the message is one line naming it."""


def not_a_folder(path: Path) -> Path | None:
    """The nearest existing ancestor of ``path`` (``path`` excluded) when it is not a folder, so
    nothing can be made under it; else None."""
    up = next((p for p in path.parents if p.exists()), None)
    return up if up is not None and not up.is_dir() else None


def make_room(folder: Path, label: str, min_free: int = OUTPUT_MIN_FREE) -> None:
    """Make ``folder`` (and its parents) and check its disk has ``min_free`` bytes free;
    `OutputError` naming ``label`` otherwise (OSError propagates from making it). Refused, it
    leaves no folder it made behind."""
    made = [p for p in (folder, *folder.parents) if not p.exists()]
    try:
        folder.mkdir(parents=True, exist_ok=True)
        free = shutil.disk_usage(folder).free
        if free < min_free:
            raise OutputError(f"{label}: only {free / 2**20:.1f} MB free on its disk, {min_free / 2**20:.0f} MB needed")
    except OSError:
        for p in made:  # deepest first; a folder something else has filled since stays
            try:
                p.rmdir()
            except OSError:
                break
        raise


def cannot_write(label: str, e: OSError) -> OutputError:
    """The one-line `OutputError` for an OSError met writing under ``label``."""
    return OutputError(f"{label}: cannot write there: {e.strerror or e}")


#: a test hook: this environment variable, a number of seconds, holds every commit of an output
#: set that long at its midpoint (the new set complete, the old one still in place; with
#: `NO_EXCHANGE_ENV`, between the two renames), so that a signal or a kill lands there on purpose
COMMIT_PAUSE_ENV = "WORKBENCH_TEST_COMMIT_PAUSE"
#: a test hook: set, a commit moves the old set aside and the new one in by two renames, as on a
#: system that cannot exchange two names in one step
NO_EXCHANGE_ENV = "WORKBENCH_TEST_NO_EXCHANGE"
#: Linux's ``renameat2`` flag that swaps two names, and its "this directory" file descriptor
RENAME_EXCHANGE, AT_FDCWD = 2, -100


def _exchange(a: Path, b: Path) -> bool:
    """Swap the names ``a`` and ``b`` in one atomic step (Linux's ``renameat2`` with
    ``RENAME_EXCHANGE``); False, nothing done, where the system or the file system cannot (OSError
    for any other failure)."""
    import ctypes
    import errno
    import sys

    if os.environ.get(NO_EXCHANGE_ENV) or not sys.platform.startswith("linux"):
        return False
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):  # a C library without it (glibc before 2.28)
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    if renameat2(AT_FDCWD, os.fsencode(a), AT_FDCWD, os.fsencode(b), RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EXDEV):
        return False
    raise OSError(err, os.strerror(err), str(b))


def _pause_for_tests() -> None:
    seconds = os.environ.get(COMMIT_PAUSE_ENV)
    if seconds:
        import time

        time.sleep(float(seconds))


def recover_output(folder: str | Path) -> bool:
    """Put back the set of output folder ``folder`` when a process killed in the middle of its
    commit left it missing: the previous set, moved aside to ``.<name>.<pid>.old`` by a process that
    is gone, is renamed back (only where a commit cannot exchange the two sets in one step, or after
    an older version of this program). Returns whether a set was put back. Readers of output sets
    (`read_bytes`, and so replay, view and results) call it when a file is not found."""
    folder = Path(folder)
    if folder.exists() or not folder.name:
        return False
    for p in sorted(folder.parent.glob(f".{glob.escape(folder.name)}.*.old")):
        pid = p.name[len(folder.name) + 2:-len(".old")]
        if pid.isdigit() and not _alive(int(pid)):
            try:
                os.replace(p, folder)
            except OSError:
                return False
            return True
    return False


class OutputSet:
    """The files of one output folder, put in place together: a reader (or a process killed at any
    moment) finds the folder's previous set or the new one, never a mix, and never no folder.

    Made before the work whose results it will hold, so a folder that cannot be written is found
    at once (`OutputError`): the folder is not a folder, holds files that are not ``owned`` (a
    set only ever replaces a set of the same kind), its parent cannot be written, or the disk
    has less than ``min_free`` bytes free. The files are written (`write_text`, `write_json`) into
    a hidden staging folder beside the target, ``.<name>.<pid>.partial``; `commit` swaps it with
    the target in one atomic step (Linux's ``renameat2(RENAME_EXCHANGE)``: the staging name then
    holds the previous set, which is removed), so the target is there at every instant, `discard`
    removes it. Where the two cannot be swapped (another system, a file system without it), the
    previous set is moved aside to ``.<name>.<pid>.old`` and the new one renamed in: a process
    killed between those two renames leaves the previous set there, which the next reader
    (`recover_output`) or the next `OutputSet` of that target puts back. With ``exclusive``, a
    target that exists is an error (a default folder name must never reuse another run's). The
    staging folders of processes that are gone are removed."""

    def __init__(self, target: str | Path, owned: frozenset[str], exclusive: bool = False,
                 min_free: int = OUTPUT_MIN_FREE):
        self.target = Path(target)
        self.owned = owned
        self.exclusive = exclusive
        try:
            self._check()
            make_room(self.target.parent, str(self.target), min_free)
            self._recover()
            self.staging = self._aside("partial")
            self.staging.mkdir()
        except OutputError:
            raise
        except OSError as e:
            raise cannot_write(str(self.target), e) from None

    def _aside(self, what: str, pid: int | None = None) -> Path:
        return self.target.with_name(f".{self.target.name}.{pid or os.getpid()}.{what}")

    def _check(self) -> None:
        t = self.target
        if t.exists() and not t.is_dir():
            raise OutputError(f"{t}: not a folder")
        up = not_a_folder(t)
        if up is not None:
            raise OutputError(f"{t}: cannot write there: {up} is not a folder")
        if t.is_dir():
            if self.exclusive:
                raise OutputError(f"{t}: exists already")
            others = sorted(p.name for p in t.iterdir() if p.name not in self.owned)
            if others:
                raise OutputError(f"{t}: holds files that are not this program's output ({', '.join(others[:3])}"
                                  f"{', ...' if len(others) > 3 else ''}); choose another folder")

    def _recover(self) -> None:
        """Put back a previous set a killed commit left aside; remove dead processes' staging."""
        recover_output(self.target)
        parent = self.target.parent
        for p in parent.glob(f".{glob.escape(self.target.name)}.*.*"):
            pid, _, what = p.name[len(self.target.name) + 2:].partition(".")
            if not pid.isdigit() or what not in ("partial", "old") or _alive(int(pid)):
                continue
            shutil.rmtree(p, ignore_errors=True)

    def write_text(self, name: str, text: str) -> None:
        self._write(name, lambda path: write_text(path, text))

    def write_json(self, name: str, data: Any) -> None:
        self._write(name, lambda path: write_json(path, data))

    def _write(self, name: str, write) -> None:
        """Write one file of the set into the staging folder; `OutputError` when it cannot (the
        staging folder is then removed and the target left as it was)."""
        if name not in self.owned:
            raise ValueError(f"{name!r} is not a file of this output set ({', '.join(sorted(self.owned))})")
        try:
            write(self.staging / name)
        except OSError as e:
            self.discard()
            raise cannot_write(str(self.target), e) from None

    def commit(self) -> Path:
        """Put the written files in place of the target's; returns the target. `OutputError` when
        it cannot (the staging folder is then removed and the target left as it was)."""
        try:
            _fsync_dir(self.staging)
            if self.target.exists():
                if self.exclusive:
                    raise OutputError(f"{self.target}: exists already")
                if not os.environ.get(NO_EXCHANGE_ENV):
                    _pause_for_tests()
                if _exchange(self.staging, self.target):  # the staging name now holds the previous set
                    _fsync_dir(self.target.parent)
                    shutil.rmtree(self.staging, ignore_errors=True)
                    return self.target
                old = self._aside("old")
                os.replace(self.target, old)
                if os.environ.get(NO_EXCHANGE_ENV):
                    _pause_for_tests()
                os.replace(self.staging, self.target)
                shutil.rmtree(old, ignore_errors=True)
            else:
                _pause_for_tests()
                os.replace(self.staging, self.target)
            _fsync_dir(self.target.parent)
        except OSError as e:
            self.discard()
            if isinstance(e, OutputError):
                raise
            raise cannot_write(str(self.target), e) from None
        return self.target

    def discard(self) -> None:
        """Remove the staging folder and whatever was written into it."""
        shutil.rmtree(self.staging, ignore_errors=True)
