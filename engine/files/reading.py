"""Files read back, bounded by kind (`read_bytes`, `read_text`, `read_json`).

Every file a command reads is read through these, no further than a limit fitting its kind
(`MAX_CONFIG_BYTES`, `MAX_RECORD_BYTES`, `MAX_JSON_BYTES`, `MAX_TABLE_BYTES`): a larger file is
refused after at most that many bytes, never read whole. Only a regular file is read: one that is
not (a FIFO, a socket, a device such as ``/dev/zero``) is refused at once, opened without waiting
for a writer (``O_NONBLOCK``), so that every read ends in bounded time; a command reads a stream
only where it says so (``read_bytes(stream=...)``: replay's ``-`` for standard input). Every
problem (missing, a folder, not a regular file, unreadable, too large, not UTF-8, not JSON) is one
`ReadError` line naming the file, e.g. ``/tmp/f: not a regular file (a FIFO)``.
"""

from __future__ import annotations

import errno
import json
import os
import stat
from pathlib import Path
from typing import Any

from .output import recover_output


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
        from ..validation import out_of_range

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
