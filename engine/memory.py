"""Memory: how much this process may use, and the check every size in a configuration passes.

A size a user gives (a beam's width, a segment's nodes, a tuner's population, games, ...) is
turned into an estimate of the bytes its search allocates (each schema's ``memory`` method) and
compared with `available`, before anything is allocated: a size that would need more is refused
as one line naming the key, the estimate and the memory there is, e.g.
``beam.width: 1,000,000,000 nodes need about 4.2 TiB of memory; this machine has 23.5 GiB``.

`available` is the least of the machine's physical memory, a cgroup's memory limit and the
process's address-space limit (``RLIMIT_AS``, less the address space already mapped: numba and
numpy map a great deal of it before anything is allocated).
"""

from __future__ import annotations

import functools
import os
import resource
from pathlib import Path
from typing import Iterable, NamedTuple

#: a limit at or above this is no limit (cgroup v1 writes one just under 2**63)
UNLIMITED = 2**62


class Need(NamedTuple):
    """One part of an estimate: the configuration ``key`` that sizes it, the size in words
    (``"1,000 nodes"``), and the bytes it needs."""

    key: str
    what: str
    bytes: int


def amount(n: float) -> str:
    """Bytes as a short figure in binary units (``3.5 GiB``)."""
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"):
        if abs(n) < 1024 or unit == "EiB":
            return f"{n:,.0f} bytes" if unit == "bytes" else f"{n:,.1f} {unit}"
        n /= 1024
    raise AssertionError


@functools.lru_cache(maxsize=None)
def physical() -> int | None:
    """The machine's physical memory in bytes (None when the system does not say)."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def _read_number(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


@functools.lru_cache(maxsize=None)
def cgroup_limit() -> int | None:
    """The memory limit of this process's cgroup (v2 ``memory.max``, v1 ``memory.limit_in_bytes``),
    or None."""
    root = Path("/sys/fs/cgroup")
    found = []
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        lines = []
    for line in lines:
        _, controllers, where = line.split(":", 2) if line.count(":") >= 2 else ("", "", "")
        where = where.lstrip("/")
        if controllers == "":  # v2
            found.append(_read_number(root / where / "memory.max"))
        elif "memory" in controllers.split(","):
            found.append(_read_number(root / "memory" / where / "memory.limit_in_bytes"))
    found.append(_read_number(root / "memory.max"))
    found.append(_read_number(root / "memory" / "memory.limit_in_bytes"))
    limits = [n for n in found if n is not None and n < UNLIMITED]
    return min(limits) if limits else None


def mapped() -> int:
    """The address space this process has mapped (bytes)."""
    try:
        return int(Path("/proc/self/statm").read_text().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def address_space_limit() -> int | None:
    """The soft ``RLIMIT_AS`` (None: unlimited)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    return None if soft == resource.RLIM_INFINITY or soft >= UNLIMITED else soft


def available() -> tuple[int, str]:
    """(bytes, how a message names them): the memory a new allocation of this process may take, the
    least of the machine's, its cgroup's limit and what ``RLIMIT_AS`` leaves."""
    options = []
    total = physical()
    if total:
        options.append((total, f"this machine has {amount(total)}"))
    group = cgroup_limit()
    if group is not None:
        options.append((group, f"this process's cgroup may use {amount(group)}"))
    limit = address_space_limit()
    if limit is not None:
        left = max(limit - mapped(), 0)
        options.append((left, f"this process may map {amount(left)} more (RLIMIT_AS {amount(limit)})"))
    if not options:
        return UNLIMITED, "no limit is known"
    return min(options)


class TooBig(ValueError):
    """An estimate beyond the memory available (`check`); its message is ``<key>: <problem>``, the
    form a schema's check gives (`engine.validation.problem` puts the key after the file)."""


def check(needs: Iterable[Need]) -> None:
    """`TooBig` when the ``needs`` together exceed `available`, naming the key of the largest."""
    needs = [n for n in needs if n.bytes > 0]
    if not needs:
        return
    total = sum(n.bytes for n in needs)
    have, where = available()
    if total <= have:
        return
    top = max(needs, key=lambda n: n.bytes)
    raise TooBig(f"{top.key}: {top.what} need about {amount(total)} of memory; {where}")
