"""An exclusive lock on a folder while a process works in it (`FolderLock`), held by an advisory
``flock`` that the kernel releases when the process dies; `Locked` when another process holds it.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from .reading import _special
from .writing import NEW_FILE_MODE


class Locked(OSError):
    """A folder whose lock cannot be taken: another process holds it (the message, one line, names the
    folder and the pid), or its lock file is not one this program made (a link planted there)."""


class FolderLock:
    """An exclusive lock on a folder while a process works in it (``with FolderLock(folder): ...``):
    the file ``<folder>/<name>`` holds the owner's pid, and an advisory ``flock`` on it is held
    until the block ends or the process dies (the kernel releases it then, even after ``kill -9``).
    Taking a lock another process holds raises `Locked` (naming ``label``, by default the folder).
    With ``remove``, the file is removed when the block ends (still locked then: a process that
    opened it meanwhile finds it gone once it has the lock, and takes a new one), so nothing is
    left beside an output folder after a normal end; a killed process leaves it, unlocked.

    The lock file is opened without following a symbolic link (``O_NOFOLLOW``) and written only when
    it is a regular file of one name: a link planted in its place (symbolic or hard: the pid would
    go into the file it names), or a FIFO or a device, is refused in one `Locked` line and nothing
    is written anywhere."""

    #: how often a lock whose file was removed under it is taken again
    ATTEMPTS = 100

    def __init__(self, folder: str | Path, name: str = "lock", label: str | None = None, remove: bool = False):
        self.path = Path(folder) / name
        self.label = label or str(self.path.parent)  # what a refusal names
        self.remove = remove
        self._fd: int | None = None

    def __enter__(self) -> "FolderLock":
        import fcntl

        for _ in range(self.ATTEMPTS):
            fd = self._open()
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                owner = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
                os.close(fd)
                raise Locked(f"{self.label}: another process (pid {owner}) is working in it; wait for it to end "
                             "or stop it first") from None
            try:
                current = os.stat(self.path).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                current = False
            if current:  # (not a file its last holder removed after this process opened it)
                break
            os.close(fd)
        else:
            raise Locked(f"{self.label}: its lock file {self.path} keeps being replaced; stop the other processes")
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        self._fd = fd
        return self

    def _open(self) -> int:
        """A descriptor of the lock file (made when missing); `Locked` when it is not a regular file
        of one name (a symbolic link is not followed: O_NOFOLLOW; a FIFO does not block: O_NONBLOCK)."""
        flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
        try:
            fd = os.open(self.path, flags, NEW_FILE_MODE)
        except OSError:
            if os.path.islink(self.path):  # (ELOOP on Linux; other systems say it otherwise)
                raise self._refused("a symbolic link") from None
            if os.path.isdir(self.path):
                raise self._refused("a folder") from None
            raise
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_nlink > 1:
            os.close(fd)
            raise self._refused(_special(info.st_mode) or f"a file of {info.st_nlink} names (hard links)")
        return fd

    def _refused(self, what: str) -> Locked:
        return Locked(f"{self.label}: its lock file {self.path} is {what}, not a lock file; remove it")

    def __exit__(self, *exc) -> None:
        if self._fd is not None:
            if self.remove:
                self.path.unlink(missing_ok=True)  # while still held
            os.close(self._fd)  # closing releases the flock
            self._fd = None
