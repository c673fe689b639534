"""Memory: how much this process may use, and the check every size in a configuration passes.

A size a user gives (a beam's width, a segment's nodes, a tuner's population, games, ...) is
turned into an estimate of the bytes its search allocates (each schema's ``memory`` method, a list
of `Need`), which `check` compares with `available` before anything is allocated: a size that
would need more is refused as one `TooBig` line naming the key, the estimate and the memory there
is, e.g.
``beam.width: 1,000,000,000 nodes need about 4.2 TiB of memory; this machine has 23.5 GiB available``.

`available` is the least of three rooms, each named in the refusal: the machine's available
memory (`machine_available`), what the tightest memory limit of this process's cgroups leaves
(`cgroup_room`) and what ``RLIMIT_AS`` (``ulimit -v``) leaves of the address space this process
has mapped already (`mapped`). `room` is that arithmetic on given figures.
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


def _fields(path: Path) -> dict[str, int]:
    """The ``name value`` lines of a kernel file (``memory.stat``, ``/proc/meminfo`` with its
    ``kB``), values in their unit; {} when it cannot be read."""
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return {}
    out = {}
    for line in lines:
        parts = line.replace(":", " ").split()
        if len(parts) >= 2 and parts[1].isdigit():
            out[parts[0]] = int(parts[1])
    return out


def machine_available() -> int | None:
    """The memory new allocations may take on this machine (``MemAvailable`` of ``/proc/meminfo``:
    free memory and the page cache that can be dropped), else `physical`."""
    kib = _fields(Path("/proc/meminfo")).get("MemAvailable")
    return kib * 1024 if kib is not None else physical()


def _read_number(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def _cgroup_dirs() -> list[tuple[str, Path]]:
    """(version, folder) of every memory cgroup this process is under: its own and their ancestors
    (limits nest), and the mounts' roots (a container sees its own cgroup there)."""
    root = Path("/sys/fs/cgroup")
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        lines = []
    found = []
    for line in lines:
        if line.count(":") < 2:
            continue
        _, controllers, where = line.split(":", 2)
        if controllers == "":
            version, base = "v2", root
        elif "memory" in controllers.split(","):
            version, base = "v1", root / "memory"
        else:
            continue
        folder = base / where.lstrip("/")
        while True:
            found.append((version, folder))
            if folder == base:
                break
            folder = folder.parent
    found += [("v2", root), ("v1", root / "memory")]
    return list(dict.fromkeys(found))


def cgroup_room() -> tuple[int, int] | None:
    """(limit, bytes in use) of this process's tightest cgroup memory limit (`_cgroup_dirs`): the
    one that leaves the least (cgroup v2 ``memory.max`` less ``memory.current``, v1
    ``memory.limit_in_bytes`` less ``memory.usage_in_bytes``); in use counts the cgroup's memory less
    its inactive file cache, which the kernel reclaims first. None when no cgroup limits memory."""
    best = None
    for version, folder in _cgroup_dirs():
        limit = _read_number(folder / ("memory.max" if version == "v2" else "memory.limit_in_bytes"))
        if limit is None or limit >= UNLIMITED:
            continue
        stat = _fields(folder / "memory.stat")
        if version == "v2":
            usage, cache = _read_number(folder / "memory.current"), stat.get("inactive_file", 0)
        else:
            usage = _read_number(folder / "memory.usage_in_bytes")
            cache = stat.get("total_inactive_file", stat.get("inactive_file", 0))
        used = max((usage or 0) - cache, 0)
        if best is None or limit - used < best[0] - best[1]:
            best = (limit, used)
    return best


def mapped() -> int:
    """The address space this process has mapped (bytes): its ``VmSize`` (numba and numpy map a
    great deal of it before anything is allocated)."""
    kib = _fields(Path("/proc/self/status")).get("VmSize")
    return kib * 1024 if kib is not None else 0


def address_space_limit() -> int | None:
    """The soft ``RLIMIT_AS`` (None: unlimited)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    return None if soft == resource.RLIM_INFINITY or soft >= UNLIMITED else soft


def room(machine: int | None, cgroup: tuple[int, int] | None, limit: int | None, mapped: int) -> tuple[int, str]:
    """(bytes, how a message names them): the least of the rooms the figures leave, ``machine``
    (available memory), ``cgroup`` ((limit, in use)) and ``limit`` (``RLIMIT_AS``, of which
    ``mapped`` is taken); None for a figure the system does not give."""
    options = []
    if machine is not None:
        options.append((machine, f"this machine has {amount(machine)} available"))
    if cgroup is not None:
        left = max(cgroup[0] - cgroup[1], 0)
        options.append((left, f"this process's cgroup may use {amount(left)} more "
                              f"(its limit {amount(cgroup[0])}, {amount(cgroup[1])} in use)"))
    if limit is not None:
        left = max(limit - mapped, 0)
        options.append((left, f"this process may map {amount(left)} more (RLIMIT_AS {amount(limit)})"))
    if not options:
        return UNLIMITED, "no limit is known"
    return min(options, key=lambda o: o[0])


def available() -> tuple[int, str]:
    """(bytes, how a message names them): the memory a new allocation of this process may take,
    the least of the machine's available memory, what its cgroup leaves and what ``RLIMIT_AS``
    leaves (`room`)."""
    limit = address_space_limit()
    return room(machine_available(), cgroup_room(), limit, mapped() if limit is not None else 0)


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
