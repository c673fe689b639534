"""Files, written whole or not at all, and read back: the one home of these primitives, in the lowest
layer so that every layer may use them.

Writing (`write_bytes` and the writers built on it): the data go to a temporary file in the target's
folder, which is flushed and fsynced, then renamed over the target (`os.replace`), so a reader (or a
run killed at any moment) finds the old file or the new one, never a part. The temporary file is
removed on any failure. It is created with mode ``0o666`` less the user's umask, the mode an
ordinary ``open(path, "w")`` gives (not `tempfile.mkstemp`'s private ``0o600``). Missing folders
are made. The fsyncs make a write durable as well as atomic; `DURABLE` turns them off.

Reading (`read_bytes`, `read_text`, `read_json`, `load_yaml`; state files: `engine.statefile`): every file a command
reads is read through these, no further than a limit fitting its kind (`MAX_CONFIG_BYTES`,
`MAX_RECORD_BYTES`, `MAX_JSON_BYTES`, `MAX_TABLE_BYTES`): a larger file is refused after at most
that many bytes, never read whole. Only a regular file is read: one that is not (a FIFO, a socket, a
device such as ``/dev/zero``) is refused at once, opened without waiting for a writer
(``O_NONBLOCK``), so that every read ends in bounded time; a command reads a stream only where it
says so (``read_bytes(stream=...)``: replay's ``-`` for standard input). Every problem (missing, a
folder, not a regular file, unreadable, too large, not UTF-8, not JSON, not YAML) is one `ReadError`
line naming the file, e.g. ``big.yaml: more than 1 MiB: too large for a configuration file`` or
``/tmp/f: not a regular file (a FIFO)``.

YAML: safe loading, numbers written the YAML 1.2 way (``1e9``, ``-1e-3``) read as floats as well as
``1.0e+9``, a key given twice in one mapping refused, an integer of more digits than Python reads
from text (4,300) refused naming its key (`LongInteger`), a document whose aliases would expand it
past `MAX_YAML_NODES` values (an alias bomb) or into itself refused once composed, before anything
is built from it; every problem is one `YamlError` line naming the file, e.g. ``configs/x.yaml:
invalid YAML: line 3, column 1: expected ',' or ']', but got '<stream end>'``. `write_yaml` quotes strings that this loader would read as numbers, so what it
writes reads back as it was.
"""

from __future__ import annotations

import errno
import glob
import json
import os
import re
import secrets
import shutil
import stat
from pathlib import Path
from typing import Any

import yaml

#: Whether writes are fsynced: a file's data before its rename, a set's folder after its renames.
#: Atomicity does not depend on it: with it off, a killed process still leaves the old file or the
#: new one, and only a power cut could lose a write that seemed done. tests/conftest.py turns it off
#: for the test suite's scratch files (each fsync costs a few milliseconds on a disk).
DURABLE = True

#: names tried for a temporary file before giving up (each is random: a clash is already unlikely)
TEMPORARY_NAME_ATTEMPTS = 100
#: mode of a new file before the umask is taken off, as `open` creates files
NEW_FILE_MODE = 0o666
#: a YAML 1.2 float without a dot in its mantissa or a sign in its exponent (``1e9``), which YAML 1.1
#: (PyYAML's default) reads as a string
YAML12_FLOAT = re.compile(r"^[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?[eE][-+]?[0-9]+$")


class ReadError(ValueError):
    """A file that cannot be read as what it should hold. The message is one line,
    ``<file>: <problem>``; ``path`` and ``problem`` hold the two parts (a caller naming the file
    otherwise re-words it)."""

    def __init__(self, path: str | Path, problem: str):
        super().__init__(f"{path}: {problem}")
        self.path = str(path)
        self.problem = problem


class TooLarge(ReadError):
    """A file larger than the limit of its kind (read no further than that)."""


class YamlError(ReadError):
    """A YAML file that cannot be read or parsed (`ReadError`'s one line)."""


class LongInteger(YamlError):
    """A YAML integer of more decimal digits than Python converts from text
    (`sys.get_int_max_str_digits`): ``key`` is its dotted key in the document (empty for a document
    that is that integer), ``digits`` its digits; the problem is ``<key>: <what is wrong>``."""

    def __init__(self, path: str | Path, key: str, digits: int):
        from .validation import out_of_range

        self.key, self.digits = key, digits
        self.what = out_of_range(f"an integer of {digits:,} digits")
        super().__init__(path, f"{key}: {self.what}" if key else self.what)


# ------------------------------------------------------------------------------------------------
# Writing


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


def write_yaml(path: str | Path, data: Any, header: str = "") -> None:
    """``data`` as block YAML in its own key order; ``header`` (comment lines) first."""
    body = yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True)
    write_text(path, (header + "\n" if header else "") + body)


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


# ------------------------------------------------------------------------------------------------
# A folder written as one set


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


# ------------------------------------------------------------------------------------------------
# Reading, bounded


#: the most bytes read from a file of each kind: a larger file (or an endless one, such as
#: ``/dev/zero``) is refused once one byte more than this has been read
MAX_CONFIG_BYTES = 2**20  # a configuration or evaluator YAML (the largest shipped: 4 KB)
MAX_RECORD_BYTES = 4_001_000  # a record file: `engine.record.MAX_RECORD_CHARS` and a console line around it
MAX_JSON_BYTES = 32 * 2**20  # a summary.json, provenance.json or benchmark series (the largest in results/: 210 KB)
MAX_TABLE_BYTES = 256 * 2**20  # a run's CSV or JSON-lines file (rows of 100-500 bytes: about a million of them)


def _amount(n: int) -> str:
    return f"{n >> 20} MiB" if n % 2**20 == 0 else f"{n:,} bytes"


#: how a file that is not a regular file (nor a folder) is named in a refusal
SPECIAL_FILES = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
                 (stat.S_ISBLK, "a block device"))


def _special(mode: int) -> str | None:
    """What a file of ``mode`` is when it is neither a regular file nor a folder (None otherwise)."""
    return next((name for test, name in SPECIAL_FILES if test(mode)), None)


def read_bytes(path: str | Path, limit: int, kind: str, stream=None) -> bytes:
    """The bytes of the regular file ``path`` (or of the binary ``stream``, e.g. ``sys.stdin.buffer``,
    named ``path`` in messages: the one way to read a pipe or a terminal on purpose), reading no more
    than ``limit`` + 1 bytes: `TooLarge` beyond ``limit`` (``"<file>: more than 1 MiB: too large for
    <kind>"``), `ReadError` when the file is missing, a folder, unreadable or not a regular file
    (``"<file>: not a regular file (a FIFO)"``: a FIFO, a socket or a device).

    Bounded in time as well as in bytes: ``path`` is opened with ``O_NONBLOCK``, so opening a FIFO
    does not wait for a writer, and what it is is checked on the open descriptor (``fstat``) before a
    byte is read; only a regular file is read, and a regular file ends. The flag stays on while
    reading, so a kernel file that would wait for data is refused too ("cannot read: Resource
    temporarily unavailable") instead of blocking."""
    data = None
    try:
        if stream is not None:
            data = stream.read(limit + 1)
        else:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_BINARY", 0))
            try:
                info = os.fstat(fd)
                if stat.S_ISDIR(info.st_mode):
                    raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
                if not stat.S_ISREG(info.st_mode):
                    raise ReadError(path, f"not a regular file ({_special(info.st_mode) or 'of no known kind'})")
                if info.st_size <= limit:  # (a regular file's size is known: a larger one is not read)
                    data = _read_at_most(fd, limit + 1, info.st_size)
            finally:
                os.close(fd)
    except FileNotFoundError:
        if stream is None and recover_output(Path(path).parent):  # a set a killed commit left aside
            return read_bytes(path, limit, kind)
        raise ReadError(path, "file not found") from None
    except OSError as e:
        special = None
        if stream is None:  # a socket cannot be opened at all (ENXIO): say what it is
            try:
                special = _special(os.stat(path).st_mode)
            except OSError:
                pass
        if special is not None:
            raise ReadError(path, f"not a regular file ({special})") from None
        raise ReadError(path, f"cannot read: {e.strerror or e}") from None
    if data is None or len(data) > limit:
        raise TooLarge(path, f"more than {_amount(limit)}: too large for {kind}")
    return data


def _read_at_most(fd: int, n: int, size: int) -> bytes:
    """Up to ``n`` bytes of the descriptor ``fd`` of a regular file of ``size`` bytes (it may have
    grown since: read to its end or to ``n``, whichever comes first)."""
    chunks, left = [], n
    while left > 0:
        chunk = os.read(fd, min(left, max(size + 1, 1 << 16)))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def read_text(path: str | Path, limit: int, kind: str, stream=None) -> str:
    """`read_bytes` decoded as UTF-8, line ends read as ``open`` reads them (``\\r\\n`` and ``\\r`` as
    ``\\n``); `ReadError` for bytes that are not UTF-8 text."""
    data = read_bytes(path, limit, kind, stream)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ReadError(path, f"not UTF-8 text (byte {data[e.start]:#04x} at offset {e.start:,})") from None
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text


def read_json(path: str | Path, limit: int = MAX_JSON_BYTES, kind: str = "a JSON file") -> Any:
    """The JSON document in ``path`` (`read_text`); `ReadError` when it is not JSON."""
    text = read_text(path, limit, kind)
    try:
        return json.loads(text, parse_int=_json_int)
    except _TooManyDigits as e:
        from .validation import out_of_range

        raise ReadError(path, out_of_range(f"an integer of {sum(c.isdigit() for c in e.node):,} digits")) from None
    except json.JSONDecodeError as e:
        raise ReadError(path, f"not JSON: line {e.lineno}, column {e.colno}: {e.msg}") from None
    except (ValueError, RecursionError) as e:  # nesting too deep, a number JSON cannot hold
        raise ReadError(path, f"not JSON: {str(e).splitlines()[0] if str(e) else type(e).__name__}") from None


def _json_int(text: str) -> int:
    try:
        return int(text)
    except ValueError:  # more digits than int() reads from text
        raise _TooManyDigits(text) from None


class _TooManyDigits(Exception):
    """An integer of more digits than int() reads from text; ``node``: its YAML node, or its JSON text."""

    def __init__(self, node):
        self.node = node


# ------------------------------------------------------------------------------------------------
# YAML


#: the most values (nodes) a YAML document may hold once its aliases are expanded: as many as a
#: configuration file of the largest size (`MAX_CONFIG_BYTES`) can hold written out (a byte each at
#: least), so through aliases no document stands for more than its kind's read limit allows; the
#: configurations hold no alias or a handful (``<<: *base`` merges), thousands of values in all
MAX_YAML_NODES = MAX_CONFIG_BYTES


class _Loader(yaml.SafeLoader):
    """Safe loader that also reads YAML 1.2 floats such as ``1e9`` and ``-1e-3`` as numbers, and
    refuses a key given twice in one mapping (a merge, ``<<: *base``, may still be overridden) and an
    integer of more digits than ``int()`` reads from text (`parse_yaml` names its key).

    Aliases are bounded: a document whose values, its aliases expanded, are more than ``max_nodes``
    (`MAX_YAML_NODES`; `_TooManyAliases`), or that holds an alias inside the value it names (a
    recursive structure), is refused once composed, before anything is built from it. PyYAML
    builds an alias as a reference, but the code that walks a configuration (validation, JSON,
    digests) expands it: nine levels of nine aliases stand for about 400 million values."""

    #: the most values a document may hold, its aliases expanded (`parse_yaml` sets it per document)
    max_nodes = MAX_YAML_NODES

    def compose_document(self):
        node = super().compose_document()
        if node is not None:
            _check_expansion(node, self.max_nodes)
        return node

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            first: dict = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    seen = key in first  # (1 and true are one key to Python's dict too)
                except TypeError:  # an unhashable key: the base class says so
                    continue
                if seen:
                    raise yaml.constructor.ConstructorError(
                        "while constructing a mapping", node.start_mark,
                        f"key {key!r} given twice (first on line {first[key] + 1})", key_node.start_mark)
                first[key] = key_node.start_mark.line
        return super().construct_mapping(node, deep)

    def construct_yaml_int(self, node):
        try:
            return super().construct_yaml_int(node)
        except ValueError:  # more digits than int() reads from text: found again by its node
            raise _TooManyDigits(node) from None


_Loader.add_constructor("tag:yaml.org,2002:int", _Loader.construct_yaml_int)


def _key_of(text: str, target) -> str:
    """The dotted key of the scalar node at ``target``'s place in the document ``text`` (composed,
    not constructed: no number is converted), or "" at the top."""
    stack = [("", yaml.compose(text, Loader=_Loader))]
    seen = set()
    while stack:
        key, node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        if node.start_mark.index == target.start_mark.index and isinstance(node, yaml.ScalarNode):
            return key
        if isinstance(node, yaml.MappingNode):
            stack.extend(reversed([(f"{key}.{k.value}" if key else str(k.value), v) for k, v in node.value]))
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(reversed([(f"{key}.{i}" if key else str(i), v) for i, v in enumerate(node.value)]))
    return ""


class _TooManyAliases(yaml.YAMLError):
    """A document refused for its aliases (`_check_expansion`): ``what`` is the kind of problem,
    ``mark`` where the value is, ``problem`` what is wrong with it."""

    def __init__(self, what: str, mark, problem: str):
        super().__init__(f"{what}: {problem}")
        self.what, self.mark, self.problem = what, mark, problem


def _children(node) -> list:
    if isinstance(node, yaml.SequenceNode):
        return node.value
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    return []


def _check_expansion(root, limit: int) -> None:
    """Refuse (`_TooManyAliases`) the composed document ``root`` when, its aliases expanded, it holds
    more than ``limit`` values (nodes), or when a value holds an alias of itself. Every node is
    visited once (a node an alias names again is counted from its first visit), so the check takes
    a time linear in the document's text however far its aliases would expand."""
    size: dict[int, int] = {}  # id(node) -> its values, aliases expanded
    open_: set[int] = set()  # the nodes whose values are being counted
    stack = [(root, False)]
    while stack:
        node, counted = stack.pop()
        key = id(node)
        if counted:
            open_.discard(key)
            n = 1 + sum(size[id(c)] for c in _children(node))
            if n > limit:
                raise _TooManyAliases("too many aliases", node.start_mark,
                                      f"the value there holds more than {limit:,} values once its aliases are "
                                      "expanded")
            size[key] = n
        elif key in open_:  # reached again from inside itself
            raise _TooManyAliases("a recursive alias", node.start_mark,
                                  "the value there holds an alias of itself")
        elif key not in size:
            open_.add(key)
            stack.append((node, True))
            stack.extend((c, False) for c in _children(node))


class _Dumper(yaml.SafeDumper):
    """Safe dumper that quotes the strings `_Loader` would read as YAML 1.2 floats."""


for _cls in (_Loader, _Dumper):
    _cls.add_implicit_resolver("tag:yaml.org,2002:float", YAML12_FLOAT, list("-+0123456789"))


def parse_yaml(text: str, origin: str = "<text>", max_nodes: int | None = None) -> Any:
    """The document in ``text`` (None when it is empty); `YamlError` naming ``origin``, the line and
    column when it is not YAML, or when its aliases expand it to more than ``max_nodes`` values
    (default `MAX_YAML_NODES`: ``"<file>: too many aliases: line 12, column 6: the value there holds
    more than 1,048,576 values once its aliases are expanded"``) or make it recursive."""
    loader = _Loader(text)
    loader.max_nodes = MAX_YAML_NODES if max_nodes is None else max_nodes
    try:
        return loader.get_single_data()
    except _TooManyAliases as e:
        raise YamlError(origin, f"{e.what}: line {e.mark.line + 1}, column {e.mark.column + 1}: {e.problem}") from None
    except _TooManyDigits as e:
        key = _key_of(text, e.node)
        raise LongInteger(origin, key, sum(c.isdigit() for c in e.node.value)) from None
    except RecursionError:
        raise YamlError(origin, "invalid YAML: nested too deeply") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        problem = getattr(e, "problem", None) or str(e).split("\n")[0]
        raise YamlError(origin, f"invalid YAML: {where}{problem}") from None
    finally:
        loader.dispose()


def load_yaml(path: str | Path, limit: int = MAX_CONFIG_BYTES) -> Any:
    """The document in the YAML file ``path``, whatever its type (None for an empty file: the caller
    says what it expects); `YamlError` when the file is missing, unreadable, larger than ``limit``
    bytes (`read_text`), not YAML, or when its aliases expand it to more than ``limit`` values
    (`parse_yaml`)."""
    try:
        text = read_text(path, limit, "a configuration file")
    except ReadError as e:
        raise YamlError(path, e.problem) from None
    return parse_yaml(text, str(path), max_nodes=limit)
